"""Month-end close: reconcile one payment source against the frozen invoices."""

from __future__ import annotations

import logging
import random
from typing import Any

from examples import workspace

log = logging.getLogger(__name__)


def reconcile(source: str) -> dict[str, Any]:
    period = workspace.run_date().strftime("%Y-%m")
    close = workspace.area("billing", "close", period)
    invoices = workspace.read_json(close / "invoices.json", "freeze-invoices")
    rng = random.Random(f"{period}-{source}")
    matched = [i["id"] for i in invoices if rng.random() > 0.02]
    unmatched = sorted(set(i["id"] for i in invoices) - set(matched))
    workspace.write_json(close / f"reconciled-{source}.json", {"matched": len(matched), "unmatched": unmatched})
    log.info("%s: %d invoices matched, %d left for review", source, len(matched), len(unmatched))
    return {"source": source, "matched": len(matched), "unmatched": len(unmatched)}
