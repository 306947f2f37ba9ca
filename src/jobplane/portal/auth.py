"""Who is asking, and may they act on this job?

Reading is open to every authenticated user; acting on a job needs membership of the job's team
or the platform admin list (jobplane.toml in dev, the environment in production).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import urllib.request
from dataclasses import dataclass

import jwt
from fastapi import Request

from jobplane.portal.errors import PortalError
from jobplane.portal.settings import AuthSettings, PortalSettings


_KID = re.compile(r"^[A-Za-z0-9-]{1,128}$")


@dataclass(frozen=True)
class User:
    name: str
    teams: frozenset[str]
    admin: bool

    def can_act(self, team: str) -> bool:
        return self.admin or team in self.teams


def user_for(name: str, settings: PortalSettings) -> User:
    teams = frozenset(t for t, members in settings.team_members.items() if name in members)
    return User(name, teams, name in settings.admins)


class AlbKeys:
    """The ALB's public keys by key id (fetched once each; they do not change)."""

    def __init__(self, url_template: str, region: str | None):
        self.url_template, self.region = url_template, region
        self._keys: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, kid: str) -> str:
        with self._lock:
            if kid not in self._keys:
                url = self.url_template.format(region=self.region, kid=kid)
                with urllib.request.urlopen(url, timeout=5) as response:
                    self._keys[kid] = response.read().decode()
            return self._keys[kid]


def alb_identity(token: str, auth: AuthSettings, keys: AlbKeys) -> str:
    """Verify the ALB's x-amzn-oidc-data JWT (ES256, signer = our ALB, not expired)."""
    try:
        header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    except (ValueError, IndexError):
        raise PortalError(401, "malformed identity token") from None
    if header.get("signer") != auth.alb_arn:
        raise PortalError(401, "identity token was not signed by this portal's load balancer")
    kid = str(header.get("kid", ""))
    if not _KID.match(kid):  # it goes into the key URL: never let a token choose another path or host
        raise PortalError(401, "identity token has no valid key id")
    try:
        key = keys.get(kid)
    except OSError as e:  # unknown kid (404) or the key endpoint unreachable
        raise PortalError(401, f"no public key for the identity token's key id: {e}") from None
    try:
        claims = jwt.decode(token, key, algorithms=["ES256"], options={"require": ["exp"]})
    except jwt.PyJWTError as e:
        raise PortalError(401, f"identity token rejected: {e}") from None
    name = claims.get("email") or claims.get("sub")
    if not name:
        raise PortalError(401, "identity token names no user")
    return str(name)


def identify(request: Request, settings: PortalSettings, keys: AlbKeys | None) -> User:
    auth = settings.auth
    if auth.mode == "dev":
        name = auth.dev_user
    elif auth.mode == "trusted-header":
        name = request.headers.get(auth.header, "").strip()
    elif auth.mode == "alb-oidc":
        token = request.headers.get("x-amzn-oidc-data", "")
        name = alb_identity(token, auth, keys) if token and keys else ""
    else:
        raise PortalError(500, f"unknown auth mode {auth.mode!r}")
    if not name:
        raise PortalError(401, "not signed in: no identity on the request")
    return user_for(name, settings)


class RateLimiter:
    """At most ``limit`` actions per user per rolling minute (in memory, per portal process)."""

    def __init__(self, limit: int, window: float = 60.0):
        self.limit, self.window = limit, window
        self._hits: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def check(self, user: str) -> None:
        now = time.monotonic()
        with self._lock:
            hits = [t for t in self._hits.get(user, []) if now - t < self.window]
            if len(hits) >= self.limit:
                retry = int(self.window - (now - hits[0])) + 1
                self._hits[user] = hits
                raise PortalError(429, f"more than {self.limit} actions in a minute; try again in {retry} s",
                                  headers={"Retry-After": str(retry)})
            hits.append(now)
            self._hits[user] = hits
