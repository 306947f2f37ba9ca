"""The notification message contract: one SNS message per event.

Three producers write it — the compiled state machine (FAILED, TIMED_OUT, SKIPPED, RECOVERED),
the reconciler (ABORTED, TIMED_OUT of a whole run, FAILED without cleanup) and the periodic
check (SLOW; MISSED, whose ``outcome.status`` is MISSED when fires stop and RECOVERED when they
resume; DEADLINE, whose ``outcome.status`` is DEADLINE when a fire is late and RECOVERED when it lands) — and the Slack notifier reads it. The model below is the schema (docs/notifications.md); tests hold both
producers to it.

Message attributes, for subscription filter policies: ``team``, ``job``, ``status`` (String).
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from jobplane.contract.types import Client

Event = Literal["FAILED", "TIMED_OUT", "ABORTED", "SKIPPED", "RECOVERED", "SLOW", "MISSED", "DEADLINE", "STALLED",
                "APPROVAL", "EXPECTATION"]
EVENTS: tuple[Event, ...] = get_args(Event)


def event_of(value: str) -> Event:
    """A status or event name as a message's event (a record's status is one for the runs that
    end in an alert); anything else is a programming error, said at once."""
    for event in EVENTS:
        if event == value:
            return event
    raise ValueError(f"{value!r} is not a notification event ({', '.join(EVENTS)})")


class Outcome(BaseModel):
    model_config = ConfigDict(extra="allow")
    status: str
    step: str | None = None


class NotificationMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1]
    event: Event
    job: str
    team: str
    execution: str
    execution_arn: str
    trigger: str | None = None
    scheduled_time: str | None = None
    requested_by: str | None = None
    started_at: str | None = None
    finished_at: str | None = None  # when the event was published (end of the run, or the skip)
    outcome: Outcome
    channels: list[str]
    events: list[Event] | None = None  # the events the job subscribes to (None: the defaults)
    runbook: dict[str, str] | None = None
    error: str | None = None
    #: the job's ``after_failures`` when above 1: its failure alerts wait for that many failed runs
    #: in a row (platform/alert_streak.py); absent on every other job's messages
    after_failures: int | None = None
    #: a failure announced again because nobody acknowledged it (platform/renotify.py): how long
    #: it has stood, in words ("unacknowledged for 4h"); absent on the first announcement
    reminder: str | None = None
    #: the alerts held while the job was snoozed, in words (platform/snooze.py): this message is
    #: that summary, sent once when the snooze ends, and never itself held
    summary: str | None = None


def attributes(message: NotificationMessage) -> dict[str, dict[str, str]]:
    """Filterable attributes; SNS refuses an empty String value, so an unknown team (a run
    stopped before its claim wrote the job state) is left out rather than failing the alert."""
    values = {"team": message.team, "job": message.job, "status": message.event,
              # a message about alerts already told of (a snooze's summary, a reminder): a
              # subscription filter on status alone would count its failure twice
              "kind": "summary" if message.summary else "reminder" if message.reminder else ""}
    return {k: {"DataType": "String", "StringValue": v} for k, v in values.items() if v}


def publish(sns: Client, topic_arn: str, message: NotificationMessage) -> str:
    message_id: str = sns.publish(TopicArn=topic_arn, Message=message.model_dump_json(),
                                  MessageAttributes=attributes(message))["MessageId"]
    return message_id


def subscribed(message: NotificationMessage, defaults: tuple[str, ...]) -> bool:
    """Whether the job wants this event: it is among its events (``defaults`` when it names
    none); a MISSED fire, a DEADLINE breach, a STALLED step and a warned EXPECTATION go wherever
    failures go; an APPROVAL request (jp.approval) always goes: someone must decide, whatever the
    job alerts on."""
    if message.event == "APPROVAL":
        return True
    events: list[str] = list(message.events) if message.events else list(defaults)
    return message.event in events or (message.event in ("MISSED", "DEADLINE", "STALLED", "EXPECTATION") and "FAILED" in events)
