"""What ``up`` created, recorded in ``/var/lib/coursekit-hub/state.json`` (root only), so ``down`` removes exactly
that."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from . import Paths


@dataclass
class State:
    users: list[str] = field(default_factory=list)     # accounts up created (down removes only these)
    groups: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    students: list[str] = field(default_factory=list)  # the roster (created or adopted)
    cgroups: dict = field(default_factory=dict)        # cgroup root -> [uid, gid] before the delegation, or None
    pid: int | None = None
    url: str = ""
    settings: dict = field(default_factory=dict)

    @classmethod
    def load(cls, paths: Paths) -> "State":
        if paths.state_file.exists():
            return cls(**json.loads(paths.state_file.read_text()))
        return cls()

    def save(self, paths: Paths) -> None:
        paths.state.mkdir(parents=True, exist_ok=True)
        os.chmod(paths.state, 0o700)
        tmp = paths.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.__dict__, indent=1))
        tmp.replace(paths.state_file)
