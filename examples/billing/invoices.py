"""Month-end invoices: total the month's invoices for finance to sign off (jp.approval), then
send them. The totals are reported as metrics (jobplane.metric), so the approval's prompt shows
the approver the very numbers they approve."""

from __future__ import annotations

import logging
import random

import jobplane
from examples import workspace

log = logging.getLogger(__name__)


def total_invoices(customers: int = 120) -> dict[str, int]:
    period = workspace.run_date().strftime("%Y-%m")
    rng = random.Random(period)
    invoices = [{"customer": f"c-{i:04d}", "yen": rng.randrange(10_000, 500_000, 100)} for i in range(customers)]
    total = sum(i["yen"] for i in invoices)
    workspace.write_json(workspace.area("billing", "invoices", period) / "draft.json", invoices)
    jobplane.metric("invoices", len(invoices))
    jobplane.metric("total_yen", total)
    log.info("%s: %d invoices, %s yen, waiting for sign-off", period, len(invoices), f"{total:,}")
    return {"invoices": len(invoices), "total_yen": total}


def send_invoices() -> int:
    period = workspace.run_date().strftime("%Y-%m")
    invoices = workspace.read_json(workspace.area("billing", "invoices", period) / "draft.json", "total")
    workspace.write_json(workspace.area("billing", "invoices", period) / "sent.json", invoices)
    log.info("%s: sent %d invoices", period, len(invoices))
    return len(invoices)
