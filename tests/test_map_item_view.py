"""A map item's own retries on its view (issue 62, part 1: every fault visible on its attempt):
a map item's Task retries a throttled RunTask itself, and on AWS those tries are only in the
item's child execution's history. The item view (ControlPlane.item, the API's
/api/executions/{e}/items/{map}/{index} and its page) reads them from there, through the same
GetExecutionHistory as on AWS (the local engine keeps each child's history: moto patch
map_child_executions), with the runner as a real subprocess."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import Repo, served
from jobplane.contract import execution_input
from jobplane.contract.config import load_config
from jobplane.platform.control import ControlPlane, NotFound
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.local.faults import ECS_CAPACITY, detail_of

JOB = "item-view-fanout"
FANOUT = """\
local jp = import 'jobplane.libsonnet';
{
  name: '%s',
  team: 'billing',
  steps: [
    jp.map('close-all',
           items=jp.python('tenants', 'sample_apps.fanout:list_tenants'),
           each=jp.python('close-tenant', 'sample_apps.fanout:close_month', opts={ retry: { attempts: 2, interval: 1 } }),
           opts={ max_concurrency: 2, tolerated_failures: 1 }),
  ],
}
""" % JOB


@pytest.fixture(scope="module")
def fan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane, Path]]:
    root = tmp_path_factory.mktemp("repo")
    repo = Repo(root)
    repo.write(f"jobs/billing/{JOB}.jsonnet", FANOUT)
    with served(repo) as (aws, control):
        yield aws, control, root


def test_an_items_throttled_and_refused_tries_are_on_its_view_with_the_retry(
        fan: tuple[LocalAWS, ControlPlane, Path], faults: Any) -> None:
    from fastapi.testclient import TestClient

    from portal_kit import READER, as_user
    from jobplane.portal.app import create_app
    from jobplane.portal.settings import AuthSettings, PortalSettings

    aws, control, root = fan

    def item(index: int) -> Any:
        return lambda p: detail_of("ecs", "RunTask", dict(p)) == f"jobplane:{JOB} close-tenant #{index}"

    # item 1: RunTask throttled twice (its Task's own retries); item 2: no capacity once (the
    # step's infrastructure retry); item 3 fails twice by itself (its attempts): FAILED, tolerated
    faults.script("ecs", "RunTask", "ThrottlingException", times=2, match=item(1))
    faults.script("ecs", "RunTask", ECS_CAPACITY, times=1, match=item(2))
    arn = aws.start(JOB, execution_input.manual("test", {"count": 4, "fail_always": ["t-0003"]}))
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"  # a hang guard, not a time assert
    name = arn.rsplit(":", 1)[1]
    assert faults.count("ecs", "RunTask") == 3, faults.injected

    one = control.item(name, "close-all", 1)
    assert one.history == "read" and one.outcome.status == "SUCCEEDED" and one.outcome.child
    rows = [(a.step, a.attempt, a.outcome, a.error) for a in one.attempts]
    throttled = [i for i, r in enumerate(rows) if r[3] and "ECS.ThrottlingException" in r[3]]
    assert len(throttled) == 2, rows  # each throttled try, with its error ...
    assert rows[-1][2] == "succeeded" and throttled[-1] < len(rows) - 1, rows  # ... and the retry after it
    two = control.item(name, "close-all", 2)
    refused = [i for i, a in enumerate(two.attempts) if a.error and "AmazonECS.Unknown" in a.error]
    assert len(refused) == 1 and two.attempts[-1].outcome == "succeeded", two.attempts
    three = control.item(name, "close-all", 3)
    assert three.outcome.status == "FAILED" and [a.outcome for a in three.attempts] == ["failed", "failed"]
    assert all(a.error for a in three.attempts) and [a.attempt for a in three.attempts] == [1, 2]
    zero = control.item(name, "close-all", 0)
    assert [a.outcome for a in zero.attempts] == ["succeeded"]  # met nothing: one try
    with pytest.raises(NotFound):
        control.item(name, "close-all", 9)

    config = load_config(root)
    settings = PortalSettings.from_config(config, control.deployment, AuthSettings(
        mode="trusted-header", header="X-Forwarded-Email", proxy_secret="proxy-secret-for-tests-0123456789"),
        base_url="http://testserver")
    app = create_app(replace(settings, allowed_hosts=frozenset({"testserver"})), control)
    with TestClient(app) as client:
        got = client.get(f"/api/executions/{name}/items/close-all/1", headers=as_user(READER))
        assert got.status_code == 200, got.text
        body = got.json()
        assert body["status"] == "SUCCEEDED" and body["history"] == "read" and body["child"] == one.outcome.child
        assert [t["error"] for t in body["tries"] if t.get("error")] == [one.attempts[i].error for i in throttled]
        assert client.get(f"/api/executions/{name}/items/close-all/9", headers=as_user(READER)).status_code == 404
        page = client.get(f"/executions/{name}/items/close-all/1", headers=as_user(READER)).text
        assert "Item 1 of map close-all" in page and page.count("ECS.ThrottlingException") >= 2
        run_page = client.get(f"/executions/{name}?job={JOB}", headers=as_user(READER)).text
        assert f'href="/executions/{name}/items/close-all/3"' in run_page  # the failed item links to its tries
