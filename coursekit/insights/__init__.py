"""Item analysis: what the class got wrong, from the gradebook and the checker's verdicts (never a re-run).

``data`` reads (the gradebook, the autograded notebooks' ``coursekit.check`` records, a graders' allocation),
``stats`` holds the statistics (Wilson and Fisher intervals, corrected item–total correlation, Welch), ``analysis``
turns a cohort into the report's numbers (a dict: the JSON export), ``render`` draws the page (inline SVG, no script)
and the CSV. ``python -m coursekit insights ASSIGNMENT`` writes them; the hosted course's grading service serves the
same page at ``/services/<course>/insights/`` (``server``), to the instructor and graders only.
"""
from __future__ import annotations

import json
from pathlib import Path

from .. import INSIGHTS
from . import analysis, data, render

GRADERS = f"{INSIGHTS}/graders.csv"  # the course's allocation of graders (student,grader), used when none is given


def formgrader_link(base: str):
    """The formgrader's page of a submitted notebook: ``<base>/submissions/<submitted notebook id>/``. ``base`` is an
    http(s) address or a path on the same site (anything else, e.g. ``javascript:``, is refused)."""
    from urllib.parse import quote, urlsplit

    from .. import CourseKitError

    scheme = urlsplit(base).scheme
    if scheme not in ("http", "https") and not (not scheme and base.startswith("/")):
        raise CourseKitError(f"the formgrader's address {base[:100]!r} is not an http(s) address or a path")
    base = base.rstrip("/")

    def link(cohort, student: str, notebook: str) -> str:
        nb_id = cohort.notebook_ids.get(student, {}).get(notebook)
        return f"{base}/submissions/{quote(str(nb_id), safe='')}/" if nb_id else ""
    return link


def report(course, assignment: str, formgrader: str = "/formgrader", graders: Path | None = None,
           anonymise: bool = False, log=None) -> dict:
    if graders is None and (course.root / GRADERS).is_file():
        graders = course.root / GRADERS
    cohort = data.load(course, assignment, graders, log=log)
    out = analysis.analyse(cohort, formgrader_link(formgrader))
    return analysis.anonymised(out) if anonymise else out


def write(report_: dict, folder: Path) -> list[Path]:
    """``report.html``, ``items.csv`` and ``report.json`` in ``folder`` (written whole, then renamed into place)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("report.html", render.page(report_)), ("items.csv", render.items_csv(report_)),
                       ("report.json", json.dumps(report_, indent=1, default=str))):
        path = folder / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written
