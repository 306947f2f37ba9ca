"""Files the month's close reports (a script the close has always ended with)."""

from __future__ import annotations

import argparse
import sys

from examples import workspace

#: The runner contract's permanent failure (EX_CONFIG): a missing input is not retried.
PERMANENT = 78


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--period", default="current")
    args = parser.parse_args(argv)
    period = workspace.run_date().strftime("%Y-%m") if args.period == "current" else args.period
    close = workspace.area("billing", "close", period)
    try:
        ledger = workspace.read_json(close / "ledger.json", "post-ledger")
    except workspace.MissingInput as e:
        print(e, file=sys.stderr)
        return PERMANENT
    filed = workspace.area("billing", "filed")
    workspace.write_json(filed / f"{period}.json", ledger)
    print(f"filed the {period} close: {ledger['entries']} ledger entries, {ledger['total_yen']:,} yen")
    return 0


if __name__ == "__main__":
    sys.exit(main())
