"""The portal's ASGI application: ``create_app(settings)``.

Pages (:mod:`jobplane.portal.pages`) and the JSON API (:mod:`jobplane.portal.api`) share one
:class:`~jobplane.platform.control.ControlPlane`, one identity check, one error format and the
same security headers. Run it with ``jobplane portal`` (production settings from the
environment) or as part of ``jobplane dev``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from collections.abc import Awaitable, Callable

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from jobplane import __version__
from jobplane.platform.control import ControlPlane
from jobplane.portal import errors
from jobplane.portal.auth import SESSION_SECONDS, dev_logins, dev_session, portal_port
from jobplane.portal.errors import PortalError
from jobplane.portal.services import Portal
from jobplane.portal.settings import PortalSettings
from jobplane.contract.types import JsonObject

log = logging.getLogger(__name__)
HERE = Path(__file__).parent

SECURITY_HEADERS = {
    # No inline scripts or styles, nothing from other origins; the SVG diagram is inline markup.
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


class AllowedHosts:
    """Answer only requests addressed to the portal by name (DNS rebinding: a page of another
    site whose name now points at this machine must not read the portal or its CSRF tokens).
    ``/healthz`` is exempt: load balancers probe it by the target's address."""

    def __init__(self, app: ASGIApp, names: frozenset[str]):
        self.app, self.names = app, names

    def allowed(self, host: str) -> bool:
        host = host.lower()
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host  # [v6]:port stays whole
        return host in self.names or name in self.names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/healthz":
            host = Headers(scope=scope).get("host", "")
            if not self.allowed(host):
                await PlainTextResponse("unknown Host: this portal answers only to its own name", 400)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(settings: PortalSettings, control: ControlPlane | None = None) -> FastAPI:
    from jobplane.portal import api, backfill_api, backfill_pages, deadline_api, deadline_pages, map_api, pages

    app = FastAPI(title="jobplane portal API", version=__version__, docs_url=None, redoc_url=None,
                  openapi_url="/api/openapi.json",
                  description="Read and act on jobplane jobs and executions. Errors use one envelope: "
                              '`{"error": {"code", "message", "details", "request_id", "timestamp"}}`.')
    portal = Portal(settings, control)
    app.state.portal = portal

    @app.middleware("http")
    async def headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        rid = errors.request_id(request)
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        response.headers["X-Request-ID"] = rid
        log.debug("%s %s %s %.1fms user=%s", request.method, request.url.path, response.status_code,
                 (time.perf_counter() - started) * 1000, getattr(getattr(request.state, "user", None), "name", "-"))
        return response

    def render_error(request: Request, status: int, message: str, headers: dict[str, str] | None) -> Response:
        try:
            response = portal.render(request, "error.html", status=status, status_code=status, message=message)
        except PortalError:  # no identity: a page without the user bar
            response = portal.templates.TemplateResponse(
                request, "error.html", {"status_code": status, "message": message, "user": None, "csrf_token": "",
                                        "request_id": errors.request_id(request)}, status_code=status)
        for k, v in (headers or {}).items():
            response.headers[k] = v
        return response

    errors.install(app, render_error)

    @app.get("/healthz", tags=["health"], summary="Liveness and store reachability")
    def healthz() -> JsonObject:
        portal.control.context.repo.job_state("__health__")  # one cheap read: the store answers
        return {"status": "ok", "version": __version__, "jobs": len(portal.control.entries)}

    @app.get("/login", include_in_schema=False)
    def dev_login(request: Request, token: str = "") -> Response:
        """``jobplane dev``'s sign-in: the per-start link sets this start's session cookie (404 in
        the production modes, whose identity comes from the proxy or the ALB)."""
        if settings.auth.mode != "dev":
            raise PortalError(404, "not found")
        if not (settings.auth.dev_login and dev_logins(settings.auth.dev_login).take(token)):
            raise PortalError(401, "this login link was used already, has expired, or is not one of this jobplane dev "
                                   "start: `jobplane dev-login` prints a new one (each link is good once)")
        name, value = dev_session(settings.auth, portal_port(request))
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(name, value, httponly=True, samesite="lax", path="/", max_age=SESSION_SECONDS)
        return response

    def authenticated(request: Request) -> None:
        """Identity first, before any store work: an anonymous request learns nothing, not even
        which job or execution names exist."""
        portal.user(request)

    signed_in = [Depends(authenticated)]
    app.include_router(api.router, dependencies=signed_in)
    app.include_router(backfill_api.router, dependencies=signed_in)
    app.include_router(deadline_api.router, dependencies=signed_in)
    app.include_router(deadline_pages.router, dependencies=signed_in)
    app.include_router(backfill_pages.router, dependencies=signed_in)  # before pages' /jobs/{job}/{action}
    app.include_router(map_api.router, dependencies=signed_in)
    app.include_router(map_api.pages_router, dependencies=signed_in)
    app.include_router(pages.router, dependencies=signed_in)

    @app.get("/api/docs", include_in_schema=False, dependencies=signed_in)
    def api_docs(request: Request) -> HTMLResponse:
        """Swagger UI from this server (swagger-ui-bundle-v2), started by a script file: the
        portal's CSP allows no CDN and no inline script."""
        return portal.templates.TemplateResponse(request, "api_docs.html", {})

    from swagger_ui_bundle import swagger_ui_path

    app.mount("/static/swagger-ui", StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.add_middleware(AllowedHosts, names=settings.allowed_host_names())
    return app
