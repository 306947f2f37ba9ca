"""The operator actions on one execution or job, one path for the pages (forms) and the JSON API.

Each action reads only what it needs to authorize (the job, or an execution's record: never its
history or logs), asks ``authorize`` (the caller's check: a form's CSRF token and the team, or
the API's team check, with the action budget) whether this user may act on the job, and hands
what it read to the control plane, which applies the same rule again and does not read it again. The two routers differ
only in how they read the request and answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from jobplane.platform.control import ControlPlane
from jobplane.portal.auth import User
from jobplane.contract.types import JsonObject

#: the caller's check of the user against the job's team; returns the user (with .name)
Authorize = Callable[[str], User]


@dataclass(frozen=True)
class Started:
    execution: str
    job: str


def run(control: ControlPlane, authorize: Authorize, job: str, params: JsonObject, reason: str,
        idempotency_key: str | None) -> Started:
    user = authorize(control.entry(job).team)
    return Started(control.run_now(job, user, params, reason, idempotency_key=idempotency_key), job)


def rerun(control: ControlPlane, authorize: Authorize, execution: str, from_failed_step: bool,
          params: JsonObject | None, reason: str, idempotency_key: str | None, current: bool = False,
          from_scratch: bool = False) -> Started:
    subject = control.subject(execution)
    user = authorize(control.entry(subject.job).team)
    name = control.rerun(execution, user, from_failed_step, params, reason, idempotency_key=idempotency_key,
                         loaded=subject, current=current, from_scratch=from_scratch)
    return Started(name, subject.job)


def stop(control: ControlPlane, authorize: Authorize, execution: str, reason: str) -> str:
    """Returns the job of the stopped execution."""
    subject = control.subject(execution)
    user = authorize(control.entry(subject.job).team)
    control.stop(execution, user, reason, loaded=subject)
    return subject.job
