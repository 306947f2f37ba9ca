"""Search index backfill for a date range (params `from` and `to`, given when started by hand)."""

from __future__ import annotations

import logging
from datetime import date, timedelta
from typing import Any

from examples import workspace
from jobplane.runner import PermanentFailure

log = logging.getLogger(__name__)


def reindex_range(context: Any, batch_size: int = 500) -> dict[str, Any]:
    # `from` is a Python keyword, so the range comes from the run's params rather than arguments.
    params = context.params
    if not params.get("from") or not params.get("to"):
        # no retry brings the params: fail at once, not after the retries (exit 78)
        raise PermanentFailure("backfill-search-index needs params from and to (YYYY-MM-DD), "
                               "e.g. -p from=2026-01-01 -p to=2026-01-31")
    start, end = date.fromisoformat(params["from"]), date.fromisoformat(params["to"])
    if end < start:
        raise PermanentFailure(f"to ({end}) is before from ({start})")
    index = workspace.area("search", "index")
    days = 0
    day = start
    while day <= end:
        (index / f"{day.isoformat()}.json").write_text(f'{{"day": "{day}", "batch_size": {int(batch_size)}}}')
        days += 1
        day += timedelta(days=1)
    log.info("re-indexed %d days (%s..%s) in batches of %d", days, start, end, int(batch_size))
    return {"days": days}
