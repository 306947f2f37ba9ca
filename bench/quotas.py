"""What a deployment of N varied jobs (bench/jobtree.py's generator, seed 42) uses of every AWS
quota jobplane counts (contract/quotas.py), as `jobplane plan --quotas` prints it.

    .venv/bin/python bench/quotas.py [--jobs 5000] [--mix]

Prints the table and which quotas an apply of that many jobs into one account would exceed
with AWS's defaults: the figure issue 54 asks to bring inside every default (or to name which
quota to raise). ``--mix``: issue 62's mix (30% of the jobs with a secret of their own, 20% with
a Lambda step, bench/jobtree.py ``with_mix``), and the IAM roles the compiled team roots create
per 1,000 jobs (target: at most 200, so 5,000 jobs fit the default 1,000 roles).
"""

from __future__ import annotations

import argparse
import json
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
    ap.add_argument("--mix", action="store_true", help="issue 62's mix of secrets and Lambda steps")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = write_repo(Path(tmp), args.jobs, platform_module=True, mix=args.mix)
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
        roles = sum(len(json.loads(text).get("resource", {}).get("aws_iam_role", {}))
                    for rel, text in out.files.items() if rel.endswith(".tf.json") and '"aws_iam_role"' in text)
        print(f"IAM roles of the compiled team roots: {roles} for {args.jobs} jobs{' (mix)' if args.mix else ''}, "
              f"{roles * 1000 / args.jobs:.0f} per 1,000 jobs (target <= 200)")


if __name__ == "__main__":
    main()
