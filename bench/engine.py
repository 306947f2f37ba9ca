"""The compiled state machine on the local engine: transitions per path, latency, concurrency.

    .venv/bin/python bench/engine.py [-n 20] [--concurrent 100] [--rounds 10] [--burners 2]

Runs real compiled jobs with real runner subprocesses (the local ECS agent) and prints:
states entered (billed transitions on AWS Standard) for a one-step success, a three-step
success, a failure (at once, and after three attempts: what each retry costs), the skips (a
duplicate fire, a fire while the claim's holder runs) and a success that ends a failure streak
(RECOVERED), each beside its target (issue 66: a one-step success <= 3, +1 per further step,
a console start with {} the same; SPEC.md, "Fewer state transitions": a duplicate <= 4; a
holder-check skip <= 6; a failure <= 7); the
start-to-finish latency of a one-step no-op job (median of N); and ROUNDS rounds of N concurrent starts of an ALWAYS_RUN no-op job (all finished, none
lost, none FAILED), with BURNERS processes spinning on the CPU beside them: the spurious
failure of issue 13 showed only on a loaded machine.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

from jobplane.cli.local import ENGINE_LOG, engine_log_to_file
from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.contract import states as sn
from jobplane.platform.local.engine import LocalAWS

TESTS = Path(__file__).resolve().parents[1] / "tests"
NOOP = "sample_apps.functions:behave"


def deploy(aws: LocalAWS, name: str, steps: int, policy: str = "ALWAYS_RUN", attempts: int = 1,
           events: list[str] | None = None) -> None:
    retry = {"retry": {"attempts": attempts, "interval": 1, "backoff": 1}} if attempts > 1 else {}
    notify = {"notify": {"events": events}} if events else {}
    job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "policy": policy, **notify,
                              "steps": [{"name": f"s{i}", "python": NOOP, **retry} for i in range(steps)]})
    aws.deploy(name, asl.compile_job(job, aws.prefix))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("--concurrent", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--burners", type=int, default=2, help="CPU-bound processes running during the rounds")
    args = ap.parse_args()
    # moto logs each failed state and each absent path a Choice tests as an ERROR line of
    # interpreter internals: to a file, as under `jobplane dev`, so the figures stand alone
    logs = Path(tempfile.mkdtemp(prefix="jobplane-bench-engine-"))
    engine_log_to_file(logs)
    print(f"engine log: {logs / ENGINE_LOG}")
    with LocalAWS(env={"PYTHONPATH": str(TESTS)}) as aws:
        deploy(aws, "one", 1)
        deploy(aws, "three", 3)
        deploy(aws, "skipper", 1, policy="SKIP_IF_RUNNING")
        deploy(aws, "retried", 1, attempts=3)
        deploy(aws, "announcer", 1, events=["FAILED", "RECOVERED"])

        def run(job: str, params: dict, t: str | None = None):
            inp = execution_input.scheduled(t, params) if t else execution_input.manual("bench", overrides=params)
            return aws.run(job, inp)

        one = run("one", {"mode": "ok"})
        three = run("three", {"mode": "ok"})
        failed = run("one", {"mode": "fail"})
        retried = run("retried", {"mode": "fail"})
        dup_first = run("skipper", {"mode": "ok"}, "2027-01-01T00:00:00Z")
        duplicate = run("skipper", {"mode": "ok"}, "2027-01-01T00:00:00Z")
        plain_first = run("one", {"mode": "ok"}, "2027-01-01T00:00:00Z")
        plain_duplicate = run("one", {"mode": "ok"}, "2027-01-01T00:00:00Z")
        console = aws.wait(aws.client("stepfunctions").start_execution(  # the console's default input
            stateMachineArn=aws.state_machines["one"], input="{}")["executionArn"])
        holder_running = while_held(aws, logs)
        announced_fail = run("announcer", {"mode": "fail"})
        recovered = run("announcer", {"mode": "ok"})
        after_recovery = run("announcer", {"mode": "ok"})
        print("states entered (transitions billed on AWS), target (SPEC.md) where one is set:")
        for label, ex, target in (
                ("one-step success", one, 3), ("three-step success", three, 5), ("one-step failure", failed, 7),
                ("failure after 3 attempts", retried, None),
                ("duplicate fire (skip)", plain_duplicate, 4), ("duplicate, SKIP_IF_RUNNING", duplicate, 4),
                ("holder running (skip)", holder_running, 6),
                ("success, RECOVERED job", after_recovery, 3), ("recovered (RECOVERED sent)", recovered, None),
                ("console start with {}", console, 3)):
            n = len(ex.states_entered)
            verdict = "" if target is None else f"<= {target} {'ok' if n <= target else 'OVER'}"
            print(f"  {label:27s} {n:2d} {verdict:9s} {' > '.join(ex.states_entered)}")
        assert dup_first.status == plain_first.status == console.status == "SUCCEEDED"
        assert announced_fail.status == "FAILED" and recovered.status == after_recovery.status == "SUCCEEDED"
        assert sn.NOTIFY_RECOVERED in recovered.states_entered
        assert sn.NOTIFY_RECOVERED not in after_recovery.states_entered

        latencies = []
        for _ in range(args.n):
            t = time.perf_counter()
            ex = run("one", {"mode": "ok"})
            latencies.append(time.perf_counter() - t)
            assert ex.status == "SUCCEEDED"
        print(f"one-step no-op, start to finish: median {statistics.median(latencies) * 1000:.0f} ms, "
              f"min {min(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms over {args.n} runs")

        totals: dict[str, int] = {}
        with burning(args.burners):
            for round_ in range(1, args.rounds + 1):
                by_status, started, total = concurrent_round(aws, args.concurrent)
                for k, v in by_status.items():
                    totals[k] = totals.get(k, 0) + v
                print(f"round {round_}: {args.concurrent} concurrent starts of an ALWAYS_RUN no-op job: started in "
                      f"{started:.1f} s, all finished in {total:.1f} s; records by status: {by_status}", flush=True)
        print(f"{args.rounds} rounds x {args.concurrent} concurrent no-op runs with {args.burners} CPU burners: "
              f"{totals.get('SUCCEEDED', 0)} SUCCEEDED, {totals.get('FAILED', 0)} FAILED, "
              f"{sum(v for k, v in totals.items() if k not in ('SUCCEEDED', 'FAILED'))} other {totals}")


def while_held(aws: LocalAWS, logs: Path):
    """A scheduled fire of a SKIP_IF_RUNNING job while an earlier run holds the claim: the holder
    check's skip. The holder waits for a file, so it runs for as long as the skip takes."""
    release, marker = logs / "release", logs / "holder-started"
    holder = aws.start("skipper", execution_input.scheduled("2027-02-01T00:00:00Z", {
        "mode": "wait", "seconds": 120, "release": str(release), "marker": str(marker)}))
    deadline = time.monotonic() + 60
    while not marker.exists():  # the holder's step runs: its claim is held
        assert time.monotonic() < deadline, "the holder's step never started"
        time.sleep(0.05)
    skipped = aws.run("skipper", execution_input.scheduled("2027-02-01T01:00:00Z", {"mode": "ok"}))
    release.write_text("go")
    assert aws.wait(holder).status == "SUCCEEDED" and skipped.status == "SUCCEEDED"
    return skipped


def concurrent_round(aws: LocalAWS, n: int) -> tuple[dict[str, int], float, float]:
    arns: list[str] = []
    lock = threading.Lock()
    t0 = time.perf_counter()

    def start() -> None:
        arn = aws.start("one", execution_input.manual("bench", overrides={"mode": "ok"}))
        with lock:
            arns.append(arn)

    threads = [threading.Thread(target=start) for _ in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    started = time.perf_counter() - t0
    for a in arns:
        aws.wait(a, timeout=600)
    total = time.perf_counter() - t0
    for a in arns:
        aws.wait_reconciled(a)
    repo = aws.repository()
    by_status: dict[str, int] = {}
    for a in arns:
        r = repo.execution(a.rsplit(":", 1)[1])
        key = r.status if r is not None else "MISSING"
        by_status[key] = by_status.get(key, 0) + 1
    return by_status, started, total


@contextlib.contextmanager
def burning(n: int) -> Iterator[None]:
    """n processes spinning on the CPU until the block ends (a loaded machine)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
