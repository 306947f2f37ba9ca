"""The tests' local HTTP servers (Slack receiver, key endpoints)."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietThreadingHTTPServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that takes a client going away as the end of its request.

    Some handlers answer after their client gave up on purpose (a Slack webhook that hangs, a
    key endpoint held open); writing the answer then raises BrokenPipeError. socketserver prints
    every handler exception to sys.stderr from the server's thread, whenever it happens: under
    xdist that can land inside another test's captured CLI output. A client that went away is
    the point of those cases; any other error is still printed.
    """

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class LocalServer:
    """A handler class served on 127.0.0.1's next free port, on a daemon thread (no fixed port:
    tests run in parallel). ``base``: its http://127.0.0.1:PORT."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.server = QuietThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()  # the listening socket too, not only the serving thread


def send_json(handler: BaseHTTPRequestHandler, reply: object, status: int = 200) -> None:
    """Answer ``reply`` as JSON, as Slack's Web API does (a length, a UTF-8 content type)."""
    data = json.dumps(reply).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json; charset=utf-8")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
