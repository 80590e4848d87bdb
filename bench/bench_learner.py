"""What a learner's machine (or Binder: 1-2 GB) must take: each chapter and the solved homework in a fresh kernel.

    .venv/bin/python bench/bench_learner.py [--top 3]

For each chapter (``book/*.md`` in ``_toc.yml`` order, opened as Jupyter opens it, via jupytext) and for the
solved homeworks (``assignments/*/``: each once as a learner runs it top to bottom, and, where it has one, once
more with the training button's handler called, i.e. one training run): wall time from kernel start to the last
cell and the kernel's peak resident memory (VmHWM). Targets: every row ≤ 20 s and ≤ 1 GB. Slowest cells are
listed so a row over budget says where the time goes.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jupytext

from _common import ROOT, machine, run_notebook  # bench/ is on sys.path: the script's folder
from coursekit import book
from coursekit.course import Course

LIMIT_S, LIMIT_MB = 20.0, 1024.0


def chapters() -> list[Path]:
    files = book.chapters(ROOT)
    return [ROOT / f"{f}.md" for f in files if (ROOT / f"{f}.md").exists()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=3, help="slowest cells listed per notebook")
    args = parser.parse_args(argv)
    print(f"bench_learner: {machine()}")
    rows = []
    for path in chapters():
        rows.append((path.relative_to(ROOT), run_notebook(jupytext.read(path), path.parent)))
    for hw in Course.load(ROOT).assignments():  # every homework, solved, as a learner runs it top to bottom
        rows.append((f"{hw.name}, solved (top to bottom)", run_notebook(hw.source, hw.source_folder)))
        if "_on_train_clicked" in "".join(c.source for c in hw.source.cells):
            click = "_on_train_clicked(None)  # what the training button does\nassert training_results, 'no training ran'"
            rows.append((f"{hw.name}, solved + one training run",
                         run_notebook(hw.source, hw.source_folder, extra_code=[click])))
    print(f"\n{'notebook':<44} {'wall s':>7} {'start s':>8} {'peak MB':>8}  {'≤20 s':>5} {'≤1 GB':>5}")
    ok = True
    for name, r in rows:
        fits = (r["wall"] <= LIMIT_S, r["peak_mb"] <= LIMIT_MB)
        ok &= all(fits)
        print(f"{str(name):<44} {r['wall']:7.1f} {r['startup']:8.1f} {r['peak_mb']:8.0f}  "
              f"{'yes' if fits[0] else 'NO':>5} {'yes' if fits[1] else 'NO':>5}")
    print("\nslowest cells (seconds):")
    for name, r in rows:
        top = sorted(r["cells"], key=lambda c: -c[1])[:args.top]
        print(f"  {name}: " + "; ".join(f"#{i} {s:.1f} s `{src}`" for i, s, src in top))
    worst_wall = max(r["wall"] for _, r in rows)
    worst_mem = max(r["peak_mb"] for _, r in rows)
    print(f"\nworst wall {worst_wall:.1f} s = {worst_wall / LIMIT_S:.2f} × the 20 s budget; "
          f"worst peak {worst_mem:.0f} MB = {worst_mem / LIMIT_MB:.2f} × the 1 GB budget; "
          f"{'all within budget' if ok else 'OVER BUDGET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
