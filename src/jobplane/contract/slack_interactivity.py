"""Slack interactivity's settings (issue 68 part 2: buttons on the alert): the ``[slack]`` table of
jobplane.toml and the environment variables the ingress, the worker and the notifier read.

```toml
[slack]
app_id  = "A0123ABCD"   # the Slack app whose requests are accepted (api_app_id of each payload)
team_id = "T0123ABCD"   # the workspace (team.id of each payload)
# optional: who a Slack user is, when their Slack e-mail is not their jobplane name
users = { U0123ABCD = "alice@example.com" }
```

Interactivity is on when the app's signing secret is set (``JOBPLANE_SLACK_SIGNING_SECRET`` under
``jobplane dev``; ``[deploy] slack_signing_secret_arn`` on AWS). A request is accepted only from the
pinned app and workspace: a signing secret leaked from another app of the workspace, or a payload
of another workspace's install, acts on nothing. Without a signing secret there are no buttons and
the interactions route refuses every request (docs/notifications.md "Buttons on the alert").

Standard library only: the ingress Lambda reads this on its cold path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from jobplane.contract import environment as E

# -- the environment (the base module sets them; ``jobplane dev`` reads the *_SECRET ones itself)
SIGNING_SECRET = "JOBPLANE_SLACK_SIGNING_SECRET"  # jobplane dev and tests: the value itself
# AWS (contract/environment.py spells every variable the base module sets):
SIGNING_SECRET_ARN = E.SLACK_SIGNING_SECRET_ARN  # the ingress reads the secret by ARN
APP_ID = E.SLACK_APP_ID
TEAM_ID = E.SLACK_TEAM_ID
USERS = E.SLACK_USERS  # JSON {slack user id: person}
ACTIONS_QUEUE_URL = E.SLACK_ACTIONS_QUEUE_URL  # the queue between the ingress and the worker
INTERACTIVE = E.SLACK_INTERACTIVE  # "1": the notifier adds buttons (the base module sets it)

#: Slack's ids: an app (A...), a workspace (T... or E... for an Enterprise org), a user (U.../W...).
APP_ID_RE = re.compile(r"A[A-Z0-9]{6,20}")
TEAM_ID_RE = re.compile(r"[TE][A-Z0-9]{6,20}")
USER_ID_RE = re.compile(r"[UW][A-Z0-9]{6,20}")
PERSON_RE = re.compile(r"[A-Za-z0-9._%+@-]{1,254}")
#: A signing secret shorter than this is no secret (Slack's are 32 hex characters).
MIN_SECRET = 16


@dataclass(frozen=True)
class SlackApp:
    """The pinned app and workspace, and the explicit user map."""

    app_id: str = ""
    team_id: str = ""
    users: dict[str, str] = field(default_factory=dict)

    @property
    def configured(self) -> bool:
        return bool(self.app_id and self.team_id)

    def to_env(self) -> dict[str, str]:
        return {APP_ID: self.app_id, TEAM_ID: self.team_id, USERS: json.dumps(self.users, sort_keys=True)}

    @classmethod
    def from_env(cls, values: dict[str, str] | None) -> SlackApp:
        values = values or {}
        users = json.loads(values.get(USERS) or "{}")
        if not isinstance(users, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in users.items()):
            raise ValueError(f"{USERS} must be a JSON object of Slack user id to person")
        return cls(values.get(APP_ID, ""), values.get(TEAM_ID, ""), users)


def parse_slack(file: str, table: object) -> tuple[SlackApp, list[str]]:
    """The ``[slack]`` table, and each problem naming the file and the key."""
    if table is None:
        return SlackApp(), []
    if not isinstance(table, dict):
        return SlackApp(), [f"{file}: [slack] must be a table"]
    problems = []
    unknown = set(table) - {"app_id", "team_id", "users"}
    if unknown:
        problems.append(f"{file}: [slack] has unknown keys: {', '.join(sorted(unknown))}")
    app_id, team_id = table.get("app_id", ""), table.get("team_id", "")
    if not (isinstance(app_id, str) and APP_ID_RE.fullmatch(app_id)):
        problems.append(f"{file}: [slack] app_id: the Slack app's id (A0123ABCD; the app's Basic Information page)")
        app_id = ""
    if not (isinstance(team_id, str) and TEAM_ID_RE.fullmatch(team_id)):
        problems.append(f"{file}: [slack] team_id: the Slack workspace's id (T0123ABCD)")
        team_id = ""
    users_raw = table.get("users", {})
    users: dict[str, str] = {}
    if not isinstance(users_raw, dict):
        problems.append(f"{file}: [slack] users: a table of Slack user id (U0123ABCD) = person (e-mail address)")
    else:
        for k, v in users_raw.items():
            if USER_ID_RE.fullmatch(k) and isinstance(v, str) and PERSON_RE.fullmatch(v):
                users[k] = v
            else:
                problems.append(f"{file}: [slack] users.{k}: a Slack user id (U0123ABCD) = a person's e-mail address")
    return SlackApp(app_id, team_id, users), problems
