"""The fire ledger's pass (platform/missed.py) at 1,000 minutely jobs (issue 38's target: under
2 s per pass; issue 54's: the same at 5,000, `make bench` runs --jobs 5000 --hours 0.5).

    .venv/bin/python bench/missed_fires.py [--jobs 1000] [--hours 2] [--rounds 13]

On the embedded local AWS in server mode (the ledger's calls go over HTTP, as on AWS): 1,000
jobs firing every minute, each with its schedule deployed and ``--hours`` of minutely run
records, and its state as the claims left it (the newest fire claimed, the count of claims) with
the ledger's watermark and count as a first deploy leaves them: all set at one instant, REFRESH
(4 h) ago, so each pass moves on the watermarks its spread by job name reaches (~1 in 48 a pass,
the worst case; the steady state moves ~1 in 72). Each round moves the clock 5 minutes (the
periodic check's interval) and runs those 5 fires of every job: run records written and the
state's claim fields moved as the compiled claim moves them. job-0000's fires stop running in
the last three rounds, so the last pass (at the usual 5 minutes) is the first past their grace:
it reads that job's runs, records and alerts. Prints each pass's time
and its calls to the local AWS, the median and the slowest (every pass counts, the alerting one
too).

Where a pass's time went (issue 54, 5,000 jobs, --hours 0.5): each watermark moved on is one
conditional UpdateItem, ~11-14 ms on the local AWS (moto parses and validates the update
expression in Python, twice); with the watermarks moving every 30-60 minutes a pass moved ~830
of them (11-16 s). And each job's fires since its watermark were computed for each job (~0.5 ms
for an hour of a minutely cron: ~2.5 s at 5,000 jobs). Now each distinct schedule's fires are
computed once a pass (platform/pass_fires.py), a watermark moves every 4-8 hours (~105 a pass
at 5,000 jobs in this worst case; every 2-4 hours ~210 made a median pass 2.32 s), and its
write carries two actions, not six. A full collection of the garbage collector over the 150,000
records' objects inside one pass made it 6.5 s: the bench freezes what its setup built, as
`jobplane dev` does once its platform is up.

Then the whole periodic Lambda handler (``jobplane.platform.slow.handler``: SLOW check, catch-up,
this ledger, backfills, pause repair) once, in a fresh interpreter as Lambda runs it, against the
same 1,000 jobs: its time and its peak memory (the process's maximum resident set), which sizes
the function's ``memory_size`` in terraform/platform/slow.tf (issue 49, item 9).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from boto3.dynamodb.types import TypeSerializer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobplane.contract import datamodel as dm  # noqa: E402
from jobplane.contract.catalog import CATALOG_VERSION, Catalog, CatalogJob  # noqa: E402
from jobplane.contract.names import schedule_name  # noqa: E402
from jobplane.contract.clock import iso_millis  # noqa: E402
from jobplane.platform.control import ControlPlane, Deployment  # noqa: E402
from jobplane.devserver.dev_platform import freeze_started_heap  # noqa: E402
from jobplane.platform.local import moto_patches  # noqa: E402
from jobplane.platform.local.engine import ACCOUNT, LocalAWS  # noqa: E402
from jobplane.platform import missed  # noqa: E402
from jobplane.platform.missed import REFRESH, MissedFires  # noqa: E402

PREFIX = "jobplane"
TARGET_S = 2.0
ser = TypeSerializer()


def write(ddb: object, table: str, items: list[dict]) -> None:  # type: ignore[type-arg]
    for i in range(0, len(items), 25):
        pending = {table: [{"PutRequest": {"Item": {k: ser.serialize(v) for k, v in it.items()}}} for it in items[i:i + 25]]}
        while pending:
            pending = ddb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}  # type: ignore[attr-defined]


def runs(job: str, fires: list[datetime]) -> list[dict]:  # type: ignore[type-arg]
    out = []
    for t in fires:
        name = f"{job}-{int(t.timestamp())}"
        out.append({"pk": dm.execution_pk(name), "sk": dm.EXEC_SK, "execution": name, "job": job, "team": "billing",
                    "status": "SUCCEEDED", "trigger": "schedule", "scheduled_time": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "started_at": iso_millis(t + timedelta(seconds=1)), "finished_at": iso_millis(t + timedelta(seconds=20)),
                    "gsi1pk": dm.job_partition(job), "gsi1sk": iso_millis(t + timedelta(seconds=1)),
                    "input": json.dumps({"trigger": "schedule"})})
    return out


def state(job: str, watermark: datetime, fired: datetime, claims: int, counted: int) -> dict:  # type: ignore[type-arg]
    """A job's state item as the claims and the ledger leave it."""
    return {"pk": dm.job_partition(job), "sk": dm.STATE_SK, "job": job, "team": "billing",
            "gsi1pk": dm.JOBS_PARTITION, "gsi1sk": job, dm.ATTR_FIRES_CHECKED: iso_millis(watermark),
            dm.ATTR_FIRES_CLAIMS: counted, f"{dm.ATTR_FIRED_PREFIX}schedule": fired.strftime("%Y-%m-%dT%H:%M:%SZ"),
            f"{dm.ATTR_CLAIMS_PREFIX}schedule": claims}


def watermarks(ddb: object, table: str) -> dict[str, str]:
    out, kwargs = {}, {"TableName": table, "IndexName": dm.GSI_BY_OWNER, "KeyConditionExpression": "gsi1pk = :p",
                       "ExpressionAttributeValues": {":p": {"S": dm.JOBS_PARTITION}}}
    while True:
        page = ddb.query(**kwargs)  # type: ignore[attr-defined]
        out |= {i["job"]["S"]: i[dm.ATTR_FIRES_CHECKED]["S"] for i in page["Items"]}
        if "LastEvaluatedKey" not in page:
            return out
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def states_moved(ddb: object, table: str, jobs: list[str], fired: datetime, claims: dict[str, int]) -> dict[str, str]:
    """The claims' writes to the jobs' states (the ledger's fields kept); the watermarks before the pass."""
    marks = watermarks(ddb, table)
    for job in jobs:
        ddb.update_item(TableName=table, Key={"pk": {"S": dm.job_partition(job)}, "sk": {"S": dm.STATE_SK}},  # type: ignore[attr-defined]
                        UpdateExpression="SET #f = :f, #c = :c",
                        ExpressionAttributeNames={"#f": f"{dm.ATTR_FIRED_PREFIX}schedule",
                                                  "#c": f"{dm.ATTR_CLAIMS_PREFIX}schedule"},
                        ExpressionAttributeValues={":f": {"S": fired.strftime("%Y-%m-%dT%H:%M:%SZ")},
                                                   ":c": {"N": str(claims[job])}})
    return marks


def deployment_of(aws: LocalAWS, catalog: Path) -> Deployment:
    """The platform's view of the local AWS in server mode (the ledger's calls go over HTTP)."""
    return Deployment(table=aws.resources["table_name"], topic_arn=aws.resources["topic_arn"], name_prefix=PREFIX,
                      endpoint_url=aws.endpoint_url, catalog_path=catalog,
                      access_key_id=aws.credentials.access_key_id,
                      secret_access_key=aws.credentials.secret_access_key)


@dataclass
class Pass:
    seconds: float
    alerted: list[str]
    requests: Counter[str]  # the pass's calls to the local AWS, by operation
    schedules: int  # distinct schedules whose fires the pass computed (platform/pass_fires.py)
    collected: float = 0.0  # seconds the cyclic garbage collector's full collections took in it
    full_collections: int = 0


def timed_pass(control: ControlPlane, deployment: Deployment, at: datetime, workers: int) -> Pass:
    """One pass of the ledger with its clock at ``at``, timed, its AWS calls counted."""
    ledger = MissedFires(control, deployment.client("sns"), deployment.topic_arn, deployment.client("sqs"),
                         clock=lambda: at, workers=workers)
    requests: Counter[str] = Counter()

    def count(event_name: str, **_: object) -> None:
        requests[event_name.rsplit(".", 1)[-1]] += 1

    computed = []
    made = missed.PassFires

    class Counted(made):  # type: ignore[valid-type,misc]
        def __init__(self, *args: object) -> None:
            super().__init__(*args)
            computed.append(self)

    clients = [control.ddb, control.scheduler, ledger.sns, ledger.sqs]
    for client in clients:
        client.meta.events.register("before-call.*.*", count, unique_id="bench-count")
    # the full (generation 2) collections inside the pass, timed (Python library reference,
    # gc.callbacks): a pass much slower than the others is one that met one
    full: list[float] = []
    began: list[float] = []

    def collecting(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                began.append(time.perf_counter())
            elif began:
                full.append(time.perf_counter() - began.pop())

    missed.PassFires = Counted  # type: ignore[misc]
    gc.callbacks.append(collecting)
    try:
        t = time.perf_counter()
        alerted = ledger.check()
        took = time.perf_counter() - t
    finally:
        gc.callbacks.remove(collecting)
        missed.PassFires = made  # type: ignore[misc]
        for client in clients:
            client.meta.events.unregister("before-call.*.*", unique_id="bench-count")
    return Pass(took, alerted, requests, sum(c.computed for c in computed), sum(full), len(full))


def said(p: Pass) -> str:
    """A pass's calls in a few words: "1 Query, 208 UpdateItem, 2 schedules computed"."""
    return ", ".join([f"{n} {op}" for op, n in sorted(p.requests.items()) if op not in ("GetQueueUrl", "ReceiveMessage")]
                     + [f"{p.schedules} schedules computed"]
                     + ([f"{p.full_collections} full GC {p.collected:.2f} s"] if p.full_collections else []))


def summary(what: str, passes: list[Pass]) -> str:
    """The passes' median and slowest, and the target judged on the ledger's own time: a pass less
    the full collections of the cyclic garbage collector inside it. Those walk every object of
    this process, which here holds the local AWS's stored records too (25,000 more a round at
    5,000 minutely jobs; ~0.7-1.3 s each, one every few passes). On AWS the ledger runs in the
    periodic Lambda, whose heap holds none of them (the handler's own process is measured
    after the passes); under `jobplane dev` they are the dev process's pause, whichever thread
    meets it. Both figures are printed."""
    took = [p.seconds for p in passes]
    own = [p.seconds - p.collected for p in passes]
    median = statistics.median(took) if took else float("nan")
    slowest = max(took or [float("nan")])
    own_slowest = max(own or [float("nan")])
    full = sum(p.full_collections for p in passes)
    return (f"{what}: the periodic pass takes {median:.2f} s (median of {len(took)}, slowest {slowest:.2f} s; "
            f"{full} full collection{'s' if full != 1 else ''} of the process's heap in them, "
            f"{sum(p.collected for p in passes):.2f} s in all); without those the median is "
            f"{statistics.median(own) if own else float('nan'):.2f} s, the slowest {own_slowest:.2f} s; "
            f"target < {TARGET_S:g} s each: {'met' if own_slowest < TARGET_S else 'NOT met'}; load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


def minutes(since: datetime, until: datetime) -> list[datetime]:
    t = since.replace(second=0, microsecond=0) + timedelta(minutes=1)
    out = []
    while t <= until:
        out.append(t)
        t += timedelta(minutes=1)
    return out


def deploy_schedules(aws: LocalAWS, catalog: Catalog) -> None:
    """Each job's first schedule, as its team's root deploys it (the ledger reads when each was
    created); straight into the local scheduler, the targets never started."""
    aws.client("scheduler").create_schedule_group(Name=PREFIX)
    target = {"Arn": f"arn:aws:states:{aws.region}:{ACCOUNT}:stateMachine:x", "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/x"}
    for job in catalog.jobs:
        moto_patches.put_schedule(aws.region, {"Name": schedule_name(PREFIX, job.name, 0), "GroupName": PREFIX,
                                                "ScheduleExpression": job.schedule[0], "State": "ENABLED",
                                                "FlexibleTimeWindow": {"Mode": "OFF"}, "Target": dict(target)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=13)
    parser.add_argument("--workers", type=int, default=1, help="jobs accounted for at once (jobplane dev: 1)")
    args = parser.parse_args()
    names = [f"job-{i:04d}" for i in range(args.jobs)]
    with tempfile.TemporaryDirectory() as tmp, LocalAWS(prefix=PREFIX, server_port=0) as aws:
        catalog = Catalog(version=CATALOG_VERSION, name_prefix=PREFIX, jobs=[
            CatalogJob(name=n, team="billing", schedule=["cron(0/1 * * * ? *)"], timezone="UTC", policy="ALWAYS_RUN",
                       timeout=3600, steps=[], state_machine=f"{PREFIX}-{n}", asl="", states=0) for n in names])
        path = Path(tmp) / "catalog.json"
        path.write_text(catalog.render())
        deploy_schedules(aws, catalog)
        ddb, table = aws.client("dynamodb"), aws.resources["table_name"]
        now = datetime.now(timezone.utc)
        t = time.perf_counter()
        history = minutes(now - timedelta(hours=args.hours), now)  # every fire so far ran
        write(ddb, table, [item for n in names for item in runs(n, history)])
        # the watermarks as a first deploy leaves them, the worst case: all set at one instant
        # REFRESH ago, so each pass moves on those whose spread (by name) it reaches; job-0000's,
        # whose fires stop in the last round, at the newest fire (its runs since then are read)
        counted = 100_000  # the claims at each watermark, and since it one a minutely fire
        since = {n: now - REFRESH if n != names[0] else history[-1] for n in names}
        claims = {n: counted + len(minutes(since[n], now)) for n in names}
        write(ddb, table, [state(n, since[n], history[-1], claims[n], counted) for n in names])
        print(f"{args.jobs} minutely jobs, {len(history) * args.jobs:,} run records ({args.hours:g} h each), "
              f"written in {time.perf_counter() - t:.1f} s")
        deployment = deployment_of(aws, path)
        control = ControlPlane(deployment)
        # as `jobplane dev` does once its platform is up (cli/local.py): what the start holds
        # (here the records written above) is out of the collector's full passes, and what each
        # round adds is collected as in the dev process; without it a full collection walks the
        # 150,000 records' objects inside a pass (a 6.5 s pass at 5,000 jobs)
        freeze_started_heap()
        passes = []
        clock_now = now
        for n in range(args.rounds + 1):
            fires = minutes(clock_now, clock_now + timedelta(minutes=5))
            clock_now += timedelta(minutes=5)
            last = n == args.rounds
            # job-0000's fires stop running two rounds before the last: the last pass, at the usual
            # 5 minutes, is the first whose grace they are past (it reads its runs, records, alerts)
            ran = [j for j in names if not (n >= args.rounds - 2 and j == names[0])]
            write(ddb, table, [item for j in ran for item in runs(j, fires)])
            for j in ran:  # each claim: fired_schedule is the fire, claims_schedule one more
                claims[j] += len(fires)
            moved = states_moved(ddb, table, ran, fires[-1], claims)
            done = timed_pass(control, deployment, clock_now, args.workers)
            refreshed = sum(1 for j, w in watermarks(ddb, table).items() if moved.get(j) != w)
            what = f"alerted {done.alerted}" if last else f"{len(fires)} fires a job, none missed"
            print(f"pass {n + 1}: {done.seconds:.2f} s ({what}; {refreshed} watermarks moved on; {said(done)})")
            passes.append(done)
            assert (done.alerted == [names[0]]) if last else not done.alerted, done.alerted
        print(summary(f"{args.jobs} jobs", passes))
        periodic_handler(aws, path)


#: The handler as Lambda calls it, in a process of its own: prints its result's counts, its time
#: and the process's peak resident memory. Read as VmHWM (proc(5): "Peak resident set size"),
#: which a new program starts afresh; ru_maxrss would carry this bench's own (the local AWS with
#: its records) over the fork and exec.
HANDLER = """
import json, re, time
t = time.perf_counter()
from jobplane.platform.slow import handler
result = handler({}, None)
took = time.perf_counter() - t
peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())[1]) / 1024
print(json.dumps({"seconds": round(took, 2), "peak_mb": round(peak, 1),
                  "result": {k: (len(v) if isinstance(v, list) else v) for k, v in result.items()}}))
"""


def periodic_handler(aws: LocalAWS, catalog: Path) -> None:
    env = {"PATH": os.environ["PATH"], "AWS_ENDPOINT_URL": aws.endpoint_url or "",
           "AWS_ACCESS_KEY_ID": aws.credentials.access_key_id, "AWS_SECRET_ACCESS_KEY": aws.credentials.secret_access_key,
           "AWS_REGION": aws.region, "AWS_DEFAULT_REGION": aws.region, "JOBPLANE_NAME_PREFIX": PREFIX,
           "JOBPLANE_TABLE": aws.resources["table_name"], "JOBPLANE_TOPIC_ARN": aws.resources["topic_arn"],
           "JOBPLANE_ACCOUNT_ID": ACCOUNT, "JOBPLANE_CATALOG": str(catalog), "JOBPLANE_LOG_GROUP": aws.log_group}
    done = subprocess.run([sys.executable, "-c", HANDLER], env=env, capture_output=True, text=True, timeout=900)
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode != 0 or not line.startswith("{"):
        raise SystemExit(f"the periodic handler failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}")
    out = json.loads(line)
    print(f"the periodic Lambda handler, whole, at these jobs: {out['seconds']:.2f} s, peak memory "
          f"{out['peak_mb']:.0f} MB ({out['result']})")


if __name__ == "__main__":
    main()
