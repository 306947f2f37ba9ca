"""The local scheduler: fires the deployed EventBridge schedules on time, as EventBridge
Scheduler would, because moto stores schedules but never fires them.

Same semantics as production and as ``jobplane next`` (one implementation:
:mod:`jobplane.contract.schedule`): cron in the schedule's timezone with EventBridge's DST rules,
rate() counted from the schedule's creation, ENABLED/DISABLED honoured. Each fire starts the
schedule's target with the target input, ``<aws.scheduler.scheduled-time>`` replaced by the fire's
time, so duplicate detection sees what it would see on AWS. Like EventBridge Scheduler it does
not replay fires missed while it was not running; it logs that it skipped them (the fire ledger,
platform/missed.py, records and alerts them). It knows its own stops: with a ``record`` file (in
``jobplane dev``'s data directory) it keeps how far it has fired, so a start after a stop knows
the outage (:attr:`LocalScheduler.outages`), which the ledger names as the missed fires' cause. A start that is refused (the state machine gone,
access denied) is delivered to the schedule's dead-letter queue as EventBridge Scheduler
delivers it: the target input as the body, ERROR_CODE, ERROR_MESSAGE, EXHAUSTED_RETRY_CONDITION,
RETRY_ATTEMPTS, SCHEDULE_ARN and TARGET_ARN as message attributes
(https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html). A refused
start is not retried here: the errors that refuse one are not ones a retry mends.

Time comes from an injectable clock, so tests drive it without sleeping.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from botocore.exceptions import ClientError

from jobplane.contract.arns import resource_name
from jobplane.contract.clock import iso_millis, parse_iso
from jobplane.contract.execution_input import SCHEDULER_TIME, iso
from jobplane.contract.schedule import iter_fire_times, parse, validate_timezone
from jobplane.contract.types import Client, JsonObject

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
#: A gap in the record longer than this is an outage (the loop ticks every second).
OUTAGE_AFTER = timedelta(seconds=10)
#: The outages the record keeps (the newest): enough for the ledger's look-back.
KEEP_OUTAGES = 50


def system_clock() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Fire:
    schedule: str
    scheduled_time: datetime
    execution_arn: str


class LocalScheduler:
    def __init__(self, scheduler_client: Client, sfn_client: Client, group: str, clock: Clock = system_clock,
                 max_event_age: timedelta = timedelta(hours=1), sqs_client: Client = None,
                 record: Path | None = None):
        self.scheduler = scheduler_client
        self.sqs = sqs_client  # the dead-letter queues' client (none: a refused start is only logged)
        # A fire is delivered late only within the schedule's retry window (the compiled Terraform
        # sets maximum_event_age_in_seconds = 3600); older ones were missed, as on AWS.
        self.max_event_age = max_event_age
        self.sfn = sfn_client
        self.group = group
        self.clock = clock
        self.checked_until: datetime | None = None
        self.fired: list[Fire] = []
        self.record = record
        #: When the scheduler was not running (from, to), oldest first: read from the record,
        #: with the gap from its last tick to now when this scheduler is made (before the
        #: platform's first ledger pass, which reads it).
        self.outages: list[tuple[datetime, datetime]] = self._load_outages()

    def _load_outages(self) -> list[tuple[datetime, datetime]]:
        if self.record is None:
            return []
        try:
            kept = json.loads(self.record.read_text())
            outages = [(parse_iso(a), parse_iso(b)) for a, b in kept.get("outages", [])]
            until = parse_iso(kept["running_until"]) if kept.get("running_until") else None
        except (OSError, ValueError, TypeError, KeyError):
            return []  # none kept (a first start), or not readable: no outage known
        now = self.clock()
        if until is not None and now - until > OUTAGE_AFTER:
            outages.append((until, now))
            log.info("the scheduler was not running from %s to %s: fires then were not started (EventBridge "
                     "Scheduler does not replay them either); the fire ledger records them MISSED", iso(until), iso(now))
        return outages[-KEEP_OUTAGES:]

    def _save(self, now: datetime) -> None:
        """Keep how far the scheduler has fired (and the outages known): written whole, then
        renamed, so a crash leaves the last good record."""
        if self.record is None:
            return
        text = json.dumps({"running_until": iso_millis(now),
                           "outages": [[iso_millis(a), iso_millis(b)] for a, b in self.outages]})
        tmp = self.record.with_name(self.record.name + ".tmp")
        try:
            tmp.write_text(text)
            os.replace(tmp, self.record)
        except OSError as e:
            log.warning("could not keep the scheduler's record %s: %s", self.record, e)

    def schedules(self) -> list[JsonObject]:
        out, kwargs = [], {"GroupName": self.group}
        while True:
            page = self.scheduler.list_schedules(**kwargs)
            for summary in page.get("Schedules", []):
                out.append(self.scheduler.get_schedule(Name=summary["Name"], GroupName=self.group))
            if not page.get("NextToken"):
                return out
            kwargs["NextToken"] = page["NextToken"]

    def start(self) -> None:
        """Begin from now: fires missed while the scheduler was down are not replayed."""
        now = self.clock()
        if self.checked_until is not None and now > self.checked_until:
            log.warning("not replaying fires between %s and %s (EventBridge Scheduler does not either)",
                        iso(self.checked_until), iso(now))
        self.checked_until = now
        self._save(now)
        log.info("local scheduler watching %d schedules in group %s", len(self.schedules()), self.group)

    def tick(self) -> list[Fire]:
        """Start every fire due since the last tick; returns what was started."""
        if self.checked_until is None:
            self.start()
        assert self.checked_until is not None
        now = self.clock()
        since, self.checked_until = self.checked_until, now
        started = []
        for schedule in self.schedules():
            if schedule.get("State") != "ENABLED":
                continue
            expression = parse(schedule["ScheduleExpression"])
            zone = validate_timezone(schedule.get("ScheduleExpressionTimezone") or "UTC")
            anchor = schedule.get("StartDate") or schedule.get("CreationDate")
            late = 0
            for when in iter_fire_times(expression, zone, since, anchor=anchor):
                if when > now:
                    break
                if now - when > self.max_event_age:
                    late += 1
                    continue
                fired = self._fire(schedule, when)
                if fired is not None:
                    started.append(fired)
            if late:
                log.warning("%s: %d fires older than %s were missed, not replayed", schedule["Name"], late,
                            self.max_event_age)
        self._save(now)
        return started

    def _fire(self, schedule: JsonObject, when: datetime) -> Fire | None:
        target = schedule["Target"]
        payload = (target.get("Input") or "{}").replace(SCHEDULER_TIME, iso(when))
        try:
            arn = self.sfn.start_execution(stateMachineArn=target["Arn"], name=str(uuid.uuid4()),
                                           input=payload)["executionArn"]
        except ClientError as e:
            self._dead_letter(schedule, payload, e)
            return None
        fire = Fire(schedule["Name"], when, arn)
        self.fired.append(fire)
        log.info("fired %s for %s: %s", schedule["Name"], iso(when), arn)
        return fire

    def _dead_letter(self, schedule: JsonObject, payload: str, error: ClientError) -> None:
        code = error.response.get("Error", {}).get("Code", "Unknown")
        message = error.response.get("Error", {}).get("Message", str(error))
        dlq = (schedule["Target"].get("DeadLetterConfig") or {}).get("Arn")
        log.error("%s could not start %s: %s: %s%s", schedule["Name"], schedule["Target"]["Arn"], code, message,
                  f"; delivered to {dlq}" if dlq and self.sqs else "")
        if not dlq or self.sqs is None:
            return
        url = self.sqs.get_queue_url(QueueName=resource_name(dlq))["QueueUrl"]

        def text(value: str) -> dict[str, str]:
            return {"DataType": "String", "StringValue": value}

        self.sqs.send_message(QueueUrl=url, MessageBody=payload, MessageAttributes={
            "ERROR_CODE": text(code), "ERROR_MESSAGE": text(message[:1000] or code),
            "EXHAUSTED_RETRY_CONDITION": text("MaximumRetryAttempts"), "RETRY_ATTEMPTS": text("0"),
            "SCHEDULE_ARN": text(schedule["Arn"]), "TARGET_ARN": text(schedule["Target"]["Arn"])})

    def run(self, stop: threading.Event, interval: float = 1.0) -> None:
        """Tick until ``stop`` is set (the loop `jobplane dev` runs)."""
        self.start()
        while not stop.wait(interval):
            try:
                self.tick()
            except Exception:  # a bad schedule must not stop the others
                log.exception("local scheduler tick failed")
