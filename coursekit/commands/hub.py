"""``python -m coursekit hub install|up|down|status``: the hosted course on one Linux machine, run as root
(``coursekit.hosting``: what each step does; book/instructors.md, "Hosting the course")."""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from .. import CourseKitError
from ..hosting import GRADER, HUB, INSTRUCTOR, Paths, accounts, environment, lifecycle
from . import course_arguments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit hub", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="build the hub's environment in /opt/coursekit-hub (cached)")
    start = sub.add_parser("up", help="create the accounts, the course and the exchange; start the hub")
    start.add_argument("--roster", type=Path, default=HUB / "roster.csv",
                       help="students CSV (id,first_name,last_name,email); default: the demo roster hub/roster.csv")
    start.add_argument("--load-students", type=int, default=0, metavar="N",
                       help="also create N load-test students ck-load01.. (bench/bench_hub.py)")
    start.add_argument("--ip", default="127.0.0.1", help="address the hub listens on (default 127.0.0.1)")
    start.add_argument("--port", type=int, default=8000, help="its port (0: any free port)")
    start.add_argument("--lti", type=Path, default=None, metavar="FILE",
                       help="sign in from the learning platform (LTI 1.3) and send grades back: the platform's "
                            "registration (JSON: hub/lti.example.json)")
    start.add_argument("--service", action="store_true",
                       help="run the hub as the systemd service coursekit-hub (a real host: it survives reboots)")
    stop = sub.add_parser("down", help="stop the hub; remove the accounts, folders and cgroup delegation it made")
    stop.add_argument("--purge", action="store_true", help="remove the installed environment too")
    sub.add_parser("status", help="is the hub running, where")
    sub.add_parser("database", help="(the hub's own service, as the grader) run the course's PostgreSQL; when the hub "
                                    "stops, stop it after the grading worker and the watcher")
    args = parser.parse_args(argv)
    paths = Paths()
    if args.command == "install":
        if os.geteuid() != 0:
            raise CourseKitError("the environment goes to /opt/coursekit-hub: run it as root")
        environment.install(paths)
        return 0
    if args.command == "up":
        started = time.monotonic()
        roster = accounts.read_roster(args.roster) + accounts.load_students(args.load_students)
        platform = None
        if args.lti:
            from ..hosting.lti import Platform

            platform = Platform.load(args.lti)  # a bad file stops here, before anything is made
        state = lifecycle.up(paths, roster, args.ip, args.port, service=args.service, root=args.root.resolve(),
                             lti=platform)
        print(f"\nJupyterHub is up on {state.url} ({time.monotonic() - started:.0f} s)\n"
              f"  instructor {INSTRUCTOR}; students {', '.join(state.students[:6])}"
              f"{' …' if len(state.students) > 6 else ''}\n"
              f"  passwords: {paths.state / 'passwords.json'} (readable by root only)\n"
              f"  the course: {paths.course} (owned by {GRADER}); the exchange: {paths.exchange}\n"
              f"  stop and remove everything with: sudo make hub-down")
        if platform:
            print(f"  LTI 1.3 tool (register it with the platform): login initiation {state.url}/hub/lti13/oauth_login"
                  f", redirect {state.url}/hub/lti13/oauth_callback, key set {state.url}/hub/lti13/jwks")
        return 0
    if args.command == "database":
        from ..hosting import database

        return database.serve(paths)
    if args.command == "down":
        lifecycle.down(paths, args.purge)
        return 0
    return lifecycle.status(paths)
