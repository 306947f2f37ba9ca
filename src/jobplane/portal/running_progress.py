"""The jobs page's line of progress for each running job (issue 67 part 1): "close: 3,400 of
10,000 tenants (34%), ETA 12:40 UTC", read in the page's own load.

A run's progress is one Query of its partition (platform/step_progress.py), and a run's records
do not say which of its steps is the current one, so a page reads one partition per running
run it shows. Those reads are made side by side (the client is thread-safe; boto3 documents
clients, not resources, as safe to share across threads:
https://boto3.amazonaws.com/v1/documentation/api/latest/guide/clients.html#multithreading-or-multiprocessing-with-clients),
and a page reads at most :data:`SHOWN` of them: a page of 100 jobs where more than that run at
once shows the rest as running without a line, which keeps the page within its time budget
whatever the fleet does (bench/portal.py). A read that fails (throttled past its retries) leaves
its row without a line, never the page without its rows. Six reads at once stay within the
client's connection pool (botocore's default of 10).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobplane.platform.control import JobSummary
    from jobplane.platform.step_progress import StepProgress

log = logging.getLogger(__name__)

#: Running runs whose progress one page reads (the first, in the page's order).
SHOWN = 24
#: Reads in flight at once: DynamoDB answers each in a few milliseconds; more threads than this
#: only queue on the two cores the portal's task has.
WORKERS = 6


def line(steps: Sequence[StepProgress]) -> str | None:
    """The running step's progress in a few words: the step still going that reported last (a
    step that ended is the run's past), else None (nothing reported, or every step ended)."""
    going = [p for p in steps if not p.ended and p.done is not None]
    if not going:
        return None
    p = max(going, key=lambda s: s.updated_at)
    eta = p.eta_at()
    return f"{p.step}: {p.headline()}" + (f", ETA {eta[11:16]} UTC" if eta else "")


def page_progress(read: Callable[[str], list[StepProgress]], jobs: Sequence[JobSummary]) -> dict[str, str]:
    """Each running job's line, by job (a job without one is absent). ``read`` is the control
    plane's ``step_progress`` (an execution's name to its steps' records). A job running more
    than one run (a policy that allows overlap) shows one of them, the same on every load (the
    state names its runs, not when each started); its job page lists them all."""
    runs = [(j.name, min(j.running)) for j in jobs if j.running][:SHOWN]
    if not runs:
        return {}

    def safely(execution: str) -> list[StepProgress]:
        try:
            return read(execution)
        except Exception:  # noqa: BLE001 - a line of extra words is never the reason the page fails
            log.warning("the progress of %s was not read for the jobs page", execution, exc_info=True)
            return []

    if len(runs) == 1:
        found = [safely(runs[0][1])]
    else:
        with ThreadPoolExecutor(max_workers=min(WORKERS, len(runs)), thread_name_prefix="progress") as pool:
            found = list(pool.map(safely, [name for _, name in runs]))
    return {job: text for (job, _), steps in zip(runs, found) if (text := line(steps)) is not None}
