# jobplane base platform: the shared parts every compiled job uses, created once.
# Per-job resources (state machine, schedules, scoped roles) come from the compiler's output.

data "aws_caller_identity" "current" {}
data "aws_region" "current" {}
data "aws_partition" "current" {}

locals {
  account   = data.aws_caller_identity.current.account_id
  region    = data.aws_region.current.region
  partition = data.aws_partition.current.partition
}

# One key for everything the platform stores at rest: table, topic, queues, logs.
resource "aws_kms_key" "platform" {
  description         = "${var.name_prefix} platform data (job state, history, alerts, logs)"
  enable_key_rotation = true
  policy              = data.aws_iam_policy_document.kms.json
}

resource "aws_kms_alias" "platform" {
  name          = "alias/${var.name_prefix}"
  target_key_id = aws_kms_key.platform.key_id
}

data "aws_iam_policy_document" "kms" {
  #checkov:skip=CKV_AWS_111:In a key policy "*" is this key only; account root administers it as AWS recommends.
  #checkov:skip=CKV_AWS_356:In a key policy "*" is this key only.
  #checkov:skip=CKV_AWS_109:In a key policy "*" is this key only; account root administers it as AWS recommends.
  statement {
    sid       = "AccountAdministers"
    actions   = ["kms:*"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.partition}:iam::${local.account}:root"]
    }
  }
  statement {
    # CloudWatch Logs may use the key for this account's log groups only, in the form the Logs
    # guide gives: https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html
    sid       = "LogsEncrypt"
    actions   = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
    resources = ["*"]
    principals {
      type        = "Service"
      identifiers = ["logs.${local.region}.amazonaws.com"]
    }
    condition {
      test     = "ArnLike"
      variable = "kms:EncryptionContext:aws:logs:arn"
      values   = ["arn:${local.partition}:logs:${local.region}:${local.account}:log-group:*"]
    }
  }
  statement {
    sid       = "ServicesEncrypt"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey*", "kms:Encrypt", "kms:ReEncrypt*", "kms:DescribeKey"]
    resources = ["*"]
    principals {
      type        = "Service"
      identifiers = ["sns.amazonaws.com", "sqs.amazonaws.com", "scheduler.amazonaws.com", "events.amazonaws.com", "states.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}
