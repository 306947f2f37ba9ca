# Every job outcome is published here once, with attributes team, job and status.
resource "aws_sns_topic" "events" {
  name              = "${var.name_prefix}-events"
  kms_master_key_id = aws_kms_key.platform.arn
}

# Undeliverable things are kept, never dropped: scheduler fires that could not start a job,
# and notifier/reconciler events that failed after their retries.
resource "aws_sqs_queue" "scheduler_dlq" {
  name                      = "${var.name_prefix}-scheduler-dlq"
  message_retention_seconds = 1209600
  kms_master_key_id         = aws_kms_key.platform.arn
}

resource "aws_sqs_queue" "events_dlq" {
  name                      = "${var.name_prefix}-events-dlq"
  message_retention_seconds = 1209600
  kms_master_key_id         = aws_kms_key.platform.arn
}

data "aws_iam_policy_document" "dlq" {
  statement {
    sid       = "ScheduleAndEventDeadLetters"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.scheduler_dlq.arn, aws_sqs_queue.events_dlq.arn]
    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com", "events.amazonaws.com", "sns.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}

resource "aws_sqs_queue_policy" "scheduler_dlq" {
  queue_url = aws_sqs_queue.scheduler_dlq.id
  policy    = data.aws_iam_policy_document.dlq.json
}

resource "aws_sqs_queue_policy" "events_dlq" {
  queue_url = aws_sqs_queue.events_dlq.id
  policy    = data.aws_iam_policy_document.dlq.json
}
