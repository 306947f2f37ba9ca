"""The IAM contract: every AWS call a compiled job makes is allowed by the role the compiler
emits for it, and every statement of that role is needed by some call.

What only AWS can show is checked offline here: the calls come from the compiled output itself
(each ASL Task's integration, each schedule's target, each task definition's secrets), mapped to
the permissions AWS documents for them, and are evaluated against the compiled policy documents
with tests/iam_policy.py. Removing any one statement from a role makes some call denied, so the
test fails when a permission goes missing and when one is granted that no call uses.

The roles a job runs with are its team's, shared by the jobs whose grants are identical
(compiler/shared_roles.py): each job's own grant (kept in its file) is held to its calls as
above, and each shared role to exactly the union of its members' identical grants, under IAM's
role policy size, allowing every member's calls.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from iam_policy import Call, allowed, denied_calls

from jobplane.compiler.output import compile_all, job_files
from jobplane.compiler.shared_roles import KIND_TAG, role_refs
from jobplane.compiler.terraform_iam import SECRET_SCOPE_TAG, SECRET_SIDS
from jobplane.contract.config import load_config

PARTITION, REGION, ACCOUNT = "aws", "us-east-1", "123456789012"
PREFIX = "jobplane"
PUBLISHED = {  # what the base module publishes (terraform/platform/published.tf), as AWS would name it
    "table_name": PREFIX,
    "table_arn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{PREFIX}",
    "topic_arn": f"arn:aws:sns:{REGION}:{ACCOUNT}:{PREFIX}-events",
    "cluster_arn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{PREFIX}",
    "cluster_name": PREFIX,
    "runner_family": f"{PREFIX}-runner",
    "runner_image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{PREFIX}-runner:1",
    "runner_task_role_arn": f"arn:aws:iam::{ACCOUNT}:role/{PREFIX}-runner-task",
    "runner_execution_role_arn": f"arn:aws:iam::{ACCOUNT}:role/{PREFIX}-runner-exec",
    "runner_repository_arn": f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/{PREFIX}-runner",
    "runner_logging_policy_arn": f"arn:aws:iam::{ACCOUNT}:policy/{PREFIX}-runner-logging",
    "log_group_name": f"/{PREFIX}/runner",
    "sfn_log_group_arn": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/vendedlogs/states/{PREFIX}",
    "sfn_observability_policy_arn": f"arn:aws:iam::{ACCOUNT}:policy/{PREFIX}-workflow-observability",
    "schedule_group_name": PREFIX,
    "scheduler_dlq_arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{PREFIX}-scheduler-dlq",
    "kms_key_arn": f"arn:aws:kms:{REGION}:{ACCOUNT}:key/0000aaaa-bbbb-cccc-dddd-eeeeffff0000",
    "catalog_bucket": f"{PREFIX}-catalog-20260101",
    "subnets": "subnet-1",
    "security_groups": "sg-1",
}
MODULE = PUBLISHED  # the names the guards below use
ACTIVE_REVISION = 7  # the revision ECS resolves a family to (RunTask: "the latest ACTIVE revision")


class Resolver:
    """Terraform interpolations of one job's file, resolved to the ARNs AWS would have."""

    def __init__(self, doc: dict[str, Any]):
        self.doc = doc

    def value(self, ref: str) -> str:
        parts = ref.split(".")
        if ref == "data.aws_partition.current.partition":
            return PARTITION
        if ref == "data.aws_region.current.region":
            return REGION
        if ref == "data.aws_caller_identity.current.account_id":
            return ACCOUNT
        if parts[:2] == ["local", "platform"]:
            return PUBLISHED[parts[2]]
        if parts[0] == "local":  # a local of a job's file (its ECS task role: compiler/task_roles.py)
            return str(self.text(self.doc["locals"][parts[1]]))
        resources = self.doc["resource"]
        if parts[0] == "aws_ecs_task_definition" and parts[2] == "family":
            return resources["aws_ecs_task_definition"][parts[1]]["family"]
        if parts[0] == "aws_iam_role" and parts[2] == "arn":
            return f"arn:aws:iam::{ACCOUNT}:role/{resources['aws_iam_role'][parts[1]]['name']}"
        if parts[0] == "aws_ecs_task_definition" and parts[2] == "arn":
            family = resources["aws_ecs_task_definition"][parts[1]]["family"]
            return f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/{family}:3"
        if parts[0] == "aws_sfn_state_machine" and parts[2] == "arn":
            name = resources["aws_sfn_state_machine"][parts[1]]["name"]
            return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
        if parts[:2] == ["data", "aws_secretsmanager_secret"]:
            name = self.doc["data"]["aws_secretsmanager_secret"][parts[2]]["name"]
            return f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{name}-AbC123"
        raise AssertionError(f"no value for ${{{ref}}}")

    def text(self, value: Any) -> Any:
        if isinstance(value, str):
            return re.sub(r"(?<!\$)\$\{([^}]+)\}", lambda m: self.value(m[1]), value).replace("$${", "${")
        if isinstance(value, list):
            return [self.text(v) for v in value]
        if isinstance(value, dict):
            return {k: self.text(v) for k, v in value.items()}
        return value


def _pk(value: dict[str, str]) -> str:
    """A key's partition value: a literal, or what a States.Format template makes of one."""
    if "S" in value:
        return value["S"]
    m = re.match(r"States\.Format\('([^']*)'", value["S.$"])
    assert m, value
    return m[1].replace("{}", "0f3b1e2c-run")


def _parameters(state: dict[str, Any]) -> dict[str, Any]:
    """A Task's call: its Parameters, or a JSONata Task's Arguments as they evaluate for a
    scheduled fire (the first claim, compiler/asl.py; JSONata 2.0.6, as Step Functions runs it)."""
    if state.get("QueryLanguage") != "JSONata":
        return state["Parameters"]
    import jsonata

    from jobplane.contract import execution_input

    states = {"input": execution_input.scheduled("2027-01-04T02:00:00Z").to_json(),
              "context": {"Execution": {"Name": "0f3b1e2c-run", "Id": "arn:execution", "StartTime": "2027-01-04T02:00:01Z"}}}
    expression = state["Arguments"].removeprefix("{%").removesuffix("%}")
    return jsonata.Jsonata(f"($states := {json.dumps(states)}; {expression})").evaluate(None)


def _states(definition: dict[str, Any]):
    for name, state in definition["States"].items():
        yield name, state
        for branch in state.get("Branches", []):
            yield from _states(branch)
        if "ItemProcessor" in state:  # a jp.map's children (compiler/map_states.py)
            yield from _states(state["ItemProcessor"])


def sfn_calls(job_doc: dict[str, Any], r: Resolver, tid: str) -> list[Call]:
    """Every call the state machine makes, with the permissions the Step Functions guide lists
    per integration (https://docs.aws.amazon.com/step-functions/latest/dg/service-integration-iam-templates.html)."""
    sm = job_doc["resource"]["aws_sfn_state_machine"][tid]
    definition = json.loads(r.text(sm["definition"]))
    calls: list[Call] = []
    for name, state in _states(definition):
        if state["Type"] == "Map" and "ItemReader" in state:
            # a Distributed Map: it reads its list from S3 (SSE-KMS: decrypting with the platform
            # key), starts its children and watches or stops them ("IAM policies for using
            # Distributed Map states", https://docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html)
            why = f"{sm['name']}: {name}"
            reader = state["ItemReader"]
            assert reader["Resource"] == "arn:aws:states:::s3:getObject", why
            # the key is drawn into the state data (a Pass per way in: the run's own list, a
            # re-run's; contract/map_items.py): each is a key the Map may read
            field = reader["Parameters"]["Key.$"].rsplit(".", 1)[0]
            drawn = [s["Parameters"]["key.$"] for _, s in _states(definition)
                     if s["Type"] == "Pass" and s.get("ResultPath") == field]
            keys = [re.match(r"States\.Format\('([^']*)'", d) for d in drawn]
            assert keys and all(keys), why
            calls += [
                *(Call("s3:GetObject", f"arn:aws:s3:::{reader['Parameters']['Bucket']}/{k[1].replace('{}', 'run-1')}",
                       {}, why) for k in keys if k),
                Call("kms:Decrypt", MODULE["kms_key_arn"], {}, why),
                Call("states:StartExecution", f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{sm['name']}", {}, why),
                *(Call(a, f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{sm['name']}/close-all-label:child-1", {}, why)
                  for a in ("states:DescribeExecution", "states:StopExecution")),
            ]
            if "ResultWriter" in state:
                # its results exported under the prefix, in <prefix>/<map run id>/ ("IAM policies
                # for ResultWriter", https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html),
                # to a bucket that encrypts with the platform key (SSE-KMS: a write needs a data key)
                writer = state["ResultWriter"]
                assert writer["Resource"] == "arn:aws:states:::s3:putObject", why
                folder = f"arn:aws:s3:::{writer['Parameters']['Bucket']}/{writer['Parameters']['Prefix']}/map-run-1"
                calls += [Call(a, f"{folder}/{obj}", {}, why)
                          for a in ("s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts",
                                    "s3:AbortMultipartUpload") for obj in ("manifest.json", "SUCCEEDED_0.jsonl")]
                calls.append(Call("kms:GenerateDataKey", MODULE["kms_key_arn"], {}, why))
            continue
        if state["Type"] != "Task":
            continue
        resource, params = state["Resource"], _parameters(state)
        why = f"{sm['name']}: {name}"
        # an optimized DynamoDB integration, or the AWS SDK one that waits for a callback (an
        # approval's record holds its task token): IAM sees the API action on the table either way
        # (https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html)
        ddb = re.fullmatch(r"arn:aws:states:::(?:aws-sdk:)?dynamodb:(getItem|putItem|updateItem)(?:\.waitForTaskToken)?",
                           resource)
        if ddb:
            action = "dynamodb:" + ddb[1][0].upper() + ddb[1][1:]
            key = params.get("Key") or params.get("Item")
            calls.append(Call(action, f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{params['TableName']}",
                              {"dynamodb:LeadingKeys": [_pk(key["pk"])]}, why))
        elif resource == "arn:aws:states:::aws-sdk:dynamodb:transactWriteItems":
            # a transaction needs the permission of each of its writes, on each item
            # (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html)
            for item in params["TransactItems"]:
                (kind, write), = item.items()
                key = write.get("Key") or write.get("Item")
                calls.append(Call({"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem",
                                   "Delete": "dynamodb:DeleteItem"}[kind],
                                  f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{write['TableName']}",
                                  {"dynamodb:LeadingKeys": [_pk(key["pk"])]}, why))
        elif resource == "arn:aws:states:::ecs:runTask.sync":
            # https://docs.aws.amazon.com/step-functions/latest/dg/ecs-iam.html (Run a job, .sync)
            # a family runs its latest ACTIVE revision; IAM sees that revision's ARN
            family = params["TaskDefinition"]
            assert ":" not in family, f"{why}: a task definition family, not {family}"
            task_def = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/{family}:{ACTIVE_REVISION}"
            task_role, exec_role = _task_roles(job_doc, r, task_def)
            # the task runs with its team's task role, RunTask's override (compiler/task_roles.py)
            task_role = params["Overrides"].get("TaskRoleArn", task_role)
            calls += [
                Call("ecs:RunTask", task_def, {"ecs:cluster": params["Cluster"]}, why),
                Call("ecs:StopTask", f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/{PREFIX}/0a1b2c", {}, why),
                Call("ecs:DescribeTasks", f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/{PREFIX}/0a1b2c", {}, why),
                *(Call(a, f"arn:aws:events:{REGION}:{ACCOUNT}:rule/StepFunctionsGetEventsForECSTaskRule", {}, why)
                  for a in ("events:PutTargets", "events:PutRule", "events:DescribeRule")),
                *(Call("iam:PassRole", role, {"iam:PassedToService": "ecs-tasks.amazonaws.com"}, why)
                  for role in (task_role, exec_role)),
            ]
        elif resource == "arn:aws:states:::lambda:invoke":
            # https://docs.aws.amazon.com/step-functions/latest/dg/lambda-iam.html
            calls.append(Call("lambda:InvokeFunction",
                              f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{params['FunctionName']}", {}, why))
        elif resource == "arn:aws:states:::sns:publish":
            calls.append(Call("sns:Publish", params["TopicArn"], {}, why))
        elif resource == "arn:aws:states:::aws-sdk:sfn:describeExecution":
            calls.append(Call("states:DescribeExecution",
                              f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{sm['name']}:holder-run", {}, why))
        elif resource == "arn:aws:states:::aws-sdk:sfn:stopExecution":
            # a REPLACE job stops the holder of its claim: always one of its own executions
            # (the claim's holder is written by its own claim); StopExecution's resource is the
            # execution (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awsstepfunctions.html)
            calls.append(Call("states:StopExecution",
                              f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{sm['name']}:holder-run", {}, why))
        else:
            raise AssertionError(f"{why}: no IAM mapping for integration {resource}; add it with its AWS doc")
    return calls


def _task_roles(job_doc: dict[str, Any], r: Resolver, task_def_arn: str) -> tuple[str, str]:
    for tdef in job_doc["resource"].get("aws_ecs_task_definition", {}).values():
        if task_def_arn.startswith(f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/{tdef['family']}:"):
            return r.text(tdef["task_role_arn"]), r.text(tdef["execution_role_arn"])
    assert task_def_arn == f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/{PUBLISHED['runner_family']}:{ACTIVE_REVISION}"
    return MODULE["runner_task_role_arn"], MODULE["runner_execution_role_arn"]


def scheduler_calls(job_doc: dict[str, Any], r: Resolver) -> list[Call]:
    """EventBridge Scheduler assumes the role to start the target, decrypt the schedule and send
    dead letters to the KMS-encrypted queue
    (https://docs.aws.amazon.com/scheduler/latest/UserGuide/setting-up.html#setting-up-execution-role,
    https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-key-management.html)."""
    calls = []
    for name, schedule in job_doc["resource"].get("aws_scheduler_schedule", {}).items():
        target = r.text(schedule["target"])
        calls += [Call("states:StartExecution", target["arn"], {}, name),
                  Call("sqs:SendMessage", target["dead_letter_config"]["arn"], {}, name),
                  Call("kms:GenerateDataKey", r.text(schedule["kms_key_arn"]), {}, name),
                  Call("kms:Decrypt", r.text(schedule["kms_key_arn"]), {}, name)]
    return calls


def after_calls(job_doc: dict[str, Any], r: Resolver) -> list[Call]:
    """An `after` rule's target starts the job with the role it names, which needs only
    states:StartExecution on the state machine (as the AWS CDK's own Step Functions target grants
    it: aws-cdk, packages/@aws-cdk/aws-events-targets/lib/state-machine.ts); its dead letters are
    sent by EventBridge itself, under the queue's and the key's policies, not the role
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html)."""
    return [Call("states:StartExecution", r.text(target["arn"]), {}, name)
            for name, target in job_doc["resource"].get("aws_cloudwatch_event_target", {}).items()]


def execution_role_calls(job_doc: dict[str, Any], r: Resolver) -> list[Call]:
    """The ECS agent pulls the image and reads the container's secrets with the task execution
    role (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/secrets-envvar-secrets-manager.html);
    the pull token and log writing come from the base module's shared policy."""
    calls = []
    for tdef in job_doc["resource"].get("aws_ecs_task_definition", {}).values():
        for container in json.loads(tdef["container_definitions"]):
            calls += [Call(a, MODULE["runner_repository_arn"], {}, "image pull")
                      for a in ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability")]
            for secret in container.get("secrets", []):
                arn = r.text(secret["valueFrom"])
                action = "ssm:GetParameters" if ":ssm:" in arn else "secretsmanager:GetSecretValue"
                calls.append(Call(action, arn, {}, secret["name"]))
    return calls


def lambda_role_calls(job_doc: dict[str, Any], r: Resolver) -> list[Call]:
    """The runner function writes its output to its own log group and reads the
    secrets its steps name before it starts the runner (runner/lambda_handler.py:
    secretsmanager:GetSecretValue, ssm:GetParameters), and its runner writes its steps'
    progress records; its network interfaces come from the AWSLambdaVPCAccessExecutionRole
    managed policy, not the inline one."""
    calls = []
    for function in job_doc["resource"].get("aws_lambda_function", {}).values():
        name = function["function_name"]
        group = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/{name}"
        calls += [Call(a, f"{group}:log-stream:2026/12/03/[$LATEST]0a1b", {}, name)
                  for a in ("logs:CreateLogStream", "logs:PutLogEvents")]
        sources = json.loads(function["environment"]["variables"].get("JOBPLANE_SECRET_SOURCES", "{}"))
        for env, source in sources.items():
            arn = r.text(source)
            action = "ssm:GetParameters" if ":ssm:" in arn else "secretsmanager:GetSecretValue"
            calls.append(Call(action, arn, {}, env))
        if "JOBPLANE_RECORDS_TABLE" in function["environment"]["variables"]:
            # its steps' progress (runner/progress.py: the requests tests/test_progress.py records)
            from jobplane.contract import progress

            table = r.text("${local.platform.table_arn}")
            # its job's own progress partitions (contract/progress.py pk)
            job_doc_name = next(iter(job_doc["resource"]["aws_sfn_state_machine"].values()))["tags"]["jobplane:job"]
            for action, attributes in (("dynamodb:UpdateItem", progress.ATTRIBUTES),
                                       ("dynamodb:GetItem", progress.READ_ATTRIBUTES)):
                calls.append(Call(action, table, {"dynamodb:LeadingKeys": [progress.pk(job_doc_name, "run-1")],
                                                  "dynamodb:Attributes": sorted(attributes)}, "progress"))
            # a scheduled fire's calendar defaults, when its steps resolve them (runner/main.py)
            definition = next(iter(job_doc["resource"]["aws_sfn_state_machine"].values()))["definition"]
            if "JOBPLANE_PARAM_DEFAULTS" in definition:
                calls.append(Call("dynamodb:UpdateItem", table, {
                    "dynamodb:LeadingKeys": [progress.pk(job_doc_name, "run-1")],
                    "dynamodb:Attributes": sorted(progress.PARAMS_ATTRIBUTES)}, "resolved params"))
    return calls


def task_role_calls(job_doc: dict[str, Any], r: Resolver) -> list[Call]:
    """What its ECS steps' runner calls with the job's task role (compiler/task_roles.py): its
    steps' progress records (runner/progress.py), a scheduled fire's resolved params when it has
    calendar defaults, and a map's list (runner/items_out.py) under the job's own prefix."""
    from jobplane.contract import map_items, progress

    sm = next(iter(job_doc["resource"]["aws_sfn_state_machine"].values()))
    job = sm["tags"]["jobplane:job"]
    table = r.text("${local.platform.table_arn}")
    calls = [Call(action, table, {"dynamodb:LeadingKeys": [progress.pk(job, "run-1")],
                                  "dynamodb:Attributes": sorted(attributes)}, "progress")
             for action, attributes in (("dynamodb:UpdateItem", progress.ATTRIBUTES),
                                        ("dynamodb:GetItem", progress.READ_ATTRIBUTES))]
    if "JOBPLANE_PARAM_DEFAULTS" in sm["definition"]:
        calls.append(Call("dynamodb:UpdateItem", table, {"dynamodb:LeadingKeys": [progress.pk(job, "run-1")],
                                                         "dynamodb:Attributes": sorted(progress.PARAMS_ATTRIBUTES)},
                          "resolved params"))
    if '"ItemReader"' in sm["definition"]:
        key = map_items.items_key(job, "run-1", "close-all", "0b8e")
        calls += [Call("s3:PutObject", f"arn:aws:s3:::{PUBLISHED['catalog_bucket']}/{key}", {}, "map list"),
                  Call("kms:GenerateDataKey", MODULE["kms_key_arn"], {}, "map list")]
    return calls


#: job -> every file of its team's root merged into one document (a shared role, in roles.tf.json,
#: names its members' task definitions; a job's resources name its team's shared roles)
ROOT_DOCS: dict[str, dict[str, Any]] = {}
#: (team root, shared role id) -> the shared role, its statements and its members
SHARED: dict[tuple[str, str], dict[str, Any]] = {}


def _merged(files: dict[str, str], root: str) -> dict[str, Any]:
    merged: dict[str, Any] = {"data": {}, "resource": {}}
    for rel, text in files.items():
        if rel.startswith(root + "/") and rel.endswith(".tf.json"):
            doc = json.loads(text)
            for section in ("data", "resource"):
                for kind, blocks in doc.get(section, {}).items():
                    merged[section].setdefault(kind, {}).update(blocks)
            merged.setdefault("locals", {}).update(doc.get("locals", {}))
    return merged


def _compiled(root: Path) -> dict[str, dict[str, Any]]:
    files = compile_all(load_config(root)).files
    jobs = {job: json.loads(files[rel]) for job, rel in job_files(files).items()}
    # which compile a shared role came from, named by its jobs: not by the (temporary) root,
    # whose random name would order the parametrized cases differently in each xdist worker
    label = ",".join(sorted(jobs))
    for job, rel in job_files(files).items():
        team_root = rel.rsplit("/", 1)[0]
        ROOT_DOCS[job] = merged = _merged(files, team_root)
        for rid in role_refs(jobs[job]):
            entry = SHARED.setdefault((f"{label}:{team_root}", rid), {
                "kind": merged["resource"]["aws_iam_role"][rid]["tags"][KIND_TAG],
                "scope": merged["resource"]["aws_iam_role"][rid]["tags"].get(SECRET_SCOPE_TAG, ""),
                "statements": merged["data"]["aws_iam_policy_document"][rid]["statement"],
                "members": []})
            entry["members"].append(job)
    return jobs


def _with_lambda_steps() -> dict[str, dict[str, Any]]:
    """A job with Lambda steps beside ECS steps, one reading a secret and a parameter: the
    examples show every ECS role, this shows the Lambda ones."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copy(ROOT / "jobplane.toml", root / "jobplane.toml")
        shutil.copytree(ROOT / "jobs" / "lib", root / "jobs" / "lib")
        (root / "jobs" / "billing").mkdir()
        (root / "jobs" / "billing" / "quick-close.jsonnet").write_text("""
local jp = import 'jobplane.libsonnet';
{
  name: 'quick-close', team: 'billing', schedule: jp.daily('03:00'),
  steps: [
    jp.lambda('totals', 'examples.noop:run', opts={ retry: jp.retry(2, '10s'),
              secrets: { LEDGER_TOKEN: jp.secret('billing/ledger-api-token'), API_KEY: jp.parameter('/billing/api-key') } }),
    jp.parallel('both', [jp.lambda('left', 'examples.noop:run'), jp.python('right', 'examples.noop:run')]),
  ],
}
""")
        return _compiled(root)


JOBS = _compiled(ROOT) | _with_lambda_steps()


def _roles(job: str) -> list[tuple[str, list[dict[str, Any]], list[Call]]]:
    """(role, its inline policy statements, the calls made with it) for one compiled job."""
    doc = JOBS[job]
    r = Resolver(ROOT_DOCS[job])
    tid = next(iter(doc["resource"]["aws_sfn_state_machine"]))
    docs = doc["data"]["aws_iam_policy_document"]
    out = [("sfn", r.text(docs[f"{tid}_sfn"]["statement"]), sfn_calls(doc, r, tid))]
    if f"{tid}_scheduler" in docs:
        out.append(("scheduler", r.text(docs[f"{tid}_scheduler"]["statement"]), scheduler_calls(doc, r)))
    if f"{tid}_after" in docs:
        out.append(("after", r.text(docs[f"{tid}_after"]["statement"]), after_calls(doc, r)))
    if f"{tid}_exec" in docs:
        out.append(("exec", r.text(docs[f"{tid}_exec"]["statement"]), execution_role_calls(doc, r)))
    if f"{tid}_lambda" in docs:
        out.append(("lambda", r.text(docs[f"{tid}_lambda"]["statement"]), lambda_role_calls(doc, r)))
    if f"{tid}_task" in docs:  # its ECS steps' task role (compiler/task_roles.py)
        out.append(("task", r.text(docs[f"{tid}_task"]["statement"]), task_role_calls(doc, r)))
    return out


def _every_policy() -> dict[str, dict[str, Any]]:
    """One job per policy (the examples need not use every one), compiled as the examples are."""
    import tempfile

    from conftest import Repo, minimal_job
    from jobplane.contract.statuses import Policy

    with tempfile.TemporaryDirectory() as tmp:
        repo = Repo(Path(tmp))
        for p in Policy:
            name = f"policy-{p.value.lower().replace('_', '-')}"
            repo.write(f"jobs/billing/{name}.jsonnet", minimal_job(name, p.value))
        return _compiled(repo.path)


JOBS |= _every_policy()


def _with_map() -> dict[str, dict[str, Any]]:
    """A job with a jp.map (its items step, its children's Tasks and records, its Map's reads)."""
    import tempfile

    from conftest import Repo

    with tempfile.TemporaryDirectory() as tmp:
        repo = Repo(Path(tmp))
        repo.write("jobs/billing/fan-out.jsonnet", """
local jp = import 'jobplane.libsonnet';
{
  name: 'fan-out', team: 'billing', schedule: jp.daily('03:00'),
  steps: [jp.map('close-all', items=jp.python('tenants', 'examples.noop:run'),
                 each=jp.python('close-tenant', 'examples.noop:run', opts={ retry: jp.retry(2, '10s') }),
                 opts={ max_concurrency: 50, tolerated_failures: '1%' })],
}
""")
        # items whose check can warn: counted in the children, one alert after the map (compiler/item_warnings.py)
        repo.write("jobs/billing/warn-out.jsonnet", """
local jp = import 'jobplane.libsonnet';
{
  name: 'warn-out', team: 'billing', schedule: jp.daily('04:00'),
  steps: [jp.map('close-all', items=jp.python('tenants', 'examples.noop:run'),
                 each=jp.python('close-tenant', 'examples.noop:run',
                                opts={ expect: [jp.expect('invoices_sent', '>= 1', on_fail='warn')] }))],
}
""")
        return _compiled(repo.path)


JOBS |= _with_map()


def _with_secret_scopes() -> dict[str, dict[str, Any]]:
    """Jobs of one team reading secrets of their own (issue 62 finding 5): two on ECS and two on
    Lambda of team scope (the default: they share their team's roles, which read what they
    declare), one of job scope (roles of its own, reading only its own secret)."""
    import tempfile

    from conftest import Repo

    job = """
local jp = import 'jobplane.libsonnet';
{ name: '%s', team: 'billing', schedule: jp.daily('03:00'), %s
  steps: [jp.%s('run', 'examples.noop:run', opts={ secrets: { %s } }), jp.python('after', 'examples.noop:run')] }
"""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Repo(Path(tmp))
        repo.write("jobs/billing/team-a.jsonnet", job % ("team-a", "", "python", "A_TOKEN: jp.secret('billing/a-token')"))
        repo.write("jobs/billing/team-b.jsonnet", job % ("team-b", "", "python", "B_TOKEN: jp.secret('billing/b-token')"))
        repo.write("jobs/billing/team-c.jsonnet", job % ("team-c", "", "lambda", "C_TOKEN: jp.secret('billing/c-token')"))
        repo.write("jobs/billing/team-d.jsonnet", job % ("team-d", "", "lambda", "D_TOKEN: jp.secret('billing/d-token')"))
        repo.write("jobs/billing/alone.jsonnet",
                   job % ("alone", "secret_scope: 'job',", "python", "PAYROLL: jp.secret('billing/payroll')"))
        return _compiled(repo.path)


JOBS |= _with_secret_scopes()


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_call_a_job_makes_is_allowed_by_its_roles(job: str) -> None:
    roles = _roles(job)
    assert {name for name, _, _ in roles} >= {"sfn"}
    for name, statements, calls in roles:
        assert calls, f"{job}: no calls found for its {name} role"
        assert denied_calls(statements, calls) == [], f"{job}'s {name} role"


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_statement_of_a_role_is_needed_by_some_call(job: str) -> None:
    for name, statements, calls in _roles(job):
        for i, statement in enumerate(statements):
            without = statements[:i] + statements[i + 1:]
            assert denied_calls(without, calls), f"{job}'s {name} role: {statement.get('sid')} is never used"


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_action_of_a_role_is_needed_by_some_call(job: str) -> None:
    """Least privilege by action, not only by statement: an action that no call makes is not
    granted (a state machine that reads no item, e.g. since the skip path's read became a
    conditional UpdateItem, has no dynamodb:GetItem)."""
    for name, statements, calls in _roles(job):
        for i, st in enumerate(statements):
            for action in st["actions"]:
                without = statements[:i] + [{**st, "actions": [a for a in st["actions"] if a != action]}] + statements[i + 1:]
                assert denied_calls(without, calls), f"{job}'s {name} role: {st.get('sid')} grants {action}, never used"


def test_only_a_job_that_reads_an_item_may_get_one() -> None:
    """dynamodb:GetItem is granted to a job started after another (it reads the upstream run's
    record) and to a job with expectations (it reads its steps' progress records and, for a
    baseline, its history item: docs/expectations.md), each on those keys only, and to no
    other: every other table call of a job is a write."""
    for job in JOBS:
        (_, statements, calls), *_ = _roles(job)
        reads = [c for c in calls if c.action == "dynamodb:GetItem"]
        granted = any("dynamodb:GetItem" in st["actions"] for st in statements)
        assert granted == bool(reads), job
        doc = JOBS[job]
        tid = next(iter(doc["resource"]["aws_sfn_state_machine"]))
        # a map whose items can warn reads its run's own count of them (compiler/item_warnings.py)
        warned = [c for c in reads if c.why.endswith(": expect warned read")]
        assert all(c.context["dynamodb:LeadingKeys"] == ["EXEC#0f3b1e2c-run"] for c in warned), job
        assert bool(warned) == (': expect warned"' in doc["resource"]["aws_sfn_state_machine"][tid]["definition"]), job
        upstream = [c for c in reads if c.context["dynamodb:LeadingKeys"][0].startswith("EXEC#") and c not in warned]
        assert bool(upstream) == bool(doc["resource"].get("aws_cloudwatch_event_rule")), (job, tid)
        expects = [c for c in reads if c not in upstream and c not in warned]
        assert all(c.context["dynamodb:LeadingKeys"][0].startswith(("PROGRESS#", f"EXPECT#{job}")) for c in expects)
        assert bool(expects) == (': expect"' in doc["resource"]["aws_sfn_state_machine"][tid]["definition"]), job
    assert any(any(c.action == "dynamodb:GetItem" for c in _roles(job)[0][2]) for job in JOBS)  # an `after` job


def test_the_examples_cover_every_role_kind() -> None:
    kinds = {name for job in JOBS for name, _, _ in _roles(job)}
    assert kinds == {"sfn", "scheduler", "exec", "after", "lambda", "task"}


def test_a_replace_job_may_stop_only_its_own_executions() -> None:
    """REPLACE stops the running holder of its claim; its role stops no other job's runs."""
    (_, statements, _), *_ = _roles("policy-replace")
    stop = Call("states:StopExecution", f"arn:aws:states:{REGION}:{ACCOUNT}:execution:jobplane-policy-replace:run-1")
    assert allowed(statements, stop)
    assert not allowed(statements, Call("states:StopExecution",
                                        f"arn:aws:states:{REGION}:{ACCOUNT}:execution:jobplane-nightly:run-1"))
    assert not allowed(statements, Call("states:StopExecution",
                                        f"arn:aws:states:{REGION}:{ACCOUNT}:execution:jobplane-policy-replace-2:run-1"))
    for other in ("policy-skip-if-running", "policy-always-run"):
        (_, other_statements, _), *_ = _roles(other)
        assert not any("states:StopExecution" in st["actions"] for st in other_statements)


def test_the_evaluator_refuses_what_it_should() -> None:
    # guards on the guard: a narrower resource, a failed condition, another action
    statement = {"effect": "Allow", "actions": ["dynamodb:UpdateItem"], "resources": [MODULE["table_arn"]],
                 "condition": [{"test": "ForAllValues:StringLike", "variable": "dynamodb:LeadingKeys",
                                "values": ["JOB#nightly", "EXEC#*"]}]}
    ok = Call("dynamodb:UpdateItem", MODULE["table_arn"], {"dynamodb:LeadingKeys": ["EXEC#1"]})
    assert allowed([statement], ok)
    assert not allowed([statement], Call("dynamodb:UpdateItem", MODULE["table_arn"],
                                         {"dynamodb:LeadingKeys": ["JOB#other-team-job"]}))
    assert not allowed([statement], Call("dynamodb:DeleteItem", MODULE["table_arn"], ok.context))
    assert not allowed([statement], Call("dynamodb:UpdateItem", MODULE["table_arn"] + "-other", ok.context))
    wildcard = {"effect": "Allow", "actions": ["secretsmanager:GetSecretValue"],
                "resources": [f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:billing/token-??????"]}
    assert allowed([wildcard], Call("secretsmanager:GetSecretValue",
                                    f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:billing/token-AbC123"))
    assert not allowed([wildcard], Call("secretsmanager:GetSecretValue",
                                        f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:billing/token-x-AbC123"))


# -- shared roles (issue 54 item 1): the jobs of a team whose grants are identical share a role --


def _calls(job: str) -> dict[str, list[Call]]:
    return {kind: calls for kind, _, calls in _roles(job)}


def _own_statements(job: str, kind: str) -> list[dict[str, Any]]:
    """The job's own statements for a role of ``kind`` (what its file keeps)."""
    return list(JOBS[job]["data"]["aws_iam_policy_document"][f"{job.replace('-', '_')}_{kind}"]["statement"])


def _own_grant(job: str, kind: str, scope: str = "") -> list[dict[str, Any]]:
    """The job's own statements for a role (what its file keeps), its own names taken out by
    plain text (not by the compiler's own code); for a role of team scope (``scope``), the
    secrets it reads too: its members each declare their own (issue 62 finding 5)."""
    tid = job.replace("-", "_")
    text = json.dumps(_own_statements(job, kind), sort_keys=True)
    for own, placeholder in ((f":{PREFIX}-{job}", ":<own>"), (f"JOB#{job}\"", "JOB#<own>\""),
                             (f"/{PREFIX}-{job}", "/<own>"), (f".{tid}.", ".<own>."),
                             (f"PROGRESS#{job}#", "PROGRESS#<own>#"), (f"/map-items/{job}/", "/map-items/<own>/")):
        text = text.replace(own, placeholder)
    statements = json.loads(text)
    if scope == "team":
        statements = [{**st, "resources": ["<the team's secrets>"]} if st["sid"] in SECRET_SIDS else st
                      for st in statements]
    return statements


@pytest.mark.parametrize("key", sorted(SHARED), ids=lambda k: k[1])
def test_a_shared_role_is_the_union_of_identical_grants_and_nothing_more(key: tuple[str, str]) -> None:
    shared = SHARED[key]
    kind, members, scope = shared["kind"], shared["members"], shared["scope"]
    # its members' own grants are identical once each one's own names are taken out
    grants = {job: _own_grant(job, kind, scope) for job in members}
    first = grants[members[0]]
    assert all(g == first for g in grants.values()), f"{key}: members with different grants share it: {members}"
    # its statements are the members' statements, each with the union of their values
    own = {job: _own_statements(job, kind) for job in members}
    assert len(shared["statements"]) == len(own[members[0]])
    for s, st in enumerate(shared["statements"]):
        for job in members:
            theirs = own[job][s]
            assert (st["sid"], st["actions"], st.get("effect")) == (theirs["sid"], theirs["actions"], theirs.get("effect"))
        assert set(st.get("resources", [])) == {r for job in members for r in own[job][s].get("resources", [])}
        for i, cond in enumerate(st.get("condition", [])):
            assert set(cond["values"]) == {v for job in members for v in own[job][s]["condition"][i]["values"]}
    # every member's calls are allowed by it (each member's own statements are each needed by
    # some call of its own: test_every_statement_of_a_role_is_needed_by_some_call)
    for job in members:
        statements = Resolver(ROOT_DOCS[job]).text(shared["statements"])
        assert denied_calls(statements, _calls(job)[kind]) == [], f"{job}'s {kind} role {key[1]}"


def _secrets_read(statements: list[dict[str, Any]]) -> set[str]:
    return {r for st in statements if st["sid"] in SECRET_SIDS for r in st["resources"]}


def test_a_team_scoped_role_reads_what_its_members_declare_and_a_job_scoped_one_its_own() -> None:
    """Issue 62 finding 5: the jobs of a team whose secrets are their own share one task
    execution role and one runner function role (team scope, the default), each reading the
    secrets those jobs declare and nothing else of the team's; a job of secret_scope 'job' has
    roles of its own, reading its own secret, which no team-scoped role reads."""
    by_member = {(m, e["kind"]): e for e in SHARED.values() for m in e["members"]}
    exec_a, exec_b = by_member[("team-a", "exec")], by_member[("team-b", "exec")]
    assert exec_a is exec_b and exec_a["scope"] == "team"
    assert by_member[("team-c", "lambda")] is by_member[("team-d", "lambda")]
    assert by_member[("team-c", "lambda")]["scope"] == "team"
    # what each reads is exactly what its members declare, in the team's own names
    sm = f"arn:${{data.aws_partition.current.partition}}:secretsmanager:${{data.aws_region.current.region}}"
    account = "${data.aws_caller_identity.current.account_id}"
    assert _secrets_read(exec_a["statements"]) == {f"{sm}:{account}:secret:billing/a-token-??????",
                                                   f"{sm}:{account}:secret:billing/b-token-??????"}
    assert _secrets_read(by_member[("team-c", "lambda")]["statements"]) == {
        f"{sm}:{account}:secret:billing/c-token-??????", f"{sm}:{account}:secret:billing/d-token-??????"}
    alone = by_member[("alone", "exec")]
    assert alone["members"] == ["alone"] and alone["scope"] == "job"
    assert _secrets_read(alone["statements"]) == {f"{sm}:{account}:secret:billing/payroll-??????"}
    payroll = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:billing/payroll-AbC123"
    for entry in SHARED.values():
        if entry is not alone and entry["kind"] in ("exec", "lambda"):
            statements = Resolver(ROOT_DOCS[entry["members"][0]]).text(entry["statements"])
            assert not allowed(statements, Call("secretsmanager:GetSecretValue", payroll)), entry["members"]


def test_a_state_machine_passes_only_its_team_roots_execution_roles() -> None:
    """The state machine of a job with secrets passes its team root's task execution roles by
    the pattern of their names (its grant the same whichever of them it uses): its own, its
    team-mates', and no other team's or kind's."""
    (_, statements, _), *_ = _roles("team-a")
    roles = ROOT_DOCS["team-a"]["resource"]["aws_iam_role"]
    passes = {"iam:PassedToService": "ecs-tasks.amazonaws.com"}

    def may_pass(name: str) -> bool:
        return allowed(statements, Call("iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/{name}", passes))

    execs = [r["name"] for r in roles.values() if r["tags"][KIND_TAG] == "exec"]
    assert len(execs) == 2 and all(may_pass(name) for name in execs)  # team scope's and 'alone''s
    # and its team root's ECS task roles (compiler/task_roles.py: RunTask's task override), by their pattern too
    tasks = [r["name"] for r in roles.values() if r["tags"][KIND_TAG] == "task"]
    assert tasks and all(may_pass(name) for name in tasks)
    assert not any(may_pass(r["name"]) for r in roles.values() if r["tags"][KIND_TAG] not in ("exec", "task"))
    task_digest = tasks[0].split("-")[-2]
    for other in (f"{PREFIX}-growth-task-{task_digest}-1", f"{PREFIX}-billing.1-task-{task_digest}-1",
                  f"{PREFIX}-runner-task"):  # another team's, another root's, the base module's
        assert not may_pass(other), other
    digest = execs[0].split("-")[-2]
    for other in (f"{PREFIX}-growth-exec-{digest}-1", f"{PREFIX}-billing-exec-x-sfn-{digest}-1",
                  f"{PREFIX}-billing.1-exec-{digest}-1", f"{PREFIX}-billing-lambda-{digest}-1"):
        assert not may_pass(other), other


def test_the_examples_share_roles_within_a_team_only() -> None:
    teams = {job: ROOT_DOCS[job]["resource"]["aws_sfn_state_machine"][job.replace("-", "_")]["tags"]["jobplane:team"]
             for job in JOBS}
    shared_by_many = 0
    for (root, rid), shared in SHARED.items():
        assert len({teams[j] for j in shared["members"]}) == 1, (rid, shared["members"])
        shared_by_many += len(shared["members"]) > 1
    assert shared_by_many, "no role is shared by two jobs"


def _team_docs(n: int) -> tuple[dict[str, Any], dict[str, str], Any]:
    """n scheduled jobs of team billing, compiled each on its own (the documents share() groups)."""
    import tempfile

    from conftest import Repo, minimal_job
    from jobplane.compiler import asl, terraform
    from jobplane.compiler.validate import load_jobs

    with tempfile.TemporaryDirectory() as tmp:
        repo = Repo(Path(tmp))
        for i in range(n):
            repo.write(f"jobs/billing/j{i:03d}.jsonnet", minimal_job(f"j{i:03d}", "SKIP_IF_RUNNING"))
        config = load_config(repo.path)
        loaded = load_jobs(config)
    docs = {lj.job.name: terraform.job_module(lj.job, asl.render(asl.build_definition(lj.job, PREFIX)), config)
            for lj in loaded}
    return docs, {lj.job.name: lj.source for lj in loaded}, config


def test_a_group_too_big_for_one_role_is_split_and_a_job_too_big_alone_is_refused() -> None:
    from jobplane.compiler.problems import DefinitionError
    from jobplane.compiler.shared_roles import policy_chars, share

    docs, sources, _ = _team_docs(12)
    one = share("billing", PREFIX, {"j000": docs["j000"]}, sources)
    alone = policy_chars(one.roles["data"]["aws_iam_policy_document"][next(
        rid for rid, role in one.roles["resource"]["aws_iam_role"].items() if role["tags"][KIND_TAG] == "sfn")]["statement"])
    limit = alone + 400  # room for one or two more jobs' own names, not twelve
    shared = share("billing", PREFIX, docs, sources, limit=limit)
    roles = shared.roles["resource"]["aws_iam_role"]
    sfn = [rid for rid, role in roles.items() if role["tags"][KIND_TAG] == "sfn"]
    assert len(sfn) >= 2
    for rid in roles:
        size = policy_chars(shared.roles["data"]["aws_iam_policy_document"][rid]["statement"])
        assert size <= limit, (rid, size, limit)
        assert len(roles[rid]["name"]) <= 64
    # each job is in exactly one role of each kind, and that role lets it make its calls
    for job, doc in shared.jobs.items():
        assert len(role_refs(doc)) == 3 and set(shared.membership[job]) == {"sfn", "scheduler", "task"}
        merged = {"data": {**doc["data"]}, "resource": {**doc["resource"], **shared.roles["resource"]},
                  "locals": doc.get("locals", {})}
        r = Resolver(merged)
        sm = next(iter(doc["resource"]["aws_sfn_state_machine"]))
        rid = doc["resource"]["aws_sfn_state_machine"][sm]["role_arn"].split(".")[1]
        statements = r.text(shared.roles["data"]["aws_iam_policy_document"][rid]["statement"])
        assert denied_calls(statements, sfn_calls(doc, r, sm)) == []
    with pytest.raises(DefinitionError) as refused:
        share("billing", PREFIX, docs, sources, limit=alone - 1)
    assert len(refused.value.problems) == 12
    assert "jobs/billing/j000.jsonnet: job 'j000': its Step Functions role's policies would take" in str(refused.value)
    assert "over IAM's" in str(refused.value) and "cannot be raised" in str(refused.value)


def test_the_role_patterns_match_a_team_roots_roles_1_to_99_and_no_other_teams() -> None:
    """The state machines pass their team root's exec and task roles by name patterns
    (contract/names.py team_role_patterns), IAM's ``?`` one character: each of the 99 names a
    team root's roles of a kind can have matches, the hundredth and every name of another team
    (whose name begins with this one's and the kind: ``billing-task-x``) or kind do not, and so
    for a team name long enough to be shortened."""
    import fnmatch
    import hashlib

    from jobplane.contract.names import PATTERN_ROLES, team_role_name, team_role_patterns

    def passed(name: str, patterns: tuple[str, ...]) -> bool:  # IAM: '*' any run, '?' one character
        return any(fnmatch.fnmatchcase(name, p) for p in patterns)

    for team in ("billing", "platform-" + "x" * 60):
        for kind in ("exec", "task"):
            patterns = team_role_patterns(PREFIX, team, kind)
            for n in range(1, PATTERN_ROLES + 1):
                digest = hashlib.sha256(f"{team}{kind}{n}".encode()).hexdigest()[:8]
                assert passed(team_role_name(PREFIX, team, kind, digest, n), patterns), (team, kind, n)
            assert not passed(team_role_name(PREFIX, team, kind, "0a1b2c3d", PATTERN_ROLES + 1), patterns)
            if len(team) > 20:  # shortened to fit: its neighbours are shortened alike (names.py)
                continue
            for other_team, other_kind in ((f"{team}-{kind}-x", kind), (f"{team}-{kind}-x", "exec"),
                                           (f"{team}x", kind), (team, "sfn"), (team, "lambda")):
                if (other_team, other_kind) == (team, kind):
                    continue
                for n in (1, 10, 99):
                    name = team_role_name(PREFIX, other_team, other_kind, "0a1b2c3d", n)
                    assert not passed(name, patterns), (team, kind, name)


def test_a_team_root_needing_a_hundredth_execution_role_is_refused() -> None:
    """A group of team-scoped secrets too large for 99 roles is refused, naming a job and what
    to do, not compiled into a role the patterns miss."""
    import tempfile

    from conftest import Repo
    from jobplane.compiler import asl, terraform
    from jobplane.compiler.problems import DefinitionError
    from jobplane.compiler.shared_roles import policy_chars, share
    from jobplane.compiler.validate import load_jobs

    with tempfile.TemporaryDirectory() as tmp:
        repo = Repo(Path(tmp))
        for i in range(101):
            repo.write(f"jobs/billing/s{i:03d}.jsonnet", f"""
local jp = import 'jobplane.libsonnet';
{{ name: 's{i:03d}', team: 'billing',
  steps: [jp.python('run', 'examples.noop:run', opts={{ secrets: {{ T: jp.secret('billing/token-{i:03d}') }} }})] }}
""")
        config = load_config(repo.path)
        loaded = load_jobs(config)
    docs = {lj.job.name: terraform.job_module(lj.job, asl.render(asl.build_definition(lj.job, PREFIX)), config)
            for lj in loaded}
    sources = {lj.job.name: lj.source for lj in loaded}
    alone = share("billing", PREFIX, {"s000": docs["s000"]}, sources)
    exec_doc = next(rid for rid, role in alone.roles["resource"]["aws_iam_role"].items() if role["tags"][KIND_TAG] == "exec")
    size = policy_chars(alone.roles["data"]["aws_iam_policy_document"][exec_doc]["statement"])
    kinds = [role["tags"][KIND_TAG] for role in share("billing", PREFIX, docs, sources).roles["resource"]["aws_iam_role"].values()]
    assert (kinds.count("exec"), kinds.count("task")) == (1, 1), kinds  # every secret in one exec role
    with pytest.raises(DefinitionError) as refused:
        share("billing", PREFIX, docs, sources, limit=size + 50)  # one job's secret a role, at most the sfn's too
    assert ("job 's099': team root billing's jobs declare more secrets than 99 task execution roles can read"
            in str(refused.value)), str(refused.value)
