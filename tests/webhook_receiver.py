"""A real local HTTP server standing in for a signed webhook's receiver (an on-call relay, a
PagerDuty or Teams bridge). It checks every request's signature as docs/notifications.md tells a
receiver to, with its own code (stdlib hmac, not jobplane's): HMAC-SHA256 of ``timestamp.body``
keyed with the shared secret, compared in constant time, the timestamp within 5 minutes."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from quiet_http import LocalServer

SIGNING_SECRET = "test-signing-secret-0123456789abcdef"


def verified(secret: str, headers: dict[str, str], body: bytes, now: float) -> bool:
    """The receiver's check, written from the documentation."""
    timestamp = headers.get("X-Jobplane-Timestamp", "")
    signature = headers.get("X-Jobplane-Signature", "")
    if not timestamp.isdigit() or abs(now - int(timestamp)) > 300:
        return False
    expected = "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    verified: bool


@dataclass
class WebhookReceiver:
    """Answers with the next (status, headers) of ``script`` (then 200)."""

    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    secret: str = SIGNING_SECRET

    def __post_init__(self) -> None:
        self.received: list[Received] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {k: v for k, v in self.headers.items()}
                receiver.received.append(Received(self.path, headers, json.loads(raw),
                                                  verified(receiver.secret, headers, raw, time.time())))
                status, extra = receiver.script.pop(0) if receiver.script else (200, {})
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.local = LocalServer(Handler)
        self.url = f"{self.local.base}/hooks/oncall"

    def targets(self, name: str = "oncall") -> str:
        """The webhook secret's JSON naming this receiver."""
        return json.dumps({name: {"url": self.url, "signing_secret": self.secret}})

    def close(self) -> None:
        self.local.close()
