"""The example job's expectations under `jobplane dev` (issue 67 part 3, docs/expectations.md):
jobs/billing/invoice-run.jsonnet as the repository ships it, its steps run by the real runner.
A run that loads no rows fails its load step after its retry, with the check's words; a tenant
invoiced for nothing fails its item, which the failure alert (through the dev platform's alert
feed to a Slack stand-in) lists."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT
from devkit import make_repo
from ledger_kit import wait_until
from slack_receiver import Receiver, serving

from jobplane.contract import execution_input
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform

JOB = "invoice-run"


@pytest.fixture(scope="module")
def slack() -> Iterator[Receiver]:
    yield from serving()


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, slack: Receiver) -> Iterator[DevPlatform]:
    tmp = tmp_path_factory.mktemp("expect-dev")
    repo = make_repo(tmp / "repo")
    for other in (repo.path / "jobs").glob("*/*.jsonnet"):
        other.unlink()
    repo.write(f"jobs/billing/{JOB}.jsonnet", (ROOT / "jobs" / "billing" / f"{JOB}.jsonnet").read_text())
    toml = repo.path / "jobplane.toml"
    # the example's code (examples/billing/invoicing.py) importable by the runner, its files under tmp
    toml.write_text(toml.read_text().replace('PYTHONPATH = "', f'EXAMPLES_DATA_DIR = "{tmp / "data-examples"}"\n'
                                             f'PYTHONPATH = "{ROOT}:', 1))
    p = DevPlatform(load_config(repo.path), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600, catch_up_interval=3600, webhook_url=slack.url).start()
    yield p
    p.stop()


def _run(platform: DevPlatform, **params: object) -> tuple[str, str]:
    aws = platform.aws
    arn = aws.start(JOB, execution_input.manual("dev@localhost", overrides=params))
    ex = aws.wait(arn, timeout=600)  # a hang guard
    aws.wait_reconciled(arn, timeout=600)
    return arn.rsplit(":", 1)[1], ex.status


def _posts(slack: Receiver, execution: str) -> list[str]:
    return [json.dumps(p) for p in list(slack.posts) if execution in json.dumps(p)]


def test_a_run_that_loads_no_rows_fails_as_its_expectation_says(platform: DevPlatform, slack: Receiver) -> None:
    name, status = _run(platform, tenants=0)
    assert status == "FAILED"
    record = platform.control.execution(name, JOB)
    assert record.failed_step == "load-usage"
    steps = record.record.steps if record.record else None
    assert steps is not None and steps["load_usage"]["n"] == 2  # its retry applied
    assert steps["load_usage"]["expect"]["words"] == "rows_loaded = 0, expected >= 1: fail"
    wait_until(lambda: any("FAILED" in p for p in _posts(slack, name)))


def test_a_tenant_invoiced_for_nothing_fails_its_item_and_the_alert_lists_it(platform: DevPlatform,
                                                                              slack: Receiver) -> None:
    name, status = _run(platform, tenants=3, empty=["tenant-002"])
    assert status == "FAILED"
    assert [(o.item, o.status) for o in platform.control.items(name)] == [
        ("tenant-001", "SUCCEEDED"), ("tenant-002", "FAILED"), ("tenant-003", "SUCCEEDED")]
    wait_until(lambda: any("invoices_sent = 0, expected &gt;= 1: fail" in p or "invoices_sent = 0, expected >= 1: fail" in p
                           for p in _posts(slack, name)))
    assert any("tenant-002" in p for p in _posts(slack, name))


def test_a_run_that_invoices_everyone_succeeds_with_each_check_recorded(platform: DevPlatform) -> None:
    name, status = _run(platform, tenants=2)
    assert status == "SUCCEEDED"
    view = platform.control.execution(name, JOB)
    steps = view.record.steps if view.record else None
    assert steps is not None
    assert [c["outcome"] for c in steps["load_usage"]["expect"]["checks"]] == ["pass"]
    [summary] = steps["summarize"]["expect"]["checks"]
    assert (summary["value"], summary["outcome"]) == (8, "skipped")  # no earlier months yet: never a false alarm
    assert summary["note"].endswith("a baseline needs 5")
