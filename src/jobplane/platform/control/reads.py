"""Every operator read (jobs, executions, logs, failures, skips, audit): the control plane's read
service, over the platform context (its clients, store and catalog)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING

from jobplane.contract import datamodel as dm
from jobplane.contract.catalog_brief import JobBrief
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.clock import as_iso
from jobplane.contract.records import AuditEntry, ExecutionRecord, JobState
from jobplane.contract.attribute_values import json_object
from jobplane.contract.types import Client, JsonObject, JsonValue
from jobplane.platform.repository import Page
from jobplane.platform.deployment import catalog_job
from jobplane.platform.step_progress import StepProgress
from jobplane.platform.control.errors import Invalid, NotFound, check_cursor
from jobplane.platform.control.views import (JOB_SORTS, RECENT_FAILURES, ExecutionHistory, ExecutionSubject,
                                             ExecutionView, JobSummary, JobWindow, LiveExecution, next_fires)


NEVER_RUN, PAUSED = "NEVER_RUN", "PAUSED"
#: The statuses a run ends with (contract/items.py ``release_job`` writes only these): the status
#: index has a partition for each.
_ENDED = frozenset(s.value for s in ExecutionStatus if s is not ExecutionStatus.RUNNING)
#: The status index partitions of the jobs a run ended (and PAUSED: a last status no run ends
#: with, which :func:`_status_matches` still compares): the NEVER_RUN filter's complement. A
#: last status that is none of these (never written by jobplane) is not read by that filter.
_FILED_ENDED = _ENDED | {PAUSED}
#: What :func:`_status_matches` reads of a state.
STATUS_ATTRIBUTES = ("job", dm.ATTR_RUNNING, dm.ATTR_LAST_STATUS, dm.ATTR_PAUSED_AT)


def _status_matches(state: JobState | None, status: str) -> bool:
    """The jobs page's status filter: the last status (RUNNING while a run holds the claim,
    NEVER_RUN without a state), or PAUSED."""
    last = ExecutionStatus.RUNNING.value if state and state.running else (state.last_status if state else None) or NEVER_RUN
    return status == last or (status == PAUSED and bool(state and state.paused))


if TYPE_CHECKING:  # the catalog's models (pydantic) load with the catalog (``load``)
    from jobplane.contract.catalog import Catalog, CatalogJob
    # an execution's history and logs load when first read: after a run has started (issue 54
    # item 5: what `jobplane run` imports before its StartExecution delays the run itself)
    from jobplane.platform.logs import LogStream, StepLogs
    from jobplane.platform.context import PlatformContext


class Reads:
    """Every read, over the platform context (platform/context.py: its clients, store and
    catalog). A run's start and its view read only that job's entry of the catalog
    (:meth:`brief`; ``jobplane run``'s start-up, issue 54 item 5) unless the whole catalog is
    at hand."""

    def __init__(self, context: PlatformContext):
        self.context = context
        self.deployment = context.deployment
        self.ddb = context.ddb
        self.sfn = context.sfn
        self.repo = context.repo
        self._briefs: dict[str, JobBrief] = {}
        self._sorted_entries: tuple[dict[str, CatalogJob], list[CatalogJob]] | None = None

    @property
    def catalog(self) -> Catalog:
        return self.context.catalog

    @property
    def entries(self) -> dict[str, CatalogJob]:
        return self.context.entries

    @property
    def scheduler(self) -> Client:
        return self.context.scheduler

    @property
    def logs(self) -> StepLogs:
        return self.context.logs

    # -- reads ------------------------------------------------------------------------------
    def entry(self, job: str) -> CatalogJob:
        try:
            return self.entries[job]
        except KeyError:
            raise self._no_such_job(job) from None

    def _no_such_job(self, job: str) -> NotFound:
        """NotFound for ``job``, with the closest name the catalog holds (the names are read
        only on this path: a run's start reads one job's entry)."""
        from jobplane.contract.quoting import did_you_mean

        return NotFound(f"no job named {job!r}{did_you_mean(job, list(self.entries))}", {"job": job})

    def brief(self, job: str) -> JobBrief:
        """What a run of ``job`` needs of its catalog entry (contract/catalog_brief.py): from the
        catalog when it is loaded, else that job's entry alone. NotFound if there is no such job."""
        known = self._briefs.get(job)
        if known is not None:
            return known
        if self.context.catalog_read:
            found = JobBrief.from_json(self.entry(job).model_dump(mode="json"))
        else:
            read = catalog_job(self.deployment, job)
            if read is None:
                raise self._no_such_job(job)
            found = read
        self._briefs[job] = found
        return found

    def jobs(self, team: str | None = None, status: str | None = None, text: str | None = None,
             fires: int = 3, sort: str | None = None, state_attributes: tuple[str, ...] = JobState.ATTRIBUTES,
             ) -> list[JobSummary]:
        """Every job that matches, by team and name (or ``sort``: see :meth:`job_window`)."""
        return self.job_window(team, status, text, fires, sort, state_attributes).jobs

    def job_window(self, team: str | None = None, status: str | None = None, text: str | None = None,
                   fires: int = 3, sort: str | None = None, state_attributes: tuple[str, ...] = JobState.ATTRIBUTES,
                   offset: int = 0, limit: int | None = None, last_page_if_beyond: bool = False) -> JobWindow:
        """The jobs that match, by team and name, from ``offset`` on (``limit`` of them; all
        without one); ``sort``: "failures" (most failures among the newest RECENT_FAILURES across
        jobs first) or "duration" (the longest last run first). ``state_attributes``: what of
        each job's state to read (Repository.job_states); the filters and sorts need ``job``,
        ``running``, ``last_status``, the last run's times and ``paused_at``.
        ``last_page_if_beyond``: an offset past the end gives the last page (a page link kept
        while jobs went away), not an empty one.

        The team and text filters and the default order need only the catalog, so with a limit
        and without the duration sort, only the window's jobs' states are read (one
        BatchGetItem per 100) and only their next fires computed: at 5,000 jobs the whole state
        query and the next fires of every job were most of the jobs page (bench/portal.py). A
        status filter first reads the jobs that may match from one partition of an index
        (:meth:`_jobs_for_status`), never every job's state. The duration sort needs every
        state: one query."""
        if sort not in (None, *JOB_SORTS):
            raise Invalid(f"sort must be one of {', '.join(JOB_SORTS)}", {"sort": "unknown"})
        needle = (text or "").lower()
        entries = [e for e in self._by_team_and_name()
                   if (not team or e.team == team)
                   and (not needle or needle in e.name.lower() or needle in e.description.lower())]
        failures: dict[str, int] = {}
        if sort == "failures":  # one read of the failures feed, not one per job
            for x in self.repo.recent_failures(RECENT_FAILURES).items:
                failures[x.job] = failures.get(x.job, 0) + 1
            entries.sort(key=lambda e: -failures.get(e.name, 0))  # stable: team and name order among equals
        states: dict[str, JobState] = {}
        every_state = limit is None or sort == "duration"
        if every_state:
            states = {s.job: s for s in self.repo.job_states(state_attributes)}
            if status:
                entries = [e for e in entries if _status_matches(states.get(e.name), status)]
            if sort == "duration":
                entries.sort(key=lambda e: -((s.last_duration or 0.0) if (s := states.get(e.name)) else 0.0))
        elif status:  # the jobs that match; the window's own states are read after, as without a filter
            matching = self._jobs_for_status(status)
            entries = [e for e in entries if e.name in matching]
        total = len(entries)
        if last_page_if_beyond and limit and total and offset >= total:
            offset = (total - 1) // limit * limit
        window = entries[offset:offset + limit if limit is not None else None]
        if not every_state:
            states = self.repo.job_states_of([e.name for e in window], state_attributes)
        out = [JobSummary(entry, states.get(entry.name),
                          next_fires(entry, fires, anchors=self.schedule_anchors(entry)) if fires else [],
                          failures.get(entry.name, 0))
               for entry in window]
        return JobWindow(out, total, offset)

    def _jobs_for_status(self, status: str) -> set[str]:
        """The jobs a status filter matches, as :func:`_status_matches` decides them from their
        states (a catalog's job without a state: NEVER_RUN), among which the caller keeps the
        catalog's. Each is one partition of an index, never every job's state (issue 66 item 3:
        bench/portal.py, 5,000 jobs):

        * a status a run ends with (any other but these two): the names filed under it in the
          status index (gsi3, :func:`dm.status_filed`; its partition is the last status, as
          every writer sets both) whose state no run holds the claim of (a run ending while
          another still holds the claim files the job under its status until the reconciler
          files it back). Only the names and ``running`` are read, and no state is built from
          them: at 5,000 jobs building and copying a JobState for each of SUCCEEDED's ~4,400
          filed jobs was half of that page (cProfile, bench/portal.py; Repository.jobs_filed_idle);
        * RUNNING: the jobs filed under it (the claim files them), decided by their states;
        * PAUSED: gsi2 ``PAUSED``, written and removed with the pause (and a last status PAUSED,
          which no run ends with: a hand-made state);
        * NEVER_RUN: the catalog's jobs a run never claimed: those in no partition of the status
          index (read as names only), and those filed under RUNNING whose claim a dead run left
          (Repository.release_claim files them back; decided by their state)."""
        if status == PAUSED:
            return {s.job for s in (*self.repo.job_states_paused(STATUS_ATTRIBUTES),
                                    *self.repo.job_states_ended(PAUSED, STATUS_ATTRIBUTES)) if _status_matches(s, status)}
        if status == ExecutionStatus.RUNNING.value:
            return {s.job for s in self.repo.job_states_ended(status, STATUS_ATTRIBUTES) if _status_matches(s, status)}
        if status != NEVER_RUN:
            return set(self.repo.jobs_filed_idle(status))
        claimed: set[str] = set()
        for ended in sorted(_FILED_ENDED):
            claimed.update(self.repo.jobs_filed(ended))
        running = {s.job: s for s in self.repo.job_states_ended(ExecutionStatus.RUNNING.value, STATUS_ATTRIBUTES)}
        return ({e for e in self.entries if e not in claimed and e not in running}
                | {job for job, s in running.items() if job not in claimed and _status_matches(s, status)})

    def _by_team_and_name(self) -> list[CatalogJob]:
        """The catalog's jobs by team and name, sorted once per catalog."""
        cached = self._sorted_entries
        if cached is None or cached[0] is not self.entries:
            cached = self._sorted_entries = (self.entries, sorted(self.entries.values(), key=lambda e: (e.team, e.name)))
        return cached[1]

    def job(self, job: str, fires: int = 5) -> JobSummary:
        """The job, its state and its next ``fires`` fires (0: none computed; the job page of a
        calendar job computes its fires once, with their notes: portal/pages.py)."""
        entry = self.entry(job)
        return JobSummary(entry, self.repo.job_state(job),
                          next_fires(entry, fires, anchors=self.schedule_anchors(entry)) if fires else [])

    def schedule_problems(self, job: str, known: JobSummary | None = None) -> dict[str, str]:
        """What is wrong with the job's deployed schedules (platform/schedule_health.py): none
        when they are deployed as compiled. ``known``: the job as just read (its state is not
        read again)."""
        from jobplane.platform.schedule_health import schedule_problems

        entry = self.entry(job)
        state = known.state if known is not None and known.name == job else self.repo.job_state(job)
        return schedule_problems(self.scheduler, self.deployment.name_prefix, entry, bool(state and state.paused),
                                 self.context.deployed_schedules.of(entry))

    def schedule_anchors(self, entry: CatalogJob) -> tuple[datetime | None, ...]:
        """When each of the job's rate() schedules started (PlatformContext.schedule_anchors)."""
        return self.context.schedule_anchors(entry)

    def executions(self, job: str, limit: int = 20, cursor: str | None = None) -> Page[ExecutionRecord]:
        self.entry(job)
        return self._paged(lambda: self.repo.executions(job, limit, check_cursor(cursor, ("gsi1pk", "gsi1sk"))), cursor)

    def _paged(self, read: Callable[[], Page[ExecutionRecord]], cursor: str | None) -> Page[ExecutionRecord]:
        """A page read; a cursor of the right shape that the store still refuses (a key of
        another index) is the caller's mistake, not a server error."""
        try:
            return read()
        except self.ddb.exceptions.ClientError as e:
            if cursor is not None and e.response.get("Error", {}).get("Code") == "ValidationException":
                raise Invalid("cursor is not one this API returned", {"cursor": "invalid"}) from None
            raise

    def running_executions(self, job: str, known: JobSummary | None = None) -> list[ExecutionView]:
        """The job's running executions; ``known``: the job as just read (its state is not read again)."""
        state = known.state if known is not None and known.name == job else self.repo.job_state(job)
        views = []
        for name in sorted(state.running if state else ()):
            try:
                views.append(self.execution(name, job))
            except NotFound:
                continue
        return views

    def execution(self, name: str, job: str | None = None, read: ExecutionRecord | None = None) -> ExecutionView:
        """``read``: the execution's final record as the caller just read it, so it is not read
        again (`jobplane run` has just seen it appear)."""
        record = read if read is not None and read.execution == name else self.repo.execution(name)
        if record is not None:
            arn = record.execution_arn or self.deployment.execution_arn(record.job, name)
            # just ended: the reconciler has not added the history yet
            steps = self._history(arn) if record.transitions is None else None
            view = ExecutionView(name, record.job, arn, self._completed(record.job, record.given, record.started_at),
                                 record, None, steps)
            if not record.error and record.failed_step:  # the reconciler adds it a moment later
                from jobplane.platform.logs import error_excerpt

                return dataclasses.replace(view, log_error=error_excerpt(
                    self.logs.streams(view.timeline, record.failed_step, execution=name)))
            return view
        job = job or self._job_running(name)
        if job is None:
            raise NotFound(f"no execution named {name!r}", {"execution": name})
        arn = self.deployment.execution_arn(job, name)
        try:
            d = self.sfn.describe_execution(executionArn=arn)
        except self.sfn.exceptions.ExecutionDoesNotExist:
            raise NotFound(f"no execution named {name!r}", {"execution": name}) from None
        steps = self._history(arn)
        if steps is None:
            raise NotFound(f"no execution named {name!r}", {"execution": name})
        stop = d.get("stopDate")
        live = LiveExecution(d["status"], as_iso(d["startDate"]), as_iso(stop) if stop else None,
                             ": ".join(x for x in (d.get("error"), d.get("cause")) if x) or None,
                             sent=json_object(d.get("input")))
        return ExecutionView(name, job, arn, self._completed(job, live.sent, live.started_at), None, live, steps)

    def step_progress(self, job: str, name: str) -> list[StepProgress]:
        """Each step's progress and counts the run reported (platform/step_progress.py): one Query."""
        from jobplane.platform import step_progress

        return step_progress.read(self.ddb, self.repo.table, job, name)

    def resolved_params(self, job: str, name: str) -> JsonObject:
        """The calendar defaults the runner resolved at the run's scheduled fire (docs/dsl.md
        "Typed parameters"): platform/step_progress.py."""
        from jobplane.platform import step_progress

        return step_progress.resolved_params(self.ddb, self.repo.table, job, name)

    def subject(self, name: str, job: str | None = None) -> ExecutionSubject:
        """The execution's job and record, for an action to authorize its actor before it reads
        anything more (ExecutionSubject). NotFound if neither a record nor a running job names it."""
        record = self.repo.execution(name)
        if record is not None:
            return ExecutionSubject(name, record.job, record)
        job = job or self._job_running(name)
        if job is None:
            raise NotFound(f"no execution named {name!r}", {"execution": name})
        return ExecutionSubject(name, job, None)

    def record_view(self, subject: ExecutionSubject) -> ExecutionView | None:
        """The execution as its record tells it, without its history (an action's view: the
        status, input and failed step); None while it has no record."""
        record = subject.record
        if record is None:
            return None
        arn = record.execution_arn or self.deployment.execution_arn(record.job, subject.execution)
        return ExecutionView(subject.execution, record.job, arn,
                             self._completed(record.job, record.given, record.started_at), record, None)

    def _history(self, arn: str) -> ExecutionHistory | None:
        """The execution's step attempts and transitions; None if Step Functions does not know
        it (any more)."""
        from jobplane.platform.timeline import history, state_transitions, timeline

        try:
            events = history(self.sfn, arn)
        except self.sfn.exceptions.ExecutionDoesNotExist:
            return None
        return ExecutionHistory(tuple(timeline(events)), state_transitions(events))

    def _completed(self, job: str, given: JsonValue, started_at: str | None) -> ExecutionInput:
        """The input the run had: a console start's missing fields are the state machine's
        defaults (the job's params as the catalog declares them now)."""
        try:
            params = self.brief(job).params
        except NotFound:
            params = {}
        return ExecutionInput.read(given, started_at, params)

    def _job_running(self, name: str) -> str | None:
        for state in self.repo.job_states():
            if name in state.running:
                return state.job
        return None

    def log_streams(self, execution: str | ExecutionView, step: str | None = None) -> list[LogStream]:
        """The step logs of an execution's attempts (which task ran each is in its timeline);
        none yet for an execution that has not started its first step, or is not known yet."""
        if isinstance(execution, str):
            try:
                execution = self.execution(execution)
            except NotFound:
                return []
        # the execution's name finds a Lambda attempt that timed out before it could say its stream
        return self.logs.streams(execution.timeline, step, execution=execution.execution)

    def failures(self, limit: int = 50, cursor: str | None = None) -> Page[ExecutionRecord]:
        return self._paged(lambda: self.repo.recent_failures(limit, check_cursor(cursor, ("gsi2pk", "gsi2sk"))), cursor)

    def skips(self, limit: int = 50, cursor: str | None = None) -> Page[ExecutionRecord]:
        return self._paged(lambda: self.repo.recent_skips(limit, check_cursor(cursor, ("gsi2pk", "gsi2sk"))), cursor)

    def audit(self, limit: int = 100) -> list[AuditEntry]:
        return self.repo.audit_log(limit)

    # -- actions ----------------------------------------------------------------------------
    def step_names(self, job: str) -> list[str]:
        """Steps a run can start at: top-level steps and parallel groups' members."""
        return self.brief(job).step_names
