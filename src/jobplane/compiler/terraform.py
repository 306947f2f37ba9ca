"""Terraform JSON for the compiled jobs: a base root that uses the hand-written base module, and
one root per team holding its jobs (contract/layout.py; docs/deploy.md "Terraform roots").

Why JSON and not CDK for Terraform: CDKTF was deprecated upstream in December 2025 and needs
Node.js; Terraform reads ``*.tf.json`` natively. Each job gets its own file in its team's root
holding its state machine, schedules and IAM roles scoped to it (no wildcard actions; resources
named), whose roles compiler/shared_roles.py then merges with those of the team's jobs whose
grants are identical. That file is the one stored copy of the job's ASL (the state machine's definition, a
Terraform template); ``contract.bindings.asl_of`` reads the ASL back from it for the local engine and the tests.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field

from jobplane.compiler import expect_states, kinds
from jobplane.compiler.executors.base import StepExecutor
from jobplane.compiler.calendars import deployed_schedule
from jobplane.compiler.model import Job, Step
from jobplane.compiler.terraform_iam import ACCOUNT, PARTITION, REGION, assume, secret_references, statement
from jobplane.compiler.pools import role_statements as pool_statements
from jobplane.contract.catalog import CATALOG_FILE
from jobplane.contract.channels import secrets as channel_secrets
from jobplane.contract import datamodel as dm
from jobplane.contract import execution_input, names, policies, upstream
from jobplane.contract import runner as rc
from jobplane.contract.bindings import bind_for_terraform, terraform_escape, terraform_expressions
from jobplane.contract.published import PUBLISHED
from jobplane.contract.config import PlatformConfig
from jobplane.contract.types import JsonObject

PROVIDER_VERSION = "~> 6.0"


def _settings(config: PlatformConfig, key: str | None) -> JsonObject:
    # the provider's next major version is adopted deliberately, not by the next init (as the
    # base module's versions.tf pins it)
    settings: JsonObject = {"required_providers": {"aws": {"source": "hashicorp/aws", "version": PROVIDER_VERSION}}}
    if config.terraform is not None and key is not None:
        # S3 state with S3's own lock file (Terraform >= 1.10), encrypted at rest:
        # https://developer.hashicorp.com/terraform/language/backend/s3
        backend = config.terraform
        settings["backend"] = {"s3": {"bucket": backend.bucket, "key": key, "encrypt": True,
                                      "use_lockfile": True, **({"region": backend.region} if backend.region else {})}}
    return settings


_PROVIDER = {"aws": {"region": "${var.region}", "default_tags": {"tags": {"managed-by": "jobplane"}}}}
_REGION_VAR = {"type": "string", "description": "AWS region of the platform."}
_IDENTITY: dict[str, JsonObject] = {"aws_caller_identity": {"current": {}}, "aws_region": {"current": {}}, "aws_partition": {"current": {}}}


def module_source(config: PlatformConfig) -> str:
    """The base module's source as seen from ``<output_dir>/base``: a relative path in
    jobplane.toml is relative to the output directory, one level up from the base root."""
    source = config.platform_module
    return posixpath.normpath(posixpath.join("..", source)) if source.startswith(("./", "../")) else source


def base_root(config: PlatformConfig) -> JsonObject:
    """The base root: variables, provider and the base module (which publishes what the team
    roots read: terraform/platform/published.tf), and the output operators' tools read."""
    # each notification channel's secrets (contract/channels.py): Slack's always, a newer
    # channel's only when jobplane.toml's [deploy] sets it (unset, the module's default "" holds)
    secrets = [c for c in channel_secrets() if c.always_declared or config.deploy.channel_secret(c.key) is not None]
    module_vars = ["runner_image", "subnet_ids", "security_group_ids", "portal_url",
                   *(c.key for c in secrets), "lambda_package", "lambda_reserved_concurrency", "vpc_endpoints", "portal"]
    # [deploy]'s plain settings are declared only when set: unset, the module's default holds
    plain = {k: {"type": "string" if isinstance(v, str) else "number",
                 "description": f"[deploy] {k} in jobplane.toml (the base module's variable)."}
             for k, v in config.deploy.plain().items()}
    module_vars += list(plain)
    # Slack buttons (terraform/platform/slack_actions.tf): declared only when set, so a
    # deployment without them compiles as before
    slack: JsonObject = ({"slack_interactivity": {"type": "any", "default": None, "description":
                         "Slack buttons on alerts (the base module's variable; [deploy] slack_signing_secret_arn "
                         "and [slack] in jobplane.toml)."}} if config.deploy.slack_signing_secret_arn else {})
    module_vars += list(slack)
    return {
        "terraform": _settings(config, config.terraform.key if config.terraform else None),
        "variable": {
            "region": _REGION_VAR,
            "runner_image": {"type": "string", "description": "Image with the application and jobplane-runner installed."},
            "subnet_ids": {"type": "list(string)", "description": "Private subnets for the runner's Fargate tasks."},
            "security_group_ids": {"type": "list(string)", "description": "Security groups for the runner's tasks."},
            "portal_url": {"type": "string", "default": "", "description": "Base URL of the portal, for links in alerts."},
            **{c.key: {"type": "string", "default": "", "description": c.description} for c in secrets},
            "lambda_package": {"type": "string", "default": "../../../build/jobplane-lambda.zip",
                               "description": "Zip of the notifier/reconciler Lambda, built by the project."},
            "lambda_reserved_concurrency": {"type": "number", "default": None,
                                            "description": "Reserved concurrency per Lambda (null: none)."},
            "vpc_endpoints": {"type": "object({vpc_id = string, route_table_ids = list(string)})", "default": None,
                              "description": "VPC endpoints for tasks without a NAT gateway (null: none)."},
            "portal": {"type": "any", "default": None,
                       "description": "The portal behind an ALB with OIDC sign-in (the base module's variable "
                                      "'portal'; deploy/portal.example.tfvars.json); null: none."},
            **plain,
            **slack,
        },
        "provider": _PROVIDER,
        # jobplane.toml's strings are of their own shape (contract/config.py: no '$' or '%' in
        # any), and escaped as well: Terraform reads every string of a .tf.json as a template,
        # and a config string must reach it as text, never as an expression (issue 48 item 1)
        "module": {"platform": {"source": module_source(config), "name_prefix": terraform_escape(config.name_prefix),
                                "team_channels": {t.name: terraform_escape(t.channel)
                                                  for t in config.teams.values() if t.channel},
                                "default_channel": terraform_escape(config.default_channel or ""),
                                **{v: "${var." + v + "}" for v in module_vars}}},
        "data": {"aws_caller_identity": {"current": {}}},
        # Where operators' tools find the platform: `terraform output -json > deployment.json`,
        # then `jobplane status --deployment deployment.json` (cli/common.py: aws_target).
        "output": {"jobplane": {"description": "The platform's names, for jobplane --deployment", "value": {
            "table": "${module.platform.table_name}", "topic_arn": "${module.platform.topic_arn}",
            "region": "${var.region}", "account_id": "${data.aws_caller_identity.current.account_id}",
            "name_prefix": config.name_prefix, "catalog_uri": "${module.platform.catalog_uri}",
            "log_group": "${module.platform.log_group_name}", "portal_url": "${var.portal_url}"}},
            # the managed policy to attach to operators' roles (the portal's actions)
            "operator_policy_arn": {"description": "Attach to the roles of people who run jobplane --deployment",
                                    "value": "${module.platform.operator_policy_arn}"},
            # the Slack app's Interactivity Request URL (docs/notifications.md "Setting up the Slack app")
            **({"slack_interactivity_url": {"description": "The Slack app's Interactivity Request URL",
                                            "value": "${module.platform.slack_interactivity_url}"}}
               if config.deploy.slack_signing_secret_arn else {})},
    }


def base_tfvars(config: PlatformConfig) -> JsonObject:
    """The base root's optional variables as jobplane.toml's [deploy] sets them (a file Terraform
    loads itself: contract/deploy_settings.py says why they are committed, not passed)."""
    out = config.deploy.tfvars(config.platform_admins, {t.name: t.members for t in config.teams.values()})
    if config.deploy.slack_signing_secret_arn:  # the worker judges a click as the portal does: the same people
        out["slack_interactivity"] = {
            "signing_secret_arn": config.deploy.slack_signing_secret_arn, "app_id": config.slack.app_id,
            "team_id": config.slack.team_id, "users": dict(sorted(config.slack.users.items())),
            "admins": list(config.platform_admins),
            "team_members": {t.name: list(t.members) for t in sorted(config.teams.values(), key=lambda t: t.name)}}
    return out


def team_key(config: PlatformConfig, team: str) -> str | None:
    return config.terraform.team_key.format(team=team) if config.terraform else None


def team_root(config: PlatformConfig, team: str) -> JsonObject:
    """A team's root (its jobs' files sit beside it): what the base module published, read from
    SSM Parameter Store, and the team's part of the catalog uploaded where the portal and the
    slow-run check read it. It never reads the base root's state (published.py says why)."""
    return {
        "terraform": _settings(config, team_key(config, team)),
        "variable": {"region": _REGION_VAR},
        "provider": _PROVIDER,
        "data": {**_IDENTITY, "aws_ssm_parameter": {"platform": {
            "for_each": "${toset(" + json.dumps(list(PUBLISHED)) + ")}",
            "name": "/" + config.name_prefix + "/platform/${each.key}",
        }}},
        # insecure_value: these are names and ARNs, and a sensitive value would hide every state
        # machine definition and policy built from them in the plan a reviewer reads
        "locals": {"platform": "${{ for k, p in data.aws_ssm_parameter.platform : k => p.insecure_value }}"},
        "resource": {"aws_s3_object": {"catalog": {
            "bucket": "${local.platform.catalog_bucket}",
            "key": f"catalog/{team}.json",
            "source": "${path.module}/" + CATALOG_FILE,
            "source_hash": "${filemd5(\"${path.module}/" + CATALOG_FILE + "\")}",
            "content_type": "application/json",
        }}},
    }


_statement, _assume, _secret_references = statement, assume, secret_references


@dataclass
class JobTerraform:
    """The job's Terraform document while it is built: what an executor adds its resources and
    statements to (compiler/executors/base.py TerraformContext)."""

    job: Job
    config: PlatformConfig
    tid: str
    resource: dict[str, JsonObject] = field(default_factory=dict)
    data: dict[str, JsonObject] = field(default_factory=lambda: {"aws_iam_policy_document": {}})
    roles: JsonObject = field(default_factory=dict)
    role_policies: JsonObject = field(default_factory=dict)
    attachments: JsonObject = field(default_factory=dict)
    locals: JsonObject = field(default_factory=dict)  # its ECS task role's ARN (compiler/task_roles.py)

    @property
    def docs(self) -> JsonObject:
        return self.data["aws_iam_policy_document"]


def executors_of(job: Job) -> list[tuple[StepExecutor, list[Step]]]:
    """The executors the job's steps run on, each with its steps, in registry order (so a job's
    role statements keep one order whatever order its steps come in)."""
    by_executor: dict[str, tuple[StepExecutor, list[Step]]] = {}
    runnable = job.runnable_steps()  # once, not once a kind (it walks the groups' members)
    for kind in kinds.REGISTRY:
        steps = [s for s in runnable if s.kind is kind]
        if steps:
            executor = kind.executor
            by_executor.setdefault(executor.name, (executor, []))[1].extend(steps)
    return list(by_executor.values())


def job_module(job: Job, asl_text: str, config: PlatformConfig) -> JsonObject:
    """The job's resources in its team's root. The state machine's definition holds the one
    stored copy of its ASL (``asl_of`` reads it back)."""
    prefix = config.name_prefix
    tid = names.tf_id(job.name)
    sm_name = names.state_machine_name(prefix, job.name)
    sm_arn = f"arn:{PARTITION}:states:{REGION}:{ACCOUNT}:stateMachine:{sm_name}"
    tf = JobTerraform(job=job, config=config, tid=tid)
    executors = executors_of(job)
    # what the ASL's tokens bind to: the base module's outputs, and what an executor's own
    # resources stand in for (a job's ECS task definition of its own)
    bindings = terraform_expressions(tid, False) | {
        token: value for executor, steps in executors for token, value in executor.token_bindings(tid, steps).items()}
    resource, data, docs = tf.resource, tf.data, tf.docs
    roles, role_policies, attachments = tf.roles, tf.role_policies, tf.attachments

    # -- state machine and its role -------------------------------------------------------
    docs[f"{tid}_sfn_assume"] = _assume("states.amazonaws.com")
    docs[f"{tid}_sfn"] = {"statement": [
        *(st for executor, steps in executors for st in executor.role_statements(tf, steps)),
        # GetItem only for a state machine that reads an item (a job with `after` reads its
        # upstream run's record); every one writes (claim, skip, records): least privilege
        # (its expectations' reads are granted by their own statements, below)
        _statement("JobStateAndHistory", [*(["dynamodb:GetItem"] if '"arn:aws:states:::dynamodb:getItem"' in asl_text
                                            and not expect_states.role_statements(job) or job.after
                                            else []), "dynamodb:PutItem", "dynamodb:UpdateItem"],
                   ["${local.platform.table_arn}"],
                   [{"test": "ForAllValues:StringLike", "variable": "dynamodb:LeadingKeys",
                     "values": [dm.job_partition(job.name), f"{dm.EXEC_PREFIX}*"]}]),
        _statement("PublishOutcome", ["sns:Publish"], ["${local.platform.topic_arn}"]),
        # what its group kinds call (a jp.map's lists and children: compiler/map_states.py), for a job that has one
        *(st for kind in kinds.GROUPS if any(s.kind is kind for s in job.steps) for st in kind.role_statements(job, sm_name)),
        *pool_statements(job),  # only a job whose steps hold a pool (compiler/pools.py)
        *expect_states.role_statements(job),  # only a job with expectations (compiler/expect_states.py)
    ]}
    # what the policy's skip path calls about the claim's holder, on this job's executions only
    for sid, actions in policies.of(job.policy).holder_statements():
        docs[f"{tid}_sfn"]["statement"].append(
            _statement(sid, list(actions),
                       [f"arn:{PARTITION}:states:{REGION}:{ACCOUNT}:execution:{sm_name}:*"]))
    roles[f"{tid}_sfn"] = {"name": names.sfn_role_name(prefix, job.name),
                           "description": f"Step Functions role of jobplane job {job.name}",
                           "assume_role_policy": f"${{data.aws_iam_policy_document.{tid}_sfn_assume.json}}"}
    role_policies[f"{tid}_sfn"] = {"name": "job", "role": f"${{aws_iam_role.{tid}_sfn.id}}",
                                   "policy": f"${{data.aws_iam_policy_document.{tid}_sfn.json}}"}
    attachments[f"{tid}_sfn_observability"] = {"role": f"${{aws_iam_role.{tid}_sfn.name}}",
                                               "policy_arn": "${local.platform.sfn_observability_policy_arn}"}
    resource["aws_sfn_state_machine"] = {tid: {
        "name": sm_name,
        "type": "STANDARD",
        "role_arn": f"${{aws_iam_role.{tid}_sfn.arn}}",
        "definition": bind_for_terraform(asl_text, bindings),
        "logging_configuration": {"log_destination": "${local.platform.sfn_log_group_arn}:*",
                                  "include_execution_data": True, "level": "ERROR"},
        "tracing_configuration": {"enabled": True},
        "tags": {"jobplane:job": job.name, "jobplane:team": job.team},
        # each change publishes a version: a re-run of an older definition starts it, and
        # the platform prunes them before the 1,000 a state machine may hold
        # (platform/sfn_versions.py; the provider's publish:
        # https://registry.terraform.io/providers/hashicorp/aws/latest/docs/resources/sfn_state_machine)
        "publish": True,
    }}

    # -- schedules ---------------------------------------------------------------------------
    if job.schedule:
        docs[f"{tid}_scheduler_assume"] = _assume("scheduler.amazonaws.com")
        docs[f"{tid}_scheduler"] = {"statement": [
            _statement("StartJob", ["states:StartExecution"], [sm_arn]),
            _statement("DeadLetter", ["sqs:SendMessage"], ["${local.platform.scheduler_dlq_arn}"]),
            # The schedule is KMS-encrypted (Decrypt), and a dead letter goes to a KMS-encrypted
            # queue, whose sender needs GenerateDataKey and Decrypt:
            # https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-key-management.html
            _statement("ScheduleAndDeadLetterKeys", ["kms:Decrypt", "kms:GenerateDataKey"],
                       ["${local.platform.kms_key_arn}"]),
        ]}
        roles[f"{tid}_scheduler"] = {"name": names.scheduler_role_name(prefix, job.name),
                                     "description": f"EventBridge Scheduler role of jobplane job {job.name}",
                                     "assume_role_policy": f"${{data.aws_iam_policy_document.{tid}_scheduler_assume.json}}"}
        role_policies[f"{tid}_scheduler"] = {"name": "start-job", "role": f"${{aws_iam_role.{tid}_scheduler.id}}",
                                             "policy": f"${{data.aws_iam_policy_document.{tid}_scheduler.json}}"}
        schedule_input = schedule_target_input(job.param_defaults)
        schedules = {}
        for i, expr in enumerate(deployed_schedule(job, config)):  # a calendar job's: explicit crons
            schedules[tid if i == 0 else f"{tid}_{i + 1}"] = {
                "name": names.schedule_name(prefix, job.name, i),
                "group_name": "${local.platform.schedule_group_name}",
                "description": f"{job.name} ({job.team})",
                "schedule_expression": expr,
                "schedule_expression_timezone": job.timezone,
                "state": "ENABLED" if job.enabled else "DISABLED",
                "flexible_time_window": {"mode": "OFF"},
                "kms_key_arn": "${local.platform.kms_key_arn}",
                "target": {
                    "arn": f"${{aws_sfn_state_machine.{tid}.arn}}",
                    "role_arn": f"${{aws_iam_role.{tid}_scheduler.arn}}",
                    "input": schedule_input,
                    "retry_policy": {"maximum_event_age_in_seconds": 3600, "maximum_retry_attempts": 10},
                    "dead_letter_config": {"arn": "${local.platform.scheduler_dlq_arn}"},
                },
            }
        resource["aws_scheduler_schedule"] = schedules

    # -- after: a rule on each upstream job's status events, starting this job ----------------
    if job.after:
        docs[f"{tid}_after_assume"] = _assume("events.amazonaws.com")
        # The target's role only starts the job; a dead letter is sent by EventBridge itself
        # (the queue's and the key's policies allow events.amazonaws.com, base module):
        # https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html
        docs[f"{tid}_after"] = {"statement": [_statement("StartJob", ["states:StartExecution"], [sm_arn])]}
        roles[f"{tid}_after"] = {"name": names.after_role_name(prefix, job.name),
                                 "description": f"EventBridge role that starts jobplane job {job.name} after others",
                                 "assume_role_policy": f"${{data.aws_iam_policy_document.{tid}_after_assume.json}}"}
        role_policies[f"{tid}_after"] = {"name": "start-job", "role": f"${{aws_iam_role.{tid}_after.id}}",
                                         "policy": f"${{data.aws_iam_policy_document.{tid}_after.json}}"}
        rules, targets = {}, {}
        for a in job.after:
            rid = f"{tid}_after_{names.tf_id(a.job)}"
            upstream_arn = (f"arn:{PARTITION}:states:{REGION}:{ACCOUNT}:stateMachine:"
                            f"{names.state_machine_name(prefix, a.job)}")
            rules[rid] = {"name": upstream.rule_name(prefix, job.name, a.job),
                          "description": f"Start {job.name} when a run of {a.job} ends {a.on}",
                          "event_pattern": json.dumps(upstream.event_pattern(upstream_arn, a.on), sort_keys=True),
                          "tags": {"jobplane:job": job.name, "jobplane:team": job.team}}
            targets[rid] = {
                "rule": f"${{aws_cloudwatch_event_rule.{rid}.name}}",
                "target_id": "start-job",
                "arn": f"${{aws_sfn_state_machine.{tid}.arn}}",
                "role_arn": f"${{aws_iam_role.{tid}_after.arn}}",
                "input_transformer": {"input_paths": dict(upstream.INPUT_PATHS),
                                      "input_template": upstream.INPUT_TEMPLATE},
                "retry_policy": {"maximum_event_age_in_seconds": 3600, "maximum_retry_attempts": 10},
                "dead_letter_config": {"arn": "${local.platform.scheduler_dlq_arn}"},
            }
        resource["aws_cloudwatch_event_rule"] = rules
        resource["aws_cloudwatch_event_target"] = targets

    # -- what each executor needs besides the state machine (a task definition, a function) ----
    for executor, steps in executors:
        executor.resources(tf, steps)

    resource["aws_iam_role"] = roles
    resource["aws_iam_role_policy"] = role_policies
    resource["aws_iam_role_policy_attachment"] = attachments
    out: JsonObject = {"data": data, "resource": {k: resource[k] for k in sorted(resource)}}
    if tf.locals:  # only a job with ECS steps: every other job's file is as it was
        out["locals"] = dict(sorted(tf.locals.items()))
    return out


def schedule_target_input(params: JsonObject, definition: str | None = None) -> str:
    """A schedule's target input as Terraform holds it (``${`` and ``%{`` escaped: literal
    text, not an interpolation), with the digest of the job's definition when it is known
    (compiler/definitions.py stamps it once the job's state machine is rendered)."""
    payload = execution_input.scheduled(execution_input.SCHEDULER_TIME, params, definition).to_json()
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).replace("${", "$${").replace("%{", "%%{")


def render(doc: JsonObject) -> str:
    """A root's own file (``main.tf.json``): indented, a reviewer reads it."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_job(doc: JsonObject) -> str:
    """A job's file: compact. The job files are nearly all of the compiled output, and their
    bulk, the state machine's definition, is one string whatever the indentation: indenting
    the rest cost 3.3 of 63.5 MB at 1,000 jobs (issue 19; the catalogs 1.4 more). ``jq .`` shows one indented; reviewers
    read ``jobplane plan`` and Terraform's plan, not these files."""
    return json.dumps(doc, separators=(",", ":"), sort_keys=True, ensure_ascii=False, check_circular=False) + "\n"


def secret_grants(job_doc: JsonObject) -> list[str]:
    """What a job's task execution role may read, in words (the plan's reviewers read these, not
    ARNs): 'Secrets Manager secret billing/ledger-api-token', 'SSM parameter /billing/key'."""
    words = []
    for name, doc in job_doc.get("data", {}).get("aws_iam_policy_document", {}).items():
        if not name.endswith("_exec"):
            continue
        for st in doc["statement"]:
            for res in st["resources"]:
                if st.get("sid") == "ReadJobSecrets":
                    words.append("Secrets Manager secret " + res.split(":secret:", 1)[1].removesuffix("-??????"))
                elif st.get("sid") == "ReadJobParameters":
                    words.append("SSM parameter /" + res.split(":parameter/", 1)[1])
    return sorted(words)


def iam_summary(job_doc: JsonObject) -> dict[str, list[str]]:
    """role document -> sorted 'action on resource' lines, for the plan's IAM diff."""
    out: dict[str, list[str]] = {}
    for name, doc in job_doc.get("data", {}).get("aws_iam_policy_document", {}).items():
        if name.endswith("_assume"):
            continue
        lines = []
        for st in doc["statement"]:
            for action in st["actions"]:
                for res in st["resources"]:
                    lines.append(f"{action} on {res}")
        out[name] = sorted(lines)
    return out


