"""Clicks as Slack sends them, signed with the app's signing secret: what
``jobplane dev-slack-click`` and the tests send to ``/slack/interactions``, so the buttons are
tested end to end (signature, ingress, queue, worker, action, audit) without Slack.

The payloads carry the fields the worker reads, in Slack's shapes
(https://docs.slack.dev/reference/interaction-payloads/block_actions-payload,
https://docs.slack.dev/reference/interaction-payloads/view-interactions-payload): a click's
``trigger_id`` and button, a submission's view with its ``private_metadata`` (the modal the
worker opens, built by the same function) and the reason typed in.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from urllib.parse import urlencode

from jobplane.contract.slack_interactivity import SlackApp
from jobplane.contract.types import JsonObject
from jobplane.platform.slack_actions.render import ACTION_PREFIX, REASON_ACTION, REASON_BLOCK, modal
from jobplane.platform.slack_actions.signing import signed_headers
from jobplane.platform.slack_actions.store import AlertRecord


def _who(app: SlackApp, user: str) -> JsonObject:
    return {"api_app_id": app.app_id, "team": {"id": app.team_id, "domain": "dev"},
            "user": {"id": user, "team_id": app.team_id, "username": user}}


def click(app: SlackApp, user: str, record: AlertRecord, action: str) -> JsonObject:
    """A ``block_actions`` payload: ``user`` clicked the ``action`` button of the alert."""
    now = f"{time.time():.6f}"
    return {"type": "block_actions", **_who(app, user),
            "trigger_id": f"{int(time.time())}.{secrets.randbelow(10**9)}.{secrets.token_hex(16)}",
            "container": {"type": "message", "message_ts": record.ts, "channel_id": record.channel},
            "channel": {"id": record.channel}, "message": {"ts": record.ts},
            "actions": [{"type": "button", "action_id": ACTION_PREFIX + action, "block_id": "jobplane_buttons",
                         "value": record.id, "action_ts": now}]}


def submission(app: SlackApp, user: str, record: AlertRecord, action: str, reason: str,
               view_id: str | None = None) -> JsonObject:
    """A ``view_submission`` payload: ``user`` submitted the modal of ``action`` with ``reason``."""
    view = {**modal(record, action), "id": view_id or "V" + secrets.token_hex(5).upper(), "team_id": app.team_id,
            "state": {"values": {REASON_BLOCK: {REASON_ACTION: {"type": "plain_text_input", "value": reason}}}}}
    return {"type": "view_submission", **_who(app, user), "view": view}


def body_of(payload: JsonObject) -> bytes:
    """The body as Slack sends it: form-encoded, the JSON in ``payload``."""
    return urlencode({"payload": json.dumps(payload)}).encode()


def send(url: str, secret: str, body: bytes, now: float | None = None) -> tuple[int, str]:
    """POST ``body`` signed with ``secret`` (``now``: the signature's time); (status, text)."""
    request = urllib.request.Request(url, data=body, method="POST", headers=signed_headers(secret, body, now))
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
