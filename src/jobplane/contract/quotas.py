"""The AWS quotas one deployment's resources count against, in one table: each with its default,
whether it can be raised, the Service Quotas code to raise it and where AWS states the default.

Why in the product: a company that brings every team brings thousands of jobs, and an apply that
fails on its 1,001st IAM role half-way through a merge is the worst place to learn a quota.
``jobplane plan`` counts what the compiled roots and the base module create (compiler/quota_usage.py)
and warns at 80%, refuses at 100%; a quota the account has raised is declared in jobplane.toml
(``[quotas] iam_roles = 5000``) so the plan measures against it.

Codes are those the Service Quotas console and ``aws service-quotas list-service-quotas`` show;
where none was found in a published source, the quota's name is given instead, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Quota:
    key: str  # its name in jobplane.toml [quotas]
    what: str
    default: int
    resources: tuple[str, ...]  # Terraform resource types that count against it
    service: str  # Service Quotas service code
    code: str | None  # Service Quotas quota code, when published
    adjustable: bool
    source: str
    scope: str = "per account and region"

    @property
    def how_to_raise(self) -> str:
        if not self.adjustable:
            return "cannot be raised: change the design (docs/deploy.md, quotas)"
        code = f"quota code {self.code}" if self.code else f"the quota named \"{self.what}\""
        return (f"raise it in Service Quotas (service {self.service}, {code}), then declare the new value as "
                f"[quotas] {self.key} in jobplane.toml")


QUOTAS: tuple[Quota, ...] = (
    Quota("iam_roles", "Roles per account", 1000, ("aws_iam_role",), "iam", "L-FE177D64", True,
          "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html", scope="per account"),
    Quota("iam_policies", "Customer managed policies per account", 1500, ("aws_iam_policy",), "iam", "L-E95E4862",
          True, "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html", scope="per account"),
    Quota("state_machines", "Maximum number of registered state machines", 10000, ("aws_sfn_state_machine",),
          "states", None, True, "https://docs.aws.amazon.com/step-functions/latest/dg/limits-overview.html"),
    Quota("schedules", "Schedules", 10_000_000, ("aws_scheduler_schedule",), "scheduler", "L-EE5D6FF0", True,
          "https://docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html"),
    Quota("schedule_groups", "Schedule groups", 500, ("aws_scheduler_schedule_group",), "scheduler", "L-A632CD40",
          False, "https://docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html"),
    # every `after` rule and the base module's status rules sit on the default event bus
    Quota("event_rules", "Number of rules (per event bus)", 300, ("aws_cloudwatch_event_rule",), "events",
          "L-244521F2", True, "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html",
          scope="per event bus (the default bus)"),
    Quota("log_groups", "Log groups", 1_000_000, ("aws_cloudwatch_log_group",), "logs", "L-C7B9AAAB", True,
          "https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/cloudwatch_limits_cwl.html"),
    Quota("ssm_parameters", "Standard parameters", 10000, ("aws_ssm_parameter",), "ssm", None, False,
          "https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html"),
)
BY_KEY = {q.key: q for q in QUOTAS}
#: A role's inline policies together may hold 10,240 characters, whitespace not counted, and this
#: cannot be raised ("Role policy size", IAM and AWS STS quotas, link above).
ROLE_INLINE_POLICY_CHARS = 10240
WARN_AT = 0.8
