"""The grading sandbox as ``nbgrader autograde`` starts it with the course's nbgrader_config.py (coursekit/sandbox/).

Each test runs small notebooks through ``GradingExecute`` with the course's configuration: exactly the preprocessor,
kernelspec, provisioner and cgroups ``nbgrader autograde`` uses. A canary for every limit: a wrapper that silently
stops applying one fails here.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from conftest import ROOT
from coursekit.autograde.execute import GradingExecute
from coursekit.sandbox import GradingSandbox, SandboxUnavailable
from coursekit.sandbox.cgroups import Cgroups


@pytest.fixture(scope="module")
def config():
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


def working_copy(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    work = tmp_path / "course" / "autograded" / "student" / "hw"
    work.mkdir(parents=True)
    for name, content in (files or {}).items():
        (work / name).write_text(content)
    return work


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


def leftovers() -> list[str]:
    """Sandbox cgroups of this process still on the machine."""
    return [str(p) for root in Cgroups.find().roots.values() for p in root.glob(f"kernel-{os.getpid()}-*")]


def test_the_sandbox_is_live_in_a_real_grading_kernel(config, tmp_path):
    """Caps, namespaces, file system and environment, as seen from inside the kernel autograde starts."""
    work = working_copy(tmp_path, {"data.csv": "a,b\n1,2\n", "hw.ipynb": "{\"hidden tests\": 1}"})
    (tmp_path / "course" / "secret.txt").write_text("instructor-only")
    limits = GradingSandbox(config=config)
    probe = f"""
import json, os, resource, socket
def limit(name):
    return resource.getrlimit(getattr(resource, name))[0]
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
def writable(path, size=1):
    try:
        with open(path, "wb") as f:
            for _ in range(size):
                f.write(b"x" * (1 << 20))
        return True
    except OSError:
        return False
print(json.dumps({{
    "as": limit("RLIMIT_AS"), "cpu": limit("RLIMIT_CPU"), "fsize": limit("RLIMIT_FSIZE"),
    "threads": threads_until_refused(),
    "ns": {{n: os.readlink(f"/proc/self/ns/{{n}}") for n in ("user", "mnt", "pid", "net", "ipc", "cgroup")}},
    "pid": os.getpid(), "uid": os.getuid(), "env": sorted(os.environ), "home": os.listdir(os.environ["HOME"]),
    "cwd": os.getcwd(), "copy": sorted(os.listdir(".")),
    "course_visible": os.path.exists({str(tmp_path / "course" / "secret.txt")!r}),
    "repository_visible": os.path.exists({str(ROOT / "nbgrader_config.py")!r}),
    "user_home_visible": os.path.exists({os.path.expanduser("~")!r} + "/.bashrc"),
    "interfaces": sorted(i for _, i in socket.if_nameindex()),
    "write_copy": writable("mine.txt"), "write_tmp": writable("/tmp/x"),
    "fill_copy": writable("big1", 60) and writable("big2", 60) and writable("big3", 60) and writable("big4", 60)
                 and writable("big5", 60),
    "write_usr": writable("/usr/x"), "write_python": writable({sys.prefix!r} + "/x"),
    "write_skeleton": writable({str(ROOT / "x")!r}), "write_sockets": writable("/run/grading/x", 2),
}}))
"""
    outputs = grade([probe], config, work, INSTRUCTOR_TOKEN="do-not-leak", OMP_NUM_THREADS="1")
    seen = json.loads(text(outputs[0]))
    assert seen["as"] == limits.memory_limit_mb << 20
    assert seen["cpu"] == limits.cpu_limit_s
    assert seen["fsize"] == limits.max_file_mb << 20
    assert limits.max_processes // 2 < seen["threads"] < limits.max_processes, seen["threads"]  # the pids cgroup
    mine = {n: os.readlink(f"/proc/self/ns/{n}") for n in seen["ns"]}
    assert all(seen["ns"][n] != mine[n] for n in mine), (seen["ns"], mine)
    assert seen["pid"] < 10 and seen["uid"] == 1000  # a fresh PID namespace; not the instructor's uid
    assert "INSTRUCTOR_TOKEN" not in seen["env"] and "OMP_NUM_THREADS" in seen["env"]  # allow-list, both ways
    assert "GRADING_SALT" not in seen["env"]  # the tests' inputs are drawn in the checker, never here
    assert set(seen["home"]) <= {".ipython"}, seen["home"]
    # its own copy of the submission's files, at the same path, without the notebook (which holds hidden tests)
    assert seen["cwd"] == str(work) and seen["copy"] == ["data.csv"], seen
    assert not seen["course_visible"] and not seen["repository_visible"] and not seen["user_home_visible"]
    assert seen["interfaces"] == ["lo"]
    assert seen["write_copy"] and seen["write_tmp"], seen
    assert not seen["fill_copy"], "the working copy's size is capped (300 MB written into a 256 MiB folder)"
    assert not seen["write_usr"] and not seen["write_python"] and not seen["write_sockets"], seen
    assert not seen["write_skeleton"] or ROOT.resolve().is_relative_to("/tmp"), seen
    # what the kernel wrote stayed in its in-memory copy: nothing reached the real folder
    assert sorted(p.name for p in work.iterdir()) == ["data.csv", "hw.ipynb"]
    assert not (ROOT / "x").exists() and leftovers() == []


def test_memory_is_capped_for_all_processes_together(config, tmp_path, caplog):
    """Five processes of 300 MB each, under a 1 GiB cap per process: the sandbox's cgroup stops them together."""
    config = config.copy()
    config.GradingSandbox.memory_limit_mb = 1024
    hog = ("import subprocess, sys\n"
           "code = 'x = b\"y\" * (300 << 20)\\nimport time\\nprint(\"held\", flush=True)\\ntime.sleep(3)'\n"
           "procs = [subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE) for _ in range(5)]\n"
           "held = sum(p.stdout.readline() == b'held\\n' for p in procs)\n"
           "print('held', held, 'killed', sum(p.wait() == -9 for p in procs))")
    with caplog.at_level("WARNING"):
        outputs = grade([hog], config, working_copy(tmp_path))
    held, killed = map(int, text(outputs[0]).split()[1::2])
    assert held >= 1 and killed >= 2, text(outputs[0])  # each fits under its own cap; 1.5 GB never fit in 1 GiB
    assert any("memory cap" in r.getMessage() for r in caplog.records)


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
    ], config, working_copy(tmp_path))
    assert text(outputs[0]) == "2\n", outputs[0]  # the control: the child and the grandchild were running
    assert text(outputs[1]) == "last cell\n"
    survivors = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout.split()
    assert survivors == [] and leftovers() == [], survivors


def test_a_fork_bomb_is_capped_and_reported(config, tmp_path, caplog):
    bomb = ("import os, time\nforked = 0\ntry:\n    while forked < 1000:\n        if os.fork() == 0:\n"
            "            time.sleep(60)\n            os._exit(0)\n        forked += 1\nexcept OSError:\n    pass\n"
            "print(forked)")
    with caplog.at_level("WARNING"):
        outputs = grade([bomb, "print('still grading')"], config, working_copy(tmp_path))
    assert 0 < int(text(outputs[0])) < GradingSandbox(config=config).max_processes
    # the next cell runs (its kernel may be too crippled by its own bomb to start a thread: that is its problem)
    assert text(outputs[1]) == "still grading\n" or errors(outputs[1]) == ["RuntimeError"], outputs[1]
    assert any("process cap" in r.getMessage() for r in caplog.records)
    assert leftovers() == []


def test_the_submission_has_one_time_budget(config, tmp_path):
    """Cells a student adds cannot multiply the per-cell limit: once the budget is spent, nothing more runs."""
    config = config.copy()
    config.Execute.timeout = 4
    config.GradingSandbox.wall_limit_s = 10  # from the kernel's start
    start = time.monotonic()
    outputs = grade(["import time\ntime.sleep(2.5)\nprint('ran')"] * 10, config, working_copy(tmp_path))
    assert time.monotonic() - start < 10 + 15  # the budget, plus stopping the kernel
    ran = sum(text(o) == "ran\n" for o in outputs)
    assert 1 <= ran <= 4, outputs  # 25 s of cells, each under the per-cell limit, in a 10 s budget
    assert errors(outputs[-1]) == ["TimeBudgetExceeded"]


def test_a_kernel_that_stalls_before_its_first_cell_is_stopped(config, tmp_path, caplog):
    """A file named like the kernel's launcher replaces it (the working folder comes first on sys.path): it never
    answers, and the submission is stopped and graded as not run, within its budget."""
    config = config.copy()
    config.GradingSandbox.wall_limit_s = 8
    work = working_copy(tmp_path, {"ipykernel_launcher.py": "import time\ntime.sleep(600)\n"})
    start = time.monotonic()
    with caplog.at_level("ERROR"):
        outputs = grade(["print('never')", "print('never')"], config, work)
    assert time.monotonic() - start < 8 + 15
    assert all(errors(o) == ["KernelDidNotStart"] for o in outputs), outputs
    assert any("did not start" in r.getMessage() for r in caplog.records)
    assert leftovers() == []


def test_output_is_bounded_while_it_streams(config, tmp_path):
    """1 GB printed, in many small messages and in single huge ones: the grading process never holds it."""
    import psutil

    config = config.copy()
    config.GradingSandbox.output_limit_mb = 4
    config.GradingSandbox.message_limit_mb = 8
    me = psutil.Process()
    before = me.memory_info().rss
    outputs = grade(["import sys\nfor _ in range(1000):\n    sys.stdout.write('x' * (1 << 20))\n    sys.stdout.flush()",
                     "print('y' * (100 << 20))", "print('after')"], config, working_copy(tmp_path))
    grown = me.memory_info().rss - before
    assert grown < 300 << 20, f"the grading process grew by {grown >> 20} MiB"
    assert sum(len(text(o)) for o in outputs) < 6 << 20
    assert "beyond the grader's limit" in text(outputs[0]) + text(outputs[1])


def test_nothing_of_a_killed_grading_run_stays_behind(config, tmp_path):
    """SIGKILL the grading process while its kernel runs: the reaper removes the sandbox's cgroups and folders."""
    work = working_copy(tmp_path)
    script = tmp_path / "grade.py"
    script.write_text(textwrap.dedent(f"""
        import nbformat, sys
        sys.path[:0] = [{str(ROOT / "tests")!r}, {str(ROOT / "tests" / "integration")!r}]
        from test_sandbox import grade
        from traitlets.config.loader import PyFileConfigLoader
        config = PyFileConfigLoader("nbgrader_config.py", path={str(ROOT)!r}).load_config()
        grade(["print('started', flush=True)\\nimport time\\ntime.sleep(600)"], config, {str(work)!r})
    """))
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    roots = list(Cgroups.find().roots.values())
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (any(any(r.glob(f"kernel-{proc.pid}-*")) for r in roots)
                                               and any(tmp.glob(f"grading-{proc.pid}-*"))):
        time.sleep(0.1)
    groups = [p for r in roots for p in r.glob(f"kernel-{proc.pid}-*")]
    folders = list(tmp.glob(f"grading-{proc.pid}-*"))
    assert groups and folders, "the control: the sandbox existed"
    time.sleep(3)  # the kernel is running its cell
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (any(p.exists() for p in groups + folders)):
        time.sleep(0.1)
    assert not any(p.exists() for p in groups + folders), [p for p in groups + folders if p.exists()]


def test_grading_without_the_sandbox_is_refused_naming_what_is_missing(config):
    config = config.copy()
    config.Bubblewrap.bwrap = "/nonexistent/bwrap"
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap .*not installed.*apt-get install bubblewrap"):
        GradingSandbox(config=config).check()


def test_the_pre_check_builds_the_whole_sandbox(config, tmp_path):
    """A container may allow namespaces but refuse one of the sandbox's own steps (Podman's default seccomp profile
    refuses sethostname): the check before grading runs the kernel's own sandbox, so grading stops there, with the
    message, instead of every kernel dying later. The check runs once per process and bwrap."""
    real = shutil.which("bwrap")
    fussy = tmp_path / "bwrap"
    fussy.write_text(f'#!/bin/sh\ncase " $* " in *" --hostname "*) echo "bwrap: Can\'t set hostname to grading: '
                     f'Operation not permitted" >&2; exit 1;; esac\nexec {real} "$@"\n')
    fussy.chmod(0o755)
    assert GradingSandbox(config=config).implementation().problems() == []
    config = config.copy()
    config.Bubblewrap.bwrap = str(fussy)
    with pytest.raises(SandboxUnavailable, match=r"(?s)Can't set hostname.*Grading from macOS or Windows"):
        GradingSandbox(config=config).check()
    fussy.write_text(f'#!/bin/sh\nexec {real} "$@"\n')  # fixed, but the probe is not run again in this process
    with pytest.raises(SandboxUnavailable):
        GradingSandbox(config=config).check()


def test_the_explicit_opt_out_warns_on_every_run(config, caplog):
    import logging

    config = config.copy()
    config.Bubblewrap.bwrap = "/nonexistent/bwrap"
    log = logging.getLogger("opt-out")
    sandbox = GradingSandbox(config=config, enabled=False, log=log)
    with caplog.at_level(logging.WARNING, logger="opt-out"):
        sandbox.check()
        sandbox.check()
    warned = [r.getMessage() for r in caplog.records if "GRADING WITHOUT A SANDBOX" in r.getMessage()]
    assert len(warned) == 2 and "your privileges" in warned[0]


def test_a_dead_kernel_costs_only_the_cells_after_it(config, tmp_path):
    outputs = grade(["print('before')", "import os\nos._exit(1)", "print('after')"], config, working_copy(tmp_path))
    assert text(outputs[0]) == "before\n"
    assert errors(outputs[1]) == ["KernelDied"] and errors(outputs[2]) == ["KernelDied"]


def test_an_endless_cell_is_interrupted_and_the_next_cell_runs(config, tmp_path):
    config = config.copy()
    config.Execute.timeout = 3
    outputs = grade(["while True:\n    pass", "print('next')"], config, working_copy(tmp_path))
    assert errors(outputs[0]) == ["CellTimeoutError"] or "Interrupt" in str(outputs[0]), outputs[0]
    assert text(outputs[1]) == "next\n"


@pytest.mark.parametrize("kind", ["symlink", "fifo", "oversized"])
def test_a_kernel_never_gets_a_link_or_a_special_file(config, tmp_path, kind):
    work = working_copy(tmp_path)
    if kind == "symlink":
        (work / "notes").symlink_to(ROOT / "nbgrader_config.py")
    elif kind == "fifo":
        os.mkfifo(work / "pipe")
    else:
        with open(work / "big.bin", "wb") as f:
            f.truncate((GradingSandbox(config=config).max_file_mb + 1) << 20)
    with pytest.raises(SandboxUnavailable, match="symbolic link|FIFO|over the"):
        grade(["print(1)"], config, work)
    assert leftovers() == [] and not list(Path(os.environ.get("TMPDIR", "/tmp")).glob(f"grading-{os.getpid()}-*"))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
