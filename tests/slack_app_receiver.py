"""A real local HTTP server standing in for the Slack Web API of an app with interactivity:
chat.postMessage (an alert, or an answer in its thread), chat.update, views.open and users.info,
each checking the bot token as Slack does. Every call is kept, in order, in ``calls``."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from quiet_http import LocalServer, send_json

BOT_TOKEN = "xoxb-0000-buttons-token"


class SlackApi:
    """``users``: Slack user id -> the user object users.info answers with."""

    def __init__(self, users: dict[str, dict]):
        self.users = users
        self.calls: list[tuple[str, dict]] = []
        self._ts = itertools.count(1)
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - users.info is a GET with query parameters
                parts = urlsplit(self.path)
                self.answer(parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()})

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.headers.get("Content-Type", "").startswith("application/json"):
                    body = json.loads(raw or "{}")
                else:
                    body = {k: v[0] for k, v in parse_qs(raw).items()}
                self.answer(urlsplit(self.path).path, body)

            def answer(self, path: str, body: dict) -> None:
                method = path.rsplit("/", 1)[-1]
                with api._lock:
                    api.calls.append((method, body))
                if self.headers.get("Authorization") != f"Bearer {BOT_TOKEN}":
                    reply: dict = {"ok": False, "error": "invalid_auth"}
                elif method == "chat.postMessage":
                    reply = {"ok": True, "channel": "C0ALERTS01", "ts": f"1700000000.{next(api._ts):06d}"}
                elif method == "chat.update":
                    reply = {"ok": True, "channel": body.get("channel"), "ts": body.get("ts")}
                elif method == "views.open":
                    view = body.get("view")
                    view = json.loads(view) if isinstance(view, str) else view
                    reply = {"ok": True, "view": {**view, "id": "V0MODAL01"}} if body.get("trigger_id") else \
                        {"ok": False, "error": "invalid_trigger_id"}
                elif method == "users.info":
                    user = api.users.get(body.get("user", ""))
                    reply = {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}
                else:
                    reply = {"ok": False, "error": "unknown_method"}
                send_json(self, reply)

            def log_message(self, *args: object) -> None:
                pass

        self.local = LocalServer(Handler)
        self.api_url = f"{self.local.base}/api/"

    def of(self, method: str) -> list[dict]:
        with self._lock:
            return [body for m, body in self.calls if m == method]

    def close(self) -> None:
        self.local.close()


def person(user_id: str, email: str, team_id: str, confirmed: bool = True) -> dict:
    """A users.info user object (https://docs.slack.dev/reference/methods/users.info)."""
    return {"id": user_id, "team_id": team_id, "name": email.split("@")[0], "deleted": False, "is_bot": False,
            "is_email_confirmed": confirmed, "profile": {"email": email, "display_name": email.split("@")[0]}}


def serving(users: dict[str, dict]) -> Iterator[SlackApi]:
    api = SlackApi(users)
    try:
        yield api
    finally:
        api.close()
