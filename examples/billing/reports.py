"""The daily sales report: extract orders, aggregate per store, publish."""

from __future__ import annotations

import csv
import logging
import random
from collections import defaultdict
from typing import Any

from examples import workspace

log = logging.getLogger(__name__)
STORES = ["shibuya", "umeda", "tenjin", "sapporo", "naha"]


def _day_dir(report_date: str | None, days_back: int = 1):  # type: ignore[no-untyped-def]
    day = report_date or workspace.run_date(days_back).isoformat()
    return day, workspace.area("billing", "sales", day)


def extract_orders(days_back: int = 1, report_date: str | None = None) -> dict[str, Any]:
    """Writes the day's orders as CSV (generated deterministically per date: the 'source system')."""
    day, out = _day_dir(report_date, days_back)
    rng = random.Random(day)
    rows = [{"order_id": f"{day}-{i:05d}", "store": rng.choice(STORES), "amount_yen": rng.randint(300, 12000)}
            for i in range(rng.randint(200, 400))]
    with open(out / "orders.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["order_id", "store", "amount_yen"])
        writer.writeheader()
        writer.writerows(rows)
    log.info("extracted %d orders for %s", len(rows), day)
    return {"date": day, "orders": len(rows)}


def aggregate_by_store(report_date: str | None = None) -> dict[str, Any]:
    day, out = _day_dir(report_date)
    source = out / "orders.csv"
    if not source.exists():
        raise FileNotFoundError(f"{source} is missing: run extract-orders for {day} first")
    totals: dict[str, int] = defaultdict(int)
    with open(source, newline="") as f:
        for row in csv.DictReader(f):
            totals[row["store"]] += int(row["amount_yen"])
    workspace.write_json(out / "by_store.json", dict(sorted(totals.items())))
    log.info("aggregated %d stores for %s: %d yen", len(totals), day, sum(totals.values()))
    return {"date": day, "stores": len(totals), "total_yen": sum(totals.values())}


def publish_report(recipients: list[str], report_date: str | None = None) -> str:
    """Renders the report and 'mails' it: one file per recipient in the outbox."""
    day, out = _day_dir(report_date)
    totals = workspace.read_json(out / "by_store.json")
    lines = [f"Sales for {day}", ""] + [f"{store:<10} {amount:>12,} yen" for store, amount in totals.items()]
    lines += ["", f"{'total':<10} {sum(totals.values()):>12,} yen"]
    report = "\n".join(lines) + "\n"
    (out / "report.txt").write_text(report)
    outbox = workspace.area("outbox")
    for r in recipients:
        (outbox / f"{day}-sales-{r}.txt").write_text(report)
    log.info("published the %s report to %s", day, ", ".join(recipients))
    return str(out / "report.txt")


def archive_report(report_date: str | None = None) -> str:
    """Keeps the published report of the day its upstream run was scheduled for (this runs
    after daily-sales-report, with that run's scheduled time)."""
    day, out = _day_dir(report_date)
    archive = workspace.area("billing", "archive")
    target = archive / f"{day}-sales.txt"
    target.write_text((out / "report.txt").read_text())
    log.info("archived the %s sales report", day)
    return str(target)
