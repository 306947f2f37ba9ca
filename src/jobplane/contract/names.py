"""Every AWS name derived from a job, with the limits AWS enforces on them.

Checked at validation time so that a long job name fails in the pull request, not at apply.
"""

from __future__ import annotations

LIMITS = {"state machine": 80, "schedule": 64, "IAM role": 64, "task definition family": 255, "Lambda function": 64}

#: What the base module (terraform/platform) names "<prefix>-<suffix>" (tests/test_compile.py
#: reads them from the module): a job whose derived names equal one of these would collide
#: with it at apply ("EntityAlreadyExists"), so validation refuses such a job name.
BASE_MODULE_SUFFIXES = ("endpoints", "events", "events-dlq", "execution-status", "notifier", "operator", "portal",
                        "portal-alb", "portal-exec", "portal-oidc-secret", "reconciler", "runner", "runner-exec",
                        "runner-logging", "runner-task", "scheduler-dlq", "slack-actions", "slack-actions-dlq",
                        "slack-ingress", "slack-worker", "slow-check", "workflow-observability")


def base_module_names(prefix: str) -> set[str]:
    return {f"{prefix}-{suffix}" for suffix in BASE_MODULE_SUFFIXES}


def runner_log_group(prefix: str) -> str:
    """The CloudWatch Logs group of every step's output (terraform/platform/runner.tf)."""
    return f"/{prefix}/runner"


def state_machine_name(prefix: str, job: str) -> str:
    return f"{prefix}-{job}"


def schedule_name(prefix: str, job: str, index: int) -> str:
    return f"{prefix}-{job}" if index == 0 else f"{prefix}-{job}-{index + 1}"


def team_role_name(prefix: str, team: str, kind: str, digest: str, n: int) -> str:
    """A role a team's jobs share (compiler/shared_roles.py): ``<prefix>-<team>-<kind>-<digest>-<n>``,
    the team's name shortened to fit IAM's 64 characters. The platform's policies that pass such
    a role match this shape (``<prefix>-*-scheduler-*``)."""
    tail = f"-{kind}-{digest}-{n}"
    room = LIMITS["IAM role"] - len(prefix) - 1 - len(tail)
    return f"{prefix}-{team[:room].rstrip('-')}{tail}"


#: How many hex digits of a shared role's name are its grant's digest (compiler/shared_roles.py).
ROLE_DIGEST_CHARS = 8


#: How many roles of one kind a team root may share when its state machines pass them by name
#: pattern (:func:`team_role_patterns`: one or two digits).
PATTERN_ROLES = 99


def team_role_patterns(prefix: str, team: str, kind: str) -> tuple[str, str]:
    """IAM resource patterns matching the roles of one kind a team root shares, numbered 1 to 99
    (compiler/shared_roles.py refuses a hundredth): ``<prefix>-<team>-<kind>-????????-?`` and
    ``...-??`` (the team's name shortened as :func:`team_role_name` shortens it for a two-digit
    number). Every shared role's name is ``<prefix>-<team>-<kind>-<8 hex>-<n>``, so a name one
    of them matches, of exactly its length, is this team's and this kind's: another team whose
    name begins with ``<team>-<kind>-`` names its roles longer by more than one character."""
    one = team_role_name(prefix, team, kind, "?" * ROLE_DIGEST_CHARS, 1)[:-1] + "?"
    two = team_role_name(prefix, team, kind, "?" * ROLE_DIGEST_CHARS, 10)[:-2] + "??"
    return one, two


def sfn_role_name(prefix: str, job: str) -> str:
    return f"{prefix}-{job}-sfn"


def scheduler_role_name(prefix: str, job: str) -> str:
    return f"{prefix}-{job}-scheduler"


def after_role_name(prefix: str, job: str) -> str:
    """The role EventBridge starts a job with when a job it runs ``after`` ends."""
    return f"{prefix}-{job}-after"


def task_execution_role_name(prefix: str, job: str) -> str:
    return f"{prefix}-{job}-exec"


def task_family(prefix: str, job: str) -> str:
    return f"{prefix}-{job}"


def tf_id(job: str) -> str:
    """Terraform resource names may not contain '-' comfortably in references: use '_'."""
    return job.replace("-", "_")


def too_long(names: list[tuple[str, str]]) -> list[tuple[str, str, int]]:
    return [(kind, name, LIMITS[kind]) for kind, name in names if len(name) > LIMITS[kind]]
