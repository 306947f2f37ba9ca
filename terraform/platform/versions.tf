terraform {
  # S3 state locking without DynamoDB (`use_lockfile`, which the compiled backends set) needs 1.10
  # (https://developer.hashicorp.com/terraform/language/backend/s3)
  required_version = ">= 1.10"
  required_providers {
    aws = {
      source = "hashicorp/aws"
      # a major version of the provider may change resources' behaviour: a new one is adopted
      # deliberately, not by the next init
      version = "~> 6.0"
    }
  }
}
