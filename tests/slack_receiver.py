"""A real local HTTP server standing in for Slack: incoming webhooks (any path under
/services/) and the Web API's chat.postMessage (/api/chat.postMessage, bearer token), shared by
the notifier, dev-platform and portal tests."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

from quiet_http import LocalServer, send_json


BOT_TOKEN = "xoxb-0000-test-token"


class Receiver:
    """Answers with the next status in ``script`` (then 200); 'hang' never answers in time.
    ``posts`` holds every body, ``requests`` (path, body) in order. chat.postMessage answers as
    Slack does: ``ok`` false with ``invalid_auth`` for another token and ``channel_not_found``
    for a channel in ``missing_channels``."""

    def __init__(self, script: list[int | str], missing_channels: tuple[str, ...] = ()):
        self.script = list(script)
        self.posts: list[dict] = []
        self.requests: list[tuple[str, dict]] = []
        self.missing_channels = missing_channels
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.posts.append(body)
                receiver.requests.append((self.path, body))
                if self.path == "/api/chat.postMessage":
                    self.web_api(body)
                    return
                answer = receiver.script.pop(0) if receiver.script else 200
                if answer == "hang":
                    time.sleep(3)
                    answer = 200
                self.send_response(int(answer))
                self.end_headers()
                self.wfile.write(b"ok" if answer == 200 else b"server_error")

            def web_api(self, body: dict) -> None:
                answer = receiver.script.pop(0) if receiver.script else 200
                if answer != 200:
                    self.send_response(int(answer))
                    if int(answer) == 429:
                        self.send_header("Retry-After", "1")
                    self.end_headers()
                    return
                if self.headers.get("Authorization") != f"Bearer {BOT_TOKEN}":
                    reply = {"ok": False, "error": "invalid_auth"}
                elif body.get("channel") in receiver.missing_channels:
                    reply = {"ok": False, "error": "channel_not_found"}
                else:
                    reply = {"ok": True, "channel": "C0" + str(abs(hash(body.get("channel"))))[:8], "ts": "1.000100"}
                send_json(self, reply)

            def log_message(self, *args: object) -> None:
                pass

        self.local = LocalServer(Handler)
        self.base = self.local.base
        self.url = f"{self.base}/services/T000/B000/XXXX"
        self.api_url = f"{self.base}/api/"

    def webhook(self, name: str) -> str:
        """Another incoming webhook of this workspace (one per channel)."""
        return f"{self.base}/services/T000/{name}/XXXX"

    def close(self) -> None:
        self.local.close()


def serving() -> Iterator[Receiver]:
    """The body of a test's (or a module's) ``slack`` fixture: a receiver answering 200 to
    everything, closed after."""
    receiver = Receiver([])
    try:
        yield receiver
    finally:
        receiver.close()
