# The two roles the pipeline (deploy/github-actions/jobplane.yml) assumes with GitHub's OIDC
# token, created once by an administrator: `terraform init && terraform apply` here
# (docs/deploy.md, step 6). Their trust and their limits are what a pull request's author can
# and cannot do with AWS (issue 40, items 1 and 2):
#
# - plan: any pull request of the repository may assume it, and GitHub runs a pull request's own
#   version of the workflow, so it must be harmless in any hands: it sees what the account holds
#   (AWS's ViewOnlyAccess: lists and describes, no data), reads what a plan of the compiled roots
#   reads on <name_prefix> resources, the states and the catalog, and nothing else: no object,
#   item, log event, execution or function configuration of anything else (issue 48 item 4:
#   ReadOnlyAccess let any pull request read the account's data). It may not write the state
#   bucket (the pipeline plans with -lock=false), nor read a secret value or a parameter other
#   than the ones the base module publishes.
# - apply: only a job on `main` that declares the `production` environment may assume it. The
#   token's subject carries both only when the repository's OIDC subject template includes the
#   context and the ref (docs/deploy.md gives the command); AWS reads no other GitHub claim
#   (https://docs.github.com/en/actions/how-tos/secure-your-work/security-harden-deployments/oidc-in-aws:
#   "Support for custom claims for OIDC is unavailable in AWS").

terraform {
  required_version = ">= 1.10"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 6.0"
    }
  }
}

variable "region" {
  type = string
}

variable "github_repository" {
  type        = string
  description = "The teams' repository, ORG/REPO."
  validation {
    condition     = can(regex("^[A-Za-z0-9-]+/[A-Za-z0-9._-]+$", var.github_repository))
    error_message = "github_repository is ORG/REPO."
  }
}

variable "state_bucket" {
  type        = string
  description = "The bucket of [terraform] in jobplane.toml (the compiled roots' state)."
}

variable "state_prefix" {
  type        = string
  default     = "jobplane/"
  description = "The keys of the roots' states in that bucket (key and team_key of [terraform])."
}

variable "name_prefix" {
  type    = string
  default = "jobplane"
}

variable "environment" {
  type        = string
  default     = "production"
  description = "The GitHub environment the apply job declares."
}

variable "branch" {
  type    = string
  default = "main"
}

variable "apply_policy_arns" {
  type        = list(string)
  description = "What the apply role may do: create and change what the base module and the compiled roots hold (your organisation's deployment policy)."
}

variable "create_oidc_provider" {
  type        = bool
  default     = true
  description = "false when the account already has token.actions.githubusercontent.com."
}

provider "aws" {
  region = var.region
}

data "aws_partition" "current" {}
data "aws_caller_identity" "current" {}

resource "aws_iam_openid_connect_provider" "github" {
  count          = var.create_oidc_provider ? 1 : 0
  url            = "https://token.actions.githubusercontent.com"
  client_id_list = ["sts.amazonaws.com"]
}

locals {
  partition    = data.aws_partition.current.partition
  provider_arn = var.create_oidc_provider ? aws_iam_openid_connect_provider.github[0].arn : "arn:${local.partition}:iam::${data.aws_caller_identity.current.account_id}:oidc-provider/token.actions.githubusercontent.com"
  # subjects as the repository's customised template (repo, context, ref) writes them
  pull_request_subject = "repo:${var.github_repository}:pull_request:ref:refs/pull/*/merge"
  apply_subject        = "repo:${var.github_repository}:environment:${var.environment}:ref:refs/heads/${var.branch}"
  state_bucket_arn     = "arn:${local.partition}:s3:::${var.state_bucket}"
}

data "aws_iam_policy_document" "plan_trust" {
  statement {
    actions = ["sts:AssumeRoleWithWebIdentity"]
    principals {
      type        = "Federated"
      identifiers = [local.provider_arn]
    }
    condition {
      test     = "StringEquals"
      variable = "token.actions.githubusercontent.com:aud"
      values   = ["sts.amazonaws.com"]
    }
    condition {
      test     = "StringLike"
      variable = "token.actions.githubusercontent.com:sub"
      values   = [local.pull_request_subject]
    }
  }
}

data "aws_iam_policy_document" "apply_trust" {
  statement {
    actions = ["sts:AssumeRoleWithWebIdentity"]
    principals {
      type        = "Federated"
      identifiers = [local.provider_arn]
    }
    condition {
      test     = "StringEquals"
      variable = "token.actions.githubusercontent.com:aud"
      values   = ["sts.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "token.actions.githubusercontent.com:sub"
      values   = [local.apply_subject]
    }
  }
}

# What the plan role may do beyond ViewOnlyAccess: what `terraform plan` of the base and team
# roots reads (their data sources, and the refresh of each resource type they hold, on
# <name_prefix> resources; tests/test_security_round3.py derives the set from the compiled
# roots' types), the states and the catalog; and nothing that writes them or reads data. Deny
# wins over any allow, ViewOnlyAccess's included
# (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html).
locals {
  account = data.aws_caller_identity.current.account_id
  arn     = "arn:${local.partition}"
}

data "aws_iam_policy_document" "plan_limits" {
  statement {
    sid = "RefreshPlatformResources"
    actions = [
      "iam:GetRole", "iam:GetRolePolicy", "iam:ListRolePolicies", "iam:ListAttachedRolePolicies", "iam:ListRoleTags",
      "iam:GetPolicy", "iam:GetPolicyVersion", "iam:ListPolicyVersions", "iam:ListPolicyTags",
      # the provider's read of a state machine lists its versions (publish = true: its
      # state_machine_version_arn), in every plan's refresh
      "states:DescribeStateMachine", "states:ListTagsForResource", "states:ListStateMachineVersions",
      "scheduler:GetSchedule", "scheduler:GetScheduleGroup", "scheduler:ListTagsForResource",
      "events:DescribeRule", "events:ListTargetsByRule", "events:ListTagsForResource",
      "ecs:DescribeClusters", "ecs:DescribeServices", "ecs:ListTagsForResource",
      "ecr:DescribeRepositories", "ecr:GetLifecyclePolicy", "ecr:GetRepositoryPolicy", "ecr:ListTagsForResource",
      "dynamodb:DescribeTable", "dynamodb:DescribeContinuousBackups", "dynamodb:DescribeTimeToLive", "dynamodb:ListTagsOfResource",
      "sqs:GetQueueAttributes", "sqs:ListQueueTags",
      "sns:GetTopicAttributes", "sns:GetSubscriptionAttributes", "sns:ListTagsForResource",
      "lambda:GetFunction", "lambda:GetFunctionCodeSigningConfig", "lambda:GetFunctionConcurrency", "lambda:GetPolicy",
      "lambda:ListVersionsByFunction", "lambda:ListTags",
      # the Slack buttons' ingress function URL (terraform/platform/slack_actions.tf)
      "lambda:GetFunctionUrlConfig",
      "logs:ListTagsForResource", "logs:ListTagsLogGroup",
      "s3:GetBucketAcl", "s3:GetBucketCORS", "s3:GetBucketLogging", "s3:GetBucketObjectLockConfiguration",
      "s3:GetBucketOwnershipControls", "s3:GetBucketPolicy", "s3:GetBucketPublicAccessBlock", "s3:GetBucketRequestPayment",
      "s3:GetBucketTagging", "s3:GetBucketVersioning", "s3:GetBucketWebsite", "s3:GetAccelerateConfiguration",
      "s3:GetEncryptionConfiguration", "s3:GetLifecycleConfiguration", "s3:GetReplicationConfiguration",
      "ssm:ListTagsForResource", "ssm:GetParameter", "ssm:GetParameters", "s3:ListBucket",
    ]
    resources = [
      "${local.arn}:iam::${local.account}:role/${var.name_prefix}-*",
      "${local.arn}:iam::${local.account}:policy/${var.name_prefix}-*",
      "${local.arn}:states:*:${local.account}:stateMachine:${var.name_prefix}-*",
      "${local.arn}:scheduler:*:${local.account}:schedule/${var.name_prefix}/*",
      "${local.arn}:scheduler:*:${local.account}:schedule-group/${var.name_prefix}",
      "${local.arn}:events:*:${local.account}:rule/${var.name_prefix}-*",
      "${local.arn}:ecs:*:${local.account}:cluster/${var.name_prefix}",
      "${local.arn}:ecs:*:${local.account}:service/${var.name_prefix}/*",
      "${local.arn}:ecr:*:${local.account}:repository/${var.name_prefix}-*",
      "${local.arn}:dynamodb:*:${local.account}:table/${var.name_prefix}",
      "${local.arn}:sqs:*:${local.account}:${var.name_prefix}-*",
      "${local.arn}:sns:*:${local.account}:${var.name_prefix}-*",
      "${local.arn}:lambda:*:${local.account}:function:${var.name_prefix}-*",
      "${local.arn}:logs:*:${local.account}:log-group:/aws/lambda/${var.name_prefix}-*",
      "${local.arn}:logs:*:${local.account}:log-group:/${var.name_prefix}/*",
      "${local.arn}:s3:::${var.name_prefix}-catalog-*",
      "${local.arn}:ssm:*:${local.account}:parameter/${var.name_prefix}/platform/*",
    ]
  }
  statement {
    # the Slack buttons' worker's queue mapping (terraform/platform/slack_actions.tf): an event
    # source mapping's ARN is its random UUID, so the read is on the account's mappings; it holds
    # no data (its function and queue and batch settings)
    # (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awslambda.html)
    sid       = "ReadEventSourceMappings"
    actions   = ["lambda:GetEventSourceMapping", "lambda:ListTags"]
    resources = ["${local.arn}:lambda:*:${local.account}:event-source-mapping:*"]
  }
  statement {
    # the KMS key (its ARN is a random id) and the secrets the job files look up by name (each
    # team's own names: metadata only, GetSecretValue is denied below)
    sid = "RefreshKeyAndSecretMetadata"
    actions = [
      "kms:DescribeKey", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:ListResourceTags",
      "secretsmanager:DescribeSecret", "secretsmanager:ListSecretVersionIds",
    ]
    resources = [
      "${local.arn}:kms:*:${local.account}:key/*",
      "${local.arn}:secretsmanager:*:${local.account}:secret:*",
    ]
  }
  statement {
    # these actions take no resource (Service Authorization Reference): the job files' task
    # definitions and the key's alias
    sid       = "RefreshUnscopable"
    actions   = ["ecs:DescribeTaskDefinition", "kms:ListAliases"]
    resources = ["*"]
  }
  statement {
    sid       = "ReadCatalog"
    actions   = ["s3:GetObject", "s3:GetObjectTagging"]
    resources = ["${local.arn}:s3:::${var.name_prefix}-catalog-*/catalog/*"]
  }
  statement {
    sid       = "ReadStates"
    actions   = ["s3:GetObject"]
    resources = ["${local.state_bucket_arn}/${var.state_prefix}*"]
  }
  statement {
    sid       = "ListStates"
    actions   = ["s3:ListBucket"]
    resources = [local.state_bucket_arn]
  }
  statement {
    sid       = "NeverWriteStates"
    effect    = "Deny"
    actions   = ["s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObjectAcl", "s3:PutBucketPolicy", "s3:PutBucketVersioning"]
    resources = [local.state_bucket_arn, "${local.state_bucket_arn}/*"]
  }
  statement {
    sid       = "NeverReadSecrets"
    effect    = "Deny"
    actions   = ["secretsmanager:GetSecretValue", "secretsmanager:BatchGetSecretValue"]
    resources = ["*"]
  }
  statement {
    # no data: objects other than the states and the catalog, items, log events, executions'
    # input and output, messages, and other functions' configurations (their environment)
    sid           = "NeverReadOtherObjects"
    effect        = "Deny"
    actions       = ["s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectAttributes"]
    not_resources = ["${local.state_bucket_arn}/${var.state_prefix}*", "${local.arn}:s3:::${var.name_prefix}-catalog-*/catalog/*"]
  }
  statement {
    sid    = "NeverReadData"
    effect = "Deny"
    actions = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:PartiQLSelect",
      "dynamodb:GetRecords", "logs:GetLogEvents", "logs:FilterLogEvents", "logs:StartQuery", "logs:GetQueryResults",
      "logs:GetLogRecord", "logs:StartLiveTail", "logs:Unmask", "states:GetExecutionHistory", "states:DescribeExecution",
    "sqs:ReceiveMessage", "lambda:ListFunctions", "lambda:InvokeFunction"]
    resources = ["*"]
  }
  statement {
    sid           = "NoOtherFunctions"
    effect        = "Deny"
    actions       = ["lambda:GetFunction", "lambda:GetFunctionConfiguration"]
    not_resources = ["${local.arn}:lambda:*:${local.account}:function:${var.name_prefix}-*"]
  }
  statement {
    # the team roots read what the base module publishes (names and ARNs, plain strings)
    sid           = "NoOtherParameters"
    effect        = "Deny"
    actions       = ["ssm:GetParameter", "ssm:GetParameters", "ssm:GetParametersByPath", "ssm:GetParameterHistory"]
    not_resources = ["arn:${local.partition}:ssm:*:${data.aws_caller_identity.current.account_id}:parameter/${var.name_prefix}/platform/*"]
  }
}

resource "aws_iam_role" "plan" {
  name                 = "${var.name_prefix}-ci-plan"
  description          = "jobplane pipeline: plans of pull requests (read only)"
  assume_role_policy   = data.aws_iam_policy_document.plan_trust.json
  max_session_duration = 3600
}

resource "aws_iam_role_policy_attachment" "plan_read" {
  role       = aws_iam_role.plan.name
  policy_arn = "arn:${local.partition}:iam::aws:policy/job-function/ViewOnlyAccess"
}

resource "aws_iam_role_policy" "plan_limits" {
  name   = "limits"
  role   = aws_iam_role.plan.id
  policy = data.aws_iam_policy_document.plan_limits.json
}

resource "aws_iam_role" "apply" {
  name                 = "${var.name_prefix}-ci-apply"
  description          = "jobplane pipeline: applies of ${var.branch} in the ${var.environment} environment"
  assume_role_policy   = data.aws_iam_policy_document.apply_trust.json
  max_session_duration = 3600
}

# The last commit the pipeline applied in full: each apply diffs against it, not against the
# push's `before`, since GitHub cancels a pending run when a newer one queues in the same
# concurrency group, and the roots only the cancelled push changed would never be applied
# (https://docs.github.com/en/actions/how-tos/write-workflows/choose-when-workflows-run/control-workflow-concurrency:
# "any existing pending job or workflow in the same concurrency group will be canceled").
# Written by the apply role after every root applied; read by it before (issue 49, item 4).
locals {
  applied_commit_parameter = "/jobplane-ci/${var.github_repository}/applied-commit"
}

data "aws_iam_policy_document" "apply_commit" {
  statement {
    sid       = "AppliedCommit"
    actions   = ["ssm:GetParameter", "ssm:PutParameter"]
    resources = ["arn:${local.partition}:ssm:${var.region}:${data.aws_caller_identity.current.account_id}:parameter${local.applied_commit_parameter}"]
  }
}

resource "aws_iam_role_policy" "apply_commit" {
  name   = "applied-commit"
  role   = aws_iam_role.apply.id
  policy = data.aws_iam_policy_document.apply_commit.json
}

resource "aws_iam_role_policy_attachment" "apply" {
  for_each   = toset(var.apply_policy_arns)
  role       = aws_iam_role.apply.name
  policy_arn = each.value
}

output "plan_role_arn" {
  description = "The repository variable JOBPLANE_PLAN_ROLE_ARN"
  value       = aws_iam_role.plan.arn
}

output "apply_role_arn" {
  description = "The repository variable JOBPLANE_APPLY_ROLE_ARN"
  value       = aws_iam_role.apply.arn
}
