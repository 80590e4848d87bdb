"""The site builds with zero warnings, every chapter executed, with outputs and figures and no errors."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from conftest import BIN, ROOT, link_node_modules, run
from coursekit import book

pytestmark = pytest.mark.slow

TOC = book.toc(ROOT)
CHAPTERS = book.chapters(ROOT)
PAGES = book.pages(ROOT)


def soup(built_site, page: str) -> BeautifulSoup:
    path = built_site["html"] / f"{page}.html"
    assert path.exists(), f"{page}.html was not built"
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_seven_chapters_in_toc():
    assert len(CHAPTERS) == 7 and CHAPTERS[-1] == "book/07_causal_decoder"
    for chapter in CHAPTERS:
        assert (ROOT / f"{chapter}.md").exists(), f"{chapter}.md listed in _toc.yml but missing"


def test_build_has_no_warnings(built_site):
    # Sphinx/myst-nb diagnostics look like "WARNING: ..." or "path:line: ERROR: ..."; kernel processes' own log lines
    # ("[IPKernelApp] WARNING | ...") are not build warnings.
    warnings = [line for line in built_site["log"].splitlines()
                if re.search(r"(^|: )(WARNING|ERROR|CRITICAL|SEVERE):", line)]
    assert not warnings, "build printed warnings:\n" + "\n".join(warnings[:20])


def test_the_build_after_make_cache_executes_nothing(built_site):
    """`make book` = `make cache` (jupyter-cache's CLI, parallel) + the stock build, which must find every notebook
    page in the cache: a reader mismatch would make it execute everything a second time."""
    notebooks = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "book").glob("*.md")
                       if p.read_text().startswith("---") and "\nkernelspec:" in p.read_text().split("\n---", 1)[0])
    assert len(notebooks) >= 7
    executed = re.findall(r"(\S+\.md): Executing notebook", built_site["log"])
    cached = re.findall(r"(\S+\.md): Using cached notebook", built_site["log"])
    assert not executed, f"the build executed {executed} although make cache had run"
    assert sorted(str(Path(c).relative_to(built_site["root"])) for c in cached) == notebooks


@pytest.mark.parametrize("page", PAGES)
def test_page_exists(built_site, page):
    soup(built_site, page)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_executed_with_figures_and_no_errors(built_site, chapter):
    page = soup(built_site, chapter)
    main = page.select_one("main") or page
    outputs = main.select("div.cell_output")
    assert outputs, f"{chapter}: no executed cell outputs"
    images = main.select("div.cell_output img")
    assert images, f"{chapter}: no figure in the outputs"
    for img in images:
        src = img.get("src", "")
        assert src and (built_site["html"] / Path(chapter).parent / src).resolve().exists(), f"{chapter}: missing {src}"
        assert img.get("alt", "").strip(), f"{chapter}: figure {src} has no alt text"
    text = main.get_text(" ")
    assert "Traceback (most recent call last)" not in text, f"{chapter}: a traceback is rendered"
    assert not main.select(".output.error, .output.traceback"), f"{chapter}: an error output is rendered"
    for block in main.select("div.cell_output .output.stderr"):
        assert "Error" not in block.get_text(), f"{chapter}: error text on stderr: {block.get_text()[:300]}"
    prose = BeautifulSoup(str(main), "html.parser")
    for code in prose.select("code, pre"):  # code may quote the syntax on purpose ("the text says `{eval}`")
        code.decompose()
    prose_text = prose.get_text(" ")
    assert "{glue" not in prose_text and "{eval" not in prose_text, f"{chapter}: an unresolved glue or eval reference"
    pasted = main.select("span.output.text_plain")  # what book/_ext/prose_numbers.py pastes for {eval}`name`
    source = (ROOT / f"{chapter}.md").read_text()
    assert pasted or "{eval}`" not in source, f"{chapter}: no {{eval}} role was pasted"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_has_skeleton(built_site, chapter):
    """Objectives, self-check answers hidden in dropdowns, summary, homework pointer."""
    page = soup(built_site, chapter)
    text = page.get_text(" ").lower()
    assert "learning objectives" in text or "you will learn" in text, f"{chapter}: no learning objectives"
    assert page.select("details") or page.select(".toggle"), f"{chapter}: no hidden answers"
    assert "summary" in text, f"{chapter}: no summary"
    assert "homework" in text, f"{chapter}: no pointer to the homework"


def test_launch_buttons_on_chapters(built_site):
    import yaml as _yaml

    config = _yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].removeprefix("https://github.com/")
    branch = config["repository"]["branch"]
    for chapter in CHAPTERS:
        links = [a.get("href", "") for a in soup(built_site, chapter).select("a")]
        binder = [h for h in links if h.startswith("https://mybinder.org/v2/gh/")]
        expected = f"https://mybinder.org/v2/gh/{repo}/{branch}?urlpath=lab/tree/{chapter}.md"
        assert expected in binder, f"{chapter}: no Binder launch link {expected} (found {binder})"


def _mini_book(tmp_path: Path, pages: dict[str, str]) -> Path:
    """A book with the course's configuration and extensions and only ``pages`` ({name: MyST text}, first = root)."""
    book = tmp_path / "book"
    (book / "book").mkdir(parents=True)
    link_node_modules(book)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["sphinx"]["config"]["html_static_path"] = []
    config["sphinx"]["config"].pop("html_css_files", None)
    config["sphinx"]["config"].pop("html_js_files", None)
    config["sphinx"]["config"].pop("templates_path", None)
    config["html"].pop("favicon", None)
    (book / "_config.yml").write_text(yaml.safe_dump(config))
    for name, path in config["sphinx"].get("local_extensions", {}).items():  # e.g. book/_ext/site_assets.py
        (book / path).mkdir(parents=True, exist_ok=True)
        (book / path / f"{name}.py").write_text((ROOT / path / f"{name}.py").read_text())
    names = list(pages)
    toc = f"format: jb-book\nroot: book/{names[0]}\n"
    if names[1:]:
        toc += "chapters:\n" + "".join(f"  - file: book/{name}\n" for name in names[1:])
    (book / "_toc.yml").write_text(toc)
    for name, text in pages.items():
        (book / "book" / f"{name}.md").write_text(text)
    return book


GLUING_CHAPTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# Numbers

```{code-cell} ipython3
from myst_nb import glue


class Shown(str):
    def __repr__(self):
        return str(self)


glue("n_sets", 2048, display=False)
glue("accuracy", Shown(f"{0.98828:.3f}"), display=False)
```

There are {eval}`n_sets` sets and the accuracy is {eval}`accuracy`.
"""


def test_eval_roles_show_the_glued_values_and_an_unknown_name_fails_the_build(tmp_path):
    """Canary for book/_ext/prose_numbers.py: on the site, {eval}`name` pastes the value glued under `name` (through
    myst-nb's glue role, found by docutils' role lookup); a name nobody glued fails the -W build, naming it."""
    book = _mini_book(tmp_path / "ok", {"intro": "# Intro\n\nHello.\n", "numbers": GLUING_CHAPTER})
    proc = run([str(BIN / "jupyter-book"), "build", str(book), "-n", "-W", "--keep-going"], cwd=book, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    page = BeautifulSoup((book / "_build" / "html" / "book" / "numbers.html").read_text(), "html.parser")
    text = " ".join(page.select_one("main").get_text(" ").split())
    assert "There are 2048 sets and the accuracy is 0.988 ." in text, text[-400:]

    broken = _mini_book(tmp_path / "broken", {"intro": "# Intro\n\nHello.\n",
                                               "numbers": GLUING_CHAPTER.replace("{eval}`n_sets`", "{eval}`n_set`")})
    proc = run([str(BIN / "jupyter-book"), "build", str(broken), "-n", "-W", "--keep-going"], cwd=broken, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "n_set" in log, log[-3000:]


def test_a_raising_chapter_fails_the_build_naming_it(tmp_path):
    """A cell error stops the build, and the message names the chapter that raised."""
    book = _mini_book(tmp_path, {
        "intro": "# Intro\n\nHello.\n",
        "broken_chapter": "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
        "# Broken\n\n```{code-cell} ipython3\nraise ValueError('planted failure')\n```\n",
    })
    proc = run([str(BIN / "jupyter-book"), "build", str(book), "-n", "-W", "--keep-going"], cwd=book, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, "a chapter that raises must fail the build"
    assert "broken_chapter" in log and "planted failure" in log, log[-3000:]


def test_an_edited_stylesheet_reaches_the_site_on_the_next_build(tmp_path):
    """Sphinx copies static files only when it writes a page: a build after an edit to a stylesheet alone must still
    ship the new stylesheet (site_assets digests the static files into the configuration)."""
    book = _mini_book(tmp_path, {"intro": "# Intro\n\nHello.\n"})
    config = yaml.safe_load((book / "_config.yml").read_text())
    config["sphinx"]["config"]["html_static_path"] = ["book/_static"]
    (book / "_config.yml").write_text(yaml.safe_dump(config))
    static = book / "book" / "_static"
    static.mkdir()
    build = [str(BIN / "jupyter-book"), "build", str(book), "-n", "-W", "--keep-going"]
    served = book / "_build" / "html" / "_static" / "extra.css"
    for rule in ("p { color: black; }", "p { color: navy; }"):
        (static / "extra.css").write_text(rule)
        proc = run(build, cwd=book, check=False)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        assert served.read_text() == rule


# ------------------------------------------------------------------ what a reader's browser gets (issue 16)
MATH_SCRIPT = re.compile(r"mathjax|katex|tex-(chtml|svg|mml)", re.I)
REDIRECT = re.compile(r'<meta http-equiv="refresh"', re.I)  # Jupyter Book's index.html only redirects


def _html_pages(built_site) -> dict[str, BeautifulSoup]:
    html = built_site["html"]
    pages = {}
    for path in sorted(html.rglob("*.html")):
        rel = path.relative_to(html).as_posix()
        text = path.read_text(encoding="utf-8")
        if not rel.startswith(("_static/", "_sources/", "_images/")) and not REDIRECT.search(text[:2000]):
            pages[rel] = BeautifulSoup(text, "html.parser")
    assert len(pages) >= len(PAGES) + 2, sorted(pages)  # the toc's pages, search.html, genindex.html
    return pages


def _site_assets():
    """book/_ext/site_assets.py, the extension under test (Sphinx loads it from there, not as a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_assets", ROOT / "book" / "_ext" / "site_assets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _asset(page: BeautifulSoup, html: Path, rel: str, url: str) -> Path:
    return (html / rel).parent.joinpath(url.split("?")[0]).resolve()


def test_math_is_rendered_at_build_time_with_no_math_script(built_site):
    """Every formula is KaTeX's HTML (for the eye) and MathML (for screen readers) in the page itself; no page loads
    MathJax or KaTeX's script; pages with math load KaTeX's stylesheet, served locally, and the others do not."""
    html = built_site["html"]
    with_math = []
    for rel, page in _html_pages(built_site).items():
        scripts = [s.get("src", "") or s.get_text()[:200] for s in page.select("script")]
        assert not [s for s in scripts if MATH_SCRIPT.search(s)], f"{rel}: a math script: {scripts}"
        math = page.select("main .math")
        unrendered = [m.get_text()[:60] for m in math if not m.select_one(".katex .katex-html")]
        assert not unrendered, f"{rel}: formulas not rendered at build time: {unrendered[:3]}"
        assert all(m.select_one(".katex-mathml math annotation") for m in math), f"{rel}: formula without MathML"
        assert not page.select(".katex-error"), f"{rel}: KaTeX could not render {page.select('.katex-error')[:2]}"
        stylesheets = [link["href"] for link in page.select("link[rel=stylesheet]")]
        katex_css = [h for h in stylesheets if "katex/katex.min.css" in h]
        if math:
            with_math.append(rel)
            assert katex_css and _asset(page, html, rel, katex_css[0]).is_file(), f"{rel}: no local KaTeX CSS"
        else:
            assert not katex_css, f"{rel} has no math but loads KaTeX's stylesheet"
    assert all(f"{chapter}.html" in with_math for chapter in CHAPTERS), with_math
    css = html / "_static" / "katex" / "katex.min.css"
    fonts = re.findall(r"url\(([^)]+)\)", css.read_text())
    assert fonts and all(f.endswith(".woff2") for f in fonts), "KaTeX's CSS should name its woff2 fonts only"
    missing = [f for f in fonts if not (css.parent / f).is_file()]
    assert not missing, f"fonts named by KaTeX's CSS but not served: {missing}"


def test_a_formula_katex_cannot_render_fails_the_build(tmp_path):
    book = _mini_book(tmp_path, {"intro": "# Intro\n\nA broken formula: $\\frac{1}{$ here.\n"})
    proc = run([str(BIN / "jupyter-book"), "build", str(book), "-n", "-W", "--keep-going"], cwd=book, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"a formula KaTeX cannot parse must fail the build\n{log[-2000:]}"
    assert "KaTeX cannot render" in log and "intro" in log, log[-3000:]


def test_the_katex_render_server_is_handed_to_sphinxcontrib_katex():
    """Canary for the workaround in site_assets._start_katex_server: it runs sphinxcontrib-katex's server script and
    hands the server over through KaTeXServer (the constructor, the katex_server attribute), as that package's
    source shows them; if they change, this fails before a build does."""
    from types import SimpleNamespace

    from sphinxcontrib.katex import KaTeXServer, render_latex

    site_assets = _site_assets()
    katex = site_assets.katex_package(ROOT) / "dist" / "katex.min.js"
    saved = KaTeXServer.katex_server
    KaTeXServer.katex_server = None
    try:
        site_assets._start_katex_server(SimpleNamespace(config=SimpleNamespace(
            html_math_renderer="katex", katex_prerender=True, katex_js_path=str(katex))))
        server = KaTeXServer.katex_server
        assert server is not None and server.process.poll() is None
        rendered = render_latex(r"\sqrt{d_k}")
        assert 'class="katex"' in rendered and "<annotation" in rendered, rendered[:300]
        server.terminate()
        assert server.process.poll() is not None
    finally:
        KaTeXServer.katex_server = saved


def test_icons_come_from_a_reduced_font_not_a_script(built_site):
    """No page loads Font Awesome's script; every icon a page names has its glyph in the reduced fonts, and those
    fonts are small; the served theme stylesheet has the rules of the icons used and not the others."""
    from fontTools.ttLib import TTFont

    import pydata_sphinx_theme

    html = built_site["html"]
    site_assets = _site_assets()
    theme_css = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static" / \
        site_assets.THEME_CSS
    known = site_assets.icon_codepoints(theme_css)
    assert len(known) > 1000 and known["fa-rocket"] == 0xF135, "the theme's stylesheet changed its icon rules"
    fonts = sorted((html / "_static" / site_assets.ICONS).glob("*.woff"))
    assert fonts, "no reduced icon fonts"
    glyphs = set()
    for font in fonts:
        assert font.stat().st_size < 10_000, f"{font.name}: {font.stat().st_size} bytes, not reduced"
        glyphs |= set(TTFont(font).getBestCmap())
    used = set()
    for rel, page in _html_pages(built_site).items():
        assert not [s for s in page.select("script[src]") if "fontawesome" in s["src"]], f"{rel}: fontawesome.js"
        assert page.select_one(f'link[rel=stylesheet][href*="{site_assets.ICONS_CSS}"]'), f"{rel}: no icons.css"
        used |= {c for el in page.select("[class*=fa-]") for c in el.get("class", []) if c in known}
    assert {"fa-rocket", "fa-github", "fa-magnifying-glass", "fa-bars"} <= used, used
    missing = sorted(name for name in used if known[name] not in glyphs)
    assert not missing, f"icons without a glyph in the reduced fonts: {missing}"
    # The served theme stylesheet keeps the rules of the icons used, and only those.
    served = site_assets.icon_codepoints(html / "_static" / site_assets.THEME_CSS)
    assert used <= set(served) and len(served) < 100, (sorted(used - set(served)), len(served))
    assert all(served[name] == known[name] for name in served)
    # The admonitions' own icons (drawn by the theme's CSS, e.g. the note's circled i) are kept too.
    assert 0xF05A in glyphs


def test_each_page_loads_only_what_it_uses_and_does_not_block_on_scripts(built_site):
    html = built_site["html"]
    pages = _html_pages(built_site)
    for rel, page in pages.items():
        head = page.head
        blocking = [s["src"] for s in head.select("script[src]")
                    if not (s.has_attr("defer") or s.has_attr("async")) and "documentation_options.js" not in s["src"]]
        search_scripts = [s for s in blocking if re.search(r"searchtools|language_data|searchindex", s)]
        if rel == "search.html":  # the theme's search scripts, and doctools.js which they use
            assert len(search_scripts) == 3 and "doctools.js" in blocking[0], blocking
            blocking = blocking[1:]
        else:
            assert not search_scripts, f"{rel} loads the search index"
        assert blocking == search_scripts, f"{rel}: scripts that block the page: {blocking}"
        assets = " ".join(s.get("src", "") for s in page.select("script")) + " " + \
            " ".join(link.get("href", "") for link in page.select("link"))
        has_code = bool(page.select("div.highlight"))
        assert ("copybutton.js" in assets) == has_code, f"{rel}: copy buttons loaded {not has_code} for nothing"
        thebe = bool(page.select(".btn-launch-thebe"))
        assert ("sphinx-thebe.js" in assets) == thebe and ("THEBE_JS_URL" in str(head)) == thebe, rel
        assert ("design-tabs.js" in assets) == bool(page.select(".sd-tab-set")), rel
        # the favicon, so that browsers do not ask for /favicon.ico (a 404 in the console)
        icon = page.select_one('link[rel="icon"]')
        assert icon and _asset(page, html, rel, icon["href"]).is_file(), f"{rel}: no favicon"
    assert all(pages[f"{c}.html"].select(".btn-launch-thebe") for c in CHAPTERS), "chapters lost their Live Code button"
    assert not pages[f"{TOC['root']}.html"].select_one("script[src*=copybutton]")


def test_figures_have_their_size_and_load_lazily(built_site):
    """Every figure in a chapter has width and height (the browser reserves its box: the page does not jump)
    equal to its pixel size, and loads when it comes near the screen."""
    from PIL import Image

    html = built_site["html"]
    checked = 0
    for chapter in CHAPTERS:
        for img in soup(built_site, chapter).select("main img"):
            path = _asset(None, html, f"{chapter}.html", img["src"])
            if path.suffix != ".png":
                continue
            with Image.open(path) as image:
                assert (img.get("width"), img.get("height")) == (str(image.width), str(image.height)), img
            assert img.get("loading") == "lazy", img
            checked += 1
    assert checked >= len(CHAPTERS), checked
