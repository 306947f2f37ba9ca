"""The public door Slack's interactivity requests come through: it verifies, pins, enqueues and
answers, and does nothing else (no store, no Slack call, no action), so it answers well within
the 3 seconds Slack waits (https://docs.slack.dev/interactivity/handling-user-interaction:
"respond with an HTTP 200 OK within 3 seconds") and the work continues after the answer, in the
worker (worker.py), from the queue.

Checked, in order, before anything is queued: Slack's signature over the raw body and its
timestamp within five minutes (signing.py); the payload is one of ours (``block_actions``,
``view_submission``); it is of the pinned app (``api_app_id``) and workspace (``team.id``), so a
request signed with another app's secret, or from another workspace's install, is refused.

Two homes, the same :class:`Ingress`: the Lambda :func:`handler` behind a function URL on AWS
(its role may read the signing secret and send to the queue, nothing else), and the portal's
``/slack/interactions`` route under ``jobplane dev`` (portal/slack_interactions.py).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Mapping
from urllib.parse import parse_qs

from jobplane.contract.slack_interactivity import MIN_SECRET, SlackApp
from jobplane.contract.types import JsonObject
from jobplane.platform.slack_actions.signing import refusal

#: the interactions the worker handles; any other is acknowledged and dropped
HANDLED = ("block_actions", "view_submission")
#: Slack's payloads are small; a larger body is not Slack's
MAX_BODY = 64 * 1024


class Ingress:
    """``enqueue``: hands the verified payload (JSON text) to the worker's queue."""

    def __init__(self, secret: str | None, app: SlackApp, enqueue: Callable[[str], None],
                 clock: Callable[[], float] = time.time):
        if not secret or len(secret) < MIN_SECRET:
            raise ValueError("Slack interactivity needs the app's signing secret (JOBPLANE_SLACK_SIGNING_SECRET; on "
                             "AWS [deploy] slack_signing_secret_arn), at least 16 characters")
        if not app.configured:
            raise ValueError("Slack interactivity needs [slack] app_id and team_id in jobplane.toml: requests of "
                             "another app or workspace are refused by them")
        self.secret, self.app, self.enqueue, self.clock = secret, app, enqueue, clock

    def accept(self, headers: Mapping[str, str], body: bytes) -> tuple[int, str]:
        """(HTTP status, body) to answer Slack with."""
        if len(body) > MAX_BODY:
            return 413, "too large"
        why = refusal(self.secret, headers, body, self.clock())
        if why:
            return 401, why
        try:
            fields = parse_qs(body.decode(), strict_parsing=True)
            payload = json.loads(fields["payload"][0])
        except (ValueError, KeyError, IndexError, UnicodeDecodeError):
            return 400, "not an interaction payload"
        if not isinstance(payload, dict):
            return 400, "not an interaction payload"
        if payload.get("api_app_id") != self.app.app_id or _team(payload) != self.app.team_id:
            return 403, "not of this app and workspace"
        if payload.get("type") not in HANDLED:
            return 200, ""
        self.enqueue(json.dumps(payload))
        return 200, ""  # an empty 200 closes a submitted modal (Slack: response_action absent)


def _team(payload: JsonObject) -> str | None:
    team = payload.get("team")
    if isinstance(team, dict) and isinstance(team.get("id"), str):
        return str(team["id"])
    user = payload.get("user")
    return str(user["team_id"]) if isinstance(user, dict) and isinstance(user.get("team_id"), str) else None


_INGRESS: Ingress | None = None


def handler(event: JsonObject, context: object = None) -> JsonObject:
    """AWS Lambda entry point behind the function URL (payload format 2.0:
    https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html#urls-payloads): the body
    arrives base64-encoded when ``isBase64Encoded``; the answer is ``statusCode`` and ``body``."""
    global _INGRESS
    import boto3

    from jobplane.contract.environment import RuntimeEnvironment
    from jobplane.contract import slack_interactivity as S

    if _INGRESS is None:  # once per cold start: the secret and the queue
        env = RuntimeEnvironment.from_environment()
        secret = boto3.client("secretsmanager").get_secret_value(SecretId=env.required(S.SIGNING_SECRET_ARN))["SecretString"]
        sqs, queue = boto3.client("sqs"), env.required(S.ACTIONS_QUEUE_URL)
        _INGRESS = Ingress(secret, S.SlackApp.from_env(dict(env.values)),
                           lambda text: sqs.send_message(QueueUrl=queue, MessageBody=text))
    raw = event.get("body") or ""
    body = base64.b64decode(str(raw)) if event.get("isBase64Encoded") else str(raw).encode()
    headers = event.get("headers")
    status, text = _INGRESS.accept({str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {},
                                   body)
    return {"statusCode": status, "headers": {"Content-Type": "text/plain"}, "body": text}
