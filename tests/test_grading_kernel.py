"""The grading kernel, as `nbgrader autograde` starts it with the course's nbgrader_config.py: the sandbox's limits,
namespaces and in-kernel guard are live (a canary: a wrapper that silently stops applying them fails here), grading
refuses to start without a sandbox, and the kernel is gone, with every process it started, when grading moves on.

Each test runs small notebooks through ``GradingExecute`` with the course's configuration: exactly the preprocessor,
kernelspec and provisioner ``nbgrader autograde`` uses.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from conftest import ROOT
from coursekit.grading import GradingExecute
from coursekit.sandbox import GradingSandbox, SandboxUnavailable


@pytest.fixture(scope="module")
def config():
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


def grade(cells: list[str], config, cwd, **env) -> list[list[dict]]:
    """Run ``cells`` as the autograder would (in ``cwd``, the working copy); return each cell's outputs."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        GradingExecute(config=config).preprocess(nb, {"metadata": {"path": str(cwd)}})
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return [cell.outputs for cell in nb.cells]


def text(outputs: list[dict]) -> str:
    return "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")


def errors(outputs: list[dict]) -> list[str]:
    return [o["ename"] for o in outputs if o["output_type"] == "error"]


def test_the_sandbox_is_live_in_a_real_grading_kernel(config, tmp_path):
    """Caps, namespaces, file system, environment and guard, as seen from inside the kernel autograde starts."""
    work = tmp_path / "course" / "autograded" / "student" / "hw"
    work.mkdir(parents=True)
    (tmp_path / "course" / "secret.txt").write_text("instructor-only")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    limits = GradingSandbox(config=config)
    probe = f"""
import json, os, resource, socket
def limit(name):
    return resource.getrlimit(getattr(resource, name))[0]
def reachable():
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        return True
    except OSError:
        return False
def threads_until_refused():
    import threading
    threading.stack_size(256 * 1024)
    stop, started = threading.Event(), 0
    try:
        while started < 4096:
            threading.Thread(target=stop.wait, daemon=True).start()
            started += 1
    except RuntimeError:
        pass
    stop.set()
    return started
def writable(path):
    try:
        open(path, "w").close()
        return True
    except OSError:
        return False
print(json.dumps({{
    "as": limit("RLIMIT_AS"), "cpu": limit("RLIMIT_CPU"), "fsize": limit("RLIMIT_FSIZE"),
    "threads": threads_until_refused(),
    "ns": {{n: os.readlink(f"/proc/self/ns/{{n}}") for n in ("user", "mnt", "pid", "net", "ipc")}},
    "pid": os.getpid(), "uid": os.getuid(), "env": sorted(os.environ), "home": os.listdir(os.environ["HOME"]),
    "course_visible": os.path.exists({str(tmp_path / "course" / "secret.txt")!r}),
    "repository_visible": os.path.exists({str(ROOT / "nbgrader_config.py")!r}),
    "user_home_visible": os.path.exists({os.path.expanduser("~")!r} + "/.bashrc"),
    "tcp_to_host": reachable(), "interfaces": sorted(i for _, i in socket.if_nameindex()),
    "write_copy": writable("mine.txt"), "write_tmp": writable("/tmp/x"),
    "write_parent": writable("../../elsewhere.txt"), "write_usr": writable("/usr/x"),
    "write_python": writable({sys.prefix!r} + "/x"), "write_skeleton": writable({str(ROOT / "x")!r}),
}}))
"""
    # The helpers assert_close calls live in the module that defines it: rebinding one is caught as well.
    patch_helper = ("import sys, torch\nhome = sys.modules[torch.testing.assert_close.__module__]\n"
                    "name = next(n for n, v in vars(home).items() if callable(v) and not n.startswith('__') "
                    "and n != 'assert_close')\nsetattr(home, name, lambda *a, **k: None)")
    outputs = grade([probe, "import torch\ntorch.testing.assert_close = lambda *a, **k: None", patch_helper], config,
                    work, INSTRUCTOR_TOKEN="do-not-leak", OMP_NUM_THREADS="1")
    listener.close()
    seen = json.loads(text(outputs[0]))
    assert seen["as"] == limits.memory_limit_mb << 20
    assert seen["cpu"] == limits.cpu_limit_s
    assert seen["fsize"] == limits.max_file_mb << 20
    # processes and threads: RLIMIT_NPROC, or as root (which Linux exempts from it) a pids cgroup
    assert limits.max_processes // 2 < seen["threads"] < limits.max_processes, seen["threads"]
    mine = {n: os.readlink(f"/proc/self/ns/{n}") for n in seen["ns"]}
    assert all(seen["ns"][n] != mine[n] for n in mine), (seen["ns"], mine)
    assert seen["pid"] < 10 and seen["uid"] == 1000  # a fresh PID namespace; not the instructor's uid
    assert "INSTRUCTOR_TOKEN" not in seen["env"] and "OMP_NUM_THREADS" in seen["env"]  # allow-list, both ways
    assert set(seen["home"]) <= {".ipython"}, seen["home"]  # an empty private folder, but for what IPython makes
    assert not seen["course_visible"] and not seen["repository_visible"] and not seen["user_home_visible"]
    assert not seen["tcp_to_host"] and seen["interfaces"] == ["lo"]
    assert seen["write_copy"] and seen["write_tmp"], seen
    assert not seen["write_usr"] and not seen["write_python"], seen
    # A repository under /tmp (a CI clone there) lies inside the sandbox's private /tmp: a write to its path lands in
    # that tmpfs; anywhere else the path is read-only. Either way the real tree never sees it (asserted below).
    assert not seen["write_skeleton"] or ROOT.resolve().is_relative_to("/tmp"), seen
    # (the working copy of this test lies in /tmp, which the sandbox replaces with its own: the write stays there)
    assert not (work.parent.parent / "elsewhere.txt").exists() and not (ROOT / "x").exists()
    assert errors(outputs[1]) == ["GradingGuardError"], outputs[1]  # the in-kernel guard runs too
    assert errors(outputs[2]) == ["GradingGuardError"], outputs[2]


def test_every_process_dies_with_the_kernel(config, tmp_path):
    # `sleep` for a number of seconds no other process on this machine uses (other tests, other users' runs), so the
    # search below finds only what this kernel started.
    marker = f"300.{secrets.randbelow(10**9):09d}"
    outputs = grade([
        "import os, subprocess\n"
        f"child = subprocess.Popen(['sleep', '{marker}'], start_new_session=True)\n"  # returns once sleep runs
        "ready, done = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execvp('sleep', ['sleep', '{marker}'])\n"
        "    os._exit(0)\n"
        "os.close(done)\n"
        "os.read(ready, 1)  # end of file once the grandchild runs sleep (exec closes the pipe) and its parent is gone\n"
        "mine = [p for p in os.listdir('/proc') if p.isdigit() and "
        f"'{marker}'.encode() in open(f'/proc/{{p}}/cmdline', 'rb').read()]\n"
        "print(len(mine))",
        "import threading, time\nthreading.Thread(target=time.sleep, args=(300,)).start()\nprint('last cell')",
    ], config, tmp_path)
    assert text(outputs[0]) == "2\n", outputs[0]  # the control: the child and the grandchild were running
    assert text(outputs[1]) == "last cell\n"
    survivors = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout.split()
    assert survivors == [], survivors


def test_grading_without_the_sandbox_is_refused_naming_what_is_missing(config):
    sandbox = GradingSandbox(config=config, bwrap="/nonexistent/bwrap")
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap .*not installed.*apt-get install bubblewrap"):
        sandbox.check()


def test_the_pre_check_builds_the_whole_sandbox(config, tmp_path):
    """A container may allow namespaces but refuse one of the sandbox's own steps (Podman's default seccomp profile
    refuses sethostname): the check before grading runs the kernel's own sandbox, so grading stops there, with the
    message, instead of every kernel dying later."""
    real = shutil.which("bwrap")
    fussy = tmp_path / "bwrap"
    fussy.write_text(f'#!/bin/sh\ncase " $* " in *" --hostname "*) echo "bwrap: Can\'t set hostname to grading: '
                     f'Operation not permitted" >&2; exit 1;; esac\nexec {real} "$@"\n')
    fussy.chmod(0o755)
    assert GradingSandbox(config=config).problems() == []
    with pytest.raises(SandboxUnavailable, match=r"(?s)Can't set hostname.*Grading from macOS or Windows"):
        GradingSandbox(config=config, bwrap=str(fussy)).check()


def test_the_explicit_opt_out_warns_on_every_run(config, caplog):
    import logging

    log = logging.getLogger("opt-out")
    sandbox = GradingSandbox(config=config, enabled=False, bwrap="/nonexistent/bwrap", log=log)
    with caplog.at_level(logging.WARNING, logger="opt-out"):
        sandbox.check()
        sandbox.check()
    warned = [r.getMessage() for r in caplog.records if "GRADING WITHOUT A SANDBOX" in r.getMessage()]
    assert len(warned) == 2 and "your privileges" in warned[0]


def test_a_dead_kernel_costs_only_the_cells_after_it(config, tmp_path):
    outputs = grade(["print('before')", "import os\nos._exit(1)", "print('after')"], config, tmp_path)
    assert text(outputs[0]) == "before\n"
    assert errors(outputs[1]) == ["KernelDied"] and errors(outputs[2]) == ["KernelDied"]


def test_an_endless_cell_is_interrupted_and_the_next_cell_runs(config, tmp_path):
    config = config.copy()
    config.Execute.timeout = 3
    outputs = grade(["while True:\n    pass", "print('next')"], config, tmp_path)
    assert errors(outputs[0]) == ["CellTimeoutError"] or "Interrupt" in str(outputs[0]), outputs[0]
    assert text(outputs[1]) == "next\n"


def test_the_salt_is_secret_per_submission_and_stable(tmp_path):
    sandbox = GradingSandbox(secret_file=str(tmp_path / "secret"))
    a, b = sandbox.salt(str(tmp_path / "alice")), sandbox.salt(str(tmp_path / "bob"))
    assert a and b and a != b and sandbox.salt(str(tmp_path / "alice")) == a
    assert oct((tmp_path / "secret").stat().st_mode)[-3:] == "600"
    assert GradingSandbox(secret_file=str(tmp_path / "other")).salt(str(tmp_path / "alice")) != a


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
