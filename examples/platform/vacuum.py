"""Compacts a session store table (here: removes empty session files left by clearsessions)."""

from __future__ import annotations

import argparse
import sys

from examples import workspace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table", required=True)
    args = parser.parse_args(argv)
    sessions = workspace.area("sessions")
    removed = 0
    for path in sessions.iterdir():
        if path.is_file() and path.stat().st_size == 0:
            path.unlink()
            removed += 1
    print(f"vacuumed {args.table}: {removed} empty entries removed, {sum(1 for _ in sessions.iterdir())} kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
