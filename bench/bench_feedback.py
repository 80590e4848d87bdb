"""A feedback page, as grading on submit makes it: stock nbconvert ``HTMLExporter`` against the course's
``coursekit.feedback.FeedbackExporter`` (``c.GenerateFeedback.exporter_class``), side by side in one run.

    .venv/bin/python bench/bench_feedback.py [--pages 12]

Each homework's source notebook (solutions, tests, prose: what a feedback page shows, at full size) is exported with
nbgrader's feedback template, a new exporter for each page as a grading worker makes one per submission; the two
exporters take turns, page by page, so both meet the same machine. Each page's student answers differ (a comment
with the page's number in every solution cell), as they do from one student to the next. Prints CPU-seconds per
page for each and the ratio. Both pages are checked to be the same page (stock's as its own BeautifulSoup pass reads
``FeedbackExporter``'s).
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from coursekit.course import Course  # noqa: E402


def page_config(course: Course):
    """The course's configuration with what stock ``GenerateFeedback`` adds for its page (nbgrader's template)."""
    from nbgrader.converters import GenerateFeedback

    return GenerateFeedback(coursedir=course.coursedir, config=copy.deepcopy(course.config)).config


def student_page(nb, number: int):
    """The notebook as a student's page: every solution cell carries this page's own answer; every grade a score."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            cell.source += f"\n# student answer {number}" if cell.cell_type == "code" else f"\n\nAnswer {number}."
        if meta.get("grade"):
            meta["score"] = meta.get("points", 0)
    return nb


def main() -> int:
    import nbformat
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    from coursekit.feedback import FeedbackExporter

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=12, help="pages per exporter and homework (default 12)")
    args = parser.parse_args()
    course = Course.load(ROOT)
    config = page_config(course)
    resources = {"nbgrader": {"notebook": "feedback", "score": 1.0, "max_score": 1.0, "late_penalty": 0,
                              "student": "bench", "assignment": "bench"}}
    for hw in course.assignments():
        source = nbformat.read(hw.source_path, as_version=4)
        spent = {"stock HTMLExporter": 0.0, "FeedbackExporter": 0.0}
        for number in range(args.pages):
            nb = student_page(source, number)
            pages = {}
            for name, exporter in (("stock HTMLExporter", HTMLExporter), ("FeedbackExporter", FeedbackExporter)):
                start = time.process_time()
                pages[name], _ = exporter(config=config).from_notebook_node(nb, copy.deepcopy(resources))
                spent[name] += time.process_time() - start
            ours = str(BeautifulSoup(pages["FeedbackExporter"], features="html.parser"))
            if ours != pages["stock HTMLExporter"]:
                print(f"{hw.name}: page {number} differs from stock's", file=sys.stderr)
                return 1
        stock, ours = (spent[k] / args.pages for k in ("stock HTMLExporter", "FeedbackExporter"))
        print(f"{hw.name}: a feedback page ({len(source.cells)} cells), {args.pages} pages each, taking turns:")
        print(f"  stock HTMLExporter   {stock:.3f} CPU-s per page")
        print(f"  FeedbackExporter     {ours:.3f} CPU-s per page  = {ours / stock:.2f} of stock's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
