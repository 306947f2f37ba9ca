"""The services every request handler needs (the control plane, sign-in, CSRF, the action
budget, the templates), made once per app and stored on ``app.state.portal``: a module of its
own so the handlers can name its type without importing the app that includes them."""

from __future__ import annotations

import uuid
from functools import cached_property
from pathlib import Path

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from jobplane import __version__
from jobplane.platform.backfill import Backfills
from jobplane.platform.control import ControlPlane, Forbidden
from jobplane.portal import blackout_view, calendar_view, errors, run_marks, views
from jobplane.portal.auth import AlbKeys, RateLimiter, User, identify
from jobplane.portal.csrf import Csrf
from jobplane.portal.errors import PortalError
from jobplane.portal.job_rows import RowRenderer
from jobplane.portal.notices import notice_text
from jobplane.portal.settings import PortalSettings

HERE = Path(__file__).parent


def portal_of(request: Request) -> Portal:
    portal: Portal = request.app.state.portal
    return portal


class Portal:
    """What every request handler needs; stored on ``app.state.portal``."""

    def __init__(self, settings: PortalSettings, control: ControlPlane | None = None):
        settings.check()  # refuse to start open (auth mode without what makes it safe, no host names)
        self.settings = settings
        self.control = control or ControlPlane(settings.deployment)
        self.csrf = Csrf(settings.secret_key)
        self.limiter = RateLimiter(settings.actions_per_minute)
        self.alb_keys = AlbKeys(settings.auth.alb_key_url, settings.auth.alb_region) \
            if settings.auth.mode == "alb-oidc" else None
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))  # autoescape on for .html
        env = self.templates.env
        # one key per rendered form that starts a run: submitting it twice starts one run
        env.globals.update(version=__version__, form_key=lambda: uuid.uuid4().hex)
        env.filters.update(schedule_words=views.schedule_words, local_time=views.local_time,
                           short_time=views.short_time, duration=views.duration, notice_text=notice_text,
                           step_call=views.step_call, seconds=views.seconds, retry_words=views.retry_words,
                           run_marks=run_marks.render)
        env.globals["job_rows"] = RowRenderer(env.get_template("_job_row.html"))
        env.filters["rule_words"] = calendar_view.rule_words
        env.filters.update(blackout_mark=blackout_view.fire_mark, blackout_window=blackout_view.window_line)

    @cached_property
    def teams(self) -> list[str]:
        """The teams the catalog names, for the jobs page's filter (the catalog is the portal's for its life)."""
        return sorted({e.team for e in self.control.entries.values()})

    @cached_property
    def backfills(self) -> Backfills:
        return Backfills(self.control.runs)

    def user(self, request: Request) -> User:
        user = getattr(request.state, "user", None)
        if user is None:
            user = request.state.user = identify(request, self.settings, self.alb_keys)
        return user

    def authorize(self, request: Request, team: str) -> User:
        """The user, if they may act on ``team``'s jobs (the control plane's rule, checked here
        first so a refused request costs nothing more), within their action budget."""
        user = self.user(request)
        try:
            user.authority(team)
        except Forbidden as e:
            raise PortalError(403, e.message) from None
        self.limiter.check(user.name)
        return user

    def render(self, request: Request, template: str, status: int = 200, **context: object) -> HTMLResponse:
        user = self.user(request)
        context |= {"user": user, "csrf_token": self.csrf.token(user.name), "request_id": errors.request_id(request)}
        return self.templates.TemplateResponse(request, template, context, status_code=status)
