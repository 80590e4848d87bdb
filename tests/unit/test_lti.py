"""LTI 1.3 without a hub: the registration file, roles, accounts, the launch's own checks, the registry (replays), the
tool's key, and grade passback (AGS) against a real platform library (tests/lti_platform.py, on 127.0.0.1).

The hub's side (launches through jupyterhub-ltiauthenticator, accounts made, assignments fetched, scores on submit
and on release) is tested end to end in tests/e2e/test_hub.py."""
from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import jwt
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lti_platform import CONTEXT, DEPLOYMENT, INSTRUCTOR, LEARNER, TA, LocalPlatform  # noqa: E402

from coursekit import CourseKitError  # noqa: E402
from coursekit.hosting import NAME, ags  # noqa: E402
from coursekit.hosting.accounts import Student  # noqa: E402
from coursekit.hosting.lti import (AGS_CLAIM, CONTEXT_CLAIM, CUSTOM_CLAIM, DEPLOYMENT_CLAIM, ROLES_CLAIM,  # noqa: E402
                                   Launch, LaunchRefused, Platform, Registry, ToolKey, account_for_sub, next_url,
                                   role_of, roster_match)

GOOD = {"issuer": "https://lms.example.edu", "client_id": "c1", "deployment_ids": ["d1"], "context_id": "k1",
        "authorize_url": "https://lms.example.edu/auth", "jwks_url": "https://lms.example.edu/jwks",
        "token_url": "https://lms.example.edu/token"}


# ------------------------------------------------------------------------------------------------ the registration
def test_the_registration_file_is_read_and_every_problem_is_named(tmp_path):
    path = tmp_path / "lti.json"
    path.write_text(json.dumps(GOOD))
    assert Platform.load(path).to_dict() == GOOD
    path.write_text(json.dumps({**GOOD, "client_id": "", "extra": 1, "token_url": "http://lms.example.edu/t"}))
    with pytest.raises(CourseKitError) as error:
        Platform.load(path)
    text = str(error.value)
    assert str(path) in text and "'client_id' must be a non-empty string" in text and "unknown key 'extra'" in text
    assert "'token_url' must be an https:// URL" in text
    bad = dict(GOOD)
    del bad["jwks_url"]
    path.write_text(json.dumps(bad))
    with pytest.raises(CourseKitError, match="missing 'jwks_url'"):
        Platform.load(path)
    path.write_text("{ not json")
    with pytest.raises(CourseKitError, match=f"{path}: the LTI registration is not JSON"):
        Platform.load(path)
    with pytest.raises(CourseKitError, match="cannot read"):
        Platform.load(tmp_path / "missing.json")
    local = {**GOOD, "issuer": "http://127.0.0.1:9000", "token_url": "http://localhost:9000/token"}
    assert Platform.from_dict(local).issuer == "http://127.0.0.1:9000"  # http on this machine only


# ------------------------------------------------------------------------------------------------ who launches
def test_roles_map_to_student_instructor_or_nothing():
    assert role_of([LEARNER]) == "student"
    assert role_of([INSTRUCTOR]) == "instructor" and role_of([TA]) == "instructor"
    assert role_of([LEARNER, TA]) == "instructor"
    # an institution role says nothing about this course; a mentor or guest has no place in it
    assert role_of(["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"]) is None
    assert role_of(["http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"]) is None
    assert role_of([]) is None and role_of(INSTRUCTOR) is None and role_of(None) is None


def test_an_account_for_a_platform_user_is_stable_valid_and_says_nothing_personal():
    a = account_for_sub("https://lms", "user-1")
    assert a == account_for_sub("https://lms", "user-1") and NAME.match(a) and a.startswith("ck-lti-")
    assert a != account_for_sub("https://lms", "user-2") and a != account_for_sub("https://other", "user-1")
    assert "user" not in a


def test_the_roster_is_matched_by_email_exactly_once():
    roster = [Student("ck-ada", "Ada", "L", "Ada@Example.org"), Student("ck-x", email="twin@example.org"),
              Student("ck-y", email="twin@example.org"), Student("ck-z")]
    assert roster_match("ada@example.org", roster) == "ck-ada"
    assert roster_match("twin@example.org", roster) is None  # ambiguous: not guessed
    assert roster_match("", roster) is None and roster_match("nobody@example.org", roster) is None


def token(**over) -> dict:
    claims = {"iss": GOOD["issuer"], "sub": "u-1", DEPLOYMENT_CLAIM: "d1", CONTEXT_CLAIM: {"id": "k1", "label": "T"},
              ROLES_CLAIM: [LEARNER], CUSTOM_CLAIM: {"assignment": "transformers"}, "email": "Ada@Example.org",
              "given_name": "Ada", "family_name": "Lovelace",
              "https://purl.imsglobal.org/spec/lti/claim/resource_link": {"id": "link-1"},
              AGS_CLAIM: {"lineitems": "https://lms/li", "scope": ["s"], "other": "dropped"}}
    claims.update(over)
    return claims


def test_a_launch_is_checked_for_this_deployment_course_role_and_assignment():
    platform = Platform.from_dict(GOOD)
    launch = Launch.check(token(), platform, ["transformers", "decoder"])
    assert (launch.role, launch.assignment, launch.email, launch.name) == ("student", "transformers",
                                                                            "ada@example.org", ("Ada", "Lovelace"))
    assert launch.ags == {"lineitems": "https://lms/li", "scope": ["s"]} and launch.resource_link == "link-1"
    assert Launch.check(token(**{CUSTOM_CLAIM: {}}), platform, ["transformers"]).assignment is None
    refused = {
        "deployment": token(**{DEPLOYMENT_CLAIM: "d2"}),
        "another course": token(**{CONTEXT_CLAIM: {"id": "k2", "label": "T"}}),
        "came from \\('None'\\)": token(**{CONTEXT_CLAIM: None}),
        "learners, instructors": token(**{ROLES_CLAIM: ["http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"]}),
        "no assignment 'nope'": token(**{CUSTOM_CLAIM: {"assignment": "nope"}}),
        "names no user": token(sub=""),
    }
    for words, claims in refused.items():
        with pytest.raises(LaunchRefused, match=words):
            Launch.check(claims, platform, ["transformers"])


def test_the_registry_remembers_users_and_refuses_a_nonce_twice(tmp_path):
    registry = Registry(tmp_path)
    assert registry.first_use_of("n1") and not registry.first_use_of("n1") and registry.first_use_of("n2")
    launch = Launch.check(token(**{AGS_CLAIM: {"lineitems": "https://lms/li", "lineitem": "https://lms/li/7"}}),
                          Platform.from_dict(GOOD), ["transformers"])
    registry.remember(launch, "ck-ada")
    assert registry.account(GOOD["issuer"], "u-1") == "ck-ada" and registry.account(GOOD["issuer"], "u-2") is None
    data = registry.read()
    assert data["accounts"]["ck-ada"] == {"sub": "u-1", "issuer": GOOD["issuer"]}
    assert data["lineitems"]["_url"] == "https://lms/li" and data["lineitems"]["transformers"] == "https://lms/li/7"
    assert stat.S_IMODE(os.stat(registry.path).st_mode) == 0o600
    registry.path.write_text("{ broken")
    with pytest.raises(CourseKitError, match="launches.json: not JSON"):
        registry.read()


def test_a_launch_lands_on_its_assignment_or_the_formgrader():
    platform = Platform.from_dict(GOOD)
    student = Launch.check(token(), platform, ["transformers"])
    assert next_url(student, "ck-ada", "T101", fetched=True) == \
        "/hub/spawn/ck-ada?next=%2Fuser%2Fck-ada%2Flab%2Ftree%2Ftransformers%2Ftransformers.ipynb"
    assert next_url(student, "ck-ada", "T101", fetched=False) == "/hub/spawn/ck-ada?next=%2Fuser%2Fck-ada%2Flab"
    staff = Launch.check(token(**{ROLES_CLAIM: [INSTRUCTOR]}), platform, ["transformers"])
    assert next_url(staff, "ck-instructor", "T101", True) == "/services/T101/formgrader/manage_submissions/transformers"


def test_the_tools_key_is_made_once_private_and_verifies_what_it_signs(tmp_path):
    path = tmp_path / "tool-key.pem"
    key = ToolKey.create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ToolKey.create(path).jwk() == key.jwk()  # made once: the same key on the next setup
    jwk = key.jwk()
    assert jwk["kid"] and jwk["alg"] == "RS256" and "d" not in jwk  # public half only
    signed = key.sign({"iss": "c1", "aud": "x"})
    assert jwt.get_unverified_header(signed)["kid"] == jwk["kid"]
    public = jwt.PyJWK(jwk).key
    assert jwt.decode(signed, public, algorithms=["RS256"], audience="x")["iss"] == "c1"


# ------------------------------------------------------------------------------------------------ grades back
@pytest.fixture
def platform():
    with LocalPlatform() as p:
        yield p


@pytest.fixture
def folder(tmp_path, platform):
    """The course's LTI folder as `hub up --lti` leaves it, after ck-ada and ck-alan launched from ``platform``."""
    (tmp_path / "platform.json").write_text(json.dumps(platform.registration_file()))
    key = ToolKey.create(tmp_path / "tool-key.pem")
    platform.tool_jwks = key.jwks()
    reg = Platform.from_dict(platform.registration_file())
    registry = Registry(tmp_path)
    for sub, account in (("sub-ada", "ck-ada"), ("sub-alan", "ck-alan")):
        claims = token(iss=platform.url, sub=sub, **{DEPLOYMENT_CLAIM: DEPLOYMENT,
                                                    CONTEXT_CLAIM: {"id": CONTEXT, "label": "T"},
                                                    AGS_CLAIM: {"lineitems": f"{platform.url}/lineitems"}})
        registry.remember(Launch.check(claims, reg, ["transformers"]), account)
    return tmp_path


def test_scores_reach_the_platform_on_one_line_item_with_one_token(folder, platform):
    first = [ags.Score("ck-ada", 12.5, 20.0, "PendingManual")]
    assert ags.post_scores(folder, "transformers", first)["ck-ada"].startswith("posted 12.5/20")
    done = ags.post_scores(folder, "transformers", [ags.Score("ck-ada", 17, 20.0, "FullyGraded"),
                                                    ags.Score("ck-alan", 20, 20.0, "FullyGraded")])
    assert all(v.startswith("posted") for v in done.values())
    data = json.loads((folder / "launches.json").read_text())
    del data["lineitems"]["transformers"]  # forgotten (another host posts): found again by its resourceId
    (folder / "launches.json").write_text(json.dumps(data))
    assert ags.post_scores(folder, "transformers", [ags.Score("ck-alan", 20, 20.0, "FullyGraded")])["ck-alan"] \
        .startswith("posted")
    assert len(platform.lineitems) == 1  # remembered, or found by its resourceId: never made twice
    (item,) = platform.lineitems.values()
    assert (item["resourceId"], item["scoreMaximum"], item["label"]) == ("transformers", 20.0, "transformers")
    got = [(s["userId"], s["scoreGiven"], s["gradingProgress"], s["activityProgress"]) for s in platform.scores]
    assert got == [("sub-ada", 12.5, "PendingManual", "Submitted"), ("sub-ada", 17, "FullyGraded", "Completed"),
                   ("sub-alan", 20, "FullyGraded", "Completed"), ("sub-alan", 20, "FullyGraded", "Completed")]
    assert platform.tokens_issued == 3  # one per run of post_scores, shared by its requests
    assert ags.pending(folder) == {}


def test_a_platform_that_fails_is_tried_again_and_a_refusal_is_kept_never_lost(folder, platform, monkeypatch):
    monkeypatch.setattr(ags.time, "sleep", lambda s: None)
    platform.fail_next = [503, 502]  # the line item's creation fails twice, then answers
    done = ags.post_scores(folder, "transformers", [ags.Score("ck-ada", 10, 20, "FullyGraded")])
    assert done["ck-ada"].startswith("posted") and len(platform.scores) == 1
    platform.fail_next = [400]  # the score itself is refused: not tried again, kept with the reason
    done = ags.post_scores(folder, "transformers", [ags.Score("ck-alan", 5, 20, "FullyGraded")])
    assert done["ck-alan"].startswith("kept") and "HTTP 400" in done["ck-alan"]
    waiting = ags.pending(folder)
    assert set(waiting) == {"transformers/ck-alan"} and waiting["transformers/ck-alan"]["given"] == 5
    done = ags.post_scores(folder, "transformers", [ags.Score("ck-alan", 5, 20, "FullyGraded")])  # sent again
    assert done["ck-alan"].startswith("posted") and ags.pending(folder) == {}
    # a student who never launched from the platform has no platform id: skipped, said why, nothing kept
    done = ags.post_scores(folder, "transformers", [ags.Score("ck-grace", 5, 20, "FullyGraded")])
    assert done["ck-grace"].startswith("skipped") and "never launched" in done["ck-grace"]
    assert ags.pending(folder) == {}


def test_a_platform_that_is_down_keeps_every_score(folder, platform, monkeypatch):
    monkeypatch.setattr(ags.time, "sleep", lambda s: None)
    platform.__exit__(None, None, None)  # stopped: nothing answers on its port
    done = ags.post_scores(folder, "transformers", [ags.Score("ck-ada", 1, 20, "FullyGraded"),
                                                    ags.Score("ck-alan", 2, 20, "FullyGraded")])
    assert all(v.startswith("kept") for v in done.values()) and set(ags.pending(folder)) == {
        "transformers/ck-ada", "transformers/ck-alan"}


def test_a_dry_run_sends_no_score_and_makes_no_line_item(folder, platform):
    done = ags.post_scores(folder, "transformers", [ags.Score("ck-ada", 12, 20, "FullyGraded"),
                                                    ags.Score("ck-grace", 1, 20, "FullyGraded")], dry_run=True)
    assert done["ck-ada"].startswith("would post 12/20 (FullyGraded)") and done["ck-grace"].startswith("skipped")
    assert platform.scores == [] and platform.lineitems == {}
    assert not [r for r in platform.requests if r[0] == "POST" and r[1].startswith("/lineitems")]


def test_the_platform_refuses_a_tool_signing_with_another_key(folder, platform):
    platform.tool_jwks = ToolKey.create(folder / "other.pem").jwks()  # the platform knows another key
    done = ags.post_scores(folder, "transformers", [ags.Score("ck-ada", 12, 20, "FullyGraded")])
    assert done["ck-ada"].startswith("kept") and "token" in done["ck-ada"] and platform.scores == []
