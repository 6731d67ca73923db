"""Headless Chromium as the site's browser tests and tools/bench/bench_browser.py open
it: the system Chromium (``find_chromium``) with the same flags (``CHROMIUM_FLAGS``), a
built site served from 127.0.0.1 by a quiet local server (``served``), and every other
host refused (``keep_offline``). The tests import it with tools/ on ``sys.path``
(``from bench.chromium import ...``, as tests/site_pages.py does); a benchmark may not
import a test module (ARCHITECTURE.md), so what both need lives here.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str | None:
    """The Chromium to drive: $CHROMIUM, else the first of chromium, chromium-browser and
    google-chrome on the PATH; None where there is none."""
    for name in (os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the folder and logs nothing."""

    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


@contextlib.contextmanager
def served(folder: str | Path, handler: type = QuietHandler, **state) -> Iterator[tuple[_Server, str]]:
    """Serves ``folder`` on 127.0.0.1 (a free port) in a thread, with ``handler`` (a
    ``SimpleHTTPRequestHandler`` subclass); ``state`` becomes attributes of the server
    before the first request (what a handler reads as ``self.server.<name>``). Yields the
    server and its address, ``http://127.0.0.1:PORT/``; shut down on exit."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"expected a folder to serve (a built site), got {str(folder)!r}")
    if not (isinstance(handler, type) and issubclass(handler, http.server.SimpleHTTPRequestHandler)):
        raise ValueError(f"expected a SimpleHTTPRequestHandler subclass, got {handler!r}")
    server = _Server(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    for name, value in state.items():
        setattr(server, name, value)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def keep_offline(context, refused: list | None = None, files: bool = False) -> list:
    """Lets a Playwright browser context reach 127.0.0.1 only (and ``file:`` addresses
    with ``files``); every other request is aborted as if offline and its address added
    to ``refused`` (returned: a new list unless one is given)."""
    if not hasattr(context, "route"):
        raise ValueError(f"expected a Playwright browser context, got {context!r}")
    refused = [] if refused is None else refused

    def route(r):
        url = urlsplit(r.request.url)
        if url.hostname == "127.0.0.1" or (files and url.scheme == "file"):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort("internetdisconnected")

    context.route("**/*", route)
    return refused
