"""One error format for the whole JSON API (seeds/job-api-design-template-ja.txt):
``{"error": {"code", "message", "details", "request_id", "timestamp"}}``; every response carries
its ``X-Request-ID`` so a user's report can be found in the logs."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from jobplane.contract.clock import now_iso
from jobplane.platform.control import Conflict, ControlError, Forbidden, Invalid, NotFound
from jobplane.contract.types import JsonObject

log = logging.getLogger(__name__)

CODES = {400: "VALIDATION_ERROR", 401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED",
         409: "CONFLICT", 415: "UNSUPPORTED_MEDIA_TYPE", 429: "RATE_LIMIT_EXCEEDED", 500: "INTERNAL_ERROR"}
STATUS_OF = {NotFound: 404, Conflict: 409, Invalid: 400, Forbidden: 403}


class PortalError(Exception):
    """An error raised by the portal itself (authentication, authorization, CSRF, rate limit)."""

    def __init__(self, status: int, message: str, details: list[JsonObject] | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.details, self.headers = status, message, details or [], headers or {}


def request_id(request: Request) -> str:
    rid = getattr(request.state, "request_id", None)
    if rid is None:
        rid = request.state.request_id = f"req-{uuid.uuid4()}"
    return rid


def envelope(request: Request, status: int, message: str, details: list[JsonObject] | None = None,
             code: str | None = None) -> JsonObject:
    return {"error": {"code": code or CODES.get(status, "ERROR"), "message": message, "details": details or [],
                      "request_id": request_id(request), "timestamp": now_iso()}}


def control_status(err: ControlError) -> int:
    return next((s for cls, s in STATUS_OF.items() if isinstance(err, cls)), 400)


def details_of(err: ControlError) -> list[JsonObject]:
    return [{"field": k, "message": v if isinstance(v, str) else repr(v)} for k, v in err.details.items()]


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or "application/json" in request.headers.get("accept", "")


def install(app: FastAPI, render_error: Callable[[Request, int, str, dict[str, str] | None], Response]) -> None:
    """``render_error(request, status, message)`` renders the HTML error page for browsers."""

    def respond(request: Request, status: int, message: str, details: list[JsonObject] | None = None,
                headers: dict[str, str] | None = None) -> Response:
        if wants_json(request):
            return JSONResponse(envelope(request, status, message, details), status_code=status, headers=headers)
        # the page says which field was wrong, as the JSON does (computed, then not shown: issue
        # 65 item 9); the template escapes it
        shown = "; ".join(f"{d.get('field') or 'request'}: {d.get('message', '')}" for d in details or [])
        return render_error(request, status, f"{message}: {shown}" if shown else message, headers)

    @app.exception_handler(ControlError)
    async def _control(request: Request, exc: ControlError) -> Response:
        return respond(request, control_status(exc), exc.message, details_of(exc))

    @app.exception_handler(PortalError)
    async def _portal(request: Request, exc: PortalError) -> Response:
        return respond(request, exc.status, exc.message, exc.details, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        details = [{"field": ".".join(str(p) for p in e.get("loc", ()) if p not in ("body", "query", "path")),
                    "message": e.get("msg", "")} for e in exc.errors()]
        return respond(request, 400, "the request is not valid", details)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        return respond(request, exc.status_code, str(exc.detail),  # e.g. 405's Allow
                       headers=dict(exc.headers) if exc.headers else None)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error in %s %s (%s)", request.method, request.url.path, request_id(request))
        return respond(request, 500, "internal error; quote the request id when reporting it")
