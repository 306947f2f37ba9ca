"""Slack's request signature, both ways: verifying what Slack sends, and signing what
``jobplane dev-slack-click`` and the tests send as Slack would.

Slack signs each request with the app's signing secret: ``X-Slack-Signature`` is ``v0=`` and the
hex HMAC-SHA256, keyed with the secret, of ``v0:<X-Slack-Request-Timestamp>:<raw body>``; a
request whose timestamp is more than five minutes from now is refused as a possible replay, and
the comparison is constant-time
(https://docs.slack.dev/authentication/verifying-requests-from-slack). The raw bytes are
verified before anything parses them.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping

SIGNATURE_HEADER = "X-Slack-Signature"
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
#: Slack: "verify that the request timestamp is within five minutes of the local time".
TOLERANCE_SECONDS = 5 * 60
VERSION = "v0"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    base = f"{VERSION}:{timestamp}:".encode() + body
    return f"{VERSION}=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(secret: str, body: bytes, now: float | None = None) -> dict[str, str]:
    """The headers Slack would send with ``body`` (``jobplane dev-slack-click``, tests)."""
    timestamp = str(int(time.time() if now is None else now))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: signature(secret, timestamp, body),
            "Content-Type": "application/x-www-form-urlencoded"}


def refusal(secret: str, headers: Mapping[str, str], body: bytes, now: float | None = None) -> str | None:
    """Why the request is not Slack's (None: it is). ``headers``: any case."""
    lower = {k.lower(): v for k, v in headers.items()}
    timestamp = lower.get(TIMESTAMP_HEADER.lower(), "")
    sent = lower.get(SIGNATURE_HEADER.lower(), "")
    if not timestamp.isdigit() or not sent:
        return "no Slack signature"
    if abs((time.time() if now is None else now) - int(timestamp)) > TOLERANCE_SECONDS:
        return "the request's timestamp is more than five minutes from now (a replay?)"
    if not hmac.compare_digest(signature(secret, timestamp, body).encode(), sent.encode()):
        return "the Slack signature does not match"
    return None
