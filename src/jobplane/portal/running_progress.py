"""The jobs page's line of progress for each running job (issue 67 part 1): "close: 3,400 of
10,000 tenants (34%), ETA 12:40 UTC", read in the page's own load.

A run's progress is one item per step (contract/progress.py), and the catalog names each job's
steps, so a page asks for every running run's steps in one BatchGetItem (100 keys a request:
platform/step_progress.py ``read_steps``), not a Query a run: on the local engine, whose
DynamoDB answers one request at a time, twelve Queries doubled the RUNNING filter's page
(bench/portal.py). A page reads the steps of at most :data:`SHOWN` runs and at most
:data:`KEYS` keys; a page where more run at once shows the rest as RUNNING without a line,
which keeps the page within its time budget whatever the fleet does. A read that fails
(throttled past its retries) leaves the rows without a line, never the page without its rows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from jobplane.contract.types import Client

if TYPE_CHECKING:
    from jobplane.platform.control import JobSummary
    from jobplane.platform.step_progress import StepProgress

log = logging.getLogger(__name__)

#: Running runs whose progress one page reads (the first, in the page's order).
SHOWN = 24
#: Keys (a run's steps) one page reads: two BatchGetItem requests at most.
KEYS = 200


def line(steps: Sequence[StepProgress]) -> str | None:
    """The running step's progress in a few words: the step still going that reported last (a
    step that ended is the run's past), else None (nothing reported, or every step ended)."""
    going = [p for p in steps if not p.ended and p.done is not None]
    if not going:
        return None
    p = max(going, key=lambda s: s.updated_at)
    eta = p.eta_at()
    return f"{p.step}: {p.headline()}" + (f", ETA {eta[11:16]} UTC" if eta else "")


def page_progress(ddb: Client, table: str, jobs: Sequence[JobSummary]) -> dict[str, str]:
    """Each running job's line, by job (a job without one is absent). A job running more than
    one run (a policy that allows overlap) shows one of them, the same on every load (the state
    names its runs, not when each started); its job page lists them all."""
    from jobplane.platform.step_progress import read_steps

    runs: list[tuple[str, str]] = []
    keys: list[tuple[str, str, str]] = []
    for job in jobs:
        if not job.running or len(runs) == SHOWN:
            continue
        execution, steps = min(job.running), job.entry.step_names
        if len(keys) + len(steps) > KEYS:
            break
        runs.append((job.name, execution))
        keys += [(job.name, execution, step) for step in steps]
    if not keys:
        return {}
    try:
        found = read_steps(ddb, table, keys)
    except Exception:  # noqa: BLE001 - a line of extra words is never the reason the page fails
        log.warning("the running jobs' progress was not read for the jobs page", exc_info=True)
        return {}
    return {job: text for job, execution in runs if (text := line(found.get(execution, []))) is not None}
