"""The built site in real Chromium: offline, no console errors, math, figures, search, dark mode, launch buttons, a11y.

The book is built once per session (`built_site` in conftest.py) into a temporary copy and served from
127.0.0.1. Every request to any other host is recorded and aborted, so these tests also prove the site works
offline. Every page is visited once (`site_visits`); the tests below assert on what that visit recorded.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from browser_util import (AXE_JS, DARK_RULES, RUN_AXE, UI_TIMEOUT_MS, InFlight, RequestRecorder, artifacts_dir, awaiting,
                          chromium, require_browser_tools, serve, wait_until)
from coursekit.preview import GZIP_TYPES

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
CHAPTER = re.compile(r"^book/\d\d_[a-z0-9_]+\.html$")
BLOCKING_IMPACTS = ("serious", "critical")
# Issue 16: what a page may weigh on a reader's first visit, served with gzip (as a static host does).
PAGE_BUDGET = 600 * 1024
# What no page may load any more: Font Awesome's script and full fonts, a runtime math typesetter.
HEAVY_ASSETS = re.compile(r"fontawesome\.js|vendor/fontawesome/webfonts|mathjax|tex-chtml|katex(\.min)?\.js", re.I)

# Math is rendered when the site is built (KaTeX); the page only has to load KaTeX's fonts.
WAIT_FOR_FONTS = """async () => { await document.fonts.ready; return document.fonts.status; }"""

# Text the reader sees in the article, with code, scripts and typeset math taken out: no TeX may be left in it.
VISIBLE_PROSE = """() => {
    const article = document.querySelector('main') || document.body;
    const clone = article.cloneNode(true);
    clone.querySelectorAll('pre, code, script, style, .katex, .highlight, textarea')
         .forEach(el => el.remove());
    return clone.innerText;
}"""

# Sections off screen are not rendered (content-visibility), so their fonts are not fetched: show the first formula,
# let a frame render it, wait for the fonts it asked for.
MATH_STATE = """async () => {
    const math = [...document.querySelectorAll('main .math')];
    const first = document.querySelector('main .katex');
    if (first) {
        first.scrollIntoView();
        await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
        await document.fonts.ready;
    }
    return {math: math.length,
            unrendered: math.filter(el => !el.querySelector('.katex .katex-html'))
                            .map(el => el.textContent.slice(0, 80)),
            katex: document.querySelectorAll('main .katex').length,
            katex_fonts: [...document.fonts].filter(f => f.family.startsWith('KaTeX') && f.status === 'loaded').length,
            scripts: [...document.scripts].map(s => s.src).filter(src => /mathjax|katex|tex-chtml|tex-svg/i.test(src)),
            runtime: ['MathJax', 'katex', 'renderMathInElement'].filter(name => name in window)};
}"""

# Figures load lazily (when they come near the screen): bring each shown one to the screen and wait until it has
# loaded and decoded (decode() rejects if it cannot), then report them all.
IMAGES = """async () => {
    const images = [...document.querySelectorAll('img')];
    for (const img of images) {
        if (img.loading === 'lazy' && img.getClientRects().length > 0) {
            img.scrollIntoView();
            await img.decode().catch(() => null);
        }
    }
    window.scrollTo(0, 0);
    return images.map(img => {
        const style = getComputedStyle(img);
        return {src: img.getAttribute('src'), url: img.currentSrc || img.src, alt: img.getAttribute('alt'),
                in_article: !!img.closest('article, main .bd-article, #main-content'),
                loaded: img.complete && img.naturalWidth > 0, visible: img.getClientRects().length > 0,
                background: style.backgroundColor, filter: style.filter};
    });
}"""

# Folded-away content (closed <details>: hidden code, answers) has no layout box, so the theme's scan of every code
# block after load does not lay it out; opening one shows its content.
DETAILS = """async () => {
    const folded = d => [...d.children].filter(c => c.tagName !== 'SUMMARY');
    const closed = [...document.querySelectorAll('main details:not([open])')];
    const laid_out = closed.filter(d => folded(d).some(c => c.getClientRects().length > 0)).length;
    let opened = null;
    if (closed.length) {
        const d = closed[0];
        d.querySelector('summary').click();
        await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
        opened = d.open && folded(d).every(c => c.getClientRects().length > 0 && c.offsetHeight > 0);
        d.querySelector('summary').click();
    }
    return {closed: closed.length, laid_out, opened};
}"""

# Display equations wider than the column (they scroll sideways, so a desktop reader sees them cut off).
WIDE_MATH = """() => [...document.querySelectorAll('.katex-display > .katex > .katex-html')]
    .filter(el => el.scrollWidth > el.clientWidth + 1)
    .map(el => el.closest('.katex').querySelector('annotation')?.textContent.trim().slice(0, 80))"""


REFRESH = re.compile(r'<meta http-equiv="refresh" content="\d+;\s*url=([^"]+)"', re.I)


def _pages(html: Path) -> tuple[list[str], dict[str, str]]:
    """(content pages, {redirect page: target}); Jupyter Book's index.html only redirects to the root page."""
    skip = ("_static/", "_sources/", "_images/")
    pages, redirects = [], {}
    for path in sorted(html.rglob("*.html")):
        rel = path.relative_to(html).as_posix()
        if rel.startswith(skip):
            continue
        match = REFRESH.search(path.read_text(encoding="utf-8")[:2000])
        if match:
            redirects[rel] = (path.parent / match.group(1)).resolve().relative_to(html.resolve()).as_posix()
        else:
            pages.append(rel)
    return pages, redirects


def _alpha(css_color: str) -> float:
    """Alpha of a computed CSS colour ('rgb(…)' is opaque, 'rgba(…, a)' carries it)."""
    match = re.match(r"rgba?\(([^)]*)\)", css_color.strip())
    if not match:
        return 0.0
    parts = [p.strip() for p in match.group(1).replace("/", ",").split(",")]
    return float(parts[3]) if len(parts) == 4 else 1.0


def _png_is_opaque(path: Path) -> bool:
    from PIL import Image

    with Image.open(path) as image:
        if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
            return image.convert("RGBA").getchannel("A").getextrema()[0] == 255
        return True


def _gzip_size(request) -> int:
    """What the response would weigh served with gzip (level 6): headers, then the body (compressed if text)."""
    response = request.response()
    if response is None:
        return 0
    body = response.body()
    if response.headers.get("content-type", "").startswith(GZIP_TYPES):
        body = gzip.compress(body, compresslevel=6, mtime=0)
    return request.sizes()["responseHeadersSize"] + len(body)


def _settle(page, inflight: InFlight) -> str:
    """Wait for the page's conditions, not for a quiet time: loaded, fonts loaded, no request pending."""
    page.wait_for_load_state("load")
    state = page.evaluate(WAIT_FOR_FONTS)
    inflight.settle()
    return state


def _lay_out_everything(page) -> None:
    """Lay out what the site lets the browser skip while it is far off screen (content-visibility in site.css), as it
    is once a reader scrolls to it: axe-core reads colours by hit-testing, and a skipped block is hit-tested at its
    placeholder's place (a link in the instructors page was measured against #f3f4f5, the grey of code and tables,
    4.34:1; laid out, it is on the page's own background); WIDE_MATH measures every equation."""
    page.add_style_tag(
        content=".bd-article section, .bd-article section > * { content-visibility: visible !important; }")


def _visit(context, recorder, base: str, html: Path, rel: str, shots: Path) -> dict:
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    finished = []
    page.on("requestfinished", lambda request: finished.append(request))
    # ERR_ABORTED is this test reloading the page (for dark mode) while a font still loads; anything else counts.
    page.on("requestfailed", lambda req: errors.append(f"requestfailed: {req.url} {req.failure}")
            if "ERR_ABORTED" not in (req.failure or "") else None)
    page.on("response", lambda resp: errors.append(f"HTTP {resp.status}: {resp.url}") if resp.status >= 400 else None)
    external_before = len(recorder.external)
    inflight = InFlight(page)

    # Light mode first: "auto" (a first visit) resolves to light in headless Chromium, and each dark pass below
    # ends by choosing light again. Routing disables the HTTP cache, so this visit's bytes are a cold visit's.
    page.goto(base + rel, wait_until="load")
    fonts = _settle(page, inflight)
    transferred = 0
    for request in finished:
        sizes = request.sizes()
        transferred += sizes["responseBodySize"] + sizes["responseHeadersSize"]
    record = {
        "page": rel, "final_url": page.url, "fonts": fonts, "bytes": transferred, "requests": len(finished),
        "gzip_bytes": sum(_gzip_size(request) for request in finished), "urls": [r.url for r in finished],
        "math": page.evaluate(MATH_STATE), "prose": page.evaluate(VISIBLE_PROSE), "images": page.evaluate(IMAGES),
        "launch_links": page.eval_on_selector_all("a[href*='mybinder.org']", "els => els.map(e => e.href)"),
        "thebe_button": page.locator(".btn-launch-thebe, .thebe-launch-button").count(),
        "theme_light": page.evaluate("document.documentElement.dataset.theme"),
    }
    _lay_out_everything(page)
    page.add_script_tag(path=str(AXE_JS))
    record["axe_light"] = page.evaluate(RUN_AXE, None)  # every rule
    record["details"] = page.evaluate(DETAILS)

    # Dark mode, as the theme switcher sets it.
    page.evaluate("() => { localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark'); }")
    page.reload(wait_until="load")
    _settle(page, inflight)
    record["theme_dark"] = page.evaluate("document.documentElement.dataset.theme")
    record["images_dark"] = page.evaluate(IMAGES)
    _lay_out_everything(page)
    page.add_script_tag(path=str(AXE_JS))
    # Dark mode changes colours only (the same document, another stylesheet): the rules that read colours again.
    record["axe_dark"] = page.evaluate(RUN_AXE, DARK_RULES)
    name = rel.replace("/", "_").removesuffix(".html")
    record["wide_math"] = page.evaluate(WIDE_MATH)  # every equation, laid out
    page.screenshot(path=str(shots / f"{name}-dark.png"))  # the first screen (a full page costs seconds a chapter)
    page.evaluate("() => { localStorage.setItem('mode', 'light'); localStorage.setItem('theme', 'light'); }")

    record["errors"] = errors
    record["external"] = recorder.external[external_before:]
    page.close()
    return record


@pytest.fixture(scope="module")
def site_visits(built_site, tmp_path_factory) -> dict:
    """Visit every page of the built site once; return {"pages": {rel: record}, "base": url, ...}."""
    from playwright.sync_api import sync_playwright

    require_browser_tools(axe=True)
    html = built_site["html"]
    pages, redirects = _pages(html)
    shots = artifacts_dir(tmp_path_factory, "site-screenshots")
    records = {}
    with serve(html) as base, sync_playwright() as pw, \
            chromium(pw, tmp_path_factory.mktemp("chromium-profile")) as context:
        recorder = RequestRecorder(context, base)
        for rel in pages:
            records[rel] = _visit(context, recorder, base, html, rel, shots)
    print("\npage                                         requests   transferred (cold, bytes)   with gzip")
    for rel, rec in records.items():
        print(f"{rel:45s} {rec['requests']:8d}   {rec['bytes']:12,d}   {rec['gzip_bytes']:12,d}")
    print(f"{'total':45s} {sum(r['requests'] for r in records.values()):8d}   "
          f"{sum(r['bytes'] for r in records.values()):12,d}")
    return {"pages": records, "redirects": redirects, "html": html, "root": built_site["root"]}


def test_every_page_of_the_toc_was_visited(site_visits):
    pages = site_visits["pages"]
    from coursekit import book

    files = book.pages(ROOT)
    missing = [f for f in files if f"{f}.html" not in pages]
    assert not missing, f"pages in _toc.yml without HTML: {missing}"
    assert "search.html" in pages
    redirects = site_visits["redirects"]
    assert redirects.get("index.html") == f"{files[0]}.html", redirects
    assert all(target in pages for target in redirects.values()), redirects


def test_no_console_errors(site_visits):
    bad = {rel: rec["errors"] for rel, rec in site_visits["pages"].items() if rec["errors"]}
    assert not bad, f"console errors: {bad}"


def test_no_request_leaves_the_local_server(site_visits):
    bad = {rel: rec["external"] for rel, rec in site_visits["pages"].items() if rec["external"]}
    assert not bad, f"requests to other hosts (vendor these assets or configure them away): {bad}"
    assert all(rec["bytes"] > 0 and rec["requests"] > 0 for rec in site_visits["pages"].values())


def test_every_page_fits_the_budget_served_with_gzip(site_visits):
    """A first visit to any page (HTML, stylesheets, scripts, fonts, figures it loads) weighs at most 600 KB with
    gzip, and loads neither Font Awesome's script or full fonts nor a math typesetter."""
    pages = site_visits["pages"]
    over = {rel: rec["gzip_bytes"] for rel, rec in pages.items() if rec["gzip_bytes"] > PAGE_BUDGET}
    assert not over, f"pages over {PAGE_BUDGET:,} bytes with gzip: {over}"
    heavy = {rel: [u for u in rec["urls"] if HEAVY_ASSETS.search(u)] for rel, rec in pages.items()}
    assert not any(heavy.values()), {rel: urls for rel, urls in heavy.items() if urls}
    assert all(0 < rec["gzip_bytes"] < rec["bytes"] for rec in pages.values())


def test_math_is_rendered_at_build_time_and_no_raw_tex_is_left(site_visits):
    """Every formula arrives as KaTeX's HTML, drawn with KaTeX's fonts; no page runs a math script."""
    pages = site_visits["pages"]
    rendered = [rel for rel, rec in pages.items() if rec["math"]["katex"] > 0]
    assert any(CHAPTER.match(rel) for rel in rendered), f"no chapter has rendered math: {sorted(pages)}"
    problems = {}
    for rel, rec in pages.items():
        math = rec["math"]
        if math["unrendered"]:
            problems[rel] = f"math not rendered: {math['unrendered'][:3]}"
        if math["scripts"] or math["runtime"]:
            problems[rel] = f"a math script runs in the browser: {math['scripts']} {math['runtime']}"
        if math["katex"] and not math["katex_fonts"]:
            problems[rel] = "page has math but no KaTeX font loaded"
        raw = re.findall(r"\$\$?[^$\n]{1,80}\$\$?|\\\(.{1,80}?\\\)|\\\[.{1,80}?\\\]", rec["prose"])
        if raw:
            problems[rel] = f"raw TeX in the text: {raw[:3]}"
    assert not problems, problems


def test_figures_have_alt_text_and_load(site_visits):
    problems = {}
    for rel, rec in site_visits["pages"].items():
        for img in rec["images"]:
            alt = (img["alt"] or "").strip()
            src_name = Path(urlsplit(img["src"] or "").path).name
            if not alt:
                problems.setdefault(rel, []).append(f"{img['src']}: empty alt")
            elif img["in_article"] and (alt.endswith(src_name) or re.search(r"\.(png|svg|jpe?g|gif)$", alt)):
                problems.setdefault(rel, []).append(f"{img['src']}: alt is the file name ({alt!r}); set "
                                                    "mystnb: image: alt (or figure: caption) on the cell")
            if img["visible"] and not img["loaded"]:
                problems.setdefault(rel, []).append(f"{img['src']}: did not load")
    assert not problems, problems
    figures = [img for rec in site_visits["pages"].values() for img in rec["images"] if img["in_article"]]
    assert figures, "no figure found in any chapter"


def test_dark_mode_keeps_figures_readable(site_visits):
    html = site_visits["html"]
    problems, checked = {}, 0
    for rel, rec in site_visits["pages"].items():
        assert rec["theme_light"] == "light" and rec["theme_dark"] == "dark", (rel, rec["theme_light"],
                                                                               rec["theme_dark"])
        page_dir = (html / rel).parent
        for img in rec["images_dark"]:
            if not img["in_article"]:
                continue
            src = urlsplit(img["src"]).path
            file = (page_dir / src).resolve()
            opaque_file = file.suffix == ".png" and file.exists() and _png_is_opaque(file)
            opaque_background = _alpha(img["background"]) == 1.0
            checked += 1
            if not (opaque_file or opaque_background):
                problems.setdefault(rel, []).append(
                    f"{src}: transparent PNG on a transparent background in dark mode ({img['background']})")
    assert checked, "no figure checked in dark mode"
    assert not problems, problems


def test_every_png_figure_has_an_opaque_background(site_visits):
    images = sorted((site_visits["html"] / "_images").glob("*.png"))
    assert images, "the site has no PNG figures"
    transparent = [p.name for p in images if not _png_is_opaque(p)]
    assert not transparent, f"figures with transparent pixels (unreadable in dark mode): {transparent}"


def test_closed_details_are_out_of_layout_and_open_on_click(site_visits):
    details = {rel: rec["details"] for rel, rec in site_visits["pages"].items()}
    assert sum(d["closed"] for d in details.values()) >= 10, details
    assert {page: d for page, d in details.items() if d["laid_out"]} == {}, "closed <details> content is laid out"
    assert {page: d for page, d in details.items() if d["closed"] and not d["opened"]} == {}, \
        "a <details> did not show its content when opened"


def test_every_display_equation_fits_the_column_on_a_desktop(site_visits):
    """At 1280 px no equation is cut off; on a phone a wide one scrolls sideways (site.css)."""
    wide = {rel: rec["wide_math"] for rel, rec in site_visits["pages"].items() if rec["wide_math"]}
    assert not wide, f"display equations wider than the column (split them with aligned/gathered): {wide}"


def test_launch_buttons_point_to_binder_with_the_right_path_and_branch(site_visits):
    repo = urlsplit(CONFIG["repository"]["url"]).path.strip("/")
    branch = CONFIG["repository"]["branch"]
    binder = CONFIG["launch_buttons"]["binderhub_url"].rstrip("/")
    ui = {"jupyterlab": "lab/tree", "classic": "tree"}[CONFIG["launch_buttons"]["notebook_interface"]]
    chapters = {rel: rec for rel, rec in site_visits["pages"].items() if CHAPTER.match(rel)}
    assert len(chapters) >= 1
    problems = {}
    for rel, rec in chapters.items():
        source = rel.removesuffix(".html") + ".md"
        expected = f"{binder}/v2/gh/{repo}/{branch}?urlpath={ui}/{source}"
        if expected not in rec["launch_links"]:
            problems[rel] = f"expected {expected}, found {rec['launch_links']}"
        elif not (site_visits["root"] / source).is_file():
            problems[rel] = f"launch target {source} does not exist in the repository"
        if not rec["thebe_button"]:
            problems[rel] = "no Thebe (live code) button"
    assert not problems, problems


def test_homework_page_links_to_the_release_notebook_in_binder(site_visits):
    pages = site_visits["pages"]
    homework = pages.get("book/homework.html")
    assert homework, "book/homework.html was not built"
    targets = []
    for href in homework["launch_links"]:
        parts = urlsplit(href)
        for urlpath in parse_qs(parts.query).get("urlpath", []):
            path = re.sub(r"^(lab/tree|tree|notebooks|doc/tree)/", "", urlpath)
            if path.startswith("release/") and path.endswith(".ipynb"):
                targets.append(path)
    assert targets, f"no Binder link to a release/ notebook on the homework page: {homework['launch_links']}"
    missing = [t for t in targets if not (site_visits["root"] / t).is_file()]
    assert not missing, f"homework links to notebooks that do not exist: {missing}"


def test_axe_finds_no_serious_or_critical_violations(site_visits):
    problems = {}
    for rel, rec in site_visits["pages"].items():
        for mode in ("light", "dark"):
            for v in rec[f"axe_{mode}"]:
                if v["impact"] in BLOCKING_IMPACTS:
                    problems.setdefault(f"{rel} ({mode})", []).append(
                        f"{v['impact']} {v['id']}: {v['help']} at {v['nodes']}")
    assert not problems, "axe-core violations:\n" + "\n".join(f"{k}: {v}" for k, v in problems.items())


def test_search_finds_the_attention_chapter(built_site, tmp_path):
    from playwright.sync_api import sync_playwright

    # Sphinx's search adds its hits one by one (a timer per hit) and then writes this summary: read the hits after it.
    finished = "() => /Search finished|did not match/.test(document.querySelector('#search-results')?.innerText)"
    results = "() => document.querySelector('#search-results')?.innerText.slice(0, 1000) ?? 'no #search-results'"
    with serve(built_site["html"]) as base, sync_playwright() as pw, chromium(pw, tmp_path / "profile") as context:
        recorder = RequestRecorder(context, base)
        page = context.new_page()
        page.goto(base + "search.html?q=softmax", wait_until="load")
        wait_until(page, finished, "the search for 'softmax' to finish", seen=results)
        summary = page.locator("#search-results p.search-summary").inner_text()
        hits = page.eval_on_selector_all("#search-results ul.search li a",
                                         "els => els.map(e => e.getAttribute('href'))")
        found = re.search(r"found (\d+) page", summary)
        shown = page.locator("#search-results ul.search > li").count()
        assert found and int(found.group(1)) == shown > 0, f"{summary!r} but {shown} hits shown: {hits}"
        assert any("02_attention" in h for h in hits), f"search 'softmax' found {hits}"
        page.goto(base + "search.html?q=zzqxnotaword", wait_until="load")
        wait_until(page, finished, "the search for a non-word to finish", seen=results)
        assert re.search(r"did not match", page.locator("#search-results").inner_text()), "a non-word found pages"
        assert recorder.external == []


def test_thebe_loads_nothing_until_the_reader_clicks(built_site, tmp_path):
    from playwright.sync_api import sync_playwright

    chapter = "book/02_attention.html"
    assert (built_site["html"] / chapter).exists()
    with serve(built_site["html"]) as base, sync_playwright() as pw, chromium(pw, tmp_path / "profile") as context:
        recorder = RequestRecorder(context, base)
        page = context.new_page()
        inflight = InFlight(page)
        page.goto(base + chapter, wait_until="load")
        _settle(page, inflight)
        assert recorder.external == [], f"requests before any click: {recorder.external}"
        assert page.evaluate("typeof thebelab") == "undefined"
        # When it does start, Thebe asks Binder for the same repository and branch, and a kernel in book/ (so
        # `from course_lib import ...` works).
        thebe_config = page.locator("script[type='text/x-thebe-config']").text_content()
        repo = urlsplit(CONFIG["repository"]["url"]).path.strip("/")
        assert f'repo: "{repo}"' in thebe_config and f'ref: "{CONFIG["repository"]["branch"]}"' in thebe_config
        assert re.search(r'path: "(\./)?book"', thebe_config), thebe_config
        # The reader opens the launch menu and clicks "Live Code": only now is Thebe fetched.
        with awaiting("the click on Live Code to request Thebe", lambda: recorder.external), \
                page.expect_request(lambda r: not recorder.is_local(r.url), timeout=UI_TIMEOUT_MS) as first:
            page.locator(".btn-launch-thebe").first.evaluate("el => el.click()")
        assert re.match(r"https://unpkg\.com/thebe@[\d.]+/lib/index\.js$", first.value.url), first.value.url
