"""The hub's side of LTI 1.3 (``hub/jupyterhub_config.py`` uses it when ``hub up --lti FILE`` registered a platform).

``CourseAuthenticator`` is ``jupyterhub-ltiauthenticator``'s ``LTI13Authenticator``, configured and wrapped thinly:

* the OIDC login initiation (``/hub/lti13/oauth_login``) and the launch (``/hub/lti13/oauth_callback``) are the
  package's own handlers: they check the id_token's RS256 signature against the platform's JWKS, its issuer, audience
  (the client id), expiry and age, and that its nonce is the one this browser's login started with;
* then ``coursekit.hosting.lti`` checks the deployment, the course, the role and the assignment, and refuses a nonce
  seen before (a replayed id_token, even with its cookies); only then is the account made or found, and the
  assignment fetched (as the student, with nbgrader);
* every refused launch is answered with its reason and logged (``LTI launch refused: ...``) with the client address;
* the hub's own sign-in page still takes the passwords of the course's accounts (PAM), for the instructor's and the
  roster's accounts, as without LTI;
* ``/hub/lti13/jwks`` serves the tool's public key (the platform checks the tool's signed grade requests with it).
"""
from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path

from jupyterhub.auth import PAMAuthenticator
from jupyterhub.handlers import BaseHandler
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler
from tornado.web import HTTPError
from traitlets import Dict, List, Unicode

from . import GRADER, STUDENTS_GROUP, Paths
from .lti import Launch, LaunchRefused, Platform, Registry, ToolKey, account_for_sub, next_url, roster_match


def _runuser() -> str:
    """runuser by the hub's own PATH (the command's environment is the account's, without /usr/sbin)."""
    return shutil.which("runuser") or "/usr/sbin/runuser"


class JWKSHandler(BaseHandler):
    """The tool's public key set."""

    def check_xsrf_cookie(self):
        return

    async def get(self):
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "max-age=300")
        self.write(json.dumps(self.authenticator.tool_key.jwks()))


class CallbackHandler(LTI13CallbackHandler):
    """The package's launch handler; a refusal is logged with its reason, and the launch lands where
    ``CourseAuthenticator`` says."""

    async def post(self):
        try:
            await super().post()
        except HTTPError as error:
            self.log.warning("LTI launch refused: %s (HTTP %s, from %s)", error.log_message, error.status_code,
                             self.request.remote_ip)
            raise

    def get_next_url(self, user=None):
        landing = getattr(self, "_coursekit_next", None)
        return landing or super().get_next_url(user)


class CourseAuthenticator(LTI13Authenticator):
    login_service = ""  # the hub's page shows its own password form; LTI launches come to their own URLs
    login_handler = LTI13LoginInitHandler
    callback_handler = CallbackHandler

    lti_folder = Unicode(config=True, help="The course's LTI folder (the tool's key, launches.json).")
    platform = Dict(config=True, help="The platform's registration (coursekit.hosting.lti.Platform).")
    course = Unicode(config=True, help="The nbgrader course id.")
    assignments = List(Unicode(), config=True, help="The course's assignments a launch may open.")
    roster = List(Dict(), config=True, help="The roster's students (id, first_name, last_name, email).")
    password_users = List(Unicode(), config=True, help="Accounts that may sign in with a password (PAM).")
    instructor = Unicode(config=True)
    venv = Unicode(config=True)
    course_dir = Unicode(config=True)
    state_dir = Unicode(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        reg = Platform.from_dict(self.platform, "c.CourseAuthenticator.platform")
        self.issuer, self.client_id = reg.issuer, {reg.client_id}
        self.authorize_url, self.jwks_endpoint = reg.authorize_url, reg.jwks_url
        self.username_key = "sub"
        self.registration = reg
        self.registry = Registry(self.lti_folder)
        self.tool_key = ToolKey(open(os.path.join(self.lti_folder, "tool-key.pem"), "rb").read())
        self._pam = PAMAuthenticator(parent=self, open_sessions=False)

    def login_url(self, base_url):  # where the hub sends a browser that must sign in: the password form
        from jupyterhub.utils import url_path_join

        return url_path_join(base_url, "login")

    def get_handlers(self, app):
        return [(r"/lti13/oauth_login", self.login_handler), (r"/lti13/oauth_callback", self.callback_handler),
                (r"/lti13/config", self.config_handler), (r"/lti13/jwks", JWKSHandler)]

    def check_allowed(self, username, authentication=None):
        state = (authentication or {}).get("auth_state") or {}
        return bool(state.get("lti")) or username in self.password_users

    async def authenticate(self, handler, data=None):
        if not isinstance(handler, LTI13CallbackHandler):  # the password form
            name = await self._pam.authenticate(handler, data)
            return {"name": name, "auth_state": {}} if name in self.password_users else None
        token = data or {}
        try:
            launch = Launch.check(token, self.registration, list(self.assignments))
            if not self.registry.first_use_of(str(token.get("nonce"))):
                raise LaunchRefused("this launch was used before (a replayed id_token)")
        except LaunchRefused as refused:
            raise HTTPError(403, str(refused)) from None
        account = await asyncio.get_running_loop().run_in_executor(None, self._account, launch)
        fetched = False
        if launch.role == "student" and launch.assignment:
            fetched = await asyncio.get_running_loop().run_in_executor(None, self._fetch, account, launch.assignment)
        handler._coursekit_next = next_url(launch, account, self.course, fetched)
        self.log.info("LTI launch: %s (%s) as %s%s", launch.sub, launch.role, account,
                      f", assignment {launch.assignment}" if launch.assignment else "")
        return {"name": account, "auth_state": {"lti": True, "role": launch.role, "sub": launch.sub}}

    # -------------------------------------------------------------------------------- accounts
    def _account(self, launch: Launch) -> str:
        """The account of this launch: the instructor's, the registry's, the roster's, or a new one (made here)."""
        from .accounts import Student, add_user, exists_user
        from .state import State

        if launch.role == "instructor":
            self.registry.remember(launch, self.instructor)
            return self.instructor
        known = self.registry.account(launch.issuer, launch.sub)
        roster = [Student(**s) for s in self.roster]
        account = known or roster_match(launch.email, roster) or account_for_sub(launch.issuer, launch.sub)
        if not exists_user(account):
            paths = Paths(state=Path(self.state_dir))
            state = State.load(paths)
            first, last = launch.name
            add_user(state, account, f"{first} {last}".strip() or "LTI student", groups=(STUDENTS_GROUP,))
            state.students = sorted(set(state.students) | {account})
            state.save(paths)
            self._as_grader(["nbgrader", "db", "student", "add", account, f"--first-name={first}",
                             f"--last-name={last}", *([f"--email={launch.email}"] if launch.email else [])])
            self.log.info("LTI: made the student account %s for %s", account, launch.sub)
        self.registry.remember(launch, account)
        return account

    def _env(self, home: str) -> dict:
        return {"PATH": f"{self.venv}/bin:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home}

    def _as_grader(self, cmd: list[str]) -> None:
        proc = subprocess.run([_runuser(), "-u", GRADER, "--", *cmd], cwd=self.course_dir, capture_output=True,
                              text=True, env=self._env(pwd.getpwnam(GRADER).pw_dir), timeout=120)
        if proc.returncode:
            self.log.error("LTI: %s failed: %s", " ".join(cmd[:4]), proc.stderr[-1000:])

    def _fetch(self, account: str, assignment: str) -> bool:
        """Fetch ``assignment`` into the student's home unless it is there; True if the student has it."""
        home = pwd.getpwnam(account).pw_dir
        if os.path.isdir(os.path.join(home, assignment)):
            return True
        proc = subprocess.run([_runuser(), "-u", account, "--", f"{self.venv}/bin/nbgrader", "fetch_assignment",
                               assignment, "--course", self.course], cwd=home, capture_output=True, text=True,
                              env=self._env(home), timeout=120)
        if proc.returncode:
            self.log.info("LTI: %s could not fetch %s yet: %s", account, assignment,
                          (proc.stderr.strip().splitlines() or ["?"])[-1][:300])
        return os.path.isdir(os.path.join(home, assignment))
