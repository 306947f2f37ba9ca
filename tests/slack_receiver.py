"""A real local HTTP server standing in for a Slack incoming webhook (shared by the notifier,
dev-platform and portal tests)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from quiet_http import QuietThreadingHTTPServer


class Receiver:
    """Answers with the next status in ``script`` (then 200); 'hang' never answers in time."""

    def __init__(self, script: list[int | str]):
        self.script = list(script)
        self.posts: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.posts.append(body)
                answer = receiver.script.pop(0) if receiver.script else 200
                if answer == "hang":
                    time.sleep(3)
                    answer = 200
                self.send_response(int(answer))
                self.end_headers()
                self.wfile.write(b"ok" if answer == 200 else b"server_error")

            def log_message(self, *args: object) -> None:
                pass

        self.server = QuietThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/services/T000/B000/XXXX"

    def close(self) -> None:
        self.server.shutdown()
