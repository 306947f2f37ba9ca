"""The audit event a run's start writes (:class:`Run`), its base, and how details are stored.

Split from contract/audit.py, which defines every other kind and reads stored entries back
(``event_of``) and re-exports these: `jobplane run` writes a Run entry before its
StartExecution, and building the other 13 frozen dataclasses at import was ~7 ms of it before
its run could start (issue 54 item 5, bench/dev_e2e.py). Import the kinds from
:mod:`jobplane.contract.audit`; this module is what the start path needs alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar

from jobplane.contract.types import JsonObject, JsonValue


@dataclass(frozen=True)
class AuditEvent:
    """One kind of operator action on one job."""

    #: the stored ``action`` (one per kind; Rerun has two, as it always had)
    ACTION: ClassVar[str] = ""
    job: str

    @property
    def action(self) -> str:
        return self.ACTION

    @property
    def execution(self) -> str | None:
        """The execution the action concerns (started, stopped, acknowledged), if one."""
        return None

    def details(self) -> JsonObject:
        return {}

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job)


@dataclass(frozen=True)
class Run(AuditEvent):
    ACTION: ClassVar[str] = "run"
    started: str = ""
    params: JsonObject = field(default_factory=dict)
    from_step: str | None = None

    @property
    def execution(self) -> str | None:
        return self.started

    def details(self) -> JsonObject:
        return {"params": self.params} | ({"from_step": self.from_step} if self.from_step else {})

    @classmethod
    def read(cls, action: str, job: str, execution: str | None, details: JsonObject) -> AuditEvent:
        return cls(job, execution or "", as_object(details.get("params")), as_str(details.get("from_step")))


def details_text(event: AuditEvent) -> str:
    """The details as stored: sorted JSON (what entries always held)."""
    return json.dumps(event.details(), sort_keys=True)


def as_object(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {}


def as_str(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: JsonValue) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
