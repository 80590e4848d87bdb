"""`make publish` output carries no solution, no hidden test and no student data; the guard can fail."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from conftest import BIN, ROOT, link_node_modules, run
from coursekit import leaks
from coursekit.notebook import delimiters, normalise, secret_lines
from coursekit.course import Course

pytestmark = pytest.mark.slow
COURSE = Course.load(ROOT)
SECRETS = leaks.course_secrets(COURSE)


def scan(paths, ids=frozenset()):
    return leaks.scan(paths, SECRETS, set(ids), leaks.student_folders(COURSE))


@pytest.fixture(scope="module")
def published(built_site, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("publish") / "out"
    proc = run([sys.executable, "-m", "coursekit", "publish", "--out", str(out), "--site", str(built_site["html"])],
               cwd=built_site["root"])
    assert "leak guard: clean" in proc.stdout
    return out


def test_secrets_are_extracted_from_both_region_kinds(assignment):
    sources = [c.source for c in assignment.source.cells]
    solution_cell = next(s for s in sources if "### BEGIN SOLUTION" in s and "def " in s)
    hidden_cell = next(s for s in sources if "### BEGIN HIDDEN TESTS" in s)
    assert any(line in normalise(solution_cell) for line in SECRETS)
    assert any(line in normalise(hidden_cell) for line in SECRETS)
    assert len(SECRETS) >= 40 * len(COURSE.assignments()), f"only {len(SECRETS)} secret lines: extraction is broken"


def test_student_tree_has_exactly_the_public_files(published):
    student = published / "student"
    top = sorted(p.name for p in student.iterdir())
    assert top == sorted(["README.md", "Makefile", "book", "release", "environment.yml", "postBuild",
                          "requirements.txt", "_config.yml", "_toc.yml", "package.json", "package-lock.json"]), top
    assert not (student / "book" / "instructors.md").exists() and "instructors" not in (student / "_toc.yml").read_text()
    for hw in COURSE.assignments():
        assert (student / "release" / hw.name / hw.notebook_name).exists(), hw.name
    assert not list(student.rglob("*.db"))
    for forbidden in ("assignments", "instructor", "submitted", "autograded", "feedback", "coursekit", "tests",
                      "nbgrader_config.py"):
        assert not list(student.rglob(forbidden)), f"{forbidden} in the student tree"


def test_make_book_works_in_the_student_tree(published, built_site, tmp_path):
    """What the intro page tells a learner who clones the public branch: `make book` builds the site there (with the
    course's environment standing in for the .venv it would create, and the chapters' cache, so nothing re-runs)."""
    student = tmp_path / "student"
    shutil.copytree(published / "student", student)
    shutil.copytree(built_site["root"] / "_build" / ".jupyter_cache", student / "_build" / ".jupyter_cache")
    link_node_modules(student)  # what `make book` there would install with `npm ci` (no network in tests)
    # The course's environment has the student tree's pins installed (test_environment checks the requirements
    # match): a stamp newer than requirements.txt tells make so, and the shared environment is left alone. The same
    # for the Node packages: node_modules is the repository's own (linked), and `npm ci` there would replace it
    # while other tests read it.
    stamp = tmp_path / "installed"
    stamp.touch()
    proc = run(["make", "book", f"VENV={BIN.parent}", f"STAMP={stamp}", f"NODE_PACKAGES={stamp}"], cwd=student,
               timeout=900)
    assert "npm" not in proc.stdout, proc.stdout[-2000:]
    log = proc.stdout + proc.stderr
    warnings = [line for line in log.splitlines() if re.search(r"(^|: )(WARNING|ERROR|CRITICAL):", line)]
    assert not warnings, "\n".join(warnings[:10])
    assert (student / "_build" / "html" / "book" / "homework.html").exists()
    assert not (student / "_build" / "html" / "book" / "instructors.html").exists()


def test_published_output_is_clean(published):
    findings = scan([published])
    assert findings == [], "\n".join(map(str, findings))
    assert (published / "site" / "index.html").exists()
    assert (published / "site" / ".nojekyll").exists()


def _planted(published: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "out"
    shutil.copytree(published, copy)
    return copy


@pytest.mark.parametrize("where", ["site/book/02_attention.html", "site/_sources/book/02_attention.md",
                                   "site/searchindex.js", "student/book/02_attention.md"])
@pytest.mark.parametrize("kind", ["solution", "hidden"])
def test_guard_catches_a_planted_leak(published, tmp_path, where, kind, assignment):
    marker = assignment.marks[kind][0]
    cell = next(c.source for c in assignment.source.cells if marker in c.source and c.cell_type == "code")
    line = next(raw for raw in cell.splitlines() if normalise(raw) in SECRETS)
    out = _planted(published, tmp_path)
    target = out / where
    text = target.read_text(encoding="utf-8")
    if target.suffix == ".html":  # as Sphinx would render it: escaped, inside highlighted spans
        import html

        words = html.escape(line).split(" ")
        planted = "<pre>" + " ".join(f'<span class="n">{w}</span>' for w in words) + "</pre>"
    elif target.suffix == ".js":
        planted = json.dumps(line)
    else:
        planted = "\n" + line + "\n"
    target.write_text(text + planted, encoding="utf-8")
    findings = scan([out])
    assert any(f.path == target and "line" in f.problem for f in findings), findings


def test_guard_catches_student_data(published, tmp_path):
    out = _planted(published, tmp_path)
    (out / "site" / "gradebook.db").write_bytes(b"SQLite format 3\x00")
    (out / "student" / "autograded" / "bob" / "transformers").mkdir(parents=True)
    (out / "student" / "autograded" / "bob" / "transformers" / "notes.txt").write_text("graded")
    graded = json.loads((ROOT / "release" / "transformers" / "transformers.ipynb").read_text())
    for cell in graded["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade"):
            cell["metadata"]["nbgrader"]["score"] = 1.0
    (out / "student" / "book" / "graded.ipynb").write_text(json.dumps(graded))
    (out / "site" / "index.html").write_text((out / "site" / "index.html").read_text() + "<p>Graded: s1234567</p>")
    findings = scan([out], {"s1234567"})
    problems = "\n".join(map(str, findings))
    assert "gradebook" in problems
    assert "private course folder autograded/" in problems
    assert "graded notebook" in problems
    assert "student id 's1234567'" in problems


def test_guard_catches_the_graders_model_answers(published, tmp_path):
    """The new path model answers take (coursekit.autograde.model_answers, inserted into autograded notebooks): caught
    by the cell's mark, and by the answer's own lines, in a notebook and in rendered text alike."""
    from nbformat.v4 import new_markdown_cell, new_notebook

    from conftest import COURSE
    from coursekit.notebook import written_answers

    hw = COURSE.assignment("transformers")
    answers = written_answers(hw.source, hw.marks["solution"])
    assert len(answers) >= 5
    grade_id, answer = max(answers.items(), key=lambda kv: len(kv[1]))
    out = _planted(published, tmp_path)
    cell = new_markdown_cell(answer, metadata={"coursekit": {"graders_only": True}})
    (out / "student" / "book" / "answers.ipynb").write_text(json.dumps(new_notebook(cells=[cell])))
    (out / "site" / "answers.md").write_text(answer)
    problems = "\n".join(map(str, scan([out])))
    assert "answers.ipynb: graders' model answers" in problems
    assert "answers.md: solution/hidden-test line" in problems, f"{grade_id} answer not recognised as a secret"


def test_student_ids_come_from_the_course(course_dir):
    (course_dir / "submitted" / "carol_k" / "transformers").mkdir(parents=True)
    assert "carol_k" in leaks.known_student_ids(Course.load(course_dir))


def test_publish_refuses_and_removes_a_leaking_output(built_site, course_dir, tmp_path):
    """A course whose chapter quotes a hidden test: publish exits 1 and leaves nothing to push."""
    secrets = sorted(leaks.course_secrets(Course.load(course_dir)))
    site = tmp_path / "site"
    shutil.copytree(built_site["html"], site)
    (site / "leak.html").write_text(f"<pre>{secrets[0]}</pre>")
    out = tmp_path / "out"
    proc = run([sys.executable, "-m", "coursekit", "publish", "--out", str(out), "--site", str(site)],
               cwd=course_dir, check=False)
    assert proc.returncode == 1 and "LEAK" in proc.stderr and not out.exists()


def test_lines_the_release_already_shows_are_not_secrets():
    """An instruction quoting a call (public in the release) must not make the guard cry wolf."""
    cells = [{"cell_type": "code", "source": "def train(corpus, trainer):\n    ### BEGIN SOLUTION\n"
              "    tokenizer.train_from_iterator(corpus, trainer)\n    secret_weights = scores.softmax(dim=-1)\n"
              "    ### END SOLUTION\n"}]
    public = "4. Call `tokenizer.train_from_iterator(corpus, trainer)` and return the tokenizer."
    assert secret_lines(cells, delimiters(), public) == {"secret_weights = scores.softmax(dim=-1)"}


def test_regions_are_found_as_nbgrader_finds_them():
    """nbgrader matches its delimiters as substrings: a region written with one '#' is a region too."""
    cells = [{"cell_type": "code", "source": "x = 1\n# BEGIN SOLUTION\nanswer = compute_the_answer(x)\n# END SOLUTION\n"
              "#    BEGIN HIDDEN TESTS\nassert hidden_reference_value == 42\n# END HIDDEN TESTS"}]
    assert secret_lines(cells, delimiters()) == {"answer = compute_the_answer(x)",
                                                                 "assert hidden_reference_value == 42"}
