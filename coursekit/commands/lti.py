"""``python -m coursekit lti post|status``: grades back to the learning platform (LTI Advantage AGS).

``post ASSIGNMENT`` sends every student's current score of the assignment to the platform's line item (made if the
platform has none for it; ``PendingManual`` while a written answer waits for the instructor), and the scores kept in
the outbox for it; ``--dry-run`` shows what it would send and sends nothing; ``--student ID`` (repeatable) only those.
``status`` lists the scores the platform has not taken yet, with why. The course's ``c.LTIGrades.folder`` says where
the platform's registration and the tool's key are (``hub up --lti`` sets it; coursekit/hosting/ags.py).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    from .. import CourseKitError
    from ..hosting import ags

    parser = argparse.ArgumentParser(prog="python -m coursekit lti", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    sub = parser.add_subparsers(dest="command", required=True)
    post = sub.add_parser("post", help="send an assignment's scores to the platform (again)")
    post.add_argument("assignment")
    post.add_argument("--dry-run", action="store_true", help="show what would be sent; send nothing")
    post.add_argument("--student", action="append", default=None, help="only this student (repeatable)")
    sub.add_parser("status", help="the scores the platform has not taken yet")
    args = parser.parse_args(argv)
    course = load_course(args)
    folder = ags.LTIGrades(config=course.config).folder
    if not folder:
        raise CourseKitError("this course passes no grades back: c.LTIGrades.folder is not set in nbgrader_config.py "
                             "(python -m coursekit hub up --lti FILE sets it in the hosted course)")
    folder = Path(folder)
    if args.command == "status":
        waiting = ags.pending(folder)
        for key, item in sorted(waiting.items()):
            print(f"{key}: {item['given']:g}/{item['maximum']:g} ({item['progress']}) waits: {item['reason']}")
        print(f"{len(waiting)} score(s) wait for the platform" if waiting else "the platform has every score")
        return 0
    hw = course.assignment(args.assignment)
    with course.gradebook() as gb:
        scores = ags.gradebook_scores(gb, hw.name, args.student, final=False)
    done = ags.post_scores(folder, hw.name, scores, dry_run=args.dry_run)
    for student, what in sorted(done.items()):
        print(f"{student}: {what}")
    kept = [s for s, what in done.items() if what.startswith("kept")]
    print(f"{hw.name}: {len(done) - len(kept)} of {len(done)} score(s) "
          + ("shown (dry run: nothing sent)" if args.dry_run else "posted")
          + (f"; {len(kept)} kept for later (python -m coursekit lti status)" if kept else ""))
    return 1 if kept else 0
