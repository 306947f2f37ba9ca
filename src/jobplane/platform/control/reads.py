"""Every operator read (jobs, executions, logs, failures, skips, audit): the control plane's read
service, over the platform context (its clients, store and catalog)."""

from __future__ import annotations

import dataclasses
import time
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
from jobplane.contract.types import Client, Item, JsonObject, JsonValue
from jobplane.platform.repository import BATCH_GET_MAX, Page
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


def _filed_idle(item: Item, status: str) -> bool:
    """The state item is filed under ``status`` in the status index with no run holding its
    claim: what Repository.jobs_filed_idle lists and Repository.count_filed_idle counts."""
    return (item.get(dm.ATTR_STATUS_PK, {}).get("S") == dm.status_partition(status)
            and not item.get(dm.ATTR_RUNNING, {}).get("SS"))


@dataclasses.dataclass(frozen=True)
class _Walked:
    """A page of a status filter made without the filed names (Reads._status_window): how many
    match, where the page starts, its jobs and their states."""

    total: int
    offset: int
    window: list[CatalogJob]
    states: dict[str, JobState]


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
        # (the catalog they were read for, when, the set): Reads._outside_catalog, _never_run_candidates
        self._outside: tuple[dict[str, CatalogJob], float, frozenset[str]] | None = None
        self._candidates: tuple[dict[str, CatalogJob], float, frozenset[str]] | None = None
        # status -> how many jobs were filed under it, idle, when last read or counted: which way
        # the next page of its filter is made first (Reads._status_window), never what it lists
        self._filed_seen: dict[str, int] = {}

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
        walked: _Walked | None = None
        if not every_state and status:
            assert limit is not None
            walked = self._status_window(status, entries, whole=not team and not needle, offset=offset,
                                         limit=limit, attributes=state_attributes,
                                         last_page_if_beyond=last_page_if_beyond)
            if walked is None:  # the jobs that match; the window's own states are read after, as without a filter
                matching = self._jobs_for_status(status)
                entries = [e for e in entries if e.name in matching]
        if walked is not None:
            total, offset, window, states = walked.total, walked.offset, walked.window, walked.states
        else:
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

    def _status_window(self, status: str, entries: list[CatalogJob], *, whole: bool, offset: int, limit: int,
                       attributes: tuple[str, ...], last_page_if_beyond: bool) -> _Walked | None:
        """A page of the jobs a status filter matches, without reading every job filed under it
        (issue 66 item 3: at 5,000 jobs, SUCCEEDED's ~4,400 filed names, parsed by botocore and
        answered item by item by the local store, were ~200 ms of its page; NEVER_RUN read the
        names of every filed job, ~4,900). None: the page is made as before, from every name
        filed under the status (:meth:`_jobs_for_status`), which is cheaper when few are filed.

        * NEVER_RUN: :meth:`_never_run_window`, from the jobs that may still never have run.
        * A status a run ends with, when the filter is the status alone (``whole``: every job of
          the catalog, in the page's order) and more than :attr:`NAMES_MAX` jobs are filed under
          it: how many match is counted by DynamoDB (Repository.count_filed_idle: the filed
          jobs no run holds the claim of, as Repository.jobs_filed_idle lists them), less those
          of jobs no longer in the catalog (:meth:`_outside_catalog`); the page's own jobs are
          found by reading the catalog's states in the page's order, 100 a BatchGetItem, and
          keeping those filed under the status with no run holding the claim (the same test
          as jobs_filed_idle, on the same items), until the page is full: about
          ``(offset + limit) / share`` states, the share being the filed jobs' part of the
          catalog. So a page of a status most jobs have reads a page's worth of states and one
          count, whatever the number of jobs; a page deep in it or of a status few jobs have
          (more than :attr:`WALK_MAX` states to read) is made from the names. The states read
          are the page's: no other read follows (the first page of SUCCEEDED: 2 BatchGetItem
          and one count, ~130 states, instead of ~4,400 names and the page's BatchGetItem).
          Which way is tried first follows how many were filed under the status when last read
          or counted (a status few jobs have is read as names at once, not counted first); both
          list the same jobs."""
        if status == NEVER_RUN:
            return self._never_run_window(entries, offset, limit, attributes, last_page_if_beyond)
        if not whole or status not in _ENDED:
            return None
        seen = self._filed_seen.get(status)
        if seen is not None and (seen <= self.NAMES_MAX // 2
                                 or min(offset + limit, seen) * len(entries) > self.WALK_MAX * max(seen, 1)):
            return None  # as it was last time, the names are cheaper (few filed, or a deep page): no count first
        filed = self.repo.count_filed_idle(status)
        self._filed_seen[status] = filed
        if filed <= self.NAMES_MAX:
            return None
        outside = self._outside_catalog()
        if outside is None:
            return None
        total = filed
        if outside:
            items = self.repo.job_items_of(sorted(outside), (dm.ATTR_RUNNING, dm.ATTR_STATUS_PK))
            total -= sum(1 for i in items.values() if _filed_idle(i, status))
        total = max(total, 0)
        if last_page_if_beyond and total and offset >= total:
            offset = (total - 1) // limit * limit
        end = offset + limit
        if min(end, total) * len(entries) > self.WALK_MAX * filed:
            return None  # deep in the list, or a status few jobs have: the names are cheaper
        wanted = tuple(dict.fromkeys((*attributes, *STATUS_ATTRIBUTES, dm.ATTR_STATUS_PK)))
        window: list[CatalogJob] = []
        states: dict[str, JobState] = {}
        matched = start = 0
        while start < len(entries):
            if matched >= end:
                break
            # as many as should hold the matches still wanted, by the filed jobs' share (and a
            # few more), up to a BatchGetItem: the first page of SUCCEEDED reads ~115, not 200
            size = min(BATCH_GET_MAX, max(8, -(-(end - matched) * len(entries) * 11 // (10 * filed))))
            chunk, start = entries[start:start + size], start + size
            items = self.repo.job_items_of([e.name for e in chunk], wanted)
            for entry in chunk:
                item = items.get(entry.name)
                if item is None or not _filed_idle(item, status):
                    continue
                if offset <= matched < end:
                    window.append(entry)
                    states[entry.name] = JobState.from_item(item)
                matched += 1
        else:  # every job of the catalog was read: the count is the one made here
            total = matched
        return _Walked(total, offset, window, states)

    def _never_run_window(self, entries: list[CatalogJob], offset: int, limit: int, attributes: tuple[str, ...],
                          last_page_if_beyond: bool) -> _Walked | None:
        """A page of the jobs no run ever claimed (or whose only claim a dead run left), each
        decided by :func:`_status_matches` from its state, read with the page's attributes: of
        :meth:`_never_run_candidates`, the catalog's jobs that had no last status when last
        looked at, in the page's order. None (the page made from every filed name) when more
        than :attr:`CANDIDATES_MAX` are left (a new deployment, no job run yet)."""
        candidates = self._never_run_candidates()
        chosen = [e for e in entries if e.name in candidates]
        if len(chosen) > self.CANDIDATES_MAX:
            return None
        wanted = tuple(dict.fromkeys((*attributes, *STATUS_ATTRIBUTES)))
        items = self.repo.job_items_of([e.name for e in chosen], wanted)
        matching: list[CatalogJob] = []
        states: dict[str, JobState] = {}
        ended: set[str] = set()
        for entry in chosen:
            item = items.get(entry.name)
            state = JobState.from_item(item) if item is not None else None
            if state is not None and state.last_status and state.last_status != NEVER_RUN:
                ended.add(entry.name)  # it ran: never NEVER_RUN again (a last status is never removed)
            if _status_matches(state, NEVER_RUN):
                matching.append(entry)
                if state is not None:
                    states[entry.name] = state
        if ended:
            self._drop_never_run_candidates(ended)
        total = len(matching)
        if last_page_if_beyond and total and offset >= total:
            offset = (total - 1) // limit * limit
        window = matching[offset:offset + limit]
        return _Walked(total, offset, window, {e.name: states[e.name] for e in window if e.name in states})

    #: A status a run ends with is counted and its page read in the page's order (:meth:`_status_window`)
    #: only when more jobs than this are filed under it: fewer names are cheaper to read whole.
    NAMES_MAX = 1000
    #: The most states a page of a status filter reads in the page's order (:meth:`_status_window`);
    #: past it (deep pages, a status few jobs have) the filed names are read.
    WALK_MAX = 400
    #: The most never-run candidates the NEVER_RUN filter decides by their states (:meth:`_never_run_window`).
    CANDIDATES_MAX = 1000
    #: The most jobs outside the catalog with a state (:meth:`_outside_catalog`) a count is corrected by.
    OUTSIDE_MAX = 1000
    #: How long the sets kept per catalog (:meth:`_outside_catalog`, :meth:`_never_run_candidates`)
    #: are used before they are read again, in seconds: see each for why they may be kept at all.
    KEPT_SECONDS = 300.0

    def _outside_catalog(self) -> frozenset[str] | None:
        """The jobs that have a state and are not in the catalog (a job's state stays when the
        job is removed), which an index count of a status includes and the page does not: read
        as every state's name once per catalog and :attr:`KEPT_SECONDS`. A job gains a state
        only when a run of it claims or ends, and a job removed from the catalog no longer runs
        once its state machine is gone, so the set read stays true but for a removed job's first
        run still going when it was removed (a count one too many until it is read again). None
        (the page made from the filed names) when more than :attr:`OUTSIDE_MAX` are outside."""
        now = time.monotonic()
        kept = self._outside
        if kept is None or kept[0] is not self.entries or now - kept[1] > self.KEPT_SECONDS:
            entries = self.entries
            outside = frozenset(j for j in self.repo.job_names() if j not in entries)
            kept = self._outside = (entries, now, outside)
        return kept[2] if len(kept[2]) <= self.OUTSIDE_MAX else None

    def _never_run_candidates(self) -> frozenset[str]:
        """The catalog's jobs that may never have run: those filed under no status a run ends
        with (nor PAUSED, a hand-made last status), read as names once per catalog and
        :attr:`KEPT_SECONDS`, and those the NEVER_RUN filter found ended dropped since. A job
        filed under one has a last status, which no writer removes and which makes it not
        NEVER_RUN for good, so the set only ever holds too many, never too few: each is
        decided by its state. (Kept only :attr:`KEPT_SECONDS` all the same: a state deleted by
        hand, or a table restored under a running portal, would make a job never run again.)"""
        now = time.monotonic()
        kept = self._candidates
        if kept is None or kept[0] is not self.entries or now - kept[1] > self.KEPT_SECONDS:
            entries = self.entries
            claimed: set[str] = set()
            for ended in sorted(_FILED_ENDED):
                claimed.update(self.repo.jobs_filed(ended))
            kept = self._candidates = (entries, now, frozenset(e for e in entries if e not in claimed))
        return kept[2]

    def _drop_never_run_candidates(self, ended: set[str]) -> None:
        kept = self._candidates
        if kept is not None:
            self._candidates = (kept[0], kept[1], kept[2] - ended)

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
            names = self.repo.jobs_filed_idle(status)
            self._filed_seen[status] = len(names)
            return set(names)
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
