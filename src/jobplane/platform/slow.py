"""SLOW alerts: a run still going after the job's ``expected_duration`` is announced once, while
it runs, so someone looks before the timeout turns it into a failure.

Nothing inside a state machine can notice time passing, so a watcher looks at the running
executions of the jobs that subscribe to SLOW (job state ``running`` set: one GetItem per such
job, no scan). ``jobplane dev`` runs it every few seconds; in production it is the same
``check`` behind a scheduled Lambda (:func:`handler`). Each execution is announced at most once:
a marker item written with a condition (and a TTL) decides, so two watchers never both alert.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Callable

from jobplane.contract.catalog import CatalogJob
from jobplane.contract.notifications import NotificationMessage, Outcome, event_of, publish
from jobplane.contract.statuses import Event, ExecutionStatus
from jobplane.contract.clock import iso_millis, parse_iso
from jobplane.platform.context import PlatformContext
from jobplane.platform.control import ControlPlane, NotFound
from jobplane.platform.control.reads import Reads
from jobplane.contract.types import Client, JsonObject
from jobplane.platform.sfn_versions import VersionPruning

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(timezone.utc)


class SlowWatch:
    """``reads``: the control plane's read service (a running run's view)."""

    def __init__(self, reads: Reads, sns: Client, topic_arn: str, clock: Clock = _now):
        self.reads, self.context = reads, reads.context
        self.sns = sns
        self.topic_arn = topic_arn
        self.clock = clock

    def watched(self) -> list[CatalogJob]:
        return [e for e in self.context.entries.values() if e.expected_duration and Event.SLOW in e.notify.events]

    def check(self) -> list[str]:
        """Alert every watched run past its expected duration (once); returns their names."""
        alerted = []
        now = self.clock()
        for entry in self.watched():
            state = self.context.repo.job_state(entry.name)
            for name in sorted(state.running if state else ()):
                try:
                    view = self.reads.execution(name, entry.name)
                except NotFound:
                    continue
                if not view.running or not view.started_at:
                    continue
                took = now - parse_iso(view.started_at)
                expected = timedelta(seconds=entry.expected_duration or 0)  # watched(): set
                if took <= expected or not self.context.repo.mark_slow(name, int((now + timedelta(days=7)).timestamp())):
                    continue
                step = next((r.step for r in reversed(view.timeline) if r.outcome == "running"), None)
                publish(self.sns, self.topic_arn, NotificationMessage(
                    version=1, event=event_of(Event.SLOW.value), job=entry.name, team=entry.team, execution=name,
                    execution_arn=view.execution_arn, trigger=view.input.trigger, scheduled_time=view.input.scheduled_time,
                    requested_by=view.input.requested_by, started_at=view.started_at, finished_at=iso_millis(now),
                    outcome=Outcome(status=ExecutionStatus.RUNNING.value, step=step), channels=entry.notify.channels,
                    events=[event_of(e.value) for e in entry.notify.events],
                    runbook=entry.runbook.model_dump() if entry.runbook else None,
                    error=f"still running after {int(took.total_seconds())} s; expected {entry.expected_duration} s"))
                log.warning("%s run %s is slow: %d s, expected %d s", entry.name, name, took.total_seconds(),
                            entry.expected_duration)
                alerted.append(name)
        return alerted

    def run(self, stop: threading.Event, interval: float = 10.0) -> None:
        while not stop.wait(interval):
            try:
                self.check()
            except Exception:
                log.exception("slow-run check failed")


def _repair_pauses(control: ControlPlane) -> list[str]:
    repaired = control.repair_pauses()
    if repaired:
        log.warning("drift: schedules of paused jobs were ENABLED (an apply, or a change outside jobplane); "
                    "disabled again: %s", ", ".join(repaired))
    return repaired


def _version_pruning(context: PlatformContext, retention_days: int) -> VersionPruning:
    """The pruning of the deployed jobs' state machine versions (platform/sfn_versions.py)."""
    deployment = context.deployment
    return VersionPruning(context.sfn, lambda: [deployment.state_machine_arn(j) for j in context.entries],
                          retention_days)


def handler(event: JsonObject, context: object = None) -> JsonObject:
    """Production entry point, on the base module's schedule (var.slow_check_schedule, every 5
    minutes by default): the same check against AWS, then the catch-up of what a lost status
    event would have done (platform/catchup.py): record a run that ended without recording
    itself, start an `after` run; then the fire ledger (platform/missed.py): record and alert
    the fires that neither ran nor were skipped; then the deadlines (platform/deadlines.py): alert
    a fire not SUCCEEDED by its deadline, once; then announce once more a failure nobody
    acknowledged within its job's renotify_after (platform/renotify.py); then summarise each
    snooze that ended (platform/snooze.py); then announce once a running step whose progress
    stopped moving past its stall_after (platform/stalls.py); then move every open backfill on; then disable
    again a paused job's schedule found ENABLED (drift: an apply writes the compiled state). One part failing does not keep the others from running; the
    invocation then fails, and Lambda tries it again."""
    import boto3

    from jobplane.contract.environment import RuntimeEnvironment
    from jobplane.platform.control import Deployment

    env = RuntimeEnvironment.from_environment()
    deployment = Deployment.from_environment(env)
    from jobplane.platform.backfill import BackfillDriver, Backfills
    from jobplane.platform.blackouts import DeferredRuns
    from jobplane.platform.catchup import LostEndings, UpstreamCatchUp
    from jobplane.platform.deadlines import DeadlineWatch
    from jobplane.platform.missed import MissedFires
    from jobplane.platform.pool_slots import PoolSweep
    from jobplane.platform.reconciler import Reconciler
    from jobplane.platform.renotify import Renotify
    from jobplane.platform.snooze import SnoozeEnds
    from jobplane.platform.stalls import StallWatch
    from jobplane.platform.approvals import ApprovalReminders

    started = time.monotonic()
    control = ControlPlane(deployment)  # the services, over one context the checks share
    context, reads, runs = control.context, control.reads, control.runs
    sns = boto3.client("sns")
    # no step logs: a run recorded here carries its own error (stopped, timed out, failed)
    from jobplane.platform.reconciler import log_line

    # a run whose end event was lost is recorded here: its metric lines too (platform/run_metrics.py)
    reconciler = Reconciler(context.repo, sns, deployment.topic_arn, context.sfn, deployment.name_prefix,
                            env.execution_retention_days, job_brief=reads.brief, metrics=log_line)
    result: JsonObject = {}
    failed: list[BaseException] = []
    for key, check in (("alerted", SlowWatch(reads, sns, deployment.topic_arn).check),
                       # a running step whose progress stopped moving (platform/stalls.py)
                       ("stalled", lambda: [s.execution for s in StallWatch(reads, sns, deployment.topic_arn).check()]),
                       ("reconciled", LostEndings(context, reconciler).check),
                       ("caught_up", UpstreamCatchUp(runs).check),
                       # the run a defer blackout window owes its job once it ends (platform/blackouts.py)
                       ("deferred", DeferredRuns(runs).check),
                       ("missed", MissedFires(runs, sns, deployment.topic_arn, boto3.client("sqs"), metrics=log_line).check),
                       # each fire of a job with a deadline: met, or alerted once (platform/deadlines.py)
                       ("deadlines", DeadlineWatch(reads, sns, deployment.topic_arn, metrics=log_line).check),
                       # a failure nobody acknowledged, announced once more (platform/renotify.py)
                       ("reminded", Renotify(reads, sns, deployment.topic_arn).check),
                       # a snooze that ended: what it held, summarised once (platform/snooze.py)
                       ("snoozes_ended", SnoozeEnds(reads, sns, deployment.topic_arn).check),
                       # a run waiting for a person: its request, then a reminder each `remind` (platform/approvals.py)
                       ("approval_reminders", lambda: [r.execution for r in ApprovalReminders(
                           control, sns, deployment.topic_arn).check()]),
                       # a backfill started from a laptop that then slept still completes: each
                       # pass moves every open one on (its fire leases keep two drivers from
                       # starting a fire twice)
                       ("backfills", BackfillDriver(Backfills(runs)).drive_once),
                       # a paused job's schedule an apply enabled again (issue 49): disabled
                       # again, and reported as drift
                       ("pauses_repaired", lambda: _repair_pauses(control)),
                       # pool slots of runs that ended without giving them back (docs/pools.md)
                       ("pool_slots_released", PoolSweep(context.ddb, deployment.table, context.sfn).check),
                       # published versions past PRUNE_ABOVE of a state machine, deleted before
                       # the quota of 1,000 (platform/sfn_versions.py)
                       ("versions_pruned", _version_pruning(context, env.execution_retention_days).check)):
        try:
            result[key] = check()
        except Exception as e:
            log.exception("the %s part of the periodic check failed", key)
            failed.append(e)
    if failed:
        raise failed[0]
    return result | {"seconds": round(time.monotonic() - started, 3)}
