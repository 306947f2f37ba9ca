"""Portal configuration: the same portal serves production and ``jobplane dev``; only this differs.

Production reads it from the environment (``PortalSettings.from_env``); ``jobplane dev`` builds
it from jobplane.toml and the local AWS it started.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import secrets
from dataclasses import dataclass, field
from typing import TypedDict
from urllib.parse import urlsplit

from jobplane.contract import environment as E
from jobplane.contract.config import PlatformConfig
from jobplane.contract.environment import RuntimeEnvironment
from jobplane.platform.control import Deployment


@dataclass(frozen=True)
class AuthSettings:
    """Who the user is. ``mode``:

    * ``dev``: a request that carries the session cookie of this start is ``dev_user``; the cookie
      is set by ``/login?token=<dev_login>``, a per-start secret that only the user who started
      ``jobplane dev`` sees (its banner and the 0600 dev.json). Binding to 127.0.0.1 alone let
      every local account in (issue 40, item 5);
    * ``trusted-header``: an authenticating proxy in front sets ``header`` (e.g. X-Forwarded-Email).
      The header is believed only from the proxy: the request must come from an address in
      ``trusted_proxies`` (CIDRs) and/or carry ``proxy_secret`` in ``proxy_secret_header``;
      at least one of the two must be set, or the portal refuses to start;
    * ``alb-oidc``: the ALB's signed ``x-amzn-oidc-data`` JWT, verified (ES256) against the
      region's public key for its ``kid``, with the expected ``alb_arn`` as signer (required).
    """

    mode: str = "dev"
    dev_user: str = "dev@localhost"
    dev_login: str | None = None
    #: dev: this start's own host name, ``jp-<random>.localhost`` (portal/auth.py per_start_host):
    #: a browser signed in there holds a cookie no other loopback port's page is sent
    dev_host: str | None = None
    header: str = "X-Forwarded-Email"
    trusted_proxies: tuple[str, ...] = ()
    proxy_secret: str | None = None
    proxy_secret_header: str = "X-Jobplane-Proxy-Secret"
    alb_arn: str | None = None
    alb_region: str | None = None
    alb_key_url: str = "https://public-keys.auth.elb.{region}.amazonaws.com/{kid}"

    def check(self) -> None:
        """Refuse a configuration that would believe anyone (the portal does not start)."""
        if self.mode not in ("dev", "trusted-header", "alb-oidc"):
            raise ValueError(f"unknown auth mode {self.mode!r}: dev, trusted-header or alb-oidc")
        if self.mode == "trusted-header":
            if not self.trusted_proxies and not self.proxy_secret:
                raise ValueError("trusted-header mode needs the proxy's addresses (JOBPLANE_TRUSTED_PROXIES, CIDRs) "
                                 "or a secret the proxy sends (JOBPLANE_PROXY_SECRET): otherwise anyone who reaches "
                                 "the portal's port is whoever their header says")
            for cidr in self.trusted_proxies:
                try:
                    ipaddress.ip_network(cidr, strict=False)
                except ValueError:
                    raise ValueError(f"trusted proxy {cidr!r} is not an address or CIDR") from None
            if self.proxy_secret is not None and len(self.proxy_secret) < 16:
                raise ValueError("the proxy secret must be at least 16 characters")
        if self.mode == "dev" and len(self.dev_login or "") < 32:
            raise ValueError("dev mode needs a per-start login secret of at least 32 characters (jobplane dev "
                             "makes one): otherwise every account on the machine is the dev user")
        if self.mode == "alb-oidc" and not (self.alb_arn and self.alb_arn.startswith("arn:")):
            raise ValueError("alb-oidc mode needs the load balancer's ARN (JOBPLANE_ALB_ARN): the signer of "
                             "every identity token is checked against it")


@dataclass(frozen=True)
class PortalSettings:
    deployment: Deployment
    auth: AuthSettings = field(default_factory=AuthSettings)
    admins: frozenset[str] = frozenset()
    team_members: dict[str, frozenset[str]] = field(default_factory=dict)
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(32))  # signs CSRF tokens
    base_url: str = ""
    actions_per_minute: int = 30  # per user; beyond it actions answer 429
    # Host headers served ('host' for any port, or 'host:port'); empty: derived (allowed_host_names).
    allowed_hosts: frozenset[str] = frozenset()

    def allowed_host_names(self) -> frozenset[str]:
        """Which ``Host`` the portal answers (DNS rebinding defence): the explicit list, else the
        host of ``base_url`` (with 127.0.0.1 and localhost for a loopback one), else, in dev
        mode, the loopback names. A production portal with none refuses to start."""
        own = frozenset({self.auth.dev_host}) if self.auth.mode == "dev" and self.auth.dev_host else frozenset()
        if self.allowed_hosts:
            return self.allowed_hosts | own
        host = urlsplit(self.base_url).hostname if self.base_url else None
        if host:
            return own | (frozenset({host, "127.0.0.1", "localhost"}) if host in ("127.0.0.1", "localhost")
                          else frozenset({host}))
        if self.auth.mode == "dev":
            return own | frozenset({"127.0.0.1", "localhost"})
        return frozenset()

    def check(self) -> None:
        self.auth.check()
        if not self.allowed_host_names():
            raise ValueError("the portal needs its public URL (JOBPLANE_PORTAL_URL) or JOBPLANE_ALLOWED_HOSTS, so it "
                             "answers only requests addressed to it")

    @classmethod
    def from_config(cls, config: PlatformConfig, deployment: Deployment, auth: AuthSettings,
                    base_url: str = "", secret_key: str | None = None) -> PortalSettings:
        settings = cls(deployment=deployment, auth=auth, admins=frozenset(config.platform_admins),
                       team_members={name: frozenset(t.members) for name, t in config.teams.items()},
                       base_url=base_url)
        return dataclasses.replace(settings, secret_key=secret_key) if secret_key else settings

    @classmethod
    def from_env(cls) -> PortalSettings:
        """Production: JOBPLANE_TABLE, JOBPLANE_TOPIC_ARN, JOBPLANE_CATALOG, JOBPLANE_PORTAL_SECRET,
        JOBPLANE_AUTH_MODE (alb-oidc | trusted-header), JOBPLANE_ALB_ARN (alb-oidc),
        JOBPLANE_TRUSTED_PROXIES (comma-separated CIDRs) and/or JOBPLANE_PROXY_SECRET
        (trusted-header), JOBPLANE_PORTAL_URL or JOBPLANE_ALLOWED_HOSTS, JOBPLANE_ADMINS (comma
        separated), JOBPLANE_TEAM_MEMBERS (JSON {team: [user, ...]}), JOBPLANE_LOG_GROUP (the
        step logs' group; default /<prefix>/runner, as the base module names it). Raises ValueError for a
        setting that would leave the portal open."""
        env = RuntimeEnvironment.from_environment()
        deployment = Deployment.from_environment(env)
        mode = env.optional(E.AUTH_MODE) or "alb-oidc"
        if mode == "dev":
            raise ValueError(f"{E.AUTH_MODE}=dev is for jobplane dev only")
        auth = AuthSettings(mode=mode, header=env.optional(E.AUTH_HEADER) or "X-Forwarded-Email",
                            trusted_proxies=env.names_list(E.TRUSTED_PROXIES),
                            proxy_secret=env.optional(E.PROXY_SECRET), alb_arn=env.optional(E.ALB_ARN),
                            alb_region=deployment.region)
        members = json.loads(env.optional(E.TEAM_MEMBERS) or "{}")
        settings = cls(deployment=deployment, auth=auth, admins=frozenset(env.names_list(E.ADMINS)),
                       team_members={t: frozenset(m) for t, m in members.items()},
                       secret_key=env.required(E.PORTAL_SECRET), base_url=env.portal_url,
                       allowed_hosts=frozenset(env.names_list(E.ALLOWED_HOSTS)))
        settings.check()
        return settings


class ServerOptions(TypedDict):
    proxy_headers: bool


def server_options(settings: PortalSettings) -> ServerOptions:
    """How ``jobplane portal`` runs uvicorn. In trusted-header mode the connection's own peer is
    what is checked against ``trusted_proxies``: uvicorn's proxy headers would replace it with
    the request's X-Forwarded-For (for any peer, with FORWARDED_ALLOW_IPS=*, common in
    containers), and a direct request forging both the address and the identity header paused a
    job (issue 40 item 3). The other modes keep them (the ALB's signed token names the user)."""
    return {"proxy_headers": settings.auth.mode != "trusted-header"}
