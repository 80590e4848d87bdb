"""release/<assignment>/ is what nbgrader generates from assignments/ (never stale), holds no solution and no hidden
test, and greets a learner who runs it untouched with clear messages. For every assignment of the course."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import nbformat
import pytest

from conftest import BIN, run
from coursekit.notebook import delimiters, normalise, region_lines, role, secret_lines as region_secrets, source_of


def secret_lines(nb) -> set[str]:
    """Secret lines of ``nb`` (coursekit.notebook, with the configured delimiters), minus lines it supplies outside
    any region: these the release shows anyway."""
    marks = delimiters()
    supplied = "\n".join(normalise(line) for cell in nb.cells for number, line in
                         enumerate(source_of(cell).split("\n"))
                         if not any(number in region_lines(source_of(cell), m) for m in marks.values()))
    return {line for line in region_secrets(nb.cells, marks) if line not in supplied.split("\n")}


def comparable(nb: dict) -> dict:
    """The whole notebook minus what is volatile between runs (nothing is, with nbgrader 0.9.6; kept explicit)."""
    nb = json.loads(json.dumps(nb))
    nb.get("metadata", {}).pop("widgets", None)
    return nb


@pytest.mark.slow
def test_committed_release_is_what_nbgrader_generates(course_dir, assignment):
    shutil.rmtree(course_dir / "release")
    run([str(BIN / "nbgrader"), "generate_assignment", assignment.name], cwd=course_dir)
    folder = course_dir / "release" / assignment.name
    fresh = json.loads((folder / assignment.notebook_name).read_text())
    committed = json.loads(assignment.release_path.read_text())
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in assignment.release_path.parent.iterdir())
    assert sorted(p.name for p in folder.iterdir()) == [assignment.notebook_name], "only the notebook is released"
    assert len(fresh["cells"]) == len(committed["cells"]), "release is stale: run `make release`"
    for new, old in zip(fresh["cells"], committed["cells"]):
        assert (new["cell_type"], "".join(new["source"]), new["metadata"]) == (
            old["cell_type"], "".join(old["source"]), old["metadata"]), (
            f"release is stale at cell {new.get('id')}: run `make release`")
    assert comparable(fresh) == comparable(committed), "release is stale: run `make release`"


def test_the_solutions_grading_time_is_measured_for_the_current_source(assignment):
    """Each submission's time budget is a multiple of it (coursekit.autograde.budget): never stale."""
    from coursekit.autograde import budget

    kept = budget.budget_file(assignment.course.config, assignment.name)
    assert kept == assignment.instructor_folder / "budget.json"
    assert budget.measured(assignment.source_path, kept) is not None, f"{kept} is stale: run `make release`"


def test_release_contains_no_solution_and_no_hidden_test(assignment):
    source = assignment.source
    release_text = assignment.release_path.read_text()
    release = nbformat.reads(release_text, as_version=4)
    secrets = secret_lines(source)
    assert len(secrets) > 30, f"only {len(secrets)} secret lines found: the extraction is broken"
    for start, end in delimiters().values():
        assert start not in release_text and end not in release_text
    released_lines = {normalise(line) for cell in release.cells for line in cell.source.split("\n")}
    leaked = sorted(secrets & released_lines)
    assert not leaked, f"{len(leaked)} solution/hidden-test lines in the release, e.g. {leaked[:3]}"
    for cell in release.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            assert 'raise NotImplementedError("not done yet' in cell.source
        if meta.get("solution") and cell.cell_type == "markdown":
            assert cell.source == "YOUR ANSWER HERE"
    # Same cells, same order, same grade ids as the source.
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in release.cells] == [
        c.metadata.get("nbgrader", {}).get("grade_id") for c in source.cells]
    assert all(not c.get("outputs") for c in release.cells if c.cell_type == "code")


def test_secret_line_extraction_can_fail():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "def f():\n    ### BEGIN SOLUTION\n    return secret_value_of_f\n    print('visible line here')\n"
        "    ### END SOLUTION\nprint('visible line here')")])
    assert secret_lines(nb) == {"return secret_value_of_f"}


@pytest.mark.slow
def test_run_all_of_the_untouched_release_reaches_the_end_with_clear_messages(tmp_path, assignment):
    """Run the release as a learner who has done nothing runs it: `jupyter nbconvert --execute`, which stops at the
    first error like JupyterLab's Run All, except in cells tagged `raises-exception`. The last code cell runs; every
    graded test cell still fails with NotImplementedError; demonstration cells say which exercise to complete
    instead of failing; training never starts."""
    notebook = tmp_path / assignment.notebook_name
    shutil.copy(assignment.release_path, notebook)
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run([str(BIN / "jupyter"), "nbconvert", "--to", "notebook", "--execute", "--output",
                           "executed.ipynb", str(notebook)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"Run All stopped:\n{proc.stderr[-4000:]}"
    nb = nbformat.read(str(tmp_path / "executed.ipynb"), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "cells that did not run: " + ", ".join(
        c.id for c in code if not c.execution_count)
    assert code[-1].execution_count == max(c.execution_count for c in code), "the last code cell did not run last"
    failing, messages = [], []
    for cell in code:
        meta = cell.metadata.get("nbgrader", {})
        errors = [o for o in cell.outputs if o.output_type == "error"]
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        if meta.get("grade"):
            assert [e.ename for e in errors] == ["NotImplementedError"], (meta["grade_id"], errors)
            assert any("not done yet" in line for line in errors[0].traceback)
            failing.append(meta["grade_id"])
        else:
            assert not errors, f"a non-graded cell failed for a learner who has done nothing:\n{cell.source[:300]}"
            messages += re.findall(r"Complete Exercise [\d.]+ first", text)
    assert len(failing) == len(assignment.autograded_cells)
    assert messages, "demonstration cells say which exercise to complete first"
    for cell in code:  # ungraded checks a learner runs say what to do, whatever they are
        if "raises-exception" in cell.metadata.get("tags", []) and role(cell) != "test":
            assert "first" in "".join(o.get("text", "") for o in cell.outputs), cell.source[:80]


def test_nbconvert_stops_at_an_untagged_error(tmp_path):
    """The control for the test above: without the `raises-exception` tag, nbconvert stops at the first error, so
    the tag is what lets Run All reach the end."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("raise NotImplementedError('not done yet')"),
                                         nbformat.v4.new_code_cell("print('reached')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for tags, reached in [([], False), (["raises-exception"], True)]:
        nb.cells[0].metadata["tags"] = tags
        path = tmp_path / f"control_{bool(tags)}.ipynb"
        nbformat.write(nb, str(path))
        proc = subprocess.run([str(BIN / "jupyter"), "nbconvert", "--to", "notebook", "--execute", "--inplace",
                               str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert (proc.returncode == 0) is reached, proc.stderr[-2000:]
        if reached:
            assert "reached" in nbformat.read(str(path), as_version=4).cells[1].outputs[0].text
