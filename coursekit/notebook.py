"""Notebooks as nbgrader reads them: a cell's nbgrader metadata and role, and the solution and hidden-test regions.

nbgrader marks a region with configurable delimiters (``ClearSolutions.begin_solution_delimeter`` … and
``ClearHiddenTests.begin_test_delimeter`` …) and matches them as substrings of a line, so ``### BEGIN SOLUTION``,
``# BEGIN SOLUTION`` and ``BEGIN SOLUTION`` all open a region. Every helper here takes a cell's source and the region's
``marks`` (begin, end) as the course is configured (``delimiters``), so the leak guard, feedback, pre-flight, the model
answers and the planted submissions all find regions as nbgrader does. This is the only place that parses them.
"""
from __future__ import annotations

import re
import textwrap

MIN_CHARS = 16  # shorter lines ("return out", "else:") are too generic to count as evidence of a secret
Marks = tuple[str, str]


def delimiters(config=None) -> dict[str, Marks]:
    """{"solution": (begin, end), "hidden": (begin, end)} as nbgrader is configured."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    solutions, tests = ClearSolutions(config=config), ClearHiddenTests(config=config)
    return {"solution": (solutions.begin_solution_delimeter, solutions.end_solution_delimeter),
            "hidden": (tests.begin_test_delimeter, tests.end_test_delimeter)}


# ------------------------------------------------------------------------------------------------------- cells
def nbgrader_meta(cell) -> dict:
    """A cell's nbgrader metadata ({} for an ordinary cell)."""
    return (cell.get("metadata") or {}).get("nbgrader") or {}


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def source_of(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def role(cell_or_meta) -> str:
    """"test" (autograded test cell), "answer" (manually graded), "solution", "read-only", "task" or ""."""
    meta = nbgrader_meta(cell_or_meta) if "metadata" in cell_or_meta or "cell_type" in cell_or_meta else cell_or_meta
    if meta.get("grade"):
        return "answer" if meta.get("solution") else "test"
    if meta.get("solution"):
        return "solution"
    if meta.get("task"):
        return "task"
    return "read-only" if meta.get("locked") else ""


def autograded_cells(nb) -> dict[str, float]:
    """{grade id: points} of the autograded test cells (grade cells that are not written answers)."""
    return {m["grade_id"]: float(m["points"]) for m in map(nbgrader_meta, nb.cells) if role(m) == "test"}


def written_answers(nb, marks: Marks) -> dict[str, str]:
    """{grade_id: model answer and point guide} of the written (markdown) answers: their solution regions."""
    return {nbgrader_meta(c)["grade_id"]: region_body(c.source, marks, dedent=False).strip()
            for c in nb.cells if c.cell_type == "markdown" and role(c) == "answer"}


# ----------------------------------------------------------------------------------------------------- regions
def region_lines(source: str, marks: Marks) -> list[int]:
    """0-based numbers of the lines inside ``marks`` regions of ``source`` (the delimiter lines too)."""
    begin, end = marks
    inside, found = False, []
    for number, line in enumerate(source.split("\n")):
        if begin in line:
            inside = True
        if inside:
            found.append(number)
        if end in line:
            inside = False
    return found


def region_body(source: str, marks: Marks, dedent: bool = True) -> str:
    """The text inside the region(s), delimiter lines excluded (dedented for code)."""
    lines = source.split("\n")
    inside = [lines[n] for n in region_lines(source, marks) if marks[0] not in lines[n] and marks[1] not in lines[n]]
    text = "\n".join(inside)
    return textwrap.dedent(text) if dedent else text


def without_region(source: str, marks: Marks) -> str:
    """``source`` with its regions removed, delimiters included (what nbgrader's release shows of a test cell)."""
    hidden = set(region_lines(source, marks))
    return "\n".join(line for number, line in enumerate(source.split("\n")) if number not in hidden)


def without_markers(source: str, marks: Marks) -> str:
    """``source`` with the delimiter lines dropped and the regions' content kept (a solution as a student writes it)."""
    return "\n".join(line for line in source.split("\n") if marks[0] not in line and marks[1] not in line)


def replace_region(source: str, marks: Marks, body: str) -> str:
    """``source`` with its first region (delimiters included) replaced by ``body``, indented as the region was."""
    lines = source.split("\n")
    inside = region_lines(source, marks)
    start, end = inside[0], inside[-1]
    indent = re.match(r"\s*", lines[start]).group(0)
    new = textwrap.indent(textwrap.dedent(body).strip("\n"), indent, lambda _line: True).split("\n")
    return "\n".join(lines[:start] + new + lines[end + 1:])


def normalise(line: str) -> str:
    return " ".join(line.split())


def secret_lines(cells, marks: dict[str, Marks], public: str = "") -> set[str]:
    """The non-trivial lines (normalised, >= MIN_CHARS) inside the regions ``marks`` of ``cells``.

    Lines found in ``public`` (the normalised text the release shows anyway: supplied code, instructions quoting a
    call) are not secrets.
    """
    found: set[str] = set()
    for cell in cells:
        lines = source_of(cell).split("\n")
        for begin, end in marks.values():
            for number in region_lines(source_of(cell), (begin, end)):
                norm = normalise(lines[number])
                if len(norm) >= MIN_CHARS and begin not in norm and end not in norm and norm not in public:
                    found.add(norm)
    return found
