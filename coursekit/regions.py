"""Solution and hidden-test regions of nbgrader source notebooks, found as nbgrader finds them.

nbgrader marks a region with configurable delimiters (``ClearSolutions.begin_solution_delimeter`` … and
``ClearHiddenTests.begin_test_delimeter`` …) and matches them as substrings of a line, so ``### BEGIN SOLUTION``,
``# BEGIN SOLUTION`` and ``BEGIN SOLUTION`` all open a region. Everything here reads the delimiters from the
course's configuration, so the leak guard, the feedback filter and the graders' model answers agree with nbgrader.
"""
from __future__ import annotations

MIN_CHARS = 16  # shorter lines ("return out", "else:") are too generic to count as evidence of a secret


def delimiters(config=None) -> dict[str, tuple[str, str]]:
    """{"solution": (begin, end), "hidden": (begin, end)} as nbgrader is configured."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    solutions, tests = ClearSolutions(config=config), ClearHiddenTests(config=config)
    return {"solution": (solutions.begin_solution_delimeter, solutions.end_solution_delimeter),
            "hidden": (tests.begin_test_delimeter, tests.end_test_delimeter)}


def nbgrader_meta(cell) -> dict:
    """A cell's nbgrader metadata ({} for an ordinary cell); for its flags use ``nbgrader.utils.is_grade`` etc."""
    return (cell.get("metadata") or {}).get("nbgrader") or {}


def source_of(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def region_lines(source: str, begin: str, end: str) -> list[int]:
    """0-based numbers of the lines inside ``begin`` … ``end`` regions of ``source`` (the delimiter lines too)."""
    inside, found = False, []
    for number, line in enumerate(source.split("\n")):
        if begin in line:
            inside = True
        if inside:
            found.append(number)
        if end in line:
            inside = False
    return found


def normalise(line: str) -> str:
    return " ".join(line.split())


def secret_lines(cells, marks: dict[str, tuple[str, str]], public: str = "") -> set[str]:
    """The non-trivial lines (normalised, >= MIN_CHARS) inside solution and hidden-test regions of ``cells``.

    Lines found in ``public`` (the normalised text the release shows anyway: supplied code, instructions quoting a
    call) are not secrets.
    """
    found: set[str] = set()
    for cell in cells:
        lines = source_of(cell).split("\n")
        for begin, end in marks.values():
            for number in region_lines(source_of(cell), begin, end):
                norm = normalise(lines[number])
                if len(norm) >= MIN_CHARS and begin not in norm and end not in norm and norm not in public:
                    found.add(norm)
    return found
