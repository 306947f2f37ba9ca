# Where the runner runs: an ECS cluster, the shared runner task definition, its roles and logs.
resource "aws_ecs_cluster" "jobs" {
  name = var.name_prefix
  setting {
    name  = "containerInsights"
    value = "enabled"
  }
}

resource "aws_ecr_repository" "runner" {
  name                 = "${var.name_prefix}-runner"
  image_tag_mutability = "IMMUTABLE"
  image_scanning_configuration {
    scan_on_push = true
  }
  encryption_configuration {
    encryption_type = "KMS"
    kms_key         = aws_kms_key.platform.arn
  }
}

# One image per merge (tag = commit, IMMUTABLE): without a lifecycle policy the repository only
# grows. Untagged images (a failed push's layers) go after a day; of the rest the newest
# var.runner_images_kept stay, so any of the last that many merges can be rolled back to by tag
# (docs/deploy.md, "Rolling back"). A rule with tagStatus "any" must have the highest priority
# and needs no tag list:
# https://docs.aws.amazon.com/AmazonECR/latest/userguide/lifecycle_policy_parameters.html
# https://docs.aws.amazon.com/AmazonECR/latest/userguide/lifecycle_policy_examples.html
resource "aws_ecr_lifecycle_policy" "runner" {
  repository = aws_ecr_repository.runner.name
  policy = jsonencode({
    rules = [
      {
        rulePriority = 1
        description  = "Expire untagged images a day after their push"
        selection    = { tagStatus = "untagged", countType = "sinceImagePushed", countUnit = "days", countNumber = 1 }
        action       = { type = "expire" }
      },
      {
        rulePriority = 2
        description  = "Keep the newest ${var.runner_images_kept} images (the rollback window)"
        selection    = { tagStatus = "any", countType = "imageCountMoreThan", countNumber = var.runner_images_kept }
        action       = { type = "expire" }
      },
    ]
  })
}

resource "aws_cloudwatch_log_group" "runner" {
  name              = "/${var.name_prefix}/runner"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.platform.arn
}

data "aws_iam_policy_document" "ecs_tasks_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}

# The base task definition's default task role. Since issue 67 no compiled state machine runs a
# task with it: every RunTask names the job's team's task role (compiler/task_roles.py: its own
# jobs' progress records only, PROGRESS#<job>#*), and no state machine may pass this one. It keeps
# its grants below for one release, so tasks started before the upgrade (the old runner, the old
# PROGRESS#<execution> keys) finish; then it goes (docs/deploy.md). The application's own policies
# belong on the team task roles now (tag jobplane:role = task, jobplane:team = <team>).
resource "aws_iam_role" "runner_task" {
  name               = "${var.name_prefix}-runner-task"
  description        = "Role of the application code run by jobplane-runner"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
}

# A map's items step (jp.map) writes its list under map-items/ in the catalog bucket, which the
# platform key encrypts (contract/map_items.py); the job's state machine reads it back.
data "aws_iam_policy_document" "runner_map_items" {
  statement {
    sid       = "WriteMapItems"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.catalog.arn}/map-items/*"]
  }
  statement {
    sid       = "EncryptMapItems"
    actions   = ["kms:GenerateDataKey"]
    resources = [aws_kms_key.platform.arn]
  }
}

resource "aws_iam_role_policy" "runner_task_map_items" {
  name   = "map-items"
  role   = aws_iam_role.runner_task.id
  policy = data.aws_iam_policy_document.runner_map_items.json
}

# A step's progress and counts (jobplane.progress, jobplane.metric: docs/progress.md), as runners
# before issue 67 write it (PROGRESS#<execution> / <step>; now PROGRESS#<job>#<execution>, on the
# team task roles): kept for the tasks in flight during the upgrade, then removed. The
# leading key holds it to the progress records (never a run's, a job's or a pool's record) and
# dynamodb:Attributes to the attributes the runner writes (contract/progress.py ATTRIBUTES);
# UpdateItem, and a GetItem of two of them (a retry's checkpoint): no put, no delete, no query;
# with AWS's companions of an attribute-level grant: a write returns only what it updated
# (dynamodb:ReturnValues), a read selects only what it names (dynamodb:Select)
# (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html).
# The table's customer managed key needs no grant here: DynamoDB uses it through its own grant
# (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/encryption.howitworks.html).
data "aws_iam_policy_document" "runner_progress" {
  statement {
    sid       = "WriteStepProgress"
    actions   = ["dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobplane.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["PROGRESS#*"]
    }
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "dynamodb:Attributes"
      values   = ["pk", "sk", "done", "total", "unit", "cursor", "metrics", "attempt", "started_at", "updated_at", "ended", "expires_at"]
    }
    condition {
      test     = "StringEqualsIfExists"
      variable = "dynamodb:ReturnValues"
      values   = ["NONE", "UPDATED_OLD", "UPDATED_NEW"]
    }
  }
  # a retry's jobplane.resume_from(): the cursor and attempt of the step's record (GetItem with
  # a ProjectionExpression of those two: the condition holds it to them)
  statement {
    sid       = "ReadStepCheckpoint"
    actions   = ["dynamodb:GetItem"]
    resources = [aws_dynamodb_table.jobplane.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["PROGRESS#*"]
    }
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "dynamodb:Attributes"
      values   = ["pk", "sk", "cursor", "attempt"]
    }
    condition {
      test     = "StringEqualsIfExists"
      variable = "dynamodb:Select"
      values   = ["SPECIFIC_ATTRIBUTES"]
    }
  }
}

resource "aws_iam_role_policy" "runner_task_progress" {
  name   = "progress"
  role   = aws_iam_role.runner_task.id
  policy = data.aws_iam_policy_document.runner_progress.json
}

# A scheduled fire's calendar defaults, as the runner resolved them for the run's scheduled time
# (docs/dsl.md "Typed parameters"): the run's PROGRESS#<execution> / #params item, its resolved
# params and its TTL (contract/progress.py PARAMS_ATTRIBUTES), UpdateItem only.
data "aws_iam_policy_document" "runner_params" {
  statement {
    sid       = "RecordResolvedParams"
    actions   = ["dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobplane.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["PROGRESS#*"]
    }
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "dynamodb:Attributes"
      values   = ["pk", "sk", "params", "expires_at"]
    }
    condition {
      test     = "StringEqualsIfExists"
      variable = "dynamodb:ReturnValues"
      values   = ["NONE", "UPDATED_OLD", "UPDATED_NEW"]
    }
  }
}

resource "aws_iam_role_policy" "runner_task_params" {
  name   = "params"
  role   = aws_iam_role.runner_task.id
  policy = data.aws_iam_policy_document.runner_params.json
}

resource "aws_iam_role" "runner_execution" {
  name               = "${var.name_prefix}-runner-exec"
  description        = "ECS task execution role of the shared runner task definition"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
}

data "aws_iam_policy_document" "runner_pull" {
  statement {
    sid       = "PullRunnerImage"
    actions   = ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
    resources = [aws_ecr_repository.runner.arn]
  }
}

resource "aws_iam_role_policy" "runner_execution_pull" {
  name   = "pull"
  role   = aws_iam_role.runner_execution.id
  policy = data.aws_iam_policy_document.runner_pull.json
}

# Shared by every execution role (this one and the per-job ones that read secrets).
data "aws_iam_policy_document" "runner_logging" {
  statement {
    sid       = "EcrLogin"
    actions   = ["ecr:GetAuthorizationToken"]
    resources = ["*"] # the action has no resource-level permissions
  }
  statement {
    sid       = "WriteRunnerLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.runner.arn}:*"]
  }
}

resource "aws_iam_policy" "runner_logging" {
  name        = "${var.name_prefix}-runner-logging"
  description = "Pull-token and log writing for jobplane runner tasks"
  policy      = data.aws_iam_policy_document.runner_logging.json
}

resource "aws_iam_role_policy_attachment" "runner_execution_logging" {
  role       = aws_iam_role.runner_execution.name
  policy_arn = aws_iam_policy.runner_logging.arn
}

resource "aws_ecs_task_definition" "runner" {
  family                   = "${var.name_prefix}-runner"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = "256"
  memory                   = "512"
  execution_role_arn       = aws_iam_role.runner_execution.arn
  task_role_arn            = aws_iam_role.runner_task.arn
  volume {
    name = "tmp"
  }
  container_definitions = jsonencode([{
    name      = "runner"
    image     = var.runner_image
    essential = true
    # A soft reservation, no hard container limit: each step's size comes from the task-level
    # Cpu/Memory its state machine overrides, and a container "memory" would OOM-kill a step
    # given more. (Fargate needs only the task-level values:
    # https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task_definition_parameters.html#container_definition_memory)
    memoryReservation = 128
    # where a step's progress goes (contract/progress.py ENV_TABLE)
    environment = [{ name = "JOBPLANE_RECORDS_TABLE", value = aws_dynamodb_table.jobplane.name }]
    # Application code may write to /tmp only (an ephemeral task volume); the image stays read-only.
    # The runner image declares VOLUME /tmp (mode 1777), so the data plane copies that directory,
    # with its permissions, into the bind mount and a non-root user can write there:
    # https://docs.aws.amazon.com/AmazonECS/latest/developerguide/bind-mounts.html
    readonlyRootFilesystem = true
    mountPoints            = [{ sourceVolume = "tmp", containerPath = "/tmp", readOnly = false }]
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.runner.name
        awslogs-region        = local.region
        awslogs-stream-prefix = "runner"
      }
    }
  }])
}
