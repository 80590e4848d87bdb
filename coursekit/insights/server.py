"""The item-analysis page in the hosted course's grading service, next to the formgrader.

A Jupyter server extension, enabled in the grading service only (``hosting/layout.py``, the grader's role): the
service is reachable by the instructor and graders (JupyterHub's ``access:services`` scope of the course's
``formgrade`` group) and never by a student. Pages, under the service's base URL (``/services/<course>/``):

* ``insights/``: the assignments of the gradebook, each with its submissions so far;
* ``insights/<assignment>/``: the report (``render.page``), built on request from the gradebook and the checker's
  verdicts, so it follows grading on submit; ``items.csv``, ``report.json`` and ``shared.json`` (no student id) next
  to it.

No script and no outside resource: it renders under the service's Content-Security-Policy, offline.
"""
from __future__ import annotations

import asyncio
import html
import json
import os
import re

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

NAME = re.compile(r"^(?!\.)[A-Za-z0-9_.-]{1,100}$")


def _course(handler):
    from ..course import Course

    return Course.load(handler.settings.get("coursekit_course_root") or os.getcwd())


class IndexHandler(JupyterHandler):
    @web.authenticated
    async def get(self):
        course = await asyncio.get_running_loop().run_in_executor(None, _course, self)
        names = course.assignment_names()
        with course.gradebook() as gb:
            known = {a.name: a.num_submissions for a in gb.assignments}
        rows = "".join(f"<li><a href='{html.escape(n)}/'>{html.escape(n)}</a> "
                       f"<span class='muted'>({known[n]} submissions)</span></li>"
                       for n in names if n in known)
        base = self.base_url
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta name="color-scheme" content="light dark"><title>What the class got wrong</title>
<style>body{{font:15px/1.5 system-ui,sans-serif;max-width:50rem;margin:2rem auto;padding:0 1rem}}
.muted{{opacity:.75}}</style></head><body><main><h1>What the class got wrong</h1>
<p><a href="{html.escape(url_path_join(base, 'formgrader'))}">Back to the formgrader</a></p>
<ul>{rows or '<li>No assignment in the gradebook yet.</li>'}</ul></main></body></html>""")


class ReportHandler(JupyterHandler):
    @web.authenticated
    async def get(self, assignment: str, kind: str | None):
        from .. import CourseKitError
        from . import analysis, render, report

        if not NAME.match(assignment):
            raise web.HTTPError(404)
        if kind is None and not self.request.path.endswith("/"):  # the page's relative links need its folder
            return self.redirect(self.request.path + "/")
        link = url_path_join(self.base_url, "formgrader")

        def build():
            course = _course(self)
            if assignment not in course.assignment_names():
                raise web.HTTPError(404, f"no assignment {assignment!r}")
            return report(course, assignment, formgrader=link, log=self.log.warning)
        try:
            out = await asyncio.get_running_loop().run_in_executor(None, build)
        except CourseKitError as error:
            raise web.HTTPError(409, str(error)) from None
        if kind == "items.csv":
            self.set_header("Content-Type", "text/csv; charset=utf-8")
            self.set_header("Content-Disposition", f'attachment; filename="{assignment}-items.csv"')
            return self.finish(render.items_csv(out))
        if kind in ("report.json", "shared.json"):
            self.set_header("Content-Type", "application/json")
            return self.finish(json.dumps(analysis.anonymised(out) if kind == "shared.json" else out, default=str))
        page = render.page(out)
        nav = (f"<nav><a href='{html.escape(link)}'>Formgrader</a> · <a href='../'>All assignments</a> · "
               "<a href='items.csv'>items.csv</a> · <a href='report.json'>report.json</a> · "
               "<a href='shared.json'>shared.json (no student ids)</a></nav>")
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(page.replace("<main>", f"<main>{nav}", 1))


def _jupyter_server_extension_points():
    return [{"module": "coursekit.insights.server"}]


def _load_jupyter_server_extension(serverapp):
    web_app = serverapp.web_app
    base = web_app.settings["base_url"]
    web_app.settings.setdefault("coursekit_course_root", serverapp.root_dir)
    web_app.add_handlers(".*$", [
        (url_path_join(base, "insights/?"), IndexHandler),
        (url_path_join(base, r"insights/([^/]+)/?(items\.csv|report\.json|shared\.json)?"), ReportHandler),
    ])
    serverapp.log.info("coursekit: item analysis at %sinsights/", base)
