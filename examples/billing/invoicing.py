"""Invoicing: load the month's billable usage, then invoice each tenant (a jp.map item each).

The steps say how far they are (``jobplane.progress``) and what they counted
(``jobplane.metric``); the job's expectations (jobs/billing/invoice-run.jsonnet) judge the counts
after each step, so a run that loaded nothing, or invoiced a tenant for nothing, does not pass
as a success (docs/expectations.md). ``tenants`` and ``empty`` are params so a run can be made
to load or invoice nothing on purpose.
"""

from __future__ import annotations

import logging

import jobplane
from examples import workspace

log = logging.getLogger(__name__)


def load_usage(tenants: int = 3, empty: list[str] | None = None) -> list[str]:
    """Loads each tenant's usage rows; returns the tenants (the map's items)."""
    period = workspace.run_date().strftime("%Y-%m")
    names = [f"tenant-{i:03d}" for i in range(1, tenants + 1)]
    rows = 0
    for i, name in enumerate(names, 1):
        if name not in (empty or []):
            rows += 40
        jobplane.progress(i, total=len(names), unit="tenants", cursor=name)
    workspace.write_json(workspace.area("billing", "invoicing", period) / "usage.json", {"rows": rows})
    jobplane.metric("rows_loaded", rows)
    log.info("%s: %d usage rows for %d tenants", period, rows, len(names))
    return names


def invoice_tenant(item: str, empty: list[str] | None = None) -> None:
    """Invoices one tenant: one invoice per 10 usage rows."""
    invoices = 0 if item in (empty or []) else 4
    jobplane.progress(invoices, total=4, unit="invoices", cursor=item)
    jobplane.metric("invoices_sent", invoices)
    log.info("%s: %d invoices sent", item, invoices)


def summarize(tenants: int = 3, empty: list[str] | None = None) -> None:
    """Counts the month's invoices: what the baseline of earlier months judges."""
    sent = 4 * len([i for i in range(1, tenants + 1) if f"tenant-{i:03d}" not in (empty or [])])
    jobplane.metric("invoices_sent", sent)
    log.info("%d invoices sent in all", sent)
