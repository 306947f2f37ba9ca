"""What the base module (terraform/platform) must say for a first deploy to work, each from
AWS documentation cited next to the setting, checked on the module's own text (read with
python-hcl2). The roles are checked against the calls the code makes in test_lambda_package.py;
tfcheck's plan.py evaluates the module in `make tfcheck`."""

from __future__ import annotations

import json
import re
import sys

import base_module as bm
from conftest import ROOT


def test_the_lambdas_are_built_for_the_runtime_the_module_declares() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from build_lambda import declared_runtime, module_text
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    from jobplane.contract.lambda_runtimes import CURRENT

    functions = bm.module()["resource"]["aws_lambda_function"]
    assert {(f["runtime"], tuple(f["architectures"])) for f in functions.values()} == {(CURRENT.identifier, ("x86_64",))}
    assert declared_runtime(module_text()) == (CURRENT.python, "x86_64")


def test_reserved_concurrency_is_not_reserved_unless_asked() -> None:
    assert bm.module()["variable"]["lambda_reserved_concurrency"]["default"] is None
    for f in bm.module()["resource"]["aws_lambda_function"].values():
        assert f["reserved_concurrent_executions"] == "${var.lambda_reserved_concurrency}"


def test_cloudwatch_logs_uses_the_key_under_the_documented_encryption_context() -> None:
    statements = bm.policy_statements("kms", {})
    logs = [s for s in statements if any(i.startswith("logs.") for p in s.get("principals", []) for i in p["identifiers"])]
    assert len(logs) == 1
    assert logs[0]["condition"] == [{"test": "ArnLike", "variable": "kms:EncryptionContext:aws:logs:arn",
                                     "values": [f"arn:aws:logs:{bm.REGION}:{bm.ACCOUNT}:log-group:*"]}]


def test_a_step_is_limited_by_its_task_size_not_by_the_container() -> None:
    text = (bm.MODULE / "runner.tf").read_text()
    container = text[text.index("container_definitions"):]
    assert re.search(r"^\s+memoryReservation\s*=", container, re.M)
    assert not re.search(r"^\s+memory\s*=", container, re.M)  # a hard limit would OOM-kill a bigger step
    from jobplane.compiler.output import compile_all
    from jobplane.contract.config import load_config

    # the per-job task definition of a job with secrets
    files = compile_all(load_config(ROOT)).files
    compiled = json.loads(files["teams/billing/month-end-close.job.tf.json"])
    c = json.loads(compiled["resource"]["aws_ecs_task_definition"]["month_end_close"]["container_definitions"])[0]
    assert "memory" not in c and c["memoryReservation"] > 0


def test_a_non_root_step_can_write_tmp_under_a_read_only_root() -> None:
    docker = (ROOT / "src" / "jobplane" / "runner" / "Dockerfile").read_text()
    assert re.search(r'^VOLUME \["/tmp"\]$', docker, re.M) and "chmod 1777 /tmp" in docker
    text = (bm.MODULE / "runner.tf").read_text()
    assert "readonlyRootFilesystem = true" in text and 'containerPath = "/tmp"' in text


def test_every_runner_container_writes_the_log_streams_the_readers_read() -> None:
    """platform/logs.py reads a task's output from ``runner/runner/<task id>`` in the base
    module's group: the base runner, a job's own task definition and the local engine write there."""
    from jobplane.compiler.output import compile_all
    from jobplane.contract import names
    from jobplane.contract import runner as rc
    from jobplane.contract.config import load_config

    group = bm.resource("aws_cloudwatch_log_group", "runner")
    assert bm.resolve(group["name"], {}) == names.runner_log_group(bm.PREFIX)
    text = (bm.MODULE / "runner.tf").read_text()
    assert re.search(rf'^\s+name\s+= "{rc.CONTAINER_NAME}"$', text, re.M)
    assert re.search(rf'^\s+awslogs-stream-prefix\s+= "{rc.LOG_STREAM_PREFIX}"$', text, re.M)
    compiled = json.loads(compile_all(load_config(ROOT)).files["teams/billing/month-end-close.job.tf.json"])
    c = json.loads(compiled["resource"]["aws_ecs_task_definition"]["month_end_close"]["container_definitions"])[0]
    assert c["name"] == rc.CONTAINER_NAME
    assert c["logConfiguration"]["options"]["awslogs-stream-prefix"] == rc.LOG_STREAM_PREFIX
    assert c["logConfiguration"]["options"]["awslogs-group"] == "${local.platform.log_group_name}"
    outputs = (bm.MODULE / "outputs.tf").read_text()
    assert 'output "log_group_name" { value = aws_cloudwatch_log_group.runner.name }' in outputs


def test_the_slow_run_check_runs_on_a_schedule_with_the_catalog_each_apply_uploads() -> None:
    rule = bm.resource("aws_cloudwatch_event_rule", "slow_check")
    assert rule["schedule_expression"] == "${var.slow_check_schedule}"
    assert bm.module()["variable"]["slow_check_schedule"]["default"] == "rate(5 minutes)"
    target = bm.resource("aws_cloudwatch_event_target", "slow_check")
    assert target["rule"] == "${aws_cloudwatch_event_rule.slow_check.name}" and target["arn"] == "${aws_lambda_function.slow.arn}"
    permission = bm.resource("aws_lambda_permission", "slow_from_schedule")
    assert permission["principal"] == "events.amazonaws.com"
    assert permission["source_arn"] == "${aws_cloudwatch_event_rule.slow_check.arn}"
    fn = bm.resource("aws_lambda_function", "slow")
    assert fn["handler"] == "jobplane.platform.slow.handler"
    env = fn["environment"][0]["variables"]
    assert env["JOBPLANE_CATALOG"] == "s3://${aws_s3_bucket.catalog.id}/catalog/"
    # each compiled team root uploads its part there, a new version whenever it changes
    from jobplane.compiler.output import compile_all
    from jobplane.contract.catalog import CATALOG_FILE
    from jobplane.contract.config import load_config

    files = compile_all(load_config(ROOT)).files
    uploads = {name: json.loads(text)["resource"]["aws_s3_object"]["catalog"] for name, text in files.items()
               if name.endswith(".tf.json") and "aws_s3_object" in json.loads(text).get("resource", {})}
    assert sorted(uploads) == [f"teams/{t}/main.tf.json" for t in ("billing", "growth", "platform")]
    for name, obj in uploads.items():
        team = name.split("/")[1]
        assert obj["bucket"] == "${local.platform.catalog_bucket}" and obj["key"] == f"catalog/{team}.json"
        assert obj["source"] == "${path.module}/" + CATALOG_FILE and "filemd5" in obj["source_hash"]
    # and the readers may list and read exactly those objects
    for role in ("slow", "portal", "reconciler"):
        statements = {s["sid"]: s for s in bm.raw_statements(role)}
        assert statements["ReadCatalog"]["resources"] == ["${aws_s3_bucket.catalog.arn}/catalog/*"]
        assert statements["ListCatalog"]["actions"] == ["s3:ListBucket"]
        assert statements["ListCatalog"]["condition"][0]["values"] == ["catalog/*"]


def test_what_the_base_module_publishes_is_what_the_team_roots_read() -> None:
    """terraform/platform/published.tf and contract/published.py list the same values; each
    parameter is named as the compiled team roots look it up."""
    from jobplane.contract.published import PUBLISHED, parameter_name

    text = (bm.MODULE / "published.tf").read_text()
    block = text[text.index("published = {"):text.index("\n  }\n")]
    assert sorted(re.findall(r"^\s+([a-z_]+)\s+=", block, re.M)) == sorted(PUBLISHED)
    param = bm.resource("aws_ssm_parameter", "published")
    assert param["for_each"] == "${local.published}" and param["type"] == "String"
    assert param["name"] == "/${var.name_prefix}/platform/${each.key}"
    assert param["name"].replace("${var.name_prefix}", bm.PREFIX).replace("${each.key}", "table_arn") == \
        parameter_name(bm.PREFIX, "table_arn")


def test_the_portal_image_and_service_agree_with_the_portal(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The image runs `jobplane portal` as a non-root user with a health check on /healthz, on the
    port the task definition and the load balancer use; the task's environment is what
    PortalSettings.from_env reads, in the mode that trusts only the ALB's signed identity."""
    from click.testing import CliRunner

    from jobplane.cli import main
    from jobplane.portal.settings import PortalSettings

    docker = (ROOT / "src" / "jobplane" / "portal" / "Dockerfile").read_text()
    assert re.search(r"^USER 10001$", docker, re.M) and "useradd --system --uid 10001" in docker
    assert re.search(r"^EXPOSE 8080$", docker, re.M) and "http://127.0.0.1:8080/healthz" in docker
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", docker, re.M)[1])
    assert cmd[:2] == ["jobplane", "portal"]
    assert CliRunner().invoke(main, [*cmd[1:], "--help"]).exit_code == 0  # the options exist
    portal = (bm.MODULE / "portal.tf").read_text()
    assert "portal_port  = 8080" in portal and 'path    = "/healthz"' in portal
    assert 'type  = "authenticate-oidc"' in portal and "order = 1" in portal
    names = set(re.findall(r'\{ name = "([A-Z_]+)", value', portal)) | set(re.findall(r'secrets = \[\{ name = "([A-Z_]+)"', portal))
    assert {"JOBPLANE_AUTH_MODE", "JOBPLANE_ALB_ARN", "JOBPLANE_PORTAL_SECRET", "JOBPLANE_CATALOG"} <= names
    assert '{ name = "JOBPLANE_AUTH_MODE", value = "alb-oidc" }' in portal
    values = {"JOBPLANE_TABLE": "jobplane", "JOBPLANE_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:jobplane-events",
              "JOBPLANE_NAME_PREFIX": "jobplane", "JOBPLANE_ACCOUNT_ID": "123456789012", "AWS_REGION": "us-east-1",
              "JOBPLANE_CATALOG": "s3://jobplane-catalog-0test/catalog/", "JOBPLANE_LOG_GROUP": "/jobplane/runner",
              "JOBPLANE_AUTH_MODE": "alb-oidc",
              "JOBPLANE_ALB_ARN": "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/jobplane-portal/0abc",
              "JOBPLANE_PORTAL_URL": "https://jobs.example.com", "JOBPLANE_ADMINS": "platform@example.com",
              "JOBPLANE_TEAM_MEMBERS": '{"billing": ["aiko@example.com"]}', "JOBPLANE_PORTAL_SECRET": "s" * 48}
    assert names == set(values), "portal.tf's environment and this test's list differ"
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    settings = PortalSettings.from_env()
    assert settings.auth.mode == "alb-oidc" and str(settings.deployment.catalog_path).startswith("s3://")
    assert settings.deployment.log_group == "/jobplane/runner"


def test_security_group_rules_are_resources_of_their_own() -> None:
    """Issue 41 item 3: an inline egress block on the portal ALB's group beside a separate egress
    rule resource, which the AWS provider documents as overwriting each other on every apply: the
    ALB lost its route to the tasks on every second apply. No group has an inline rule."""
    groups = bm.module()["resource"]["aws_security_group"]
    assert groups and all("ingress" not in g and "egress" not in g for g in groups.values()), groups
    rules = {**bm.module()["resource"]["aws_vpc_security_group_ingress_rule"],
             **bm.module()["resource"]["aws_vpc_security_group_egress_rule"]}
    assert {"portal_alb_https", "portal_alb_oidc", "portal_alb_to_tasks", "portal_aws_apis", "portal_from_alb",
            "endpoints_from_tasks"} <= set(rules)


def test_terraform_and_the_provider_are_pinned_to_what_the_roots_need() -> None:
    """Issue 41 item 11: `aws >= 6.0` let the next init take a new major version, and
    `required_version >= 1.6` allowed a Terraform without S3 lock files (use_lockfile: 1.10)."""
    import hcl2

    versions = bm._clean(hcl2.loads((bm.MODULE / "versions.tf").read_text()))["terraform"][0]
    assert versions["required_version"] == ">= 1.10"
    assert versions["required_providers"][0]["aws"]["version"] == "~> 6.0"
    from jobplane.compiler.output import compile_all
    from jobplane.contract.config import load_config

    files = compile_all(load_config(ROOT)).files
    pinned = [doc["terraform"] for doc in (json.loads(t) for p, t in files.items() if p.endswith(".tf.json"))
              if "terraform" in doc]
    assert pinned and all(t["required_providers"]["aws"]["version"] == "~> 6.0" for t in pinned), pinned[:1]


def test_the_operator_policy_is_the_portal_policy_and_an_output() -> None:
    """Issue 41 item 9: the operator role was prose in docs/deploy.md and lacked kms:Decrypt for
    the SSE-KMS catalog. It is now a managed policy made of the portal's statements (which the
    IAM contract in tests/test_cli_aws.py checks against every operator command's calls), an
    output of the module and of the compiled base root."""
    from jobplane.compiler import terraform
    from jobplane.contract.config import load_config

    policy = bm.module()["resource"]["aws_iam_policy"]["operator"]
    assert policy["policy"] == "${data.aws_iam_policy_document.operator.json}"
    operator = bm.module()["data"]["aws_iam_policy_document"]["operator"]
    assert operator["source_policy_documents"] == ["${data.aws_iam_policy_document.portal.json}"]
    actions = {a for st in bm.policy_statements("operator", {}) for a in st["actions"]}
    assert "kms:Decrypt" in actions and {"sqs:ReceiveMessage", "sns:Publish"} <= actions
    # what only the CLI does (the dead-letter queue) is not the portal's
    assert not {a for st in bm.policy_statements("portal", {}) for a in st["actions"]} & {"sqs:ReceiveMessage", "sns:Publish"}
    root = terraform.base_root(load_config(ROOT))
    assert root["output"]["operator_policy_arn"]["value"] == "${module.platform.operator_policy_arn}"


def test_terraform_never_reads_a_secret_value() -> None:
    """Issue 41 item 10 / issue 40 item 1: the portal's OIDC client secret was read by a data
    source, so it sat in the base root's state and the plan role had to read it. No data source
    of the base module reads a secret's value now; the rule carries a placeholder Terraform
    ignores, and a Lambda it invokes sets the secret (tests/test_lambda_package.py runs it)."""
    data = bm.module()["data"]
    readers = {"aws_secretsmanager_secret_version", "aws_secretsmanager_random_password", "aws_kms_secrets",
               "aws_ssm_parameters_by_path"}
    assert not readers & set(data), sorted(readers & set(data))
    rule = bm.resource("aws_lb_listener_rule", "portal")
    oidc = rule["action"][0]["authenticate_oidc"][0]
    assert oidc["client_secret"] == "${local.oidc_secret_placeholder}"
    assert rule["lifecycle"][0]["ignore_changes"] == ["${action[0].authenticate_oidc[0].client_secret}"]
    invocation = bm.resource("aws_lambda_invocation", "portal_oidc_secret")
    assert set(invocation["triggers"]) == {"rule", "sign_in", "function", "secret"}
    function = bm.resource("aws_lambda_function", "portal_oidc_secret")
    assert function["handler"] == "jobplane.platform.oidc_secret.handler"
    assert "portal_oidc" in data["aws_secretsmanager_secret_versions"]  # version ids: metadata only


def test_the_portal_reaches_each_aws_service_it_calls_through_the_endpoints() -> None:
    """Issue 41 item 5: with vpc_endpoints set the portal could not start: the endpoints'
    security group admitted only the runner's tasks, and DynamoDB, Step Functions and Scheduler
    had no endpoint. Every service the portal's role names has one (IAM and KMS are no call of
    its own: PassRole is authorisation, S3 decrypts the catalog with KMS itself), and the
    endpoints admit the portal's tasks."""
    text = (bm.MODULE / "network.tf").read_text()
    interface = re.search(r'\["ecr.api", "ecr.dkr", "logs", "secretsmanager", "ssm"\],\s*'
                          r'local.with_portal_endpoints \? (\[[^\]]*\])', text)
    assert interface, "the interface endpoints' list changed shape; read it again here"
    endpoints = {"ecr.api", "ecr.dkr", "logs", "secretsmanager", "ssm", *json.loads(interface[1])}
    gateways = {bm.resolve(body["service_name"], {}).rsplit(".", 1)[1] for body in bm.module()["resource"]["aws_vpc_endpoint"].values()
                if body["vpc_endpoint_type"] == "Gateway"}
    services = {action.split(":")[0] for statement in bm.policy_statements("portal", {}) for action in statement["actions"]}
    reachable = endpoints | gateways
    assert services - {"iam", "kms"} <= reachable, sorted(services - reachable)
    rule = bm.resource("aws_vpc_security_group_ingress_rule", "endpoints_from_portal")
    assert rule["referenced_security_group_id"] == "${aws_security_group.portal[0].id}"
    assert rule["count"] == "${local.with_portal_endpoints ? 1 : 0}"
    assert bm.resource("aws_vpc_endpoint", "dynamodb")["vpc_endpoint_type"] == "Gateway"
    service = bm.resource("aws_ecs_service", "portal")
    assert service["network_configuration"][0]["subnets"] == "${coalesce(var.portal.task_subnet_ids, var.subnet_ids)}"


def test_the_runner_repository_keeps_the_rollback_window_and_expires_the_rest() -> None:
    """Issue 49, item 5: one IMMUTABLE tag per merge grows the repository without bound; the
    lifecycle policy expires untagged images and all but the newest ``runner_images_kept``
    (https://docs.aws.amazon.com/AmazonECR/latest/userguide/lifecycle_policy_parameters.html)."""
    kept = bm.module()["variable"]["runner_images_kept"]
    n = kept["default"]
    assert n >= 10 and "var.runner_images_kept >= 10" in kept["validation"][0]["condition"]
    lifecycle = bm.resource("aws_ecr_lifecycle_policy", "runner")
    assert lifecycle["repository"] == "${aws_ecr_repository.runner.name}"
    # the jsonencode() argument as JSON, with the variable at its default
    expr = lifecycle["policy"].removeprefix("${jsonencode(").removesuffix(")}")
    expr = expr.replace("${var.runner_images_kept}", str(n)).replace("var.runner_images_kept", str(n))
    policy = json.loads(re.sub(r"(\w+) = ", r'"\1": ', expr))
    rules = sorted(policy["rules"], key=lambda r: r["rulePriority"])
    assert [(r["selection"]["tagStatus"], r["selection"]["countType"], r["selection"]["countNumber"], r["action"]["type"])
            for r in rules] == [("untagged", "sinceImagePushed", 1, "expire"), ("any", "imageCountMoreThan", n, "expire")]
    # a rule of tagStatus "any" must be evaluated last (the highest priority)
    assert rules[-1]["selection"]["tagStatus"] == "any"
    # the rollback window docs/deploy.md promises is what is kept
    assert f"`runner_images_kept` (default {n}," in (ROOT / "docs" / "deploy.md").read_text()


def test_interface_endpoints_take_one_subnet_per_availability_zone() -> None:
    """Issue 49, item 7: an interface endpoint given two subnets of one zone is refused by
    CreateVpcEndpoint (DuplicateSubnetsInSameZone), and the task subnets often are two per zone.
    The endpoints take ``vpc_endpoints.endpoint_subnet_ids`` (checked: one per zone) or else one
    task subnet per zone, never the task subnets as they are."""
    endpoint = bm.resource("aws_vpc_endpoint", "interface")
    assert endpoint["subnet_ids"] == "${local.endpoint_subnet_ids}"
    [check] = endpoint["lifecycle"][0]["precondition"]
    assert check["condition"] == "${length(local.endpoint_subnets_by_zone) == length(local.endpoint_subnet_ids)}"
    assert "DuplicateSubnetsInSameZone" in check["error_message"]
    subnets = bm.module()["data"]["aws_subnet"]["endpoint_candidates"]
    assert subnets["for_each"] == "${toset(local.endpoint_subnet_candidates)}"
    text = (bm.MODULE / "network.tf").read_text()
    # the zones group the candidates; without a list of its own, the first subnet of each zone
    assert "{ for s in data.aws_subnet.endpoint_candidates : s.availability_zone => s.id... }" in text
    assert "[for zone, ids in local.endpoint_subnets_by_zone : sort(ids)[0]]" in text
    variable = bm.module()["variable"]["vpc_endpoints"]
    assert "endpoint_subnet_ids = optional(list(string))" in (bm.MODULE / "variables.tf").read_text()
    assert "length(distinct(var.vpc_endpoints.endpoint_subnet_ids))" in variable["validation"][0]["condition"]


def test_pausing_a_schedule_under_the_platform_key_may_encrypt_with_it_through_scheduler_only() -> None:
    """Issue 49, item 8: every compiled schedule is encrypted with the platform key (a customer
    managed key), so UpdateSchedule (pause, resume) has Scheduler encrypt the target's input with
    it for the caller; the portal and operator policy allowed only kms:Decrypt. It may now use the
    key through Scheduler (kms:ViaService), and not directly."""
    from iam_policy import Call, denied_calls
    from jobplane.compiler.output import compile_all
    from jobplane.contract.config import load_config

    compiled = json.loads(compile_all(load_config(ROOT)).files["teams/billing/month-end-close.job.tf.json"])
    assert {s["kms_key_arn"] for s in compiled["resource"]["aws_scheduler_schedule"].values()} == {
        "${local.platform.kms_key_arn}"}
    statements = bm.policy_statements("portal", {})
    via = {"kms:ViaService": f"scheduler.{bm.REGION}.amazonaws.com"}
    allowed = [Call(a, bm.KMS_KEY_ARN, via, "UpdateSchedule") for a in ("kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey")]
    assert denied_calls(statements, allowed) == []
    direct = [Call("kms:Encrypt", bm.KMS_KEY_ARN, {}, "direct"),
              Call("kms:Encrypt", bm.KMS_KEY_ARN, {"kms:ViaService": f"s3.{bm.REGION}.amazonaws.com"}, "via S3")]
    assert denied_calls(statements, direct) == [str(c) for c in direct]
    # and the operator policy (the portal's statements and the dead-letter queue's) no more
    assert denied_calls(bm.policy_statements("operator", {}), direct) == [str(c) for c in direct]


#: The periodic handler's peak memory at 1,000 jobs, MB, as bench/missed_fires.py printed it
#: (`--jobs 1000 --hours 0.5 --rounds 1`, 2026-12-03: "1.50 s, peak memory 69 MB").
PERIODIC_PEAK_MB_AT_1000_JOBS = 69


def test_the_periodic_lambda_is_sized_from_the_measurement() -> None:
    """Issue 49, item 9: the periodic Lambda ran at the default 128 MB (and so a 14th of a vCPU)
    while it merges catalogs, runs the ledger and drives backfills. Its memory is several times
    the measured peak, and its CPU share keeps the measured pass well inside the timeout."""
    fn = bm.resource("aws_lambda_function", "slow")
    memory, timeout = fn["memory_size"], fn["timeout"]
    assert memory >= 4 * PERIODIC_PEAK_MB_AT_1000_JOBS
    measured_cpu_seconds = 1.5  # the same bench line
    assert measured_cpu_seconds * 1769 / memory * 4 <= timeout  # 4 times the work still fits
    reconciler = bm.resource("aws_lambda_function", "reconciler")
    assert reconciler["timeout"] >= 60 + 40  # its own work and the longest throttle wait (timeline.Patience)


def test_who_passes_a_schedule_its_role_may_pass_the_teams_shared_roles() -> None:
    """A schedule's role is its team's (compiler/shared_roles.py), not a role per job: the
    portal's and operators' pause/resume and the periodic check's pause repair call
    UpdateSchedule, which passes the schedule's role again. Their iam:PassRole once matched only
    `<prefix>-*-scheduler` (the per-job name) and no deployed role."""
    from iam_policy import Call, allowed

    from jobplane.compiler.output import compile_all
    from jobplane.contract.config import load_config

    config = load_config(ROOT)
    files = compile_all(config).files
    roles = [r["name"] for name, text in files.items() if name.endswith("/roles.tf.json")
             for r in json.loads(text)["resource"]["aws_iam_role"].values()]
    scheduler_roles = [r for r in roles if "-scheduler-" in r]
    assert len(scheduler_roles) >= 3  # one a team at least: billing, growth, platform
    for document in ("slow", "portal"):
        statements = bm.policy_statements(document, {"name_prefix": config.name_prefix})
        for role in scheduler_roles:
            call = Call("iam:PassRole", f"arn:aws:iam::{bm.ACCOUNT}:role/{role}",
                        {"iam:PassedToService": "scheduler.amazonaws.com"}, "UpdateSchedule")
            assert allowed(statements, call), (document, role)
            assert not allowed(statements, Call("iam:PassRole", call.resource,
                                                {"iam:PassedToService": "states.amazonaws.com"}))
        for other in (r for r in roles if "-scheduler-" not in r):  # nor any other role of the teams
            assert not allowed(statements, Call("iam:PassRole", f"arn:aws:iam::{bm.ACCOUNT}:role/{other}",
                                                {"iam:PassedToService": "scheduler.amazonaws.com"})), other


def test_the_maps_exported_results_expire() -> None:
    """Issue 62 finding 3: every jp.map's ResultWriter exports its children's results under
    map-results/ in the catalog bucket (compiler/map_states.py), which nothing reads: a lifecycle
    rule of the catalog bucket expires exactly that prefix (and its old versions: the bucket is
    versioned), leaving the catalogs' own rule as it was."""
    from jobplane.contract.map_items import RESULTS_PREFIX

    rules = {r["id"]: r for r in bm.resource("aws_s3_bucket_lifecycle_configuration", "catalog")["rule"]}
    results = rules["map-results"]
    assert results["status"] == "Enabled" and results["filter"] == [{"prefix": RESULTS_PREFIX}]
    assert 1 <= results["expiration"][0]["days"] <= 30
    assert results["noncurrent_version_expiration"][0]["noncurrent_days"] >= 1
    assert results["abort_incomplete_multipart_upload"][0]["days_after_initiation"] == 1
    assert rules["old-catalogs"]["noncurrent_version_expiration"][0]["noncurrent_days"] == "${var.execution_retention_days}"
