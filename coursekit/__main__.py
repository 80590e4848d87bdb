"""``python -m coursekit <command> [args]``: the course's thin command-line tools."""
import importlib
import sys

COMMANDS = {
    "export": ("coursekit.export", "regenerate book/course_lib.py from the chapters' `# @save` cells"),
    "cohort": ("coursekit.cohort", "write the homework's demo cohort into submitted/ (for a trial autograde)"),
    "leaks": ("coursekit.leaks", "check published paths for solution/hidden-test lines and student data"),
    "publish": ("coursekit.publish", "build the public site and student tree into _build/publish (leak-checked)"),
    "preview": ("coursekit.preview", "serve the built site on http://127.0.0.1:8000/ with gzip, as a static host does"),
    "grade": ("coursekit.grade", "pre-flight, then autograde a cohort with N parallel workers"),
    "preflight": ("coursekit.preflight", "check/repair submitted/ into preflight/submitted/ before autograde"),
    "hub": ("coursekit.hub", "as root: the course hosted on JupyterHub with real accounts (up, down, status)"),
    "sandbox": ("coursekit.sandbox.__main__", "show what the grading sandbox finds here; --delegate USER (root)"),
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


if __name__ == "__main__":
    sys.exit(main())
