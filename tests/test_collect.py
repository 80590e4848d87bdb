"""Canvas and Moodle downloads reach submitted/ through stock `nbgrader zip_collect` with the course's configuration
(coursekit/collect.py, coursekit/export.py): resubmissions, a wrong notebook name, a non-notebook file and a late flag each get a clear
message, and nothing is lost. Grade files for both platforms come from `nbgrader export --exporter=...`."""
from __future__ import annotations

import csv
import json
import zipfile

import pytest

from conftest import BIN, copy_course, run
from coursekit.collect import parse
from coursekit.course import Course
from coursekit.planting import Submission

pytestmark = pytest.mark.slow


def notebook_bytes(course, marker: str) -> bytes:
    """The release notebook with a marker in its first cell, so each collected file can be recognised."""
    nb = json.loads((course / "release" / "transformers" / "transformers.ipynb").read_text())
    nb["cells"][0]["source"] = [f"<!-- {marker} -->\n"] + nb["cells"][0]["source"]
    return json.dumps(nb).encode()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("collect") / "course")
    run([BIN / "nbgrader", "generate_assignment", "transformers", "--force"], cwd=course)
    return course


def collect(course, files: dict[str, bytes], name: str):
    archive = course / "downloaded" / "transformers" / "archive"
    if archive.parent.exists():
        import shutil

        shutil.rmtree(archive.parent)
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / name, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return run([BIN / "nbgrader", "zip_collect", "transformers", "--force"], cwd=course)


def submitted(course, student: str) -> dict[str, str]:
    folder = course / "submitted" / student / "transformers"
    return {p.name: p.read_text() for p in folder.iterdir()} if folder.is_dir() else {}


def test_names_are_parsed_as_the_platforms_write_them():
    assert parse("/x/lovelaceada_LATE_1234_998877_transformers-2.ipynb") == {
        "platform": "Canvas", "student_id": "1234", "late": True, "file_id": "transformers.ipynb", "order": (2, 998877)}
    assert parse("/x/turingalan_42_7_transformers.ipynb")["student_id"] == "42"
    moodle = parse("/x/Ada Lovelace_356_assignsubmission_file_/transformers.ipynb")
    assert moodle["platform"] == "Moodle" and moodle["student_id"] == "356"
    assert parse("/x/transformers.ipynb") is None


def test_a_canvas_download(course):
    nb = lambda marker: notebook_bytes(course, marker)  # noqa: E731
    proc = collect(course, {
        "lovelaceada_1001_5001_transformers.ipynb": nb("ada first upload"),
        "lovelaceada_1001_5002_transformers-1.ipynb": nb("ada second upload"),
        "turingalan_LATE_1002_5003_transformers.ipynb": nb("alan late"),
        "hopper grace_1003_5004_transformers (final).ipynb": nb("grace renamed"),
        "hoppergrace_1003_5005_notes.pdf": b"%PDF-1.4 notes",
    }, "submissions.zip")
    log = proc.stdout + proc.stderr
    assert "ada second upload" in submitted(course, "1001")["transformers.ipynb"]
    assert "older upload of transformers.ipynb" in log and "lovelaceada_1001_5001_transformers.ipynb" in log
    assert "alan late" in submitted(course, "1002")["transformers.ipynb"]
    assert "student 1002 (Canvas): Canvas marked this submission LATE" in log
    assert "grace renamed" in submitted(course, "1003")["transformers (final).ipynb"]
    assert "Invalid submission notebook name 'transformers (final).ipynb'" in log
    assert "student 1003 (Canvas): 'hoppergrace_1003_5005_notes.pdf' is not a notebook" in log
    extracted = {p.name for p in (course / "downloaded" / "transformers" / "extracted").rglob("*") if p.is_file()}
    assert {"hoppergrace_1003_5005_notes.pdf", "lovelaceada_1001_5001_transformers.ipynb"} <= extracted, "kept"
    # Pre-flight then finds the renamed notebook and grades it under the right name.
    pre = run([BIN / "python", "-m", "coursekit", "preflight", "transformers"], cwd=course, check=False)
    checked = course / "preflight" / "submitted" / "1003" / "transformers" / "transformers.ipynb"
    assert checked.exists() and "grace renamed" in checked.read_text(), pre.stdout + pre.stderr


def test_a_moodle_download(course):
    proc = collect(course, {
        "Ada Lovelace_2001_assignsubmission_file_/transformers.ipynb": notebook_bytes(course, "moodle ada"),
        "Alan Turing_2002_assignsubmission_file_/transformers.ipynb": notebook_bytes(course, "moodle alan"),
        "Alan Turing_2002_assignsubmission_file_/scratch.txt": b"notes",
        "Grace Hopper_2003_assignsubmission_onlinetext_/onlinetext.html": b"<p>hi</p>",
    }, "moodle.zip")
    log = proc.stdout + proc.stderr
    assert "moodle ada" in submitted(course, "2001")["transformers.ipynb"]
    assert "moodle alan" in submitted(course, "2002")["transformers.ipynb"]
    assert "student 2002 (Moodle): 'scratch.txt' is not a notebook" in log
    assert "not a Canvas or Moodle submission file name" in log and "onlinetext.html" in log


def test_grade_files_for_canvas_and_moodle(course, tmp_path):
    import shutil

    shutil.rmtree(course / "submitted", ignore_errors=True)  # the downloads collected above: not graded here
    hw = Course.load(course).assignment("transformers")
    for sub in (Submission("3001", solved="all"), Submission("3002", solved=())):
        sub.write(hw)
    run([BIN / "nbgrader", "db", "student", "add", "3001", "--first-name", "Ada", "--last-name", "Lovelace",
         "--email", "ada@example.org"], cwd=course)
    run([BIN / "nbgrader", "autograde", "transformers"], cwd=course, timeout=900)
    canvas = run([BIN / "nbgrader", "export", "--exporter=coursekit.export.CanvasCsvExport",
                  f"--to={tmp_path / 'canvas.csv'}"], cwd=course)
    moodle = run([BIN / "nbgrader", "export", "--exporter=coursekit.export.MoodleWorksheetExport",
                  f"--to={tmp_path / 'moodle.csv'}"], cwd=course)
    plain = run([BIN / "nbgrader", "export", f"--to={tmp_path / 'grades.csv'}"], cwd=course)
    grades = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "grades.csv"))}
    rows = list(csv.reader(open(tmp_path / "canvas.csv")))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "transformers"]
    assert rows[1][0] == "Points Possible" and float(rows[1][5]) == float(grades["3001"]["max_score"])
    by_id = {r[1]: r for r in rows[2:]}
    assert by_id["3001"][0] == "Lovelace, Ada" and float(by_id["3001"][5]) == float(grades["3001"]["score"]) > 0
    assert float(by_id["3002"][5]) == float(grades["3002"]["score"]) == 0
    sheet = {r["Identifier"]: r for r in csv.DictReader(open(tmp_path / "moodle.csv"))}
    assert sheet["Participant 3001"]["Full name"] == "Ada Lovelace"
    assert float(sheet["Participant 3001"]["Grade"]) == float(grades["3001"]["score"])
    assert float(sheet["Participant 3001"]["Maximum Grade"]) == float(grades["3001"]["max_score"])
    for proc in (canvas, moodle, plain):  # written answers are still waiting for a grader: said by name
        assert "not graded yet count as 0" in proc.stderr and "3001:" in proc.stderr
