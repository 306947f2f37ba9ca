"""The portal's ASGI application: ``create_app(settings)``.

Pages (:mod:`jobplane.portal.pages`) and the JSON API (:mod:`jobplane.portal.api`), each a group
of :func:`routes`, share one
:class:`~jobplane.platform.control.ControlPlane`, one identity check, one error format and the
same security headers. Run it with ``jobplane portal`` (production settings from the
environment) or as part of ``jobplane dev``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from jobplane import __version__
from jobplane.platform.control import ControlPlane
from jobplane.portal import errors
from jobplane.portal.errors import PortalError
from jobplane.portal.services import Portal
from jobplane.portal.settings import PortalSettings

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


@dataclass(frozen=True)
class RouteGroup:
    """A module's routes as the portal serves them: its router, and whether its requests need a
    signed-in user (checked before the handler does any store work)."""

    router: APIRouter
    signed_in: bool = True


def routes() -> list[RouteGroup | Mount]:
    """Every route of the portal, in the order a request is matched against them: each module
    contributes its router (Starlette's routes-as-a-list, with FastAPI's routers as the groups),
    then the static files."""
    from swagger_ui_bundle import swagger_ui_path

    from jobplane.portal import (api, approval_pages, backfill_api, backfill_pages, base_routes, deadline_api,
                                 deadline_pages, map_api, pages, pictures_api, report_api, slack_interactions,
                                 timeline_pages)

    return [RouteGroup(base_routes.open_router, signed_in=False),  # the health probe, `jobplane dev`'s sign-in
            RouteGroup(slack_interactions.router, signed_in=False),  # Slack signs its requests instead
            RouteGroup(api.router), RouteGroup(backfill_api.router), RouteGroup(deadline_api.router),
            RouteGroup(deadline_pages.router), RouteGroup(pictures_api.router), RouteGroup(timeline_pages.router),
            RouteGroup(report_api.router), RouteGroup(report_api.pages_router), RouteGroup(report_api.metrics_router),
            RouteGroup(backfill_pages.router),  # before pages' /jobs/{job}/{action}
            RouteGroup(approval_pages.router),
            RouteGroup(map_api.router), RouteGroup(map_api.pages_router), RouteGroup(pages.router),
            RouteGroup(base_routes.docs_router),
            Mount("/static/swagger-ui", StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui"),
            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")]


async def security_headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Every response's security headers and request id (and a debug line per request)."""
    started = time.perf_counter()
    rid = errors.request_id(request)
    response = await call_next(request)
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers["X-Request-ID"] = rid
    log.debug("%s %s %s %.1fms user=%s", request.method, request.url.path, response.status_code,
              (time.perf_counter() - started) * 1000, getattr(getattr(request.state, "user", None), "name", "-"))
    return response


def create_app(settings: PortalSettings, control: ControlPlane | None = None) -> FastAPI:
    """The app: its middleware (outermost first) and :func:`routes`, each group included with the
    identity check it asks for; one :class:`Portal` (the control plane and what every handler
    needs) on ``app.state``."""
    app = FastAPI(title="jobplane portal API", version=__version__, docs_url=None, redoc_url=None,
                  openapi_url="/api/openapi.json",
                  description="Read and act on jobplane jobs and executions. Errors use one envelope: "
                              '`{"error": {"code", "message", "details", "request_id", "timestamp"}}`.',
                  middleware=[Middleware(AllowedHosts, names=settings.allowed_host_names()),
                              Middleware(BaseHTTPMiddleware, dispatch=security_headers)])
    portal = Portal(settings, control)
    app.state.portal = portal

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

    def authenticated(request: Request) -> None:
        """Identity first, before any store work: an anonymous request learns nothing, not even
        which job or execution names exist."""
        portal.user(request)

    signed_in = [Depends(authenticated)]
    for group in routes():
        if isinstance(group, Mount):
            app.router.routes.append(group)
        else:
            app.include_router(group.router, dependencies=signed_in if group.signed_in else None)
    return app
