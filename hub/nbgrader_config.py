"""nbgrader configuration of every account on the course's hub (installed by `python -m coursekit hub up` into the hub
environment's etc/jupyter/, which every nbgrader run in that environment reads: students, instructor, grader).

The grader's formgrader and commands also read the course's own nbgrader_config.py (its folders, the grading sandbox,
the checker), which comes after this file and wins where both set something.
"""
import json
from pathlib import Path

from coursekit.exchange import FACTORY

c = get_config()  # noqa: F821 -- provided by traitlets when it loads this file

settings = json.loads((Path(__file__).resolve().parents[3] / "etc" / "settings.json").read_text())

# nbgrader's stock exchange, in the folder the setup made (its permissions keep students apart), for the one course.
c.Exchange.root = settings["exchange"]
c.CourseDirectory.course_id = settings["course_id"]
# Every exchange step through coursekit.exchange: names that are one plain folder name only, safe collection,
# submissions readable by their student and the grader only.
for trait, plugin in FACTORY.items():
    setattr(c.ExchangeFactory, trait, plugin)
