"""Canvas and Moodle downloads reach submitted/ through stock `nbgrader zip_collect` with the course's configuration
(coursekit/collect.py, coursekit/export.py): resubmissions, a wrong notebook name, a non-notebook file and a late flag each get a clear
message, and nothing is lost. Grade files for both platforms come from `nbgrader export --exporter=...`."""
from __future__ import annotations

import csv
import json
import zipfile

import pytest

from conftest import ASSIGNMENT, BIN, copy_course, run
from coursekit.collect import parse
from coursekit.course import Course
from coursekit.planting import Submission

pytestmark = pytest.mark.slow
NAME = ASSIGNMENT  # its notebook has the same name (transformers/transformers.ipynb)


def notebook_bytes(course, marker: str) -> bytes:
    """The release notebook with a marker in its first cell, so each collected file can be recognised."""
    nb = json.loads((course / "release" / NAME / f"{NAME}.ipynb").read_text())
    nb["cells"][0]["source"] = [f"<!-- {marker} -->\n"] + nb["cells"][0]["source"]
    return json.dumps(nb).encode()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("collect") / "course")
    run([BIN / "nbgrader", "generate_assignment", NAME, "--force"], cwd=course)
    return course


def collect(course, files: dict[str, bytes], name: str):
    archive = course / "downloaded" / NAME / "archive"
    if archive.parent.exists():
        import shutil

        shutil.rmtree(archive.parent)
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / name, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return run([BIN / "nbgrader", "zip_collect", NAME, "--force"], cwd=course)


def submitted(course, student: str) -> dict[str, str]:
    folder = course / "submitted" / student / NAME
    return {p.name: p.read_text() for p in folder.iterdir()} if folder.is_dir() else {}


def test_names_are_parsed_as_the_platforms_write_them():
    assert parse(f"/x/lovelaceada_LATE_1234_998877_{NAME}-2.ipynb") == {
        "platform": "Canvas", "student_id": "1234", "late": True, "file_id": f"{NAME}.ipynb", "order": (2, 998877)}
    assert parse(f"/x/turingalan_42_7_{NAME}.ipynb")["student_id"] == "42"
    moodle = parse(f"/x/Ada Lovelace_356_assignsubmission_file_/{NAME}.ipynb")
    assert moodle["platform"] == "Moodle" and moodle["student_id"] == "356"
    assert parse(f"/x/{NAME}.ipynb") is None


def test_a_canvas_download(course):
    nb = lambda marker: notebook_bytes(course, marker)  # noqa: E731
    proc = collect(course, {
        f"lovelaceada_1001_5001_{NAME}.ipynb": nb("ada first upload"),
        f"lovelaceada_1001_5002_{NAME}-1.ipynb": nb("ada second upload"),
        f"turingalan_LATE_1002_5003_{NAME}.ipynb": nb("alan late"),
        f"hopper grace_1003_5004_{NAME} (final).ipynb": nb("grace renamed"),
        "hoppergrace_1003_5005_notes.pdf": b"%PDF-1.4 notes",
    }, "submissions.zip")
    log = proc.stdout + proc.stderr
    assert "ada second upload" in submitted(course, "1001")[f"{NAME}.ipynb"]
    assert f"older upload of {NAME}.ipynb" in log and f"lovelaceada_1001_5001_{NAME}.ipynb" in log
    assert "alan late" in submitted(course, "1002")[f"{NAME}.ipynb"]
    assert "student 1002 (Canvas): Canvas marked this submission LATE" in log
    assert "grace renamed" in submitted(course, "1003")[f"{NAME} (final).ipynb"]
    assert f"Invalid submission notebook name '{NAME} (final).ipynb'" in log
    assert "student 1003 (Canvas): 'hoppergrace_1003_5005_notes.pdf' is not a notebook" in log
    extracted = {p.name for p in (course / "downloaded" / NAME / "extracted").rglob("*") if p.is_file()}
    assert {"hoppergrace_1003_5005_notes.pdf", f"lovelaceada_1001_5001_{NAME}.ipynb"} <= extracted, "kept"
    # Pre-flight then finds the renamed notebook and grades it under the right name.
    pre = run([BIN / "python", "-m", "coursekit", "preflight", NAME], cwd=course, check=False)
    checked = course / "preflight" / "submitted" / "1003" / NAME / f"{NAME}.ipynb"
    assert checked.exists() and "grace renamed" in checked.read_text(), pre.stdout + pre.stderr


def test_a_moodle_download(course):
    proc = collect(course, {
        f"Ada Lovelace_2001_assignsubmission_file_/{NAME}.ipynb": notebook_bytes(course, "moodle ada"),
        f"Alan Turing_2002_assignsubmission_file_/{NAME}.ipynb": notebook_bytes(course, "moodle alan"),
        "Alan Turing_2002_assignsubmission_file_/scratch.txt": b"notes",
        "Grace Hopper_2003_assignsubmission_onlinetext_/onlinetext.html": b"<p>hi</p>",
    }, "moodle.zip")
    log = proc.stdout + proc.stderr
    assert "moodle ada" in submitted(course, "2001")[f"{NAME}.ipynb"]
    assert "moodle alan" in submitted(course, "2002")[f"{NAME}.ipynb"]
    assert "student 2002 (Moodle): 'scratch.txt' is not a notebook" in log
    assert "not a Canvas or Moodle submission file name" in log and "onlinetext.html" in log


def test_grade_files_for_canvas_and_moodle(course, tmp_path):
    import shutil

    shutil.rmtree(course / "submitted", ignore_errors=True)  # the downloads collected above: not graded here
    hw = Course.load(course).assignment(NAME)
    for sub in (Submission("3001", solved="all"), Submission("3002", solved=())):
        sub.write(hw)
    run([BIN / "nbgrader", "db", "student", "add", "3001", "--first-name", "Ada", "--last-name", "Lovelace",
         "--email", "ada@example.org"], cwd=course)
    run([BIN / "nbgrader", "autograde", NAME], cwd=course, timeout=900)
    canvas = run([BIN / "nbgrader", "export", "--exporter=coursekit.export.CanvasCsvExport",
                  f"--to={tmp_path / 'canvas.csv'}"], cwd=course)
    moodle = run([BIN / "nbgrader", "export", "--exporter=coursekit.export.MoodleWorksheetExport",
                  f"--to={tmp_path / 'moodle.csv'}"], cwd=course)
    plain = run([BIN / "nbgrader", "export", f"--to={tmp_path / 'grades.csv'}"], cwd=course)
    grades = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "grades.csv"))}
    rows = list(csv.reader(open(tmp_path / "canvas.csv")))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", NAME]
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
