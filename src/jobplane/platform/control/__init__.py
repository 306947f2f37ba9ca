"""The operator's control plane: every read and action the portal, the CLI and tests perform on
a deployed platform, in one place, over boto3 clients (real AWS or the embedded local AWS: only
the endpoint differs).

Actions check what they act on and fail with a typed error (:class:`NotFound`,
:class:`Conflict`, :class:`Invalid`) that the portal maps to 404/409/400 and the CLI prints;
each successful action writes an audit entry naming who, what, which job or execution and why.

The plane is services over one platform context (platform/context.py: the deployment, its
clients, the store, the catalog, the clock, the audit writer), each an object holding the
context and the services it needs: ``reads`` (every read), ``runs`` (run, re-run, stop; the
authorization, once per action, and the audit), ``jobs`` (pause, resume, acknowledge, release
a claim), ``map_items`` (a run's map items), ``dead_letters`` (what was not delivered, and
re-sending it). Beside them: ``access`` (who may act: one rule for every way in), ``views``
(what a read returns), ``errors`` (what fails and the checks of operator input).
:class:`ControlPlane` is the facade the portal, the CLI and tests use; everything is importable
from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobplane.contract.types import Client
from jobplane.platform.context import PlatformContext, platform_context
from jobplane.platform.control.access import Access, Actor
from jobplane.platform.control.dead_letters import DeadLetterActions
from jobplane.platform.control.reads import Reads
from jobplane.platform.deployment import Deployment, load_catalog
from jobplane.platform.repository import Repository
from jobplane.platform.control.errors import (MAX_PARAMS_BYTES, MAX_REASON, Conflict, ControlError, Forbidden, Invalid,
                                              NotFound, check_cursor, check_reason)
from jobplane.platform.control.jobs import JobActions
from jobplane.platform.control.map_items import MapItems
from jobplane.platform.control.runs import IDEMPOTENCY_KEY_MAX, Authorized, AuthorizedRun, Runs, idempotent_name
from jobplane.platform.control.views import (JOB_SORTS, RECENT_FAILURES, ExecutionSubject, ExecutionView, JobSummary, JobWindow,
                                             next_fires)


if TYPE_CHECKING:
    from jobplane.contract.catalog import Catalog, CatalogJob
    from jobplane.platform.anchors import ScheduleAnchors
    from jobplane.platform.logs import StepLogs


class ControlPlane:
    """Every read and action on one deployment (see the module's docstring for the parts): the
    services built over one context, their public methods here under their own names.

    ``ControlPlane(deployment, catalog, load)`` builds the context (platform/context.py
    ``platform_context``: ``load`` reads the whole catalog now); ``ControlPlane.over(context)``
    shares one already built."""

    def __init__(self, deployment: Deployment, catalog: Catalog | None = None, load: bool = True):
        self._compose(platform_context(deployment, catalog, load=load))

    @classmethod
    def over(cls, context: PlatformContext) -> ControlPlane:
        plane = cls.__new__(cls)
        plane._compose(context)
        return plane

    def _compose(self, context: PlatformContext) -> None:
        self.context = context
        self.reads = reads = Reads(context)
        self.runs = runs = Runs(context, reads)
        self.jobs_actions = jobs = JobActions(context, reads, runs)
        self.map_items = maps = MapItems(context, reads, runs)
        self.dead_letter_actions = letters = DeadLetterActions(context, runs)
        # reads
        self.entry, self.brief, self.jobs, self.job_window, self.job = (
            reads.entry, reads.brief, reads.jobs, reads.job_window, reads.job)
        self.schedule_problems, self.schedule_anchors, self.executions = (
            reads.schedule_problems, reads.schedule_anchors, reads.executions)
        self.running_executions, self.execution, self.subject, self.record_view = (
            reads.running_executions, reads.execution, reads.subject, reads.record_view)
        self.log_streams, self.failures, self.skips, self.audit, self.step_names = (
            reads.log_streams, reads.failures, reads.skips, reads.audit, reads.step_names)
        self.step_progress = reads.step_progress
        self.resolved_params = reads.resolved_params  # a scheduled fire's calendar defaults (contract/params.py)
        # runs: the actions on runs, and the authorization and audit of every action
        self.run_now, self.rerun, self.stop, self.checked_params = runs.run_now, runs.rerun, runs.stop, runs.checked_params
        self.authorize, self.audited, self.start_execution = runs.authorize, runs.audited, runs.start_execution
        # jobs
        self.pause, self.resume, self.acknowledge, self.release_claim = (
            jobs.pause, jobs.resume, jobs.acknowledge, jobs.release_claim)
        self.snooze, self.unsnooze = jobs.snooze, jobs.unsnooze
        self.apply_pauses, self.repair_pauses = jobs.apply_pauses, jobs.repair_pauses
        # map items
        self.map_progress, self.items, self.item, self.rerun_failed_items = (
            maps.map_progress, maps.items, maps.item, maps.rerun_failed_items)
        # dead letters
        self.events_dead_letters, self.dead_letters, self.resend_alerts = (
            letters.events_dead_letters, letters.dead_letters, letters.resend_alerts)

    # what the context holds, for the tests that look at the store or the clients themselves
    @property
    def deployment(self) -> Deployment:
        return self.context.deployment

    @property
    def ddb(self) -> Client:
        return self.context.ddb

    @property
    def sfn(self) -> Client:
        return self.context.sfn

    @property
    def repo(self) -> Repository:
        return self.context.repo

    @property
    def catalog(self) -> Catalog:
        return self.context.catalog

    @property
    def entries(self) -> dict[str, CatalogJob]:
        return self.context.entries

    @entries.setter
    def entries(self, entries: dict[str, CatalogJob]) -> None:
        self.context.set_entries(entries)

    @property
    def scheduler(self) -> Client:
        return self.context.scheduler

    @property
    def logs(self) -> StepLogs:
        return self.context.logs

    @property
    def anchors(self) -> ScheduleAnchors:
        return self.context.anchors


__all__ = ["IDEMPOTENCY_KEY_MAX", "JOB_SORTS", "MAX_PARAMS_BYTES", "MAX_REASON", "RECENT_FAILURES", "Access", "Actor",
           "Authorized", "AuthorizedRun", "Conflict", "ControlError", "ControlPlane", "Deployment", "ExecutionSubject", "ExecutionView", "Forbidden",
           "Invalid", "JobSummary", "JobWindow", "NotFound", "PlatformContext",
           "check_cursor", "check_reason", "idempotent_name", "load_catalog", "next_fires"]
