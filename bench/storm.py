"""The storm proof at full size (issue 62, part 1): the example jobs, a pooled ``jp.map`` of
1,000 tenants beside another team's job on the same pool, and a Lambda job whose function went
idle, run on `jobplane dev`'s platform (in this process) under the fault profile ``storm``
(AWS's documented throttles and failures; platform/local/fault_profiles.py), with the faults the
proof is about also scripted so each run meets them (tests/storm_kit.py, which the test
tests/test_storm.py runs at 30 tenants).

    .venv/bin/python bench/storm.py [-n 1000] [--concurrency 50] [--pool-size 10] [--seed 62] [--compare]

Prints: every run's end (spurious FAILED: any not SUCCEEDED), runs lost (no record of their end,
or another status), the map's item records, the most pool slots held at once (from the steps'
own processes), the faults injected by service and error, those on a top-level step's own call
and how many its attempt shows with the retry taken, those on a map item's own call and how many
the item's tries show (from its child execution's history), and the wall time. ``--compare`` runs the
same workload under the profile ``none`` first and prints the storm's wall time as a ratio of it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from storm_kit import dump, run_storm  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000, help="map items (tenants)")
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--pool-size", type=int, default=10)
    ap.add_argument("--seed", type=int, default=62)
    ap.add_argument("--compare", action="store_true", help="also run the workload without faults, first")
    args = ap.parse_args()
    profiles = ["none", "storm"] if args.compare else ["storm"]
    seconds: dict[str, float] = {}
    for profile in profiles:
        with tempfile.TemporaryDirectory(prefix=f"jobplane-storm-{profile}-") as tmp:
            report = run_storm(Path(tmp), items=args.n, concurrency=args.concurrency, seed=args.seed,
                               pool_size=args.pool_size, profile=profile, timeout=7200)
        print(f"== {args.n} items, max_concurrency {args.concurrency}, pool size {args.pool_size}, seed {args.seed}")
        print("\n".join(report.lines()), flush=True)
        seconds[profile] = report.seconds
        ok = not report.failed and not report.lost and report.items["SUCCEEDED"] == args.n \
            and report.most_held <= args.pool_size and not report.unshown \
            and report.step_faults_shown == report.step_faults and report.item_faults_shown == report.item_faults
        print(f"proof: {'holds' if ok else 'BROKEN'} (0 spurious FAILED, 0 lost, every item, pool within its size, "
              "every fault shown on its attempt or its item's tries, with the retry)", flush=True)
        if not ok:
            print(dump(report), flush=True)
    if args.compare:
        print(f"storm / none wall time: {seconds['storm'] / seconds['none']:.2f}x")


if __name__ == "__main__":
    main()
