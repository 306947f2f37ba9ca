"""What an audit entry says happened: one small frozen dataclass per kind of action (the base
and :class:`Run`, which a run's start writes, live in contract/audit_event.py and are
re-exported here).

An entry was once an action string and a free dict, each writer spelling both; a reader could
not know which keys a "rerun" carries. Each event now names its action, its job, the execution
it concerns and its details as fields, and is stored in the shape entries always had (``action``,
``execution`` and ``details`` as sorted JSON, contract/records.py ``AuditEntry``), so entries
written before still read back: :func:`event_of` turns a stored action and details into the
typed event (an action it does not know into :class:`Other`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar

from jobplane.contract.audit_event import AuditEvent as AuditEvent
from jobplane.contract.audit_event import Run as Run
from jobplane.contract.audit_event import as_int as _int
from jobplane.contract.audit_event import as_object as _object
from jobplane.contract.audit_event import as_str as _str
from jobplane.contract.audit_event import details_text as details_text
from jobplane.contract.types import JsonObject


@dataclass(frozen=True)
class Rerun(AuditEvent):
    """A re-run of ``rerun_of``, from its failed step (``resume_from``) or whole."""

    ACTION: ClassVar[str] = "rerun"
    FROM_FAILED_STEP: ClassVar[str] = "rerun_from_failed_step"
    started: str = ""
    rerun_of: str = ""
    resume_from: str | None = None
    params: JsonObject = field(default_factory=dict)

    @property
    def action(self) -> str:
        return self.FROM_FAILED_STEP if self.resume_from else self.ACTION

    @property
    def execution(self) -> str | None:
        return self.started

    def details(self) -> JsonObject:
        return {"rerun_of": self.rerun_of, "resume_from": self.resume_from, "params": self.params}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, execution or "", _str(details.get("rerun_of")) or "", _str(details.get("resume_from")),
                   _object(details.get("params")))


@dataclass(frozen=True)
class Stop(AuditEvent):
    ACTION: ClassVar[str] = "stop"
    stopped: str = ""

    @property
    def execution(self) -> str | None:
        return self.stopped

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, execution or "")


@dataclass(frozen=True)
class Pause(AuditEvent):
    ACTION: ClassVar[str] = "pause"


@dataclass(frozen=True)
class Resume(AuditEvent):
    ACTION: ClassVar[str] = "resume"


@dataclass(frozen=True)
class Snooze(AuditEvent):
    """The job's alerts held until ``until`` (platform/snooze.py)."""

    ACTION: ClassVar[str] = "snooze"
    until: str = ""

    def details(self) -> JsonObject:
        return {"until": self.until}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, _str(details.get("until")) or "")


@dataclass(frozen=True)
class Unsnooze(AuditEvent):
    """A snooze ended before its time (its summary follows)."""

    ACTION: ClassVar[str] = "unsnooze"


@dataclass(frozen=True)
class Acknowledge(AuditEvent):
    """The failure of ``failed`` no longer blocks a SKIP_IF_FAILED job's fires."""

    ACTION: ClassVar[str] = "acknowledge_failure"
    failed: str | None = None

    @property
    def execution(self) -> str | None:
        return self.failed

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, execution)


@dataclass(frozen=True)
class ReleaseClaim(AuditEvent):
    """Claims of executions that no longer run, released (the first names the entry)."""

    ACTION: ClassVar[str] = "release_claim"
    released: tuple[str, ...] = ()

    @property
    def execution(self) -> str | None:
        return self.released[0] if self.released else None

    def details(self) -> JsonObject:
        return {"released": list(self.released)}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        released = details.get("released")
        return cls(job, tuple(str(x) for x in released) if isinstance(released, list) else
                   ((execution,) if execution else ()))


@dataclass(frozen=True)
class StartBackfill(AuditEvent):
    ACTION: ClassVar[str] = "backfill"
    backfill: str = ""
    start: str = ""
    end: str = ""
    mode: str = ""
    fires: int = 0
    max_concurrent: int = 0
    params: JsonObject = field(default_factory=dict)

    def details(self) -> JsonObject:
        return {"backfill": self.backfill, "from": self.start, "to": self.end, "mode": self.mode,
                "fires": self.fires, "max_concurrent": self.max_concurrent, "params": self.params}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, _str(details.get("backfill")) or "", _str(details.get("from")) or "",
                   _str(details.get("to")) or "", _str(details.get("mode")) or "", _int(details.get("fires")),
                   _int(details.get("max_concurrent")), _object(details.get("params")))


@dataclass(frozen=True)
class CancelBackfill(AuditEvent):
    ACTION: ClassVar[str] = "backfill_cancel"
    backfill: str = ""

    def details(self) -> JsonObject:
        return {"backfill": self.backfill}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, _str(details.get("backfill")) or "")


@dataclass(frozen=True)
class ResumeBackfill(CancelBackfill):
    ACTION: ClassVar[str] = "backfill_resume"


@dataclass(frozen=True)
class CatchUp(AuditEvent):
    """The platform started ``started`` because the status event of ``upstream`` that should
    have started it was lost (platform/catchup.py)."""

    ACTION: ClassVar[str] = "catch-up"
    started: str = ""
    upstream: str = ""

    @property
    def execution(self) -> str | None:
        return self.started

    def details(self) -> JsonObject:
        return {"upstream": self.upstream}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, execution or "", _str(details.get("upstream")) or "")


@dataclass(frozen=True)
class RerunItems(AuditEvent):
    """A re-run of only the items of ``rerun_of``'s map ``map`` that failed (``jp.map``): the run
    ``started`` resumes at the map with those items alone (platform/control/map_items.py)."""

    ACTION: ClassVar[str] = "rerun_failed_items"
    started: str = ""
    rerun_of: str = ""
    map: str = ""
    items: int = 0  # how many
    first: tuple[str, ...] = ()  # the first few, as shown (the records name them all)

    @property
    def execution(self) -> str | None:
        return self.started

    def details(self) -> JsonObject:
        return {"rerun_of": self.rerun_of, "map": self.map, "items": self.items, "first": list(self.first)}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        count = details.get("items")
        first = details.get("first")
        return cls(job, execution or "", _str(details.get("rerun_of")) or "", _str(details.get("map")) or "",
                   count if isinstance(count, int) else 0,
                   tuple(str(f) for f in first) if isinstance(first, list) else ())


@dataclass(frozen=True)
class ResendAlert(AuditEvent):
    """An alert Slack had refused, taken from the events dead-letter queue and published again
    (platform/control/dead_letters.py): which run's, which event, and why it had failed."""

    ACTION: ClassVar[str] = "resend_alert"
    about: str = ""  # the execution the alert is of
    event: str = ""
    failed_with: str = ""

    @property
    def execution(self) -> str | None:
        return self.about

    def details(self) -> JsonObject:
        return {"event": self.event, "failed_with": self.failed_with}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, execution or "", _str(details.get("event")) or "", _str(details.get("failed_with")) or "")


@dataclass(frozen=True)
class Other(AuditEvent):
    """An entry of an action this version does not know (written by a newer one): kept as stored."""

    stored_action: str = ""
    stored_execution: str | None = None
    stored_details: JsonObject = field(default_factory=dict)

    @property
    def action(self) -> str:
        return self.stored_action

    @property
    def execution(self) -> str | None:
        return self.stored_execution

    def details(self) -> JsonObject:
        return self.stored_details

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, action, execution, details)


@dataclass(frozen=True)
class DeferredRun(AuditEvent):
    """The platform started ``started``, the run a ``defer`` blackout window owed the job once
    the window ended (platform/blackouts.py): the last fire it deferred, and how many."""

    ACTION: ClassVar[str] = "blackout-deferred-run"
    started: str = ""
    window: str = ""
    fire: str = ""
    deferred: int = 0

    @property
    def execution(self) -> str | None:
        return self.started

    def details(self) -> JsonObject:
        return {"window": self.window, "fire": self.fire, "deferred": self.deferred}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, execution or "", _str(details.get("window")) or "", _str(details.get("fire")) or "",
                   _int(details.get("deferred")) or 0)


@dataclass(frozen=True)
class BreakGlass(AuditEvent):
    """A change to ``job`` deployed during its own freeze window (``jobplane plan --break-glass``):
    the window, who and why (compiler/freeze.py)."""

    ACTION: ClassVar[str] = "break-glass"
    window: str = ""
    change: str = ""

    def details(self) -> JsonObject:
        return {"window": self.window, "change": self.change}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, _str(details.get("window")) or "", _str(details.get("change")) or "")


@dataclass(frozen=True)
class Approve(AuditEvent):
    """A person approved a run's approval step (jp.approval, platform/approvals.py): which run,
    which step, and the way in (portal, cli, slack)."""

    ACTION: ClassVar[str] = "approve"
    decided: str = ""  # the execution waiting
    step: str = ""
    via: str = ""

    @property
    def execution(self) -> str | None:
        return self.decided

    def details(self) -> JsonObject:
        return {"step": self.step, "via": self.via}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, execution or "", _str(details.get("step")) or "", _str(details.get("via")) or "")


@dataclass(frozen=True)
class Reject(Approve):
    """A person rejected a run's approval step: the run ends REJECTED."""

    ACTION: ClassVar[str] = "reject"


@dataclass(frozen=True)
class Refused(AuditEvent):
    """An action asked for and refused by the one authorization rule (platform/control/access.py):
    who asked, for what (``asked``: the action's name, e.g. ``rerun_from_failed_step``), on which
    execution, and by which way in (``via``: ``Slack``). Nothing else changed; the entry's
    authority is ``refused``. Written by the Slack buttons (platform/slack_actions/worker.py)."""

    ACTION: ClassVar[str] = "refused"
    asked: str = ""
    about: str | None = None
    via: str = ""

    @property
    def execution(self) -> str | None:
        return self.about

    def details(self) -> JsonObject:
        return {"asked": self.asked, "via": self.via}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, _str(details.get("asked")) or "", execution, _str(details.get("via")) or "")


KINDS: tuple[type[AuditEvent], ...] = (Run, Rerun, Stop, Pause, Resume, Snooze, Unsnooze, Acknowledge, ReleaseClaim, StartBackfill,
                                       CancelBackfill, ResumeBackfill, CatchUp, RerunItems, ResendAlert,
                                       DeferredRun, BreakGlass, Approve, Reject, Refused)
_BY_ACTION: dict[str, type[AuditEvent]] = {k.ACTION: k for k in KINDS} | {Rerun.FROM_FAILED_STEP: Rerun}


def event_of(action: str, job: str, execution: str | None, details: str) -> AuditEvent:
    """The typed event of a stored entry (``details`` as stored: JSON text)."""
    try:
        parsed = json.loads(details or "{}")
    except (ValueError, RecursionError):
        parsed = {}
    values: JsonObject = parsed if isinstance(parsed, dict) else {}
    return _BY_ACTION.get(action, Other).read(action, job, execution, values)


