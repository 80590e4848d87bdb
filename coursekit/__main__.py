"""``python -m coursekit <command> [args]``: the course's thin command-line tools (one module each in commands/)."""
import importlib
import sys

COMMANDS = {
    "grade": ("coursekit.commands.grade", "pre-flight, then autograde with N parallel workers (or --queue, --watch)"),
    "worker": ("coursekit.commands.worker", "take grading jobs from the queue (any host) until stopped"),
    "status": ("coursekit.commands.status", "the grading queue: done/running/queued/failed per student, ETA (--json)"),
    "cancel": ("coursekit.commands.cancel", "take queued grading jobs back out of the queue"),
    "preflight": ("coursekit.commands.preflight", "check/repair submitted/ into preflight/submitted/ before autograde"),
    "cohort": ("coursekit.commands.cohort", "write (or list, or remove) each assignment's demo cohort in submitted/"),
    "report": ("coursekit.commands.report", "regenerate the grading report's tables from real autograde runs"),
    "sandbox": ("coursekit.commands.sandbox", "show what the grading sandbox finds here; --delegate USER (root)"),
    "publish": ("coursekit.commands.publish", "build the public site and student tree into _build/publish (leak-checked)"),
    "leaks": ("coursekit.commands.leaks", "check published paths for solution/hidden-test lines and student data"),
    "preview": ("coursekit.commands.preview", "serve the built site on http://127.0.0.1:8000/ with gzip, as a static host does"),
    "library": ("coursekit.commands.library", "regenerate book/course_lib.py from the chapters' `# @save` cells"),
    "book": ("coursekit.commands.book", "print the book's execution time limit or its chapters (for the Makefile)"),
    "insights": ("coursekit.commands.insights", "what the class got wrong: item analysis of an assignment (HTML, CSV, JSON)"),
    "lti": ("coursekit.commands.lti", "grades back to the learning platform (LTI AGS): post an assignment, status"),
    "hub": ("coursekit.commands.hub", "as root: the course hosted on JupyterHub with real accounts (up, down, status)"),
}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print("usage: python -m coursekit <command> [args]\n")
        for name, (_, help_) in COMMANDS.items():
            print(f"  {name:<12} {help_}")
        return 2
    from . import CourseKitError

    module = importlib.import_module(COMMANDS[sys.argv[1]][0])
    try:
        return module.main(sys.argv[2:])
    except CourseKitError as error:
        print(f"coursekit {sys.argv[1]}: {error}", file=sys.stderr)
        return 1
    except Exception as error:
        # a setting of nbgrader_config.py that traitlets refused (a backend's name, say); `hub install` runs with the
        # system's Python, before traitlets is installed, so it is looked up only if a command imported it
        traitlets = sys.modules.get("traitlets")
        if traitlets is None or not isinstance(error, traitlets.TraitError):
            raise
        print(f"coursekit {sys.argv[1]}: a setting in nbgrader_config.py is wrong: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
