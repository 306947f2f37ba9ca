variable "name_prefix" {
  type        = string
  description = "Prefix of every AWS name the platform creates (jobplane.toml: platform.name_prefix)."
  default     = "jobplane"
}

variable "runner_image" {
  type        = string
  description = "Image of the application with jobplane-runner installed (see runner/Dockerfile)."
}

variable "subnet_ids" {
  type        = list(string)
  description = "Private subnets for the runner's Fargate tasks."
}

variable "security_group_ids" {
  type        = list(string)
  description = "Security groups of the runner's tasks."
}

variable "runner_images_kept" {
  type        = number
  description = <<-EOT
    How many runner images (one per merge) the ECR lifecycle policy keeps: the rollback window
    of docs/deploy.md, "Rolling back". Older images and untagged ones are expired.
  EOT
  default     = 50
  validation {
    condition     = var.runner_images_kept >= 10 && floor(var.runner_images_kept) == var.runner_images_kept
    error_message = "runner_images_kept: a whole number >= 10 (the rollback window docs/deploy.md promises)."
  }
}

variable "vpc_endpoints" {
  type = object({
    vpc_id          = string
    route_table_ids = list(string) # of the task subnets, for the S3 gateway endpoint
    # the interface endpoints' subnets, at most one per Availability Zone (network.tf); left out:
    # one of subnet_ids per zone
    endpoint_subnet_ids = optional(list(string))
  })
  description = <<-EOT
    Create the VPC endpoints runner tasks need without a NAT gateway (ECR, S3, CloudWatch Logs,
    Secrets Manager, SSM; see network.tf). null: the subnets reach AWS through a NAT gateway.
  EOT
  default     = null
  validation {
    condition = (var.vpc_endpoints == null ? true : var.vpc_endpoints.endpoint_subnet_ids == null ? true :
      length(var.vpc_endpoints.endpoint_subnet_ids) > 0 &&
      length(distinct(var.vpc_endpoints.endpoint_subnet_ids)) == length(var.vpc_endpoints.endpoint_subnet_ids) &&
    alltrue([for s in var.vpc_endpoints.endpoint_subnet_ids : can(regex("^subnet-[0-9a-f]{8,17}$", s))]))
    error_message = "vpc_endpoints.endpoint_subnet_ids: a non-empty list of distinct subnet IDs (subnet-...), one per Availability Zone."
  }
}

variable "portal_url" {
  type        = string
  description = "Base URL of the portal, used for links in Slack alerts."
  default     = ""
}

variable "slack_webhook_secret_arn" {
  type        = string
  description = "Secrets Manager ARN holding a Slack incoming webhook URL, or a JSON object of channel -> webhook URL (one per channel)."
  default     = ""
}

variable "slack_bot_token_secret_arn" {
  type        = string
  description = "Secrets Manager ARN holding a Slack app's bot token (xoxb-): alerts go by chat.postMessage to each routed channel. Wins over the webhooks; neither set: alerts are only logged."
  default     = ""
}

# One variable per secret of each notification channel (contract/channels.py CHANNELS;
# tests/test_channels.py holds this file, the notifier's IAM and its environment to that table).
variable "webhook_secret_arn" {
  type        = string
  description = "Secrets Manager ARN holding the signed webhook channel's targets: a JSON object of name -> {url, signing_secret} (docs/notifications.md). Empty: jobs' webhook alerts are only logged."
  default     = ""
}

variable "lambda_package" {
  type        = string
  description = "Path of the zip with the notifier and reconciler Lambda code, built by the project."
}

variable "lambda_reserved_concurrency" {
  type        = number
  description = <<-EOT
    Reserved concurrency of each Lambda (notifier, reconciler); null: none reserved. An account
    must keep at least 100 unreserved and a new account's quota may be 10, so reserving any
    there fails: https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html
  EOT
  default     = null
}

variable "execution_retention_days" {
  type        = number
  description = "Days an execution record is kept before DynamoDB TTL removes it."
  default     = 400
  validation {
    condition     = var.execution_retention_days >= 1 && var.execution_retention_days <= 3650 && floor(var.execution_retention_days) == var.execution_retention_days
    error_message = "execution_retention_days: a whole number of days, 1-3650."
  }
}

variable "log_retention_days" {
  type        = number
  description = "Days runner and state machine logs are kept."
  default     = 365
  validation {
    # PutRetentionPolicy's possible values: https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutRetentionPolicy.html
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days: one of CloudWatch Logs' retention periods (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)."
  }
}

variable "team_channels" {
  type        = map(string)
  description = "Slack channel per team (from jobplane.toml, passed by the compiled root module)."
  default     = {}
}

variable "default_channel" {
  type        = string
  description = "Slack channel for jobs whose team has none."
  default     = ""
}

variable "slow_check_schedule" {
  type        = string
  default     = "rate(5 minutes)"
  description = "How often the periodic check runs: SLOW alerts, missed fires, deadlines, pool sweeps."
  validation {
    condition     = can(regex("^rate\\((1 minute|([2-9]|[1-5][0-9]|60) minutes)\\)$", var.slow_check_schedule))
    error_message = "slow_check_schedule: rate(1 minute) .. rate(60 minutes)."
  }
}

variable "portal" {
  type = object({
    image           = string # the portal image (src/jobplane/portal/Dockerfile), e.g. in the runner's ECR
    host_name       = string # e.g. jobs.example.com (its DNS name points at the load balancer)
    certificate_arn = string # ACM certificate for host_name
    vpc_id          = string
    alb_subnet_ids  = list(string) # public subnets of the load balancer
    # the tasks' subnets (default: var.subnet_ids); with vpc_endpoints and no NAT gateway there,
    # subnets that do reach the internet: the ALB's signing keys have no VPC endpoint
    task_subnet_ids = optional(list(string))
    allowed_cidrs   = list(string) # who may reach the portal at all (then OIDC decides who signs in)
    oidc = object({
      issuer                 = string
      authorization_endpoint = string
      token_endpoint         = string
      user_info_endpoint     = string
      client_id              = string
      client_secret_arn      = string # Secrets Manager: the OIDC client's secret
    })
    session_secret_arn = string            # Secrets Manager: JOBPLANE_PORTAL_SECRET, at least 32 random characters
    admins             = list(string)      # e-mail addresses
    team_members       = map(list(string)) # team -> e-mail addresses
  })
  description = "Deploy the portal behind an ALB with OIDC sign-in (portal.tf); null: no portal on AWS."
  default     = null
}
