"""Month-end fan-out (issue 52, Measured): one job over N tenants (default 1,000) with
``max_concurrency`` 50, 1% of the tenants failing their first attempt and 0.5% failing every
attempt, under ``jobplane dev`` (started as a subprocess, as ``make dev`` does and as
bench/dev_e2e.py does, on free ports so two benches never collide), triggered with
``jobplane run``; each item is a real runner subprocess of the local ECS agent.

    .venv/bin/python bench/map_month_end.py [-n 1000] [--concurrency 50]

Prints: the run's wall time (``jobplane run``, the CLI process from start to exit: it starts
the run and follows it to the end) and status; every item accounted for (one record each:
succeeded, failed, retried), the permanent failures listed; the state transitions: the run's
own (its history, as the reconciler counts them) and the items' (each child's path from its
record's attempts: 4 + 4 per retry, compiler/map_cost.py; moto keeps no child histories), per
item; then a re-run of only the failed items (``jobplane rerun --failed-items``): that it ran
only them, and its wall time. The records are read through the control plane that `jobplane
dev` describes in its data directory (devserver/runtime.py ``control_for``), the client code
the CLI and the portal use.
"""

from __future__ import annotations

import argparse
import compileall
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dev_subprocess import BIN, ROOT, billing_project, dev_running  # noqa: E402

JOB = "month-end-bench"
DEFINITION = """\
local jp = import 'jobplane.libsonnet';
{
  name: '%(job)s',
  team: 'billing',
  schedule: jp.manual,
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
    # a stop (timeout, kill) ends `jobplane dev` too: the finally below runs
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    compileall.compile_dir(ROOT / "src" / "jobplane", quiet=1)  # as pip install does: bench/dev_e2e.py
    work = Path(tempfile.mkdtemp(prefix="jobplane-bench-map-"))
    repo = billing_project(work / "repo", "benchmap",
                           {JOB: DEFINITION % {"job": JOB, "n": n, "concurrency": args.concurrency}})
    data = work / "data"
    log = work / "dev.log"
    print(f"{n} tenants, max_concurrency {args.concurrency}, {len(fail_once)} fail once, {len(fail_always)} always; "
          f"jobplane dev's output: {log}")
    with dev_running(repo, data, log) as env:
        measure(env, data, n, args.concurrency, fail_once, fail_always)


def measure(env: dict[str, str], data: Path, n: int, concurrency: int, fail_once: list[str],
            fail_always: list[str]) -> None:
    from jobplane.compiler.map_cost import PER_ITEM, PER_RETRY
    from jobplane.devserver.runtime import control_for
    from jobplane.platform.map_records import progress
    from jobplane.platform.timeline import history

    control = control_for(data)
    started = time.perf_counter()
    run = subprocess.run([str(BIN / "jobplane"), "run", JOB, "-p", f"count={n}", "-p", f"fail_once={json.dumps(fail_once)}",
                          "-p", f"fail_always={json.dumps(fail_always)}", "--timeout", "3600"],
                         env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    name = next(line.split(": ", 1)[1] for line in run.stdout.splitlines() if line.startswith(f"started {JOB}: "))
    record = control.repo.execution(name)
    assert record is not None, run.stdout + run.stderr
    outcomes = control.items(name)
    [p] = progress(outcomes, {"close-all": n})
    own = sum(1 for e in history(control.sfn, record.execution_arn) if e["type"].endswith("StateEntered"))
    items_t = sum(PER_ITEM + PER_RETRY * (o.attempts - 1) for o in outcomes)
    print(f"`jobplane run` exited {run.returncode}: run {record.status} in {wall:.1f} s "
          f"({wall / n * 1000:.0f} ms per item at {concurrency} at once)")
    print(f"records: {len(outcomes)} of {n} items, indexes "
          f"{'complete' if [o.index for o in outcomes] == list(range(n)) else 'INCOMPLETE'}; "
          f"{p.succeeded} succeeded ({sum(1 for o in outcomes if o.retried and o.status == 'SUCCEEDED')} after a retry), "
          f"{p.failed} failed")
    failed = [o.item for o in outcomes if o.status != "SUCCEEDED"]
    print(f"failed items: {', '.join(map(str, failed))} (expected {', '.join(fail_always)}: "
          f"{'same' if failed == fail_always else 'DIFFERENT'})")
    print(f"state transitions: run {own} (history), items {items_t} (4 + 4 per retry each) = "
          f"{(own + items_t) / n:.2f} per item, ${(own + items_t) * 0.025 / 1000:.3f} for the run")

    started = time.perf_counter()
    rerun = subprocess.run([str(BIN / "jobplane"), "rerun", name, "--failed-items", "-p", "fail_always=[]",
                            "--reason", "bench"], env=env, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    # "started <name>, a re-run of <execution> (...)"
    again = next(line.split()[1].rstrip(",") for line in rerun.stdout.splitlines() if line.startswith("started "))
    deadline = time.monotonic() + 3600  # a hang guard
    while (second := control.repo.execution(again)) is None or second.status == "RUNNING":
        assert time.monotonic() < deadline, f"{again} did not end"
        time.sleep(0.2)
    wall2 = time.perf_counter() - started
    items = control.items(again)
    entered = {e.get("stateEnteredEventDetails", {}).get("name") for e in history(control.sfn, second.execution_arn)}
    print(f"re-run of failed items (`jobplane rerun --failed-items`) {second.status} in {wall2:.1f} s: "
          f"{len(items)} items ran ({', '.join(str(o.item) for o in items)}), all "
          f"{'SUCCEEDED' if all(o.status == 'SUCCEEDED' for o in items) else 'NOT succeeded'}; "
          f"items step ran again: {'tenants' in entered}")


if __name__ == "__main__":
    main()
