"""The signed webhook channel (contract/channels.py ``WEBHOOK``): the alert as a versioned JSON
document (:data:`SCHEMA`, docs/notifications.md "The webhook channel"), POSTed to a target the
deployment's webhook secret names, signed so the receiver can tell it came from this platform
and was not replayed:

- ``X-Jobplane-Timestamp``: Unix seconds when this attempt was sent;
- ``X-Jobplane-Signature``: ``sha256=`` + the hex HMAC-SHA256, keyed with the target's signing
  secret, of ``<timestamp>.<body>`` (the body's exact bytes). The receiver recomputes it, compares
  in constant time and refuses a timestamp more than 5 minutes away from its clock (the scheme
  Slack and Stripe use for theirs);
- ``X-Jobplane-Delivery``: the delivery's id, the same on every retry and redrive of one alert
  to one target (the body's ``id``), for the receiver to drop a repeat.

Retries: a 5xx or 429 answer, a timeout or a connection error is retried (``retries`` times)
after the answer's ``Retry-After`` (seconds or an HTTP date, RFC 9110 section 10.2.3), else an
exponential backoff, each wait capped at ``max_wait``; every attempt is signed afresh. Any other
answer (a 4xx: a wrong URL or a refused signature) is final. Redirects are not followed: the
signed body goes only to the URL the secret names. What still fails is kept by the same
dead-letter sink as Slack's alerts (``jobplane dead-letters`` lists and redrives it).
"""

from __future__ import annotations

import email.utils
import hashlib
import hmac
import json
import logging
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from jobplane.contract.channels import WEBHOOK, WEBHOOK_NAME_RE, addresses
from jobplane.contract.notifications import NotificationMessage, subscribed
from jobplane.contract.statuses import DEFAULT_EVENTS
from jobplane.contract.types import JsonObject
from jobplane.platform.channels.common import DeadLetterSink, alert_link, execution_link, is_recovery, skip_detail

if TYPE_CHECKING:
    from jobplane.platform.channels import Settings

log = logging.getLogger("jobplane.platform.notifier")

#: The body's ``schema``: a receiver checks it; a field is only ever added within a version.
SCHEMA = "jobplane.notification/v1"
SIGNATURE_HEADER = "X-Jobplane-Signature"
TIMESTAMP_HEADER = "X-Jobplane-Timestamp"
DELIVERY_HEADER = "X-Jobplane-Delivery"
#: A signing secret shorter than this is refused (HMAC-SHA256's key should carry 128 bits or more).
MIN_SECRET_LENGTH = 16
#: A target's URL: https, or http to this machine only (``jobplane dev``, tests).
_URL_RE = re.compile(r"^(https://[^\s/]+|http://(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?)(/\S*)?$")


@dataclass(frozen=True)
class Target:
    """One webhook target of the secret: where it posts and the key it signs with."""

    name: str
    url: str
    signing_secret: str


def targets_of(setting: str | None) -> dict[str, Target]:
    """name -> target from the secret's JSON: ``{"oncall": {"url": "https://...",
    "signing_secret": "..."}}``; raises ValueError naming what is wrong (never the values)."""
    if not setting:
        return {}
    try:
        mapping = json.loads(setting)
    except json.JSONDecodeError:
        mapping = None
    if not isinstance(mapping, dict) or not mapping:
        raise ValueError('the webhook setting is a JSON object of name -> {"url": "https://...", "signing_secret": "..."}')
    out = {}
    for name, value in mapping.items():
        if not (isinstance(name, str) and WEBHOOK_NAME_RE.fullmatch(name)):
            raise ValueError(f"webhook target {str(name)[:64]!r}: a name of lower-case letters, digits, '.', '_', '-'")
        if not (isinstance(value, dict) and set(value) == {"url", "signing_secret"}):
            raise ValueError(f"webhook target {name!r}: an object with exactly url and signing_secret")
        url, secret = value["url"], value["signing_secret"]
        if not (isinstance(url, str) and _URL_RE.fullmatch(url)):
            raise ValueError(f"webhook target {name!r}: url is an https:// URL")
        if not (isinstance(secret, str) and len(secret) >= MIN_SECRET_LENGTH):
            raise ValueError(f"webhook target {name!r}: signing_secret is a string of at least {MIN_SECRET_LENGTH} "
                             "characters (a random one: openssl rand -hex 32)")
        out[name] = Target(name, url, secret)
    return out


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Jobplane-Signature`` value of one attempt."""
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def delivery_id(message: NotificationMessage, address: str) -> str:
    """Stable for one alert to one target: what a receiver deduplicates on."""
    key = "\x1f".join((address, message.execution, message.event, message.outcome.status, message.reminder or "",
                       message.summary or ""))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def document(message: NotificationMessage, address: str, portal_url: str, sent_at: str) -> JsonObject:
    """The JSON body (schema :data:`SCHEMA`; docs/notifications.md lists every field)."""
    o = message.outcome
    link = alert_link(portal_url, message)
    return {
        "schema": SCHEMA, "id": delivery_id(message, address), "address": address,
        "kind": message.event, "recovery": is_recovery(message),
        "job": message.job, "team": message.team,
        "execution": {"name": message.execution, "arn": message.execution_arn, "trigger": message.trigger,
                      "requested_by": message.requested_by},
        "status": o.status, "step": o.step, "error": message.error,
        "detail": message.summary or skip_detail(o), "reminder": message.reminder, "summary": message.summary,
        "outcome": o.model_dump(mode="json"), "runbook": message.runbook,
        "links": {"execution": execution_link(portal_url, message.execution),
                  "open": {"text": link[0], "url": link[1]} if link else None},
        "timestamps": {"scheduled": message.scheduled_time, "started": message.started_at,
                       "finished": message.finished_at, "sent": sent_at},
    }


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a 3xx is an answer like any other: final


_OPENER = urllib.request.build_opener(_NoRedirect)


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds a ``Retry-After`` asks to wait: delay-seconds or an HTTP date (RFC 9110 10.2.3)."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


class WebhookNotifier:
    """Posts each alert to the message's webhook addresses (``webhook:<name>``)."""

    def __init__(self, targets: dict[str, Target], portal_url: str = "", dead_letters: DeadLetterSink | None = None,
                 timeout: int = 5, retries: int = 3, *, backoff: float = 1.0, max_wait: float = 30.0,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep):
        self.targets = targets
        self.portal_url = portal_url
        self.dead_letters = dead_letters
        self.timeout, self.retries = timeout, retries
        self.backoff, self.max_wait = backoff, max_wait
        self.clock, self.sleep = clock, sleep

    def notify(self, message: NotificationMessage) -> list[str]:
        """What happened per webhook address of the message ('sent', 'logged', 'dead-lettered');
        raises only when a delivery fails and there is no dead-letter store."""
        mine = addresses(WEBHOOK, message.channels)
        if not mine or not subscribed(message, tuple(e.value for e in DEFAULT_EVENTS)):
            return []
        sent_at = datetime.fromtimestamp(self.clock(), timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        results = []
        for address in mine:
            name = address[len(WEBHOOK.prefix):]
            if not self.targets:
                log.warning("[webhook %s] %s (%s): %s %s (no webhook targets configured: the alert is only logged)",
                            name, message.job, message.team, message.event, message.outcome.status)
                results.append("logged")
                continue
            target = self.targets.get(name)
            if target is None:
                ok, reason = False, f"no webhook target {name!r} in the webhook setting"
            else:
                body = json.dumps(document(message, address, self.portal_url, sent_at), separators=(",", ":")).encode()
                ok, reason = self.post(target, body, delivery_id(message, address))
            if ok:
                results.append("sent")
                continue
            if self.dead_letters is None:
                raise RuntimeError(f"webhook delivery failed for {message.execution}: {reason}")
            kept = self.dead_letters.keep(message, address, reason)
            log.error("webhook delivery to %s failed (%s); kept in %s", name, reason, kept)
            results.append("dead-lettered")
        return results

    def post(self, target: Target, body: bytes, delivery: str) -> tuple[bool, str]:
        """One delivery with its retries: (delivered, why not)."""
        reason = ""
        for attempt in range(self.retries + 1):
            timestamp = str(int(self.clock()))
            request = urllib.request.Request(target.url, data=body, method="POST", headers={
                "Content-Type": "application/json", "User-Agent": "jobplane-webhook/1",
                TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(target.signing_secret, timestamp, body),
                DELIVERY_HEADER: delivery})
            wait: float | None = None
            try:
                with _OPENER.open(request, timeout=self.timeout) as response:
                    status = response.status
            except urllib.error.HTTPError as e:
                status = e.code
                wait = retry_after(e.headers.get("Retry-After"), self.clock())
                e.close()
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
                status, reason = 0, f"{type(e).__name__}: {getattr(e, 'reason', e)}"
            if 200 <= status < 300:
                return True, ""
            if status:
                reason = f"HTTP {status}"
                if not (status == 429 or status >= 500):
                    return False, reason + " (not retried: the target refused the request)"
            if attempt == self.retries:
                break
            self.sleep(min(self.max_wait, wait if wait is not None else self.backoff * 2 ** attempt))
        return False, f"{reason} after {self.retries + 1} attempts"


def build(settings: Settings) -> WebhookNotifier:
    """The webhook notifier of contract/channels.py ``WEBHOOK``'s setting (its targets secret)."""
    (targets,) = WEBHOOK.secrets
    return WebhookNotifier(targets_of(settings.value(targets)), settings.portal_url, settings.dead_letters)
