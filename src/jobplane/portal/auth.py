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


#: How long a ``jobplane dev`` sign-in link is good for, once (issue 48 item 7: one link opened the
#: portal for the whole start, from the terminal's scrollback or the browser's history).
LINK_SECONDS = 15 * 60
#: How long the session cookie a link sets is good for.
SESSION_SECONDS = 12 * 3600


def _mac(secret: str, text: str) -> str:
    return hmac.new(secret.encode(), text.encode(), "sha256").hexdigest()


class DevLogins:
    """The sign-in links of one ``jobplane dev`` start: each minted from the start's secret (so
    whoever can read dev.json, 0600, can mint one: ``jobplane dev-login``), each good once and
    for ``LINK_SECONDS``. The portal remembers which it has taken; ``current`` is the link not
    yet taken, minted anew once it is (what the banner shows, and each test's fresh browser)."""

    def __init__(self, secret: str):
        self.secret = secret
        self._taken: dict[str, int] = {}  # nonce -> its expiry, forgotten after it
        self._current: str | None = None
        self._lock = threading.Lock()

    def mint(self, now: float | None = None) -> str:
        return mint_login_token(self.secret, now)

    def take(self, token: str, now: float | None = None) -> bool:
        """Whether ``token`` is a link of this start, unexpired and not taken before (it is now)."""
        now = time.time() if now is None else now
        parts = token.split(".")
        if len(parts) != 3 or not parts[1].isdigit():
            return False
        nonce, expires, mac = parts[0], int(parts[1]), parts[2]
        if not hmac.compare_digest(mac.encode(), _mac(self.secret, f"link:{nonce}:{expires}").encode()):
            return False
        with self._lock:
            self._taken = {n: e for n, e in self._taken.items() if e >= now}
            if expires < now or nonce in self._taken:
                return False
            self._taken[nonce] = expires
            return True

    def current(self) -> str:
        now = time.time()
        with self._lock:
            if self._current is not None:
                nonce, expires = self._current.split(".")[:2]
                if nonce not in self._taken and int(expires) > now + 60:
                    return self._current
            self._current = self.mint(now)
            return self._current


def mint_login_token(secret: str, now: float | None = None) -> str:
    """A new sign-in token of the start whose secret is ``secret``: ``nonce.expiry.mac``."""
    import secrets as random

    nonce = random.token_urlsafe(12)
    expires = int(time.time() if now is None else now) + LINK_SECONDS
    return f"{nonce}.{expires}.{_mac(secret, f'link:{nonce}:{expires}')}"


@lru_cache(maxsize=8)
def dev_logins(secret: str) -> DevLogins:
    """This process's record of the start's links (the portal and ``jobplane dev`` share it)."""
    return DevLogins(secret)


def dev_cookie_name(auth: AuthSettings, port: int) -> str:
    """The session cookie's name: per start and per port, so two platforms on one host (cookies
    ignore the port) keep separate sessions; a MAC of both, so the name does not announce which
    port's portal it opens to whoever it reaches (issue 64 item 6)."""
    return f"jobplane_dev_{_mac(auth.dev_login or '', f'jobplane dev cookie name:{port}')[:16]}"


def per_start_host() -> str:
    """A host name of this ``jobplane dev`` start alone, ``jp-<random>.localhost``. Cookies are
    scoped by host, never by port (RFC 6265 section 8.5, https://www.rfc-editor.org/rfc/rfc6265#section-8.5:
    "Cookies do not provide isolation by port"), so a session cookie set for 127.0.0.1 or
    localhost is sent to every service on any loopback port the browser visits; one set for this
    name (host-only: no Domain attribute) is sent only to this name, which nothing else knows.
    Names under ``.localhost`` are loopback names (RFC 6761 section 6.3,
    https://www.rfc-editor.org/rfc/rfc6761#section-6.3) that Chrome, Edge and Firefox resolve to
    the loopback address themselves."""
    import secrets as random

    return f"jp-{random.token_hex(8)}.localhost"


def dev_session(auth: AuthSettings, port: int, now: float | None = None) -> tuple[str, str]:
    """A new session cookie, bound to this start (its secret), to the portal's port and to an
    expiry the server checks (``expiry.mac``): a cookie of another start or port, or an expired
    one, opens nothing."""
    expires = int(time.time() if now is None else now) + SESSION_SECONDS
    return dev_cookie_name(auth, port), f"{expires}.{_mac(auth.dev_login or '', f'session:{port}:{expires}')}"


def dev_session_valid(auth: AuthSettings, port: int, value: str, now: float | None = None) -> bool:
    expires, _, mac = value.partition(".")
    if not (auth.dev_login and expires.isdigit() and mac):
        return False
    if int(expires) < (time.time() if now is None else now):
        return False
    return hmac.compare_digest(mac.encode(), _mac(auth.dev_login, f"session:{port}:{expires}").encode())


def portal_port(request: Request) -> int:
    """The port this portal listens on (the connection's own, not the Host header's)."""
    server = request.scope.get("server")
    return int(server[1]) if server and server[1] is not None else 0


def identify(request: Request, settings: PortalSettings, keys: AlbKeys | None) -> User:
    auth = settings.auth
    if auth.mode == "dev":
        port = portal_port(request)
        if not dev_session_valid(auth, port, request.cookies.get(dev_cookie_name(auth, port), "")):
            raise PortalError(401, "not signed in: open a login link of this jobplane dev start (it printed one; "
                                   "`jobplane dev-login` prints a new one, each is good once)")
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
