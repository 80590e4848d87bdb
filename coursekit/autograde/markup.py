"""Student-written markup made inert in graded notebooks: the formgrader renders them as HTML in your browser.

nbgrader's formgrader renders a submission's markdown cells with ``markdown2html`` and no sanitizer, inside your own
Jupyter session (on a hub: the grading service, with the grader's rights). A written answer holding
``<img src=x onerror=...>`` would run its script there when you open the submission, and could change grades or read
the hidden tests. ``coursekit.autograde.outputs.PassiveOutputs`` already drops active outputs; this preprocessor does the same
for what the student typed: every markdown cell nbgrader did not restore from the gradebook (locked cells are your
own text) gets each HTML tag opener ``<`` written as the entity ``&lt;``, so the markup shows as text, and raw cells
lose the format that would make the page include them verbatim. Autograded copies only: ``submitted/`` is untouched.
"""
from __future__ import annotations

import re

from nbgrader.preprocessors import NbGraderPreprocessor

TAG = re.compile(r"<(?=[A-Za-z/!?])")


class InertMarkup(NbGraderPreprocessor):
    """Escape HTML tags in student-editable markdown cells; strip raw cells' output format."""

    def preprocess_cell(self, cell, resources, index):
        locked = cell.metadata.get("nbgrader", {}).get("locked", False)
        if cell.cell_type == "markdown" and not locked and TAG.search(cell.source):
            cell.source = TAG.sub("&lt;", cell.source)
        elif cell.cell_type == "raw":
            for key in ("format", "raw_mimetype"):
                cell.metadata.pop(key, None)
        return cell, resources
