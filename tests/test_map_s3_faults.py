"""A jp.map's own reads and writes of S3 under S3's documented throttling (issue 62): the Map's
ItemReader (GetObject of the run's list) and ResultWriter (PutObject of the results and the
manifest) are calls of the Step Functions service to S3, which may answer ``503 SlowDown``
(https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html); a throttled read or write
must not fail the run (the storm proof's spurious FAILED run)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conftest import Repo, served
from jobplane.contract import execution_input
from jobplane.platform.control import ControlPlane
from jobplane.platform.local.engine import LocalAWS

JOB = "s3-throttled-fanout"
FANOUT = """\
local jp = import 'jobplane.libsonnet';
{
  name: '%s',
  team: 'billing',
  steps: [
    jp.map('close-all',
           items=jp.python('tenants', 'sample_apps.fanout:list_tenants'),
           each=jp.python('close-tenant', 'sample_apps.fanout:close_month'),
           opts={ max_concurrency: 2 }),
  ],
}
""" % JOB


@pytest.fixture(scope="module")
def fan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane]]:
    root = tmp_path_factory.mktemp("repo")
    repo = Repo(root)
    repo.write(f"jobs/billing/{JOB}.jsonnet", FANOUT)
    with served(repo) as (aws, control):
        yield aws, control


def _run(aws: LocalAWS) -> tuple[str, Any]:
    arn = aws.start(JOB, execution_input.manual("test", {"count": 4}))
    ex = aws.wait(arn, timeout=600)  # a hang guard, not a time assert
    aws.wait_reconciled(arn, timeout=600)
    return arn.rsplit(":", 1)[1], ex


@pytest.mark.parametrize(("operation", "prefix", "times"), [("GetObject", "map-items/", 2),
                                                             ("PutObject", "map-results/", 1)],
                         ids=["item-reader", "result-writer"])
def test_a_maps_throttled_s3_read_or_write_does_not_fail_the_run(fan: tuple[LocalAWS, ControlPlane], faults: Any,
                                                                operation: str, prefix: str, times: int) -> None:
    """The read is retried (no child has started); the export, which nothing reads, is let go
    once every item has ended (a retry of the Map would run every item again)."""
    aws, control = fan
    faults.script("s3", operation, "SlowDown", times=times, match=lambda p: str(p.get("Key", "")).startswith(prefix))
    name, ex = _run(aws)
    assert faults.count("s3", operation, "SlowDown") == times, faults.injected  # the storm blew where it was aimed
    assert ex.status == "SUCCEEDED", (ex.status, ex.error, (ex.cause or "")[:300])
    outcomes = control.items(name)
    assert [o.status for o in outcomes] == ["SUCCEEDED"] * 4
