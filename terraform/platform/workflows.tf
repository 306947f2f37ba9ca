# What every compiled job's state machine shares: its log group, the permissions that Step
# Functions logging and X-Ray need (they have no resource-level permissions), the schedule group.
resource "aws_cloudwatch_log_group" "workflows" {
  name              = "/aws/vendedlogs/states/${var.name_prefix}"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.platform.arn
}

data "aws_iam_policy_document" "sfn_observability" {
  statement {
    sid = "LogDelivery"
    actions = [
      "logs:CreateLogDelivery", "logs:DeleteLogDelivery", "logs:DescribeLogGroups",
      "logs:DescribeResourcePolicies", "logs:GetLogDelivery", "logs:ListLogDeliveries",
      "logs:PutResourcePolicy", "logs:UpdateLogDelivery",
    ]
    resources = ["*"] # log delivery APIs have no resource-level permissions
  }
  statement {
    sid       = "Tracing"
    actions   = ["xray:GetSamplingRules", "xray:GetSamplingTargets", "xray:PutTelemetryRecords", "xray:PutTraceSegments"]
    resources = ["*"] # X-Ray has no resource-level permissions
  }
  statement {
    sid       = "EncryptedTableAndTopic"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.platform.arn]
  }
}

resource "aws_iam_policy" "sfn_observability" {
  name        = "${var.name_prefix}-workflow-observability"
  description = "Logging, tracing and KMS use shared by every jobplane state machine"
  policy      = data.aws_iam_policy_document.sfn_observability.json
}

resource "aws_scheduler_schedule_group" "jobs" {
  name = var.name_prefix
}
