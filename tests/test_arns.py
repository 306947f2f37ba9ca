"""ARNs are parsed and formatted by contract/arns.py alone: the resource part keeps its own colons
and slashes, and a value that is no ARN is refused, not indexed into."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobplane.contract import arns
from jobplane.contract.arns import Arn, ExecutionArn
from jobplane.contract.attempts import task_id
from jobplane.platform.control import Deployment

SRC = Path(__file__).resolve().parents[1] / "src" / "jobplane"


def test_an_execution_arn_reads_back_as_it_was_formatted() -> None:
    text = arns.execution_arn("eu-west-1", "123456789012", "jobplane-month-end-close", "run-1")
    assert text == "arn:aws:states:eu-west-1:123456789012:execution:jobplane-month-end-close:run-1"
    arn = ExecutionArn.parse(text)
    assert (arn.region, arn.account, arn.state_machine, arn.name) == \
        ("eu-west-1", "123456789012", "jobplane-month-end-close", "run-1")
    assert str(arn) == text and arns.execution_name(text) == "run-1"
    assert arn.job("jobplane") == "month-end-close"
    assert arn.job("other") is None and arn.job("jobplane-month-end-close") is None
    gov = ExecutionArn.parse("arn:aws-us-gov:states:us-gov-west-1:123456789012:execution:jp-a:b")
    assert gov.partition == "aws-us-gov" and str(gov).startswith("arn:aws-us-gov:states:")


def test_the_deployment_formats_its_arns_with_the_helpers() -> None:
    d = Deployment(table="t", topic_arn="arn:aws:sns:us-east-1:1:x", region="us-east-1", account_id="1")
    assert d.state_machine_arn("nightly") == "arn:aws:states:us-east-1:1:stateMachine:jobplane-nightly"
    assert ExecutionArn.parse(d.execution_arn("nightly", "abc")).job("jobplane") == "nightly"


@pytest.mark.parametrize("text", [
    "", "run-1", "arn:aws:states", "arn:aws:sns:us-east-1:123456789012:topic",
    "arn:aws:states:us-east-1:123456789012:stateMachine:jobplane-x",
    "arn:aws:states:us-east-1:123456789012:execution:jobplane-x",
    "arn:aws:states:us-east-1:123456789012:execution:jobplane-x:a:b",
    "nra:aws:states:us-east-1:123456789012:execution:jobplane-x:a"])
def test_anything_else_is_not_an_execution_arn(text: str) -> None:
    with pytest.raises(ValueError, match="not a"):
        ExecutionArn.parse(text)


def test_a_resource_name_is_after_its_last_colon_or_slash() -> None:
    assert arns.resource_name("arn:aws:sqs:us-east-1:123456789012:jobplane-dlq") == "jobplane-dlq"
    assert arns.resource_name("arn:aws:ecs:us-east-1:123456789012:task/jobplane/0f1e2d") == "0f1e2d"
    assert task_id("arn:aws:ecs:us-east-1:123456789012:task/jobplane/0f1e2d") == "0f1e2d"
    assert task_id("0f1e2d") == "0f1e2d"  # an id as it is (the local agent's)
    assert Arn.parse("arn:aws:iam::123456789012:role/a/b").account == "123456789012"
    assert arns.service_of("arn:aws:lambda:us-east-1:1:function:f") == "lambda"
    assert arns.service_of("lambda") is None
    with pytest.raises(ValueError):
        arns.resource_name("jobplane-dlq")


def test_no_other_module_splits_an_arn_on_its_colons() -> None:
    pattern = re.compile(r"""(arn|holder|dlq)\w*\.r?split\(\s*["']:["']""")
    offenders = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                 if p.name != "arns.py" and pattern.search(p.read_text())]
    assert not offenders
