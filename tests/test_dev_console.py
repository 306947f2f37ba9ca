"""`jobplane dev`'s console keeps one line per event (issue 47, item 7): the HTTP client's
"Connection pool is full" warnings, which many runs at once raised by the hundred, go to the
data directory's engine.log with the engine's other noise. Reproduced with a real pool that is
full: more threads at once than it keeps connections, against a real local HTTP server."""

from __future__ import annotations

import http.server
import io
import logging
import threading
from pathlib import Path
from typing import Iterator

import pytest
import urllib3

from jobplane.cli.local import ENGINE_LOG, ENGINE_LOGGERS, engine_log_to_file


class _Slow(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    entered = threading.Barrier(4)

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        self.entered.wait(timeout=60)  # every request is in flight at once: each has its own connection
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def console() -> Iterator[io.StringIO]:
    """The console as `jobplane dev` sets it up (logging.basicConfig on the root logger)."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    saved = {name: (logging.getLogger(name).handlers[:], logging.getLogger(name).propagate,
                    logging.getLogger(name).level) for name in ENGINE_LOGGERS}
    root.addHandler(handler)
    yield out
    root.removeHandler(handler)
    for name, (handlers, propagate, level) in saved.items():
        logger = logging.getLogger(name)
        for h in logger.handlers[:]:
            if h not in handlers:
                logger.removeHandler(h)
                h.close()
        logger.propagate, logger.level = propagate, level


def test_connection_pool_warnings_go_to_engine_log_not_the_console(tmp_path: Path, console: io.StringIO) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        engine_log_to_file(tmp_path)
        pool = urllib3.HTTPConnectionPool("127.0.0.1", server.server_address[1], maxsize=1, block=False)
        threads = [threading.Thread(target=lambda: pool.request("GET", "/", retries=False)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        server.shutdown()
    logged = (tmp_path / ENGINE_LOG).read_text()
    assert "Connection pool is full" in logged  # it happened, and is kept
    assert "Connection pool is full" not in console.getvalue()
