"""The processes: running commands (as an account), the hub itself (started in the foreground for the demo and the
tests, or as a systemd service on a real host), and what an account left running."""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from .. import CourseKitError
from . import Paths
from .state import State


def run(cmd: list[str], cwd: Path | None = None, user: str | None = None, env: dict | None = None,
         input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    full = [str(c) for c in cmd]
    if user:
        home = pwd.getpwnam(user).pw_dir
        full = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", user, "--", "env", f"HOME={home}", f"USER={user}", f"LOGNAME={user}", *full]
    proc = subprocess.run(full, cwd=cwd, env=env, input=input, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise CourseKitError(f"{' '.join(full)} exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Each user's server listens on a port of its own, fixed by its Unix uid, in a block just below the kernel's ephemeral
# range. JupyterHub's own choice (a random free port, released before the server binds it) lets two servers spawned
# at once draw the same port; the second cannot bind it, and JupyterHub, which takes any answer but a 5xx as "up"
# (jupyterhub.utils.wait_for_http_server), routes its user to the first user's server (seen in bench_hub: a student's
# request answered 404 by another student's server). Ports below the ephemeral range are never handed out by bind(0)
# or connect(), so no other process of the machine draws them either.
SERVER_PORT_SPAN = 10_000  # how many ports: accounts whose uids differ by less than this get different ports
EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")


def server_ports(span: int = SERVER_PORT_SPAN, ephemeral: Path = EPHEMERAL) -> tuple[int, int]:
    """(first port, span) of the users' servers: the ``span`` ports just below the ephemeral range."""
    try:
        low = int(ephemeral.read_text().split()[0])
    except (OSError, ValueError, IndexError) as error:
        raise CourseKitError(f"{ephemeral}: cannot read the ephemeral port range ({error})") from None
    if low - span < 1024:
        raise CourseKitError(f"{ephemeral}: the ephemeral range starts at {low}, leaving no {span} ports between 1024 "
                             f"and it for the users' servers (raise its first number, e.g. sysctl "
                             f"net.ipv4.ip_local_port_range=\"32768 60999\")")
    return low - span, span


def server_port(uid: int, block: tuple[int, int]) -> int:
    """The port of the server of the account with ``uid``, in ``block`` (``server_ports()``)."""
    first, span = block
    return first + uid % span


def api(url: str, path: str, token: str, timeout: float = 5) -> int:
    request = urllib.request.Request(url.rstrip("/") + path, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/cmdline").exists() and b"jupyterhub" in Path(f"/proc/{pid}/cmdline").read_bytes()


UNIT = Path("/etc/systemd/system/coursekit-hub.service")


def hub_environment(paths: Paths) -> dict[str, str]:
    """The hub process's whole environment (in the foreground and in the systemd unit alike). Root's PATH: an LTI
    launch makes a student's account (useradd, in /usr/sbin); users' servers and services get their own PATH."""
    return {"PATH": f"{paths.venv / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
            "COURSEKIT_HUB_ETC": str(paths.etc), "COURSEKIT_HUB_STATE": str(paths.state)}


def systemd_unit(paths: Paths) -> str:
    """The hub as a systemd service on a real host: started at boot, restarted if it dies, as The Littlest JupyterHub
    runs its hub."""
    environment = "".join(f"Environment={key}={value}\n" for key, value in hub_environment(paths).items())
    return (f"[Unit]\nDescription=The course's JupyterHub (python -m coursekit hub up --service)\n"
            f"After=network-online.target\nWants=network-online.target\n\n"
            f"[Service]\nUser=root\nRestart=always\nRestartSec=2\nWorkingDirectory={paths.state}\n{environment}"
            f"ExecStart={paths.venv / 'bin' / 'jupyterhub'} -f {paths.etc / 'jupyterhub_config.py'}\n"
            f"StandardOutput=append:{paths.state / 'jupyterhub.log'}\nStandardError=inherit\n\n"
            f"[Install]\nWantedBy=multi-user.target\n")


def has_systemd() -> bool:
    return Path("/run/systemd/system").is_dir() and shutil.which("systemctl") is not None


def start_hub(paths: Paths, state: State, settings: dict, log, timeout: float = 120, service: bool = False) -> None:
    """Start JupyterHub and wait until it and the grading service answer: in the foreground of this machine's session
    (the demo, the tests), or as the systemd service ``coursekit-hub`` (``service``: a real host; it survives
    reboots)."""
    hub_log = paths.state / "jupyterhub.log"
    start = hub_log.stat().st_size if hub_log.exists() else 0  # what this start logs comes after
    if service:
        if not has_systemd():
            raise CourseKitError("--service needs systemd as this machine's init system; without it the hub runs "
                                 "in the background of this session (drop --service)")
        UNIT.write_text(systemd_unit(paths))
        run(["systemctl", "daemon-reload"])
        run(["systemctl", "enable", "--now", UNIT.name])
        settings["service"] = UNIT.name
        proc = None
        state.pid = int(run(["systemctl", "show", "--property=MainPID", "--value", UNIT.name]).stdout.strip() or 0)
    else:
        log_file = open(hub_log, "ab")
        proc = subprocess.Popen([str(paths.venv / "bin" / "jupyterhub"), "-f", str(paths.etc / "jupyterhub_config.py")],
                                cwd=paths.state, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=hub_environment(paths))
        state.pid = proc.pid
    state.save(paths)
    token = (paths.state / "admin-token").read_text().strip()
    url = settings["url"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise CourseKitError(f"JupyterHub exited ({proc.returncode}); what it logged ({hub_log}):\n"
                                 + logged_since(hub_log, start))
        try:
            hub = api(url, "/hub/api/", token)
            service_status = api(url, f"/hub/api/services/{settings['course_id']}", token)
            grading = api(url, f"/services/{settings['course_id']}/api/status", token) if service_status == 200 else 0
            if hub == 200 and grading == 200:
                return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    raise CourseKitError(f"the hub did not answer within {timeout:.0f} s; what it logged ({hub_log}):\n"
                         + logged_since(hub_log, start))


SLOW_STOP_S = 10  # a hub that takes longer to stop says what it logged meanwhile


def logged_since(path: Path, offset: int, lines: int = 30, most: int = 8000) -> str:
    """The last ``lines`` lines (at most ``most`` bytes) written to ``path`` after ``offset``, indented, printable."""
    try:
        with open(path, "rb") as f:
            f.seek(max(offset, f.seek(0, os.SEEK_END) - most))
            text = f.read(most).decode("utf-8", "replace")
    except OSError as error:
        return f"    (cannot read {path}: {error})"
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
    return "\n".join("    " + "".join(c if c.isprintable() else "?" for c in line) for line in kept) or "    (nothing)"


def stop_hub(state: State, log, timeout: float = 60, paths: Paths | None = None) -> None:
    if UNIT.exists():  # the systemd service: stopped, disabled and removed
        log(f"stopping and removing the systemd service {UNIT.name}")
        run(["systemctl", "disable", "--now", UNIT.name], check=False)
        UNIT.unlink()
        run(["systemctl", "daemon-reload"], check=False)
    if alive(state.pid):
        log(f"stopping JupyterHub (pid {state.pid}) and the servers it started")
        hub_log = (paths or Paths()).state / "jupyterhub.log"
        offset = hub_log.stat().st_size if hub_log.exists() else 0
        started = time.monotonic()
        os.kill(state.pid, signal.SIGTERM)
        while alive(state.pid) and time.monotonic() < started + timeout:
            time.sleep(0.1)
        if alive(state.pid):
            log(f"JupyterHub did not stop within {timeout:.0f} s: killed")
            os.killpg(state.pid, signal.SIGKILL)
        if time.monotonic() - started > SLOW_STOP_S:  # what it waited for (a service finishing a grading?)
            log(f"JupyterHub took {time.monotonic() - started:.0f} s to stop; the last of what it logged meanwhile:\n"
                + logged_since(hub_log, offset))
    state.pid = None
    # The proxy runs in a session of its own: a hub that was killed (or died) leaves it running; its pid file says which.
    pid_file = (paths or Paths()).state / "proxy.pid"
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return
    if b"configurable-http-proxy" in cmdline:
        log(f"stopping the proxy (pid {pid})")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)


def processes_of(uids: set[int]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found
