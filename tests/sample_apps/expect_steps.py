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
