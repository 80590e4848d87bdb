"""JupyterHub configuration of the hosted course (``python -m coursekit hub up`` copies it next to settings.json).

Every value that changes between machines (ports, paths, account names, the roster) comes from ``settings.json``,
written by ``coursekit/hosting/``; secrets (the admin service's token, the hub's cookie secret) stay in the state folder,
readable by root only. What each account can do is documented in book/instructors.md, "Hosting the course".
"""
import json
import os
import pwd
import signal
from pathlib import Path

c = get_config()  # noqa: F821 -- provided by traitlets when it loads this file

# JupyterHub starts its services before it sets its own SIGINT handler, so they inherit this process's disposition. A
# hub started from a background job (`make hub &`, a CI script) inherits an ignored SIGINT; the formgrader service, a
# Jupyter server, sets no SIGINT handler without a terminal, so it would ignore the SIGINT with which JupyterHub stops it
# and wait for the SIGTERM that follows 10 s later (hub down took 36 s in CI).
signal.signal(signal.SIGINT, signal.SIG_DFL)

ETC = Path(os.environ.get("COURSEKIT_HUB_ETC", Path(__file__).resolve().parent))
S = json.loads((ETC / "settings.json").read_text())
STATE = Path(S["state"])
VENV = Path(S["venv"])
COURSE = S["course_id"]
PATH = f"{VENV / 'bin'}:/usr/local/bin:/usr/bin:/bin"

# --- Where it listens: 127.0.0.1 unless `up --ip` says otherwise; internal ports picked free by the setup -----------
c.JupyterHub.bind_url = S["url"]
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{S['hub_port']}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{S['proxy_api_port']}"
c.ConfigurableHTTPProxy.command = [str(Path(S["node_modules"]) / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every server it started

# --- Who signs in: real Unix accounts through PAM (on a real host: LTI 1.3 or OAuth, see the instructors page) -----
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False  # no login session per server (no systemd-logind here)
c.Authenticator.allowed_users = {S["instructor"], *S["students"]}
c.Authenticator.admin_users = set()  # nobody opens another user's server; the instructor is not a hub admin

# --- Each user's server: their own Unix account, the course environment, the nbgrader extensions of their role -----
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(VENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {"PATH": PATH, "LANG": "C.UTF-8"}
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.JupyterHub.concurrent_spawn_limit = 40


# --- Sign in from the learning platform (LTI 1.3), when `hub up --lti FILE` registered one ------------------------------
# coursekit/hosting/lti_hub.py: jupyterhub-ltiauthenticator's LTI13Authenticator checks each launch's id_token, coursekit
# the deployment, course, role and assignment; a learner gets the roster's account (matched by e-mail) or one made on
# the first launch, an instructor or TA the instructor's. The password form above still works for the course's accounts.
if S.get("lti"):
    c.JupyterHub.authenticator_class = "coursekit.hosting.lti_hub.CourseAuthenticator"
    c.CourseAuthenticator.platform = S["lti"]["platform"]
    c.CourseAuthenticator.lti_folder = S["lti"]["folder"]
    c.CourseAuthenticator.course = COURSE
    c.CourseAuthenticator.assignments = S["assignments"]
    c.CourseAuthenticator.roster = S.get("roster", [])
    c.CourseAuthenticator.password_users = [S["instructor"], *S["students"]]
    c.CourseAuthenticator.instructor = S["instructor"]
    c.CourseAuthenticator.venv = str(VENV)
    c.CourseAuthenticator.course_dir = S["course_dir"]
    c.CourseAuthenticator.state_dir = str(STATE)
    c.CourseAuthenticator.uri_scheme = "https" if S["url"].startswith("https") else "http"


def role_of(name: str) -> str:
    return "instructor" if name == S["instructor"] else "student"


def pre_spawn_hook(spawner):
    # JUPYTER_CONFIG_PATH: the role's folder (which nbgrader server extensions and JupyterLab plugins run), read
    # before the environment's own configuration (hub/nbgrader_config.py: the exchange, the course id).
    spawner.environment["JUPYTER_CONFIG_PATH"] = str(ETC / "roles" / role_of(spawner.user.name))
    # The account's own port, outside the ephemeral range: two servers spawned at once never draw the same one, and
    # nothing else on the machine does (coursekit/hosting/processes.py, server_port).
    if S.get("server_ports"):
        from coursekit.hosting.processes import server_port

        spawner.port = server_port(pwd.getpwnam(spawner.user.name).pw_uid, tuple(S["server_ports"]))


c.Spawner.pre_spawn_hook = pre_spawn_hook

# --- Services: the course's grading server (the formgrader) as the grader; an API client for the setup and tests -----
c.JupyterHub.services = [
    {
        "name": COURSE,  # nbgrader's course list finds the formgrader at /services/<course id>
        "url": f"http://127.0.0.1:{S['service_port']}",
        "command": [str(VENV / "bin" / "jupyterhub-singleuser")],
        "user": S["grader"],
        "cwd": S["course_dir"],
        "environment": {
            "PATH": PATH, "LANG": "C.UTF-8", "HOME": f"/home/{S['grader']}",
            "JUPYTERHUB_DEFAULT_URL": "/formgrader",
            "JUPYTER_CONFIG_PATH": str(ETC / "roles" / "grader"),
        },
        "oauth_no_confirm": True,
        "display": True,
    },
    {
        "name": S["admin_service"],
        "api_token": (STATE / "admin-token").read_text().strip(),
    },
]

# --- Grading on submit: the course's PostgreSQL, the watcher on the exchange, a grading worker -----------------------
# Managed services without a URL: the hub starts them as the grader, stops them with itself, and starts one again if
# it exits (coursekit/hosting/database.py, coursekit/queue/). A student's Submit is collected, pre-flighted, graded in
# the sandbox and checker, and its feedback released as c.FeedbackOnSubmit says (the course's nbgrader_config.py,
# like c.GradingQueue: how many submissions the worker grades at once, attempts per student, intervals). Until the
# database answers, the watcher and the worker exit with the reason and the hub starts them again.
GRADER_ENV = {"PATH": PATH, "LANG": "C.UTF-8", "HOME": f"/home/{S['grader']}", "PYTHONUNBUFFERED": "1"}
if S.get("database"):
    c.JupyterHub.services += [
        {"name": "coursekit-watch", "user": S["grader"], "cwd": S["course_dir"], "environment": dict(GRADER_ENV),
         "command": [str(VENV / "bin" / "python"), "-m", "coursekit", "grade", "--watch", "--exchange"]},
        {"name": "coursekit-worker", "user": S["grader"], "cwd": S["course_dir"], "environment": dict(GRADER_ENV),
         # as many submissions at once as the machine has cores (a burst of submissions is graded in parallel)
         "command": [str(VENV / "bin" / "python"), "-m", "coursekit", "worker", "--name", "hub",
                     "--slots", str(S.get("grading_slots", 1))]},
        # last: JupyterHub stops its services one after the other, in this order, and the database waits for the two
        # above anyway (coursekit/hosting/database.py, serve)
        {"name": "coursekit-db", "user": S["grader"], "cwd": S["course_dir"], "environment": dict(GRADER_ENV),
         "command": [str(VENV / "bin" / "python"), "-m", "coursekit", "hub", "database"]},
    ]

# --- Roles: the instructor reaches the grading service; students reach only their own server ------------------------
c.JupyterHub.load_groups = {f"formgrade-{COURSE}": {"users": [S["instructor"]]}}
c.JupyterHub.load_roles = [
    {
        "name": f"formgrade-{COURSE}",
        "groups": [f"formgrade-{COURSE}"],
        "scopes": [f"access:services!service={COURSE}", "list:services", f"read:services!service={COURSE}"],
    },
    # A server's own token may do what its owner may (nbgrader's course list asks the hub for the grading service).
    {"name": "server", "scopes": ["inherit"]},
    {
        "name": S["admin_service"],
        "services": [S["admin_service"]],
        "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users", "list:services",
                   "read:services", f"access:services!service={COURSE}", "read:hub"],
    },
]
