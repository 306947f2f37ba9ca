# What the jobs' team roots need from this module, published as SSM parameters under
# /<name_prefix>/platform/ (read there with data "aws_ssm_parameter"; the compiler writes them).
#
# Why not terraform_remote_state: its reader needs the whole state snapshot of this root, secrets
# included, while a parameter is readable on its own. HashiCorp recommends "explicitly publishing
# data for external consumption to a separate location instead of accessing it via remote state",
# naming the SSM parameter resource/data source pair:
# https://developer.hashicorp.com/terraform/language/state/remote-state-data
#
# The names below are a contract with the compiler (contract/published.py: PUBLISHED); a test
# compares the two lists.
locals {
  published = {
    table_name                   = aws_dynamodb_table.jobplane.name
    table_arn                    = aws_dynamodb_table.jobplane.arn
    topic_arn                    = aws_sns_topic.events.arn
    cluster_arn                  = aws_ecs_cluster.jobs.arn
    cluster_name                 = aws_ecs_cluster.jobs.name
    runner_family                = aws_ecs_task_definition.runner.family
    runner_image                 = var.runner_image
    runner_task_role_arn         = aws_iam_role.runner_task.arn
    runner_execution_role_arn    = aws_iam_role.runner_execution.arn
    runner_repository_arn        = aws_ecr_repository.runner.arn
    runner_logging_policy_arn    = aws_iam_policy.runner_logging.arn
    log_group_name               = aws_cloudwatch_log_group.runner.name
    sfn_log_group_arn            = aws_cloudwatch_log_group.workflows.arn
    sfn_observability_policy_arn = aws_iam_policy.sfn_observability.arn
    schedule_group_name          = aws_scheduler_schedule_group.jobs.name
    scheduler_dlq_arn            = aws_sqs_queue.scheduler_dlq.arn
    kms_key_arn                  = aws_kms_key.platform.arn
    catalog_bucket               = aws_s3_bucket.catalog.id
    subnets                      = join(",", var.subnet_ids)
    security_groups              = join(",", var.security_group_ids)
  }
}

resource "aws_ssm_parameter" "published" {
  #checkov:skip=CKV2_AWS_34:Names and ARNs of this module's resources, not secrets; a SecureString would make every team's plan role decrypt with the platform key.
  for_each    = local.published
  name        = "/${var.name_prefix}/platform/${each.key}"
  description = "jobplane base module output ${each.key}, read by the compiled team roots"
  type        = "String"
  value       = each.value
}
