"""The fire ledger's pass (platform/missed.py) at 1,000 calendar jobs (issue 53: within the
ledger's 2 s per pass).

    .venv/bin/python bench/calendar_ledger.py [--jobs 1000] [--rounds 13]

As bench/missed_fires.py, on the embedded local AWS in server mode, but every job names the
jp-business calendar (Japan's holidays from the `holidays` package, the 12-29..01-03 closure),
compiled as the compiler compiles it (compiler/calendars.py): a third run every business-day
minute (`cron(0/1 * * * ? *)` filtered, skip), a third the same moved to the next business day,
a third `jp.businessDays(['09:00', '19:05'])` and `jp.monthly(business_day=-1, at='19:10')`.
Each round moves the clock 5 minutes and runs those fires; the ledger's pass computes each
distinct schedule's fires (three kinds, one calendar) once. The first half of the rounds crosses
Friday 2026-11-20's midnight into the weekend (no fire, nothing missed); the second half Monday
11-23's (Labour Thanksgiving Day) into Tuesday; at the start of each half the watermarks are as
a deploy leaves them (bench/missed_fires.py: REFRESH ago, so each pass moves ~1 in 48 of them);
job-0000's fires stop running in the last three rounds, so the last pass (at the usual 5
minutes) is the first past their grace: it reads that job's runs, records and alerts.

Where the time went (measured on a quiet machine before this change): passes that moved
watermarks took 2.1-2.6 s (~160 a pass, one conditional UpdateItem each, 11-14 ms on the local
AWS) and the alerting pass 7.9 s (568 of them: its clock was 15 minutes on, not 5); the
calendar's fires were expanded per job (a job whose fires move off closed days looks ~80 days
around its window). Now one expansion per distinct schedule a pass, a watermark moves every 2-4
hours (~42 a pass at 1,000 jobs) with a shorter write, and the alerting job's own work is
~50 calls (its runs, its 36 deployed schedules read for the cause, 5 MISSED records, the alert).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
import missed_fires as mf  # noqa: E402

from jobplane.compiler.calendars import resolve  # noqa: E402
from jobplane.contract import datamodel as dm  # noqa: E402
from jobplane.contract.business_fires import CalendarSchedule, calendar_fires, expand  # noqa: E402
from jobplane.contract.calendar_config import parse_calendars  # noqa: E402
from jobplane.contract.clock import iso_millis  # noqa: E402
from jobplane.contract.catalog import CATALOG_VERSION, Catalog, CatalogJob  # noqa: E402
from jobplane.platform.control import ControlPlane  # noqa: E402
from jobplane.platform.local.engine import LocalAWS  # noqa: E402
from jobplane.platform.missed import GRACE, REFRESH  # noqa: E402
from jobplane.devserver.dev_platform import freeze_started_heap  # noqa: E402

PREFIX = mf.PREFIX
TOKYO = ZoneInfo("Asia/Tokyo")
RULES = [(("cron(0/1 * * * ? *)",), "skip"), (("cron(0/1 * * * ? *)",), "next"),
         (("business(days at=09:00,19:05)", "business(monthly business_day=-1 at=19:10)"), "skip")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=13)
    parser.add_argument("--hours", type=float, default=1.0, help="run history of the minutely jobs")
    parser.add_argument("--workers", type=int, default=1,
                        help="jobs accounted for at once (jobplane dev: 1; the periodic Lambda on AWS: 8)")
    args = parser.parse_args()
    settings, problems = parse_calendars("bench", {"years": [2026, 2028], "jp-business": {
        "holidays": "JP", "closed": ["12-29..01-03"]}}, set())
    assert not problems, problems
    cal = resolve(settings, "jp-business")
    names = [f"job-{i:04d}" for i in range(args.jobs)]
    kinds = {n: RULES[i % len(RULES)] for i, n in enumerate(names)}
    t = time.perf_counter()
    deployed = {rules: expand(CalendarSchedule(rules[0], cal, rules[1], "Asia/Tokyo")) for rules in RULES}
    print(f"compiled the three kinds' schedules (2026-2028) in {time.perf_counter() - t:.1f} s: "
          + ", ".join(f"{len(v)} crons" for v in deployed.values()))
    with tempfile.TemporaryDirectory() as tmp, LocalAWS(prefix=PREFIX, server_port=0) as aws:
        catalog = Catalog(version=CATALOG_VERSION, name_prefix=PREFIX, jobs=[
            CatalogJob(name=n, team="billing", schedule=deployed[kinds[n]], timezone="Asia/Tokyo", policy="ALWAYS_RUN",
                       timeout=3600, steps=[], state_machine=f"{PREFIX}-{n}", asl="", states=0,
                       rules=list(kinds[n][0]), calendar=cal, on_closed_day=kinds[n][1]) for n in names])
        path = Path(tmp) / "catalog.json"
        path.write_text(catalog.render())
        mf.deploy_schedules(aws, catalog)
        ddb, table = aws.client("dynamodb"), aws.resources["table_name"]
        entries = {e.name: e for e in catalog.jobs}

        def fires(job: str, a: datetime, b: datetime) -> list[datetime]:
            cs = entries[job].calendar_schedule
            assert cs is not None
            return calendar_fires(cs, a, b).times

        # Friday 2026-11-20, 23:40 Tokyo
        now = datetime(2026, 11, 20, 23, 40, tzinfo=TOKYO).astimezone(timezone.utc)
        t = time.perf_counter()
        # the minutely jobs' last --hours of fires ran; the daily ones' 09:00 and 19:05
        history = {n: fires(n, now - (timedelta(hours=args.hours) if kinds[n] != RULES[2] else timedelta(hours=16)), now)
                   for n in names}
        mf.write(ddb, table, [item for n in names for item in mf.runs(n, history[n])])
        # the watermarks as a first deploy leaves them (bench/missed_fires.py): REFRESH ago, but
        # job-0000's (its fires stop in the last round) at the start
        since = {n: now - REFRESH if n != names[0] else now for n in names}
        claims = {n: 100_000 + len(history[n]) for n in names}  # the claims so far; at the watermark, less
        counted = {n: claims[n] - len(fires(n, since[n] + timedelta(milliseconds=1), history[n][-1])) for n in names}
        mf.write(ddb, table, [mf.state(n, since[n], history[n][-1], claims[n], counted[n]) for n in names])
        print(f"{args.jobs} calendar jobs, {sum(len(h) for h in history.values()):,} run records, written in {time.perf_counter() - t:.1f} s")
        deployment = mf.deployment_of(aws, path)
        control = ControlPlane(deployment)
        freeze_started_heap()  # as `jobplane dev` does once its platform is up (bench/missed_fires.py)
        passes = []
        clock_now = now
        for n in range(args.rounds + 1):
            step = timedelta(minutes=5)
            if n == args.rounds // 2:  # Saturday 00:xx -> Monday 23:40 (the holiday), as a deploy left it
                clock_now = datetime(2026, 11, 23, 23, 40, tzinfo=TOKYO).astimezone(timezone.utc)
                for j in names:
                    mark = clock_now - (REFRESH if j != names[0] else GRACE)
                    ddb.update_item(TableName=table, Key={"pk": {"S": dm.job_partition(j)}, "sk": {"S": dm.STATE_SK}},
                                    UpdateExpression=f"SET {dm.ATTR_FIRES_CHECKED} = :w, {dm.ATTR_FIRES_CLAIMS} = :c",
                                    ExpressionAttributeValues={":w": {"S": iso_millis(mark)},
                                                               ":c": {"N": str(claims[j])}})
            window = (clock_now + timedelta(milliseconds=1), clock_now + step)
            clock_now += step
            last = n == args.rounds
            # job-0000's fires stop running two rounds before the last: the last pass, at the usual
            # 5 minutes, is the first whose grace they are past (it reads its runs, records, alerts)
            ran = [j for j in names if not (n >= args.rounds - 2 and j == names[0])]
            new = {j: fires(j, *window) for j in ran}
            mf.write(ddb, table, [item for j in ran for item in mf.runs(j, new[j])])
            for j in ran:
                claims[j] += len(new[j])
            newest = {j: (new[j] or history[j])[-1] for j in ran}
            for j in ran:
                history[j] = history[j] + new[j]
            marks = mf.watermarks(ddb, table)
            for j in ran:  # the claims' writes (mf.states_moved takes one newest fire for all)
                ddb.update_item(TableName=table, Key={"pk": {"S": dm.job_partition(j)}, "sk": {"S": dm.STATE_SK}},
                                UpdateExpression="SET #f = :f, #c = :c",
                                ExpressionAttributeNames={"#f": f"{dm.ATTR_FIRED_PREFIX}schedule",
                                                          "#c": f"{dm.ATTR_CLAIMS_PREFIX}schedule"},
                                ExpressionAttributeValues={":f": {"S": newest[j].strftime("%Y-%m-%dT%H:%M:%SZ")},
                                                           ":c": {"N": str(claims[j])}})
            done = mf.timed_pass(control, deployment, clock_now, args.workers)
            refreshed = sum(1 for j, w in mf.watermarks(ddb, table).items() if marks.get(j) != w)
            count = len(new[names[1]])
            what = f"alerted {done.alerted}" if last else f"{count} fires a job, none missed"
            print(f"pass {n + 1} (to {clock_now.astimezone(TOKYO):%a %m-%d %H:%M} Tokyo): {done.seconds:.2f} s ({what}; "
                  f"{refreshed} watermarks moved on; {mf.said(done)})")
            passes.append(done)
            assert (done.alerted == [names[0]]) if last else not done.alerted, done.alerted
        print(mf.summary(f"{args.jobs} calendar jobs", passes))


if __name__ == "__main__":
    main()
