"""Exports the cohorts the build-cohorts Celery task computed, as CSV for the analysts."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from examples import workspace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    cohorts = workspace.read_json(workspace.area("growth") / "cohorts.json")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"cohorts-{cohorts['week']}.csv"
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["signup_day", "signups", "retained_7d"])
        for row in cohorts["days"]:
            writer.writerow([row["day"], row["signups"], row["retained_7d"]])
    print(f"exported {len(cohorts['days'])} cohort days to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
