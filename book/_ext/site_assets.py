"""What each page of the site loads, set in one place. Loaded through ``sphinx: local_extensions`` in _config.yml.

1. **Math rendered at build time.** ``sphinxcontrib-katex`` (``katex_prerender``) turns every formula into HTML
   through Node and the npm ``katex`` package pinned in package.json (``npm ci`` installs it into node_modules/).
   This extension points sphinxcontrib-katex at that package, and serves its stylesheet and fonts (woff2 only,
   which every browser we support reads) from ``_static/katex/`` instead of a CDN: the reader's browser runs no
   math script at all, and the site works offline.
2. **Only what a page uses.** Pages without math do not load the math stylesheets.
3. **Duplicates dropped.** Sphinx 7.4 re-adds inline scripts registered after ``Builder.init()`` (sphinx-thebe's
   ``const THEBE_JS_URL = ...``, sphinx-togglebutton's selector) a second time, once as ``_JavaScript(None)``
   and once as ``_JavaScript('')``. The second ``const`` is a SyntaxError in every page's console
   ("Identifier 'THEBE_JS_URL' has already been declared"). We drop exact duplicates before rendering.

Everything here goes through Sphinx's documented events (``config-inited``, ``builder-inited``,
``html-page-context``, ``build-finished``) and config values; the page-context lists are restored by Sphinx after
each page, so removing an asset there affects that page only.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError

KATEX_STATIC = "katex"  # the folder in _static/ that holds KaTeX's stylesheet and fonts
KATEX_CSS = f"{KATEX_STATIC}/katex.min.css"
# sphinxcontrib-katex's own small stylesheet (equation numbers, scrolling of wide equations), and ours
# (book/_static/math.css: wide equations scroll instead of being cut off on the left)
MATH_STYLESHEETS = (KATEX_CSS, "katex-math.css", "math.css")
# In KaTeX's CSS each font is `url(fonts/X.woff2) format("woff2"),url(fonts/X.woff) format("woff"),url(...ttf)...`
OLDER_FONT_FORMATS = re.compile(r',url\(fonts/[^)]+\.(?:woff|ttf)\) format\("(?:woff|truetype)"\)')


def katex_package(confdir: str | Path) -> Path:
    """The npm ``katex`` package that ``npm ci`` installed next to the book's _config.yml."""
    package = Path(confdir) / "node_modules" / "katex"
    if not (package / "dist" / "katex.min.js").is_file():
        raise ExtensionError(f"{package} is missing: run `npm ci` in {confdir} (the site renders its math at build "
                             "time with the katex package pinned in package.json)")
    return package


def _uses_katex(app) -> bool:
    return app.config.html_math_renderer == "katex"


def _configure_katex(app, config):
    if config.html_math_renderer != "katex":
        return
    package = katex_package(app.confdir)
    # Absolute: sphinxcontrib-katex's render server require()s it (its own bundled copy would be another version).
    config.katex_js_path = str(package / "dist" / "katex.min.js")
    config.katex_css_path = KATEX_CSS


def _stage_katex_static(app):
    """KaTeX's stylesheet (reduced to woff2 sources) and woff2 fonts, in a folder added to html_static_path."""
    if not _uses_katex(app) or app.builder.format != "html":
        return
    dist = katex_package(app.confdir) / "dist"
    staging = Path(tempfile.mkdtemp(prefix="site-assets-katex-"))
    target = staging / KATEX_STATIC
    (target / "fonts").mkdir(parents=True)
    css = OLDER_FONT_FORMATS.sub("", (dist / "katex.min.css").read_text(encoding="utf-8"))
    (target / "katex.min.css").write_text(css, encoding="utf-8")
    for font in sorted((dist / "fonts").glob("*.woff2")):
        shutil.copy2(font, target / "fonts" / font.name)
    app.config.html_static_path.append(str(staging))
    app.add_css_file("math.css")
    app._site_assets_staging = staging  # noqa: SLF001 - our own attribute, removed at build-finished


def _remove_staging(app, exception):
    staging = getattr(app, "_site_assets_staging", None)
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)


def _has_math(doctree) -> bool:
    return doctree is not None and any(True for _ in doctree.findall(lambda n: isinstance(n, (nodes.math,
                                                                                              nodes.math_block))))


def _filename(asset) -> str:
    return getattr(asset, "filename", str(asset)) or ""


def _dedupe(assets: list) -> list:
    seen, kept = set(), []
    for asset in assets:
        attributes = getattr(asset, "attributes", {}) or {}
        key = (_filename(asset), tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(asset)
    return kept


def _page_assets(app, pagename, templatename, context, doctree):
    for key in ("script_files", "css_files"):
        if isinstance(context.get(key), list):
            context[key][:] = _dedupe(context[key])
    if _uses_katex(app) and not _has_math(doctree) and isinstance(context.get("css_files"), list):
        math_css = {f"_static/{name}" for name in MATH_STYLESHEETS}
        context["css_files"][:] = [css for css in context["css_files"] if _filename(css) not in math_css]


def setup(app):
    app.connect("config-inited", _configure_katex)
    app.connect("builder-inited", _stage_katex_static)
    app.connect("build-finished", _remove_staging)
    # Late priority: after every extension has added its page assets.
    app.connect("html-page-context", _page_assets, priority=990)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
