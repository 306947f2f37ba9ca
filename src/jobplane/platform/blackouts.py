"""``action: 'defer'``: the run a blackout window owes its job once it ends, started exactly once.

The fires inside a defer window are recorded BLACKED_OUT by the state machine (its ``Blackout``
Choice: compiler/blackout_states.py). After the window ends, the platform's periodic pass (the
same pass that keeps the fire ledger: ``jobplane dev``'s catch-up thread, on AWS the periodic
Lambda every few minutes, platform/slow.py) starts one run of the job for each occurrence that
ended in the last :data:`LOOK_BACK` and deferred at least one fire: a scheduled run of the
**last** fire it deferred (its params, its fire time), however many fell inside.

Exactly once, on AWS as locally, whatever the number of passes, Lambdas or retries:

* the execution's name is derived from the job, the window and the occurrence's end
  (:func:`deferred_name`); Step Functions refuses a second StartExecution of a name used in the
  last 90 days (``ExecutionAlreadyExists``; the same name and input while it runs returns the
  same execution: https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html),
  so a second pass, or two passes at once, start nothing more (a pass asks DescribeExecution
  first, so a later pass writes no second audit entry; two passes in the same instant may both
  write one, for the one execution);
* the run's claim is the claim of that scheduled fire (the duplicate-fire condition on the
  newest scheduled fire the job claimed, compiler/asl.py): had anything else already run the
  fire, the run is recorded SKIPPED (DUPLICATE), never run twice.

The state machine does not refuse it again: a defer window lets a scheduled fire requested by
:func:`deferred_requester` through. A pass that does not run at all in the
:data:`LOOK_BACK` after a window's end (the platform down for a day) leaves that occurrence's run
unstarted: `jobplane backfill` runs the fire by hand.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from datetime import datetime, timedelta

from jobplane.contract import audit, execution_input
from jobplane.contract.blackouts import blackout_of, deferred_requester, iso
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.clock import Clock, utc_now
from jobplane.contract.job_fires import job_fires
from jobplane.platform.control import Conflict
from jobplane.platform.control.runs import Runs
from jobplane.platform.deadlines import deployed_since

log = logging.getLogger(__name__)

ACTOR = "jobplane"
#: How long after a window's end its deferred run may still be started by a pass.
LOOK_BACK = timedelta(hours=24)


def deferred_name(job: str, window: str, end: datetime) -> str:
    """The execution name of the run ``window``'s occurrence ending at ``end`` owes ``job``: the
    same for every pass, unique across jobs (records are keyed by execution name alone)."""
    return "deferred-" + hashlib.sha256(f"{job}\n{window}\n{iso(end)}".encode()).hexdigest()[:32]


@dataclasses.dataclass(frozen=True)
class Owed:
    """One deferred run: the job, the window's occurrence and the fires it deferred."""

    job: str
    window: str
    end: datetime
    fires: tuple[datetime, ...]

    @property
    def name(self) -> str:
        return deferred_name(self.job, self.window, self.end)


def owed(entry: CatalogJob, now: datetime, deployed: datetime | None) -> list[Owed]:
    """The deferred runs ``entry`` is owed at ``now``: each occurrence of its defer windows that
    ended in the last LOOK_BACK, after the job was deployed, with the fires it deferred (a fire
    also inside a skip window is skipped, as the state machine decides)."""
    out = []
    windows = entry.windows
    for w in windows:
        if w.action != "defer":
            continue
        for start, end in w.intervals:
            if not now - LOOK_BACK <= end <= now or (deployed is not None and end <= deployed):
                continue
            first = max(start, deployed) if deployed is not None else start
            inside = [f.at for f in job_fires(entry, first, end - timedelta(microseconds=1))
                      if (b := blackout_of(windows, f.at)) is not None and b.window == w.name]
            if inside:
                out.append(Owed(entry.name, w.name, end, tuple(inside)))
    return out


class DeferredRuns:
    """``runs``: the control plane's actions (a deferred run is an audited start)."""

    def __init__(self, runs: Runs, clock: Clock = utc_now):
        self.runs, self.context = runs, runs.context
        self.clock = clock

    def check(self, only: set[str] | None = None) -> list[str]:
        """Start each deferred run owed now; their execution names."""
        now = self.clock()
        started = []
        for entry in self.context.entries.values():
            if (only is not None and entry.name not in only) or not entry.scheduled \
                    or not any(w.action == "defer" for w in entry.windows):
                continue
            for debt in owed(entry, now, deployed_since(self.context, entry)):
                if self.start(entry, debt):
                    started.append(debt.name)
        return started

    def start(self, entry: CatalogJob, debt: Owed) -> bool:
        sfn = self.context.sfn
        try:  # started by an earlier pass (a start of the same name and input while it runs would
            # answer as if it started it: the audit entry and the log would say it twice)
            sfn.describe_execution(executionArn=self.context.deployment.execution_arn(entry.name, debt.name))
            return False
        except sfn.exceptions.ExecutionDoesNotExist:
            pass
        last = debt.fires[-1]
        payload = dataclasses.replace(execution_input.scheduled(last, entry.params),
                                      requested_by=deferred_requester(debt.window))
        reason = (f"blackout window {debt.window} ended at {iso(debt.end)}: the {len(debt.fires)} fire(s) it deferred "
                  f"run once, as the fire of {iso(last)}")
        event = audit.DeferredRun(entry.name, debt.name, debt.window, iso(last), len(debt.fires))
        try:
            self.runs.audited(ACTOR, event, reason, lambda: self.runs.start_execution(entry.name, payload, debt.name))
        except self.context.sfn.exceptions.ExecutionAlreadyExists:
            return False  # an earlier pass started it
        except Conflict as e:  # in the catalog, not deployed
            log.error("cannot start the run %s deferred: %s", entry.name, e)
            return False
        log.warning("started %s as %s: %s", entry.name, debt.name, reason)
        return True
