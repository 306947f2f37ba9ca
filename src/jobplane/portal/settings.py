"""Portal configuration: the same portal serves production and ``jobplane dev``; only this differs.

Production reads it from the environment (``PortalSettings.from_env``); ``jobplane dev`` builds
it from jobplane.toml and the local AWS it started.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from jobplane.platform.config import PlatformConfig
from jobplane.platform.control import Deployment


@dataclass(frozen=True)
class AuthSettings:
    """Who the user is. ``mode``:

    * ``dev``: every request is ``dev_user`` (local only; ``jobplane dev`` binds to 127.0.0.1);
    * ``trusted-header``: an authenticating proxy in front sets ``header`` (e.g. X-Forwarded-Email);
    * ``alb-oidc``: the ALB's signed ``x-amzn-oidc-data`` JWT, verified (ES256) against the
      region's public key for its ``kid``, with the expected ``alb_arn`` as signer.
    """

    mode: str = "dev"
    dev_user: str = "dev@localhost"
    header: str = "X-Forwarded-Email"
    alb_arn: str | None = None
    alb_region: str | None = None
    alb_key_url: str = "https://public-keys.auth.elb.{region}.amazonaws.com/{kid}"


@dataclass(frozen=True)
class PortalSettings:
    deployment: Deployment
    auth: AuthSettings = field(default_factory=AuthSettings)
    admins: frozenset[str] = frozenset()
    team_members: dict[str, frozenset[str]] = field(default_factory=dict)
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(32))  # signs CSRF tokens
    base_url: str = ""
    actions_per_minute: int = 30  # per user; beyond it actions answer 429

    @classmethod
    def from_config(cls, config: PlatformConfig, deployment: Deployment, auth: AuthSettings,
                    base_url: str = "", secret_key: str | None = None) -> PortalSettings:
        return cls(deployment=deployment, auth=auth, admins=frozenset(config.platform_admins),
                   team_members={name: frozenset(t.members) for name, t in config.teams.items()},
                   base_url=base_url, **({"secret_key": secret_key} if secret_key else {}))

    @classmethod
    def from_env(cls) -> PortalSettings:
        """Production: JOBPLANE_TABLE, JOBPLANE_TOPIC_ARN, JOBPLANE_CATALOG, JOBPLANE_PORTAL_SECRET,
        JOBPLANE_AUTH_MODE (alb-oidc | trusted-header), JOBPLANE_ALB_ARN, JOBPLANE_ADMINS (comma
        separated), JOBPLANE_TEAM_MEMBERS (JSON {team: [user, ...]})."""
        env = os.environ
        deployment = Deployment(
            table=env["JOBPLANE_TABLE"], topic_arn=env["JOBPLANE_TOPIC_ARN"],
            name_prefix=env.get("JOBPLANE_NAME_PREFIX", "jobplane"), region=env.get("AWS_REGION", "us-east-1"),
            account_id=env["JOBPLANE_ACCOUNT_ID"], catalog_path=Path(env["JOBPLANE_CATALOG"]))
        mode = env.get("JOBPLANE_AUTH_MODE", "alb-oidc")
        if mode == "dev":
            raise ValueError("JOBPLANE_AUTH_MODE=dev is for jobplane dev only")
        auth = AuthSettings(mode=mode, header=env.get("JOBPLANE_AUTH_HEADER", "X-Forwarded-Email"),
                            alb_arn=env.get("JOBPLANE_ALB_ARN"), alb_region=deployment.region)
        members = json.loads(env.get("JOBPLANE_TEAM_MEMBERS", "{}"))
        return cls(deployment=deployment, auth=auth,
                   admins=frozenset(a for a in env.get("JOBPLANE_ADMINS", "").split(",") if a),
                   team_members={t: frozenset(m) for t, m in members.items()},
                   secret_key=env["JOBPLANE_PORTAL_SECRET"], base_url=env.get("JOBPLANE_PORTAL_URL", ""))
