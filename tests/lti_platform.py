"""A local LTI 1.3 platform for the tests, built on ``lti1p3platform`` (a maintained library; nothing here signs or
checks a token by hand except what a test forges on purpose).

It serves, on 127.0.0.1: its JWKS (``/jwks``), the OIDC authorization endpoint (``/auth``: answers the tool's
authentication request with the auto-submitting form that posts the signed id_token back, as a platform does), the
OAuth 2 token endpoint (``/token``: the client-credentials grant, the tool's JWT checked against the tool's JWKS
fetched from the hub), and AGS line items and scores (``/lineitems``, ``/lineitems/<n>``, ``/lineitems/<n>/scores``,
every request's bearer token checked). ``launch(user, ...)`` returns the URL a platform's link sends a browser to (the
tool's login initiation); ``tamper`` makes the next id_token wrong in one way, for the negative tests.
"""
from __future__ import annotations

import base64
import html
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration

CLIENT_ID = "coursekit-tool-1"
DEPLOYMENT = "deployment-1"
CONTEXT = "course-4711"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"


def _pem(key) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _public_pem(key) -> str:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


class KeyedRegistration(Registration):
    """lti1p3platform's registration, with a ``kid`` on the platform's key (PyJWT's JWKS client needs one)."""
    KID = "platform-key-1"

    def get_jwks(self):
        return [{**key, "kid": self.KID} for key in super().get_jwks()]

    def get_kid(self):
        return self.KID


class Config(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs):
        self.registration_ = kwargs["registration"]

    def get_registration_by_params(self, **kwargs):
        return self.registration_


class Request:
    def __init__(self, params: dict):
        self.get_data, self.form_data = params, {}


class Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data, **kwargs):
        fields = "".join(f'<input type="hidden" name="{k}" value="{html.escape(str(v))}">'
                         for k, v in launch_data.items() if k != "launch_url")
        return (f'<!doctype html><html><body><form id="lti" method="post" action="{html.escape(launch_data["launch_url"])}">'
                f'{fields}</form><script>document.getElementById("lti").submit()</script></body></html>')


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs):
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url):
        return url


class LocalPlatform:
    """The platform, its HTTP server in a thread; ``with LocalPlatform() as p:``."""

    def __init__(self):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.platform = self
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.tool_url = ""  # the hub's URL, once it is up
        self.tool_jwks = None  # the tool's key set, if not fetched from the hub's /hub/lti13/jwks
        self.pending: dict[str, dict] = {}  # lti_message_hint -> the launch to make
        self.lineitems: dict[str, dict] = {}
        self.scores: list[dict] = []
        self.requests: list[tuple[str, str]] = []
        self.fail_next: list[int] = []  # HTTP statuses to answer the next AGS requests with
        self.tokens_issued = 0
        self.lock = threading.Lock()

    def registration(self, key=None) -> Registration:
        key = key or self.key
        reg = (KeyedRegistration().set_iss(self.url).set_client_id(CLIENT_ID).set_deployment_id(DEPLOYMENT)
               .set_oidc_login_url(f"{self.tool_url}/hub/lti13/oauth_login")
               .set_launch_url(f"{self.tool_url}/hub/")
               .set_platform_public_key(_public_pem(self.key)).set_platform_private_key(_pem(key)))
        reg.set_tool_key_set_url(f"{self.tool_url}/hub/lti13/jwks")
        if self.tool_jwks:
            reg.set_tool_key_set(self.tool_jwks)
        return reg

    def registration_file(self) -> dict:
        """What the instructor copies from the platform into the hub's --lti file."""
        return {"issuer": self.url, "client_id": CLIENT_ID, "deployment_ids": [DEPLOYMENT], "context_id": CONTEXT,
                "authorize_url": f"{self.url}/auth", "jwks_url": f"{self.url}/jwks", "token_url": f"{self.url}/token"}

    def __enter__(self):
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # -------------------------------------------------------------------------------- launches
    def launch(self, user: str, roles: list[str], assignment: str | None = None, email: str = "",
               given: str = "", family: str = "", context: str = CONTEXT, tamper: str | None = None,
               deployment: str = DEPLOYMENT) -> str:
        """The URL of the tool's login initiation for ``user`` following a link (``assignment``: its custom
        parameter), with the AGS claim; the id_token is made when the tool's authentication request arrives."""
        hint = uuid.uuid4().hex
        self.pending[hint] = {"user": user, "roles": roles, "assignment": assignment, "email": email,
                              "given": given, "family": family, "context": context, "tamper": tamper,
                              "deployment": deployment}
        login = Login(Request({}), Config(registration=self.registration()))
        login.set_launch_url(f"{self.tool_url}/hub/")
        login.set_lti_message_hint(hint=hint)
        return login.initiate_login(user)

    def answer_authentication(self, params: dict) -> str:
        """The tool's authentication request -> the auto-submitting form with the id_token."""
        want = self.pending.pop(params.get("lti_message_hint", ""), None)
        if want is None:
            raise ValueError("unknown lti_message_hint")
        tamper = want["tamper"]
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048) if tamper == "forged" else None
        reg = self.registration(key)
        if want["deployment"] != DEPLOYMENT:
            reg.set_deployment_id(want["deployment"])
        launch = Launch(Request(params), Config(registration=reg))
        launch.set_user_data(want["user"], want["roles"], full_name=f"{want['given']} {want['family']}".strip() or None,
                             email_address=want["email"] or None)
        extra = {}
        if want["given"]:
            extra.update(given_name=want["given"], family_name=want["family"])
        launch.set_resource_link_claim(f"link-{want['assignment'] or 'course'}", title=want["assignment"] or "course")
        launch.set_launch_context_claim(want["context"], context_label="T101", context_title="Transformers")
        if want["assignment"]:
            launch.set_custom_parameters_claim({"assignment": want["assignment"]})
        launch.set_ags(lineitems_url=f"{self.url}/lineitems")
        if tamper == "audience":
            extra["aud"] = "someone-else"
            extra["azp"] = "someone-else"
        if extra:
            launch.set_extra_claims(extra)
        if tamper == "expired":
            launch.set_id_token_expiration(-120)
        form = launch.lti_launch()
        if tamper == "role":  # a learner's id_token with the role claim changed afterwards (the signature kept)
            token = re.search(r'name="id_token" value="([^"]+)"', form).group(1)
            head, body, signature = token.split(".")
            claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            claims["https://purl.imsglobal.org/spec/lti/claim/roles"] = [INSTRUCTOR]
            body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
            form = form.replace(token, f"{head}.{body}.{signature}")
        return form

    # -------------------------------------------------------------------------------- services
    def token(self, form: dict) -> dict:
        config = Config(registration=self.registration())
        config.get_registration()
        answer = config.get_access_token(form)
        with self.lock:
            self.tokens_issued += 1
        return answer

    def authorized(self, header: str, scope: str) -> bool:
        if not header.startswith("Bearer "):
            return False
        config = Config(registration=self.registration())
        config.get_registration()
        try:
            return config.validate_token(header[len("Bearer "):], allowed_scopes=[scope])
        except Exception:  # noqa: BLE001 - any bad token is refused
            return False


AGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    @property
    def platform(self) -> LocalPlatform:
        return self.server.platform

    def _send(self, status: int, body, kind: str = "application/json"):
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self):
        url = urlsplit(self.path)
        p = self.platform
        p.requests.append(("GET", url.path))
        if url.path == "/jwks":
            return self._send(200, {"keys": p.registration().get_jwks()})
        if url.path == "/auth":
            params = {k: v[0] for k, v in parse_qs(url.query).items()}
            try:
                return self._send(200, p.answer_authentication(params), "text/html")
            except Exception as error:  # noqa: BLE001
                return self._send(400, {"error": str(error)})
        if url.path == "/lineitems":
            if not p.authorized(self.headers.get("Authorization", ""), AGS + "lineitem.readonly") and \
                    not p.authorized(self.headers.get("Authorization", ""), AGS + "lineitem"):
                return self._send(401, {"error": "bad token"})
            want = parse_qs(url.query).get("resource_id", [None])[0]
            items = [i for i in p.lineitems.values() if want in (None, i.get("resourceId"))]
            return self._send(200, items, "application/vnd.ims.lis.v2.lineitemcontainer+json")
        return self._send(404, {"error": "not found"})

    def do_POST(self):
        url = urlsplit(self.path)
        p = self.platform
        p.requests.append(("POST", url.path))
        body = self._body()
        if url.path == "/token":
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            try:
                return self._send(200, p.token(form))
            except Exception as error:  # noqa: BLE001
                return self._send(400, {"error": "invalid_client", "error_description": str(error)})
        if p.fail_next and url.path.startswith("/lineitems"):
            return self._send(p.fail_next.pop(0), {"error": "failing on purpose"})
        if url.path == "/lineitems":
            if not p.authorized(self.headers.get("Authorization", ""), AGS + "lineitem"):
                return self._send(401, {"error": "bad token"})
            item = json.loads(body)
            item["id"] = f"{p.url}/lineitems/{len(p.lineitems) + 1}"
            p.lineitems[item["id"]] = item
            return self._send(201, item, "application/vnd.ims.lis.v2.lineitem+json")
        match = re.fullmatch(r"/lineitems/(\d+)/scores", url.path)
        if match:
            if not p.authorized(self.headers.get("Authorization", ""), AGS + "score"):
                return self._send(401, {"error": "bad token"})
            if f"{p.url}/lineitems/{match.group(1)}" not in p.lineitems:
                return self._send(404, {"error": "no such line item"})
            score = json.loads(body)
            if not isinstance(score.get("scoreGiven"), (int, float)) or score.get("scoreGiven") < 0:
                return self._send(400, {"error": "scoreGiven"})
            score["lineitem"] = f"{p.url}/lineitems/{match.group(1)}"
            score["received"] = time.time()
            p.scores.append(score)
            return self._send(200, {})
        return self._send(404, {"error": "not found"})


def form_fields(page: str) -> tuple[str, dict]:
    """The action and fields of the platform's auto-submitting launch form (what a browser posts)."""
    action = html.unescape(re.search(r'action="([^"]+)"', page).group(1))
    fields = {m.group(1): html.unescape(m.group(2)) for m in re.finditer(r'name="([^"]+)" value="([^"]*)"', page)}
    return action, fields


__all__ = ["LocalPlatform", "form_fields", "urlencode", "CLIENT_ID", "DEPLOYMENT", "CONTEXT", "LEARNER", "INSTRUCTOR",
           "TA"]
