"""The report as one self-contained HTML page (inline SVG and CSS: no script, no font, no CDN; it opens offline and
under the hub's Content-Security-Policy) and as CSV of the per-cell numbers.

Pictures carry a title and a description (``role="img"``) and the numbers stand in tables next to them. Colours are
the Okabe–Ito palette (told apart with any colour vision) in CSS variables with a dark-mode set; the heat map's five
shades differ in lightness, so it reads in grey too.
"""
from __future__ import annotations

import csv
import html
import io
from datetime import datetime

E = html.escape

CSS = """
:root{--fg:#1a1a1a;--bg:#fff;--muted:#555;--grid:#ccc;--full:#0072B2;--partial:#E69F00;--none:#999;--bar:#0072B2;
--late:#D55E00;--h0:#f7f7f7;--h1:#c6dbef;--h2:#6baed6;--h3:#2171b5;--h4:#08306b;--link:#0b57d0}
@media (prefers-color-scheme: dark){:root{--fg:#e8e8e8;--bg:#16181c;--muted:#b0b0b0;--grid:#444;--full:#56B4E9;
--partial:#E69F00;--none:#888;--bar:#56B4E9;--late:#ff8c5a;--h0:#24262b;--h1:#1c3d5a;--h2:#2f6f9f;--h3:#5fa8d9;
--h4:#c6e4ff;--link:#8ab4f8}}
body{font:15px/1.5 system-ui,sans-serif;color:var(--fg);background:var(--bg);margin:1.5rem auto;max-width:72rem;
padding:0 1rem} a{color:var(--link)} h1{font-size:1.5rem} h2{font-size:1.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0} th,td{border-bottom:1px solid var(--grid);padding:.25rem .5rem;
text-align:right;vertical-align:top} th:first-child,td:first-child,td.text{text-align:left}
.muted{color:var(--muted)} svg text{fill:var(--fg);font-size:11px} .axis{stroke:var(--grid)}
.full{fill:var(--full)} .partial{fill:var(--partial)} .none{fill:var(--none)} .bar{fill:var(--bar)}
.ci{stroke:var(--fg);stroke-width:1.5} .late{stroke:var(--late);stroke-width:2} .h0{fill:var(--h0)}
.h1{fill:var(--h1)} .h2{fill:var(--h2)} .h3{fill:var(--h3)} .h4{fill:var(--h4)} .key{display:inline-block;width:.9em;
height:.9em;vertical-align:middle;margin:0 .3em 0 .8em;border:1px solid var(--grid)} .legend{margin:.3rem 0}
figure{margin:1rem 0} .line{fill:none;stroke:var(--bar);stroke-width:2} .k-full{background:var(--full)}
.k-partial{background:var(--partial)} .k-none{background:var(--none)} .k-h0{background:var(--h0)}
.k-h1{background:var(--h1)} .k-h2{background:var(--h2)} .k-h3{background:var(--h3)} .k-h4{background:var(--h4)}
"""


def pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f} %"


def num(x, digits=2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def interval(ci, fmt=pct) -> str:
    return "–" if not ci else f"{fmt(ci[0])} to {fmt(ci[1])}"


def svg(width: int, height: int, title: str, desc: str, body: str, ident: str) -> str:
    return (f'<svg role="img" aria-labelledby="{ident}-t {ident}-d" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">'
            f'<title id="{ident}-t">{E(title)}</title><desc id="{ident}-d">{E(desc)}</desc>{body}</svg>')


def histogram_svg(totals: dict) -> str:
    counts, top = totals["histogram"], totals["max_total"]
    w, h, left, bottom = 640, 200, 40, 30
    peak = max(counts) or 1
    bw = (w - left - 10) / len(counts)
    parts = [f'<line class="axis" x1="{left}" y1="{h - bottom}" x2="{w - 10}" y2="{h - bottom}"/>']
    for k, c in enumerate(counts):
        bh = (h - bottom - 10) * c / peak
        parts.append(f'<rect class="bar" x="{left + k * bw + 1:.1f}" y="{h - bottom - bh:.1f}" width="{bw - 2:.1f}" '
                     f'height="{bh:.1f}"><title>{c} students</title></rect>')
    for frac in (0, 0.25, 0.5, 0.75, 1):
        x = left + frac * (w - left - 10)
        parts.append(f'<text x="{x:.1f}" y="{h - bottom + 15}" text-anchor="middle">{frac * top:g}</text>')
    parts.append(f'<text x="{left - 5}" y="15" text-anchor="end">{peak}</text>')
    desc = (f"{totals['n']} totals out of {top:g}: median {num(totals['median'])}, quartiles {num(totals['q1'])} and "
            f"{num(totals['q3'])}; counts per bin: {', '.join(map(str, counts))}")
    return svg(w, h, "Distribution of total scores", desc, "".join(parts), "hist")


def pass_bars_svg(items: list[dict]) -> str:
    rows = [i for i in items if i["n"]]
    w, row_h, left = 640, 22, 190
    h = row_h * len(rows) + 30
    span = w - left - 20
    parts = []
    for k, item in enumerate(rows):
        y = 10 + k * row_h
        x = left
        for part in ("full", "partial", "none"):
            width = span * item[part] / item["n"]
            parts.append(f'<rect class="{part}" x="{x:.1f}" y="{y}" width="{width:.1f}" height="{row_h - 6}">'
                         f'<title>{E(item["grade_id"])}: {part} credit {item[part]} of {item["n"]}</title></rect>')
            x += width
        if item["full_ci"]:
            lo, hi = (left + span * v for v in item["full_ci"])
            mid = y + (row_h - 6) / 2
            parts.append(f'<line class="ci" x1="{lo:.1f}" y1="{mid}" x2="{hi:.1f}" y2="{mid}"/>'
                         f'<line class="ci" x1="{lo:.1f}" y1="{mid - 4}" x2="{lo:.1f}" y2="{mid + 4}"/>'
                         f'<line class="ci" x1="{hi:.1f}" y1="{mid - 4}" x2="{hi:.1f}" y2="{mid + 4}"/>')
        parts.append(f'<text x="{left - 6}" y="{y + row_h - 10}" text-anchor="end">{E(item["grade_id"][:28])}</text>')
    for frac in (0, 0.5, 1):
        parts.append(f'<text x="{left + frac * span:.1f}" y="{h - 5}" text-anchor="middle">{frac:.0%}</text>')
    desc = "; ".join(f"{i['grade_id']}: full credit {pct(i['full_share'])} (95 % interval "
                     f"{interval(i['full_ci'])}), partial {i['partial']}, none {i['none']}" for i in rows)
    return svg(w, h, "Credit per graded cell, with the 95 % interval of the full-credit share", desc,
               "".join(parts), "bars")


def heatmap_svg(heat: dict) -> str:
    rows, columns, values = heat["rows"], heat["columns"], heat["values"]
    if not columns or not rows:
        return "<p class='muted'>No autograded tests or no submissions yet.</p>"
    left, cell_h = 190, 16
    cell_w = max(3.0, min(16.0, 440 / len(columns)))
    w, h = int(left + cell_w * len(columns) + 10), cell_h * len(rows) + 24
    parts = []
    for r, name in enumerate(rows):
        y = 4 + r * cell_h
        parts.append(f'<text x="{left - 6}" y="{y + cell_h - 4}" text-anchor="end">{E(name[:28])}</text>')
        for c, v in enumerate(values[r]):
            shade = min(4, int(v * 4 + 1e-9))
            parts.append(f'<rect class="h{shade}" x="{left + c * cell_w:.1f}" y="{y}" width="{cell_w:.1f}" '
                         f'height="{cell_h - 1}"/>')
    parts.append(f'<text x="{left}" y="{h - 4}">highest total</text>'
                 f'<text x="{w - 10}" y="{h - 4}" text-anchor="end">lowest total</text>')
    per = f" (each column: {heat['group']} students of neighbouring rank)" if heat.get("group", 1) > 1 else ""
    desc = (f"{len(rows)} tests by {len(columns)} columns of students ordered by total{per}; darker is more of the "
            "test's points. Share of students with full credit per test is in the table below.")
    return svg(w, h, "Tests by students, ordered by total", desc, "".join(parts), "heat")


def timeline_svg(timeline: dict) -> str:
    times = [datetime.fromisoformat(t) for t in timeline["times"]]
    if not times:
        return "<p class='muted'>No submission times recorded.</p>"
    due = datetime.fromisoformat(timeline["duedate"]) if timeline["duedate"] else None
    first, last = min(times + ([due] if due else [])), max(times + ([due] if due else []))
    span = (last - first).total_seconds() or 1.0
    w, h, left, bottom = 640, 160, 40, 30
    inner = w - left - 10
    n = len(times)
    points = " ".join(f"{left + inner * (t - first).total_seconds() / span:.1f},"
                      f"{h - bottom - (h - bottom - 10) * (k + 1) / n:.1f}" for k, t in enumerate(times))
    parts = [f'<line class="axis" x1="{left}" y1="{h - bottom}" x2="{w - 10}" y2="{h - bottom}"/>',
             f'<polyline class="line" points="{points}"/>',
             f'<text x="{left}" y="{h - bottom + 15}">{first:%Y-%m-%d %H:%M}</text>',
             f'<text x="{w - 10}" y="{h - bottom + 15}" text-anchor="end">{last:%Y-%m-%d %H:%M}</text>',
             f'<text x="{left - 5}" y="15" text-anchor="end">{n}</text>']
    if due:
        x = left + inner * (due - first).total_seconds() / span
        parts.append(f'<line class="late" x1="{x:.1f}" y1="5" x2="{x:.1f}" y2="{h - bottom}"/>'
                     f'<text x="{x + 4:.1f}" y="14">due</text>')
    desc = (f"{n} submissions from {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} (UTC)"
            + (f"; due {due:%Y-%m-%d %H:%M}, {timeline['late']} after it" if due else "; no due date"))
    return svg(w, h, "Submissions over time (cumulative) against the due date", desc, "".join(parts), "time")


def _item_table(items: list[dict]) -> str:
    head = ("<tr><th scope='col'>Cell</th><th scope='col'>Kind</th><th scope='col'>Points</th><th scope='col'>n</th>"
            "<th scope='col'>Full</th><th scope='col'>Partial</th><th scope='col'>None</th>"
            "<th scope='col'>Full credit (95 % interval)</th><th scope='col'>Difficulty</th>"
            "<th scope='col'>Discrimination r (95 % interval)</th><th scope='col'>Note</th></tr>")
    rows = []
    for i in items:
        rows.append(f"<tr><td><code>{E(i['grade_id'])}</code></td><td class='text'>{E(i['kind'])}</td>"
                    f"<td>{i['max_score']:g}</td><td>{i['n']}</td><td>{i['full']}</td><td>{i['partial']}</td>"
                    f"<td>{i['none']}</td><td>{pct(i['full_share'])} ({interval(i['full_ci'])})</td>"
                    f"<td>{num(i['difficulty'])}</td><td>{num(i['discrimination'])} "
                    f"({interval(i['discrimination_ci'], num)})</td><td class='text'>{E(i['note'])}"
                    + (f" {i['waiting']} waiting for a grader." if i["waiting"] else "") + "</td></tr>")
    return f"<table><caption class='muted'>Per graded cell</caption>{head}{''.join(rows)}</table>"


def _failures(items: list[dict]) -> str:
    out = []
    for i in items:
        f = i.get("failures")
        if not f or not f["failed"]:
            continue
        lis = []
        for g in f["groups"]:
            links = ", ".join(f"<a href='{E(e['url'])}'>{E(e['student'])}</a>" if e["url"] else E(e["student"])
                              for e in g["examples"])
            lis.append(f"<li><strong>{pct(g['share'])}</strong> ({g['count']} of {f['failed']}): "
                       f"{E(g['reason'])}" + (f" <span class='muted'>e.g. {links}</span>" if links else "") + "</li>")
        out.append(f"<h3><code>{E(i['grade_id'])}</code>: {f['failed']} of {i['n']} students lost points</h3>"
                   f"<ul>{''.join(lis)}</ul>")
    return "".join(out) or "<p>No test failed.</p>"


def _graders(g: dict) -> str:
    if not g["rows"]:
        return f"<p class='muted'>{E(g['note'])}</p>"
    rows = "".join(
        f"<tr><td>{E(r['grader'])}</td><td>{r['n']}</td><td>{pct(r['mean'])}</td><td>{pct(r['sd'])}</td>"
        f"<td>{pct(r['others_mean'])}</td><td>"
        + ("–" if not r["difference"] else f"{100 * r['difference']['diff']:+.0f} points "
           f"({100 * r['difference']['low']:+.0f} to {100 * r['difference']['high']:+.0f})") + "</td></tr>"
        for r in g["rows"])
    return ("<table><caption class='muted'>Written answers: share of the points each grader gave</caption>"
            "<tr><th scope='col'>Grader</th><th scope='col'>Answers</th><th scope='col'>Mean</th>"
            "<th scope='col'>Spread (sd)</th><th scope='col'>Everyone else</th>"
            f"<th scope='col'>Difference (95 % interval)</th></tr>{rows}</table>"
            + (f"<p class='muted'>{g['unallocated']} students have no grader in the allocation.</p>"
               if g.get("unallocated") else ""))


def page(report: dict, title_suffix: str = "") -> str:
    t, s = report["totals"], report["students"]
    absent = s["absent"] if isinstance(s["absent"], int) else len(s["absent"])
    unreadable = s.get("unreadable", 0)
    unreadable = unreadable if isinstance(unreadable, int) else len(unreadable)
    legend = ("<p class='legend'><span class='key k-full'></span>full credit<span class='key k-partial'></span>"
              "partial<span class='key k-none'></span>none; the line: 95 % interval of the full-credit share</p>")
    heat_legend = ("<p class='legend'>Share of the test's points: " + "".join(
        f"<span class='key k-h{k}'></span>{lab}" for k, lab in
        enumerate(("under 25 %", "25–50 %", "50–75 %", "75–99 %", "all"))) + "</p>")
    summary = (f"{s['submitted']} submissions"
               + (f", {absent} students in the gradebook without one" if absent else "")
               + (f"; {s['waiting_for_manual']} written answers wait for a grader" if s["waiting_for_manual"] else "")
               + (f"; {unreadable} autograded notebooks could not be read (their students have no failure reasons)"
                  if unreadable else "")
               + (f"; {t['above_max']} totals above the maximum (extra credit)" if t.get("above_max") else "")
               + f". Totals out of {t['max_total']:g}: mean {num(t['mean'])} (sd {num(t['sd'])}), median "
               f"{num(t['median'])}, quartiles {num(t['q1'])}–{num(t['q3'])}, range {num(t['min'])}–{num(t['max'])}.")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>What the class got wrong: {E(report['assignment'])}{E(title_suffix)}</title><style>{CSS}</style></head>
<body><main>
<h1>What the class got wrong: <code>{E(report['assignment'])}</code></h1>
<p>{E(summary)}</p>
<p class="muted">Difficulty: the mean share of a cell's points. Discrimination: the correlation of a cell's score with
the rest of the total (corrected item–total r); near 0 or below, the cell does not separate students who did well from
those who did not. Intervals are 95 % (Wilson for shares, Fisher's z for r).{' Student ids removed for sharing.'
    if report.get('anonymised') else ''}</p>
<h2>Totals</h2><figure>{histogram_svg(t)}</figure>
<h2>Credit per cell</h2>{legend}<figure>{pass_bars_svg(report['items'])}</figure>
{_item_table(report['items'])}
<h2>Why tests failed</h2><p class="muted">The checker's own reasons, as a student's feedback shows them, with numbers
blanked to group the same mistake.</p>{_failures(report['items'])}
<h2>Tests by students</h2>{heat_legend}<figure>{heatmap_svg(report['heatmap'])}</figure>
<h2>Submissions over time</h2><figure>{timeline_svg(report['timeline'])}</figure>
<h2>Graders</h2>{_graders(report['graders'])}
</main></body></html>
"""


CSV_FIELDS = ["grade_id", "notebook", "kind", "max_score", "n", "waiting", "full", "partial", "none", "full_share",
              "full_low", "full_high", "difficulty", "discrimination", "discrimination_low", "discrimination_high",
              "failed", "top_reason", "top_reason_share", "note"]


def _cell(value):
    """A spreadsheet never reads a text cell as a formula (=, +, -, @, tab or CR first: OWASP's CSV injection)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def items_csv(report: dict) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for i in report["items"]:
        groups = i.get("failures", {}).get("groups", [])
        writer.writerow({k: _cell(v) for k, v in {**{k: i.get(k) for k in CSV_FIELDS if k in i},
                         "full_low": i["full_ci"][0] if i["full_ci"] else None,
                         "full_high": i["full_ci"][1] if i["full_ci"] else None,
                         "discrimination_low": i["discrimination_ci"][0] if i["discrimination_ci"] else None,
                         "discrimination_high": i["discrimination_ci"][1] if i["discrimination_ci"] else None,
                         "failed": i.get("failures", {}).get("failed"),
                         "top_reason": groups[0]["reason"] if groups else None,
                         "top_reason_share": groups[0]["share"] if groups else None}.items()})
    return out.getvalue()
