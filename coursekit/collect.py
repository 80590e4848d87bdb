"""Collecting from a learning platform: Canvas and Moodle downloads for ``nbgrader zip_collect``
(``c.ZipCollectApp.collector_plugin = "coursekit.collect.PlatformCollector"`` in ``nbgrader_config.py``).
 Put the platform's
"download all submissions" zip into ``downloaded/<assignment>/archive/`` and run ``nbgrader zip_collect
<assignment>``. Each file's student and notebook are read from the platform's naming:

* Canvas: ``<lastfirst>[_LATE]_<userid>_<submissionid>_<original name>``; Canvas adds ``-1``, ``-2`` … to the
  original name when a student uploads again. The student id is the Canvas user id.
* Moodle: a folder ``<Full Name>_<participant id>_assignsubmission_file_`` holding the uploaded files. The student
  id is the Moodle participant id.

Of several uploads of the same notebook by one student, the last one (highest Canvas suffix, then highest submission
id) is collected; the others are named in a warning. A file that is not a notebook is skipped with a warning naming
the student. A notebook with another name is collected under that name with a warning (pre-flight then finds the
assignment in it). Canvas's LATE flag is reported by student (Canvas gives no time, so nbgrader cannot apply its own
late penalty). Nothing is deleted: every file stays in ``downloaded/<assignment>/extracted/``.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from nbgrader.plugins import FileNameCollectorPlugin

CANVAS = re.compile(r"(?P<name>[^_/]+?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<submission>\d+)_(?P<original>.+)$")
MOODLE = re.compile(r"(?P<name>.+)_(?P<user>\d+)_assignsubmission_file_?$")
UPLOAD_AGAIN = re.compile(r"-(\d+)(?=\.[^.]+$)")  # Canvas: "transformers-1.ipynb" is a re-upload


def parse(path: str) -> dict | None:
    """{"student_id", "file_id", "platform", "late", "order"} from a Canvas or Moodle file path, or None."""
    file = Path(path)
    moodle = MOODLE.match(file.parent.name)
    if moodle:
        return {"platform": "Moodle", "student_id": moodle["user"], "file_id": file.name, "late": False,
                "order": (0, 0)}
    canvas = CANVAS.match(file.name)
    if canvas:
        again = UPLOAD_AGAIN.search(canvas["original"])
        return {"platform": "Canvas", "student_id": canvas["user"], "late": bool(canvas["late"]),
                "file_id": UPLOAD_AGAIN.sub("", canvas["original"]),
                "order": (int(again.group(1)) if again else 0, int(canvas["submission"]))}
    return None


class PlatformCollector(FileNameCollectorPlugin):
    """zip_collect's file-name collector for Canvas and Moodle downloads (no regular expression to write)."""

    def collect(self, submitted_file: str) -> dict | None:
        info = parse(submitted_file)
        if info is None:
            self.log.warning("not a Canvas or Moodle submission file name, skipped (kept in extracted/): %s",
                             submitted_file)
            return None
        who = f"student {info['student_id']} ({info['platform']})"
        if Path(submitted_file).suffix not in self.valid_ext:
            self.log.warning("%s: %r is not a notebook, skipped (kept in extracted/)", who, Path(submitted_file).name)
            return None
        newer = [other for other in self._uploads(submitted_file)
                 if other["student_id"] == info["student_id"] and other["file_id"] == info["file_id"]
                 and other["order"] > info["order"]]
        if newer:
            self.log.warning("%s: %r is an older upload of %s, skipped (kept in extracted/)", who,
                             Path(submitted_file).name, info["file_id"])
            return None
        if info["late"]:
            self.log.warning("%s: Canvas marked this submission LATE (no time given: apply a penalty by hand)", who)
        return {"student_id": info["student_id"], "file_id": info["file_id"]}

    @staticmethod
    def _uploads(submitted_file: str) -> list[dict]:
        """Every parsable file next to this one (Canvas puts a whole download in one folder)."""
        folder = os.path.dirname(submitted_file)
        return [info for name in os.listdir(folder) if (info := parse(os.path.join(folder, name)))]
