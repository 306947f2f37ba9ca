"""The operator's control plane: every read and action the portal, the CLI and tests perform on
a deployed platform, in one place, over boto3 clients (real AWS or the embedded local AWS: only
the endpoint differs).

Actions check what they act on and fail with a typed error (:class:`NotFound`,
:class:`Conflict`, :class:`Invalid`) that the portal maps to 404/409/400 and the CLI prints;
each successful action writes an audit entry naming who, what, which job or execution and why.

The plane is split by concern: ``reads`` (every read, and the clients and catalog it holds),
``access`` (who may act: one rule for every way in), ``runs`` (run, re-run, stop; the
authorization and the audit), ``jobs`` (pause, resume, acknowledge, release a claim),
``views`` (what a read returns), ``deployment`` (where it all is), ``errors`` (what fails and
the checks of operator input), ``dead_letters`` (what was not delivered, and re-sending it).
:class:`ControlPlane` is all of them; everything is importable
from here.
"""

from __future__ import annotations

from jobplane.platform.control.access import Access, Actor
from jobplane.platform.control.dead_letters import DeadLetterActions
from jobplane.platform.control.deployment import Deployment, load_catalog
from jobplane.platform.control.errors import (MAX_PARAMS_BYTES, MAX_REASON, Conflict, ControlError, Forbidden, Invalid,
                                              NotFound, check_cursor, check_reason)
from jobplane.platform.control.jobs import JobActions
from jobplane.platform.control.map_items import MapItems
from jobplane.platform.control.runs import IDEMPOTENCY_KEY_MAX, idempotent_name
from jobplane.platform.control.views import (JOB_SORTS, RECENT_FAILURES, ExecutionSubject, ExecutionView, JobSummary, JobWindow,
                                             next_fires)


class ControlPlane(MapItems, JobActions, DeadLetterActions):
    """Every read and action on one deployment (see the module's docstring for the parts)."""


__all__ = ["IDEMPOTENCY_KEY_MAX", "JOB_SORTS", "MAX_PARAMS_BYTES", "MAX_REASON", "RECENT_FAILURES", "Access", "Actor",
           "Conflict", "ControlError", "ControlPlane", "Deployment", "ExecutionSubject", "ExecutionView", "Forbidden",
           "Invalid", "JobSummary", "JobWindow", "NotFound",
           "check_cursor", "check_reason", "idempotent_name", "load_catalog", "next_fires"]
