"""Three jobs sharing a pool of 3, 20 steps each, on the local engine (docs/pools.md).

    .venv/bin/python bench/pools.py [--jobs 3] [--steps 20] [--size 3] [--seconds 2]

Each job is one parallel group of STEPS pooled steps (so every job asks for more slots than the
pool has: 60 steps want 3 slots), each step a real runner subprocess that holds its slot for
SECONDS. Prints, from the records (each attempt's start and end as the history tells it) and
from the steps' own log: the most steps that ever ran at once (never above SIZE), the pool item
left empty, the total wall time against the ideal schedule (ceil(jobs x steps / size) x the
step's own run time, measured as the median attempt), the polls (tries while waiting), the
state transitions per job, the wait loop's schedule with its transitions per wait, and the slot
time left idle while steps waited (measured, and what the schedule expects). Not a test:
nothing here decides pass or fail but the cap.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jobplane.cli.local import engine_log_to_file
from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.contract import pools as pc
from jobplane.contract.clock import parse_iso
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.pool_slots import pools
from jobplane.platform.timeline import history, state_transitions

TESTS = Path(__file__).resolve().parents[1] / "tests"
HOLD = "sample_apps.functions:hold"
PER_TRY = 3  # back-off, wait, claim (docs/pools.md)


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    now = best = 0
    for _, d in edges:
        now += d
        best = max(best, now)
    return best


def idle_while_waiting(running: list[tuple[float, float]], waiting: list[tuple[float, float]],
                       size: int) -> float:
    """Slot-seconds free while a step waited for one: integral of min(free slots, waiters)."""
    edges = sorted([(s, 0, 1) for s, _ in running] + [(e, 0, -1) for _, e in running]
                   + [(s, 1, 1) for s, _ in waiting] + [(e, 1, -1) for _, e in waiting])
    held = waiters = 0
    idle, last = 0.0, None
    for t, kind, d in edges:
        if last is not None:
            idle += (t - last) * max(min(size - held, waiters), 0)
        last = t
        if kind == 0:
            held += d
        else:
            waiters += d
    return idle


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--size", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine_log_to_file(Path(tmp))  # moto's ERROR line for each refused claim goes to <tmp>/engine.log
        log = Path(tmp) / "held.log"
        with LocalAWS(env={"PYTHONPATH": str(TESTS)}) as aws:
            names = [f"month-end-{i}" for i in range(args.jobs)]
            for name in names:
                members = [{"name": f"tenant-{j}", "python": HOLD,
                            "kwargs": {"log": str(log), "seconds": args.seconds}} for j in range(args.steps)]
                job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "pool": "billing-db",
                                           "policy": "ALWAYS_RUN", "steps": [{"name": "all", "parallel": members}]})
                aws.deploy(name, asl.compile_job(job, aws.prefix, {"billing-db": args.size}))
            began = time.monotonic()
            arns = [aws.start(n, execution_input.manual("bench")) for n in names]
            ended = [aws.wait(arn, timeout=3600) for arn in arns]
            wall = time.monotonic() - began
            for arn in arns:
                aws.wait_reconciled(arn, timeout=600)
            records = [aws.repository().execution(arn.rsplit(":", 1)[1]) for arn in arns]
            spans = [(parse_iso(a.started_at).timestamp(), parse_iso(a.finished_at).timestamp())
                     for r in records if r for a in r.timeline if a.started_at and a.finished_at]
            waits = [(parse_iso(a.waiting_since).timestamp(), parse_iso(a.started_at).timestamp())
                     for r in records if r for a in r.timeline if a.started_at and a.waiting_since]
            waited = [e - s for s, e in waits]
            sfn = aws.client("stepfunctions")
            events = [history(sfn, arn) for arn in arns]
            polls = sum(1 for ev in events for e in ev if e["type"] == "WaitStateEntered"
                        and e["stateEnteredEventDetails"]["name"].endswith(": pool wait"))
            left = [p for p in pools(aws.client("dynamodb"), aws.resources["table_name"]) if p.holders]
        own = []
        starts: dict[str, float] = {}
        for line in log.read_text().splitlines():
            what, pid, t = line.split()
            if what == "start":
                starts[pid] = float(t)
            else:
                own.append((starts.pop(pid), float(t)))
    total = args.jobs * args.steps
    attempt = statistics.median(e - s for s, e in spans)
    ideal = math.ceil(total / args.size) * attempt
    print(f"pool of {args.size}, {args.jobs} jobs x {args.steps} pooled steps of {args.seconds:g} s "
          f"(real runner subprocesses on the local engine)")
    print(f"  runs: {', '.join(e.status for e in ended)}; records: "
          f"{', '.join(r.status if r else 'none' for r in records)}; slots left held: {sum(p.used for p in left)}")
    print(f"  most at once, from the records: {most_at_once(spans)} (attempts {len(spans)}); "
          f"from the steps' own log: {most_at_once(own)} (steps {len(own)})")
    print(f"  wall time {wall:.1f} s vs ideal {ideal:.1f} s (ceil({total}/{args.size}) x median attempt "
          f"{attempt:.2f} s): {wall / ideal:.2f}x")
    print(f"  waiting for a slot: median {statistics.median(waited):.1f} s, max {max(waited):.1f} s; "
          f"tries that found no room: {polls} ({polls / total:.1f} per step)")
    print(f"  state transitions per job: {', '.join(str(state_transitions(ev)) for ev in events)} "
          f"({statistics.mean(state_transitions(ev) for ev in events) / args.steps:.1f} per step)")
    idle = idle_while_waiting(spans, [w for w in waits if w[1] > w[0]], args.size)
    fast, slow = 1.5 * pc.POLL_FAST, 1.5 * pc.POLL_SLOW  # mean sleeps of the two tiers
    print(f"  wait loop: {pc.poll_schedule()} (random, not FIFO); {PER_TRY} transitions per try: "
          f"{PER_TRY * 3600 / fast:.0f} per hour of waiting, then {PER_TRY * 3600 / slow:.0f}")
    print(f"  slot idle while steps waited: {idle:.1f} slot-s in all, {idle / total:.2f} s per step (expected per "
          f"release: mean sleep / (waiters + 1), {fast:.0f} s / {total // 2 + 1} = {fast / (total // 2 + 1):.2f} s "
          f"with {total // 2} waiting, up to {2 * pc.POLL_FAST} s for a lone waiter)")
    print(f"  wall time over the ideal: {wall - ideal:.1f} s = slots idle while steps waited {idle / args.size:.1f} s "
          f"+ the rest {wall - ideal - idle / args.size:.1f} s (each hand-off's release, claim and task start, "
          "outside the attempt the ideal counts; the first claims)")
    if most_at_once(spans) > args.size or most_at_once(own) > args.size or left:
        sys.exit("the pool's cap was broken or a slot was left held")


if __name__ == "__main__":
    main()
