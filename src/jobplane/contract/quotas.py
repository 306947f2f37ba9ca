"""The AWS quotas one deployment's resources count against, in one table: each with its default,
whether it can be raised, the Service Quotas code to raise it and where AWS states the default.

Why in the product: a company that brings every team brings thousands of jobs, and an apply that
fails on its 1,001st IAM role half-way through a merge is the worst place to learn a quota.
``jobplane plan`` counts what the compiled roots and the base module create (compiler/quota_usage.py)
and warns at 80%, refuses at 100%; a quota the account has raised is declared in jobplane.toml
(``[quotas] iam_roles = 5000``) so the plan measures against it.

Codes are those the Service Quotas console and ``aws service-quotas list-service-quotas`` show;
where none was found in a published source, the quota's name is given instead, never a guess.

Two kinds of rows: a count of resources the roots create (``measure`` "resources": past it an
apply fails), and what runs at once (``measure`` "concurrent": Fargate vCPU, network interfaces,
Lambda executions, open Map Runs; past it launches fail at run time, which the steps retry as
infrastructure, but a job whose own peak is over the quota can never run at its full width).
A concurrent row is measured from the jobs (compiler/quota_usage.py ``peaks``).
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
    #: "resources": how many of ``resources`` the roots create; "concurrent": how much runs at
    #: once (``unit`` says of what), measured from the jobs' steps, not their resources
    measure: str = "resources"
    unit: str = ""

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
    # 100,000 by default, raisable to 150,000 (Step Functions "Quotas related to accounts"; it said
    # 10,000 before: the page as read 2026-12)
    Quota("state_machines", "Maximum number of registered state machines", 100_000, ("aws_sfn_state_machine",),
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
    # -- what runs at once (measure "concurrent") --
    # "Fargate On-Demand vCPU resource count | Each supported Region: 6 | Yes"; new accounts start
    # low and AWS raises it with use (Amazon ECS endpoints and quotas). Each ECS step's task
    # counts its cpu / 1024; a map's each step max_concurrency times.
    Quota("fargate_vcpu", "Fargate On-Demand vCPU resource count", 6, (), "fargate", "L-3032A538", True,
          "https://docs.aws.amazon.com/general/latest/gr/ecs-service.html", measure="concurrent", unit="vCPU"),
    # every Fargate task (awsvpc) holds a network interface in the platform's subnets while it
    # runs ("Network interfaces per Region", 5,000, Amazon VPC quotas); the runner functions share
    # Lambda's Hyperplane interfaces, one per subnet and security group, not one per invocation
    Quota("network_interfaces", "Network interfaces per Region", 5000, (), "vpc", "L-DF5E4CA3", True,
          "https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html", measure="concurrent",
          unit="ECS tasks"),
    # "Concurrent executions | 1,000 | Tens of thousands" (Lambda quotas; a new account may have
    # less), shared by every function of the account and Region
    Quota("lambda_concurrency", "Concurrent executions", 1000, (), "lambda", "L-B99A9384", True,
          "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html", measure="concurrent",
          unit="Lambda steps"),
    # "Maximum open Map Runs: 1,000" (a Distributed Map's run is open until it ends; Step Functions
    # quotas related to accounts); past it a map's start fails
    Quota("open_map_runs", "Maximum open Map Runs", 1000, (), "states", None, True,
          "https://docs.aws.amazon.com/step-functions/latest/dg/limits-overview.html", measure="concurrent",
          unit="maps"),
)
BY_KEY = {q.key: q for q in QUOTAS}
#: A role's inline policies together may hold 10,240 characters, whitespace not counted, and this
#: cannot be raised ("Role policy size", IAM and AWS STS quotas, link above).
ROLE_INLINE_POLICY_CHARS = 10240
WARN_AT = 0.8
