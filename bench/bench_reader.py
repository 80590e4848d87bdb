"""What a reader on a phone gets: Lighthouse (mobile preset) on every page of the built site, served with gzip.

    .venv/bin/python bench/bench_reader.py [--site _build/html] [--runs 3] [--page book/02_attention.html]
                                           [--json bench/results/reader.json]

The site is served from 127.0.0.1 by ``coursekit.preview`` (``python -m coursekit preview``), which gzips text
responses (HTML, CSS, JS, JSON, SVG) as a static host does. Lighthouse (npm ``lighthouse``, pinned in package.json; ``npm ci`` installs it) drives the system
Chromium (``CHROME_PATH=/usr/bin/chromium``) with its default mobile preset: an emulated phone, simulated slow 4G
and a 4x slower CPU. Each page is measured ``--runs`` times; the table shows the median of each value, then the worst
page for each. Redirect-only pages (Jupyter Book's index.html) are listed, not measured.

Targets (issue 16): performance >= 90, accessibility 100, best practices 100, <= 600 KB transferred, no console
error. Lighthouse scores are noisy on a shared machine: compare runs made side by side, and read the bytes (exact)
before the timings (simulated from a trace, so they move with the machine's load).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from coursekit.preview import serve

ROOT = Path(__file__).resolve().parent.parent
LIGHTHOUSE = ROOT / "node_modules" / ".bin" / "lighthouse"
CHROMIUM = "/usr/bin/chromium"
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"]
CATEGORIES = ("performance", "accessibility", "best-practices")
REFRESH = re.compile(r'<meta http-equiv="refresh"', re.I)
SKIP = ("_static/", "_sources/", "_images/")
TARGETS = {"performance": 90, "accessibility": 100, "best-practices": 100, "kb": 600}


def site_pages(html: Path) -> tuple[list[str], list[str]]:
    """(pages to measure, redirect-only pages)."""
    pages, redirects = [], []
    for path in sorted(html.rglob("*.html")):
        rel = path.relative_to(html).as_posix()
        if rel.startswith(SKIP):
            continue
        (redirects if REFRESH.search(path.read_text(encoding="utf-8")[:2000]) else pages).append(rel)
    return pages, redirects


def lighthouse(url: str, workdir: Path) -> dict:
    """One Lighthouse run (mobile preset, the default) on ``url``; returns the values this benchmark reports."""
    out = workdir / "report.json"
    profile = Path(tempfile.mkdtemp(prefix="lh-profile-", dir=workdir))  # an empty --user-data-dir every run
    flags = " ".join(CHROME_FLAGS + [f"--user-data-dir={profile}"])
    cmd = [str(LIGHTHOUSE), url, "--quiet", "--output=json", f"--output-path={out}",
           f"--only-categories={','.join(CATEGORIES)}", f"--chrome-flags={flags}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "CHROME_PATH": CHROMIUM},
                          timeout=600)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"lighthouse failed on {url} (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    report = json.loads(out.read_text())
    out.unlink()
    if report.get("runtimeError"):
        raise SystemExit(f"lighthouse on {url}: {report['runtimeError']}")
    audits = report["audits"]
    console = audits.get("errors-in-console", {}).get("details", {}).get("items", [])
    failed = {c: [a["id"] for a in report["categories"][c]["auditRefs"]
                  if a.get("weight", 0) > 0 and (audits[a["id"]].get("score") is not None)
                  and audits[a["id"]]["score"] < 1]
              for c in CATEGORIES}
    return {
        **{c: round(100 * (report["categories"][c]["score"] or 0)) for c in CATEGORIES},
        "kb": audits["total-byte-weight"]["numericValue"] / 1024,
        "requests": len(audits.get("network-requests", {}).get("details", {}).get("items", [])),
        "lcp_s": audits["largest-contentful-paint"]["numericValue"] / 1000,
        "tbt_ms": audits["total-blocking-time"]["numericValue"],
        "console_errors": [item.get("description", "")[:160] for item in console],
        "failed_audits": failed,
    }


def median_of(runs: list[dict]) -> dict:
    summary = {k: statistics.median(r[k] for r in runs) for k in (*CATEGORIES, "kb", "requests", "lcp_s", "tbt_ms")}
    summary["console_errors"] = sorted({e for r in runs for e in r["console_errors"]})
    summary["failed_audits"] = {c: sorted({a for r in runs for a in r["failed_audits"][c]}) for c in CATEGORIES}
    summary["runs"] = runs
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html", help="the built site (make book)")
    parser.add_argument("--runs", type=int, default=3, help="Lighthouse runs per page (the median is reported)")
    parser.add_argument("--page", action="append", help="measure only this page (repeatable), e.g. index.html")
    parser.add_argument("--json", type=Path, help="also write every run's values to this file")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").exists():
        raise SystemExit(f"{args.site}: no index.html; build the site first (make book)")
    if not LIGHTHOUSE.exists():
        raise SystemExit(f"{LIGHTHOUSE} missing: run `npm ci` in {ROOT} (lighthouse is pinned in package.json)")
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} missing: apt-get install chromium")
    version = subprocess.run([str(LIGHTHOUSE), "--version"], capture_output=True, text=True).stdout.strip()
    pages, redirects = site_pages(args.site)
    if args.page:
        pages = [p for p in pages if p in args.page]
    load = os.getloadavg()[0]
    print(f"bench_reader: Lighthouse {version}, mobile preset, {args.runs} runs per page (median), site "
          f"{args.site} served with gzip; {os.cpu_count()} cores, load average {load:.1f} at start")
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-reader-") as tmp, serve(args.site, gzip=True) as base:
        for rel in pages:
            runs = [lighthouse(base + rel, Path(tmp)) for _ in range(args.runs)]
            results[rel] = median_of(runs)
            r = results[rel]
            print(f"  measured {rel}: perf {r['performance']:.0f}, a11y {r['accessibility']:.0f}, "
                  f"bp {r['best-practices']:.0f}, {r['kb']:.0f} KB", flush=True)

    header = f"{'page':38s} {'perf':>5s} {'a11y':>5s} {'bp':>5s} {'KB':>7s} {'req':>4s} {'LCP s':>6s} {'TBT ms':>7s}"
    print("\n" + header)
    for rel, r in results.items():
        print(f"{rel:38s} {r['performance']:5.0f} {r['accessibility']:5.0f} {r['best-practices']:5.0f} "
              f"{r['kb']:7.0f} {r['requests']:4.0f} {r['lcp_s']:6.1f} {r['tbt_ms']:7.0f}")
    for rel in redirects:
        print(f"{rel:38s} (redirect only, not measured)")
    if not results:
        return 1
    worst = {
        "performance": min(results.items(), key=lambda kv: kv[1]["performance"]),
        "accessibility": min(results.items(), key=lambda kv: kv[1]["accessibility"]),
        "best-practices": min(results.items(), key=lambda kv: kv[1]["best-practices"]),
        "kb": max(results.items(), key=lambda kv: kv[1]["kb"]),
        "lcp_s": max(results.items(), key=lambda kv: kv[1]["lcp_s"]),
        "tbt_ms": max(results.items(), key=lambda kv: kv[1]["tbt_ms"]),
    }
    print(f"{'worst':38s} {worst['performance'][1]['performance']:5.0f} "
          f"{worst['accessibility'][1]['accessibility']:5.0f} {worst['best-practices'][1]['best-practices']:5.0f} "
          f"{worst['kb'][1]['kb']:7.0f} {'':4s} {worst['lcp_s'][1]['lcp_s']:6.1f} {worst['tbt_ms'][1]['tbt_ms']:7.0f}")
    print("worst pages: " + ", ".join(f"{k} {v[0]}" for k, v in worst.items()))
    misses = []
    for rel, r in results.items():
        for key in ("performance", "accessibility", "best-practices"):
            if r[key] < TARGETS[key]:
                misses.append(f"{rel}: {key} {r[key]:.0f} < {TARGETS[key]} (audits below 1: "
                              f"{', '.join(r['failed_audits'][key]) or '-'})")
        if r["kb"] > TARGETS["kb"]:
            misses.append(f"{rel}: {r['kb']:.0f} KB > {TARGETS['kb']} KB")
        if r["console_errors"]:
            misses.append(f"{rel}: console errors {r['console_errors']}")
    print("targets (perf >= 90, a11y 100, best practices 100, <= 600 KB, no console error): "
          + ("all met" if not misses else f"{len(misses)} missed"))
    for miss in misses:
        print("  " + miss)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
