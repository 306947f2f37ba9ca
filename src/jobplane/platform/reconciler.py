"""The reconciler: finishes what an execution could not finish itself.

A compiled state machine records its own outcome and releases its own claim — unless it was
stopped (ABORTED), ran out of its whole-job timeout (TIMED_OUT) or failed inside the platform's
own states. A run that a newer run of its REPLACE job stopped is recorded ABORTED with reason
REPLACED, its claim released, and no alert (nothing failed). Every terminal status reaches this handler (in production a Lambda behind the base
module's EventBridge rule; locally the engine calls it): if the execution left no final record,
it writes one, releases the claim in the same transaction, clears the holder if it is this
execution, and publishes the notification. It gives back any pool slot the run's history says it
claimed (platform/pool_slots.py), whatever the status. It also adds what only the execution history knows
(each step attempt's times, the state transitions used) and the record's TTL. Idempotent: handling
the same event twice changes nothing the second time.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from jobplane.contract import environment
from jobplane.contract.arns import ExecutionArn
from jobplane.contract.attempts import Attempt
from jobplane.contract.catalog_brief import JobBrief
from jobplane.contract.environment import DEFAULT_RETENTION_DAYS, RuntimeEnvironment
from jobplane.contract.notifications import EVENTS, NotificationMessage, Outcome, event_of, publish
from jobplane.contract.notifications import Event as EventName
from jobplane.contract.policies import REPLACED_ERROR
from jobplane.contract.states import classify
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.clock import as_iso, now_iso
from jobplane.platform.logs import StepLogs, error_excerpt
from jobplane.contract.pools import claims_in_history
from jobplane.platform.pool_slots import release_run
from jobplane.contract.records import ExecutionRecord
from jobplane.platform.repository import Repository
from jobplane.platform.run_history import RunHistory
from jobplane.platform.timeline import Patience, history, state_transitions, timeline, with_end
from jobplane.contract.types import Client, JsonObject

log = logging.getLogger(__name__)

ABORTED, TIMED_OUT = ExecutionStatus.ABORTED.value, ExecutionStatus.TIMED_OUT.value
#: How an execution ends without recording itself (Step Functions' statuses are ours by design).
LOST = frozenset({ABORTED, TIMED_OUT, ExecutionStatus.FAILED.value})


class Reconciler:
    def __init__(self, repository: Repository, sns: Client, topic_arn: str, sfn: Client, name_prefix: str,
                 retention_days: int = DEFAULT_RETENTION_DAYS, logs: StepLogs | None = None,
                 patience: Patience = Patience(), job_brief: Callable[[str], JobBrief | None] | None = None,
                 metrics: Callable[[str], None] | None = None):
        self.repo = repository
        # where each run's metric lines go (platform/run_metrics.py): the Lambda's stdout on AWS
        self.metrics = metrics
        # the job's catalog entry, for what its definition says of alerts (channels, events,
        # runbook); None, or a job it cannot find: the notifier's defaults, never no alert
        self.job_brief = job_brief
        self.patience = patience  # a throttled history read is waited for (timeline.Patience)
        self.logs = logs  # step logs, for the error excerpt of a failed step
        self.sns = sns
        self.topic_arn = topic_arn
        self.sfn = sfn
        self.prefix = name_prefix
        self.retention = timedelta(days=retention_days)

    def _emit_metrics(self, record: ExecutionRecord, rows: list[Attempt]) -> None:
        """The run's metric lines (CloudWatch EMF): best effort, never the reason a run's end is
        handled again. Its steps' own counts are one Query of its progress records."""
        if self.metrics is None:
            return
        from jobplane.platform import run_metrics, step_progress

        try:
            reported = ([] if record.status in (ExecutionStatus.SKIPPED.value, ExecutionStatus.MISSED.value,
                                                ExecutionStatus.BLACKED_OUT.value)
                        else step_progress.read(self.repo.ddb, self.repo.table, record.job, record.execution))
            for text in run_metrics.lines(record, rows, reported):
                self.metrics(text)
        except Exception:  # noqa: BLE001 - metrics are at most once here, at least once on retries
            log.exception("the metric lines of %s were not written", record.execution)

    def job_of(self, execution_arn: str) -> str | None:
        try:
            return ExecutionArn.parse(execution_arn).job(self.prefix)
        except ValueError:
            return None

    def handle(self, execution_arn: str, status: str) -> str:
        """What was done: 'recorded' (this call wrote the final record), 'expiry' (the run had
        recorded itself; its TTL and timeline were added), 'ignored' (not a job of this
        deployment, or an execution that left no record to complete).

        A store or API error propagates: the Lambda fails and its event is retried, instead of
        a run left without its record, TTL or timeline."""
        job = self.job_of(execution_arn)
        if job is None:
            return "ignored"
        name = ExecutionArn.parse(execution_arn).name
        record = self.repo.execution(name)
        described = self.sfn.describe_execution(executionArn=execution_arn)
        finished = described.get("stopDate") or datetime.now(timezone.utc)
        events = history(self.sfn, execution_arn, self.patience)
        # a pooled step's slots, if the run ended without giving them back (stopped, timed out)
        release_run(self.repo.ddb, self.repo.table, events)
        recorded_now = False
        replaced_by = self.replaced_by(execution_arn, described) if status == ABORTED else None
        if record is None and replaced_by is not None:
            recorded_now = self.record_replaced(job, name, execution_arn, described, as_iso(finished),
                                                current_step(events), replaced_by)
            record = self.repo.execution(name)
        elif record is None and status in LOST:
            step = current_step(events)
            error = {ABORTED: "the execution was stopped", TIMED_OUT: "the job ran past its timeout"}.get(
                status, f"{described.get('error') or 'failed'}: {(described.get('cause') or '')[:500]}")
            if status == ABORTED and described.get("cause"):
                error = f"the execution was stopped: {described['cause'][:500]}"
            recorded_now = self.record_lost(job, name, execution_arn, described.get("input") or "{}",
                                            as_iso(described["startDate"]), error, status=status,
                                            finished_at=as_iso(finished), step=step)
            record = self.repo.execution(name)
        else:
            # The state machine recorded its outcome; make sure a dead holder is not left behind.
            self.repo.release_holder(job, execution_arn)
        # A run's end files its job under its status even while another run of it still holds
        # the claim (overlapping runs, a replaced run ending): filed back under RUNNING here.
        self.repo.refile_status(job)
        if record is None:
            return "ignored"
        if record.alert_pending and not recorded_now:  # recorded by an earlier try that failed to publish
            self.announce(record)
            record = self.repo.execution(name) or record
        finished_dt = finished if isinstance(finished, datetime) else datetime.now(timezone.utc)
        rows = timeline(with_end(events, str(described.get("status") or status), finished_dt))
        excerpt = None
        if record.failed_step and not record.error and self.logs is not None:
            excerpt = error_excerpt(self.logs.streams(rows, record.failed_step))
        if not self.repo.finalize(name, int((finished_dt + self.retention).timestamp()), rows,
                                  state_transitions(events), error=excerpt):
            return "ignored"  # the record went away in between (deleted by hand): nothing to add to
        history_of = RunHistory(self.repo.ddb, self.repo.table)
        history_of.note(record)  # the job's recent runs (the jobs page's marks)
        history_of.note_day(record, rows, claims_in_history(events),  # the fleet's timeline of the day
                            int((finished_dt + self.retention).timestamp()))
        self._emit_metrics(record, rows)
        return "recorded" if recorded_now else "expiry"

    def record_lost(self, job: str, name: str, execution_arn: str, input_json: str, started_at: str, error: str,
                    status: str = ABORTED, finished_at: str | None = None, step: str | None = None) -> bool:
        """Write the final record of an execution that could not write its own, release its
        claim and publish the alert; False (and nothing done) if a final record exists.

        The record is written first, marked ``alert_pending``; the alert is published from it
        and the mark removed. If publishing fails, the error propagates (the event is retried)
        and the retry finds the mark and publishes then: the alert is never lost."""
        finished_at = finished_at or now_iso()
        state = self.repo.job_state(job)
        team = state.team if state else ""
        recorded = self.repo.finish_without_cleanup(
            job=job, team=team, execution=name, execution_arn=execution_arn, status=status, started_at=started_at,
            finished_at=finished_at, input_json=input_json,
            failed_step=step, error=error)
        if recorded:
            log.info("recorded %s for %s (step %s) and released its claim", status, name, step)
            record = self.repo.execution(name)
            if record is not None:
                self.announce(record)
        return recorded

    def replaced_by(self, execution_arn: str, described: JsonObject) -> str | None:
        """The run that replaced this stopped one (a REPLACE job's newer run stops the holder
        with the policy's error and its own ARN as the cause: compiler/asl.py), or None.

        Only an existing execution of the same state machine counts, so a stop by anyone else
        that names the error (an operator, a script) is still a stop with its alert."""
        cause = described.get("cause")
        if described.get("error") != REPLACED_ERROR or not isinstance(cause, str):
            return None
        try:
            replacing, stopped = ExecutionArn.parse(cause), ExecutionArn.parse(execution_arn)
        except ValueError:
            return None
        if cause == execution_arn or replacing.state_machine != stopped.state_machine:
            return None
        try:
            self.sfn.describe_execution(executionArn=cause)
        except self.sfn.exceptions.ExecutionDoesNotExist:
            return None
        return cause

    def record_replaced(self, job: str, name: str, execution_arn: str, described: JsonObject, finished_at: str,
                        step: str | None, replaced_by: str) -> bool:
        """Record a replaced run ABORTED, reason REPLACED, and release its claim: no alert,
        since nothing failed (the replacing run is the job's run now)."""
        state = self.repo.job_state(job)
        recorded = self.repo.record_replaced(
            job=job, team=state.team if state else "", execution=name, execution_arn=execution_arn,
            started_at=as_iso(described["startDate"]), finished_at=finished_at,
            input_json=described.get("input") or "{}", step=step, replaced_by=ExecutionArn.parse(replaced_by).name)
        if recorded:
            log.info("recorded %s as replaced by %s (step %s) and released its claim", name, replaced_by, step)
        return recorded

    def announce(self, record: ExecutionRecord) -> None:
        """Publish the alert of a record this reconciler wrote, then clear its pending mark. It
        carries the job's channels, events and runbook, as the state machine's own alert does:
        without them a stopped run's ABORTED alert went to the team's channel even when the job
        had opted out of ABORTED (found by a newcomer QA pass)."""
        channels, events, runbook, after_failures = self._alert_settings(record.job)
        publish(self.sns, self.topic_arn, NotificationMessage(
            version=1, event=event_of(record.status), job=record.job, team=record.team, execution=record.execution,
            execution_arn=record.execution_arn or "", trigger=record.trigger, scheduled_time=record.scheduled_time,
            requested_by=record.requested_by, started_at=record.started_at, finished_at=record.finished_at,
            outcome=Outcome(status=record.status, step=record.failed_step), channels=channels, events=events,
            runbook=runbook, error=record.error, after_failures=after_failures if after_failures > 1 else None))
        self.repo.alert_published(record.execution)

    def _alert_settings(self, job: str) -> tuple[list[str], list[EventName] | None, dict[str, str] | None, int]:
        """The job's channels, events, runbook and after_failures from its catalog entry (a timed-out
        run's failure counts in its streak, as the state machine's do); the defaults (no
        channel: the team's; no events: FAILED, TIMED_OUT, ABORTED; no runbook) when there is no
        entry or anything about it fails. A catalog that cannot be read, or names an event this
        code does not know (a team root built by a newer jobplane), must not hold back an alert:
        the Lambda would fail the same way on every retry and the alert would end undelivered."""
        if self.job_brief is None:
            return [], None, None, 1
        try:
            brief = self.job_brief(job)
            if brief is None:
                return [], None, None, 1
            known = set(EVENTS)
            unknown = [e for e in brief.notify_events if e not in known]
            if unknown:
                log.warning("the alert of %s leaves out events this platform does not know: %s", job, unknown)
            events = [event_of(e) for e in brief.notify_events if e in known]
            return [str(c) for c in brief.notify_channels], events or None, brief.runbook, brief.notify_after_failures
        except Exception as e:  # noqa: BLE001 - any error reading the catalog: logged, the alert still sent
            log.warning("the alert of %s goes out with the default channel and events: its catalog entry "
                        "could not be read: %s", job, e)
            return [], None, None, 1


def current_step(events: list[JsonObject]) -> str | None:
    """The step a run was in when it ended: the one whose state (an attempt, a parallel group,
    a map, or the record of its failure) was entered last. A map's Map state counts: stopped
    while its items ran, the run was in the map, not in its items step, whose Task (entered
    before the Map) had succeeded (issue 65 item 3). (MapStateEntered is the history event of a
    Map state's start: HistoryEvent, https://docs.aws.amazon.com/step-functions/latest/apireference/API_HistoryEvent.html)"""
    for e in sorted(events, key=lambda e: e["id"], reverse=True):
        if e["type"] not in ("TaskStateEntered", "ParallelStateEntered", "MapStateEntered"):
            continue
        try:
            state = classify(e["stateEnteredEventDetails"]["name"])
        except ValueError:
            continue
        if state.step is not None:
            return state.step
    return None


def handler(event: JsonObject, context: object = None) -> dict[str, str]:
    """AWS Lambda entry point for "Step Functions Execution Status Change" events."""
    import boto3

    detail = event["detail"]
    env = RuntimeEnvironment.from_environment()
    reconciler = Reconciler(
        Repository(boto3.client("dynamodb"), env.table), boto3.client("sns"), env.topic_arn,
        boto3.client("stepfunctions"), env.name_prefix, env.execution_retention_days,
        logs=StepLogs(boto3.client("logs"), env.required(environment.LOG_GROUP)),
        job_brief=_catalog_reader(env), metrics=log_line)
    return {"result": reconciler.handle(detail["executionArn"], detail["status"])}


#: One line at a time on stdout: the periodic check's fire ledger records missed fires from
#: several threads, and ``print`` writes a text and its newline as two writes, so two threads'
#: lines could join into one that is not EMF (CloudWatch would drop both).
_LOG_LOCK = threading.Lock()


def log_line(text: str) -> None:
    """One log event of the function's log group: CloudWatch extracts an EMF line's metrics
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Generation.html).
    One write of the whole line, under a lock, whichever thread writes it."""
    with _LOG_LOCK:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def _catalog_reader(env: RuntimeEnvironment) -> Callable[[str], JobBrief | None] | None:
    """One job's entry from the catalog the team roots upload (the base module's
    JOBPLANE_CATALOG; ListObjectsV2 and GetObject, read only when an alert is published, and
    only the parts until one names the job: platform/deployment.py). None without it
    (a base module from before it was given)."""
    catalog = env.optional(environment.CATALOG)
    if not catalog:
        return None
    from jobplane.platform.deployment import Deployment, catalog_job

    from botocore.config import Config

    deployment = Deployment(table=env.table, topic_arn=env.topic_arn, name_prefix=env.name_prefix, region=env.region,
                            catalog_path=catalog)
    # short: the alert waits on it (this Lambda has 120 s and a throttled history read may have
    # taken 40 of them); a slow S3 gives the defaults, not a timed-out Lambda and no alert
    s3 = deployment.client("s3", config=Config(connect_timeout=3, read_timeout=5,
                                               retries={"total_max_attempts": 2, "mode": "standard"}))
    return lambda job: catalog_job(deployment, job, s3=s3)
