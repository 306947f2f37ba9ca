"""``notify: jp.slack(..., after_failures=N)``: a job's failure alerts wait for N failed runs in a
row, and the RECOVERED note of a streak nobody was told of is held too.

A flaky job that fails once a week and passes on its next fire teaches a channel to ignore it
(healthchecks#525, #587). The state machine still publishes every failure (other subscribers
of the topic must not depend on the Slack setting: compiler/asl.py ``failure_tail``); the
notifier decides here, from the job's own execution records (newest first, gsi1), whether this
one is the N-th failure in a row. Runs that neither failed nor succeeded (skips, an operator's
stop, a missed fire) do not break a streak and are not counted in it.

What always alerts, whatever N: a MISSED fire, a DEADLINE breach, an ABORTED run, and any
failure of a job whose policy blocks on failure (SKIP_IF_FAILED...: validate refuses N > 1
there, since each failure stops its next fires until someone acts).

The records are read from the index, which is eventually consistent: the run being announced is
counted from its message, never looked up; the runs before it ended minutes or hours ago.
"""

from __future__ import annotations

from jobplane.contract.notifications import NotificationMessage
from jobplane.contract.statuses import Event
from jobplane.contract.types import Client

FAILED = ("FAILED", "TIMED_OUT")
#: How many records are read at most to decide (a SKIP_IF_RUNNING job may skip between fires).
MOST_READ = 500


def hold_reason(message: NotificationMessage, ddb: Client | None, table: str | None) -> str | None:
    """Why this alert is held (None: deliver it). Only a run's FAILED/TIMED_OUT alert and its
    RECOVERED note are ever held, only with ``after_failures`` above 1, and only when the records
    tell: a streak longer than :data:`MOST_READ` records could read is delivered (a count never
    costs an alert)."""
    n = message.after_failures or 1
    if n <= 1 or ddb is None or not table:
        return None
    if message.event in FAILED:
        before = _failures_before(ddb, table, message, n - 1)
        if before is not None and before + 1 < n:
            return f"failure {before + 1} in a row of the {n} after which this job alerts (after_failures)"
    elif message.event == Event.RECOVERED.value:
        before = _failures_before(ddb, table, message, n)
        if before is not None and before < n:
            return (f"the {before} failure{'s' if before != 1 else ''} this run ends were never announced "
                    f"(after_failures {n})")
    return None


def _failures_before(ddb: Client, table: str, message: NotificationMessage, enough: int) -> int | None:
    """Failed runs of the job in a row before this one (this one excluded), counted up to
    ``enough``; None when :data:`MOST_READ` records did not tell (skips all the way)."""
    from jobplane.platform.repository import Repository

    repo = Repository(ddb, table)
    count, read, cursor = 0, 0, None
    while read < MOST_READ:
        page = repo.executions(message.job, limit=50, cursor=cursor)
        for record in page.items:
            read += 1
            if record.execution == message.execution:
                continue
            if record.status in FAILED:
                count += 1
                if count >= enough:
                    return count
            elif record.status == "SUCCEEDED":
                return count
        cursor = page.cursor
        if not cursor:
            return count  # the job's first runs: every earlier one was read
    return None
