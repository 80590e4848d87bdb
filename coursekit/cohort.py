"""Build planted submissions of the homework, to prove what the autograder does with them.

A submission starts from the **release** notebook (exactly what a student receives) and fills its solution cells:

* ``solved``: function names (or grade ids) whose reference solution is copied from the source notebook
  (``"all"`` for every solution cell, code and written answers);
* ``bodies``: ``{function name: code}`` replacing the body of that function's solution region (the planted
  implementation; written at any indentation, re-indented to the region's);
* ``answers``: ``{grade id: markdown}`` for written answers;
* ``mutate``: a function applied last to the notebook (delete or duplicate cells, change metadata, ...), or
  ``raw``: bytes written instead of a notebook (broken files); ``filename``: the submitted file's name.

Each submission states what grading must give: ``fails`` is the set of autograded cells (grade ids) that must
score zero; every other autograded cell must get full points. ``expected_scores`` turns that into numbers from
the gradebook of the source notebook, so tests and reports never hard-code points.

    python -m coursekit cohort [--root DIR] [--list]

writes the demo cohort into ``DIR/submitted/<student>/transformers/`` (default: the repository root), ready for
``nbgrader autograde transformers``. Other cohorts (e.g. a catalogue of mistakes) reuse ``Submission``/``write``.
"""
from __future__ import annotations

import argparse
import copy
import functools
import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import nbformat

from . import ROOT, regions
from .course import Course
from .regions import nbgrader_meta

DEF = re.compile(r"^def (\w+)\(", re.M)


@functools.lru_cache(maxsize=None)
def homework(root: Path = ROOT) -> tuple[Course, str, str, tuple[str, str]]:
    """(course, assignment, notebook file name, solution delimiters) of the course at ``root`` (one assignment,
    one notebook: the homework)."""
    course = Course.load(root)
    assignment = course.assignment()
    (notebook,) = course.notebooks("source", assignment)
    return course, assignment, notebook.name, regions.delimiters(course.config)["solution"]


def source_path(root: Path = ROOT) -> Path:
    course, assignment, name, _ = homework(Path(root).resolve())
    return course.path("source", assignment=assignment) / name


def release_path(root: Path = ROOT) -> Path:
    course, assignment, name, _ = homework(Path(root).resolve())
    return course.path("release", assignment=assignment) / name


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def autograded_cells(nb) -> dict[str, float]:
    """{grade id: points} of the autograded test cells (grade cells that are not written answers)."""
    return {
        m["grade_id"]: float(m["points"])
        for m in map(nbgrader_meta, nb.cells)
        if m.get("grade") and not m.get("solution")
    }


def function_cells(nb) -> dict[str, str]:
    """{function name: grade id} for the solution cells that define a function."""
    found = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution") and cell.cell_type == "code":
            for name in DEF.findall(cell.source):
                found[name] = meta["grade_id"]
    return found


def _solution_marks(root: Path = ROOT) -> tuple[str, str]:
    return homework(Path(root).resolve())[3]


def strip_markers(source: str, root: Path = ROOT) -> str:
    """The reference solution as a student would write it: the solution region kept, its marker lines dropped."""
    begin, end = _solution_marks(root)
    return "\n".join(line for line in source.split("\n") if begin not in line and end not in line)


def _region(source: str, root: Path) -> tuple[list[str], int, int]:
    lines = source.split("\n")
    inside = regions.region_lines(source, *_solution_marks(root))
    return lines, inside[0], inside[-1]


def solution_region(source: str, root: Path = ROOT) -> str:
    """The code between the solution markers (dedented)."""
    lines, start, end = _region(source, root)
    return textwrap.dedent("\n".join(lines[start + 1:end]))


def replace_region(source: str, body: str, root: Path = ROOT) -> str:
    """Replace the solution region of ``source`` by ``body`` (re-indented to the region's indentation)."""
    lines, start, end = _region(source, root)
    indent = re.match(r"\s*", lines[start]).group(0)
    new = textwrap.indent(textwrap.dedent(body).strip("\n"), indent, lambda _line: True).split("\n")
    return "\n".join(lines[:start] + new + lines[end + 1:])


@dataclass
class Submission:
    student: str
    note: str = ""
    solved: Iterable[str] | str = ()
    bodies: dict[str, str] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    mutate: Callable[[nbformat.NotebookNode], None] | None = None
    raw: bytes | None = None
    fails: frozenset[str] | set[str] = frozenset()
    filename: str = ""  # the submitted file's name, if not the assignment's (plants a renamed notebook)
    # other files of the submission folder: {name: text, or ("link", target), or ("fifo", "")}
    extra: dict = field(default_factory=dict)

    def notebook(self, root: Path = ROOT) -> nbformat.NotebookNode:
        """The submitted notebook: the release with this submission's work filled in."""
        source = read(source_path(root))
        nb = copy.deepcopy(read(release_path(root)))
        by_id = {grade_id(c): c for c in source.cells if grade_id(c)}
        functions = function_cells(source)
        solved = set(by_id) if self.solved == "all" else {functions.get(s, s) for s in self.solved}
        bodies = {functions[name]: body for name, body in self.bodies.items()}
        unknown = (solved | set(bodies) | set(self.answers)) - set(by_id)
        if unknown:
            raise KeyError(f"{self.student}: unknown functions or grade ids {sorted(unknown)}")
        for cell in nb.cells:
            gid = grade_id(cell)
            if not nbgrader_meta(cell).get("solution"):
                continue
            if gid in bodies:
                cell.source = strip_markers(replace_region(by_id[gid].source, bodies[gid], root), root)
            elif gid in self.answers:
                cell.source = self.answers[gid]
            elif gid in solved:  # a written answer is the model answer without the graders' point guide
                cell.source = re.split(r"\n+\*\*Point guide\*\*", strip_markers(by_id[gid].source, root))[0]
        if self.mutate is not None:
            self.mutate(nb)
        return nb

    def write(self, root: Path = ROOT, course: Path | None = None) -> Path:
        """Write into ``course/submitted/<student>/transformers/`` (course defaults to root); return the file."""
        _, assignment, name, _ = homework(Path(course or root).resolve())
        target = Course.load(course or root).path("submitted", self.student, assignment) / (self.filename or name)
        target.parent.mkdir(parents=True, exist_ok=True)
        if self.raw is not None:
            target.write_bytes(self.raw)
        else:
            nbformat.write(self.notebook(root), str(target))
        for name, content in self.extra.items():
            path = target.parent / name
            if isinstance(content, tuple) and content[0] == "link":
                path.symlink_to(content[1])
            elif isinstance(content, tuple) and content[0] == "fifo":
                os.mkfifo(path)
            else:
                path.write_text(content)
        return target

    def expected_scores(self, root: Path = ROOT) -> dict[str, float]:
        """{grade id: expected autograded score} for every autograded cell."""
        cells = autograded_cells(read(source_path(root)))
        unknown = set(self.fails) - set(cells)
        if unknown:
            raise KeyError(f"{self.student}: unknown autograded cells {sorted(unknown)}")
        return {gid: (0.0 if gid in self.fails else points) for gid, points in cells.items()}


def body(function: str, root: Path = ROOT) -> str:
    """The reference body of ``function`` (to build variants: ``body("attention").replace(...)``)."""
    source = read(source_path(root))
    gid = function_cells(source)[function]
    cell = next(c for c in source.cells if grade_id(c) == gid)
    return solution_region(cell.source, root)


def cells_of(function: str, root: Path = ROOT) -> set[str]:
    """Grade ids of the autograded cells that test ``function`` (test cells up to the next solution cell)."""
    source = read(source_path(root))
    gid = function_cells(source)[function]
    found, inside = set(), False
    for cell in source.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade_id") == gid:
            inside = True
        elif inside and meta.get("solution") and cell.cell_type == "code":
            break
        elif inside and meta.get("grade") and not meta.get("solution"):
            found.add(meta["grade_id"])
    return found


def _delete_cell(gid: str) -> Callable:
    def mutate(nb):
        nb.cells = [c for c in nb.cells if grade_id(c) != gid]
    return mutate


def demo_cohort(root: Path = ROOT) -> list[Submission]:
    """The demo cohort of book/instructors.md and tests/test_homework_pipeline.py: one submission per situation."""
    everything = set(autograded_cells(read(source_path(root))))
    noisy = "import warnings\n" \
            "warnings.warn('this API is deprecated', DeprecationWarning)\n" \
            "warnings.warn('a harmless library warning', UserWarning)\n"
    return [
        Submission("demo_full_solution", "every exercise solved as in the source", solved="all"),
        Submission("demo_untouched", "the release handed in unchanged", fails=everything),
        Submission("demo_partial", "only Exercises 2 and 4 done", solved=["attention", "masked_mean"],
                   fails=everything - cells_of("attention", root) - cells_of("masked_mean", root)),
        Submission("demo_noisy_deleted_cell",
                   "correct; every function emits warnings on stderr, and a graded test cell was deleted",
                   solved="all", bodies={f: noisy + body(f, root) for f in function_cells(read(source_path(root)))},
                   mutate=_delete_cell("accuracy_returns_float")),
        Submission("demo_attention_no_scaling", "attention without 1/sqrt(d_k)", solved="all",
                   bodies={"attention": body("attention", root).replace(
                       'scale = 1.0 / math.sqrt(q.shape[-1])', 'scale = 1.0')},
                   fails={"attention_worked_examples", "attention_matches_pytorch"}),
        Submission("demo_masked_mean_padded_length", "masked_mean divides by the padded length", solved="all",
                   bodies={"masked_mean": """
                       total = x.masked_fill(padding.unsqueeze(-1), 0).sum(dim=1)
                       return total / x.shape[1]
                   """},
                   fails={"masked_mean_example", "masked_mean_padding"}),
        Submission("demo_accuracy_ties_positive", "accuracy predicts positive at logit >= 0", solved="all",
                   bodies={"accuracy": "return ((logits >= 0).float() == labels).float().mean().item()"},
                   fails={"accuracy_threshold"}),
        Submission("demo_tokenizer_no_pre_tokenizer", "tokenizer trained without the Whitespace pre-tokenizer",
                   solved="all",
                   bodies={"train_bpe_tokenizer": """
                       tokenizer = Tokenizer(models.BPE())
                       trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"])
                       tokenizer.train_from_iterator(corpus, trainer)
                       return tokenizer
                   """},
                   fails={"tokenizer_vocabulary", "tokenizer_pre_tokenizer"}),
        Submission("demo_tokens_per_word_characters", "tokens_per_word counts characters", solved="all",
                   bodies={"tokens_per_word": "return {word: len(word) for word in words}"},
                   fails={"tokens_per_word_counts"}),
        Submission("demo_embedding_with_bias", "embedding parameters counted with a bias", solved="all",
                   bodies={"embedding_parameters": "return vocab_size * d + d"},
                   fails={"embedding_parameters_count"}),
    ]


def remove_demo(course: Course, assignment: str) -> list[str]:
    """Remove the demo students from the gradebook (with their submissions and grades, as `nbgrader db student
    remove --force` does) and their folders; return their ids. Real students are never touched: only ids the demo
    cohort defines are removed."""
    import shutil

    from nbgrader.api import MissingEntry

    demo = [sub.student for sub in demo_cohort(course.root)]
    removed = []
    with course.gradebook() as gb:
        for student in demo:
            try:
                gb.remove_student(student)
                removed.append(student)
            except MissingEntry:
                pass
    for step in ("submitted", "autograded", "feedback"):
        for student in demo:
            folder = course.path(step, student, assignment).parent
            if folder.is_dir():
                shutil.rmtree(folder)
                removed.append(student)
    checked = course.root / "preflight" / "submitted"
    for student in demo:
        if (checked / student).is_dir():
            shutil.rmtree(checked / student)
    return sorted(set(removed))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit cohort", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="course root (default: the current folder)")
    parser.add_argument("--list", action="store_true", help="only list the submissions and expected failures")
    parser.add_argument("--remove", action="store_true",
                        help="remove the demo students: their folders and, with their grades, from the gradebook")
    args = parser.parse_args(argv)
    course, assignment, _, _ = homework(args.root.resolve())
    if args.remove:
        removed = remove_demo(course, assignment)
        print(f"removed {len(removed)} demo student(s): {', '.join(removed) or 'none found'}")
        return 0
    for sub in demo_cohort(course.root):
        if args.list:
            print(f"{sub.student:<34} {sub.note}; fails: {', '.join(sorted(sub.fails)) or '-'}")
        else:
            print("wrote", sub.write(course.root).relative_to(course.root))
    return 0
