"""What the checker runs for a notebook: the instructor's cells, in the instructor's order, and nothing else.

A ``Plan`` is built from the assignment's source as nbgrader registered it (``nbgrader generate_assignment``): the
gradebook's copy of each cell's code, in the order of the source notebook (``assignments/<id>/<notebook>.ipynb``).
Nothing of it comes from the submitted notebook: not which cells are tests or read-only, not their code, not their
order, not whether the student's kernel ran them. Its parts:

* ``items``: the **read-only cells** (locked, neither graded nor a solution: imports, data, helpers) and the **test
  cells** (autograded), in source order. The checker runs them in that order, in its own namespace;
* ``answers``: the names the assignment asks the student for, declared once per assignment by its **solution
  cells** (every name a solution cell binds at top level, imports excepted: ``def attention`` declares
  ``attention``). A test reaches the student's kernel through these names only; every other name a test uses is the
  checker's own (builtins, what a read-only cell or an earlier test cell defined) or an error.

``problems()`` says what the checker could not run as written (a test that needs a name no read-only cell defines
and no solution declares, a read-only cell that needs a student's answer, an answer that a read-only cell also
defines). ``nbgrader generate_assignment`` refuses such an assignment (``coursekit.generate.CheckTests``), so the
instructor hears of it before any student is graded, never at grading.
"""
from __future__ import annotations

import builtins
import json
import symtable
from dataclasses import dataclass
from pathlib import Path

from ..notebook import grade_id, nbgrader_meta, role, source_of


@dataclass(frozen=True)
class Item:
    grade_id: str
    role: str    # "read-only" | "test"
    source: str


@dataclass(frozen=True)
class Plan:
    notebook: str
    items: tuple[Item, ...]
    answers: frozenset[str]

    @property
    def tests(self) -> list[str]:
        return [item.grade_id for item in self.items if item.role == "test"]

    def item(self, gid: str) -> Item | None:
        return next((item for item in self.items if item.grade_id == gid), None)

    # ------------------------------------------------------------------------------------------ constructors
    @classmethod
    def from_notebook(cls, nb, name: str = "") -> "Plan":
        """The plan of a source notebook (the instructor's, with solutions or with nbgrader's stubs)."""
        items, solutions = [], []
        for cell in nb.cells:
            kind = role(cell)
            if cell.get("cell_type") != "code":
                continue
            if kind in ("test", "read-only"):
                items.append(Item(grade_id(cell), kind, source_of(cell)))
            elif kind in ("solution", "answer"):
                solutions.append(source_of(cell))
        return cls(name, tuple(items), declared(solutions))

    @classmethod
    def from_gradebook(cls, db_url: str, notebook: str, assignment: str, order: list[str] | None = None) -> "Plan":
        """The plan of a notebook as ``nbgrader generate_assignment`` registered it: the gradebook's code, in
        ``order`` (grade ids, from the source notebook); cells missing from ``order`` come after, by name."""
        from nbgrader.api import Gradebook

        with Gradebook(db_url) as gb:
            record = gb.find_notebook(notebook, assignment)
            graded = {c.name for c in record.grade_cells}
            solution = {c.name for c in record.solution_cells}
            cells = {c.name: c for c in record.source_cells}
            items, solutions = {}, []
            for name, cell in cells.items():
                if cell.cell_type != "code":
                    continue
                if name in solution:
                    solutions.append(cell.source or "")
                elif name in graded:
                    items[name] = Item(name, "test", cell.source or "")
                elif cell.locked:
                    items[name] = Item(name, "read-only", cell.source or "")
        rank = {gid: n for n, gid in enumerate(order or [])}
        ordered = sorted(items.values(), key=lambda item: (rank.get(item.grade_id, len(rank)), item.grade_id))
        return cls(notebook, tuple(ordered), declared(solutions))

    # ------------------------------------------------------------------------------------------ checks
    def problems(self) -> list[str]:
        """What the checker could not run as written, one line each (empty: the plan is sound)."""
        found, defined = [], set(dir(builtins))
        for item in self.items:
            try:
                free = free_names(item.source)
                bound = bound_names(item.source)
            except SyntaxError as error:
                found.append(f"{item.grade_id}: does not parse ({error.msg}, line {error.lineno})")
                continue
            if item.role == "read-only":
                clash = sorted(bound & self.answers)
                if clash:
                    found.append(f"{item.grade_id}: read-only cell defines {_names(clash)}, which a solution cell "
                                 f"also defines (a name is either the instructor's or the student's answer)")
                needs = sorted(free - defined)
                if needs:
                    uses = [n for n in needs if n in self.answers]
                    found.append(f"{item.grade_id}: read-only cell uses {_names(needs)}, defined by no read-only "
                                 f"cell before it" + (" (the checker runs read-only cells without the student's "
                                                      "answers)" if uses else ""))
            else:
                clash = sorted(bound & self.answers)
                if clash:
                    found.append(f"{item.grade_id}: test cell defines {_names(clash)}, which a solution cell also "
                                 f"defines (a later test would take the student's value for it)")
                needs = sorted(free - defined - self.answers)
                if needs:
                    found.append(f"{item.grade_id}: test cell uses {_names(needs)}, which no read-only cell before it "
                                 f"defines and no solution cell declares as an answer (the checker takes only "
                                 f"declared answers from the student's kernel)")
            defined |= bound
        return found

    # ------------------------------------------------------------------------------------------ (de)serialise
    def to_json(self) -> str:
        return json.dumps({"notebook": self.notebook, "answers": sorted(self.answers),
                           "items": [[i.grade_id, i.role, i.source] for i in self.items]})

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        data = json.loads(text)
        return cls(data["notebook"], tuple(Item(*item) for item in data["items"]), frozenset(data["answers"]))


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in names)


def declared(solution_sources) -> frozenset[str]:
    """The answers the solution cells declare: every name bound at their top level, imports excepted."""
    found = set()
    for source in solution_sources:
        try:
            table = symtable.symtable(source, "<solution>", "exec")
        except SyntaxError:
            continue
        found |= {s.get_name() for s in table.get_symbols() if s.is_assigned() and not s.is_imported()}
    return frozenset(found)


def bound_names(source: str) -> set[str]:
    """Names a cell binds at its top level (assignments, definitions, imports)."""
    table = symtable.symtable(source, "<cell>", "exec")
    return {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}


def free_names(source: str) -> set[str]:
    """Names the code reads that it never binds at top level: what must come from elsewhere."""
    table = symtable.symtable(source, "<check>", "exec")
    found = {s.get_name() for s in table.get_symbols() if s.is_referenced() and not s.is_assigned()
             and not s.is_imported()}
    stack = list(table.get_children())
    while stack:
        child = stack.pop()
        stack.extend(child.get_children())
        found |= {s.get_name() for s in child.get_symbols() if s.is_global() and s.is_referenced()}
    return found - bound_names(source)


def source_order(path: Path) -> list[str]:
    """The grade ids of a source notebook's cells, in order ([] if it cannot be read)."""
    import nbformat

    try:
        nb = nbformat.read(str(path), as_version=4)
    except (OSError, ValueError):
        return []
    return [gid for gid in (nbgrader_meta(c).get("grade_id") for c in nb.cells) if gid]
