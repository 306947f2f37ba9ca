"""Put the portal's OIDC client secret into its load balancer rule, so that Terraform never holds
it (issue 41, item 10; issue 40, item 1).

The ALB's authenticate-oidc action takes the client secret itself, and the AWS provider's
``client_secret`` is a plain required argument: read from Secrets Manager by Terraform, it sat
in the base root's state, which the pull request's plan role reads, and the plan role had to
read the secret too. Now Terraform creates the rule with a placeholder that it then ignores
(terraform/platform/portal.tf), and ``aws_lambda_invocation`` runs this handler at each apply
that creates the rule, changes its sign-in settings, or finds a new version of the secret: it
reads the secret with its own role and writes it into the rule with ModifyRule. The rule and
the secret come from the function's environment, never from the event, so whoever may invoke
it can only make it do this one thing. It returns the secret's version, never its value (the
invocation's result is kept in the state).

AWS's DescribeRules omits a rule's client secret, and ModifyRule replaces the whole action list,
so the actions are read back and sent again with the secret set on the authenticate-oidc one
(https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AuthenticateOidcActionConfig.html).
"""

from __future__ import annotations

from jobplane.contract.environment import PORTAL_OIDC_SECRET_ARN, PORTAL_RULE_ARN, RuntimeEnvironment
from jobplane.contract.types import Client, JsonObject


def set_client_secret(elbv2: Client, secretsmanager: Client, rule_arn: str, secret_arn: str) -> dict[str, str]:
    secret = secretsmanager.get_secret_value(SecretId=secret_arn)
    rules = elbv2.describe_rules(RuleArns=[rule_arn])["Rules"]
    if len(rules) != 1:
        raise RuntimeError(f"{rule_arn}: no such rule")
    actions = rules[0]["Actions"]
    oidc = [a for a in actions if a.get("Type") == "authenticate-oidc"]
    if len(oidc) != 1:
        raise RuntimeError(f"{rule_arn}: expected one authenticate-oidc action, found {len(oidc)}")
    config = dict(oidc[0]["AuthenticateOidcConfig"])
    config.pop("UseExistingClientSecret", None)
    config["ClientSecret"] = secret["SecretString"]
    oidc[0]["AuthenticateOidcConfig"] = config
    elbv2.modify_rule(RuleArn=rule_arn, Actions=actions)
    return {"rule": rule_arn, "secret_version": secret["VersionId"]}


def handler(event: JsonObject, context: object) -> dict[str, str]:
    import boto3

    env = RuntimeEnvironment.from_environment()
    return set_client_secret(boto3.client("elbv2"), boto3.client("secretsmanager"), env.required(PORTAL_RULE_ARN),
                             env.required(PORTAL_OIDC_SECRET_ARN))
