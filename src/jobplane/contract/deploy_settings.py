"""``[deploy]`` in jobplane.toml: the base root's optional settings, committed with the
definitions (issue 41, item 1).

They used to live in a ``terraform.tfvars`` beside the compiled base root, a directory the
repository ignores, so the first CI apply set every one of them back to its default: the Slack
secret and portal link to "" (alerts only logged), the VPC endpoints to none (destroyed) and the
portal to none (half-deleted, stopped by the load balancer's deletion protection). The compiler
writes them to ``<output_dir>/base/jobplane.auto.tfvars.json``, which Terraform reads on every
plan and apply in that directory without a flag
(https://developer.hashicorp.com/terraform/language/values/variables#variable-definitions-tfvars-files:
"Any files with names ending in .auto.tfvars or .auto.tfvars.json"), so the workflow's own
``terraform plan`` / ``apply`` get them as reviewed in the pull request.

What stays outside: the region, subnets, security groups and runner image, which the workflow
passes as repository variables (they differ per environment, and the image per commit).
Who may act in the portal on AWS is not repeated here: ``[platform] admins`` and the teams'
``members`` are the portal's ``admins`` and ``team_members``, as in ``jobplane dev``.
"""

from __future__ import annotations

import re
from typing import Union
from dataclasses import dataclass, field

from jobplane.contract.channels import secrets as _channel_secrets
from jobplane.contract.types import JsonObject, JsonValue

SECRET_ARN_RE = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$")
HTTPS_URL_RE = re.compile(r"^https://[A-Za-z0-9.-]+(:\d{1,5})?(/[A-Za-z0-9._~/-]*)?$")
VPC_RE = re.compile(r"^vpc-[0-9a-f]{8,17}$")
ROUTE_TABLE_RE = re.compile(r"^rtb-[0-9a-f]{8,17}$")
SUBNET_RE = re.compile(r"^subnet-[0-9a-f]{8,17}$")
CIDR_RE = re.compile(r"^[0-9a-fA-F.:]+/\d{1,3}$")
ACM_ARN_RE = re.compile(r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/[0-9a-f-]+$")
HOST_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$")
IMAGE_RE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]{0,254}$")
SLOW_CHECK_RE = re.compile(r"^rate\((1 minute|([2-9]|[1-5][0-9]|60) minutes)\)$")
#: What CloudWatch Logs keeps a log group for (PutRetentionPolicy retentionInDays, "Possible
#: values": https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutRetentionPolicy.html);
#: any other number fails the apply half way, so it is refused here.
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922,
                      3288, 3653)
#: The base module's variables a [deploy] number or string sets as it is (each checked in check_deploy).
PLAIN_KEYS = ("runner_images_kept", "execution_retention_days", "log_retention_days", "slow_check_schedule")

@dataclass(frozen=True)
class DeploySettings:
    """The base root's optional variables as jobplane.toml sets them; ``None``: the module's default."""

    portal_url: str | None = None
    #: (the [deploy] key, ARN) of each notification channel's secret set, in registry order
    #: (contract/channels.py; a tuple, so the settings stay hashable)
    channel_secrets: tuple[tuple[str, str], ...] = ()

    def channel_secret(self, key: str) -> str | None:
        return dict(self.channel_secrets).get(key)
    lambda_reserved_concurrency: int | None = None
    vpc_endpoints: JsonObject | None = None
    portal: JsonObject | None = field(default=None)
    # retention and the periodic check: set only where the module's default does not suit
    runner_images_kept: int | None = None
    execution_retention_days: int | None = None
    log_retention_days: int | None = None
    slow_check_schedule: str | None = None
    #: the Slack app's signing secret: Slack buttons on alerts (terraform/platform/slack_actions.tf)
    slack_signing_secret_arn: str | None = None

    def plain(self) -> dict[str, int | str]:
        """The PLAIN_KEYS this jobplane.toml sets (the base root declares just these: unset, the
        compiled root is as before and the module's default holds)."""
        return {k: v for k in PLAIN_KEYS if (v := getattr(self, k)) is not None}

    def tfvars(self, admins: tuple[str, ...], team_members: dict[str, tuple[str, ...]]) -> JsonObject:
        """The base root's ``jobplane.auto.tfvars.json``: every setting jobplane.toml makes."""
        out: JsonObject = {k: v for k, v in (("portal_url", self.portal_url),
                                                 *((s.key, self.channel_secret(s.key)) for s in _channel_secrets()),
                                                 ("lambda_reserved_concurrency", self.lambda_reserved_concurrency),
                                                 ("vpc_endpoints", self.vpc_endpoints)) if v is not None}
        out.update(self.plain())
        if self.portal is not None:
            out["portal"] = {**self.portal, "admins": list(admins),
                             "team_members": {team: list(m) for team, m in sorted(team_members.items())}}
        return out


def check_deploy(table: JsonValue) -> tuple[DeploySettings | None, list[str]]:
    """``[deploy]``'s settings (None when any is wrong) and every problem, each naming its key
    (jobplane.toml lists them with its others, one a line)."""
    problems: list[str] = []
    if not isinstance(table, dict):
        return None, ["[deploy] must be a table"]
    unknown = set(table) - {"portal_url", *(s.key for s in _channel_secrets()),
                            "lambda_reserved_concurrency", "vpc_endpoints", "portal", *PLAIN_KEYS,
                            "slack_signing_secret_arn"}
    if unknown:
        problems.append(f"[deploy] has unknown keys: {', '.join(sorted(unknown))}")
    url = table.get("portal_url")
    if url is not None and not (isinstance(url, str) and HTTPS_URL_RE.fullmatch(url)):
        problems.append("[deploy] portal_url: the portal's https:// URL (alerts link to it)")
    for key, holding in ((s.key, s.holding) for s in _channel_secrets()):
        value = table.get(key)
        if value is not None and not (isinstance(value, str) and SECRET_ARN_RE.fullmatch(value)):
            problems.append(f"[deploy] {key}: the full ARN of the Secrets Manager secret holding {holding} "
                            "(arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf)")
    signing = table.get("slack_signing_secret_arn")
    if signing is not None and not (isinstance(signing, str) and SECRET_ARN_RE.fullmatch(signing)):
        problems.append("[deploy] slack_signing_secret_arn: the full ARN of the Secrets Manager secret holding the Slack "
                        "app's signing secret (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf)")
    reserved = table.get("lambda_reserved_concurrency")
    if reserved is not None and not (type(reserved) is int and 0 <= reserved <= 1000):
        problems.append("[deploy] lambda_reserved_concurrency: a whole number, 0-1000")
    kept = table.get("runner_images_kept")
    if kept is not None and not (type(kept) is int and 10 <= kept <= 1000):
        problems.append("[deploy] runner_images_kept: a whole number, 10-1000 (the runner images the registry keeps: "
                        "the rollback window, docs/deploy.md)")
    days = table.get("execution_retention_days")
    if days is not None and not (type(days) is int and 1 <= days <= 3650):
        problems.append("[deploy] execution_retention_days: a whole number of days, 1-3650 (how long execution "
                        "records are kept)")
    logs = table.get("log_retention_days")
    if logs is not None and not (type(logs) is int and logs in LOG_RETENTION_DAYS):
        problems.append(f"[deploy] log_retention_days: one of CloudWatch Logs' retention periods "
                        f"({', '.join(map(str, LOG_RETENTION_DAYS))}), not {str(logs)[:20]!r}")
    slow = table.get("slow_check_schedule")
    if slow is not None and not (isinstance(slow, str) and SLOW_CHECK_RE.fullmatch(slow)):
        problems.append("[deploy] slow_check_schedule: 'rate(1 minute)' .. 'rate(60 minutes)' (the periodic check: "
                        "SLOW alerts, missed fires, deadlines and pool sweeps are each found within one interval)")
    endpoints = table.get("vpc_endpoints")
    if endpoints is not None:
        # endpoint_subnet_ids: the interface endpoints' subnets, one per Availability Zone (the
        # base module checks the zones at plan: terraform/platform/network.tf)
        problems += _problems("vpc_endpoints", endpoints, {"vpc_id": VPC_RE, "route_table_ids": [ROUTE_TABLE_RE],
                                                           "endpoint_subnet_ids?": [SUBNET_RE]})
        ids = endpoints.get("endpoint_subnet_ids") if isinstance(endpoints, dict) else None
        if isinstance(ids, list) and len(set(map(str, ids))) != len(ids):
            problems.append("[deploy] vpc_endpoints.endpoint_subnet_ids: a subnet is named twice (one per Availability Zone)")
    portal = table.get("portal")
    if portal is not None:
        if isinstance(portal, dict) and {"admins", "team_members"} & set(portal):
            problems.append("[deploy.portal] admins and team_members come from [platform] admins and the teams' "
                            "members in jobplane.toml; remove them here")
            portal = {k: v for k, v in portal.items() if k not in ("admins", "team_members")}
        # the base module's portal object (terraform/platform/variables.tf), less admins and
        # team_members; a key ending in '?' is optional
        problems += _problems("portal", portal, {
            "task_subnet_ids?": [SUBNET_RE], "image": IMAGE_RE, "host_name": HOST_RE, "certificate_arn": ACM_ARN_RE, "vpc_id": VPC_RE,
            "alb_subnet_ids": [SUBNET_RE], "allowed_cidrs": [CIDR_RE], "session_secret_arn": SECRET_ARN_RE,
            "oidc": {"issuer": HTTPS_URL_RE, "authorization_endpoint": HTTPS_URL_RE, "token_endpoint": HTTPS_URL_RE,
                     "user_info_endpoint": HTTPS_URL_RE, "client_id": re.compile(r"^[\x21-\x7e]{1,255}$"),
                     "client_secret_arn": SECRET_ARN_RE}})
    if problems:
        return None, problems
    return (DeploySettings(portal_url=url,
                          channel_secrets=tuple((s.key, table[s.key]) for s in _channel_secrets() if table.get(s.key) is not None),
                          lambda_reserved_concurrency=reserved,
                          vpc_endpoints=endpoints, portal=portal, runner_images_kept=kept,
                          execution_retention_days=days, log_retention_days=logs, slow_check_schedule=slow,
                          slack_signing_secret_arn=signing), [])


#: What a [deploy] value must be: a pattern, a non-empty list of one shape, or a table of shapes
#: (a key ending in "?" may be left out).
Shape = Union["re.Pattern[str]", list["Shape"], dict[str, "Shape"]]


def _problems(name: str, value: JsonValue, shape: Shape) -> list[str]:
    """Each place where ``value`` does not have ``shape`` (a pattern, [pattern] or {key: shape})."""
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return [f"[deploy] {name}: a table with {', '.join(sorted(k.rstrip('?') for k in shape))}"]
        required = {k for k in shape if not k.endswith("?")}
        known = {k.rstrip("?"): sub for k, sub in shape.items()}
        missing, extra = sorted(required - set(value)), sorted(set(value) - set(known))
        out = []
        if missing or extra:
            out.append(f"[deploy] {name}: " + "; ".join(
                part for part in (f"missing {', '.join(missing)}" if missing else "",
                                  f"unknown {', '.join(extra)}" if extra else "") if part))
        for key, sub in known.items():
            if key in value:
                out += _problems(f"{name}.{key}", value[key], sub)
        return out
    if isinstance(shape, list):
        if not isinstance(value, list) or not value:
            return [f"[deploy] {name}: a non-empty list"]
        return [p for i, v in enumerate(value) for p in _problems(f"{name}[{i}]", v, shape[0])]
    assert isinstance(shape, re.Pattern)
    if not (isinstance(value, str) and shape.fullmatch(value)):
        return [f"[deploy] {name}: {str(value)[:80]!r} is not what it must be ({_words(shape)})"]
    return []


def _words(pattern: re.Pattern[str]) -> str:
    return {SECRET_ARN_RE: "a Secrets Manager secret's full ARN", HTTPS_URL_RE: "an https:// URL",
            VPC_RE: "vpc-...", ROUTE_TABLE_RE: "rtb-...", SUBNET_RE: "subnet-...", CIDR_RE: "a CIDR",
            ACM_ARN_RE: "an ACM certificate ARN", HOST_RE: "a DNS name", IMAGE_RE: "an image reference"
            }.get(pattern, "a plain value")
