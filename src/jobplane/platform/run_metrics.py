"""What a run's end tells CloudWatch (contract/emf.py): the reconciler, which handles every
run's end once it is recorded, writes these lines to its log (the base module's reconciler
Lambda's stdout, from which CloudWatch extracts them; ``jobplane dev`` appends them to
``.jobplane/metrics.jsonl``).

Per run (dimensions team, job): ``RunDuration`` (Seconds), ``RunSucceeded`` and ``RunFailed``
(Count, 1 or 0: an alarm on a job's failures is a Sum over a period), ``StartDelay`` (Seconds:
the start less the fire, scheduled runs only; a backfill, re-run or manual run has no delay to
speak of) and ``Retries`` (Count: attempts after each step's first). Per step that ran
(dimensions team, job, step): ``StepDuration`` (Seconds, its attempts together), ``StepAttempts``
(Count), and the step's own ``jobplane.metric`` values, named ``step.<name>`` (docs/progress.md).
A skip writes ``RunSkipped`` only, a fire inside a blackout window ``RunBlackedOut`` only; a
missed fire is the fire ledger's (it never ran): ``RunMissed`` (:func:`missed_line`), and a
deadline decided is the deadline check's: ``DeadlineMet`` and ``DeadlineSlack``
(:func:`deadline_line`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from jobplane.contract import emf
from jobplane.contract.attempts import Attempt
from jobplane.contract.clock import parse_iso
from jobplane.contract.records import ExecutionRecord
from jobplane.contract.statuses import ExecutionStatus, Trigger
from jobplane.platform.step_progress import StepProgress

_FAILED = (ExecutionStatus.FAILED.value, ExecutionStatus.TIMED_OUT.value, ExecutionStatus.ABORTED.value)

log = logging.getLogger(__name__)


def write_best_effort(metrics: Callable[[str], None] | None, line: Callable[[], str], what: str) -> None:
    """Write a decision's metric line once the decision is recorded. The records, not the metrics,
    are the truth (EMF delivery is at least once), so a line that fails to build or to be written
    is logged, never the reason a decision is taken again. ``what``: the log's name for it."""
    if metrics is None:
        return
    try:
        metrics(line())
    except Exception:  # noqa: BLE001 - see above
        log.exception("the metric line of %s was not written", what)


def lines(record: ExecutionRecord, rows: Iterable[Attempt], progress: Iterable[StepProgress]) -> list[str]:
    """The EMF lines of one ended run (none for a record that is not a run's end)."""
    when = record.finished_at or record.started_at
    if when is None or not record.team or record.status == ExecutionStatus.MISSED.value:
        return []
    at = int(parse_iso(when).timestamp() * 1000)
    job = {"team": record.team, "job": record.job}
    if record.status == ExecutionStatus.SKIPPED.value:
        return [emf.line(job, [emf.Metric("RunSkipped", 1, "Count")], at)]
    if record.status == ExecutionStatus.BLACKED_OUT.value:  # a fire inside a blackout window: not a run
        return [emf.line(job, [emf.Metric("RunBlackedOut", 1, "Count")], at)]
    attempts = [r for r in rows if r.outcome not in ("waiting",)]
    replaced = record.status == ExecutionStatus.ABORTED.value and bool(record.abort_reason)
    run = [emf.Metric("RunSucceeded", int(record.status == ExecutionStatus.SUCCEEDED.value), "Count"),
           emf.Metric("RunFailed", int(record.status in _FAILED and not replaced), "Count"),
           emf.Metric("Retries", sum(1 for a in attempts if a.attempt > 1), "Count")]
    if record.started_at and record.finished_at:
        run.append(emf.Metric("RunDuration", _seconds(record.started_at, record.finished_at), "Seconds"))
    if record.trigger == Trigger.SCHEDULE.value and record.scheduled_time and record.started_at:
        run.append(emf.Metric("StartDelay", max(_seconds(record.scheduled_time, record.started_at), 0.0), "Seconds"))
    out = [emf.line(job, run, at)]
    reported = {p.step: p for p in progress}
    for step in dict.fromkeys(a.step for a in attempts):
        mine = [a for a in attempts if a.step == step]
        metrics = [emf.Metric("StepAttempts", len(mine), "Count")]
        took = sum(_seconds(a.started_at, a.finished_at) for a in mine if a.started_at and a.finished_at)
        if any(a.started_at and a.finished_at for a in mine):
            metrics.append(emf.Metric("StepDuration", took, "Seconds"))
        if (p := reported.get(step)) is not None:
            own = sorted(p.metrics.items())[:emf.MAX_METRICS - len(metrics)]
            metrics += [emf.Metric(f"{emf.STEP_METRIC_PREFIX}{name}", value) for name, value in own]
        out.append(emf.line({**job, "step": step}, metrics, at))
    return out


def _seconds(start: str, end: str) -> float:
    return round((parse_iso(end) - parse_iso(start)).total_seconds(), 3)


def missed_line(team: str, job: str, recorded_at: str) -> str:
    """A fire that never ran, as the fire ledger records it MISSED: ``RunMissed`` (Count 1),
    stamped when it was recorded (a fire's own time can be older than the two weeks CloudWatch
    accepts a line's timestamp for). What only the ledger knows: no run ended to say so."""
    return emf.line({"team": team, "job": job}, [emf.Metric("RunMissed", 1, "Count")], _ms(recorded_at))


def deadline_line(team: str, job: str, due: str, met: bool | None, succeeded_at: str | None, at: str) -> str:
    """What a fire's deadline came to (platform/deadlines.py), written once a fire when its
    outcome is final: ``DeadlineMet`` (Count, 1 or 0; ``met`` None: not this line's to say,
    written by another) and, when the fire's run succeeded, ``DeadlineSlack`` (Seconds: the due
    time less its end; below zero when it landed late). An early alert is not final (its run
    may still make it): its ``DeadlineMet`` is written when the run succeeds or the due time
    passes, so the metric's on-time share is the records' (docs/metrics.md)."""
    metrics = [] if met is None else [emf.Metric("DeadlineMet", int(met), "Count")]
    if succeeded_at:
        metrics.append(emf.Metric("DeadlineSlack", _seconds(succeeded_at, due), "Seconds"))
    return emf.line({"team": team, "job": job}, metrics, _ms(at))


def _ms(iso: str) -> int:
    return int(parse_iso(iso).timestamp() * 1000)
