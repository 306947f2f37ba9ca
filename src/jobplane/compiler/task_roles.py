"""The ECS task role of a job's steps: its team's, scoped to its own jobs' progress records
(issue 67 part 1: "a step can write only its own run's records"; docs/progress.md "Who may write").

Before, one base-module role (``<prefix>-runner-task``, terraform/platform/runner.tf) served every
ECS step of every team, and its progress grant (``dynamodb:LeadingKeys`` ``PROGRESS#*``) let any
step write any run's progress record of any team. Now each job with ECS steps has a task role
grant of its own (role kind ``task``), which compiler/shared_roles.py groups, as every per-job
role, into its team root's shared roles: one role for the team's jobs whose grants are
identical, its progress statements listing each member's ``PROGRESS#<job>#*`` (contract/progress.py
``job_keys``: the partitions are keyed by job), packed into as many roles as IAM's policy size
needs (at most 99 per team root: the state machines pass them by name patterns of one and two
digits, as the task execution roles). The task runs with it through RunTask's task override
(``overrides.taskRoleArn``, "The Amazon Resource Name (ARN) of the role that containers in this
task can assume", https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_TaskOverride.html),
bound from a Terraform local of the job's file that names its role (so the shared-role rewrite,
which renames role references outside the state machine's definition, names the team's role).

What IAM cannot express: the run. A task role's credentials carry no per-task session tag or
session name a policy can compare with the item's key (the ECS task role guide documents none:
https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html; session tags
come only from AssumeRole / federation requests, https://docs.aws.amazon.com/IAM/latest/UserGuide/id_session-tags.html),
so a step may write the progress records of any run of its own job and of its team-mates' jobs
that share its role, and of no other job.

The other statements are those the base role held, unchanged in meaning but each only for a job
that makes its calls: the map lists (``s3:PutObject`` under ``map-items/``, now the job's own
prefix only, and the platform key's ``GenerateDataKey``; a job with a ``jp.map``) and the run's
``#params`` item (contract/progress.py ``PARAMS_ATTRIBUTES``; a job with calendar defaults),
with the attribute-level conditions and their ``ReturnValues``/``Select`` companions
(compiler/terraform_iam.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobplane.compiler.terraform_iam import (
    ACCOUNT, PARTITION, assume, progress_statements, resolved_params_statement, statement)
from jobplane.contract import map_items, names, root_shards
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.executors.base import TerraformContext
    from jobplane.compiler.model import Job
    from jobplane.contract.config import PlatformConfig

#: The role kind (compiler/shared_roles.py ``KIND_TAG``).
KIND = "task"
TABLE = "${local.platform.table_arn}"


def local_name(tid: str) -> str:
    """The Terraform local of a job's file naming its task role (the ``task_role_arn`` token's value)."""
    return f"{tid}_task_role_arn"


def map_items_resource(job: str) -> str:
    return f"arn:{PARTITION}:s3:::${{local.platform.catalog_bucket}}/{map_items.ITEMS_PREFIX}{job}/*"


def statements(job: Job) -> dict[str, list[JsonObject]]:
    """The role's inline policies, by name: the base role's three, held to ``job``, each only
    where the job makes its calls (the map lists for a job with a ``jp.map``, the ``#params``
    item for a job with calendar defaults; progress for every one: any step may report)."""
    out = {"progress": progress_statements(TABLE, job.name)}
    if any(s.kind.per_item(s) is not None for s in job.steps):
        out["map-items"] = [statement("WriteMapItems", ["s3:PutObject"], [map_items_resource(job.name)]),
                            statement("EncryptMapItems", ["kms:GenerateDataKey"], ["${local.platform.kms_key_arn}"])]
    if job.param_set.calendar_defaults():
        out["params"] = [resolved_params_statement(TABLE, job.name)]
    return out


def add(tf: TerraformContext) -> None:
    """The job's task role grant (``<tid>_task``), shared by compiler/shared_roles.py, and the
    local that names it for the RunTask override."""
    tid, job = tf.tid, tf.job
    role = f"{tid}_{KIND}"
    tf.docs[f"{role}_assume"] = assume("ecs-tasks.amazonaws.com")
    tf.roles[role] = {"name": f"{tf.config.name_prefix}-{job.name}-{KIND}",
                      "description": f"ECS task role of jobplane job {job.name}'s steps (its own progress records)",
                      "assume_role_policy": f"${{data.aws_iam_policy_document.{role}_assume.json}}"}
    # one inline policy (as every per-job role: compiler/shared_roles.py moves a role's policy by its id)
    tf.docs[role] = {"statement": [st for sts in statements(job).values() for st in sts]}
    tf.role_policies[role] = {"name": "runner", "role": f"${{aws_iam_role.{role}.id}}",
                              "policy": f"${{data.aws_iam_policy_document.{role}.json}}"}
    # what the team's application code may do (jobplane.toml [teams.<team>] task_policies): the
    # same for every job of the team, so it never splits the team's shared task roles
    team = tf.config.teams.get(job.team)
    for i, arn in enumerate(team.task_policies if team else ()):
        tf.attachments[f"{role}_app_{i}"] = {"role": f"${{aws_iam_role.{role}.name}}", "policy_arn": arn}
    tf.locals[local_name(tid)] = f"${{aws_iam_role.{role}.arn}}"


def task_roles_arns(config: PlatformConfig, job: Job) -> list[str]:
    """The ARN patterns of the task roles the job's team root shares (contract/names.py
    ``team_role_patterns``): what its state machine passes to ECS, whichever its grant falls in."""
    team = config.teams.get(job.team)
    root = root_shards.job_root_name(job.team, job.name, team.roots if team else 1)
    return [f"arn:{PARTITION}:iam::{ACCOUNT}:role/{p}" for p in names.team_role_patterns(config.name_prefix, root, KIND)]