"""``jobplane import`` of 1,000 crontab lines, imported and verified, next to ``jobplane validate``
of what it wrote (issue 37's target: import + verify <= 3x validate).

    .venv/bin/python bench/import.py [--lines 1000] [--rounds 3]

Both run as the CLI a team would run, each in a fresh process, in one scratch repository. The
crontab mixes what real ones hold: daily and weekday times, hourly, every 5-30 minutes, weekly,
monthly, both day fields (two schedules), Django commands and shell pipelines, in Asia/Tokyo.
Prints each round's times, the medians and their ratio.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOBPLANE = str(Path(sys.executable).parent / "jobplane")


def crontab(lines: int, rng: random.Random) -> str:
    out = ["SHELL=/bin/bash", "PATH=/usr/local/bin:/usr/bin:/bin", "MAILTO=ops@example.com", ""]
    for i in range(lines):
        m, h = rng.randrange(60), rng.randrange(24)
        schedule = rng.choice([
            f"{m} {h} * * *", f"{m} {h} * * 1-5", f"{m} * * * *", f"*/{rng.choice([5, 10, 15, 30])} * * * *",
            f"{m} {h} * * {rng.randrange(7)}", f"{m} {h} {rng.randint(1, 28)} * *", f"{m} {h} 1 * MON",
            f"{m} {h},{(h + 12) % 24} * * *"])
        command = rng.choice([f"cd /srv/app && python manage.py task_{i} --verbosity 2",
                              f"/srv/app/bin/job-{i}.sh >> /var/log/job-{i}.log 2>&1",
                              f"python /srv/app/manage.py report_{i}"])
        out += [f"# job {i}", f"{schedule} {command}"]
    return "\n".join(out) + "\n"


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(args[:3])} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    imports, validates = [], []
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        shutil.copy(ROOT / "jobplane.toml", repo / "jobplane.toml")
        shutil.copytree(ROOT / "jobs" / "lib", repo / "jobs" / "lib")
        (repo / "app.crontab").write_text(crontab(args.lines, random.Random(37)))
        for n in range(args.rounds):
            shutil.rmtree(repo / "jobs" / "billing", ignore_errors=True)
            imports.append(timed([JOBPLANE, "import", "app.crontab", "--team", "billing", "--timezone", "Asia/Tokyo",
                                  "--report", "report.json"], repo))
            written = len(list((repo / "jobs" / "billing").glob("*.jsonnet")))
            validates.append(timed([JOBPLANE, "validate"], repo))
            print(f"round {n + 1}: import + verify {imports[-1]:.2f} s ({written} jobs written), "
                  f"validate {validates[-1]:.2f} s")
    imp, val = statistics.median(imports), statistics.median(validates)
    print(f"{args.lines} crontab lines: import + verify {imp:.2f} s, validate of the output {val:.2f} s, "
          f"ratio {imp / val:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
