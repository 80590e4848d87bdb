"""``python -m coursekit <command> [args]``: the course's thin command-line tools."""
import importlib
import sys

COMMANDS = {
    "export": ("coursekit.export", "regenerate book/course_lib.py from the chapters' `# @save` cells"),
    "cohort": ("coursekit.cohort", "write the homework's demo cohort into submitted/ (for a trial autograde)"),
    "leaks": ("coursekit.leaks", "check published paths for solution/hidden-test lines and student data"),
    "publish": ("coursekit.publish", "build the public site and student tree into _build/publish (leak-checked)"),
    "execute": ("coursekit.execute", "execute the chapters in parallel into the build's jupyter-cache"),
    "grade": ("coursekit.grade", "autograde a cohort with N parallel workers (sqlite or PostgreSQL gradebook)"),
    "preflight": ("coursekit.preflight", "check/repair submitted/ into preflight/ before `nbgrader autograde`"),
    "report": ("coursekit.report", "regenerate the book's autograding tables (planted mistakes, hostile cohort)"),
}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print("usage: python -m coursekit <command> [args]\n")
        for name, (_, help_) in COMMANDS.items():
            print(f"  {name:<12} {help_}")
        return 2
    module = importlib.import_module(COMMANDS[sys.argv[1]][0])
    return module.main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
