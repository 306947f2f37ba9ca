"""Issue 62's proof, shared by its test (tests/test_storm.py) and its bench (bench/storm.py): the
whole local platform (`jobplane dev`'s DevPlatform, in this process) under the fault profile
``storm`` (platform/local/fault_profiles.py: AWS's documented throttles and failures, at budgets a
laptop reaches, seeded), running

* every example job that runs by itself (jobs/: ECS steps of every kind, a parallel group, a
  Lambda step, an ``after`` job), with the example partner API answering every request (its own
  failures are not AWS's: the proof counts only what AWS does);
* a pooled ``jp.map`` of N tenants (pool ``tenant-db``) beside a second job on the same pool,
  both started together;
* the Lambda job again after its runner function went idle past its age (Inactive: its next
  invoke fails ``ResourceNotReadyException``, Lambda "function states").

What it measures (:class:`StormReport`): every run's end and record, every map item's record,
the pool's most slots held at once (from what each step's own process logged), every fault the
local AWS injected, and which of them the runs' attempts show with the retry taken (a top-level
step's on its run's timeline; a map item's on the item's tries, which the item view reads from its
child execution's history, as the portal's item page does).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobplane.contract.types import JsonObject

from conftest import ROOT, Repo
from test_pools_on_moto import from_log, most_at_once

TESTS = Path(__file__).resolve().parent
POOL, POOL_SIZE = "tenant-db", 3
MAP_JOB, NEIGHBOUR_JOB, LAMBDA_JOB = "storm-close", "storm-neighbour", "partner-api-sync"

#: the example jobs that start without params and need nothing from outside the machine
EXAMPLES = ("daily-sales-report", "month-end-close", "partner-api-sync", "weekly-cohort-export",
            "clear-expired-sessions")
#: started by daily-sales-report's success (its ``after`` rule)
AFTER = "archive-sales-report"

MAP_DEFINITION = """\
local jp = import 'jobplane.libsonnet';
{
  name: '%(map)s',
  team: 'billing',
  description: 'Closes every tenant under the shared tenant database pool (the storm proof).',
  schedule: jp.manual,
  policy: jp.policy.ALWAYS_RUN,
  pool: '%(pool)s',
  params: { count: %(n)d, log: '%(log)s' },
  steps: [
    jp.map('close-all',
           items=jp.python('tenants', 'sample_apps.fanout:list_tenants'),
           each=jp.python('close-tenant', 'sample_apps.storm:hold_tenant', opts={ retry: { attempts: 2, interval: 1 } }),
           opts={ max_concurrency: %(concurrency)d }),
  ],
}
"""
NEIGHBOUR_DEFINITION = """\
local jp = import 'jobplane.libsonnet';
{
  name: '%(neighbour)s',
  team: 'growth',
  description: 'Another team on the same pool, at the same time (the storm proof).',
  schedule: jp.manual,
  policy: jp.policy.ALWAYS_RUN,
  pool: '%(pool)s',
  params: { log: '%(log)s' },
  steps: [jp.python('load-' + i, 'sample_apps.functions:hold', kwargs={ seconds: 0.3 }) for i in std.range(1, 4)],
}
"""


@dataclass
class StormReport:
    runs: dict[str, str] = field(default_factory=dict)  # execution -> status (the state machine's)
    records: dict[str, str | None] = field(default_factory=dict)  # execution -> the record's status
    jobs_of: dict[str, str] = field(default_factory=dict)  # execution -> job
    items: Counter[str] = field(default_factory=Counter)  # the map's item records by outcome
    items_expected: int = 0
    pool_size: int = POOL_SIZE
    profile: str = "storm"
    most_held: int = 0
    injected: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (service, operation, error)
    step_faults: int = 0  # injected on a call that runs a top-level step (RunTask, Invoke)
    item_faults: int = 0  # ... that runs a map item's step
    step_faults_shown: int = 0  # ... of which the runs' attempts show, each with the retry taken
    item_faults_shown: int = 0  # ... of which the item's tries (its child execution's history) show
    unshown: list[str] = field(default_factory=list)
    step_fault_details: list[str] = field(default_factory=list)  # what each top-level step fault named
    shown_rows: list[str] = field(default_factory=list)  # the attempt rows that show one
    why: dict[str, JsonObject] = field(default_factory=dict)  # a failed run: its error and what failed in it
    seconds: float = 0.0

    @property
    def failed(self) -> dict[str, str]:
        return {e: s for e, s in self.runs.items() if s != "SUCCEEDED"}

    @property
    def lost(self) -> list[str]:
        """Runs without a record of their end, or whose record says another end."""
        return [e for e, s in self.runs.items() if self.records.get(e) != s]

    def lines(self) -> list[str]:
        by_service = Counter()
        for (service, _, error), n in self.injected.items():
            by_service[f"{service} {error}"] += n
        return [
            f"profile {self.profile}; runs: {len(self.runs)} ({Counter(self.runs.values())}); spurious FAILED: {len(self.failed)}",
            f"runs lost (no record, or another status): {len(self.lost)}",
            f"map items: {self.items_expected} expected, records {dict(self.items)}",
            f"pool {POOL} (size {self.pool_size}): most slots held at once {self.most_held}",
            f"faults injected: {sum(self.injected.values())}: "
            + ", ".join(f"{k} {n}" for k, n in sorted(by_service.items())),
            f"faults on a step's own call: {self.step_faults}, shown on its attempt with the retry: "
            f"{self.step_faults_shown}; on a map item's call: {self.item_faults}, shown on the item's tries with "
            f"the retry: {self.item_faults_shown}",
            f"wall time {self.seconds:.1f} s",
        ]


def storm_repo(path: Path, items: int, concurrency: int, log: Path, pool_size: int = POOL_SIZE) -> Path:
    """The example repository, its partner API always answering, plus the pooled pair."""
    path.mkdir(parents=True, exist_ok=True)
    repo = Repo(path)
    repo.copy_examples()
    toml = (ROOT / "jobplane.toml").read_text()
    toml = toml.replace('"--failure-rate", "0.2"', '"--failure-rate", "0"')
    toml = toml.replace('PYTHONPATH = "{root}"', f'PYTHONPATH = "{ROOT}:{TESTS}"')
    assert '"--failure-rate", "0"' in toml and str(TESTS) in toml, "jobplane.toml's [dev] changed: adapt the storm repo"
    toml += f'\n[pools.{POOL}]\nsize = {pool_size}\nteams = ["billing", "growth"]\n'
    (path / "jobplane.toml").write_text(toml)
    values = {"map": MAP_JOB, "neighbour": NEIGHBOUR_JOB, "pool": POOL, "n": items, "concurrency": concurrency,
              "log": str(log)}
    repo.write(f"jobs/billing/{MAP_JOB}.jsonnet", MAP_DEFINITION % values)
    repo.write(f"jobs/growth/{NEIGHBOUR_JOB}.jsonnet", NEIGHBOUR_DEFINITION % values)
    return path


_STEP_CALLS = {("ecs", "RunTask"), ("lambda", "Invoke")}


def run_storm(tmp: Path, items: int = 40, concurrency: int = 10, seed: int = 62, idle_seconds: float = 30.0,
              timeout: float = 1800.0, pool_size: int = POOL_SIZE, profile: str = "storm") -> StormReport:
    """Run the proof's workload under ``storm`` on a platform of its own; the figures."""
    from jobplane.contract import execution_input
    from jobplane.contract.lambda_step import function_name
    from jobplane.contract.config import load_config
    from jobplane.devserver.dev_platform import DevPlatform
    from jobplane.platform.local.faults import Faults

    log = tmp / "pool.log"
    root = storm_repo(tmp / "repo", items, concurrency, log, pool_size)
    report = StormReport(items_expected=items, pool_size=pool_size, profile=profile)
    calm = profile == "none"  # the baseline a bench compares with: nothing injected at all
    faults = Faults(profile, seed=seed) if calm else Faults(profile, seed=seed, lambda_idle_seconds=idle_seconds)
    # the storm's draws are seeded, but which call meets one depends on timing: each kind of fault
    # the proof is about is also scripted, so every run of the proof meets it
    item, neighbour = f"jobplane:{MAP_JOB} close-tenant", f"jobplane:{NEIGHBOUR_JOB} load-2"
    if not calm:
        _script(faults, item, neighbour)
    began = time.monotonic()
    platform = DevPlatform(load_config(root), tmp / "data", 0, 0, run_scheduler=False, run_services=True,
                           snapshot_interval=3600, faults=faults).start()
    try:
        aws = platform.aws
        assert aws is not None
        started: list[tuple[str, str]] = []

        def start(job: str) -> None:
            # as `jobplane run` starts a job: the definition's params as the run's defaults
            brief = aws.job_brief(job)
            params = dict(brief.params) if brief is not None and brief.params else None
            started.append((job, aws.start(job, execution_input.manual("storm@example.com", params))))

        start(MAP_JOB)
        start(NEIGHBOUR_JOB)
        for job in EXAMPLES:
            start(job)
        ends = {arn: aws.wait(arn, timeout) for _, arn in started}
        # the Lambda job once more, its function idle past its age in the meantime (as weeks
        # without a fire leave it): the first invoke meets ResourceNotReadyException
        if not calm:
            faults.idle(function_name(aws.prefix, LAMBDA_JOB))
        start(LAMBDA_JOB)
        ends[started[-1][1]] = aws.wait(started[-1][1], timeout)
        after = _after_runs(aws, AFTER, timeout)
        for arn in after:
            started.append((AFTER, arn))
            ends[arn] = aws.wait(arn, timeout)
        report.seconds = time.monotonic() - began
        control = platform.control
        assert control is not None
        for job, arn in started:
            name = arn.rsplit(":", 1)[1]
            report.jobs_of[name] = job
            report.runs[name] = ends[arn].status
            if ends[arn].status != "SUCCEEDED":
                report.why[name] = _why(aws, ends[arn])
            aws.wait_reconciled(arn, timeout=timeout)
            record = aws.repository().execution(name)
            report.records[name] = record.status if record else None
            if job == MAP_JOB:
                report.items.update(i.status for i in control.items(name))
            report.step_faults_shown += _shown(control, name, report)
        # what each pooled step's own process logged (sample_apps hold/hold_tenant), overlapped
        report.most_held = most_at_once(from_log(log)) if log.exists() else 0
        for f in faults.injected:
            report.injected[(f.service, f.operation, f.error)] += 1
        on_items: Counter[tuple[int, str]] = Counter()  # (item index, the error its try shows)
        for f in faults.injected:
            if (f.service, f.operation) not in _STEP_CALLS:
                continue
            found = re.match(rf"jobplane:{MAP_JOB} close-tenant #(\d+)", f.detail)
            if found:
                report.item_faults += 1  # an item's own try: in its child execution's history
                on_items[(int(found[1]), _shown_as(f.service, f.error))] += 1
            else:
                report.step_faults += 1
                report.step_fault_details.append(f"{f.service} {f.error} {f.detail}")
        map_run = next((arn.rsplit(":", 1)[1] for job, arn in started if job == MAP_JOB), None)
        if map_run is not None:
            report.item_faults_shown = _shown_on_items(control, map_run, on_items, report)
        return report
    finally:
        platform.stop()


def _script(faults: Any, item: str, neighbour: str) -> None:
    """The faults every run of the proof meets, whatever the storm's draws hit."""
    from jobplane.platform.local.faults import ECS_CAPACITY, detail_of

    faults.script("ecs", "RunTask", "ThrottlingException", times=2,
                  match=lambda p: detail_of("ecs", "RunTask", dict(p)).startswith(f"{item} #"))
    faults.script("ecs", "RunTask", ECS_CAPACITY, times=1,
                  match=lambda p: detail_of("ecs", "RunTask", dict(p)).startswith(f"{item} #"))
    faults.script("ecs", "RunTask", ECS_CAPACITY, times=1,
                  match=lambda p: detail_of("ecs", "RunTask", dict(p)) == neighbour)
    faults.script("dynamodb", "TransactWriteItems", "ThrottlingException", times=3,
                  match=lambda p: f"POOL#{POOL}" in json.dumps(p))


def _shown_as(service: str, error: str) -> str:
    """The error name a Task reports for an injected fault (the integration's prefix)."""
    if error == "AmazonECS.Unknown":
        return error
    return f"{'ECS' if service == 'ecs' else 'Lambda'}.{error}"


def _shown_on_items(control: Any, execution: str, on_items: Counter[tuple[int, str]], report: StormReport) -> int:
    """How many faults of the map items' own calls their item's tries show (read from each
    item's child execution's history, as the portal's item page shows them): a try with the
    fault's error, followed by another try of the same step (the retry taken)."""
    shown = 0
    for index in sorted({i for i, _ in on_items}):
        from jobplane.platform.timeline import Patience

        # many items read at once: wait out GetExecutionHistory's bucket (the storm's: 20, 2/s)
        found = control.item(execution, "close-all", index, Patience())
        rows = list(found.attempts)
        retried: Counter[str] = Counter()
        for i, row in enumerate(rows):
            if row.error and any(later.step == row.step for later in rows[i + 1:]):
                for name in {e for (j, e) in on_items if j == index}:
                    if name in row.error:
                        retried[name] += 1
        for (j, name), n in sorted(on_items.items()):
            if j != index:
                continue
            shown += min(n, retried[name])
            if retried[name] < n:
                report.unshown.append(f"{execution} item {index}: {n} x {name} injected, {retried[name]} shown with "
                                      f"a retry on its tries (history {found.history}: "
                                      f"{[(r.step, r.attempt, r.outcome, r.error) for r in rows]})")
            else:
                report.shown_rows.append(f"item {index} {name} x{n}")
    return shown


def _after_runs(aws: Any, job: str, timeout: float) -> list[str]:
    """The runs an ``after`` rule started of ``job`` (it starts when its upstream ends)."""
    sfn = aws.client("stepfunctions")
    deadline = time.monotonic() + timeout  # catches a hang only
    while True:
        found = sfn.list_executions(stateMachineArn=aws.state_machines[job])["executions"]
        if found:
            return [e["executionArn"] for e in found]
        assert time.monotonic() < deadline, f"{job} never started after its upstream"
        time.sleep(0.1)


def _shown(control: Any, execution: str, report: StormReport) -> int:
    """How many faults of the steps' own calls this run's attempts show (an attempt row with the
    fault's error, followed by a try of the same step: the retry taken)."""
    view = control.execution(execution)
    rows = list(view.timeline)
    shown = 0
    for i, row in enumerate(rows):
        error = row.error or ""
        if not re.search(r"(ECS\.\w+|AmazonECS\.Unknown|Lambda\.\w+Exception)", error):
            continue
        retried = any(later.step == row.step for later in rows[i + 1:])
        if retried:
            shown += 1
            report.shown_rows.append(f"{view.record.job if hasattr(view, 'record') else ''} {row.step} {error}")
        else:
            report.unshown.append(f"{execution} {row.step} attempt {row.attempt}: {error} (no retry after it)")
    return shown


def _why(aws: Any, end: Any) -> JsonObject:
    """A run that did not succeed: its error and cause, the last states it entered, and every
    failure event of its history (what took a fault past its retries)."""
    from jobplane.platform.timeline import Patience, history

    events = history(aws.client("stepfunctions"), end.arn, Patience())
    failures = []
    for e in events:
        if "Failed" in e["type"] or "TimedOut" in e["type"]:
            detail = next((v for k, v in e.items() if k.endswith("EventDetails")), {})
            failures.append({"id": e["id"], "type": e["type"], "error": detail.get("error"),
                             "cause": str(detail.get("cause", ""))[:400]})
    return {"error": end.error, "cause": str(end.cause or "")[:600], "entered": end.states_entered[-12:],
            "failures": failures[-12:]}


def dump(report: StormReport) -> str:
    return json.dumps({"runs": report.runs, "jobs": report.jobs_of, "why": report.why,
                       "records": report.records, "unshown": report.unshown,
                       "step faults": report.step_fault_details, "shown": report.shown_rows}, indent=1)
