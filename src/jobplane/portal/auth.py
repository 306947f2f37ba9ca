"""Who is asking, and may they act on this job?

Reading is open to every authenticated user; acting on a job needs membership of the job's team
or the platform admin list (jobplane.toml in dev, the environment in production): the rule of
platform/control/access.py, which the control plane applies to the CLI's actions too.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import json
import re
import threading
import time
import urllib.request
from functools import lru_cache

import jwt
from fastapi import Request

from jobplane.platform.control.access import Access, Actor
from jobplane.portal.errors import PortalError
from jobplane.portal.settings import AuthSettings, PortalSettings


_KID = re.compile(r"[A-Za-z0-9-]{1,128}")  # whole string (fullmatch): no trailing newline


#: The signed-in user: a person under the control plane's one rule (platform/control/access.py),
#: judged by the same teams and admins whichever way they act.
User = Actor


def user_for(name: str, settings: PortalSettings) -> User:
    return Access(settings.admins, settings.team_members).person(name)


class KeyUnavailable(Exception):
    """No public key for a token's key id (unknown, unreachable, or too many fetches at once)."""


class AlbKeys:
    """The ALB's public keys by key id, fetched on first use (they never change for a kid).

    A token's kid is chosen by whoever sends it, so a fetch must never make others wait: keys
    are fetched outside any shared lock, one fetch per kid at a time (others asking for the same
    kid wait for that fetch), at most ``max_fetches`` at once (beyond that a token is refused at
    once), and a failed kid is remembered for ``failure_ttl`` seconds, so forged tokens cost one
    fetch per kid, not one per request.
    """

    def __init__(self, url_template: str, region: str | None, max_fetches: int = 4, failure_ttl: float = 30.0,
                 timeout: float = 5.0):
        self.url_template, self.region, self.timeout, self.failure_ttl = url_template, region, timeout, failure_ttl
        self._keys: dict[str, str] = {}
        self._failures: dict[str, tuple[float, str]] = {}  # kid -> (monotonic time it expires, why)
        self._fetching: dict[str, threading.Event] = {}
        self._lock = threading.Lock()  # held only to read and update the dicts above
        self._slots = threading.BoundedSemaphore(max_fetches)

    def get(self, kid: str) -> str:
        deadline = time.monotonic() + self.timeout * 2 + 1
        while True:
            with self._lock:
                if kid in self._keys:
                    return self._keys[kid]
                failed = self._failures.get(kid)
                if failed and failed[0] > time.monotonic():
                    raise KeyUnavailable(failed[1])
                pending = self._fetching.get(kid)
                if pending is None:
                    if not self._slots.acquire(blocking=False):
                        raise KeyUnavailable("too many identity key fetches in progress; try again")
                    pending = self._fetching[kid] = threading.Event()
                    break
            if not pending.wait(max(deadline - time.monotonic(), 0)):
                raise KeyUnavailable("the identity key endpoint did not answer in time")
        try:
            key, failure = self._fetch(kid), None
        except (OSError, ValueError) as e:
            key, failure = None, f"no public key for the identity token's key id: {e}"
        finally:
            with self._lock:
                if key is not None:
                    self._keys[kid] = key
                else:
                    self._failures[kid] = (time.monotonic() + self.failure_ttl, failure or "key fetch failed")
                    if len(self._failures) > 10_000:  # bounded: forget the oldest
                        self._failures.pop(next(iter(self._failures)))
                del self._fetching[kid]
                pending.set()
            self._slots.release()
        if key is None:
            raise KeyUnavailable(failure)
        return key

    def _fetch(self, kid: str) -> str:
        url = self.url_template.format(region=self.region, kid=kid)
        with urllib.request.urlopen(url, timeout=self.timeout) as response:
            body: bytes = response.read(65536)
            return body.decode()


def alb_identity(token: str, auth: AuthSettings, keys: AlbKeys) -> str:
    """Verify the ALB's x-amzn-oidc-data JWT (ES256, signer = our ALB, not expired)."""
    try:
        header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    except (ValueError, IndexError, RecursionError):
        raise PortalError(401, "malformed identity token") from None
    if not isinstance(header, dict):
        raise PortalError(401, "malformed identity token")
    if not auth.alb_arn or header.get("signer") != auth.alb_arn:
        raise PortalError(401, "identity token was not signed by this portal's load balancer")
    kid = header.get("kid")
    if not isinstance(kid, str) or not _KID.fullmatch(kid):  # it goes into the key URL: never another path or host
        raise PortalError(401, "identity token has no valid key id")
    try:
        key = keys.get(kid)
    except KeyUnavailable as e:  # unknown kid (404), the key endpoint unreachable, too many fetches
        raise PortalError(401, str(e)) from None
    try:
        claims = jwt.decode(token, key, algorithms=["ES256"], options={"require": ["exp"]})
    except jwt.PyJWTError as e:
        raise PortalError(401, f"identity token rejected: {e}") from None
    # An address the IdP did not verify is whatever its user typed: it would sign in as anyone's
    # address (a team member's, an admin's). Some IdPs send the claim as a string.
    if claims.get("email") and str(claims.get("email_verified", True)).lower() == "false":
        raise PortalError(401, "the identity provider has not verified this e-mail address")
    name = claims.get("email") or claims.get("sub")
    if not name or not isinstance(name, str):
        raise PortalError(401, "identity token names no user")
    return name


def _from_trusted_proxy(request: Request, auth: AuthSettings) -> None:
    """The identity header counts only on a request that came through the proxy."""
    if auth.trusted_proxies:
        try:
            client = ipaddress.ip_address(request.client.host if request.client else "")
        except ValueError:
            client = None
        if client is None or not any(client in _network(c) for c in auth.trusted_proxies):
            raise PortalError(401, "not signed in: this request did not come through the authenticating proxy")
    if auth.proxy_secret:
        sent = request.headers.getlist(auth.proxy_secret_header)
        if len(sent) != 1 or not hmac.compare_digest(sent[0].encode(), auth.proxy_secret.encode()):
            raise PortalError(401, "not signed in: this request did not come through the authenticating proxy")


@lru_cache(maxsize=64)
def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_network(cidr, strict=False)


def dev_cookie(auth: AuthSettings) -> tuple[str, str]:
    """The session cookie of one ``jobplane dev`` start: name and value both derived from its login
    secret, so two platforms on one host (cookies ignore the port) keep separate sessions and a
    cookie of an earlier start opens nothing."""
    return _dev_cookie(auth.dev_login or "")


@lru_cache(maxsize=4)
def _dev_cookie(secret: str) -> tuple[str, str]:  # derived once per start, not at every request
    key = secret.encode()
    name = hmac.new(key, b"jobplane dev cookie name", "sha256").hexdigest()[:12]
    return f"jobplane_dev_{name}", hmac.new(key, b"jobplane dev session", "sha256").hexdigest()


def dev_login_accepted(token: str, auth: AuthSettings) -> bool:
    return bool(auth.dev_login) and hmac.compare_digest(token.encode(), (auth.dev_login or "").encode())


def identify(request: Request, settings: PortalSettings, keys: AlbKeys | None) -> User:
    auth = settings.auth
    if auth.mode == "dev":
        cookie, session = dev_cookie(auth)
        if not (auth.dev_login and hmac.compare_digest(request.cookies.get(cookie, "").encode(), session.encode())):
            raise PortalError(401, "not signed in: open the login link jobplane dev printed when it started "
                                   "(also in dev.json in its data directory, as portal_login_url)")
        name = auth.dev_user
    elif auth.mode == "trusted-header":
        _from_trusted_proxy(request, auth)
        values = request.headers.getlist(auth.header)
        if len(values) > 1:  # which one would the proxy have meant? neither
            raise PortalError(401, f"not signed in: the {auth.header} header appears {len(values)} times")
        name = values[0].strip() if values else ""
    elif auth.mode == "alb-oidc":
        tokens = request.headers.getlist("x-amzn-oidc-data")
        if len(tokens) > 1:
            raise PortalError(401, "not signed in: more than one identity token")
        name = alb_identity(tokens[0], auth, keys) if tokens and keys else ""
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
