# Small Lambdas from the project's own package (var.lambda_package; the third, the slow-run
# check, is in slow.tf):
# - notifier: SNS event -> Slack and signed webhooks (jobplane.platform.notifier.handler)
# - reconciler: Step Functions status change -> final record, claim release, alert
#   (jobplane.platform.reconciler.handler), for executions that could not clean up after
#   themselves (aborted, timed out as a whole) and to set the record's TTL.

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_cloudwatch_log_group" "notifier" {
  name              = "/aws/lambda/${var.name_prefix}-notifier"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.platform.arn
}

resource "aws_cloudwatch_log_group" "reconciler" {
  name              = "/aws/lambda/${var.name_prefix}-reconciler"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.platform.arn
}

data "aws_iam_policy_document" "notifier" {
  #checkov:skip=CKV_AWS_356:X-Ray's write actions have no resource-level permissions.
  #checkov:skip=CKV_AWS_111:X-Ray's write actions have no resource-level permissions.
  statement {
    # Active tracing: Lambda's execution role must be allowed to send traces, or creating the
    # function fails ("The provided execution role does not have permissions to call
    # PutTraceSegments on XRAY"). https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html
    sid       = "Tracing"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"] # X-Ray has no resource-level permissions
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.notifier.arn}:*"]
  }
  statement {
    sid       = "DeadLetter"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.events_dlq.arn]
  }
  statement {
    # a failed run's map items, counted and named in its alert (jobplane.platform.map_alert)
    sid       = "ReadMapItems"
    actions   = ["dynamodb:Query"]
    resources = [aws_dynamodb_table.jobplane.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["EXEC#*"]
    }
  }
  statement {
    # a job's newest execution records, newest first (gsi1): whether a failure is the N-th in a
    # row its after_failures waits for (jobplane.platform.alert_streak)
    sid       = "JobExecutions"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobplane.arn}/index/gsi1"]
  }
  statement {
    # an alert of a snoozed job kept for the snooze's summary: one conditional append to the
    # job's state item (jobplane.platform.snooze)
    sid       = "SnoozeHeld"
    actions   = ["dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobplane.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["JOB#*"]
    }
  }
  statement {
    sid       = "Decrypt"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.platform.arn]
  }
  statement {
    # which task ran the failed step (its log stream) is in the execution's history
    sid       = "ReadExecutions"
    actions   = ["states:GetExecutionHistory"]
    resources = ["arn:${local.partition}:states:${local.region}:${local.account}:execution:${var.name_prefix}-*:*"]
  }
  statement {
    # The failed step's error line for the alert (platform/logs.py: GetLogEvents on the stream
    # the runner's awslogs driver wrote). A reader of a KMS-encrypted group needs no KMS
    # permission: CloudWatch Logs decrypts with its own grant on the key.
    # https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html
    sid     = "ReadStepLogs"
    actions = ["logs:FilterLogEvents", "logs:GetLogEvents"]
    # the runner's group (ECS steps: a stream per task) and the jobs' runner functions' groups
    # (Lambda steps: compiler/executors/lambda_.py; an attempt that timed out before it could
    # name its stream is found by its execution id, FilterLogEvents)
    resources = ["${aws_cloudwatch_log_group.runner.arn}:*",
    "arn:${local.partition}:logs:${local.region}:${local.account}:log-group:/aws/lambda/${var.name_prefix}-*-runner:*"]
  }
  dynamic "statement" {
    for_each = var.slack_webhook_secret_arn == "" ? [] : [var.slack_webhook_secret_arn]
    content {
      sid       = "SlackWebhook"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [statement.value]
    }
  }
  dynamic "statement" {
    for_each = var.slack_bot_token_secret_arn == "" ? [] : [var.slack_bot_token_secret_arn]
    content {
      sid       = "SlackBotToken"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [statement.value]
    }
  }
  dynamic "statement" {
    for_each = var.webhook_secret_arn == "" ? [] : [var.webhook_secret_arn]
    content {
      sid       = "WebhookTargets"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [statement.value]
    }
  }
}

data "aws_iam_policy_document" "reconciler" {
  #checkov:skip=CKV_AWS_356:X-Ray's write actions have no resource-level permissions.
  #checkov:skip=CKV_AWS_111:X-Ray's write actions have no resource-level permissions.
  # the job's channels, events and runbook for the alert it publishes (the team roots' catalog
  # parts, read until one names the job: platform/reconciler.py _catalog_reader)
  source_policy_documents = [data.aws_iam_policy_document.read_catalog.json] # slow.tf
  statement {
    # Active tracing: Lambda's execution role must be allowed to send traces, or creating the
    # function fails ("The provided execution role does not have permissions to call
    # PutTraceSegments on XRAY"). https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html
    sid       = "Tracing"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"] # X-Ray has no resource-level permissions
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.reconciler.arn}:*"]
  }
  statement {
    sid       = "Records"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobplane.arn]
  }
  statement {
    # a job's newest records, the first time its recent runs are noted (JOB#<job> RECENT, written
    # with GetItem and PutItem above: platform/run_history.py)
    sid       = "JobExecutions"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobplane.arn}/index/gsi1"]
  }
  statement {
    # a run's steps' own counts for its metric lines (platform/run_metrics.py): one Query of its
    # PROGRESS#<job>#<execution> partition (any job's: the reconciler ends every team's runs),
    # held to those partitions by their leading key
    sid       = "StepProgress"
    actions   = ["dynamodb:Query"]
    resources = [aws_dynamodb_table.jobplane.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["PROGRESS#*"]
    }
  }
  statement {
    # a run's pool holders it left held (platform/pool_slots.py release_run): each release is a
    # transaction deleting the holder item (POOL#<pool>#<ticket>) and updating the pool's counter
    # (Records), https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html
    sid       = "ReleasePoolSlots"
    actions   = ["dynamodb:DeleteItem"]
    resources = [aws_dynamodb_table.jobplane.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["POOL#*#*"]
    }
  }
  statement {
    sid       = "ReadExecutions"
    actions   = ["states:DescribeExecution", "states:GetExecutionHistory"]
    resources = ["arn:${local.partition}:states:${local.region}:${local.account}:execution:${var.name_prefix}-*:*"]
  }
  statement {
    # The failed step's error line for the alert (platform/logs.py: GetLogEvents on the stream
    # the runner's awslogs driver wrote). A reader of a KMS-encrypted group needs no KMS
    # permission: CloudWatch Logs decrypts with its own grant on the key.
    # https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html
    sid     = "ReadStepLogs"
    actions = ["logs:FilterLogEvents", "logs:GetLogEvents"]
    # the runner's group (ECS steps: a stream per task) and the jobs' runner functions' groups
    # (Lambda steps: compiler/executors/lambda_.py; an attempt that timed out before it could
    # name its stream is found by its execution id, FilterLogEvents)
    resources = ["${aws_cloudwatch_log_group.runner.arn}:*",
    "arn:${local.partition}:logs:${local.region}:${local.account}:log-group:/aws/lambda/${var.name_prefix}-*-runner:*"]
  }
  statement {
    sid       = "Publish"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.events.arn]
  }
  statement {
    sid       = "DeadLetterAndKeys"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.events_dlq.arn]
  }
  statement {
    sid       = "Decrypt"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.platform.arn]
  }
}

resource "aws_iam_role" "notifier" {
  name               = "${var.name_prefix}-notifier"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy" "notifier" {
  name   = "notifier"
  role   = aws_iam_role.notifier.id
  policy = data.aws_iam_policy_document.notifier.json
}

resource "aws_iam_role" "reconciler" {
  name               = "${var.name_prefix}-reconciler"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy" "reconciler" {
  name   = "reconciler"
  role   = aws_iam_role.reconciler.id
  policy = data.aws_iam_policy_document.reconciler.json
}

resource "aws_lambda_function" "notifier" {
  #checkov:skip=CKV_AWS_117:It only calls AWS APIs, Slack and the signed webhooks' targets; a VPC would add a NAT gateway and nothing to protect.
  #checkov:skip=CKV_AWS_272:The package is built and deployed by our own CI from this repository; code signing is an organisation-level choice.
  function_name                  = "${var.name_prefix}-notifier"
  role                           = aws_iam_role.notifier.arn
  runtime                        = "python3.13" # jobplane.contract.lambda_runtimes.CURRENT_RUNTIME; build_lambda.py builds for it...
  architectures                  = ["x86_64"]   # ...and this architecture
  handler                        = "jobplane.platform.notifier.handler"
  filename                       = var.lambda_package
  source_code_hash               = filebase64sha256(var.lambda_package)
  timeout                        = 60
  reserved_concurrent_executions = var.lambda_reserved_concurrency
  kms_key_arn                    = aws_kms_key.platform.arn
  dead_letter_config {
    target_arn = aws_sqs_queue.events_dlq.arn
  }
  tracing_config {
    mode = "Active"
  }
  environment {
    variables = {
      JOBPLANE_PORTAL_URL                 = var.portal_url
      JOBPLANE_SLACK_WEBHOOK_SECRET_ARN   = var.slack_webhook_secret_arn
      JOBPLANE_SLACK_BOT_TOKEN_SECRET_ARN = var.slack_bot_token_secret_arn
      JOBPLANE_WEBHOOK_SECRET_ARN         = var.webhook_secret_arn
      JOBPLANE_TEAM_CHANNELS              = jsonencode(var.team_channels)
      JOBPLANE_DEFAULT_CHANNEL            = var.default_channel
      JOBPLANE_TABLE                      = aws_dynamodb_table.jobplane.name
      JOBPLANE_LOG_GROUP                  = aws_cloudwatch_log_group.runner.name
      # "1": alerts carry Slack buttons (slack_actions.tf)
      JOBPLANE_SLACK_INTERACTIVE = var.slack_interactivity == null ? "" : "1"
    }
  }
  depends_on = [aws_cloudwatch_log_group.notifier]
}

resource "aws_lambda_function" "reconciler" {
  #checkov:skip=CKV_AWS_117:It only calls AWS APIs; a VPC would add a NAT gateway and nothing to protect.
  #checkov:skip=CKV_AWS_272:The package is built and deployed by our own CI from this repository; code signing is an organisation-level choice.
  function_name    = "${var.name_prefix}-reconciler"
  role             = aws_iam_role.reconciler.arn
  runtime          = "python3.13" # jobplane.contract.lambda_runtimes.CURRENT_RUNTIME; build_lambda.py builds for it...
  architectures    = ["x86_64"]   # ...and this architecture
  handler          = "jobplane.platform.reconciler.handler"
  filename         = var.lambda_package
  source_code_hash = filebase64sha256(var.lambda_package)
  # a throttled GetExecutionHistory is waited for, up to ~40 s (platform/timeline.py, Patience)
  timeout                        = 120
  reserved_concurrent_executions = var.lambda_reserved_concurrency
  kms_key_arn                    = aws_kms_key.platform.arn
  dead_letter_config {
    target_arn = aws_sqs_queue.events_dlq.arn
  }
  tracing_config {
    mode = "Active"
  }
  environment {
    variables = {
      JOBPLANE_NAME_PREFIX              = var.name_prefix
      JOBPLANE_TABLE                    = aws_dynamodb_table.jobplane.name
      JOBPLANE_TOPIC_ARN                = aws_sns_topic.events.arn
      JOBPLANE_EXECUTION_RETENTION_DAYS = tostring(var.execution_retention_days)
      JOBPLANE_LOG_GROUP                = aws_cloudwatch_log_group.runner.name
      JOBPLANE_CATALOG                  = "s3://${aws_s3_bucket.catalog.id}/catalog/"
    }
  }
  depends_on = [aws_cloudwatch_log_group.reconciler]
}

resource "aws_sns_topic_subscription" "notifier" {
  topic_arn = aws_sns_topic.events.arn
  protocol  = "lambda"
  endpoint  = aws_lambda_function.notifier.arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.events_dlq.arn
  })
}

resource "aws_lambda_permission" "notifier_from_sns" {
  statement_id  = "FromEventsTopic"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.notifier.function_name
  principal     = "sns.amazonaws.com"
  source_arn    = aws_sns_topic.events.arn
}

# Every terminal status of every jobplane state machine reaches the reconciler.
resource "aws_cloudwatch_event_rule" "execution_status" {
  name        = "${var.name_prefix}-execution-status"
  description = "Terminal statuses of jobplane executions, for the reconciler"
  event_pattern = jsonencode({
    source      = ["aws.states"]
    detail-type = ["Step Functions Execution Status Change"]
    detail = {
      status          = ["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"]
      stateMachineArn = [{ prefix = "arn:${local.partition}:states:${local.region}:${local.account}:stateMachine:${var.name_prefix}-" }]
    }
  })
}

resource "aws_cloudwatch_event_target" "reconciler" {
  rule = aws_cloudwatch_event_rule.execution_status.name
  arn  = aws_lambda_function.reconciler.arn
  retry_policy {
    maximum_event_age_in_seconds = 86400
    maximum_retry_attempts       = 185
  }
  dead_letter_config {
    arn = aws_sqs_queue.events_dlq.arn
  }
}

resource "aws_lambda_permission" "reconciler_from_events" {
  statement_id  = "FromExecutionStatusRule"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.reconciler.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.execution_status.arn
}
