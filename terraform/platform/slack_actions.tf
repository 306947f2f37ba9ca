# Buttons on the alert (issue 68 part 2; docs/notifications.md "Buttons on the alert"): Slack's
# interactivity requests reach a small public ingress (a Lambda behind a function URL) that only
# verifies them (Slack's signing secret, the pinned app and workspace) and enqueues them; a worker
# Lambda takes each from the queue and acts, as the person who clicked, through the control plane.
# Off (nothing below exists) unless var.slack_interactivity is set; it needs the bot token
# (var.slack_bot_token_secret_arn): the modal, the thread answers and the update are Web API calls.
#
# - ingress: jobplane.platform.slack_actions.ingress.handler (reads the signing secret, sends to the queue)
# - worker:  jobplane.platform.slack_actions.feed.handler (the queue's event source; the actions' calls)
# - the notifier records each alert's button id before it posts (statement SlackButtons below)

variable "slack_interactivity" {
  type = object({
    signing_secret_arn = string                          # Secrets Manager: the Slack app's signing secret
    app_id             = string                          # the Slack app (A0123ABCD): requests of another are refused
    team_id            = string                          # the workspace (T0123ABCD): requests of another are refused
    users              = optional(map(string), {})       # Slack user id -> person, when their Slack e-mail is not their name
    admins             = optional(list(string), [])      # as the portal's: who may act on every team's jobs
    team_members       = optional(map(list(string)), {}) # as the portal's: team -> people
  })
  description = "Slack buttons on alerts (slack_actions.tf); null: alerts carry no buttons."
  default     = null
  validation {
    condition = var.slack_interactivity == null ? true : (
      can(regex("^A[A-Z0-9]{6,20}$", var.slack_interactivity.app_id)) &&
      can(regex("^[TE][A-Z0-9]{6,20}$", var.slack_interactivity.team_id)) &&
    can(regex("^arn:aws[a-z-]*:secretsmanager:", var.slack_interactivity.signing_secret_arn)))
    error_message = "slack_interactivity: app_id A..., team_id T..., signing_secret_arn a Secrets Manager ARN."
  }
}

locals {
  slack_actions = var.slack_interactivity == null ? 0 : 1
  # the worker's timeout; the queue hides a message being handled for six times as long, as Lambda
  # asks of an SQS event source (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html)
  slack_worker_timeout = 60
}

resource "aws_sqs_queue" "slack_actions_dlq" {
  count                     = local.slack_actions
  name                      = "${var.name_prefix}-slack-actions-dlq"
  message_retention_seconds = 1209600
  kms_master_key_id         = aws_kms_key.platform.arn
}

resource "aws_sqs_queue" "slack_actions" {
  count                      = local.slack_actions
  name                       = "${var.name_prefix}-slack-actions"
  visibility_timeout_seconds = 6 * local.slack_worker_timeout
  # a click is worth acting on for minutes, not days (its modal's trigger expires in 3 s)
  message_retention_seconds = 3600
  kms_master_key_id         = aws_kms_key.platform.arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.slack_actions_dlq[0].arn
    maxReceiveCount     = 2
  })
}

resource "aws_cloudwatch_log_group" "slack_ingress" {
  count             = local.slack_actions
  name              = "/aws/lambda/${var.name_prefix}-slack-ingress"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.platform.arn
}

resource "aws_cloudwatch_log_group" "slack_worker" {
  count             = local.slack_actions
  name              = "/aws/lambda/${var.name_prefix}-slack-worker"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.platform.arn
}

data "aws_iam_policy_document" "slack_ingress" {
  #checkov:skip=CKV_AWS_356:X-Ray's write actions have no resource-level permissions.
  #checkov:skip=CKV_AWS_111:X-Ray's write actions have no resource-level permissions.
  statement {
    # https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html
    sid       = "Tracing"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"] # X-Ray has no resource-level permissions
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["arn:${local.partition}:logs:${local.region}:${local.account}:log-group:/aws/lambda/${var.name_prefix}-slack-ingress:*"]
  }
  statement {
    sid       = "SigningSecret"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [var.slack_interactivity == null ? "arn:${local.partition}:secretsmanager:${local.region}:${local.account}:secret:none" : var.slack_interactivity.signing_secret_arn]
  }
  statement {
    sid       = "Enqueue"
    actions   = ["sqs:SendMessage"]
    resources = ["arn:${local.partition}:sqs:${local.region}:${local.account}:${var.name_prefix}-slack-actions"]
  }
  statement {
    # an SSE-KMS queue's producer needs the key's data key, through SQS
    # (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-key-management.html)
    sid       = "QueueKey"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [aws_kms_key.platform.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["sqs.${local.region}.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "slack_worker" {
  #checkov:skip=CKV_AWS_356:X-Ray's write actions have no resource-level permissions.
  #checkov:skip=CKV_AWS_111:X-Ray's write actions have no resource-level permissions.
  # the job's catalog entry: its team (the authorization) and its steps (a re-run's)
  source_policy_documents = [data.aws_iam_policy_document.read_catalog.json] # slow.tf
  statement {
    sid       = "Tracing"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"] # X-Ray has no resource-level permissions
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["arn:${local.partition}:logs:${local.region}:${local.account}:log-group:/aws/lambda/${var.name_prefix}-slack-worker:*"]
  }
  statement {
    # the event source mapping polls with the function's role
    # (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html#events-sqs-permissions)
    sid       = "Queue"
    actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]
    resources = ["arn:${local.partition}:sqs:${local.region}:${local.account}:${var.name_prefix}-slack-actions"]
  }
  statement {
    sid       = "Decrypt"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.platform.arn]
  }
  statement {
    sid       = "BotToken"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [var.slack_bot_token_secret_arn == "" ? "arn:${local.partition}:secretsmanager:${local.region}:${local.account}:secret:none" : var.slack_bot_token_secret_arn]
  }
  statement {
    # the buttons' records and claims (SLACKALERT#), the run's and job's records the actions read
    # and write (EXEC#, JOB#, checkpoints), the audit entries (AUDIT#): what tests/test_slack_buttons.py
    # records the worker calling
    sid       = "Records"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"]
    resources = [aws_dynamodb_table.jobplane.arn, "${aws_dynamodb_table.jobplane.arn}/index/*"]
  }
  statement {
    sid       = "StartJobs"
    actions   = ["states:StartExecution"]
    resources = ["arn:${local.partition}:states:${local.region}:${local.account}:stateMachine:${var.name_prefix}-*"]
  }
  statement {
    # a re-run's idempotency: whether its execution was already started by the same request
    sid       = "Executions"
    actions   = ["states:DescribeExecution"]
    resources = ["arn:${local.partition}:states:${local.region}:${local.account}:execution:${var.name_prefix}-*:*"]
  }
  statement {
    #checkov:skip=CKV_AWS_356:a callback task's token is not an ARN a statement can name (portal.tf DecideApprovals).
    #checkov:skip=CKV_AWS_111:the same: the token in the call is what scopes it.
    # an approval's Approve and Reject buttons (jobplane.platform.approvals decide, as the portal's
    # DecideApprovals): SendTaskSuccess and SendTaskFailure take only the token its record holds
    # (https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskSuccess.html)
    sid       = "DecideApprovals"
    actions   = ["states:SendTaskSuccess", "states:SendTaskFailure"]
    resources = ["*"]
  }
}

data "aws_iam_policy_document" "notifier_slack_buttons" {
  statement {
    # each alert's button id and what it is about, written before the post, then where it landed
    # (jobplane.platform.slack_actions.store AlertButtons.mint, posted)
    sid       = "SlackButtons"
    actions   = ["dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobplane.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["SLACKALERT#*", "SLACKRUN#*"]
    }
  }
}

resource "aws_iam_role_policy" "notifier_slack_buttons" {
  count  = local.slack_actions
  name   = "slack-buttons"
  role   = aws_iam_role.notifier.id
  policy = data.aws_iam_policy_document.notifier_slack_buttons.json
}

resource "aws_iam_role" "slack_ingress" {
  count              = local.slack_actions
  name               = "${var.name_prefix}-slack-ingress"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy" "slack_ingress" {
  count  = local.slack_actions
  name   = "slack-ingress"
  role   = aws_iam_role.slack_ingress[0].id
  policy = data.aws_iam_policy_document.slack_ingress.json
}

resource "aws_iam_role" "slack_worker" {
  count              = local.slack_actions
  name               = "${var.name_prefix}-slack-worker"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy" "slack_worker" {
  count  = local.slack_actions
  name   = "slack-worker"
  role   = aws_iam_role.slack_worker[0].id
  policy = data.aws_iam_policy_document.slack_worker.json
}

resource "aws_lambda_function" "slack_ingress" {
  #checkov:skip=CKV_AWS_117:It only verifies a request and sends it to SQS; a VPC would add a NAT gateway or endpoints and nothing to protect.
  #checkov:skip=CKV_AWS_272:The package is built and deployed by our own CI from this repository; code signing is an organisation-level choice.
  #checkov:skip=CKV_AWS_116:Invoked synchronously by its function URL: a Lambda dead-letter queue applies to asynchronous invocations only (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html); Slack sees the failure.
  count                          = local.slack_actions
  function_name                  = "${var.name_prefix}-slack-ingress"
  role                           = aws_iam_role.slack_ingress[0].arn
  runtime                        = "python3.13" # jobplane.contract.lambda_runtimes.CURRENT_RUNTIME
  architectures                  = ["x86_64"]
  handler                        = "jobplane.platform.slack_actions.ingress.handler"
  filename                       = var.lambda_package
  source_code_hash               = filebase64sha256(var.lambda_package)
  timeout                        = 3 # Slack waits 3 s for the answer
  memory_size                    = 256
  reserved_concurrent_executions = var.lambda_reserved_concurrency
  kms_key_arn                    = aws_kms_key.platform.arn
  tracing_config {
    mode = "Active"
  }
  environment {
    variables = {
      JOBPLANE_SLACK_SIGNING_SECRET_ARN = try(var.slack_interactivity.signing_secret_arn, "")
      JOBPLANE_SLACK_APP_ID             = try(var.slack_interactivity.app_id, "")
      JOBPLANE_SLACK_TEAM_ID            = try(var.slack_interactivity.team_id, "")
      JOBPLANE_SLACK_ACTIONS_QUEUE_URL  = aws_sqs_queue.slack_actions[0].url
    }
  }
  depends_on = [aws_cloudwatch_log_group.slack_ingress]
}

resource "aws_lambda_function_url" "slack_ingress" {
  #checkov:skip=CKV_AWS_258:Slack cannot sign with SigV4: the function verifies Slack's own signature (HMAC-SHA256 with the app's signing secret, five minutes) and the pinned app and workspace before anything is queued.
  count              = local.slack_actions
  function_name      = aws_lambda_function.slack_ingress[0].function_name
  authorization_type = "NONE"
}

# A function URL of auth type NONE needs the function's resource policy to allow the public both
# lambda:InvokeFunctionUrl and, for URLs created since October 2025, lambda:InvokeFunction through
# the URL only (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html).
resource "aws_lambda_permission" "slack_ingress_url" {
  #checkov:skip=CKV_AWS_301:Slack calls the function URL from the internet (auth type NONE, as Slack cannot sign with SigV4); the function verifies Slack's own signature before anything is queued.
  count                  = local.slack_actions
  statement_id           = "PublicFunctionUrl"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = aws_lambda_function.slack_ingress[0].function_name
  principal              = "*"
  function_url_auth_type = "NONE"
}

resource "aws_lambda_permission" "slack_ingress_invoke" {
  #checkov:skip=CKV_AWS_301:Public only through its function URL (invoked_via_function_url), which Slack calls; the function verifies Slack's signature.
  count                    = local.slack_actions
  statement_id             = "PublicViaFunctionUrl"
  action                   = "lambda:InvokeFunction"
  function_name            = aws_lambda_function.slack_ingress[0].function_name
  principal                = "*"
  invoked_via_function_url = true
}

resource "aws_lambda_function" "slack_worker" {
  #checkov:skip=CKV_AWS_117:It only calls AWS APIs and Slack; a VPC would add a NAT gateway and nothing to protect.
  #checkov:skip=CKV_AWS_272:The package is built and deployed by our own CI from this repository; code signing is an organisation-level choice.
  #checkov:skip=CKV_AWS_116:Invoked by its SQS event source, whose queue has its own dead-letter queue (slack_actions_dlq); a Lambda DLQ applies to asynchronous invocations only.
  count                          = local.slack_actions
  function_name                  = "${var.name_prefix}-slack-worker"
  role                           = aws_iam_role.slack_worker[0].arn
  runtime                        = "python3.13" # jobplane.contract.lambda_runtimes.CURRENT_RUNTIME
  architectures                  = ["x86_64"]
  handler                        = "jobplane.platform.slack_actions.feed.handler"
  filename                       = var.lambda_package
  source_code_hash               = filebase64sha256(var.lambda_package)
  timeout                        = local.slack_worker_timeout
  reserved_concurrent_executions = var.lambda_reserved_concurrency
  kms_key_arn                    = aws_kms_key.platform.arn
  tracing_config {
    mode = "Active"
  }
  environment {
    variables = {
      JOBPLANE_NAME_PREFIX                = var.name_prefix
      JOBPLANE_TABLE                      = aws_dynamodb_table.jobplane.name
      JOBPLANE_TOPIC_ARN                  = aws_sns_topic.events.arn
      JOBPLANE_CATALOG                    = "s3://${aws_s3_bucket.catalog.id}/catalog/"
      JOBPLANE_LOG_GROUP                  = aws_cloudwatch_log_group.runner.name
      JOBPLANE_SLACK_BOT_TOKEN_SECRET_ARN = var.slack_bot_token_secret_arn
      JOBPLANE_SLACK_APP_ID               = try(var.slack_interactivity.app_id, "")
      JOBPLANE_SLACK_TEAM_ID              = try(var.slack_interactivity.team_id, "")
      JOBPLANE_SLACK_USERS                = jsonencode(try(var.slack_interactivity.users, {}))
      JOBPLANE_ADMINS                     = join(",", try(var.slack_interactivity.admins, []))
      JOBPLANE_TEAM_MEMBERS               = jsonencode(try(var.slack_interactivity.team_members, {}))
    }
  }
  lifecycle {
    precondition {
      condition     = var.slack_bot_token_secret_arn != ""
      error_message = "slack_interactivity needs slack_bot_token_secret_arn: the modal, the answers and the update are Web API calls."
    }
  }
  depends_on = [aws_cloudwatch_log_group.slack_worker]
}

resource "aws_lambda_event_source_mapping" "slack_worker" {
  count            = local.slack_actions
  event_source_arn = aws_sqs_queue.slack_actions[0].arn
  function_name    = aws_lambda_function.slack_worker[0].arn
  batch_size       = 1 # one click at a time: a failure returns only its own message to the queue
}

output "slack_interactivity_url" {
  description = "The Slack app's Interactivity Request URL (null: no Slack buttons)."
  value       = local.slack_actions == 1 ? aws_lambda_function_url.slack_ingress[0].function_url : null
}
