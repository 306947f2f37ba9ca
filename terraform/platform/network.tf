# Runner tasks run in private subnets without a public IP (AssignPublicIp DISABLED), so they
# reach AWS through a NAT gateway or through VPC endpoints. With var.vpc_endpoints set, the
# module creates the endpoints a Fargate task needs to start and run a step
# (https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html: ecr.api, ecr.dkr
# and the S3 gateway for image layers; CloudWatch Logs for the awslogs driver; Secrets Manager
# and SSM for task secrets; https://docs.aws.amazon.com/AmazonECS/latest/developerguide/vpc-endpoints.html).
# What the application itself calls (its database, other AWS services) is the application's to add.
#
# With the portal too, its tasks (same subnets, their own security group) also call Step
# Functions and EventBridge Scheduler (interface endpoints) and DynamoDB (a gateway endpoint);
# S3, CloudWatch Logs, ECR and Secrets Manager are the runner's endpoints above. The one call no
# endpoint serves is the portal's fetch of the ALB's public signing keys
# (public-keys.auth.elb.REGION.amazonaws.com, the alb-oidc mode): give the portal
# portal.task_subnet_ids with a route to the internet, or it refuses every sign-in (docs/deploy.md).
locals {
  with_portal_endpoints = var.vpc_endpoints != null && var.portal != null
  interface_endpoints = var.vpc_endpoints == null ? [] : concat(["ecr.api", "ecr.dkr", "logs", "secretsmanager", "ssm"],
  local.with_portal_endpoints ? ["states", "scheduler"] : [])
  # An interface endpoint takes at most one subnet per Availability Zone: two in one zone make
  # CreateVpcEndpoint fail with DuplicateSubnetsInSameZone
  # (https://docs.aws.amazon.com/vpc/latest/privatelink/create-interface-endpoint.html: "You can
  # select one subnet per Availability Zone"; https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVpcEndpoint.html).
  # vpc_endpoints.endpoint_subnet_ids names them (checked below: one per zone); left out, the
  # first (by ID) of the task subnets in each zone serves that zone's tasks.
  endpoint_subnet_candidates = var.vpc_endpoints == null ? [] : (
  var.vpc_endpoints.endpoint_subnet_ids != null ? var.vpc_endpoints.endpoint_subnet_ids : var.subnet_ids)
  endpoint_subnets_by_zone = { for s in data.aws_subnet.endpoint_candidates : s.availability_zone => s.id... }
  endpoint_subnet_ids = (var.vpc_endpoints == null ? [] : var.vpc_endpoints.endpoint_subnet_ids != null ?
  var.vpc_endpoints.endpoint_subnet_ids : [for zone, ids in local.endpoint_subnets_by_zone : sort(ids)[0]])
}

data "aws_subnet" "endpoint_candidates" {
  for_each = toset(local.endpoint_subnet_candidates)
  id       = each.value
}

resource "aws_security_group" "endpoints" {
  count       = var.vpc_endpoints == null ? 0 : 1
  name        = "${var.name_prefix}-endpoints"
  description = "HTTPS from the runner tasks to the VPC endpoints"
  vpc_id      = var.vpc_endpoints.vpc_id
}

# A rule of its own (never inline beside separate rules: see portal.tf)
resource "aws_vpc_security_group_ingress_rule" "endpoints_from_tasks" {
  for_each                     = var.vpc_endpoints == null ? toset([]) : toset(var.security_group_ids)
  security_group_id            = aws_security_group.endpoints[0].id
  description                  = "HTTPS from the runner tasks"
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
  referenced_security_group_id = each.value
}

resource "aws_vpc_security_group_ingress_rule" "endpoints_from_portal" {
  count                        = local.with_portal_endpoints ? 1 : 0
  security_group_id            = aws_security_group.endpoints[0].id
  description                  = "HTTPS from the portal's tasks"
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
  referenced_security_group_id = aws_security_group.portal[0].id
}

resource "aws_vpc_endpoint" "interface" {
  for_each            = toset(local.interface_endpoints)
  vpc_id              = var.vpc_endpoints.vpc_id
  service_name        = "com.amazonaws.${local.region}.${each.value}"
  vpc_endpoint_type   = "Interface"
  subnet_ids          = local.endpoint_subnet_ids
  security_group_ids  = [aws_security_group.endpoints[0].id]
  private_dns_enabled = true
  lifecycle {
    precondition {
      condition     = length(local.endpoint_subnets_by_zone) == length(local.endpoint_subnet_ids)
      error_message = "vpc_endpoints.endpoint_subnet_ids: at most one subnet per Availability Zone (CreateVpcEndpoint refuses two: DuplicateSubnetsInSameZone)."
    }
  }
}

resource "aws_vpc_endpoint" "s3" {
  count             = var.vpc_endpoints == null ? 0 : 1
  vpc_id            = var.vpc_endpoints.vpc_id
  service_name      = "com.amazonaws.${local.region}.s3"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = var.vpc_endpoints.route_table_ids
}

resource "aws_vpc_endpoint" "dynamodb" {
  count             = local.with_portal_endpoints ? 1 : 0
  vpc_id            = var.vpc_endpoints.vpc_id
  service_name      = "com.amazonaws.${local.region}.dynamodb"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = var.vpc_endpoints.route_table_ids
}
