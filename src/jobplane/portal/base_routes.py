"""The portal's own routes, beside the pages' and the API's: the health probe and ``jobplane
dev``'s sign-in (``open_router``: answered before any identity check) and the API's docs page
(``docs_router``: for a signed-in user). A route group of :data:`jobplane.portal.app.ROUTES`
like every other."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from jobplane import __version__
from jobplane.contract.types import JsonObject
from jobplane.portal.auth import SESSION_SECONDS, dev_logins, dev_session, portal_port
from jobplane.portal.errors import PortalError
from jobplane.portal.services import portal_of

open_router = APIRouter()
docs_router = APIRouter()


@open_router.get("/healthz", tags=["health"], summary="Liveness and store reachability")
def healthz(request: Request) -> JsonObject:
    portal = portal_of(request)
    portal.control.context.repo.job_state("__health__")  # one cheap read: the store answers
    return {"status": "ok", "version": __version__, "jobs": len(portal.control.entries)}


@open_router.get("/login", include_in_schema=False)
def dev_login(request: Request, token: str = "") -> Response:
    """``jobplane dev``'s sign-in: the per-start link sets this start's session cookie (404 in
    the production modes, whose identity comes from the proxy or the ALB)."""
    settings = portal_of(request).settings
    if settings.auth.mode != "dev":
        raise PortalError(404, "not found")
    if not (settings.auth.dev_login and dev_logins(settings.auth.dev_login).take(token)):
        raise PortalError(401, "this login link was used already, has expired, or is not one of this jobplane dev "
                               "start: `jobplane dev-login` prints a new one (each link is good once)")
    name, value = dev_session(settings.auth, portal_port(request))
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(name, value, httponly=True, samesite="lax", path="/", max_age=SESSION_SECONDS)
    return response


@docs_router.get("/api/docs", include_in_schema=False)
def api_docs(request: Request) -> HTMLResponse:
    """Swagger UI from this server (swagger-ui-bundle-v2), started by a script file: the
    portal's CSP allows no CDN and no inline script."""
    return portal_of(request).templates.TemplateResponse(request, "api_docs.html", {})
