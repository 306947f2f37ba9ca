# The platform's periodic check (jobplane.platform.slow.handler) on a schedule, and the compiled
# catalog it reads: a run still going after its job's expected_duration is announced once (SLOW);
# and what a lost status event would have done is done (platform/catchup.py: Step Functions sends
# those events best effort): a run that ended without recording itself is recorded, its claim
# released and its alert sent, as the reconciler does; a job's `after` run is started.
#
# The catalog (expected durations, channels, runbooks) changes with every job definition, so each
# compiled team root uploads its team's part to this bucket (catalog/<team>.json:
# aws_s3_object.catalog there) and the function reads every part at each check; the portal reads
# the same objects.

resource "aws_s3_bucket" "catalog" {
  #checkov:skip=CKV_AWS_18:One small object written by the platform's own CI apply; access logging would add a second bucket for it.
  #checkov:skip=CKV_AWS_144:The catalog is rebuilt by every apply from the repository; a replica adds nothing.
  #checkov:skip=CKV2_AWS_62:Nothing reacts to the catalog changing; readers load it when they need it.
  bucket_prefix = "${var.name_prefix}-catalog-"
}

resource "aws_s3_bucket_public_access_block" "catalog" {
  bucket                  = aws_s3_bucket.catalog.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "catalog" {
  bucket = aws_s3_bucket.catalog.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_versioning" "catalog" {
  bucket = aws_s3_bucket.catalog.id
  versioning_configuration {
    status = "Enabled" # the catalog of each apply is kept: what the platform knew at a given time
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "catalog" {
  bucket = aws_s3_bucket.catalog.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.platform.arn
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "catalog" {
  bucket = aws_s3_bucket.catalog.id
  rule {
    id     = "old-catalogs"
    status = "Enabled"
    filter {}
    noncurrent_version_expiration {
      noncurrent_days = var.execution_retention_days
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
  # A Distributed Map's ResultWriter exports its children's results here
  # (compiler/map_states.py result_writer; contract/map_items.py RESULTS_PREFIX) so they never
  # pass through the state (256 KiB). Nothing reads them (each item's record is its outcome):
  # kept a week for a look by hand, then expired (a delete marker; the old version a day later).
  # https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-configuration-examples.html
  rule {
    id     = "map-results"
    status = "Enabled"
    filter {
      prefix = "map-results/"
    }
    expiration {
      days = 7
    }
    noncurrent_version_expiration {
      noncurrent_days = 1
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
}

resource "aws_cloudwatch_log_group" "slow" {
  name              = "/aws/lambda/${var.name_prefix}-slow-check"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.platform.arn
}

# Reading the catalog the team roots upload (one object per team root, listed, then read), for
# every reader of it: the periodic check, the portal and the reconciler (its alerts' settings).
data "aws_iam_policy_document" "read_catalog" {
  statement {
    sid       = "ReadCatalog"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.catalog.arn}/catalog/*"]
  }
  statement {
    # one object per team root: the reader lists them (ListObjectsV2 needs s3:ListBucket)
    sid       = "ListCatalog"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.catalog.arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["catalog/*"]
    }
  }
}

data "aws_iam_policy_document" "slow" {
  #checkov:skip=CKV_AWS_356:X-Ray's write actions have no resource-level permissions.
  #checkov:skip=CKV_AWS_111:X-Ray's write actions have no resource-level permissions.
  source_policy_documents = [data.aws_iam_policy_document.read_catalog.json]
  statement {
    # https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html
    sid       = "Tracing"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"] # X-Ray has no resource-level permissions
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.slow.arn}:*"]
  }
  statement {
    sid       = "DeadLetter"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.events_dlq.arn]
  }
  statement {
    # the catalog object, the dead-letter queue and the environment are encrypted with this key
    sid       = "Decrypt"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.platform.arn]
  }
  statement {
    # job state (who is running), the SLOW marker written once with a condition; the record of a
    # run that ended without its own and its claim's release (one transaction: a Put and an
    # Update), its alert mark and timeline; the audit entry of a catch-up start (deleted again if
    # the start fails)
    sid       = "Records"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
    resources = [aws_dynamodb_table.jobplane.arn]
  }
  statement {
    # a running run's steps' progress (platform/stalls.py: STALLED): one Query of its
    # PROGRESS#<job>#<execution> partition (any job's: the platform's check watches every team);
    # the stall's mark is an UpdateItem of Records above
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
    # every job's state (the claims), an upstream job's newest records (the catch-up); a job's
    # pause and resume audit entries, which the fire ledger reads (gsi2, platform/missed.py)
    sid       = "JobExecutions"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobplane.arn}/index/gsi1", "${aws_dynamodb_table.jobplane.arn}/index/gsi2"]
  }
  statement {
    # the catch-up starts the run a lost `after` event did not
    sid       = "StartJobs"
    actions   = ["states:StartExecution"]
    resources = ["arn:${local.partition}:states:${local.region}:${local.account}:stateMachine:${var.name_prefix}-*"]
  }
  statement {
    sid       = "ReadExecutions"
    actions   = ["states:DescribeExecution", "states:GetExecutionHistory"]
    resources = ["arn:${local.partition}:states:${local.region}:${local.account}:execution:${var.name_prefix}-*:*"]
  }
  statement {
    # the versions each deploy publishes, pruned before the 1,000 a state machine may hold,
    # never one a RUNNING execution started (jobplane.platform.sfn_versions). A version's
    # actions are authorized on its state machine's ARN ("Step Functions uses the state
    # machine's ARN instead of using the version ARN or alias ARN",
    # https://docs.aws.amazon.com/step-functions/latest/dg/auth-version-alias.html)
    sid       = "PruneVersions"
    actions   = ["states:ListStateMachineVersions", "states:DeleteStateMachineVersion", "states:ListExecutions"]
    resources = ["arn:${local.partition}:states:${local.region}:${local.account}:stateMachine:${var.name_prefix}-*"]
  }
  statement {
    sid       = "Publish"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.events.arn]
  }
  statement {
    # the fire ledger (jobplane.platform.missed): when each job's schedules were created, and
    # what a schedule of a job with missed fires says now (missing, DISABLED, changed)
    # https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoneventbridgescheduler.html
    sid       = "ReadSchedules"
    actions   = ["scheduler:GetSchedule"]
    resources = ["arn:${local.partition}:scheduler:${local.region}:${local.account}:schedule/${var.name_prefix}/${var.name_prefix}-*"]
  }
  statement {
    # a paused job's schedule found ENABLED (an apply wrote the compiled state) is disabled
    # again (jobplane.platform.control.jobs.repair_pauses, issue 49): UpdateSchedule passes the
    # schedule's role again and has Scheduler encrypt its input with the platform key for us
    # (https://docs.aws.amazon.com/scheduler/latest/UserGuide/encryption-rest.html)
    sid       = "RepairPauses"
    actions   = ["scheduler:UpdateSchedule"]
    resources = ["arn:${local.partition}:scheduler:${local.region}:${local.account}:schedule/${var.name_prefix}/${var.name_prefix}-*"]
  }
  statement {
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
    sid       = "ScheduleKey"
    actions   = ["kms:Encrypt"]
    resources = [aws_kms_key.platform.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["scheduler.${local.region}.amazonaws.com"]
    }
  }
  statement {
    #checkov:skip=CKV_AWS_356:ListSchedules has no resource type: it is authorised on "*" only.
    sid       = "ListSchedules"
    actions   = ["scheduler:ListSchedules"]
    resources = ["*"] # no resource-level permissions (Service Authorization Reference, EventBridge Scheduler)
  }
  statement {
    # the fires EventBridge Scheduler could not start: read, recorded as MISSED, deleted
    # https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html
    sid       = "SchedulerDeadLetters"
    actions   = ["sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage"]
    resources = [aws_sqs_queue.scheduler_dlq.arn]
  }
}

resource "aws_iam_role" "slow" {
  name               = "${var.name_prefix}-slow-check"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy" "slow" {
  name   = "slow-check"
  role   = aws_iam_role.slow.id
  policy = data.aws_iam_policy_document.slow.json
}

resource "aws_lambda_function" "slow" {
  #checkov:skip=CKV_AWS_117:It only calls AWS APIs; a VPC would add a NAT gateway and nothing to protect.
  #checkov:skip=CKV_AWS_272:The package is built and deployed by our own CI from this repository; code signing is an organisation-level choice.
  function_name    = "${var.name_prefix}-slow-check"
  role             = aws_iam_role.slow.arn
  runtime          = "python3.13" # jobplane.contract.lambda_runtimes.CURRENT_RUNTIME; build_lambda.py builds for it...
  architectures    = ["x86_64"]   # ...and this architecture
  handler          = "jobplane.platform.slow.handler"
  filename         = var.lambda_package
  source_code_hash = filebase64sha256(var.lambda_package)
  timeout          = 120
  # Measured: the whole handler at 1,000 jobs peaks at 69 MB and takes 1.5 s of one core
  # (bench/missed_fires.py --jobs 1000 --hours 0.5 --rounds 1). Lambda gives CPU in proportion
  # to memory, one vCPU at 1,769 MB (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html):
  # the default 128 MB would leave the pass ~14 times slower, 512 MB ~3.5 times (about 5 s
  # of the 120 s timeout) with room for catalogs and backfills several times larger.
  memory_size                    = 512
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
      JOBPLANE_NAME_PREFIX = var.name_prefix
      JOBPLANE_ACCOUNT_ID  = local.account
      JOBPLANE_TABLE       = aws_dynamodb_table.jobplane.name
      JOBPLANE_TOPIC_ARN   = aws_sns_topic.events.arn
      JOBPLANE_CATALOG     = "s3://${aws_s3_bucket.catalog.id}/catalog/"
      JOBPLANE_LOG_GROUP   = aws_cloudwatch_log_group.runner.name
      # the TTL of a record it writes for a run that could not (as the reconciler's)
      JOBPLANE_EXECUTION_RETENTION_DAYS = tostring(var.execution_retention_days)
    }
  }
  depends_on = [aws_cloudwatch_log_group.slow]
}

# A missed check is made good by the next one (a run is announced once it is past its expected
# duration, a lost event caught up, whenever that is noticed): no dead-letter queue on this target.
resource "aws_cloudwatch_event_rule" "slow_check" {
  name                = "${var.name_prefix}-slow-check"
  description         = "Announce jobplane runs past their expected duration; start after-runs a lost event did not"
  schedule_expression = var.slow_check_schedule
}

resource "aws_cloudwatch_event_target" "slow_check" {
  rule = aws_cloudwatch_event_rule.slow_check.name
  arn  = aws_lambda_function.slow.arn
}

resource "aws_lambda_permission" "slow_from_schedule" {
  statement_id  = "FromSlowCheckSchedule"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.slow.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.slow_check.arn
}
