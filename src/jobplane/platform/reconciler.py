"""The reconciler: finishes what an execution could not finish itself.

A compiled state machine records its own outcome and releases its own claim — unless it was
stopped (ABORTED), ran out of its whole-job timeout (TIMED_OUT) or failed inside the platform's
own states. Every terminal status reaches this handler (in production a Lambda behind the base
module's EventBridge rule; locally the engine calls it): if the execution left no final record,
it writes one, releases the claim in the same transaction, clears the holder if it is this
execution, and publishes the notification. It also adds what only the execution history knows
(each step attempt's times, the state transitions used) and the record's TTL. Idempotent: handling
the same event twice changes nothing the second time.
"""

from __future__ import annotations

import json
import logging
import os
import re
from datetime import datetime, timedelta, timezone
from typing import Any

from jobplane.platform.clock import as_iso, now_iso
from jobplane.contract.notifications import NotificationMessage, Outcome, publish
from jobplane.platform.logs import LocalLogStore, error_excerpt
from jobplane.platform.repository import Repository
from jobplane.platform.timeline import history, state_transitions, timeline

log = logging.getLogger(__name__)

DEFAULT_RETENTION_DAYS = 400
#: State names the compiler generates around the steps (never a step's own Task state).
_PLATFORM_STATES = re.compile(r"^(Claim|Route|Finish.*|Notify .*|Fail|Skip: .*|Take over stale claim|Unknown resume_from)$")


class Reconciler:
    def __init__(self, repository: Repository, sns: Any, topic_arn: str, sfn: Any, name_prefix: str,
                 retention_days: int = DEFAULT_RETENTION_DAYS, logs: LocalLogStore | None = None):
        self.repo = repository
        self.logs = logs  # step logs, for the error excerpt of a failed step (local log store)
        self.sns = sns
        self.topic_arn = topic_arn
        self.sfn = sfn
        self.prefix = name_prefix
        self.retention = timedelta(days=retention_days)

    def job_of(self, execution_arn: str) -> str | None:
        # arn:aws:states:region:account:execution:<state machine>:<name>
        parts = execution_arn.split(":")
        machine = parts[6] if len(parts) > 7 else ""
        return machine[len(self.prefix) + 1:] if machine.startswith(self.prefix + "-") else None

    def handle(self, execution_arn: str, status: str) -> str:
        """Returns what was done: 'recorded', 'expiry', 'ignored'."""
        job = self.job_of(execution_arn)
        if job is None:
            return "ignored"
        name = execution_arn.rsplit(":", 1)[1]
        record = self.repo.execution(name)
        described = self.sfn.describe_execution(executionArn=execution_arn)
        finished = described.get("stopDate") or datetime.now(timezone.utc)
        if record is None and status in ("ABORTED", "TIMED_OUT", "FAILED"):
            step = self._current_step(execution_arn)
            error = {"ABORTED": "the execution was stopped", "TIMED_OUT": "the job ran past its timeout"}.get(
                status, f"{described.get('error') or 'failed'}: {(described.get('cause') or '')[:500]}")
            if status == "ABORTED" and described.get("cause"):
                error = f"the execution was stopped: {described['cause'][:500]}"
            self.record_lost(job, name, execution_arn, described.get("input") or "{}", as_iso(described["startDate"]),
                             error, status=status, finished_at=as_iso(finished), step=step)
        else:
            # The state machine recorded its outcome; make sure a dead holder is not left behind.
            self.repo.release_holder(job, execution_arn)
        finished_dt = finished if isinstance(finished, datetime) else datetime.now(timezone.utc)
        events = history(self.sfn, execution_arn)
        excerpt = None
        record = record or self.repo.execution(name)
        if record is not None and record.failed_step and not record.error and self.logs is not None:
            excerpt = error_excerpt(self.logs.streams(name, record.failed_step))
        try:
            self.repo.finalize(name, int((finished_dt + self.retention).timestamp()), timeline(events),
                               state_transitions(events), error=excerpt)
        except Exception:  # no record (e.g. an execution that never claimed): nothing to expire
            return "recorded" if record is None else "ignored"
        return "recorded" if record is None else "expiry"

    def record_lost(self, job: str, name: str, execution_arn: str, input_json: str, started_at: str, error: str,
                    status: str = "ABORTED", finished_at: str | None = None, step: str | None = None) -> bool:
        """Write the final record of an execution that could not write its own, release its
        claim and publish the alert; False (and nothing done) if a final record exists."""
        finished_at = finished_at or now_iso()
        state = self.repo.job_state(job)
        team = state.team if state else ""
        recorded = self.repo.finish_without_cleanup(
            job=job, team=team, execution=name, execution_arn=execution_arn, status=status, started_at=started_at,
            finished_at=finished_at, input_json=input_json,
            failed_step=step, error=error)
        if recorded:
            parsed = json.loads(input_json)
            publish(self.sns, self.topic_arn, NotificationMessage(
                version=1, event=status, job=job, team=team, execution=name, execution_arn=execution_arn,
                trigger=parsed.get("trigger"), scheduled_time=parsed.get("scheduled_time"),
                requested_by=parsed.get("requested_by"), started_at=started_at,
                finished_at=finished_at, outcome=Outcome(status=status, step=step), channels=[], error=error))
            log.info("recorded %s for %s (step %s) and released its claim", status, name, step)
        return recorded

    def _current_step(self, execution_arn: str) -> str | None:
        """The step whose Task state was entered last (what was running when it ended)."""
        events = history(self.sfn, execution_arn)
        for e in sorted(events, key=lambda e: e["id"], reverse=True):
            details = e.get("stateEnteredEventDetails")
            if e["type"] == "TaskStateEntered" and details and not _PLATFORM_STATES.match(details["name"]):
                return details["name"].split(" #")[0]
            if e["type"] == "ParallelStateEntered" and details:
                return details["name"]
        return None


def handler(event: dict[str, Any], context: Any = None) -> dict[str, str]:
    """AWS Lambda entry point for "Step Functions Execution Status Change" events."""
    import boto3

    detail = event["detail"]
    reconciler = Reconciler(
        Repository(boto3.client("dynamodb"), os.environ["JOBPLANE_TABLE"]), boto3.client("sns"),
        os.environ["JOBPLANE_TOPIC_ARN"], boto3.client("stepfunctions"),
        os.environ.get("JOBPLANE_NAME_PREFIX", "jobplane"),
        int(os.environ.get("JOBPLANE_EXECUTION_RETENTION_DAYS", DEFAULT_RETENTION_DAYS)))
    return {"result": reconciler.handle(detail["executionArn"], detail["status"])}
