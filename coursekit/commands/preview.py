"""``python -m coursekit preview [DIR] [--port N] [--no-gzip]``: serve a built site on http://127.0.0.1:8000/ as a
static host does (``coursekit.preview``), offline."""
from __future__ import annotations

import argparse
from pathlib import Path

from .. import ROOT, CourseKitError, preview
from . import course_arguments


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit preview", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("directory", nargs="?", type=Path, default=ROOT / "_build" / "html",
                        help="the built site (default: _build/html)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--no-gzip", action="store_true", help="serve files as they are")
    args = parser.parse_args(argv)
    try:
        server = preview.site_server(args.directory, args.port, not args.no_gzip)
    except OSError as error:
        raise CourseKitError(f"cannot listen on 127.0.0.1:{args.port}: {error.strerror} (try --port)") from error
    print(f"Serving {args.directory} on http://127.0.0.1:{server.server_port}/ (Ctrl+C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
