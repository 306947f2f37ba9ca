"""Portal latency with a big store: 1,000 jobs and 20,000 executions.

    .venv/bin/python bench/portal.py [--jobs 1000] [--executions 20000] [--day-runs 5000] [-n 50]

Compiles 1,000 generated jobs (bench/jobtree.py's generator), deploys the measured one on the
embedded local AWS in server mode, writes 20,000 execution records shaped as the state machines write them
(one job holds 2,000 of them), serves the portal with uvicorn and requests over HTTP:
the jobs page (its first page of 100 jobs, as a user lands on it: portal/job_pager.py; then one
team's, the last page and each status filter: a status most jobs have counted by DynamoDB and
its page read in the page's order, the others one partition of an index, NEVER_RUN the jobs
that may never have run: platform/control/reads.py _status_window), a job page (the busy
job) and an execution page, N times each after a warm-up, and counts the AWS requests each page
makes (store reads, DescribeStateMachine, GetSchedule);
then the store queries behind them alone. Prints median and p95 of each and the ratio to the
cheapest, and every page against its target (issue 13: p95 <= 100 ms for the jobs page and a
job page; issue 54: the same with 5,000 jobs and 100,000 executions, as `make bench` runs it;
issue 66 item 3: every page, the jobs page filtered by each status and the job page of a calendar
job included). The jobs' states are as the state machines leave them: 1% of the jobs running
(their claim held), 1% paused, 2% never run, the others' last runs 8% failed; one more job, a
calendar job (business days, jobplane.toml's jp-business), has its page measured too.
The pictures (issue 70) are measured beside them, on the same store: the jobs page and a job
page draw their marks and grid from what the reconciler writes at each run's end (each job's
RECENT item, each day's RUNS# items: written here for every seeded run, and ``--day-runs`` more
runs on one busy day); the timeline of a seeded day and of the busy day, the next 24 hours' fires
of every job, and their APIs (the same target: p95 <= 100 ms); then what the busy day's first
view after a run of it ended costs (the portal keeps a day it drew: portal/timeline_days.py),
and a view of it not kept (read whole, as every view was before).
``--repo DIR``: generate and compile the jobs into DIR once and reuse them on the next run (the
compile is not measured; at 5,000 jobs it takes minutes). The "store only" lines show how much of a page is the local store rather than the
portal (docs/local-engine.md: the DynamoDB read fixes); the "rows only" lines, the jobs page's
rows as the portal keeps them (portal/job_rows.py) and as they render afresh. Each page's line
also gives the median CPU time of its requests, every thread of the process (the portal, the
local AWS and the client run in it): on a machine shared with other work, the wall times count
the waits for a core too, the CPU times do not. ``--sample``: where the measured pages' time
goes, every thread's stack sampled during their timed requests (bench/sampler.py).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import secrets
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx2
from boto3.dynamodb.types import TypeSerializer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobtree import write_repo  # noqa: E402  (the benches' one job generator)
from sampler import Sampler  # noqa: E402

from jobplane.compiler.output import compile_all, write_output  # noqa: E402
from jobplane.contract import datamodel as dm  # noqa: E402
from jobplane.contract import recent_runs as rr  # noqa: E402
from jobplane.contract import run_days  # noqa: E402
from jobplane.contract.recent_runs import KEPT, RecentRun  # noqa: E402
from jobplane.contract.run_days import DayRun  # noqa: E402
from jobplane.contract.bindings import asl_of  # noqa: E402
from jobplane.contract.catalog import Catalog  # noqa: E402
from jobplane.contract.clock import iso_millis  # noqa: E402
from jobplane.contract.config import load_config  # noqa: E402
from jobplane.contract.records import PAUSE_SCHEDULE  # noqa: E402
from jobplane.devserver.dev_platform import freeze_started_heap  # noqa: E402
from jobplane.platform.control import ControlPlane, Deployment  # noqa: E402
from jobplane.platform.local.engine import ACCOUNT, LocalAWS  # noqa: E402
from jobplane.portal.app import create_app  # noqa: E402
from jobplane.portal.auth import mint_login_token  # noqa: E402
from jobplane.portal import timeline_days, timeline_fires  # noqa: E402
from jobplane.platform.run_history import RunHistory  # noqa: E402
from jobplane.contract.records import ExecutionRecord  # noqa: E402
from jobplane.portal.job_pager import PER_PAGE  # noqa: E402
from jobplane.portal.job_rows import STATE_ATTRIBUTES, JobRow  # noqa: E402
from jobplane.portal.pages import STATUSES  # noqa: E402
from jobplane.platform.control.reads import STATUS_ATTRIBUTES  # noqa: E402
from jobplane.portal.settings import AuthSettings, PortalSettings  # noqa: E402

JOBS_PAGE, JOB_PAGE = "jobs page (first page, 100 jobs)", "job page (the busy job, 20 per page)"
CALENDAR_JOB = "bench-calendar-report"
#: as tests/test_calendars_dev.py's: its fires are the business days of jobplane.toml's jp-business
CALENDAR_DEFINITION = f"""local jp = import 'jobplane.libsonnet';
{{
  name: '{CALENDAR_JOB}',
  team: 'billing',
  description: 'A business-day report, for the job page of a calendar job.',
  schedule: jp.businessDays('09:00'),
  calendar: 'jp-business',
  timezone: 'Asia/Tokyo',
  steps: [jp.python('work', 'app.jobs.report:run')],
  notify: jp.slack('#billing-alerts'),
}}
"""
#: the share of jobs running (a claim held), paused, and never run (no execution, no state)
RUNNING_SHARE, PAUSED_SHARE, NEVER_RUN_SHARE = 0.01, 0.01, 0.02
TARGET_MS = 100
LOGIN = secrets.token_urlsafe(32)  # the dev portal's sign-in secret, as jobplane dev makes one


def seed(aws: LocalAWS, catalog: dict, executions: int, rng: random.Random) -> tuple[str, str]:
    ser = TypeSerializer()
    ddb, table = aws.client("dynamodb"), aws.resources["table_name"]
    jobs = [j for j in catalog["jobs"] if j["name"] != CALENDAR_JOB]
    busy = jobs[0]["name"]
    never = {j["name"] for j in jobs[1:] if rng.random() < NEVER_RUN_SHARE}
    ran = [j for j in jobs if j["name"] not in never]
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    items, last, started = [], {}, {}
    for i in range(executions):
        job = jobs[0] if i < executions // 10 else rng.choice(ran)
        began = start + timedelta(minutes=7 * i)
        ended = began + timedelta(seconds=rng.randint(5, 900))
        failed = rng.random() < 0.08
        status = "FAILED" if failed else "SUCCEEDED"
        name = f"{i:08d}{rng.getrandbits(64):016x}"
        steps = [s["name"] for s in job["steps"]]
        # as the reconciler stores them: each row with its exit code; a step's slot holds its
        # counter (retried steps) and, when its task ran to its end, its container
        outcomes = ["failed" if failed and k == len(steps) - 1 else "succeeded" for k in range(len(steps))]
        timeline = [{"step": s, "attempt": 1, "started_at": iso_millis(began), "finished_at": iso_millis(ended),
                     "outcome": o, "exit_code": 75 if o == "failed" else 0} for s, o in zip(steps, outcomes)]
        item = {"pk": dm.execution_pk(name), "sk": dm.EXEC_SK, "execution": name, "job": job["name"], "team": job["team"],
                "execution_arn": f"arn:aws:states:us-east-1:{ACCOUNT}:execution:jobplane-{job['name']}:{name}",
                "status": status, "trigger": "schedule", "scheduled_time": iso_millis(began), "requested_by": "scheduler",
                "input": json.dumps({"trigger": "schedule", "params": {}}), "started_at": iso_millis(began),
                "finished_at": iso_millis(ended), "gsi1pk": dm.job_partition(job["name"]), "gsi1sk": iso_millis(began),
                "steps": json.dumps({s.replace("-", "_"): {"result": {"Container": {"ExitCode": 0}}} if o == "succeeded" else {}
                                     for s, o in zip(steps, outcomes)}),
                "timeline": json.dumps(timeline), "transitions": 3 + 2 * len(steps)}
        if failed:
            item |= {"gsi2pk": dm.FAILURES_PARTITION, "gsi2sk": iso_millis(ended), "failed_step": steps[-1],
                     "error": "ConnectionError: upstream answered 503"}
        items.append(item)
        last[job["name"]] = (status, name, iso_millis(ended), job["team"])
        started[job["name"]] = iso_millis(began)
    for job, (status, name, ended, team) in last.items():
        # as the state machines leave a job's state: its claim's duplicate keys, its last run
        # (and its place in the status index, set by the same release: contract/items.py release_job)
        state = {"pk": f"JOB#{job}", "sk": dm.STATE_SK, "job": job, "team": team, "gsi1pk": dm.JOBS_PARTITION,
                 "gsi1sk": job, "fire_schedule": f"false|{started[job]}", "fired_schedule": started[job],
                 "last_status": status, "last_execution": name, "last_started_at": started[job],
                 "last_finished_at": ended, "gsi3pk": f"STATUS#{status}", "gsi3sk": job}
        if rng.random() < RUNNING_SHARE:  # a run holds its claim now (the claim files it under RUNNING)
            state |= {dm.ATTR_RUNNING: {f"{job}-now"}, dm.ATTR_HOLDER: f"arn:aws:states:us-east-1:{ACCOUNT}:execution:x",
                      "gsi3pk": dm.status_partition(dm.RUNNING_STATUS)}
        if rng.random() < PAUSED_SHARE:  # as Repository.set_paused leaves it
            state |= {"paused_by": "ops@example.com", "paused_reason": "vendor outage", "paused_at": ended,
                      PAUSE_SCHEDULE: ended, "gsi2pk": dm.PAUSED_PARTITION, "gsi2sk": job}
        items.append(state)
    for i in range(0, len(items), 25):
        pending = {table: [{"PutRequest": {"Item": {k: ser.serialize(v) for k, v in it.items()}}} for it in items[i:i + 25]]}
        while pending:
            pending = ddb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
    return busy, items[executions // 20]["execution"], items[:executions]


BUSY_DAY = "2026-03-02"


def pictures_items(records: list[dict], day_runs: int, rng: random.Random) -> list[dict]:
    """What the reconciler would have written at the end of each of ``records``' runs for the
    pictures (issue 70): each job's RECENT item (its last 10 runs) and the days' items of the runs
    (contract/run_days.py); and ``day_runs`` more runs on :data:`BUSY_DAY`, spread over the jobs, a
    busy day (every job of 5,000 running daily)."""
    by_job: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_job[r["job"]].append(r)
    items = []
    for job, runs in by_job.items():
        newest = sorted(runs, key=lambda r: r["started_at"], reverse=True)[:KEPT]
        kept = tuple(RecentRun(r["execution"], r["status"], r["started_at"], r["finished_at"], r.get("scheduled_time"),
                               r.get("failed_step")) for r in newest)
        items.append(rr.recent_key(job) | {"job": {"S": job}, rr.ATTR_RUNS: {"S": rr.encode(kept)},
                                           rr.ATTR_BREACHED: {"S": "[]"}, rr.ATTR_VERSION: {"N": "1"}})
    lines: dict[tuple[str, str], list[str]] = defaultdict(list)
    jobs = sorted(by_job)
    day = [dict(r) for r in rng.choices(records, k=day_runs)]
    start = datetime.fromisoformat(f"{BUSY_DAY}T00:00:00+00:00")
    for i, r in enumerate(day):
        began = start + timedelta(seconds=rng.randint(0, 86000))
        r |= {"execution": f"busy{i:06d}", "job": jobs[i % len(jobs)], "started_at": iso_millis(began),
              "finished_at": iso_millis(began + timedelta(seconds=rng.randint(5, 900)))}
    for r in records + day:
        run = DayRun(r["execution"], r["job"], r.get("team", ""), r["status"], r["started_at"], r["finished_at"],
                     r.get("scheduled_time"))
        lines[(run_days.day_pk(run.day), run_days.day_sk(run.job, run.started_at))].append(run.to_json())
    counters: dict[str, dict[str, dict[str, str]]] = defaultdict(dict)
    for (pk, sk), texts in lines.items():
        items.append({"pk": {"S": pk}, "sk": {"S": sk}, run_days.ATTR_LINES: {"SS": texts}})
        counters[pk][run_days.version_attribute(sk)] = {"N": str(len(texts))}  # one append a run
    # each day's counters item, as note_day leaves it
    items += [{"pk": {"S": pk}, "sk": {"S": run_days.VERSIONS_SK}} | counted for pk, counted in counters.items()]
    return items


#: label -> the CPU seconds of each timed request, every thread of this process (the portal, the
#: local AWS and the client are all in it): what a page costs whatever else the machine runs,
#: where its wall time on a shared machine also counts the waits for a core.
CPU: dict[str, list[float]] = {}


def timed(client: httpx2.Client, url: str, n: int, label: str = "", sampler: Sampler | None = None) -> list[float]:
    for _ in range(3):
        r = client.get(url)
        assert r.status_code == 200, f"{url}: {r.status_code} {r.headers.get('location', '')} {r.text[:2000]}"
    if sampler:
        sampler.start()  # (then stopped after the timed requests)
    out, cpu = [], CPU.setdefault(label or url, [])
    for _ in range(n):
        t, c = time.perf_counter(), time.process_time()
        r = client.get(url)
        out.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        assert r.status_code == 200
    if sampler:
        sampler.stop()
    return out


def _time(fn, n: int) -> list[float]:  # type: ignore[no-untyped-def]
    fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--executions", type=int, default=20000)
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--day-runs", type=int, default=5000, help="runs of the timeline's busy day")
    ap.add_argument("--repo", type=Path, help="generate and compile here once; reuse on the next run")
    ap.add_argument("--pages", metavar="REGEX", help="measure only the pages whose label matches (e.g. 'status|first'), "
                    "nothing else: a before and after of a few pages, with another tree's code on PYTHONPATH")
    ap.add_argument("--sample", action="store_true", help="sample every thread's stack during the measured pages' "
                    "timed requests and print where they ran (bench/sampler.py; slows them)")
    args = ap.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="jobplane-portal-bench-") as tmp:
        repo = args.repo / f"{args.jobs}-jobs" if args.repo else Path(tmp)
        out = repo / "out"
        config = None
        if not (out / "done").exists():
            write_repo(repo, args.jobs)
            (repo / "jobs" / "billing" / f"{CALENDAR_JOB}.jsonnet").write_text(CALENDAR_DEFINITION)
            t = time.perf_counter()
            config = load_config(repo)
            compiled = compile_all(config)
            write_output(compiled, out)
            (out / "done").write_text("")
            print(f"compiled {args.jobs} jobs and a calendar job in {time.perf_counter() - t:.1f} s")
        config = config or load_config(repo)
        with LocalAWS(server_port=0, log_dir=repo / "logs") as aws:
            catalog = json.loads(Catalog.load(out).render())
            # Only the measured job's state machine is deployed (its page draws the deployed ASL):
            # moto validates each definition with its ANTLR parser on create (~1 s per job), and
            # no page here needs the other 999.
            t = time.perf_counter()
            measured = [e for e in catalog["jobs"] if e["name"] != CALENDAR_JOB][0]["name"], CALENDAR_JOB
            for entry in catalog["jobs"]:
                if entry["name"] in measured:
                    aws.deploy(entry["name"], asl_of((out / entry["asl"]).read_text()))
            print(f"deployed the measured jobs' state machines in {time.perf_counter() - t:.1f} s")
            t = time.perf_counter()
            busy, execution, records = seed(aws, catalog, args.executions, rng)
            print(f"wrote {args.executions} execution records in {time.perf_counter() - t:.1f} s")
            t = time.perf_counter()
            extra = pictures_items(records, args.day_runs, rng)
            ddb = aws.client("dynamodb")
            for i in range(0, len(extra), 25):
                pending = {aws.resources["table_name"]: [{"PutRequest": {"Item": it}} for it in extra[i:i + 25]]}
                while pending:
                    pending = ddb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
            print(f"wrote {len(extra)} items of the pictures (recent runs, days' runs) in {time.perf_counter() - t:.1f} s")
            deployment = Deployment(table=aws.resources["table_name"], topic_arn=aws.resources["topic_arn"],
                                    endpoint_url=aws.endpoint_url, catalog_path=out, log_group=aws.log_group,
                                    access_key_id=aws.credentials.access_key_id,
                                    secret_access_key=aws.credentials.secret_access_key)
            app = create_app(PortalSettings.from_config(config, deployment, AuthSettings(mode="dev", dev_login=LOGIN)),
                             ControlPlane(deployment))
            import uvicorn

            # bound here and handed to uvicorn: no port picked in advance that another could take
            listening = socket.socket()
            listening.bind(("127.0.0.1", 0))
            port = listening.getsockname()[1]
            server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
            server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
            threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True).start()
            while not server.started:
                time.sleep(0.05)
            # the store-only reads' own control plane (its catalog of 1,000 jobs), made before the
            # freeze as `jobplane dev` makes the portal's: made after it, its objects were walked
            # by every full collection of the store-only lines and inflated their p95
            control = ControlPlane(deployment)
            # what `jobplane dev` does once started (the records here stand for its restored snapshot)
            freeze_started_heap()
            day_of_seed = records[len(records) // 2]["started_at"][:10]
            pages = {JOBS_PAGE: "/", "jobs page, filtered to one team": "/?team=billing",
                     "jobs page, its last page": f"/?page={-(-(args.jobs + 1) // PER_PAGE)}",
                     **{f"jobs page, status {status}": f"/?status={status}" for status in STATUSES},
                     JOB_PAGE: f"/jobs/{busy}", "job page of a calendar job": f"/jobs/{CALENDAR_JOB}",
                     "execution page": f"/executions/{execution}", "API: one execution": f"/api/executions/{execution}",
                     # the pictures (issue 70): JOBS_PAGE above draws its jobs' marks, JOB_PAGE its grid
                     "API: recent runs (first 100 jobs)": "/api/recent-runs", "API: the busy job's grid": f"/api/jobs/{busy}/grid",
                     f"timeline, a seeded day ({day_of_seed})": f"/timeline?day={day_of_seed}",
                     f"timeline, the busy day (+{args.day_runs:,} runs)": f"/timeline?day={BUSY_DAY}",
                     "API: the busy day's timeline": f"/api/timeline?day={BUSY_DAY}",
                     "timeline, the next 24 hours' fires": "/timeline/next",
                     "API: the next 24 hours' fires": "/api/timeline/next"}
            if args.pages:
                pages = {label: url for label, url in pages.items() if re.search(args.pages, label)}
            results, requests = {}, {}
            counted: Counter[str] = Counter()  # the AWS requests the portal makes (the store's and others')
            portal_control = app.state.portal.control
            for aws_client in (portal_control.ddb, portal_control.sfn, portal_control.scheduler):
                aws_client.meta.events.register("before-call", lambda model, **_: counted.update([model.name]))
            with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                # the session cookie, as a browser gets it from the login link `jobplane dev` prints
                assert client.get(f"/login?token={mint_login_token(LOGIN)}").status_code in (302, 303, 307)
                for label, url in pages.items():
                    sampler = Sampler() if args.sample else None
                    results[label] = timed(client, url, args.n, label, sampler)
                    if sampler:
                        print(f"\n{label}: {sampler.report()}")
                    counted.clear()
                    client.get(url)  # one more, its AWS requests counted
                    requests[label] = ", ".join(f"{n} {op}" for op, n in sorted(counted.items()))
                if not args.pages:  # the other measures of the timeline
                    # the next 24 hours' view is worked out once a minute (and each schedule's fires once an
                    # hour, portal/timeline_fires.py): what the first request of a minute, of an hour, costs
                    results["the next 24 hours' fires, a new minute's first request"] = _time(
                        lambda: (timeline_fires.VIEWS.clear(), client.get("/timeline/next")), args.n)
                    results["the next 24 hours' fires, a new hour's first request"] = _time(
                        lambda: (timeline_fires.VIEWS.clear(), timeline_fires.CACHE.clear(), client.get("/timeline/next")),
                        max(3, args.n // 4))
                    # a kept day (portal/timeline_days.py): what the first view after a run of it
                    # ended costs (its item read again), and a view of a day not kept (read whole)
                    history = RunHistory(portal_control.ddb, aws.resources["table_name"])
                    ended, cold = [], []
                    for k in range(args.n):
                        history.note_day(ExecutionRecord(execution=f"late{k:06d}", job=busy, team="billing", status="SUCCEEDED",
                                                         started_at=f"{BUSY_DAY}T05:{k % 60:02d}:00.000Z",
                                                         finished_at=f"{BUSY_DAY}T06:00:00.000Z"))
                        t = time.perf_counter()
                        assert client.get(f"/timeline?day={BUSY_DAY}").status_code == 200
                        ended.append(time.perf_counter() - t)
                        timeline_days.DAYS_KEPT.clear()
                        t = time.perf_counter()
                        assert client.get(f"/timeline?day={BUSY_DAY}").status_code == 200
                        cold.append(time.perf_counter() - t)
                    results["timeline, the busy day, the first view after a run ended"] = ended
                    results["timeline, the busy day, a view of it not kept (read whole)"] = cold
            server.should_exit = True
            if not args.pages:  # the store alone and the rows alone
                results[f"store only: jobs' state query ({args.jobs:,} items, GSI)"] = _time(control.repo.job_states, args.n)
                results[f"store only: the same, {len(STATE_ATTRIBUTES)} attributes (jobs page)"] = _time(
                    lambda: control.repo.job_states(STATE_ATTRIBUTES), args.n)
                first_page = [e.name for e in sorted(control.entries.values(), key=lambda e: (e.team, e.name))[:PER_PAGE]]
                results[f"store only: the first page's {PER_PAGE} states (BatchGetItem)"] = _time(
                    lambda: control.repo.job_states_of(first_page, STATE_ATTRIBUTES), args.n)
                if hasattr(control.repo, "job_states_ended"):  # the status index (issue 66 item 3)
                    results["store only: FAILED jobs' states (status index)"] = _time(
                        lambda: control.repo.job_states_ended("FAILED", STATUS_ATTRIBUTES), args.n)
                if hasattr(control.repo, "jobs_filed"):  # the largest partition, and what NEVER_RUN reads of each
                    results["store only: RUNNING jobs' states (status index)"] = _time(
                        lambda: control.repo.job_states_ended("RUNNING", STATUS_ATTRIBUTES), args.n)
                    results["store only: SUCCEEDED jobs' states (status index)"] = _time(
                        lambda: control.repo.job_states_ended("SUCCEEDED", STATUS_ATTRIBUTES), args.n)
                    results["store only: SUCCEEDED jobs' names (status index)"] = _time(
                        lambda: control.repo.jobs_filed("SUCCEEDED"), args.n)
                if hasattr(control.repo, "count_filed_idle"):  # what the SUCCEEDED filter's page reads instead
                    results["store only: SUCCEEDED jobs counted (status index, Select=COUNT)"] = _time(
                        lambda: control.repo.count_filed_idle("SUCCEEDED"), args.n)
                results["store only: a job's 20 newest executions (GSI)"] = _time(lambda: control.repo.executions(busy), args.n)
                results["store only: one execution (GetItem)"] = _time(lambda: control.repo.execution(execution), args.n)
                # the jobs page's rows alone: kept (portal/job_rows.py, unchanged rows) and rendered afresh
                rows, jobs = app.state.portal.templates.env.globals["job_rows"], control.jobs()
                results[f"rows only: {len(jobs):,} rows, kept"] = _time(lambda: rows(jobs, False), args.n)
                results[f"rows only: {len(jobs):,} rows, rendered afresh"] = _time(
                    lambda: [rows.render(JobRow.of(j, False)) for j in jobs], args.n)
            at_scale = args.jobs >= 1000 and args.executions >= 20000  # the size the targets are for
            cheapest = min(statistics.median(v) for v in results.values())
            print(f"\nlatency over HTTP, n={args.n} each after 3 warm-up requests:")
            for label, values in results.items():
                values.sort()
                med, p95 = statistics.median(values), values[int(0.95 * (len(values) - 1))]
                target = f"   target p95 <= {TARGET_MS} ms: {'met' if p95 * 1000 <= TARGET_MS else 'NOT met'}" \
                    if label in pages and at_scale else ""
                cpu = f"   CPU median {statistics.median(CPU[label]) * 1000:6.1f} ms" if label in CPU else ""
                print(f"  {label:52s} median {med * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   "
                      f"x{med / cheapest:5.1f} the cheapest{target}{cpu}")
            print("\nAWS requests per page (one request of each, after the timed ones):")
            for label, made in requests.items():
                print(f"  {label:52s} {made or 'none'}")


if __name__ == "__main__":
    main()
