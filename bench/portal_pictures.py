"""The pictures' pages with a big store (issue 70): the jobs page with its marks, a job page with
its grid, a day's timeline (page and API), the marks' API.

    .venv/bin/python bench/portal_pictures.py [--jobs 1000] [--executions 20000] [--day-runs 5000] [-n 30]

Seeds the store as bench/portal.py does (its generator, its records), then what the reconciler
would have written at each of those runs' ends: each job's RECENT item (its last 10 runs) and
the days' items of the runs (contract/run_days.py); ``--day-runs`` more runs on one day, spread
over its jobs, stand for a busy day (every job of 5,000 running daily). Prints median and p95 of
each page over HTTP, against the portal's target (p95 <= 100 ms), and the AWS requests each makes.
"""

from __future__ import annotations

import argparse
import json
import random
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
from boto3.dynamodb.types import TypeDeserializer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import portal as base  # noqa: E402  (bench/portal.py: its generator, seed and timing)

from jobplane.contract import recent_runs as rr  # noqa: E402
from jobplane.contract import run_days  # noqa: E402
from jobplane.contract.bindings import asl_of  # noqa: E402
from jobplane.contract.catalog import Catalog  # noqa: E402
from jobplane.contract.clock import iso_millis  # noqa: E402
from jobplane.contract.config import load_config  # noqa: E402
from jobplane.contract.recent_runs import KEPT, RecentRun  # noqa: E402
from jobplane.contract.run_days import DayRun  # noqa: E402
from jobplane.compiler.output import compile_all, write_output  # noqa: E402
from jobplane.platform.control import ControlPlane, Deployment  # noqa: E402
from jobplane.platform.local.engine import LocalAWS  # noqa: E402
from jobplane.portal.app import create_app  # noqa: E402
from jobplane.portal.auth import mint_login_token  # noqa: E402
from jobplane.portal.settings import AuthSettings, PortalSettings  # noqa: E402

BUSY_DAY = "2026-03-02"


def pictures_items(records: list[dict], day_runs: int, rng: random.Random) -> list[dict]:
    """The RECENT and RUNS# items the reconciler would have written for ``records``, and a busy day."""
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
    for (pk, sk), texts in lines.items():
        items.append({"pk": {"S": pk}, "sk": {"S": sk}, run_days.ATTR_LINES: {"SS": texts}})
    return items


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--executions", type=int, default=20000)
    ap.add_argument("--day-runs", type=int, default=5000)
    ap.add_argument("-n", type=int, default=30)
    ap.add_argument("--repo", type=Path, help="generate and compile here once; reuse on the next run")
    args = ap.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="jobplane-pictures-bench-") as tmp:
        repo = args.repo / f"{args.jobs}-jobs" if args.repo else Path(tmp)
        out = repo / "out"
        if not (out / "done").exists():
            base.write_repo(repo, args.jobs)
            write_output(compile_all(load_config(repo)), out)
            (out / "done").write_text("")
        config = load_config(repo)
        with LocalAWS(server_port=0, log_dir=repo / "logs") as aws:
            catalog = json.loads(Catalog.load(out).render())
            first = catalog["jobs"][0]
            aws.deploy(first["name"], asl_of((out / first["asl"]).read_text()))
            ddb, table = aws.client("dynamodb"), aws.resources["table_name"]
            written: list[dict] = []
            des = TypeDeserializer()

            def keep(params, **_):  # type: ignore[no-untyped-def]  # the seed's records, as written
                for w in params["RequestItems"][table]:
                    item = {k: des.deserialize(v) for k, v in w["PutRequest"]["Item"].items()}
                    if item["sk"] == "EXEC":
                        written.append(item)

            ddb.meta.events.register("before-parameter-build.dynamodb.BatchWriteItem", keep, unique_id="pictures-keep")
            t = time.perf_counter()
            busy, _ = base.seed(aws, catalog, args.executions, rng)
            ddb.meta.events.unregister("before-parameter-build.dynamodb.BatchWriteItem", unique_id="pictures-keep")
            extra = pictures_items(written, args.day_runs, rng)
            for i in range(0, len(extra), 25):
                pending = {table: [{"PutRequest": {"Item": it}} for it in extra[i:i + 25]]}
                while pending:
                    pending = ddb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
            print(f"seeded {args.executions} records, {len(extra)} pictures items in {time.perf_counter() - t:.1f} s")
            deployment = Deployment(table=table, topic_arn=aws.resources["topic_arn"], endpoint_url=aws.endpoint_url,
                                    catalog_path=out, log_group=aws.log_group,
                                    access_key_id=aws.credentials.access_key_id,
                                    secret_access_key=aws.credentials.secret_access_key)
            app = create_app(PortalSettings.from_config(config, deployment, AuthSettings(mode="dev", dev_login=base.LOGIN)),
                             ControlPlane(deployment))
            import uvicorn

            listening = socket.socket()
            listening.bind(("127.0.0.1", 0))
            port = listening.getsockname()[1]
            server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
            server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
            threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True).start()
            while not server.started:
                time.sleep(0.05)
            day_of_seed = written[len(written) // 2]["started_at"][:10]
            pages = {"jobs page with marks (first 100 jobs)": "/", "API: recent runs (first 100 jobs)": "/api/recent-runs",
                     "job page with its grid (busy job)": f"/jobs/{busy}", "API: the busy job's grid": f"/api/jobs/{busy}/grid",
                     f"timeline, a seeded day ({day_of_seed})": f"/timeline?day={day_of_seed}",
                     f"timeline, the busy day (+{args.day_runs} runs)": f"/timeline?day={BUSY_DAY}",
                     "API: the busy day's timeline": f"/api/timeline?day={BUSY_DAY}"}
            counted: Counter[str] = Counter()
            control = app.state.portal.control
            for client in (control.ddb, control.sfn, control.scheduler):
                client.meta.events.register("before-call", lambda model, **_: counted.update([model.name]))
            results, requests = {}, {}
            with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                assert http.get(f"/login?token={mint_login_token(base.LOGIN)}").status_code in (302, 303, 307)
                for label, url in pages.items():
                    results[label] = base.timed(http, url, args.n)
                    counted.clear()
                    assert http.get(url).status_code == 200, url
                    requests[label] = ", ".join(f"{n} {op}" for op, n in sorted(counted.items()))
            server.should_exit = True
            print(f"\n{args.jobs:,} jobs, {args.executions:,} records; latency over HTTP, n={args.n} each:")
            for label, values in results.items():
                values.sort()
                med, p95 = statistics.median(values), values[int(0.95 * (len(values) - 1))]
                print(f"  {label:48s} median {med * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   "
                      f"target p95 <= {base.TARGET_MS} ms: {'met' if p95 * 1000 <= base.TARGET_MS else 'NOT met'}")
            print("\nAWS requests per page:")
            for label, made in requests.items():
                print(f"  {label:48s} {made or 'none'}")


if __name__ == "__main__":
    main()
