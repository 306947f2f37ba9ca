# Read by the compiled base root (terraform/jobs/base: its output "jobplane"). The team roots read
# the parameters of published.tf instead, so that they never need this root's state.
output "table_name" { value = aws_dynamodb_table.jobplane.name }
output "table_arn" { value = aws_dynamodb_table.jobplane.arn }
output "topic_arn" { value = aws_sns_topic.events.arn }
output "cluster_arn" { value = aws_ecs_cluster.jobs.arn }
output "cluster_name" { value = aws_ecs_cluster.jobs.name }
output "runner_task_definition_arn" { value = aws_ecs_task_definition.runner.arn }
output "runner_task_role_arn" { value = aws_iam_role.runner_task.arn }
output "runner_execution_role_arn" { value = aws_iam_role.runner_execution.arn }
output "runner_repository_arn" { value = aws_ecr_repository.runner.arn }
output "runner_logging_policy_arn" { value = aws_iam_policy.runner_logging.arn }
output "log_group_name" { value = aws_cloudwatch_log_group.runner.name }
output "sfn_log_group_arn" { value = aws_cloudwatch_log_group.workflows.arn }
output "sfn_observability_policy_arn" { value = aws_iam_policy.sfn_observability.arn }
output "schedule_group_name" { value = aws_scheduler_schedule_group.jobs.name }
output "scheduler_dlq_arn" { value = aws_sqs_queue.scheduler_dlq.arn }
output "events_dlq_arn" { value = aws_sqs_queue.events_dlq.arn }
output "kms_key_arn" { value = aws_kms_key.platform.arn }
output "catalog_bucket" { value = aws_s3_bucket.catalog.id }
output "catalog_uri" { value = "s3://${aws_s3_bucket.catalog.id}/catalog/" }
output "operator_policy_arn" { value = aws_iam_policy.operator.arn }
