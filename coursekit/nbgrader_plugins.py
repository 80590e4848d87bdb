"""nbgrader plug-ins configured in ``nbgrader_config.py`` (no fork of nbgrader: stock classes, subclassed).

``FeedbackHidesHiddenTests``
    Upstream ``nbgrader generate_feedback`` renders the *autograded* notebook, in which the hidden tests have been
    restored, so students would see the hidden test code (jupyter/nbgrader#1363). This preprocessor runs in
    ``GenerateFeedback.preprocessors``: it removes every ``### BEGIN HIDDEN TESTS`` … ``### END HIDDEN TESTS``
    region from the cell sources (stock ``ClearHiddenTests``) and, in those same cells, shortens error tracebacks to
    their last line (``AssertionError: <message>``), because a traceback quotes the source lines around the failing
    check, which may be hidden ones. The test messages say what was checked without showing how.
"""
from __future__ import annotations

import re

from nbgrader.preprocessors import ClearHiddenTests
from traitlets import Unicode

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class FeedbackHidesHiddenTests(ClearHiddenTests):
    """Remove hidden test code from feedback: the source regions and any traceback quoting them."""

    placeholder = Unicode(
        "# (hidden tests ran here; their code is not part of the feedback)",
        help="Line left in place of a removed hidden-test region.",
    ).tag(config=True)

    def _remove_hidden_test_region(self, cell) -> bool:
        lines = cell.source.split("\n")
        start = next((i for i, line in enumerate(lines) if self.begin_test_delimeter in line), None)
        removed = super()._remove_hidden_test_region(cell)
        if removed and start is not None:
            kept = cell.source.split("\n")
            indent = re.match(r"\s*", lines[start]).group(0)
            kept.insert(start, indent + self.placeholder)
            cell.source = "\n".join(kept)
        return removed

    def preprocess_cell(self, cell, resources, cell_index):
        had_hidden = cell.cell_type == "code" and self.begin_test_delimeter in cell.source
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if had_hidden:
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    last = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
                    output["traceback"] = [
                        "\x1b[0;31m" + ANSI.sub("", last) + "\x1b[0m",
                        "(Traceback shortened: the check that failed may be one of the hidden tests.)",
                    ]
        return cell, resources
