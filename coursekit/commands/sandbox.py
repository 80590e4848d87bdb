"""``python -m coursekit sandbox [--delegate USER]``: what the grading sandbox finds on this machine.

Without options it builds the sandbox once (exactly as grading does) and prints what it uses or what is missing.
``--delegate USER`` (as root) creates the sandbox's cgroup folders and gives them to USER, so that user can grade
without root (cgroup v1; on cgroup v2 use a delegated systemd scope, see the instructors page).
"""
from __future__ import annotations

import argparse
import os

from .. import CourseKitError
from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    from ..sandbox import GradingSandbox
    from ..sandbox.cgroups import CgroupError, Cgroups, delegate

    parser = argparse.ArgumentParser(prog="python -m coursekit sandbox", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("--delegate", metavar="USER", help="as root: give USER the sandbox's cgroup folders")
    args = parser.parse_args(argv)
    if args.delegate:
        if os.geteuid() != 0:
            raise CourseKitError("--delegate creates cgroup folders and must run as root (sudo)")
        try:
            for path in delegate(args.delegate):
                print(f"delegated {path} to {args.delegate}")
        except (CgroupError, KeyError) as error:
            raise CourseKitError(str(error)) from None
        return 0
    policy = GradingSandbox(config=load_course(args).config)
    backend = policy.implementation()
    problems = backend.problems()
    if problems:
        print("the grading sandbox cannot be built here:\n  - " + "\n  - ".join(problems))
        return 1
    roots = Cgroups.find().roots
    print(f"grading sandbox: {backend.name}, cgroup v{Cgroups(roots).version} "
          f"({', '.join(str(p) for p in roots.values())})")
    print(f"per submission: {policy.memory_limit_mb} MiB memory, {policy.max_processes} processes, "
          f"{policy.wall_limit_s} s in all, {policy.work_size_mb} MiB working copy")
    return 0
