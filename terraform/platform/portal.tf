# The portal on AWS (var.portal set): `jobplane portal` as an ECS Fargate service in the runner's
# private subnets, behind an internet-facing ALB whose listener rule signs people in with OIDC
# (authenticate-oidc) before forwarding; the portal trusts only the identity the ALB signs
# (JOBPLANE_AUTH_MODE=alb-oidc: x-amzn-oidc-data, signer = this ALB's ARN; docs/portal.md).
# https://docs.aws.amazon.com/elasticloadbalancing/latest/application/listener-authenticate-users.html

locals {
  portal_count = var.portal == null ? 0 : 1
  portal_port  = 8080
}

# The OIDC client secret never passes through Terraform (it would sit in the state the pull
# requests' plan role reads): the rule is created with a placeholder Terraform then ignores, and
# the portal_oidc_secret Lambda writes the secret into it (jobplane/platform/oidc_secret.py) at
# each apply that creates the rule, changes its sign-in settings or finds a new version of the
# secret (its version ids are metadata: ListSecretVersionIds, not the value).
locals {
  oidc_secret_placeholder = "set-by-${var.name_prefix}-portal-oidc-secret"
}

data "aws_secretsmanager_secret_versions" "portal_oidc" {
  count     = local.portal_count
  secret_id = var.portal.oidc.client_secret_arn
}

# Every rule is a resource of its own, never an inline ingress/egress block beside one: the AWS
# provider documents that mixing the two makes each apply overwrite the other's rules (the ALB
# lost its route to the tasks on every second apply)
# (https://registry.terraform.io/providers/hashicorp/aws/latest/docs/resources/security_group).
resource "aws_security_group" "portal_alb" {
  #checkov:skip=CKV_AWS_260:The listener is HTTPS on 443 only; ingress is limited to var.portal.allowed_cidrs.
  count       = local.portal_count
  name        = "${var.name_prefix}-portal-alb"
  description = "HTTPS to the portal's load balancer"
  vpc_id      = var.portal.vpc_id
}

resource "aws_vpc_security_group_ingress_rule" "portal_alb_https" {
  for_each          = local.portal_count == 1 ? toset(var.portal.allowed_cidrs) : toset([])
  security_group_id = aws_security_group.portal_alb[0].id
  description       = "HTTPS from the people who may use the portal"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = each.value
}

resource "aws_vpc_security_group_egress_rule" "portal_alb_oidc" {
  count             = local.portal_count
  security_group_id = aws_security_group.portal_alb[0].id
  description       = "OIDC endpoints of the identity provider (the ALB calls them during sign-in)"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_egress_rule" "portal_alb_to_tasks" {
  count                        = local.portal_count
  security_group_id            = aws_security_group.portal_alb[0].id
  description                  = "To the portal's tasks"
  ip_protocol                  = "tcp"
  from_port                    = local.portal_port
  to_port                      = local.portal_port
  referenced_security_group_id = aws_security_group.portal[0].id
}

resource "aws_security_group" "portal" {
  count       = local.portal_count
  name        = "${var.name_prefix}-portal"
  description = "The portal's tasks: reachable from its load balancer only"
  vpc_id      = var.portal.vpc_id
}

resource "aws_vpc_security_group_egress_rule" "portal_aws_apis" {
  count             = local.portal_count
  security_group_id = aws_security_group.portal[0].id
  description       = "AWS APIs (DynamoDB, Step Functions, Scheduler, S3, CloudWatch Logs) over HTTPS"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_ingress_rule" "portal_from_alb" {
  count                        = local.portal_count
  security_group_id            = aws_security_group.portal[0].id
  description                  = "From the portal's load balancer only"
  ip_protocol                  = "tcp"
  from_port                    = local.portal_port
  to_port                      = local.portal_port
  referenced_security_group_id = aws_security_group.portal_alb[0].id
}

resource "aws_lb" "portal" {
  #checkov:skip=CKV_AWS_91:Access logs need a bucket policy for the ELB account of the region; operator actions are audited in the table instead.
  #checkov:skip=CKV2_AWS_20:There is no HTTP listener to redirect; only HTTPS is served.
  #checkov:skip=CKV2_AWS_28:A WAF is the organisation's choice; every request must sign in through OIDC first.
  count                      = local.portal_count
  name                       = "${var.name_prefix}-portal"
  load_balancer_type         = "application"
  internal                   = false
  subnets                    = var.portal.alb_subnet_ids
  security_groups            = [aws_security_group.portal_alb[0].id]
  drop_invalid_header_fields = true
  enable_deletion_protection = true
}

resource "aws_lb_target_group" "portal" {
  #checkov:skip=CKV_AWS_378:TLS ends at the load balancer; the tasks are reachable from it only, inside the VPC.
  count       = local.portal_count
  name        = "${var.name_prefix}-portal"
  port        = local.portal_port
  protocol    = "HTTP"
  target_type = "ip"
  vpc_id      = var.portal.vpc_id
  health_check {
    path    = "/healthz"
    matcher = "200"
  }
}

resource "aws_lb_listener" "portal" {
  count             = local.portal_count
  load_balancer_arn = aws_lb.portal[0].arn
  port              = 443
  protocol          = "HTTPS"
  ssl_policy        = "ELBSecurityPolicy-TLS13-1-2-2021-06"
  certificate_arn   = var.portal.certificate_arn
  default_action {
    type = "fixed-response"
    fixed_response {
      content_type = "text/plain"
      message_body = "not found"
      status_code  = "404"
    }
  }
}

resource "aws_lb_listener_rule" "portal" {
  count        = local.portal_count
  listener_arn = aws_lb_listener.portal[0].arn
  priority     = 10
  condition {
    host_header {
      values = [var.portal.host_name]
    }
  }
  action {
    type  = "authenticate-oidc"
    order = 1
    authenticate_oidc {
      issuer                     = var.portal.oidc.issuer
      authorization_endpoint     = var.portal.oidc.authorization_endpoint
      token_endpoint             = var.portal.oidc.token_endpoint
      user_info_endpoint         = var.portal.oidc.user_info_endpoint
      client_id                  = var.portal.oidc.client_id
      client_secret              = local.oidc_secret_placeholder # the real one: aws_lambda_invocation.portal_oidc_secret
      scope                      = "openid email"
      on_unauthenticated_request = "authenticate"
    }
  }
  action {
    type             = "forward"
    order            = 2
    target_group_arn = aws_lb_target_group.portal[0].arn
  }
  lifecycle {
    # set by the Lambda below; AWS never returns it, so the state keeps the placeholder
    ignore_changes = [action[0].authenticate_oidc[0].client_secret]
  }
}

resource "aws_cloudwatch_log_group" "portal_oidc_secret" {
  count             = local.portal_count
  name              = "/aws/lambda/${var.name_prefix}-portal-oidc-secret"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.platform.arn
}

data "aws_iam_policy_document" "portal_oidc_secret" {
  #checkov:skip=CKV_AWS_356:DescribeRules and X-Ray's write actions have no resource-level permissions.
  #checkov:skip=CKV_AWS_111:X-Ray's write actions have no resource-level permissions.
  count = local.portal_count
  statement {
    sid       = "Tracing"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"] # X-Ray has no resource-level permissions
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.portal_oidc_secret[0].arn}:*"]
  }
  statement {
    sid       = "ReadTheSecret"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [var.portal.oidc.client_secret_arn]
  }
  statement {
    # DescribeRules has no resource-level permissions
    # (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html)
    sid       = "ReadTheRule"
    actions   = ["elasticloadbalancing:DescribeRules"]
    resources = ["*"]
  }
  statement {
    sid       = "SetTheRule"
    actions   = ["elasticloadbalancing:ModifyRule"]
    resources = [aws_lb_listener_rule.portal[0].arn]
  }
  statement {
    sid       = "Decrypt"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.platform.arn]
  }
}

resource "aws_iam_role" "portal_oidc_secret" {
  count              = local.portal_count
  name               = "${var.name_prefix}-portal-oidc-secret"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy" "portal_oidc_secret" {
  count  = local.portal_count
  name   = "portal-oidc-secret"
  role   = aws_iam_role.portal_oidc_secret[0].id
  policy = data.aws_iam_policy_document.portal_oidc_secret[0].json
}

resource "aws_lambda_function" "portal_oidc_secret" {
  #checkov:skip=CKV_AWS_117:It only calls AWS APIs; a VPC would add endpoints and nothing to protect.
  #checkov:skip=CKV_AWS_272:The package is built and deployed by our own CI from this repository; code signing is an organisation-level choice.
  #checkov:skip=CKV_AWS_116:Invoked by Terraform and retried by the next apply; a dead-letter queue would hold nothing to replay.
  count                          = local.portal_count
  function_name                  = "${var.name_prefix}-portal-oidc-secret"
  role                           = aws_iam_role.portal_oidc_secret[0].arn
  runtime                        = "python3.13" # jobplane.contract.lambda_runtimes.CURRENT_RUNTIME; build_lambda.py builds for it...
  architectures                  = ["x86_64"]   # ...and this architecture
  handler                        = "jobplane.platform.oidc_secret.handler"
  filename                       = var.lambda_package
  source_code_hash               = filebase64sha256(var.lambda_package)
  timeout                        = 30
  reserved_concurrent_executions = var.lambda_reserved_concurrency
  kms_key_arn                    = aws_kms_key.platform.arn
  tracing_config {
    mode = "Active"
  }
  environment {
    variables = {
      JOBPLANE_PORTAL_RULE_ARN        = aws_lb_listener_rule.portal[0].arn
      JOBPLANE_PORTAL_OIDC_SECRET_ARN = var.portal.oidc.client_secret_arn
    }
  }
  depends_on = [aws_iam_role_policy.portal_oidc_secret, aws_cloudwatch_log_group.portal_oidc_secret]
}

resource "aws_lambda_invocation" "portal_oidc_secret" {
  count         = local.portal_count
  function_name = aws_lambda_function.portal_oidc_secret[0].function_name
  input         = jsonencode({})
  triggers = {
    rule     = aws_lb_listener_rule.portal[0].arn
    sign_in  = sha256(jsonencode(var.portal.oidc)) # a rule update sends the placeholder again
    function = aws_lambda_function.portal_oidc_secret[0].source_code_hash
    # the current version's id (a list on AWS; tfcheck's stand-in provider serves null)
    secret = join(",", [for v in coalesce(data.aws_secretsmanager_secret_versions.portal_oidc[0].versions, []) :
    v.version_id if contains(v.version_stages, "AWSCURRENT")])
  }
}

resource "aws_cloudwatch_log_group" "portal" {
  count             = local.portal_count
  name              = "/${var.name_prefix}/portal"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.platform.arn
}

# What the portal's control plane calls (tests/test_cli_aws.py checks this policy against the
# calls the operator commands make through the same control plane).
# What an operator's own role needs for the CLI with --deployment (status, run, stop, pause,
# logs, backfill: the portal's actions through the same control plane), as a managed policy to
# attach, rather than prose to copy (the prose once lacked kms:Decrypt for the catalog).
# tests/test_cli_aws.py checks these statements against every call the operator commands make.
resource "aws_iam_policy" "operator" {
  name        = "${var.name_prefix}-operator"
  description = "jobplane's operator commands (the CLI with --deployment): the portal's actions"
  policy      = data.aws_iam_policy_document.operator.json
}

# The portal's statements, and what only the CLI does: the dead-letter queue (the portal's role
# has no use for it, and its tasks no endpoint to it).
data "aws_iam_policy_document" "operator" {
  source_policy_documents = [data.aws_iam_policy_document.portal.json]
  statement {
    # `jobplane record-definitions` records beside each new definition the Step Functions
    # version the apply published of it (jobplane.platform.sfn_versions.published_version: its
    # newest versions listed, each described: DescribeStateMachine is the portal's StartJobs).
    # A version's actions are authorized on its state machine's ARN
    # (https://docs.aws.amazon.com/step-functions/latest/dg/auth-version-alias.html)
    sid       = "RecordVersions"
    actions   = ["states:ListStateMachineVersions"]
    resources = ["arn:${local.partition}:states:${local.region}:${local.account}:stateMachine:${var.name_prefix}-*"]
  }
  statement {
    # `jobplane record-definitions` (the pipeline's step after the apply) lists what is kept...
    sid       = "ListDefinitions"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.catalog.arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["definitions/*"]
    }
  }
  statement {
    # ...and writes each new definition only if its key does not exist: a PutObject without
    # If-None-Match is not allowed, so a kept definition is never replaced
    # (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html)
    sid       = "RecordDefinitions"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.catalog.arn}/definitions/*"]
    condition {
      test     = "Null"
      variable = "s3:if-none-match"
      values   = ["false"]
    }
  }
  statement {
    # `jobplane dead-letters` and status: what was not delivered, and re-sending its alerts
    # (jobplane.platform.control.dead_letters)
    sid       = "DeadLetters"
    actions   = ["sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage"]
    resources = [aws_sqs_queue.events_dlq.arn]
  }
  statement {
    sid       = "ResendAlerts"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.events.arn]
  }
  statement {
    # a publisher to a topic under a customer managed key needs kms:GenerateDataKey* and
    # kms:Decrypt (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html), only through SNS here
    sid       = "AlertKey"
    actions   = ["kms:GenerateDataKey"]
    resources = [aws_kms_key.platform.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["sns.${local.region}.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "portal" {
  source_policy_documents = [data.aws_iam_policy_document.read_catalog.json] # slow.tf
  statement {
    # the definitions runs ran, kept by digest (a run page's "changed since the previous run",
    # `jobplane diff`, a re-run's check: jobplane.platform.definitions)
    sid       = "ReadDefinitions"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.catalog.arn}/definitions/*"]
  }
  statement {
    sid = "Records"
    # BatchGetItem: a page of the jobs list reads its own jobs' states (platform/repository.py job_states_of)
    actions   = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"]
    resources = [aws_dynamodb_table.jobplane.arn, "${aws_dynamodb_table.jobplane.arn}/index/*"]
  }
  statement {
    sid       = "StartJobs"
    actions   = ["states:StartExecution", "states:DescribeStateMachine"] # the job page draws the deployed definition
    resources = ["arn:${local.partition}:states:${local.region}:${local.account}:stateMachine:${var.name_prefix}-*"]
  }
  statement {
    sid       = "Executions"
    actions   = ["states:DescribeExecution", "states:GetExecutionHistory", "states:StopExecution"]
    resources = ["arn:${local.partition}:states:${local.region}:${local.account}:execution:${var.name_prefix}-*:*"]
  }
  statement {
    #checkov:skip=CKV_AWS_356:a callback task's token is not an ARN a statement can name (see below).
    #checkov:skip=CKV_AWS_111:the same: the token in the call is what scopes it.
    # an approval step's decision (jp.approval, jobplane.platform.approvals): the portal's form,
    # `jobplane approve|reject` and Slack's buttons resume or end the waiting run with the task
    # token its record holds. SendTaskSuccess and SendTaskFailure take only the token and the
    # output or error (https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskSuccess.html,
    # API_SendTaskFailure.html): no execution or state machine ARN the policy could match, so the
    # grant is on "*"; the token itself is the credential, and it is kept in the platform's table only.
    sid       = "DecideApprovals"
    actions   = ["states:SendTaskSuccess", "states:SendTaskFailure"]
    resources = ["*"]
  }
  statement {
    #checkov:skip=CKV_AWS_356:ListSchedules has no resource type: it is authorised on "*" only.
    # a calendar job's page lists its schedules once a view and reads only those changed
    # (jobplane.platform.schedule_health.DeployedSchedules)
    sid       = "ListSchedules"
    actions   = ["scheduler:ListSchedules"]
    resources = ["*"] # no resource-level permissions (Service Authorization Reference, EventBridge Scheduler)
  }
  statement {
    sid       = "PauseSchedules"
    actions   = ["scheduler:GetSchedule", "scheduler:UpdateSchedule"]
    resources = ["arn:${local.partition}:scheduler:${local.region}:${local.account}:schedule/${aws_scheduler_schedule_group.jobs.name}/*"]
  }
  statement {
    # UpdateSchedule hands the schedule its (unchanged) role again
    sid     = "PassScheduleRoles"
    actions = ["iam:PassRole"]
    # a schedule's role is its team's: <prefix>-<team>-scheduler-<digest>-<n> (compiler/shared_roles.py)
    resources = ["arn:${local.partition}:iam::${local.account}:role/${var.name_prefix}-*-scheduler-*"]
    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["scheduler.amazonaws.com"]
    }
  }
  statement {
    # a map's progress counts its list's items (HeadObject, authorized as s3:GetObject, of the
    # run's list under map-items/, found by ListObjectsV2 of its prefix; or of a re-run's list),
    # and a re-run of the failed items writes their list under map-reruns/ before it starts,
    # deleting it again when the start fails (platform/control/map_items.py, platform/map_records.py)
    sid       = "MapLists"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.catalog.arn}/map-items/*", "${aws_s3_bucket.catalog.arn}/map-reruns/*"]
  }
  statement {
    sid       = "ListMapLists"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.catalog.arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["map-items/*"]
    }
  }
  statement {
    sid       = "WriteRerunLists"
    actions   = ["s3:PutObject", "s3:DeleteObject"]
    resources = ["${aws_s3_bucket.catalog.arn}/map-reruns/*"]
  }
  statement {
    # the catalog bucket is SSE-KMS under the platform key: a writer needs a data key
    # (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html#require-sse-kms)
    sid       = "RerunListKey"
    actions   = ["kms:GenerateDataKey"]
    resources = [aws_kms_key.platform.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["s3.${local.region}.amazonaws.com"]
    }
  }
  statement {
    sid     = "ReadStepLogs"
    actions = ["logs:FilterLogEvents", "logs:GetLogEvents"]
    # the runner's group (ECS steps: a stream per task) and the jobs' runner functions' groups
    # (Lambda steps: compiler/executors/lambda_.py; an attempt that timed out before it could
    # name its stream is found by its execution id, FilterLogEvents)
    resources = ["${aws_cloudwatch_log_group.runner.arn}:*",
    "arn:${local.partition}:logs:${local.region}:${local.account}:log-group:/aws/lambda/${var.name_prefix}-*-runner:*"]
  }
  statement {
    # the catalog object and the dead-letter queue's messages are encrypted with the platform key
    # (an SSE-KMS queue's consumer needs kms:Decrypt:
    # https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-key-management.html)
    sid       = "Decrypt"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.platform.arn]
  }
  statement {
    # Every schedule is encrypted with the platform key (a customer managed key: the compiled
    # kms_key_arn), and Scheduler uses it on behalf of the caller: GetSchedule decrypts the
    # target's input, UpdateSchedule (pause, resume) encrypts it again, so the caller needs the
    # key's use, but only through Scheduler
    # (https://docs.aws.amazon.com/scheduler/latest/UserGuide/encryption-rest.html;
    # kms:ViaService: https://docs.aws.amazon.com/kms/latest/developerguide/conditions-kms.html#conditions-kms-via-service).
    sid       = "ScheduleKey"
    actions   = ["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.platform.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["scheduler.${local.region}.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "portal_task" {
  count              = local.portal_count
  name               = "${var.name_prefix}-portal"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
}

resource "aws_iam_role_policy" "portal_task" {
  count  = local.portal_count
  name   = "control-plane"
  role   = aws_iam_role.portal_task[0].id
  policy = data.aws_iam_policy_document.portal.json
}

data "aws_iam_policy_document" "portal_execution" {
  statement {
    sid       = "PullImage"
    actions   = ["ecr:GetAuthorizationToken"]
    resources = ["*"] # GetAuthorizationToken has no resource-level permissions
  }
  statement {
    sid       = "ImageLayers"
    actions   = ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"]
    resources = ["arn:${local.partition}:ecr:${local.region}:${local.account}:repository/*"]
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["arn:${local.partition}:logs:${local.region}:${local.account}:log-group:/${var.name_prefix}/portal:*"]
  }
  statement {
    sid       = "SessionSecret"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [var.portal == null ? "arn:${local.partition}:secretsmanager:${local.region}:${local.account}:secret:none" : var.portal.session_secret_arn]
  }
}

resource "aws_iam_role" "portal_execution" {
  count              = local.portal_count
  name               = "${var.name_prefix}-portal-exec"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
}

resource "aws_iam_role_policy" "portal_execution" {
  count  = local.portal_count
  name   = "start-portal"
  role   = aws_iam_role.portal_execution[0].id
  policy = data.aws_iam_policy_document.portal_execution.json
}

resource "aws_ecs_task_definition" "portal" {
  count                    = local.portal_count
  family                   = "${var.name_prefix}-portal"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = "512"
  memory                   = "1024"
  task_role_arn            = aws_iam_role.portal_task[0].arn
  execution_role_arn       = aws_iam_role.portal_execution[0].arn
  container_definitions = jsonencode([{
    name                   = "portal"
    image                  = var.portal.image
    essential              = true
    readonlyRootFilesystem = true
    portMappings           = [{ containerPort = local.portal_port, protocol = "tcp" }]
    environment = [
      { name = "JOBPLANE_TABLE", value = aws_dynamodb_table.jobplane.name },
      { name = "JOBPLANE_TOPIC_ARN", value = aws_sns_topic.events.arn },
      { name = "JOBPLANE_NAME_PREFIX", value = var.name_prefix },
      { name = "JOBPLANE_ACCOUNT_ID", value = local.account },
      { name = "AWS_REGION", value = local.region },
      { name = "JOBPLANE_CATALOG", value = "s3://${aws_s3_bucket.catalog.id}/catalog/" },
      { name = "JOBPLANE_LOG_GROUP", value = aws_cloudwatch_log_group.runner.name },
      { name = "JOBPLANE_AUTH_MODE", value = "alb-oidc" },
      { name = "JOBPLANE_ALB_ARN", value = aws_lb.portal[0].arn },
      { name = "JOBPLANE_PORTAL_URL", value = "https://${var.portal.host_name}" },
      { name = "JOBPLANE_ADMINS", value = join(",", var.portal.admins) },
      { name = "JOBPLANE_TEAM_MEMBERS", value = jsonencode(var.portal.team_members) },
    ]
    secrets = [{ name = "JOBPLANE_PORTAL_SECRET", valueFrom = var.portal.session_secret_arn }]
    healthCheck = {
      command  = ["CMD", "python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:${local.portal_port}/healthz', timeout=3)"]
      interval = 30
      timeout  = 5
      retries  = 3
    }
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.portal[0].name
        awslogs-region        = local.region
        awslogs-stream-prefix = "portal"
      }
    }
  }])
}

resource "aws_ecs_service" "portal" {
  count           = local.portal_count
  name            = "${var.name_prefix}-portal"
  cluster         = aws_ecs_cluster.jobs.id
  task_definition = aws_ecs_task_definition.portal[0].arn
  desired_count   = 2
  launch_type     = "FARGATE"
  network_configuration {
    subnets          = coalesce(var.portal.task_subnet_ids, var.subnet_ids)
    security_groups  = [aws_security_group.portal[0].id]
    assign_public_ip = false
  }
  load_balancer {
    target_group_arn = aws_lb_target_group.portal[0].arn
    container_name   = "portal"
    container_port   = local.portal_port
  }
  depends_on = [aws_lb_listener_rule.portal]
}
