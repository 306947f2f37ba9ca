"""Step targets whose reported counts expectations judge (docs/expectations.md)."""

from __future__ import annotations

import jobplane


def load(rows: int = 0, invoices: int = -1, log: str = "") -> None:
    """Reports ``rows_loaded`` = ``rows`` and, unless it is negative, ``invoices_sent``; appends
    its attempt to ``log`` (when given) so a test can count attempts."""
    if log:
        with open(log, "a") as f:
            f.write("attempt\n")
    jobplane.progress(rows, total=rows or None, unit="rows")
    jobplane.metric("rows_loaded", rows)
    if invoices >= 0:
        jobplane.metric("invoices_sent", invoices)


def silent() -> None:
    """Reports nothing at all: its metrics are not reported (not 0)."""
    print("done, counted nothing")


def tenants(empty: list[str] | None = None) -> list[str]:
    """Four tenants; those in ``empty`` will load no rows."""
    return [f"t-{i}" for i in range(4)]


def load_tenant(item: str, empty: list[str] | None = None) -> None:
    """Loads a tenant's rows: 0 for those in ``empty``; each item reports its own count."""
    rows = 0 if item in (empty or []) else 10
    jobplane.progress(rows, total=10, unit="rows", cursor=item)
    jobplane.metric("rows_loaded", rows)
