"""`python -m coursekit preview`: the built site served as a static host serves it (text gzipped), offline."""
from __future__ import annotations

import gzip
import subprocess
import sys
import urllib.request

import pytest

from coursekit import CourseKitError
from coursekit.preview import serve


@pytest.fixture
def site(tmp_path):
    (tmp_path / "index.html").write_text("<!doctype html><title>t</title>" + "<p>attention</p>" * 200)
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "fig.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    return tmp_path


def fetch(url: str, accept_gzip: bool) -> tuple[dict, bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if accept_gzip else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(response.headers), response.read()


def test_text_is_gzipped_for_clients_that_accept_it_and_the_bytes_are_the_files(site):
    html = (site / "index.html").read_bytes()
    with serve(site, gzip=True) as base:
        headers, body = fetch(base, accept_gzip=True)
        assert headers.get("Content-Encoding") == "gzip"
        assert gzip.decompress(body) == html and len(body) < len(html) / 5
        headers, body = fetch(base + "index.html", accept_gzip=False)
        assert "Content-Encoding" not in headers and body == html
        headers, body = fetch(base + "_images/fig.png", accept_gzip=True)  # images are served as they are
        assert "Content-Encoding" not in headers and body == (site / "_images" / "fig.png").read_bytes()


def test_without_gzip_every_file_is_served_as_it_is(site):
    with serve(site) as base:
        headers, body = fetch(base, accept_gzip=True)
    assert "Content-Encoding" not in headers and body == (site / "index.html").read_bytes()


def test_a_folder_without_a_built_site_is_refused_by_name(tmp_path):
    with pytest.raises(CourseKitError, match=rf"{tmp_path}: no index.html here; build the site first"):
        with serve(tmp_path):
            pass
    proc = subprocess.run([sys.executable, "-m", "coursekit", "preview", str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "no index.html here" in proc.stderr and "Traceback" not in proc.stderr
