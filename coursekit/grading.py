"""nbgrader autograde preprocessors, one job each (configured in ``nbgrader_config.py``; no fork of nbgrader).

``Autograde.autograde_preprocessors`` is nbgrader's stock list with ``GradingExecute`` in place of ``Execute`` and
three small additions after it::

    GradingExecute → RemoveLinks → IgnorePattern → ClearMetadataPreprocessor → LimitOutput → TruncateOutput
    → PassiveOutputs → SaveAutoGrades → AssignLatePenalties → CheckCellMetadata

``GradingExecute``  nbgrader's ``Execute`` that survives a kernel that dies mid-notebook and names, in the log, the
                    student and cell of every timeout, memory error or guard repair.
``RemoveLinks``     after the kernel is gone, removes symbolic links and special files a submission left in its
                    working copy, before nbgrader (with your privileges) writes the graded notebook there.
``TruncateOutput``  caps each stream output's characters (nbgrader's ``LimitOutput`` counts lines only).
``PassiveOutputs``  keeps only passive output types (text, PNG, JPEG): no HTML, JavaScript, SVG or Markdown of a
                    submission ever runs in the formgrader, in your browser, with your Jupyter session.
"""
from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from nbclient.exceptions import DeadKernelError
from nbconvert.preprocessors import Preprocessor
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer, List, Unicode

from .regions import nbgrader_meta


class CoursePreprocessor(Preprocessor):
    """A preprocessor that runs when listed (nbconvert's own are off by default, nbgrader's on)."""

    enabled = Bool(True, help="Whether to use this preprocessor.").tag(config=True)


class KnownNoise(logging.Filter):
    """Drops two log lines nbgrader prints on every run that ask nothing of an instructor:

    * "Attribute 'checksum' for cell ... has changed!" fires for every test cell of every submission (the release
      lacks the hidden tests the gradebook's checksum includes); pre-flight reports the test cells a student really
      edited;
    * "Config option `display_data_priority` not recognized by ..." comes from nbconvert's HTML exporter setting a
      trait that nbgrader's preprocessors redeclare without ``config=True``.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ((message.startswith("Attribute 'checksum' for cell") and "has changed!" in message)
                    or message.startswith("Config option `display_data_priority` not recognized"))


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"])


def printable(text: str) -> str:
    """``text`` with control characters (terminal escape sequences) made visible, safe for a log or a terminal."""
    return "".join(ch if ch.isprintable() or ch in "\n\t" else f"\\x{ord(ch):02x}" for ch in text)


def who(resources, index, cell=None) -> str:
    """'student S, N.ipynb, cell I (grade id)': how every log line names a submission's cell."""
    info = (resources or {}).get("nbgrader", {})
    gid = nbgrader_meta(cell or {}).get("grade_id")
    return f"student {info.get('student', '?')}, {info.get('notebook', '?')}.ipynb, cell {index}" + (
        f" ({gid})" if gid else "")


class GradingExecute(Execute):
    """nbgrader's Execute, surviving a kernel that dies mid-notebook, and logging what went wrong by student/cell.

    A kernel that dies (``os._exit``, a crash, the CPU cap) aborts a student's whole autograde in stock nbgrader and
    leaves no grades; here the cell where it died gets an error output saying so and every later code cell the error
    "not run", so the cells that passed keep their points and the later test cells score zero.
    """

    NOTEWORTHY = {
        "CellTimeoutError": "ran longer than the per-cell time limit (interrupted)",
        "MemoryError": "ran out of memory (the grading kernel's memory cap)",
        "GradingGuardError": "changed the tests' checking machinery while running (undone; the cell does not count)",
        "KernelDied": "the kernel died",
    }

    def preprocess(self, nb, resources=None, km=None):
        self._died_at = None
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if self._died_at is not None:
            if cell.cell_type == "code":
                cell.outputs = [_error("KernelDied", f"not run: the kernel died in an earlier cell "
                                                     f"(cell {self._died_at})")]
                cell.execution_count = None
            return cell, resources
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._died_at = index
            cell.outputs.append(_error("KernelDied", "the kernel died while running this cell (os._exit, a crash "
                                                     "or the grading kernel's CPU/memory limit)"))
            self.log.error("%s: the grading kernel died in this cell; the later cells are marked 'not run' and "
                           "score zero", who(resources, index, cell))
            return cell, resources
        for output in cell.get("outputs", []):
            ename = output.get("ename", "")
            if ename == "RuntimeError" and "allocate" in output.get("evalue", ""):
                ename = "MemoryError"  # PyTorch's allocator reports the memory cap as a RuntimeError
            if output.get("output_type") == "error" and ename in self.NOTEWORTHY:
                self.log.warning("%s: %s", who(resources, index, cell), self.NOTEWORTHY[ename])
            elif output.get("output_type") == "stream" and "[grading guard]" in output.get("text", ""):
                self.log.warning("%s: %s", who(resources, index, cell), printable(
                    output["text"].split("[grading guard]", 1)[1].strip().split("\n")[0][:300]))
        return cell, resources


class RemoveLinks(CoursePreprocessor):
    """Remove symbolic links and special files from the submission's working copy once its kernel is gone.

    The sandbox lets a submission write only in its working copy, but nbgrader then writes the graded notebook
    there with your privileges: a link named like the notebook would make nbgrader overwrite whatever it points to.
    """

    def preprocess(self, nb, resources):
        folder = (resources or {}).get("metadata", {}).get("path")
        if folder and os.path.isdir(folder):
            for parent, dirs, files in os.walk(folder, topdown=False):  # never follows links
                for name in dirs + files:
                    path = Path(parent, name)
                    mode = path.lstat().st_mode
                    if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                        path.unlink()
                        self.log.warning("%s: removed %s from the working copy (a %s)", who(resources, "-"),
                                         path.relative_to(folder), "symbolic link" if stat.S_ISLNK(mode)
                                         else "special file")
        return nb, resources


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
