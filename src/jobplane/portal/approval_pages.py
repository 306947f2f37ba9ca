"""The approval pages (jp.approval): each person's inbox of the approvals they may decide, the
others waiting (read only), and the approve / reject form (reason required to reject), which
decides through the one platform function (platform/approvals.py ``Approvals.decide``: the
authorization, four eyes, the first decision wins, the audit entry). The execution page shows
a run's approvals with the same form (templates/_approval.html).

The form does not use the page's team check (``Portal.authorize``): an approval's named
approvers may be another team's members (finance signs billing's invoices off); ``decide``
applies the rule. The action budget (``limiter``) and the CSRF token are checked as for every
form."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response

from jobplane.platform.approvals import Approvals
from jobplane.platform.control import NotFound
from jobplane.portal.pages import _back, _portal

router = APIRouter(include_in_schema=False)


@router.get("/approvals", response_class=HTMLResponse)
def approvals_page(request: Request) -> Response:
    """The signed-in person's inbox (what they may decide), then every other pending approval."""
    portal = _portal(request)
    user = portal.user(request)
    pending = Approvals(portal.control).pending()
    from jobplane.platform.approvals import may_decide

    mine = [a for a in pending if may_decide(user, a) is None]
    others = [a for a in pending if may_decide(user, a) is not None]
    return portal.render(request, "approvals.html", mine=mine, others=others)


@router.post("/approvals/{execution}/{step}/{decision}")
def decide_form(request: Request, execution: str, step: str, decision: str, csrf_token: str | None = Form(None),
                reason: str = Form("", max_length=500)) -> Response:
    portal = _portal(request)
    if decision not in ("approve", "reject"):
        raise NotFound(f"unknown decision {decision!r}")
    user = portal.user(request)
    portal.csrf.check(csrf_token, user.name)
    portal.limiter.check(user.name)
    Approvals(portal.control).decide(execution, user, decision, reason, via="portal", step=step)
    return _back(f"/executions/{quote(execution)}", "approved" if decision == "approve" else "rejected")
