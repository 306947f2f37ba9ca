"""Peak memory of an items step's runner writing its map's list (runner/items_out.py), by count.

    .venv/bin/python bench/map_items_memory.py [--counts 10000,100000,1000000]

Each case is a fresh process (what a runner task is) that writes N small items (tenant ids,
``t-0000001``) to the local AWS's S3 through ``items_out.write``, the runner's own code, once
yielded by a generator and once returned as a list: its peak RSS (VmHWM) before the write
(python, boto3 and the runner's modules imported, a client made) and after. The generator's
peak should not grow with N; the list's grows with the list the function itself holds.
The runner refuses more than MAX_ITEMS (100,000) items; the cases above it lift that bound in
``write``'s ``limit`` argument to show that the writer's memory does not depend on it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def high_water_kib() -> int:
    """This process's peak resident set (VmHWM, Linux). Not ru_maxrss: Linux carries that across
    fork and exec, so a child of the local AWS's process would report the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def child(count: int, mode: str, uri: str) -> None:
    import boto3

    from jobplane.runner import items_out

    boto3.client("s3")  # what the write will make: counted in the "before" figure
    before = high_water_kib()
    value = (f"t-{i:07d}" for i in range(count)) if mode == "generator" else [f"t-{i:07d}" for i in range(count)]
    started = time.perf_counter()
    written = items_out.write(uri, value, limit=max(count, 1))
    seconds = time.perf_counter() - started
    after = high_water_kib()
    print(json.dumps({"count": written, "mode": mode, "before_kib": before, "peak_kib": after, "seconds": seconds}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="10000,100000,1000000")
    ap.add_argument("--child", nargs=3, metavar=("COUNT", "MODE", "URI"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(int(args.child[0]), args.child[1], args.child[2])
        return
    from jobplane.platform.local.engine import LocalAWS

    with LocalAWS(server_port=0) as aws:
        bucket = aws.resources["items_bucket"]
        env = os.environ | {"AWS_ENDPOINT_URL": str(aws.endpoint_url), "AWS_DEFAULT_REGION": aws.region,
                            "AWS_ACCESS_KEY_ID": aws.credentials.access_key_id,
                            "AWS_SECRET_ACCESS_KEY": aws.credentials.secret_access_key}
        print(f"{'items':>9} {'mode':>9} {'RSS before':>11} {'peak RSS':>9} {'growth':>8} {'object':>9} {'write':>7}")
        for count in [int(c) for c in args.counts.split(",")]:
            for mode in ("generator", "list"):
                key = f"map-items/bench/{mode}-{count}.jsonl"
                out = subprocess.run([sys.executable, __file__, "--child", str(count), mode, f"s3://{bucket}/{key}"],
                                     env=env, capture_output=True, text=True, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                head = aws.client("s3").head_object(Bucket=bucket, Key=key)
                assert head["Metadata"]["items"] == str(count)
                print(f"{count:>9,} {mode:>9} {r['before_kib'] / 1024:>8.1f} MB {r['peak_kib'] / 1024:>6.1f} MB "
                      f"{(r['peak_kib'] - r['before_kib']) / 1024:>5.1f} MB {head['ContentLength'] / 1e6:>6.1f} MB "
                      f"{r['seconds']:>6.1f}s")
                aws.client("s3").delete_object(Bucket=bucket, Key=key)


if __name__ == "__main__":
    main()
