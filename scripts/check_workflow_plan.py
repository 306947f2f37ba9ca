"""The base root planned as the pipeline plans it: with the workflow's own environment and no
other input, do the settings committed in jobplane.toml's [deploy] reach the plan? (issue 41,
item 1: they lived in a git-ignored terraform.tfvars, and the first CI apply reset them.)

    .venv/bin/python scripts/check_workflow_plan.py      # run by `make tfcheck`

Reads deploy/github-actions/jobplane.yml: the TF_VAR_* variables its plan and apply steps set
(repository variables filled with sample values) and the terraform commands they run, which
must pass no -var or -var-file (every other value comes from the root's own files). Then
compiles a copy of this repository whose jobplane.toml sets every [deploy] value (the portal
from deploy/portal.example.tfvars.json, VPC endpoints, the Slack secret, the portal URL) and
plans its base root with tfcheck's plan.py in that environment alone. Fails unless the plan
holds each value: the endpoints, the load balancer and listener rule of the portal, the Lambda
environment with the Slack secret and the portal URL.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
# the Makefile's TFCHECK (relative to the repository root), or where it lies beside the repository
TFCHECK = (ROOT / os.environ["TFCHECK"]).resolve() if os.environ.get("TFCHECK") else ROOT.parent / "shared" / "tools" / "tfcheck"
WORKFLOW = ROOT / "deploy" / "github-actions" / "jobplane.yml"
SAMPLES = {  # what a repository's variables hold (docs/deploy.md)
    "vars.AWS_REGION": "us-east-1",
    "vars.JOBPLANE_SUBNET_IDS": '["subnet-0123456789abcdef0"]',
    "vars.JOBPLANE_SECURITY_GROUP_IDS": '["sg-0123456789abcdef0"]',
    "vars.JOBPLANE_RUNNER_REPOSITORY": "123456789012.dkr.ecr.us-east-1.amazonaws.com/jobplane-runner",
    # the image the plan job reads as deployed, and the one the apply job builds (their steps' outputs)
    "steps.deployed.outputs.image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/jobplane-runner:c1-0123456789abcdef",
    "steps.image.outputs.image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/jobplane-runner:c1-0123456789abcdef",
}
REQUIRED = {"region", "subnet_ids", "security_group_ids", "runner_image"}
SLACK = "arn:aws:secretsmanager:us-east-1:123456789012:secret:jobplane/slack-AbC123"
PORTAL_URL = "https://jobs.example.com"


def fill(value: str) -> str:
    def one(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        return SAMPLES.get(expr, "0123456789abcdef0123456789abcdef01234567" if expr.startswith("github.") else "")
    return re.sub(r"\$\{\{(.*?)\}\}", one, str(value))


def workflow_environment() -> tuple[dict[str, str], list[str]]:
    """The TF_VAR_* of each step that runs terraform, and the commands, checked for -var."""
    flow = yaml.safe_load(WORKFLOW.read_text())
    problems, env = [], {}
    top = {k: fill(v) for k, v in flow.get("env", {}).items()}
    for job_name in ("plan", "apply"):
        for step in flow["jobs"][job_name]["steps"]:
            run = step.get("run", "")
            commands = [line.strip() for line in run.splitlines() if re.search(r"\bterraform\b.*\b(plan|apply)\b", line)]
            if not commands:
                continue
            step_env = {**top, **{k: fill(v) for k, v in step.get("env", {}).items()}}
            names = {k.removeprefix("TF_VAR_") for k in step_env if k.startswith("TF_VAR_")}
            if names != REQUIRED:
                problems.append(f"{job_name} / {step['name']}: passes TF_VAR_ {sorted(names)}, expected exactly "
                                f"{sorted(REQUIRED)} (the optional values come from the committed [deploy])")
            for command in commands:
                if "-var" in command:
                    problems.append(f"{job_name} / {step['name']}: {command!r} passes variables on the command line")
            if job_name == "plan":
                env = {k: v for k, v in step_env.items() if k.startswith("TF_VAR_")}
    if not env:
        problems.append("the plan job runs no terraform plan")
    return env, problems


def deploy_section() -> str:
    portal = json.loads((ROOT / "deploy" / "portal.example.tfvars.json").read_text())["portal"]
    lines = ["", "[deploy]", f"portal_url = {json.dumps(PORTAL_URL)}", f"slack_webhook_secret_arn = {json.dumps(SLACK)}",
             'vpc_endpoints = { vpc_id = "vpc-0123456789abcdef0", route_table_ids = ["rtb-0123456789abcdef0"] }',
             # values unlike any default, so the plan shows each was read
             "runner_images_kept = 73", "execution_retention_days = 421", "log_retention_days = 545",
             'slow_check_schedule = "rate(3 minutes)"',
             "", "[deploy.portal]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in portal.items() if k not in ("oidc", "admins", "team_members")]
    lines += ["", "[deploy.portal.oidc]"] + [f"{k} = {json.dumps(v)}" for k, v in portal["oidc"].items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    env, problems = workflow_environment()
    for p in problems:
        print(f"workflow: {p}")
    if problems:
        return 1
    with tempfile.TemporaryDirectory(prefix="jobplane-workflow-plan-") as tmp:
        copy = Path(tmp) / "repo"
        for rel in ("jobs", "terraform/platform", "examples"):
            shutil.copytree(ROOT / rel, copy / rel, ignore=shutil.ignore_patterns("__pycache__"))
        (copy / "build").mkdir()
        shutil.copy(ROOT / "build" / "jobplane-lambda.zip", copy / "build" / "jobplane-lambda.zip")
        (copy / "jobplane.toml").write_text((ROOT / "jobplane.toml").read_text() + deploy_section())
        subprocess.run([str(Path(sys.executable).parent / "jobplane"), "--root", str(copy), "compile"], check=True,
                       stdout=subprocess.DEVNULL)
        clean = {k: v for k, v in os.environ.items() if not k.startswith("TF_VAR_")}
        plan = subprocess.run([str(TFCHECK / "plan.py"), "--tree", str(copy / "terraform"), "--show",
                               str(copy / "terraform" / "jobs" / "base")], env={**clean, **env},
                              capture_output=True, text=True)
        out = plan.stdout + plan.stderr
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    expected = {
        "the VPC endpoints": "module.platform.aws_vpc_endpoint.",
        "the portal's endpoints (Step Functions, Scheduler, DynamoDB)": 'aws_vpc_endpoint.interface["states"]',
        "the portal's Scheduler endpoint": 'aws_vpc_endpoint.interface["scheduler"]',
        "the portal's DynamoDB endpoint": "module.platform.aws_vpc_endpoint.dynamodb",
        "the endpoints admitting the portal's tasks": "module.platform.aws_vpc_security_group_ingress_rule.endpoints_from_portal",
        "the portal's load balancer": "module.platform.aws_lb.portal",
        "the portal's sign-in rule": "authenticate_oidc",
        "the Slack secret in the notifier's environment": SLACK,
        "the portal URL in the alerts' links": PORTAL_URL,
        "the runner images kept": "+ countNumber = 73",
        "the execution records' retention": '"421"',
        "the logs' retention": re.compile(r"retention_in_days += 545"),
        "the periodic check's schedule": "rate(3 minutes)",
    }
    missing = [what for what, text in expected.items()
               if (text.search(out) is None if isinstance(text, re.Pattern) else text not in out)]
    print(f"workflow plan of the base root (TF_VAR_ {', '.join(sorted(k[7:] for k in env))} only): {summary}")
    for what in missing:
        print(f"  missing from the plan: {what}")
    if plan.returncode != 0 or missing:
        if plan.returncode != 0:
            print(out[-4000:])
        return 1
    print("  each [deploy] setting is in the plan: " + ", ".join(expected))
    return 0


if __name__ == "__main__":
    sys.exit(main())
