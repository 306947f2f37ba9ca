"""The IAM pieces every job's Terraform is built from: statements, trust documents, and the
references to a job's secrets, in the deployment's own account, region and partition (read by
data sources, so the compiled Terraform names no account)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobplane.compiler.secret_scope import SecretRef
from jobplane.contract import names, root_shards
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.executors.base import TerraformContext
    from jobplane.compiler.model import Job
    from jobplane.contract.config import PlatformConfig

ACCOUNT = "${data.aws_caller_identity.current.account_id}"
REGION = "${data.aws_region.current.region}"
PARTITION = "${data.aws_partition.current.partition}"
#: The tag on a role that reads secrets saying whose (compiler/shared_roles.py): ``team``, shared
#: by the team root's jobs of that scope, reading the secrets they declare; ``job``, the job's own.
SECRET_SCOPE_TAG = "jobplane:secrets"
#: The statements of such a role that read secrets: their resources are the secrets it reads.
SECRET_SIDS = ("ReadJobSecrets", "ReadJobParameters")


def statement(sid: str, actions: list[str], resources: list[str], conditions: list[JsonObject] | None = None) -> JsonObject:
    st: JsonObject = {"sid": sid, "effect": "Allow", "actions": sorted(actions), "resources": resources}
    if conditions:
        st["condition"] = conditions
    return st


def progress_statements(table_arn: str, job: str) -> list[JsonObject]:
    """What a runner's role needs for its steps' progress (docs/progress.md): an UpdateItem of
    the attributes the runner writes and a GetItem of a retry's checkpoint, held by their leading
    key to ``job``'s own progress records (``PROGRESS#<job>#*``, contract/progress.py ``job_keys``:
    never another job's). A job's ECS task role (compiler/task_roles.py) and its Lambda runner
    role get these; shared by the team's jobs whose grants are identical, a role lists each
    member's pattern (compiler/shared_roles.py).
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html)"""
    from jobplane.contract import progress

    def held_to(attributes: tuple[str, ...]) -> list[JsonObject]:
        return [{"test": "ForAllValues:StringLike", "variable": "dynamodb:LeadingKeys",
                 "values": [progress.job_keys(job)]},
                {"test": "ForAllValues:StringEquals", "variable": "dynamodb:Attributes", "values": list(attributes)}]

    return [statement("WriteStepProgress", ["dynamodb:UpdateItem"], [table_arn],
                      held_to(progress.ATTRIBUTES) + [RETURNS_ONLY_UPDATED]),
            statement("ReadStepCheckpoint", ["dynamodb:GetItem"], [table_arn],
                      held_to(progress.READ_ATTRIBUTES) + [SELECTS_ONLY_NAMED])]


#: The companions AWS gives an attribute-level grant (dynamodb:Attributes): a write may return no
#: attribute but those it wrote, a read select only the attributes it names, so neither answer
#: can carry an attribute the grant leaves out ("IfExists": a request that does not set the
#: parameter asks for nothing more; NONE is the default)
#: (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html,
#: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_examples_dynamodb_attributes.html).
RETURNS_ONLY_UPDATED: JsonObject = {"test": "StringEqualsIfExists", "variable": "dynamodb:ReturnValues",
                                    "values": ["NONE", "UPDATED_OLD", "UPDATED_NEW"]}
SELECTS_ONLY_NAMED: JsonObject = {"test": "StringEqualsIfExists", "variable": "dynamodb:Select",
                                  "values": ["SPECIFIC_ATTRIBUTES"]}


def resolved_params_statement(table_arn: str, job: str) -> JsonObject:
    """What a runner's role needs to record a scheduled fire's calendar defaults as it resolved
    them (the ``#params`` item of the run's progress partition, docs/dsl.md "Typed parameters"):
    a job's ECS task role has it (compiler/task_roles.py), a job's Lambda runner role when the job
    has calendar defaults; held to ``job``'s own progress partitions as :func:`progress_statements`."""
    from jobplane.contract import progress

    return statement("RecordResolvedParams", ["dynamodb:UpdateItem"], [table_arn], [
        {"test": "ForAllValues:StringLike", "variable": "dynamodb:LeadingKeys", "values": [progress.job_keys(job)]},
        {"test": "ForAllValues:StringEquals", "variable": "dynamodb:Attributes",
         "values": list(progress.PARAMS_ATTRIBUTES)}, RETURNS_ONLY_UPDATED])


def assume(service: str) -> JsonObject:
    return {"statement": [{
        "effect": "Allow", "actions": ["sts:AssumeRole"],
        "principals": [{"type": "Service", "identifiers": [service]}],
        "condition": [{"test": "StringEquals", "variable": "aws:SourceAccount", "values": [ACCOUNT]}],
    }]}


def secret_references(tid: str, secrets: dict[str, str], data: JsonObject) -> tuple[
        dict[str, str], list[str], list[str]]:
    """Where each secret comes from (the container's valueFrom) and what the execution role may
    read, all in the deployment's own account and region (the names the job's team may use:
    compiler/secret_scope.py). A Secrets Manager secret is looked up at plan time (a data source:
    a missing secret fails the plan, not the first run) and granted as ``NAME-??????``: IAM
    matches a Secrets Manager secret's full ARN, which ends in a hyphen and 6 random characters
    (https://docs.aws.amazon.com/secretsmanager/latest/userguide/auth-and-access_examples.html,
    "wildcard ... -??????"; '?' cannot occur in a name). An SSM parameter is given to ECS by its
    full ARN, ``parameter`` then its fully qualified name
    (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/secrets-envvar-ssm-paramstore.html)."""
    value_from: dict[str, str] = {}
    sm_arns: set[str] = set()
    ssm_arns: set[str] = set()
    for env, value in sorted(secrets.items()):
        ref = SecretRef.parse(env, value)
        if ref.service == "ssm":
            arn = f"arn:{PARTITION}:ssm:{REGION}:{ACCOUNT}:parameter/{ref.name.lstrip('/')}"
            value_from[env] = arn
            ssm_arns.add(arn)
        else:
            lookup = f"{tid}_{env.lower()}"
            data.setdefault("aws_secretsmanager_secret", {})[lookup] = {"name": ref.name}
            value_from[env] = f"${{data.aws_secretsmanager_secret.{lookup}.arn}}"
            sm_arns.add(f"arn:{PARTITION}:secretsmanager:{REGION}:{ACCOUNT}:secret:{ref.name}-??????")
    return value_from, sorted(sm_arns), sorted(ssm_arns)


def decrypt_secrets(keys: tuple[str, ...]) -> JsonObject | None:
    """The team's customer managed keys (``[teams.<team>] secret_keys``), for a role that reads
    its secrets: a secret or SecureString parameter under such a key is decrypted for the caller,
    who needs kms:Decrypt on it (Secrets Manager:
    https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html; SSM:
    https://docs.aws.amazon.com/systems-manager/latest/userguide/secure-string-parameter-kms-encryption.html;
    the ECS task execution role alike:
    https://docs.aws.amazon.com/AmazonECS/latest/developerguide/secrets-envvar-secrets-manager.html),
    here only through those two services (kms:ViaService), never directly."""
    if not keys:
        return None
    return statement("DecryptJobSecrets", ["kms:Decrypt"], list(keys), [
        {"test": "StringEquals", "variable": "kms:ViaService",
         "values": [f"secretsmanager.{REGION}.amazonaws.com", f"ssm.{REGION}.amazonaws.com"]}])


def secret_statements(tid: str, secrets: dict[str, str], tf: TerraformContext) -> tuple[dict[str, str], list[JsonObject]]:
    """Where each of ``secrets`` comes from (:func:`secret_references`) and the statements that
    read them, with the team's keys: what a task execution role and a runner function's role
    that read secrets both hold."""
    if not secrets:
        return {}, []
    value_from, sm_arns, ssm_arns = secret_references(tid, secrets, tf.data)
    team = tf.config.teams.get(tf.job.team)
    statements = [statement(SECRET_SIDS[0], ["secretsmanager:GetSecretValue"], sm_arns) if sm_arns else None,
                  statement(SECRET_SIDS[1], ["ssm:GetParameters"], ssm_arns) if ssm_arns else None,
                  decrypt_secrets(team.secret_keys) if team is not None else None]
    return value_from, [st for st in statements if st]


def secret_scope_tags(job: Job) -> dict[str, str]:
    """A role that reads a job's secrets says whose (:data:`SECRET_SCOPE_TAG`)."""
    return {SECRET_SCOPE_TAG: job.secret_scope}


def execution_roles_arns(config: PlatformConfig, job: Job) -> list[str]:
    """The ARN patterns of the task execution roles the job's team root shares, whose secret scope
    is either (contract/names.py team_role_patterns): what the state machine of a job with its
    own task definition passes to ECS, whichever of them its grant falls in."""
    team = config.teams.get(job.team)
    root = root_shards.job_root_name(job.team, job.name, team.roots if team else 1)
    return [f"arn:{PARTITION}:iam::{ACCOUNT}:role/{p}" for p in names.team_role_patterns(config.name_prefix, root, 'exec')]
