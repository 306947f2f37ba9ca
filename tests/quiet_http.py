"""The tests' local HTTP servers (Slack receiver, key endpoints)."""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer


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
