"""The prose's numbers on the site: the `{eval}` role shows the value a chapter glued under that name.

A chapter hands a number to its text with ``course_lib.glue(name, value, spec)`` and the text says
``{eval}`name```. The same text has to read right in two places:

* in JupyterLab (Binder), jupyterlab-myst renders the markdown cells and evaluates ``{eval}`` roles in the running
  kernel: ``glue`` also sets ``name`` as a variable of the notebook, so the learner sees the number of their own run;
* on the site, no kernel runs while a page is rendered (chapters come executed from the jupyter-cache), so myst-nb's
  own ``eval`` role, which asks a live kernel and works only with ``nb_execution_mode: inline``, cannot answer. This
  extension registers ``eval`` again (Sphinx's ``add_role`` with ``override=True``, after myst-nb's setup) as
  myst-nb's ``glue`` role, found through docutils' public role lookup: it pastes the output glued under that name.
  An unknown name is myst-nb's usual glue warning, which fails the ``-W`` build.

``tests/content/test_build.py`` builds a small book with this extension and checks a glued number, a formatted value and a
missing name (the canary for the two packages' interfaces this relies on).
"""
from __future__ import annotations

from docutils.parsers.rst import roles


def eval_as_glue(name, rawtext, text, lineno, inliner, options=None, content=()):
    glue_role, messages = roles.role("glue", inliner.language, lineno, inliner.reporter)
    if glue_role is None:  # myst-nb no longer registers `glue`: say so instead of rendering nothing
        message = inliner.reporter.error("the {eval} role needs myst-nb's `glue` role, which is not registered",
                                         line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], messages + [message]
    pasted, more = glue_role("glue", rawtext, text, lineno, inliner, options or {}, content)
    return pasted, messages + more


def setup(app):
    app.setup_extension("myst_nb")  # its setup registers its own `eval`; ours must come after it
    app.add_role("eval", eval_as_glue, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
