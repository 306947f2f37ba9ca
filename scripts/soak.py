"""Run the whole test suite N times in a row and report every failure by test id.

    .venv/bin/python scripts/soak.py [N] [-- extra pytest args]      (make soak N=5)

A test that fails once is a defect in the code or in the test (never retried to green): this is
how such a defect is found before CI finds it. Each run's summary line and every failed test id
are printed as they come; the exit status is 1 if any run failed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = argv[:argv.index("--")] if "--" in argv else argv
    runs = int(args[0]) if args else 5
    failures: Counter[str] = Counter()
    failed_runs = 0
    for i in range(1, runs + 1):
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "auto", "-q", "-p", "no:cacheprovider", "-rfE",
                               *extra], cwd=ROOT, capture_output=True, text=True)
        ids = re.findall(r"^(?:FAILED|ERROR) (\S+)", proc.stdout, re.M)
        summary = next((line for line in reversed(proc.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", line)),
                       f"exit {proc.returncode}")
        print(f"run {i}/{runs}: {summary.strip('= ')} ({time.monotonic() - started:.0f} s)", flush=True)
        for test_id in ids:
            print(f"  failed: {test_id}", flush=True)
        failures.update(ids)
        if proc.returncode != 0:
            failed_runs += 1
            # the whole output of a failed run is kept: a failure seen once must be diagnosable
            kept = ROOT / ".soak" / f"run-{i}.log"
            kept.parent.mkdir(exist_ok=True)
            kept.write_text(proc.stdout + proc.stderr)
            print(f"  its output: {kept}", flush=True)
            if not ids:
                print(proc.stdout[-3000:] + proc.stderr[-3000:], flush=True)
    print(f"{runs - failed_runs} of {runs} runs passed")
    for test_id, count in failures.most_common():
        print(f"  {count}x {test_id}")
    return 1 if failed_runs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
