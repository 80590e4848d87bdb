"""What a homework page shows, read from the sources (the pages call it from a hidden cell and glue the results).

``facts(notebook)`` for a released notebook (``release/<id>/<id>.ipynb``): the Binder and download links, built from
``_config.yml`` (the one place that says where the public course lives), and the exercises with their points, read
from the notebook's ``## Exercise N — title (P points)`` headings and nbgrader metadata. Shipped with the book (the
student tree builds the homework pages too), so it needs nothing but the standard library, PyYAML and IPython.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from IPython.display import Markdown

HEADING = re.compile(r"^## (Exercise [\d.]+) — (.+) \((\d+) points?\)$", re.M)


def facts(notebook: str, root: Path | None = None) -> dict:
    """{name: value to glue}: binder_link, binder_url, download_link, table (Markdown), total_points, auto_points,
    manual_points (text)."""
    root = Path(root or Path.cwd().parent)
    config = yaml.safe_load((root / "_config.yml").read_text())
    repo_url = config["repository"]["url"].rstrip("/")
    org_repo = re.sub(r"^https://github\.com/", "", repo_url)
    branch = config["repository"]["branch"]
    binder = config["launch_buttons"]["binderhub_url"].rstrip("/")
    binder_url = f"{binder}/v2/gh/{org_repo}/{branch}?urlpath=lab/tree/{notebook}"
    download_url = f"{repo_url}/raw/{branch}/{notebook}"
    release = json.loads((root / notebook).read_text())
    rows, auto_points, manual_points, current = [], 0.0, 0.0, None
    for cell in release["cells"]:
        source = "".join(cell["source"])
        match = HEADING.search(source) if cell["cell_type"] == "markdown" else None
        if match:
            current = [match.group(1), match.group(2), int(match.group(3)), 0.0, 0.0]
            rows.append(current)
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade"):
            if meta.get("solution"):
                current[4] += meta["points"]
                manual_points += meta["points"]
            else:
                current[3] += meta["points"]
                auto_points += meta["points"]
    table = "\n".join(["| exercise | what you do | points | checked automatically | written answers |",
                       "|---|---|---|---|---|"] + [
        f"| {name} | {title} | {points} | {auto:g} | {manual:g} |" for name, title, points, auto, manual in rows])
    return {"binder_link": Markdown(f"[**Open the homework in Binder**]({binder_url})"),
            "binder_url": Markdown(f"`{binder_url}`"),
            "download_link": Markdown(f"[download the notebook]({download_url})"),
            "table": Markdown(table), "total_points": f"{auto_points + manual_points:g}",
            "auto_points": f"{auto_points:g}", "manual_points": f"{manual_points:g}"}
