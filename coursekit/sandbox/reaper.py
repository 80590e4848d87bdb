"""Nothing of a sandbox outlives it, even when the grading process is killed.

The first sandbox a grading process starts also starts one small reaper (``python -m coursekit.sandbox.reaper``, in
its own session so a Ctrl-C or a killed process group does not take it along). The grading process tells it, one
line per event on a pipe, what each sandbox leaves on the machine (its private folder, its cgroups) and when a sandbox
was cleaned up normally. When the pipe closes — the grading process exited, or was killed with SIGKILL — the reaper
kills whatever is still running in the remaining cgroups, removes them and the folders, and exits.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

_lock = threading.Lock()
_reaper: subprocess.Popen | None = None


def _send(event: str, paths: list[str]) -> None:
    global _reaper
    with _lock:
        if _reaper is None or _reaper.poll() is not None:
            _reaper = subprocess.Popen([sys.executable, "-m", "coursekit.sandbox.reaper"], stdin=subprocess.PIPE,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                       cwd="/", env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
        _reaper.stdin.write((json.dumps({event: paths}) + "\n").encode())
        _reaper.stdin.flush()


def watch(folders: list[Path] = (), cgroups: list[Path] = ()) -> None:
    """Remove these if this process dies before calling ``done`` for them."""
    _send("watch", [f"d:{p}" for p in folders] + [f"c:{p}" for p in cgroups])


def done(folders: list[Path] = (), cgroups: list[Path] = ()) -> None:
    """These were cleaned up normally."""
    _send("done", [f"d:{p}" for p in folders] + [f"c:{p}" for p in cgroups])


def main() -> int:  # the reaper process
    from .cgroups import remove

    watched: set[str] = set()
    for line in sys.stdin.buffer:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        watched |= set(event.get("watch", []))
        watched -= set(event.get("done", []))
    remove([Path(p[2:]) for p in watched if p.startswith("c:")])
    for p in watched:
        if p.startswith("d:"):
            shutil.rmtree(p[2:], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
