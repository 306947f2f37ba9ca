"""Month-end fan-out (issue 52, Measured): one job over N tenants (default 1,000) with
``max_concurrency`` 50, 1% of the tenants failing their first attempt and 0.5% failing every
attempt, on the embedded local AWS in server mode (what ``jobplane dev`` runs), each item a
real runner subprocess.

    .venv/bin/python bench/map_month_end.py [-n 1000] [--concurrency 50]

Prints: the run's wall time and status; every item accounted for (one record each: succeeded,
failed, retried), the permanent failures listed; the state transitions: the run's own (its
history, as the reconciler counts them) and the items' (each child's path from its record's
attempts: 4 + 4 per retry, compiler/map_cost.py; moto keeps no child histories), per item; then
a re-run of only the failed items: that it ran only them, and its wall time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import Repo  # noqa: E402  (the tests' scratch repository: jobplane.toml and the library)

from jobplane.cli.local import ENGINE_LOG, engine_log_to_file  # noqa: E402
from jobplane.compiler.map_cost import PER_ITEM, PER_RETRY  # noqa: E402
from jobplane.contract import execution_input  # noqa: E402
from jobplane.platform.control import ControlPlane, Deployment  # noqa: E402
from jobplane.platform.local.engine import LocalAWS  # noqa: E402
from jobplane.platform.map_records import progress  # noqa: E402
from jobplane.platform.timeline import history  # noqa: E402

JOB = "month-end-bench"
DEFINITION = """\
local jp = import 'jobplane.libsonnet';
{
  name: '%(job)s',
  team: 'billing',
  params: { count: %(n)d, fail_once: [], fail_always: [] },
  steps: [
    jp.map('close-all',
           items=jp.python('tenants', 'sample_apps.fanout:list_tenants'),
           each=jp.python('close-tenant', 'sample_apps.fanout:close_month',
                          opts={ retry: { attempts: 2, interval: 1 } }),
           opts={ max_concurrency: %(concurrency)d, tolerated_failures: '1%%' }),
  ],
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=50)
    args = ap.parse_args()
    n = args.n
    tenants = [f"t-{i:04d}" for i in range(n)]
    fail_once = tenants[3::100]  # 1%
    fail_always = tenants[7::200]  # 0.5%
    work = Path(tempfile.mkdtemp(prefix="jobplane-bench-map-"))
    engine_log_to_file(work)
    print(f"{n} tenants, max_concurrency {args.concurrency}, {len(fail_once)} fail once, {len(fail_always)} always; "
          f"engine log: {work / ENGINE_LOG}")
    repo = Repo(work)
    repo.write(f"jobs/billing/{JOB}.jsonnet", DEFINITION % {"job": JOB, "n": n, "concurrency": args.concurrency})
    out = work / "out"
    assert repo.cli("compile", "--out", str(out)).exit_code == 0
    with LocalAWS(server_port=0, env={"PYTHONPATH": str(ROOT / "tests")}) as aws:
        aws.deploy_output(out)
        control = ControlPlane(Deployment(table=aws.resources["table_name"], topic_arn=aws.resources["topic_arn"],
                                          name_prefix=aws.prefix, endpoint_url=aws.endpoint_url, catalog_path=out,
                                          access_key_id=aws.credentials.access_key_id,
                                          secret_access_key=aws.credentials.secret_access_key))
        started = time.monotonic()
        arn = aws.start(JOB, execution_input.manual("bench", overrides={"count": n, "fail_once": fail_once,
                                                                        "fail_always": fail_always}))
        ex = aws.wait(arn, timeout=3600)
        wall = time.monotonic() - started
        name = arn.rsplit(":", 1)[1]
        outcomes = control.items(name)
        [p] = progress(outcomes, {"close-all": n})
        own = sum(1 for e in history(aws.client("stepfunctions"), arn) if e["type"].endswith("StateEntered"))
        items_t = sum(PER_ITEM + PER_RETRY * (o.attempts - 1) for o in outcomes)
        print(f"run {ex.status} in {wall:.1f} s ({wall / n * 1000:.0f} ms per item at {args.concurrency} at once)")
        print(f"records: {len(outcomes)} of {n} items, indexes {'complete' if [o.index for o in outcomes] == list(range(n)) else 'INCOMPLETE'}; "
              f"{p.succeeded} succeeded ({sum(1 for o in outcomes if o.retried and o.status == 'SUCCEEDED')} after a retry), "
              f"{p.failed} failed")
        failed = [o.item for o in outcomes if o.status != "SUCCEEDED"]
        print(f"failed items: {', '.join(map(str, failed))} (expected {', '.join(fail_always)}: "
              f"{'same' if failed == fail_always else 'DIFFERENT'})")
        print(f"state transitions: run {own} (history), items {items_t} (4 + 4 per retry each) = "
              f"{(own + items_t) / n:.2f} per item, ${(own + items_t) * 0.025 / 1000:.3f} for the run")
        started = time.monotonic()
        again = control.rerun_failed_items(name, "dev@localhost", reason="bench", params={"fail_always": []})
        again_arn = aws.state_machines[JOB].replace(":stateMachine:", ":execution:") + f":{again}"
        ex2 = aws.wait(again_arn, timeout=3600)
        wall2 = time.monotonic() - started
        rerun = control.items(again)
        print(f"re-run of failed items {ex2.status} in {wall2:.1f} s: {len(rerun)} items ran "
              f"({', '.join(str(o.item) for o in rerun)}), all {'SUCCEEDED' if all(o.status == 'SUCCEEDED' for o in rerun) else 'NOT succeeded'}; "
              f"items step ran again: {'tenants' in ex2.states_entered}")


if __name__ == "__main__":
    main()
