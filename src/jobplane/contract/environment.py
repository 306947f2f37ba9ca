"""The environment the base module (terraform/platform) gives the runtime: every variable's name,
which of them each Lambda handler and the portal's task read, and one typed reader of them.

The names were once written out by each handler and again in the Terraform; a name that drifted
on one side would have been an empty setting in production. Now the handlers read only
:meth:`RuntimeEnvironment.from_environment`, and tests/test_runtime_environment.py reads the
Terraform's ``environment`` blocks and checks that each function gets exactly ``FUNCTIONS``'s
names for its handler.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

# -- where the platform is (every function that touches the store)
TABLE = "JOBPLANE_TABLE"
TOPIC_ARN = "JOBPLANE_TOPIC_ARN"
NAME_PREFIX = "JOBPLANE_NAME_PREFIX"
ACCOUNT_ID = "JOBPLANE_ACCOUNT_ID"
REGION = "AWS_REGION"  # set by Lambda itself; the portal's task sets it
CATALOG = "JOBPLANE_CATALOG"  # s3://<bucket>/catalog/ (the base module), or a path
LOG_GROUP = "JOBPLANE_LOG_GROUP"  # the step logs' group
EXECUTION_RETENTION_DAYS = "JOBPLANE_EXECUTION_RETENTION_DAYS"
# -- the notifier
PORTAL_URL = "JOBPLANE_PORTAL_URL"
SLACK_WEBHOOK_URL = "JOBPLANE_SLACK_WEBHOOK_URL"  # tests and local use; production passes the secret's ARN
SLACK_WEBHOOK_SECRET_ARN = "JOBPLANE_SLACK_WEBHOOK_SECRET_ARN"
SLACK_BOT_TOKEN = "JOBPLANE_SLACK_BOT_TOKEN"  # tests and local use
SLACK_BOT_TOKEN_SECRET_ARN = "JOBPLANE_SLACK_BOT_TOKEN_SECRET_ARN"
SLACK_API_URL = "JOBPLANE_SLACK_API_URL"  # tests: a local stand-in for slack.com
WEBHOOKS = "JOBPLANE_WEBHOOKS"  # the signed webhook channel's targets' JSON: tests and local use
WEBHOOK_SECRET_ARN = "JOBPLANE_WEBHOOK_SECRET_ARN"
TEAM_CHANNELS = "JOBPLANE_TEAM_CHANNELS"  # JSON {team: channel}
DEFAULT_CHANNEL = "JOBPLANE_DEFAULT_CHANNEL"
# -- the portal's OIDC secret writer
PORTAL_RULE_ARN = "JOBPLANE_PORTAL_RULE_ARN"
PORTAL_OIDC_SECRET_ARN = "JOBPLANE_PORTAL_OIDC_SECRET_ARN"
# -- the portal's task (portal/settings.py reads them)
PORTAL_SECRET = "JOBPLANE_PORTAL_SECRET"
AUTH_MODE = "JOBPLANE_AUTH_MODE"
AUTH_HEADER = "JOBPLANE_AUTH_HEADER"
ALB_ARN = "JOBPLANE_ALB_ARN"
TRUSTED_PROXIES = "JOBPLANE_TRUSTED_PROXIES"
PROXY_SECRET = "JOBPLANE_PROXY_SECRET"
ALLOWED_HOSTS = "JOBPLANE_ALLOWED_HOSTS"
ADMINS = "JOBPLANE_ADMINS"
TEAM_MEMBERS = "JOBPLANE_TEAM_MEMBERS"

# -- Slack buttons (the names: contract/slack_interactivity.py, which the ingress reads on its cold path)
SLACK_SIGNING_SECRET_ARN = "JOBPLANE_SLACK_SIGNING_SECRET_ARN"
SLACK_APP_ID = "JOBPLANE_SLACK_APP_ID"
SLACK_TEAM_ID = "JOBPLANE_SLACK_TEAM_ID"
SLACK_USERS = "JOBPLANE_SLACK_USERS"
SLACK_ACTIONS_QUEUE_URL = "JOBPLANE_SLACK_ACTIONS_QUEUE_URL"
SLACK_INTERACTIVE = "JOBPLANE_SLACK_INTERACTIVE"

DEFAULT_NAME_PREFIX = "jobplane"
DEFAULT_REGION = "us-east-1"
#: How long a run's record is kept when the base module does not say (its TTL).
DEFAULT_RETENTION_DAYS = 400

#: What the base module sets for each handler (by its Lambda ``handler``) and for the portal's
#: task: exactly these names (tests/test_runtime_environment.py).
FUNCTIONS: dict[str, frozenset[str]] = {
    "jobplane.platform.reconciler.handler": frozenset({NAME_PREFIX, TABLE, TOPIC_ARN, EXECUTION_RETENTION_DAYS,
                                                       LOG_GROUP, CATALOG}),
    # with every notification channel's secrets' ARNs (contract/channels.py CHANNELS: each
    # ChannelSecret's arn_env; tests/test_channels.py holds the two equal)
    "jobplane.platform.notifier.handler": frozenset({PORTAL_URL, SLACK_WEBHOOK_SECRET_ARN, SLACK_BOT_TOKEN_SECRET_ARN,
                                                     WEBHOOK_SECRET_ARN, TEAM_CHANNELS, DEFAULT_CHANNEL, LOG_GROUP,
                                                     TABLE, SLACK_INTERACTIVE}),
    # Slack buttons (terraform/platform/slack_actions.tf; contract/slack_interactivity.py spells the SLACK_* ones)
    "jobplane.platform.slack_actions.ingress.handler": frozenset({SLACK_SIGNING_SECRET_ARN, SLACK_APP_ID, SLACK_TEAM_ID,
                                                                 SLACK_ACTIONS_QUEUE_URL}),
    "jobplane.platform.slack_actions.feed.handler": frozenset({NAME_PREFIX, TABLE, TOPIC_ARN, CATALOG, LOG_GROUP,
                                                              SLACK_BOT_TOKEN_SECRET_ARN, SLACK_APP_ID, SLACK_TEAM_ID,
                                                              SLACK_USERS, ADMINS, TEAM_MEMBERS}),
    "jobplane.platform.slow.handler": frozenset({NAME_PREFIX, ACCOUNT_ID, TABLE, TOPIC_ARN, CATALOG, LOG_GROUP,
                                                 EXECUTION_RETENTION_DAYS}),
    "jobplane.platform.oidc_secret.handler": frozenset({PORTAL_RULE_ARN, PORTAL_OIDC_SECRET_ARN}),
}
PORTAL_TASK: frozenset[str] = frozenset({TABLE, TOPIC_ARN, NAME_PREFIX, ACCOUNT_ID, REGION, CATALOG, LOG_GROUP,
                                         AUTH_MODE, ALB_ARN, PORTAL_URL, ADMINS, TEAM_MEMBERS, PORTAL_SECRET})


class MissingSetting(KeyError):
    """A variable the handler needs is not set: the base module sets it (FUNCTIONS)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"{self.name} is not set (the base module, terraform/platform, sets it for this function)"


@dataclass(frozen=True)
class RuntimeEnvironment:
    """The settings one process runs with, typed; read once with :meth:`from_environment`. A
    required setting that is missing raises :class:`MissingSetting` when it is asked for, so a
    handler needs only what it reads (each function gets only its own, ``FUNCTIONS``)."""

    values: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> RuntimeEnvironment:
        source = os.environ if environ is None else environ
        return cls({k: v for k, v in source.items() if k.startswith("JOBPLANE_") or k == REGION})

    def required(self, name: str) -> str:
        value = self.values.get(name)
        if not value:
            raise MissingSetting(name)
        return value

    def optional(self, name: str) -> str | None:
        """The setting, or None when unset or empty (Terraform sets an unused one to "")."""
        return self.values.get(name) or None

    # -- where the platform is
    @property
    def table(self) -> str:
        return self.required(TABLE)

    @property
    def topic_arn(self) -> str:
        return self.required(TOPIC_ARN)

    @property
    def account_id(self) -> str:
        return self.required(ACCOUNT_ID)

    @property
    def catalog(self) -> str:
        return self.required(CATALOG)

    @property
    def name_prefix(self) -> str:
        return self.optional(NAME_PREFIX) or DEFAULT_NAME_PREFIX

    @property
    def region(self) -> str:
        return self.optional(REGION) or DEFAULT_REGION

    @property
    def log_group(self) -> str | None:
        return self.optional(LOG_GROUP)

    @property
    def execution_retention_days(self) -> int:
        text = self.optional(EXECUTION_RETENTION_DAYS)
        try:
            return int(text) if text else DEFAULT_RETENTION_DAYS
        except ValueError:
            raise ValueError(f"{EXECUTION_RETENTION_DAYS} must be a whole number of days, not {text!r}") from None

    # -- the notifier
    @property
    def portal_url(self) -> str:
        return self.optional(PORTAL_URL) or ""

    @property
    def team_channels(self) -> dict[str, str]:
        text = self.optional(TEAM_CHANNELS) or "{}"
        value = json.loads(text)
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise ValueError(f"{TEAM_CHANNELS} must be a JSON object of team to channel")
        return value

    def names_list(self, name: str) -> tuple[str, ...]:
        """A comma-separated setting's items (JOBPLANE_ADMINS, JOBPLANE_TRUSTED_PROXIES ...)."""
        return tuple(x.strip() for x in (self.optional(name) or "").split(",") if x.strip())
