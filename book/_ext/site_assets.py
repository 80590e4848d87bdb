"""What each page of the site loads, set in one place. Loaded through ``sphinx: local_extensions`` in _config.yml.

1. **Math rendered at build time.** ``sphinxcontrib-katex`` (``katex_prerender``) turns every formula into HTML
   through Node and the npm ``katex`` package pinned in package.json (``npm ci`` installs it into node_modules/).
   This extension points sphinxcontrib-katex at that package, and serves its stylesheet and fonts (woff2 only,
   which every browser we support reads) from ``_static/katex/`` instead of a CDN: the reader's browser runs no
   math script at all, and the site works offline.
2. **Icons without Font Awesome's script.** book/_templates/layout.html drops the theme's fontawesome.js (every icon of Font Awesome);
   the theme's stylesheet draws the same icons (``<i class="fa-solid fa-rocket">``) with Font Awesome's webfont.
   Here we serve that font reduced to the glyphs the built pages name, and those the stylesheets draw themselves
   (admonition icons, ...): a small fraction of the whole font. ``icons.css`` re-declares each of the theme's Font
   Awesome faces with a subset made by fontTools from the theme's own font, and the theme's stylesheet keeps the
   per-icon rules of those icons only. (Icons that the theme's scripts insert, e.g. the close button of an
   announcement banner, which this site has not, would need adding.)
3. **Only what a page uses, without blocking.** Each page loads the scripts and stylesheets of the features its body
   has (``PAGE_FEATURES``: math, code blocks with copy buttons, toggles, sphinx-design, notebook cells, Thebe on
   pages with its launch button), and its scripts are deferred (``defer``: they run in order after the HTML is parsed),
   except documentation_options.js, which the inline scripts after it use. book/_templates/layout.html keeps the
   search index off pages other than search.html.
4. **Figures that do not move the page.** Raster images get their pixel size as ``width``/``height`` attributes
   (the browser reserves their box before they load) and ``loading="lazy"`` (``SizedImagesTranslator``).
5. **Duplicates dropped.** Sphinx 7.4 re-adds inline scripts registered after ``Builder.init()`` (sphinx-thebe's
   ``const THEBE_JS_URL = ...``, sphinx-togglebutton's selector) a second time, once as ``_JavaScript(None)``
   and once as ``_JavaScript('')``. The second ``const`` is a SyntaxError in every page's console
   ("Identifier 'THEBE_JS_URL' has already been declared"). We drop exact duplicates before rendering.

Everything here goes through Sphinx's documented events (``config-inited``, ``builder-inited``,
``html-page-context``, ``build-finished``) and config values; the page-context lists are restored by Sphinx after
each page, so removing an asset there affects that page only. Generated files go to a temporary folder added to
``html_static_path`` (Sphinx copies it into ``_static/``), and the icon fonts, which depend on every page, are
written into ``_static/icons/`` when the build has finished.
"""
from __future__ import annotations

import atexit
import hashlib
import html
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.images import get_image_size
from sphinx.writers.html5 import HTML5Translator

logger = logging.getLogger(__name__)

KATEX_STATIC = "katex"  # the folder in _static/ that holds KaTeX's stylesheet and fonts
KATEX_CSS = f"{KATEX_STATIC}/katex.min.css"
ICONS = "icons"  # the folder in _static/ that holds icons.css and the reduced Font Awesome fonts
ICONS_CSS = f"{ICONS}/icons.css"
THEME_CSS = "styles/pydata-sphinx-theme.css"  # in the theme's static folder: Font Awesome's CSS and @font-face rules
FONT_FACE = re.compile(r"@font-face\{([^}]*Font Awesome[^}]*)\}")
ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:before,?)+)\{content:"\\([0-9a-f]+)"\}')
ICON_CLASS = re.compile(r"\bfa-[a-z0-9-]+")
CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{4,6})")
PRIVATE_USE = (0xE000, 0xF8FF)  # where Font Awesome's glyphs live
# In KaTeX's CSS each font is `url(fonts/X.woff2) format("woff2"),url(fonts/X.woff) format("woff"),url(...ttf)...`
OLDER_FONT_FORMATS = re.compile(r',url\(fonts/[^)]+\.(?:woff|ttf)\) format\("(?:woff|truetype)"\)')
# sphinxcontrib-katex renders with throwOnError false: a formula KaTeX cannot parse becomes this red span.
KATEX_ERROR = re.compile(r'<span class="katex-error" title="([^"]*)"[^>]*>(.*?)</span>', re.S)
KATEX_SERVER_START_SECONDS = 60
CLASS_ATTRIBUTE = re.compile(r'class="([^"]*)"')
# Scripts that stay synchronous: the inline scripts after it (DOCUMENTATION_OPTIONS.pagename = ...) use it; on
# search.html, the theme's synchronous searchtools.js uses doctools.js.
BLOCKING_SCRIPTS = ("_static/documentation_options.js",)
BLOCKING_ON_SEARCH_PAGE = ("_static/doctools.js",)


def _has_class(*wanted: str):
    """A test on a page: some element of its body carries all of ``wanted`` classes."""
    return lambda page: any(set(wanted) <= classes for classes in page["classes"])


def _has_class_prefix(prefix: str):
    return lambda page: any(c.startswith(prefix) for classes in page["classes"] for c in classes)


# Which assets each feature needs, and the test that a page has that feature. An asset is a file name under
# _static/ (a prefix, for names with a hash) or, for an inline script, a word of its body.
PAGE_FEATURES = [
    # copy buttons (sphinx-copybutton's selector: div.highlight pre)
    ({"clipboard.min.js", "copybutton.js", "copybutton.css"}, _has_class("highlight")),
    # sphinx-togglebutton's selector: .toggle, .admonition.dropdown
    ({"togglebutton.js", "togglebutton.css", "toggleHintShow", "toggleHintHide", "toggleOpenOnPrint",
      "togglebuttonSelector"},
     lambda page: _has_class("toggle")(page) or _has_class("admonition", "dropdown")(page)),
    ({"design-tabs.js"}, _has_class("sd-tab-set")),
    ({"sphinx-design.min.css"}, _has_class_prefix("sd-")),
    ({"mystnb."}, _has_class("cell")),
    # Thebe: sphinx-book-theme sets use_thebe on the pages it gives a "Live Code" launch button
    ({"sphinx-thebe.js", "sphinx-thebe.css", "THEBE_JS_URL"}, lambda page: page["use_thebe"]),
    # KaTeX's stylesheet and sphinxcontrib-katex's (equation numbers, scrolling)
    ({KATEX_CSS, "katex-math.css"}, lambda page: page["math"]),
]


def katex_package(confdir: str | Path) -> Path:
    """The npm ``katex`` package that ``npm ci`` installed next to the book's _config.yml."""
    package = Path(confdir) / "node_modules" / "katex"
    if not (package / "dist" / "katex.min.js").is_file():
        raise ExtensionError(f"{package} is missing: run `npm ci` in {confdir} (the site renders its math at build "
                             "time with the katex package pinned in package.json)")
    return package


def _uses_katex(app) -> bool:
    return app.config.html_math_renderer == "katex"


def _digest_static_files(app, config):
    """A config value that changes with the site's own static files (site.css, scripts), so a build rewrites every
    page and copies them again when one changed. Sphinx copies static files only when some page is written: after
    an edit to site.css alone, an incremental build found nothing out of date and left the old copy in place."""
    digest = hashlib.sha256()
    for entry in config.html_static_path:
        folder = Path(app.confdir, entry)
        for path in sorted(folder.rglob("*")) if folder.is_dir() else [folder]:
            if path.is_file():
                digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    config.site_static_digest = digest.hexdigest()


def _configure_katex(app, config):
    if config.html_math_renderer != "katex":
        return
    package = katex_package(app.confdir)
    # Absolute: sphinxcontrib-katex's render server require()s it (its own bundled copy would be another version).
    config.katex_js_path = str(package / "dist" / "katex.min.js")
    config.katex_css_path = KATEX_CSS


def _start_katex_server(app):
    """Start sphinxcontrib-katex's render server, retrying the first connection; hand it to sphinxcontrib-katex.

    Workaround for sphinxcontrib-katex 0.9.11, whose own start connects as soon as the server's Unix socket file
    exists: Node creates that file (bind) an instant before it listens, so on a busy machine the connection is
    now and then refused, the build fails with ConnectionRefusedError, and the server process is left running.
    We run its server script (``SCRIPT_PATH``) with ``node`` ourselves, giving it katex by absolute path (its own
    ``build_command`` spells a path relative to its folder without resolving symlinks, which breaks where .venv is
    a symlink), and set the class's ``katex_server``, which sphinxcontrib-katex then uses for every formula.
    tests/content/test_build.py checks the handover.
    """
    if not (_uses_katex(app) and app.config.katex_prerender):
        return
    from sphinxcontrib.katex import NODEJS_BINARY, SCRIPT_PATH, KaTeXServer

    if KaTeXServer.katex_server is not None:
        return
    rundir = Path(tempfile.mkdtemp(prefix="site-assets-katex-server-"))
    path = rundir / "katex.sock"
    katex = str(Path(app.config.katex_js_path).resolve().with_suffix(""))  # require() takes it without ".js"
    command = [NODEJS_BINARY, SCRIPT_PATH, "--socket", str(path), "--katex", katex]
    process = subprocess.Popen(command, cwd=rundir, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    deadline = time.monotonic() + KATEX_SERVER_START_SECONDS
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
            break
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait()
                shutil.rmtree(rundir, ignore_errors=True)
                raise ExtensionError(f"the KaTeX render server did not start (exit code {process.returncode}): "
                                     "is `node` on PATH?") from None
            time.sleep(0.01)
    server = KaTeXServer(rundir, process, sock)
    KaTeXServer.katex_server = server
    atexit.register(_stop_katex_server, server)


def _stop_katex_server(server):
    if server.process.poll() is None:  # not stopped already
        server.terminate()


def _stage_static(app):
    """Generated static files (icons.css; KaTeX's stylesheet and fonts) in a folder added to html_static_path."""
    if app.builder.format != "html":
        return
    staging = Path(tempfile.mkdtemp(prefix="site-assets-"))
    app.config.html_static_path.append(str(staging))
    app._site_assets_staging = staging  # noqa: SLF001 - our own attribute, removed at build-finished
    _stage_icons_css(app, staging)
    if _uses_katex(app):
        _stage_katex(app, staging)


def _stage_katex(app, staging: Path):
    """KaTeX's stylesheet (reduced to woff2 sources) and woff2 fonts."""
    dist = katex_package(app.confdir) / "dist"
    target = staging / KATEX_STATIC
    (target / "fonts").mkdir(parents=True)
    css = OLDER_FONT_FORMATS.sub("", (dist / "katex.min.css").read_text(encoding="utf-8"))
    (target / "katex.min.css").write_text(css, encoding="utf-8")
    for font in sorted((dist / "fonts").glob("*.woff2")):
        shutil.copy2(font, target / "fonts" / font.name)


def _theme_stylesheet(app) -> Path:
    """pydata-sphinx-theme's stylesheet, found through the theme's folders (sphinx-book-theme inherits it)."""
    for folder in app.builder.theme.get_theme_dirs():
        if (Path(folder) / "static" / THEME_CSS).is_file():
            return Path(folder) / "static" / THEME_CSS
    raise ExtensionError(f"no theme folder has static/{THEME_CSS}: the theme no longer ships Font Awesome's CSS "
                         "the way book/_ext/site_assets.py expects")


def font_faces(theme_css: Path) -> list[dict]:
    """The theme's Font Awesome faces: {"family", "weight", "ttf" (Path)} for each @font-face."""
    faces = []
    for body in FONT_FACE.findall(theme_css.read_text(encoding="utf-8")):
        props = dict(part.split(":", 1) for part in body.split(";") if ":" in part)
        ttf = re.search(r"url\(([^)]+\.ttf)\)", props["src"])
        faces.append({"family": props["font-family"].replace("\\", "").strip(), "weight": props["font-weight"],
                      "ttf": (theme_css.parent / ttf.group(1)).resolve(), "file": Path(ttf.group(1)).stem + ".woff"})
    if not faces:
        raise ExtensionError(f"{theme_css}: no Font Awesome @font-face rule found")
    return faces


def icon_codepoints(theme_css: Path) -> dict[str, int]:
    """{"fa-rocket": 0xf135, ...}: each icon class of the theme's stylesheet and the glyph it draws."""
    icons = {}
    for selectors, code in ICON_RULE.findall(theme_css.read_text(encoding="utf-8")):
        for selector in selectors.split(","):
            if selector:
                icons[selector.removeprefix(".").removesuffix(":before")] = int(code, 16)
    return icons


def _stage_icons_css(app, staging: Path):
    faces = font_faces(_theme_stylesheet(app))
    (staging / ICONS).mkdir()
    rules = [f'@font-face{{font-display:block;font-family:"{f["family"]}";font-style:normal;'
             f'font-weight:{f["weight"]};src:url({f["file"]}) format("woff")}}' for f in faces]
    (staging / ICONS_CSS).write_text(
        "/* Font Awesome Free (icons CC BY 4.0, fonts SIL OFL 1.1: https://fontawesome.com/license/free), reduced "
        "to the icons this site uses by book/_ext/site_assets.py. */\n" + "\n".join(rules) + "\n", encoding="utf-8")
    app.add_css_file(ICONS_CSS)


def icons_used(html_dir: Path, known: dict[str, int]) -> set[str]:
    """The icon classes that the built pages name."""
    used = set()
    for page in html_dir.rglob("*.html"):
        if not page.relative_to(html_dir).parts[0].startswith(("_static", "_sources")):
            used |= {name for name in ICON_CLASS.findall(page.read_text(encoding="utf-8")) if name in known}
    return used


def glyphs_in_stylesheets(static_dir: Path) -> set[int]:
    """Icon glyphs the stylesheets draw themselves (the theme's admonition, link and dropdown icons): characters of
    Unicode's private use area, written as such or as a CSS escape, outside Font Awesome's per-class rules."""
    codepoints = set()
    for css in static_dir.rglob("*.css"):
        text = ICON_RULE.sub("", css.read_text(encoding="utf-8"))
        codepoints |= {ord(c) for c in text if PRIVATE_USE[0] <= ord(c) <= PRIVATE_USE[1]}
        codepoints |= {int(code, 16) for code in CSS_ESCAPE.findall(text)
                       if PRIVATE_USE[0] <= int(code, 16) <= PRIVATE_USE[1]}
    return codepoints


def reduce_icon_rules(css: str, used: set[str]) -> str:
    """The theme's stylesheet with Font Awesome's per-icon rules (``.fa-rocket:before{content:"\\f135"}``, about
    1,800 of them) kept only for the icons in ``used``."""
    def keep(match):
        selectors = [s for s in match.group(1).split(",") if s.removeprefix(".").removesuffix(":before") in used]
        return f'{",".join(selectors)}{{content:"\\{match.group(2)}"}}' if selectors else ""

    return ICON_RULE.sub(keep, css)


def _reduce_font_awesome(app, exception):
    """After the build: each Font Awesome face of the theme reduced to the glyphs the pages use (WOFF), and the
    theme's stylesheet in _static/ rewritten from the theme's own with only the icon rules the pages use (fewer
    rules to download and match on every page's critical path; bench/README.md has the figures)."""
    if exception is not None or app.builder.format != "html":
        return
    from fontTools import subset

    theme_css = _theme_stylesheet(app)
    known = icon_codepoints(theme_css)
    used = icons_used(Path(app.outdir), known)
    (Path(app.outdir) / "_static" / THEME_CSS).write_text(
        reduce_icon_rules(theme_css.read_text(encoding="utf-8"), used), encoding="utf-8")
    codepoints = sorted({known[name] for name in used} | glyphs_in_stylesheets(Path(app.outdir) / "_static"))
    target = Path(app.outdir) / "_static" / ICONS
    target.mkdir(parents=True, exist_ok=True)
    for face in font_faces(theme_css):
        options = subset.Options()
        options.flavor = "woff"  # zlib; WOFF2 would need the brotli module
        options.layout_features = []
        font = subset.load_font(str(face["ttf"]), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=codepoints)
        subsetter.subset(font)
        subset.save_font(font, str(target / face["file"]), options)


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


def _report_katex_errors(app, pagename, context):
    """A formula KaTeX could not render fails the build (-W) instead of showing red TeX to readers."""
    for message, source in KATEX_ERROR.findall(context.get("body") or ""):
        logger.warning("KaTeX cannot render %r: %s", html.unescape(source), html.unescape(message),
                       location=pagename, type="site_assets", subtype="katex")


def _asset_names(asset) -> tuple[str, ...]:
    """How PAGE_FEATURES names an asset: its file name under _static/, or the words of an inline script."""
    filename = _filename(asset)
    if filename:
        return (filename.removeprefix("_static/"),)
    return tuple(re.findall(r"\w+", (getattr(asset, "attributes", {}) or {}).get("body", "")))


def _unused(asset, page: dict) -> bool:
    names = _asset_names(asset)
    for assets, used in PAGE_FEATURES:
        if any(name == a or (a.endswith(".") and name.startswith(a)) for name in names for a in assets):
            return not used(page)
    return False


def _deferred(script, blocking: tuple[str, ...]):
    """The same script with ``defer`` (it then runs in order, after the HTML is parsed)."""
    attributes = getattr(script, "attributes", {}) or {}
    if (not _filename(script) or "://" in _filename(script) or _filename(script) in blocking
            or {"async", "defer", "body"} & set(attributes)):
        return script
    return type(script)(script.filename, priority=script.priority, **{**attributes, "defer": "defer"})


def _page_assets(app, pagename, templatename, context, doctree):
    if _uses_katex(app):
        _report_katex_errors(app, pagename, context)
    body = context.get("body") or ""
    page = {"classes": [set(value.split()) for value in CLASS_ATTRIBUTE.findall(body)],
            "math": _uses_katex(app) and _has_math(doctree), "use_thebe": bool(context.get("use_thebe"))}
    for key in ("script_files", "css_files"):
        if isinstance(context.get(key), list):
            context[key][:] = [asset for asset in _dedupe(context[key]) if not _unused(asset, page)]
    if isinstance(context.get("script_files"), list):
        blocking = BLOCKING_SCRIPTS + (BLOCKING_ON_SEARCH_PAGE if pagename == "search" else ())
        context["script_files"][:] = [_deferred(script, blocking) for script in context["script_files"]]


class SizedImagesTranslator(HTML5Translator):
    """Sphinx's HTML5 translator; raster images also get ``width``/``height`` (their pixel size) and ``loading="lazy"``.

    docutils writes an image's size only as a ``style`` (which would fix its height on a narrow screen), so we add
    the attributes to the ``<img>`` tag it has just written; pydata-sphinx-theme then mixes its own translator in.
    """

    def visit_image(self, node):
        source = Path(self.builder.srcdir) / node["uri"]
        node["loading"] = "lazy"  # docutils >= 0.21 writes it
        super().visit_image(node)
        size = get_image_size(str(source)) if source.suffix.lower() in (".png", ".jpg", ".jpeg", ".gif", ".webp") \
            and source.is_file() else None
        tag = self.body[-1] if self.body else ""
        if size and tag.startswith("<img ") and " width=" not in tag:
            self.body[-1] = tag.replace("<img ", f'<img width="{size[0]}" height="{size[1]}" ', 1)


def setup(app):
    app.add_config_value("site_static_digest", "", "html")
    app.connect("config-inited", _digest_static_files)
    app.set_translator("html", SizedImagesTranslator)
    app.connect("config-inited", _configure_katex)
    app.connect("builder-inited", _stage_static)
    # After sphinxcontrib-katex's own builder-inited (priority 500), which tells KaTeXServer where katex is.
    app.connect("builder-inited", _start_katex_server, priority=600)
    app.connect("build-finished", _reduce_font_awesome)
    app.connect("build-finished", _remove_staging)
    # Late priority: after every extension has added its page assets.
    app.connect("html-page-context", _page_assets, priority=990)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
