"""A small fix to the HTML assets of the Jupyter Book 1.x stack, found by tests/test_site_browser.py.

Sphinx 7.4 re-adds inline scripts registered after ``Builder.init()`` (sphinx-thebe's
``const THEBE_JS_URL = ...``, sphinx-togglebutton's selector) a second time, once as ``_JavaScript(None)``
and once as ``_JavaScript('')``. The second ``const`` is a SyntaxError in every page's console
("Identifier 'THEBE_JS_URL' has already been declared"). We drop exact duplicates before rendering.

Loaded through ``sphinx: local_extensions`` in ``_config.yml``.
"""
from __future__ import annotations


def _dedupe(assets: list) -> list:
    seen, kept = set(), []
    for asset in assets:
        filename = getattr(asset, "filename", str(asset)) or ""
        attributes = getattr(asset, "attributes", {}) or {}
        key = (filename, tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(asset)
    return kept


def _dedupe_page_assets(app, pagename, templatename, context, doctree):
    for key in ("script_files", "css_files"):
        if isinstance(context.get(key), list):
            context[key][:] = _dedupe(context[key])


def setup(app):
    # Late priority: after every extension has added its page assets.
    app.connect("html-page-context", _dedupe_page_assets, priority=990)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
