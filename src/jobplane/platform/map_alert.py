"""The failure alert of a run with map items (``jp.map``): how many items failed, and the first
few by index and item with each one's error (the each step's own line, read from its task's log
when a log reader is given), read from the run's item records (platform/map_records.py). A run
whose records cannot be read is still announced, without the lines."""

from __future__ import annotations

import logging

from jobplane.contract.notifications import NotificationMessage
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.types import Client
from jobplane.platform.logs import LogSource
from jobplane.platform.map_records import item_outcomes, progress, with_own_errors

log = logging.getLogger(__name__)


def with_failed_items(message: NotificationMessage, ddb: Client | None, table: str | None,
                      logs: LogSource | None = None) -> NotificationMessage:
    if ddb is None or not table or message.outcome.status not in (ExecutionStatus.FAILED.value,
                                                                  ExecutionStatus.TIMED_OUT.value):
        return message
    try:
        maps = [p for p in progress(with_own_errors(item_outcomes(ddb, table, message.execution), logs)) if p.failed]
    except Exception:  # noqa: BLE001 - the alert matters more than its detail
        log.exception("no map items for %s", message.execution)
        return message
    if not maps:
        return message
    lines = "\n".join(f"{p.failed} item{'s' if p.failed != 1 else ''} failed in map {p.summary()}"
                      + "".join(f"\n  {line}" for line in p.error_lines()) for p in maps)
    return message.model_copy(update={"error": lines + (f"\n{message.error}" if message.error else "")})
