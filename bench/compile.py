"""How long the compiler takes for 1,000 varied jobs, next to evaluating the same Jsonnet alone.

    .venv/bin/python bench/compile.py [--jobs 1000]

Prints both times and their ratio: the ratio is the cost of validation and of rendering ASL,
Terraform and the catalog on top of Jsonnet itself, measured in one run on one machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobtree import write_repo  # noqa: E402  (the benches' one job generator)

from jobplane.compiler.output import compile_all  # noqa: E402
from jobplane.compiler.validate import definition_files, evaluate  # noqa: E402
from jobplane.contract.config import load_config  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = write_repo(Path(tmp), args.jobs)
        config = load_config(root)
        files = definition_files(config)
        jsonnet_times, compile_times = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            for f in files:
                evaluate(f, config)
            jsonnet_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            out = compile_all(config)
            compile_times.append(time.perf_counter() - t)
        jsonnet_s, compile_s = statistics.median(jsonnet_times), statistics.median(compile_times)
        states = sum(j.states for j in out.catalog.jobs)
        size = sum(len(v) for v in out.files.values())
        print(f"jobs: {args.jobs}  files: {len(out.files)}  output: {size / 1e6:.1f} MB  states: {states}")
        print(f"jsonnet evaluation alone: {jsonnet_s:.2f} s (median of {args.repeat})")
        print(f"whole compile:            {compile_s:.2f} s (median of {args.repeat}), {compile_s / args.jobs * 1000:.1f} ms per job")
        print(f"ratio compile / jsonnet:  {compile_s / jsonnet_s:.2f}")


if __name__ == "__main__":
    main()
