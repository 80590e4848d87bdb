"""Autograde steps after execution that bound what a graded notebook keeps (``nbgrader_config.py``).

``TruncateOutput``  caps each stream output's characters (nbgrader's ``LimitOutput`` counts lines only).
``PassiveOutputs``  keeps only passive output types (text, PNG, JPEG): no HTML, JavaScript, SVG or Markdown of a
                    submission ever runs in the formgrader, in your browser, with your Jupyter session.
"""
from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Integer, List, Unicode


class CoursePreprocessor(Preprocessor):
    """A preprocessor that runs when listed (nbconvert's own are off by default, nbgrader's on)."""

    enabled = Bool(True, help="Whether to use this preprocessor.").tag(config=True)


class TruncateOutput(CoursePreprocessor):
    """Keep the first ``max_chars`` characters of each stream output (a multi-megabyte line is one line)."""

    max_chars = Integer(100_000, help="Characters kept of each stream output of a graded notebook; 0: no limit.").tag(
        config=True)

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            text = output.get("text", "") if output.get("output_type") == "stream" else ""
            if len(text) > self.max_chars > 0:
                output["text"] = (text[:self.max_chars] + f"\n... [{len(text) - self.max_chars:,} more characters "
                                  f"dropped by the grader]\n")
        return cell, resources


class PassiveOutputs(CoursePreprocessor):
    """Drop every output representation a browser would run or render as markup (HTML, JavaScript, SVG, Markdown,
    widgets): the formgrader shows graded notebooks in your Jupyter session."""

    keep = List(Unicode(), ["text/plain", "image/png", "image/jpeg"],
                help="MIME types of display outputs kept in graded notebooks.").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        kept = []
        for output in cell.get("outputs", []):
            if output.get("output_type") in ("display_data", "execute_result"):
                output["data"] = {k: v for k, v in output.get("data", {}).items() if k in self.keep}
                output.pop("metadata", None)
                output["metadata"] = {}
                if not output["data"]:
                    continue
            kept.append(output)
        if cell.cell_type == "code":
            cell.outputs = kept
        return cell, resources
