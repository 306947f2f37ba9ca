"""The runtime's environment is one contract (contract/environment.py): the base module's Lambda
functions and the portal's task set exactly the names their code reads, and only that module
spells them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import base_module as bm
from jobplane.contract import environment as E
from jobplane.contract.environment import MissingSetting, RuntimeEnvironment
from jobplane.platform.control import Deployment

SRC = Path(__file__).resolve().parents[1] / "src" / "jobplane"


def test_each_lambda_function_gets_exactly_the_names_its_handler_reads() -> None:
    functions = bm.module()["resource"]["aws_lambda_function"]
    seen = {}
    for name, body in functions.items():
        handler = body["handler"]
        assert handler in E.FUNCTIONS, f"aws_lambda_function.{name}: {handler} is not in contract/environment.py"
        variables = {k for k in body["environment"][0]["variables"] if k != "__inline_comments__"}
        assert variables == E.FUNCTIONS[handler], f"aws_lambda_function.{name}"
        seen[handler] = name
    assert set(seen) == set(E.FUNCTIONS), "a handler in the contract that no function runs"


def test_the_portal_task_gets_exactly_the_portal_names() -> None:
    portal = (bm.MODULE / "portal.tf").read_text()
    names = set(re.findall(r'\{ name = "([A-Z_]+)", value', portal)) | set(
        re.findall(r'secrets = \[\{ name = "([A-Z_]+)"', portal))
    assert names == E.PORTAL_TASK


def test_no_module_but_the_contract_spells_a_variable_name() -> None:
    """A handler that wrote "JOBPLANE_TABLE" itself could drift from the Terraform again."""
    spelled = {getattr(E, n) for n in dir(E) if n.isupper() and isinstance(getattr(E, n), str)
               and getattr(E, n).startswith("JOBPLANE_")}
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "environment.py" and path.parent.name == "contract":
            continue
        text = path.read_text()
        offenders += [f"{path.relative_to(SRC)}: {n}" for n in spelled if f'"{n}"' in text or f"'{n}'" in text]
    assert not offenders


def test_the_environment_is_read_once_into_a_deployment() -> None:
    env = RuntimeEnvironment.from_environment({
        E.TABLE: "jobplane", E.TOPIC_ARN: "arn:aws:sns:eu-west-1:123456789012:jobplane-events",
        E.ACCOUNT_ID: "123456789012", E.REGION: "eu-west-1", E.CATALOG: "s3://bucket/catalog/",
        E.EXECUTION_RETENTION_DAYS: "30", E.DEFAULT_CHANNEL: "", "HOME": "/root"})
    deployment = Deployment.from_environment(env)
    assert (deployment.table, deployment.region, deployment.account_id, deployment.catalog_path) == \
        ("jobplane", "eu-west-1", "123456789012", "s3://bucket/catalog/")
    assert deployment.name_prefix == "jobplane" and deployment.log_group is None
    assert env.execution_retention_days == 30
    assert env.optional(E.DEFAULT_CHANNEL) is None  # Terraform's "" for an unset variable
    assert "HOME" not in env.values
    with pytest.raises(MissingSetting, match="JOBPLANE_LOG_GROUP is not set"):
        env.required(E.LOG_GROUP)
    with pytest.raises(ValueError, match="whole number"):
        RuntimeEnvironment({E.EXECUTION_RETENTION_DAYS: "thirty"}).execution_retention_days
    with pytest.raises(ValueError, match="team to channel"):
        RuntimeEnvironment({E.TEAM_CHANNELS: '["billing"]'}).team_channels
