"""LTI 1.3 for the hosted course: the platform's registration, the tool's key, who a launch is, and what it opens.

The hub is an LTI 1.3 *tool*; the learning platform (Canvas, Moodle, Blackboard, Brightspace) is the *platform*. The
instructor registers the tool with the platform and writes what the platform gives back into one JSON file, passed to
``python -m coursekit hub up --lti FILE`` (``hub/lti.example.json``; book/instructors.md, "Sign in from your learning
platform")::

    {"issuer": "https://canvas.example.edu", "client_id": "10000000000042", "deployment_ids": ["7:abc"],
     "context_id": "course-4711", "authorize_url": "https://canvas.example.edu/api/lti/authorize_redirect",
     "jwks_url": "https://canvas.example.edu/api/lti/security/jwks",
     "token_url": "https://canvas.example.edu/login/oauth2/token"}

``context_id`` is the platform's id of the one course this hub hosts: a launch from any other course is refused. The
tool's RSA key pair is generated at setup (``ToolKey``) in the course's LTI folder (``/srv/coursekit/lti``, the
grader's, mode 0700); the hub serves its public half at ``/hub/lti13/jwks`` (the URL the platform asks for).

A launch (checked by ``jupyterhub-ltiauthenticator``: the id_token's RS256 signature against the platform's JWKS, its
issuer, audience, expiry and age, the nonce of this browser's login) is then checked here (``Launch.check``): the
deployment, the course, the role and the assignment; only then is anything created. A learner becomes a student
account: the roster's, when the platform's e-mail address matches one (``hub/roster.csv``), else one made on the first
launch (``ck-lti-`` and a digest of the platform's user id, stable across launches). An instructor or teaching
assistant of the course signs in as the course's instructor (``ck-instructor``). Any other role is refused. A launch
from an assignment's link (the custom parameter ``assignment=<id>``) opens that assignment, fetched into the student's
home; the instructor's opens its submissions in the formgrader. Who is who, and where the platform takes grades
(the AGS endpoint of each launch), is kept in ``launches.json`` in the LTI folder (``Registry``), for grade passback
(``coursekit.hosting.ags``).

This module is the pure part (tested in tests/unit/test_lti.py); ``lti_hub`` is the JupyterHub side.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from .. import CourseKitError

ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
CONTEXT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/context"
DEPLOYMENT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
CUSTOM_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/custom"
RESOURCE_LINK_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"

# Context (course) membership roles of the LIS vocabulary (LTI 1.3, appendix A.2): an instructor of the course, or a
# teaching assistant (a sub-role of Instructor), grades; a learner is a student. Institution roles (a person who
# teaches somewhere in the institution) say nothing about this course.
LIS = "http://purl.imsglobal.org/vocab/lis/v2/membership"
STAFF = {f"{LIS}#Instructor", f"{LIS}#Administrator", f"{LIS}#ContentDeveloper",
         f"{LIS}/Instructor#TeachingAssistant", f"{LIS}/Instructor#Grader",
         "Instructor", "TeachingAssistant"}  # the short forms LTI 1.3 still allows for context roles
LEARNERS = {f"{LIS}#Learner", f"{LIS}/Learner#Learner", "Learner"}

FIELDS = {"issuer": str, "client_id": str, "deployment_ids": list, "context_id": str, "authorize_url": str,
          "jwks_url": str, "token_url": str}


class LaunchRefused(Exception):
    """A launch that passed the signature checks but is not for this hub (the message says why, for the user)."""


@dataclass
class Platform:
    """The platform's registration (the instructor's ``--lti`` file)."""
    issuer: str
    client_id: str
    deployment_ids: list[str]
    context_id: str
    authorize_url: str
    jwks_url: str
    token_url: str

    @classmethod
    def load(cls, path: Path | str) -> "Platform":
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except OSError as error:
            raise CourseKitError(f"{path}: cannot read the LTI registration ({error.strerror})") from None
        except ValueError as error:
            raise CourseKitError(f"{path}: the LTI registration is not JSON ({error})") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data, where: str = "the LTI registration") -> "Platform":
        if not isinstance(data, dict):
            raise CourseKitError(f"{where}: an object with the keys {', '.join(FIELDS)}")
        problems = [f"{where}: missing {key!r}" for key in FIELDS if key not in data]
        problems += [f"{where}: unknown key {key!r} (the keys are {', '.join(FIELDS)})" for key in data
                     if key not in FIELDS]
        for key, kind in FIELDS.items():
            value = data.get(key)
            if key not in data:
                continue
            if not isinstance(value, kind) or not value:
                problems.append(f"{where}: {key!r} must be a non-empty {'list of strings' if kind is list else 'string'}")
            elif kind is list and not all(isinstance(v, str) and v for v in value):
                problems.append(f"{where}: {key!r} must be a list of non-empty strings")
            elif key.endswith("_url") or key == "issuer":
                url = urlparse(value)
                local = url.hostname in ("127.0.0.1", "localhost", "::1")
                if url.scheme != "https" and not (url.scheme == "http" and local):
                    problems.append(f"{where}: {key!r} must be an https:// URL (http:// only on this machine), "
                                    f"not {value!r}")
        if problems:
            raise CourseKitError("\n".join(problems))
        return cls(**{key: data[key] for key in FIELDS})

    def to_dict(self) -> dict:
        return {key: getattr(self, key) for key in FIELDS}


# ------------------------------------------------------------------------------------------------ the tool's key
class ToolKey:
    """The tool's RSA key pair (PEM, in the LTI folder); its public JWK with a stable ``kid`` (RFC 7638 thumbprint)."""

    def __init__(self, pem: bytes):
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        self.pem = pem
        self.private = load_pem_private_key(pem, password=None)

    @classmethod
    def create(cls, path: Path) -> "ToolKey":
        """Generate a 2048-bit key into ``path`` (mode 0600) unless one is there; return it."""
        if path.exists():
            return cls(path.read_bytes())
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        tmp.replace(path)
        return cls(pem)

    def jwk(self) -> dict:
        import base64

        numbers = self.private.public_key().public_numbers()

        def b64(n: int) -> str:
            raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

        public = {"e": b64(numbers.e), "kty": "RSA", "n": b64(numbers.n)}
        thumb = hashlib.sha256(json.dumps(public, separators=(",", ":"), sort_keys=True).encode()).digest()
        kid = base64.urlsafe_b64encode(thumb).rstrip(b"=").decode()
        return {**public, "kid": kid, "alg": "RS256", "use": "sig"}

    def jwks(self) -> dict:
        return {"keys": [self.jwk()]}

    def sign(self, claims: dict) -> str:
        import jwt

        return jwt.encode(claims, self.pem, algorithm="RS256", headers={"kid": self.jwk()["kid"]})


# ------------------------------------------------------------------------------------------------ a launch
def role_of(roles) -> str | None:
    """"instructor" for the course's staff, "student" for a learner, None for any other role (refused)."""
    roles = set(roles) if isinstance(roles, list) else set()
    if roles & STAFF:
        return "instructor"
    if roles & LEARNERS:
        return "student"
    return None


def account_for_sub(issuer: str, sub: str) -> str:
    """The account a platform user without a roster entry gets: stable, a valid Unix name, nothing personal in it."""
    return "ck-lti-" + hashlib.sha256(f"{issuer}\n{sub}".encode()).hexdigest()[:10]


@dataclass
class Launch:
    """What a verified id_token asks for, once ``check`` accepted it."""
    issuer: str
    sub: str
    role: str
    assignment: str | None
    name: tuple[str, str]
    email: str
    resource_link: str
    ags: dict = field(default_factory=dict)

    @classmethod
    def check(cls, token: dict, platform: Platform, assignments: list[str]) -> "Launch":
        """Accept a launch for this hub's deployment, course and assignments, with a known role; else
        LaunchRefused with the reason (nothing is created for a refused launch)."""
        deployment = token.get(DEPLOYMENT_CLAIM)
        if deployment not in platform.deployment_ids:
            raise LaunchRefused(f"this hub is not registered for the platform's deployment {str(deployment)[:80]!r}")
        context = token.get(CONTEXT_CLAIM) if isinstance(token.get(CONTEXT_CLAIM), dict) else {}
        if context.get("id") != platform.context_id:
            raise LaunchRefused(f"this hub hosts another course than the one this launch came from "
                                f"({str(context.get('id'))[:80]!r})")
        role = role_of(token.get(ROLES_CLAIM))
        if role is None:
            raise LaunchRefused("this course is open to its learners, instructors and teaching assistants only")
        sub = token.get("sub")
        if not isinstance(sub, str) or not sub or len(sub) > 255:
            raise LaunchRefused("the launch names no user (anonymous launches are not supported)")
        custom = token.get(CUSTOM_CLAIM) if isinstance(token.get(CUSTOM_CLAIM), dict) else {}
        assignment = custom.get("assignment")
        if assignment is not None and assignment not in assignments:
            raise LaunchRefused(f"this course has no assignment {str(assignment)[:80]!r}")
        link = token.get(RESOURCE_LINK_CLAIM) if isinstance(token.get(RESOURCE_LINK_CLAIM), dict) else {}
        ags = token.get(AGS_CLAIM) if isinstance(token.get(AGS_CLAIM), dict) else {}
        text = lambda key: str(token.get(key) or "")[:100]  # noqa: E731
        return cls(issuer=str(token.get("iss")), sub=sub, role=role, assignment=assignment,
                   name=(text("given_name"), text("family_name")), email=text("email").lower(),
                   resource_link=str(link.get("id") or "")[:255],
                   ags={k: ags[k] for k in ("lineitems", "lineitem", "scope") if k in ags})


# ------------------------------------------------------------------------------------------------ the registry
NONCE_TTL_S = 3600


class Registry:
    """``launches.json`` in the LTI folder: {platform user: account}, each account's platform user and the course's
    AGS endpoints; nonces seen in the last hour (a replayed id_token is refused even with its cookies)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = self.folder / "launches.json"

    @contextmanager
    def _locked(self):
        owner = os.stat(self.folder)  # the hub (root) writes, the grader's processes read: the folder's owner owns it
        lock_path = self.folder / ".launches.lock"
        lock = open(lock_path, "a")
        try:
            _own(lock_path, owner)
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self.read()
            yield data
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            os.chmod(tmp, 0o600)
            _own(tmp, owner)
            tmp.replace(self.path)
        finally:
            lock.close()

    def remember_lineitem(self, assignment: str, url: str) -> None:
        with self._locked() as data:
            data["lineitems"][assignment] = url

    def read(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            data = {}
        except ValueError as error:
            raise CourseKitError(f"{self.path}: not JSON ({error}); the launches it recorded are lost, the next "
                                 f"launches record them again") from None
        for key in ("users", "accounts", "lineitems", "nonces"):
            data.setdefault(key, {})
        return data

    def first_use_of(self, nonce: str) -> bool:
        """Record ``nonce``; False if it was seen before (a replay)."""
        now = time.time()
        with self._locked() as data:
            data["nonces"] = {n: t for n, t in data["nonces"].items() if now - t < NONCE_TTL_S}
            if nonce in data["nonces"]:
                return False
            data["nonces"][nonce] = now
            return True

    def account(self, issuer: str, sub: str) -> str | None:
        return self.read()["users"].get(f"{issuer} {sub}")

    def remember(self, launch: Launch, account: str) -> None:
        with self._locked() as data:
            data["users"][f"{launch.issuer} {launch.sub}"] = account
            if launch.role == "student":
                data["accounts"][account] = {"sub": launch.sub, "issuer": launch.issuer}
            if launch.ags.get("lineitems"):
                data["lineitems"]["_url"] = launch.ags["lineitems"]
                data["lineitems"]["_scope"] = launch.ags.get("scope", [])
            if launch.assignment and launch.ags.get("lineitem"):
                data["lineitems"][launch.assignment] = launch.ags["lineitem"]


def _own(path: Path, owner: os.stat_result) -> None:
    if os.geteuid() == 0:
        os.chown(path, owner.st_uid, owner.st_gid)


def roster_match(email: str, roster) -> str | None:
    """The roster's student with this e-mail address (case-insensitive), if exactly one."""
    if not email:
        return None
    found = [s.id for s in roster if s.email and s.email.strip().lower() == email]
    return found[0] if len(found) == 1 else None


SAFE_NEXT = re.compile(r"^[A-Za-z0-9_.-]+$")


def next_url(launch: Launch, account: str, course: str, fetched: bool) -> str:
    """Where the launch lands: the assignment's notebook for a student who has it, its submissions in the
    formgrader for the instructor, JupyterLab otherwise (a student's server started first, by the hub's spawn page:
    JupyterHub does not start one for a plain link)."""
    from urllib.parse import quote

    a = launch.assignment
    if launch.role == "instructor":
        return f"/services/{course}/formgrader/manage_submissions/{a}" if a and SAFE_NEXT.match(a) \
            else f"/services/{course}/formgrader"
    lab = f"/user/{account}/lab" + (f"/tree/{a}/{a}.ipynb" if a and SAFE_NEXT.match(a) and fetched else "")
    return f"/hub/spawn/{account}?next={quote(lab, safe='')}"


# ------------------------------------------------------------------------------------------------ setup (root)
LTI_BLOCK = "# --- Grades back to the learning platform (written by `python -m coursekit hub up --lti`) ---"


def setup(folder: Path, platform: Platform, course_config: Path, owner: tuple[int, int]) -> ToolKey:
    """The course's LTI folder (the grader's, 0700): the registration, the tool's key (made once), the launches;
    and ``c.LTIGrades.folder`` in the hosted course's ``nbgrader_config.py`` (once)."""
    folder = Path(folder)
    folder.mkdir(mode=0o700, exist_ok=True)
    (folder / "platform.json").write_text(json.dumps(platform.to_dict(), indent=1))
    key = ToolKey.create(folder / "tool-key.pem")
    text = course_config.read_text()
    if LTI_BLOCK not in text:
        course_config.write_text(text.rstrip("\n") + f"\n\n{LTI_BLOCK}\nc.LTIGrades.folder = {str(folder)!r}\n")
    for path in [folder, *folder.iterdir()]:
        os.chown(path, *owner)
    os.chmod(folder, 0o700)
    return key
