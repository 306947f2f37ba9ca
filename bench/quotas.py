"""What a deployment of N varied jobs (bench/jobtree.py's generator, seed 42) uses of every AWS
quota jobplane counts (contract/quotas.py), as `jobplane plan --quotas` prints it.

    .venv/bin/python bench/quotas.py [--jobs 5000]

Prints the table and which quotas an apply of that many jobs into one account would exceed
with AWS's defaults: the figure issue 54 asks to bring inside every default (or to name which
quota to raise).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobtree import write_repo  # noqa: E402  (the benches' one job generator)

from jobplane.compiler.output import compile_all  # noqa: E402
from jobplane.compiler.plan import quota_lines  # noqa: E402
from jobplane.contract.config import load_config  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = write_repo(Path(tmp), args.jobs, platform_module=True)
        config = load_config(root)
        t = time.perf_counter()
        out = compile_all(config)
        compiled = time.perf_counter() - t
        t = time.perf_counter()
        lines, over = quota_lines(out.files, config, show_all=True)
        counted = time.perf_counter() - t
        print(f"jobs: {args.jobs}  compile: {compiled:.1f} s  quota count: {counted:.2f} s")
        print("\n".join(lines))
        print(f"an apply with AWS's default quotas would {'FAIL' if over else 'fit'}")


if __name__ == "__main__":
    main()
