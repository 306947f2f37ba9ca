"""``POST /slack/interactions``: Slack's interactivity request URL under ``jobplane dev`` (on AWS
the ingress Lambda's function URL: platform/slack_actions/ingress.py, the same code).

Not behind the portal's sign-in or CSRF token: Slack signs the request instead, and
:class:`~jobplane.platform.slack_actions.ingress.Ingress` verifies that signature, the timestamp
and the pinned app and workspace before anything is queued. Without Slack interactivity
configured (no signing secret) the route refuses every request (404): a mode that needs a
secret is not served without it.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse

router = APIRouter(include_in_schema=False)


@router.post("/slack/interactions")
async def interactions(request: Request) -> PlainTextResponse:
    ingress = getattr(request.app.state, "slack_ingress", None)
    if ingress is None:
        return PlainTextResponse("Slack interactivity is not configured on this platform", status_code=404)
    body = await request.body()
    status, text = ingress.accept(dict(request.headers), body)
    return PlainTextResponse(text, status_code=status)
