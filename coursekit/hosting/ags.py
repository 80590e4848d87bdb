"""Grades back to the learning platform: LTI Advantage Assignment and Grade Services (AGS 2.0).

For each assignment the tool finds the platform's line item (the one the assignment's link carries, else the one
whose ``resourceId`` is the assignment's id, else a new one it creates) and posts each student's score to it:

* graded on submit (``coursekit.autograde.batch.feedback_on_submit``): the autograded part, ``gradingProgress``
  ``PendingManual`` while written answers wait for the instructor (``FullyGraded`` if the assignment has none);
* the instructor's release of feedback in the formgrader (``coursekit.exchange.SafeExchangeReleaseFeedback``): the
  final score, ``FullyGraded``;
* ``python -m coursekit lti post ASSIGNMENT [--dry-run]``: every student's current score again (shows the requests
  without ``--dry-run``'s sending).

Every request carries an access token from the platform's token endpoint (the OAuth 2 client-credentials grant with a
JWT signed by the tool's key, RFC 7523, as the IMS Security Framework asks). A request that fails on the network or
with a 5xx or 429 is tried again (``ATTEMPTS``, waiting longer each time); a score the platform refuses or never
answers is kept in ``outbox.json`` in the LTI folder with the reason (``python -m coursekit lti status`` lists them,
``lti post`` sends them again): never lost. Students who never launched from the platform (roster accounts signing in
with a password) have no platform user id: they are listed as skipped, not posted.

Configured by ``c.LTIGrades.folder`` (the course's LTI folder; ``hub up --lti`` sets it in the hosted copy's
``nbgrader_config.py``); without it nothing is posted.
"""
from __future__ import annotations

import fcntl
import json
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from traitlets import Bool, Unicode
from traitlets.config import Configurable

from .. import CourseKitError
from .lti import Platform, Registry, ToolKey

SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score"]
LINEITEM = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE = "application/vnd.ims.lis.v1.score+json"
ATTEMPTS = 3
TIMEOUT_S = 10


class LTIGrades(Configurable):
    folder = Unicode("", help="The course's LTI folder (hub up --lti); empty: no grade passback.").tag(config=True)
    final_on_release = Bool(True, help="A release of feedback posts the final score (the instructor's release; "
                                      "feedback on submit posts its own, pending).").tag(config=True)


class Refused(Exception):
    """The platform answered with an error that trying again will not change (4xx)."""


class NotOnPlatform(Exception):
    """The student never launched from the platform: the tool knows no platform user id for them."""


@dataclass
class Score:
    student: str
    given: float
    maximum: float
    progress: str  # "FullyGraded" | "PendingManual"
    comment: str = ""


class Endpoints:
    """The platform's AGS endpoints, as the tool reaches them (token cached until it expires)."""

    def __init__(self, folder: Path, send=None):
        self.folder = Path(folder)
        self.reg = Platform.load(self.folder / "platform.json")
        self.key = ToolKey((self.folder / "tool-key.pem").read_bytes())
        self.registry = Registry(self.folder)
        self._token: tuple[str, float] | None = None
        self.send = send or _send

    # -------------------------------------------------------------------------------- requests
    def token(self) -> str:
        if self._token and self._token[1] > time.time() + 30:
            return self._token[0]
        now = int(time.time())
        assertion = self.key.sign({"iss": self.reg.client_id, "sub": self.reg.client_id, "aud": self.reg.token_url,
                                   "iat": now, "exp": now + 300, "jti": secrets.token_hex(16)})
        body = urllib.parse.urlencode({
            "grant_type": "client_credentials",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion, "scope": " ".join(SCOPES)}).encode()
        answer = self.request("POST", self.reg.token_url, body, {"Content-Type": "application/x-www-form-urlencoded"},
                              auth=False)
        if not isinstance(answer, dict) or not answer.get("access_token"):
            raise Refused(f"{self.reg.token_url}: no access token in the answer")
        self._token = (answer["access_token"], time.time() + float(answer.get("expires_in") or 3600))
        return self._token[0]

    def request(self, method: str, url: str, body: bytes | None = None, headers: dict | None = None,
                auth: bool = True):
        headers = dict(headers or {})
        last = None
        for attempt in range(ATTEMPTS):
            if auth:
                headers["Authorization"] = f"Bearer {self.token()}"
            try:
                return self.send(method, url, body, headers)
            except Refused:
                raise
            except Exception as error:  # noqa: BLE001 - network, 5xx, 429: try again
                last = error
                time.sleep(0.5 * 2 ** attempt)
        raise ConnectionError(f"{method} {url}: {last} ({ATTEMPTS} attempts)")

    # -------------------------------------------------------------------------------- line items
    def lineitem(self, assignment: str, maximum: float, create: bool = True) -> str | None:
        """The URL of the assignment's line item (found or, with ``create``, made)."""
        known = self.registry.read()["lineitems"]
        if known.get(assignment):
            return known[assignment]
        container = known.get("_url")
        if not container:
            raise CourseKitError("the platform has not told the tool where its grades go yet: nobody has launched "
                                 "the course from the platform with grades enabled (the AGS claim)")
        query = urllib.parse.urlencode({"resource_id": assignment})
        found = self.request("GET", _with_query(container, query), headers={"Accept": LINEITEMS})
        for item in found if isinstance(found, list) else []:
            if isinstance(item, dict) and item.get("resourceId") == assignment and item.get("id"):
                self.registry.remember_lineitem(assignment, item["id"])
                return item["id"]
        if not create:
            return None
        made = self.request("POST", container, json.dumps(
            {"scoreMaximum": maximum, "label": assignment, "resourceId": assignment, "tag": "coursekit"}).encode(),
            {"Content-Type": LINEITEM, "Accept": LINEITEM})
        if not isinstance(made, dict) or not made.get("id"):
            raise Refused(f"{container}: the platform made no line item for {assignment}")
        self.registry.remember_lineitem(assignment, made["id"])
        return made["id"]

    def user_of(self, student: str) -> dict | None:
        return self.registry.read()["accounts"].get(student)

    def post(self, assignment: str, score: Score, lineitem: str) -> None:
        user = self.user_of(score.student)
        if not user:
            raise NotOnPlatform(f"{score.student} never launched from the platform (no platform user id): not sent")
        body = {"userId": user["sub"], "scoreGiven": round(score.given, 4), "scoreMaximum": round(score.maximum, 4),
                "activityProgress": "Submitted" if score.progress == "PendingManual" else "Completed",
                "gradingProgress": score.progress,
                "timestamp": datetime.now(timezone.utc).isoformat(timespec="milliseconds")}
        if score.comment:
            body["comment"] = score.comment[:1000]
        path = urllib.parse.urlsplit(lineitem)
        scores = urllib.parse.urlunsplit(path._replace(path=path.path.rstrip("/") + "/scores"))
        self.request("POST", scores, json.dumps(body).encode(), {"Content-Type": SCORE})


def _with_query(url: str, query: str) -> str:
    return url + ("&" if urllib.parse.urlsplit(url).query else "?") + query


def _send(method: str, url: str, body: bytes | None, headers: dict):
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            raw = answer.read(1 << 20)
    except urllib.error.HTTPError as error:
        text = error.read(2000).decode(errors="replace").strip()
        if 400 <= error.code < 500 and error.code != 429:
            raise Refused(f"{method} {url}: HTTP {error.code} {text[:300]}") from None
        raise ConnectionError(f"HTTP {error.code} {text[:300]}") from None
    return json.loads(raw) if raw.strip() else None


# ------------------------------------------------------------------------------------------------ the outbox
@contextmanager
def _outbox(folder: Path):
    path = Path(folder) / "outbox.json"
    with open(Path(folder) / ".outbox.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text()) if path.exists() else {}
        yield data
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)


def pending(folder: Path) -> dict:
    """{"assignment/student": {score..., "reason": ...}}: scores the platform has not taken yet."""
    path = Path(folder) / "outbox.json"
    return json.loads(path.read_text()) if path.exists() else {}


def post_scores(folder: Path, assignment: str, scores: list[Score], log=print, dry_run: bool = False,
                platform: "Endpoints | None" = None) -> dict[str, str]:
    """Post ``scores`` to the assignment's line item; {student: what happened}. What the platform did not take is
    kept in the outbox (and what it took is removed from it)."""
    out: dict[str, str] = {}
    if not scores:
        return out

    def kept(reason: str, which: list[Score]) -> dict[str, str]:
        _keep(folder, assignment, which, reason)
        log(f"LTI grades: {assignment}: nothing posted: {reason}")
        return {s.student: f"kept: {reason}" for s in which}

    try:
        platform = platform or Endpoints(folder)
    except Exception as error:  # noqa: BLE001 - every score is kept, with why
        return kept(str(error) if isinstance(error, CourseKitError) else f"{type(error).__name__}: {error}", scores)
    # A roster account signing in with its password has no platform user: nothing to send, nothing to keep.
    on_platform = []
    for score in scores:
        if platform.user_of(score.student):
            on_platform.append(score)
            continue
        out[score.student] = f"skipped: {score.student} never launched from the platform (no platform user id)"
        if not dry_run:
            with _outbox(folder) as box:
                box.pop(f"{assignment}/{score.student}", None)
    scores = on_platform
    if not scores:
        return out
    try:
        lineitem = platform.lineitem(assignment, max(s.maximum for s in scores), create=not dry_run)
    except Exception as error:  # noqa: BLE001 - every score is kept, with why
        reason = f"{type(error).__name__}: {error}" if not isinstance(error, (Refused, CourseKitError)) else str(error)
        return {**out, **kept(reason, scores)}
    for score in scores:
        if dry_run:
            out[score.student] = (f"would post {score.given:g}/{score.maximum:g} ({score.progress}) to "
                                  f"{lineitem or 'a new line item for ' + assignment}")
            continue
        try:
            platform.post(assignment, score, lineitem)
        except NotOnPlatform as error:  # a roster account signing in with its password: nothing to send it to
            out[score.student] = f"skipped: {error}"
            continue
        except Exception as error:  # noqa: BLE001
            reason = str(error) if isinstance(error, (Refused, ConnectionError)) else f"{type(error).__name__}: {error}"
            _keep(folder, assignment, [score], reason)
            out[score.student] = f"kept: {reason}"
            log(f"LTI grades: {assignment}/{score.student}: the platform did not take the score: {reason}")
            continue
        with _outbox(folder) as box:
            box.pop(f"{assignment}/{score.student}", None)
        out[score.student] = f"posted {score.given:g}/{score.maximum:g} ({score.progress})"
    return out


def _keep(folder: Path, assignment: str, scores: list[Score], reason: str) -> None:
    with _outbox(folder) as box:
        for s in scores:
            box[f"{assignment}/{s.student}"] = {"given": s.given, "maximum": s.maximum, "progress": s.progress,
                                                "reason": reason[:500], "at": time.time()}


# ------------------------------------------------------------------------------------------------ from the gradebook
def gradebook_scores(gb, assignment: str, students: list[str] | None = None, final: bool = True) -> list[Score]:
    """The students' scores of ``assignment`` in the gradebook: the whole score when ``final``, else the autograded
    part, pending while a written answer waits for the instructor."""
    from nbgrader.api import MissingEntry

    out = []
    for sub in gb.assignment_submissions(assignment):
        student = sub.student.id
        if students is not None and student not in students:
            continue
        try:
            waiting = bool(sub.needs_manual_grade)
        except MissingEntry:
            waiting = False
        progress = "FullyGraded" if final or not waiting else "PendingManual"
        out.append(Score(student, float(sub.score or 0.0), float(sub.max_score or 0.0), progress))
    return out
