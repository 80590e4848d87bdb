"""What the tooling writes to an instructor's log: one line per problem, naming the student and the cell, safe to print.

``KnownNoise`` is wired in ``nbgrader_config.py`` (``c.Application.logging_config``); ``who`` and ``printable`` are used
by every plugin that logs about a submission.
"""
from __future__ import annotations

import logging

from .notebook import grade_id


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


def printable(text: str) -> str:
    """``text`` with control characters (terminal escape sequences) made visible, safe for a log or a terminal."""
    return "".join(ch if ch.isprintable() or ch in "\n\t" else f"\\x{ord(ch):02x}" for ch in text)


def who(resources, index, cell=None) -> str:
    """'student S, N.ipynb, cell I (grade id)': how every log line names a submission's cell."""
    info = (resources or {}).get("nbgrader", {})
    gid = grade_id(cell or {})
    return f"student {info.get('student', '?')}, {info.get('notebook', '?')}.ipynb, cell {index}" + (
        f" ({gid})" if gid else "")
