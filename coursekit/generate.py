"""``CheckPlan``: ``nbgrader generate_assignment``'s first step, for what grading will need of the source.

Wired first in ``c.GenerateAssignment.preprocessors`` (``nbgrader_config.py``), before nbgrader's own steps, on the
source notebook with its solutions:

1. **The plan must be sound** (``coursekit.checker.plan``): every name a test cell uses is a builtin, defined by a
   read-only cell or an earlier test cell, or an answer a solution cell declares; a read-only cell uses no answer and
   defines none. Otherwise generation stops with the notebook, the cell and the names: the instructor hears of it
   now, never a student at grading.
2. **The solution's grading time** is measured (``coursekit.autograde.budget``) when the notebook's code changed
   since it was last measured, and kept in ``instructor/<id>/budget.json``: each submission's time budget
   is a multiple of it.
"""
from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool

from . import CourseKitError


class PlanProblem(CourseKitError):
    """A test the checker could not run as written."""


class CheckPlan(NbGraderPreprocessor):
    measure = Bool(True, help="Measure the solution's grading time when the notebook's code changed (the time "
                              "budget of each submission is a multiple of it: c.GradingSandbox.budget_factor).").tag(
        config=True)

    def preprocess(self, nb, resources):
        from .autograde import budget
        from .checker.plan import Plan

        info = resources.get("nbgrader", {})
        name = f"{info.get('assignment', '?')}/{info.get('notebook', '?')}.ipynb"
        problems = Plan.from_notebook(nb, info.get("notebook", "")).problems()
        if problems:
            raise PlanProblem(f"{name}: the checker could not run these cells as written (a test reaches the "
                              f"student's kernel only through the names the solution cells define; everything else "
                              f"must come from a read-only cell):\n  - " + "\n  - ".join(problems))
        if self.measure and info.get("assignment") and info.get("notebook"):
            source = budget.source_notebook(self.config, info["assignment"], info["notebook"])
            kept = budget.budget_file(self.config, info["assignment"])
            if source.exists() and budget.measured(source, kept) is None:
                import nbformat

                self.log.info("%s: measuring the solution's grading time (its code changed)", name)
                solved = nbformat.reads(nbformat.writes(nb), as_version=4)
                seconds = budget.measure(solved, source.parent)
                path = budget.record(source, kept, nb, seconds)
                self.log.info("%s: the solution grades in %.1f s (%s)", name, seconds, path)
        return nb, resources
