"""What the base module publishes for the team roots (terraform/platform/published.tf).

Each value is an SSM parameter ``/<name_prefix>/platform/<key>``; a team root reads them with
``data "aws_ssm_parameter"``, so it needs neither the base root's state nor its outputs. The keys
are a contract between the hand-written module and the compiler: tests/test_base_module.py
compares this list with the module's.
"""

from __future__ import annotations

PUBLISHED = (
    "catalog_bucket", "cluster_arn", "cluster_name", "kms_key_arn", "log_group_name", "runner_execution_role_arn",
    "runner_family", "runner_image", "runner_logging_policy_arn", "runner_repository_arn", "runner_task_role_arn",
    "schedule_group_name", "scheduler_dlq_arn", "security_groups", "sfn_log_group_arn", "sfn_observability_policy_arn",
    "subnets", "table_arn", "table_name", "topic_arn",
)


def parameter_name(prefix: str, key: str) -> str:
    assert key in PUBLISHED, key
    return f"/{prefix}/platform/{key}"
