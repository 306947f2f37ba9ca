"""The operator's control plane: every read and action the portal, the CLI and tests perform on
a deployed platform, in one place, over boto3 clients (real AWS or the embedded local AWS: only
the endpoint differs).

Actions check what they act on and fail with a typed error (:class:`NotFound`,
:class:`Conflict`, :class:`Invalid`) that the portal maps to 404/409/400 and the CLI prints;
each successful action writes an audit entry naming who, what, which job or execution and why.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jobplane.contract import execution_input, names
from jobplane.contract import runner as rc
from jobplane.contract.catalog import Catalog, CatalogJob
from jobplane.contract.quoting import quoted
from jobplane.contract.schedule import next_fire_times, parse
from jobplane.contract.statuses import ExecutionStatus
from jobplane.platform.anchors import ScheduleAnchors
from jobplane.platform.clock import as_iso, now_iso
from jobplane.platform.logs import LogStream, StepLogs, error_excerpt
from jobplane.platform.repository import Execution, JobState, Page, Repository
from jobplane.platform.timeline import history, state_transitions, timeline

log = logging.getLogger(__name__)


#: Bounds on what an operator sends, checked before anything changes.
MAX_REASON = 500
MAX_PARAMS_BYTES = 4096


class ControlError(Exception):
    code = "error"

    def __init__(self, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}


class NotFound(ControlError):
    code = "not_found"


class Conflict(ControlError):
    code = "conflict"


class Invalid(ControlError):
    code = "validation_error"


@dataclass(frozen=True)
class Deployment:
    """Where a platform's resources are (the base module's outputs)."""

    table: str
    topic_arn: str
    name_prefix: str = "jobplane"
    region: str = "us-east-1"
    account_id: str = "123456789012"
    endpoint_url: str | None = None  # the embedded local AWS; None for real AWS
    catalog_path: Path | str | None = None  # the compiler's output dir or a catalog file, or s3://bucket/catalog/ on AWS
    log_group: str | None = None  # the step logs' CloudWatch Logs group (default: names.runner_log_group)
    # The embedded local AWS's per-start key (dev.json); None: boto3's standard credential chain.
    access_key_id: str | None = None
    secret_access_key: str | None = None

    def client(self, service: str) -> Any:
        import boto3

        kwargs: dict[str, Any] = {"region_name": self.region}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        if self.access_key_id and self.secret_access_key:
            kwargs |= {"aws_access_key_id": self.access_key_id, "aws_secret_access_key": self.secret_access_key}
        return boto3.client(service, **kwargs)

    @property
    def runner_log_group(self) -> str:
        return self.log_group or names.runner_log_group(self.name_prefix)

    def state_machine_arn(self, job: str) -> str:
        return (f"arn:aws:states:{self.region}:{self.account_id}:stateMachine:"
                f"{names.state_machine_name(self.name_prefix, job)}")

    def execution_arn(self, job: str, execution: str) -> str:
        return (f"arn:aws:states:{self.region}:{self.account_id}:execution:"
                f"{names.state_machine_name(self.name_prefix, job)}:{execution}")

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "topic_arn": self.topic_arn, "name_prefix": self.name_prefix,
                "region": self.region, "account_id": self.account_id, "endpoint_url": self.endpoint_url,
                "catalog_path": str(self.catalog_path) if self.catalog_path else None,
                "log_group": self.log_group,
                "access_key_id": self.access_key_id, "secret_access_key": self.secret_access_key}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Deployment:
        data = dict(data)
        data.pop("log_dir", None)  # written by earlier versions (logs were local files)
        where = data.get("catalog_path")
        data["catalog_path"] = (where if str(where).startswith("s3://") else Path(where)) if where else None
        return cls(**data)


#: An Idempotency-Key: what a client may send (IETF draft "The Idempotency-Key HTTP Header Field").
IDEMPOTENCY_KEY_MAX = 255


def idempotent_name(job: str, actor: str, key: str) -> str:
    """The execution name of a request with an idempotency key: the same job, person and key give
    the same name (Step Functions starts a name only once), another person's key never does."""
    if not key or len(key) > IDEMPOTENCY_KEY_MAX or not key.isprintable():
        raise Invalid(f"an Idempotency-Key is 1 to {IDEMPOTENCY_KEY_MAX} printable characters",
                      {"idempotency_key": "invalid"})
    return hashlib.sha256(f"{job}\n{actor}\n{key}".encode()).hexdigest()[:32]


def load_catalog(deployment: Deployment) -> Catalog:
    """The compiler's catalog: a compiler output directory or one file (jobplane dev, a
    checkout), or on AWS the objects the team roots upload to the base module's bucket: every
    ``catalog/<team>.json`` under the base module's output catalog_uri (``s3://<bucket>/catalog/``),
    merged. A location that names one object (``.json``) is read alone."""
    location = str(deployment.catalog_path or "")
    if not location:
        raise ValueError("a catalog or deployment.catalog_path is needed")
    if location.startswith("s3://"):
        bucket, _, key = location[len("s3://"):].partition("/")
        s3 = deployment.client("s3")
        if key.endswith(".json"):
            return Catalog.model_validate_json(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key)
                for o in page.get("Contents", []) if o["Key"].endswith(".json")]
        if not keys:
            raise ValueError(f"no catalog under {location}: apply the team roots (docs/deploy.md)")
        return Catalog.merge([Catalog.model_validate_json(s3.get_object(Bucket=bucket, Key=k)["Body"].read())
                              for k in sorted(keys)])
    return Catalog.load(Path(location))


@dataclass(frozen=True)
class JobSummary:
    entry: CatalogJob
    state: JobState | None
    next_fires: list[datetime] = field(default_factory=list)
    recent_failures: int = 0  # among the newest RECENT_FAILURES failures across jobs

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def team(self) -> str:
        return self.entry.team

    @property
    def running(self) -> list[str]:
        return sorted(self.state.running) if self.state else []

    @property
    def paused(self) -> bool:
        return bool(self.state and self.state.paused)


#: How the jobs page may sort, and how far back "recent failures" looks.
JOB_SORTS = ("failures", "duration")
RECENT_FAILURES = 200


@dataclass(frozen=True)
class ExecutionView:
    """One execution as an operator sees it: its final record, or while it runs, what Step
    Functions reports so far."""

    execution: str
    job: str
    status: str
    input: dict[str, Any]
    record: Execution | None
    timeline: list[dict[str, Any]]
    transitions: int | None
    started_at: str | None
    finished_at: str | None
    execution_arn: str
    live_error: str | None = None  # what Step Functions says, until the final record exists

    @property
    def trigger(self) -> str | None:
        return self.input.get("trigger")

    @property
    def requested_by(self) -> str | None:
        return self.input.get("requested_by")

    @property
    def rerun_of(self) -> str | None:
        return self.input.get("rerun_of")

    @property
    def resume_from(self) -> str | None:
        return self.input.get("resume_from")

    @property
    def rerun_by(self) -> tuple[str, ...]:
        return self.record.rerun_by if self.record else ()

    @property
    def upstream(self) -> str | None:
        value = self.input.get("upstream")
        return value if isinstance(value, str) else None

    @property
    def after_runs(self) -> tuple[str, ...]:
        return self.record.after_runs if self.record else ()

    @property
    def failed_step(self) -> str | None:
        return self.record.failed_step if self.record else None

    @property
    def error(self) -> str | None:
        return (self.record.error if self.record else None) or self.live_error

    @property
    def running(self) -> bool:
        return self.status == ExecutionStatus.RUNNING.value


def next_fires(entry: CatalogJob, count: int = 3, after: datetime | None = None,
               anchors: tuple[datetime | None, ...] = ()) -> list[datetime]:
    """The job's next fire times over all its schedules, in its timezone (none when disabled).

    ``anchors``: per schedule, when a rate() schedule started (its StartDate, else its
    CreationDate): EventBridge Scheduler counts a rate from there, not from now."""
    if not entry.scheduled:
        return []
    if after is None:  # for display: the same minute gives the same answer, so cache by minute...
        now = datetime.now(timezone.utc)
        minute = now.replace(second=0, microsecond=0)
        fires = _next_fires(tuple(entry.schedule), entry.timezone, count + 1, minute, tuple(anchors))
        return [t for t in fires if t > now][:count]  # ...and drop a rate() fire earlier in this minute
    return list(_next_fires(tuple(entry.schedule), entry.timezone, count, after, tuple(anchors)))


@lru_cache(maxsize=8192)
def _next_fires(schedule: tuple[str, ...], zone: str, count: int, after: datetime,
                anchors: tuple[datetime | None, ...] = ()) -> tuple[datetime, ...]:
    times = [t for i, expression in enumerate(schedule)
             for t in next_fire_times(parse(expression), zone, after, count, anchors[i] if i < len(anchors) else None)]
    return tuple(sorted(times)[:count])


class ControlPlane:
    def __init__(self, deployment: Deployment, catalog: Catalog | None = None):
        self.deployment = deployment
        self.ddb = deployment.client("dynamodb")
        self.sfn = deployment.client("stepfunctions")
        self.scheduler = deployment.client("scheduler")
        self.repo = Repository(self.ddb, deployment.table)
        if catalog is None:
            catalog = load_catalog(deployment)
        self.catalog = catalog
        self.entries = {j.name: j for j in catalog.jobs}
        self.logs = StepLogs(deployment.client("logs"), deployment.runner_log_group)
        self.anchors = ScheduleAnchors(self.scheduler, deployment.name_prefix)

    # -- reads ------------------------------------------------------------------------------
    def entry(self, job: str) -> CatalogJob:
        try:
            return self.entries[job]
        except KeyError:
            raise NotFound(f"no job named {job!r}", {"job": job}) from None

    def jobs(self, team: str | None = None, status: str | None = None, text: str | None = None,
             fires: int = 3, sort: str | None = None, state_attributes: tuple[str, ...] = JobState.ATTRIBUTES,
             ) -> list[JobSummary]:
        """The jobs, by team and name; ``sort``: "failures" (most failures among the newest
        RECENT_FAILURES across jobs first) or "duration" (the longest last run first).
        ``state_attributes``: what of each job's state to read (Repository.job_states); the
        filters and sorts need ``job``, ``running``, ``last_status``, the last run's times and
        ``paused_at``."""
        if sort not in (None, *JOB_SORTS):
            raise Invalid(f"sort must be one of {', '.join(JOB_SORTS)}", {"sort": "unknown"})
        states = {s.job: s for s in self.repo.job_states(state_attributes)}
        failures: dict[str, int] = {}
        if sort == "failures":  # one read of the failures feed, not one per job
            for x in self.repo.recent_failures(RECENT_FAILURES).items:
                failures[x.job] = failures.get(x.job, 0) + 1
        out = []
        needle = (text or "").lower()
        for entry in sorted(self.entries.values(), key=lambda e: (e.team, e.name)):
            state = states.get(entry.name)
            if team and entry.team != team:
                continue
            last = ExecutionStatus.RUNNING.value if state and state.running else (state.last_status if state else None) or "NEVER_RUN"
            if status and status != last and not (status == "PAUSED" and state and state.paused):
                continue
            if needle and needle not in entry.name.lower() and needle not in entry.description.lower():
                continue
            out.append(JobSummary(entry, state, next_fires(entry, fires, anchors=self.schedule_anchors(entry)) if fires else [],
                                  failures.get(entry.name, 0)))
        if sort == "failures":
            out.sort(key=lambda j: -j.recent_failures)  # stable: team and name order among equals
        elif sort == "duration":
            out.sort(key=lambda j: -(j.state.last_duration or 0.0) if j.state else 0.0)
        return out

    def job(self, job: str) -> JobSummary:
        entry = self.entry(job)
        return JobSummary(entry, self.repo.job_state(job), next_fires(entry, 5, anchors=self.schedule_anchors(entry)))

    def schedule_problems(self, job: str) -> dict[str, str]:
        """What is wrong with the job's deployed schedules (platform/schedule_health.py): none
        when they are deployed as compiled."""
        from jobplane.platform.schedule_health import schedule_problems

        entry = self.entry(job)
        state = self.repo.job_state(job)
        return schedule_problems(self.scheduler, self.deployment.name_prefix, entry, bool(state and state.paused))

    def schedule_anchors(self, entry: CatalogJob) -> tuple[datetime | None, ...]:
        """When each of the job's rate() schedules started (platform/anchors.py); cron() and
        at() schedules need none."""
        anchors: list[datetime | None] = []
        for i, expression in enumerate(entry.schedule):
            rate = expression.startswith("rate(")
            anchors.append(self.anchors.get(names.schedule_name(self.deployment.name_prefix, entry.name, i))
                           if rate else None)
        return tuple(anchors)

    def executions(self, job: str, limit: int = 20, cursor: str | None = None) -> Page:
        self.entry(job)
        return self._paged(lambda: self.repo.executions(job, limit, check_cursor(cursor, ("gsi1pk", "gsi1sk"))), cursor)

    def _paged(self, read: Any, cursor: str | None) -> Page:
        """A page read; a cursor of the right shape that the store still refuses (a key of
        another index) is the caller's mistake, not a server error."""
        try:
            page: Page = read()
            return page
        except self.ddb.exceptions.ClientError as e:
            if cursor is not None and e.response.get("Error", {}).get("Code") == "ValidationException":
                raise Invalid("cursor is not one this API returned", {"cursor": "invalid"}) from None
            raise

    def running_executions(self, job: str) -> list[ExecutionView]:
        state = self.repo.job_state(job)
        views = []
        for name in sorted(state.running if state else ()):
            try:
                views.append(self.execution(name, job))
            except NotFound:
                continue
        return views

    def execution(self, name: str, job: str | None = None) -> ExecutionView:
        record = self.repo.execution(name)
        if record is not None:
            arn = record.execution_arn or self.deployment.execution_arn(record.job, name)
            steps, transitions = record.timeline, record.transitions
            if transitions is None:  # just ended: the reconciler has not added the history yet
                try:
                    events = history(self.sfn, arn)
                    steps, transitions = timeline(events), state_transitions(events)
                except self.sfn.exceptions.ExecutionDoesNotExist:
                    pass
            live_error = None
            if not record.error and record.failed_step:  # the reconciler adds it a moment later
                live_error = error_excerpt(self.logs.streams(steps, record.failed_step))
            given = self._completed(record.job, record.input, record.started_at)
            return ExecutionView(record.execution, record.job, record.status, given, record, steps,
                                 transitions, record.started_at, record.finished_at, arn, live_error)
        job = job or self._job_running(name)
        if job is None:
            raise NotFound(f"no execution named {name!r}", {"execution": name})
        arn = self.deployment.execution_arn(job, name)
        try:
            d = self.sfn.describe_execution(executionArn=arn)
        except self.sfn.exceptions.ExecutionDoesNotExist:
            raise NotFound(f"no execution named {name!r}", {"execution": name}) from None
        events = history(self.sfn, arn)
        stop = d.get("stopDate")
        live_error = ": ".join(x for x in (d.get("error"), d.get("cause")) if x) or None
        started = as_iso(d["startDate"])
        given = self._completed(job, json.loads(d.get("input") or "{}"), started)
        return ExecutionView(name, job, d["status"], given, None, timeline(events),
                             state_transitions(events), started, as_iso(stop) if stop else None, arn, live_error)

    def _completed(self, job: str, given: dict[str, Any], started_at: str | None) -> dict[str, Any]:
        """The input the run had: a console start's missing fields are the state machine's
        defaults (the job's params as the catalog declares them now)."""
        entry = self.entries.get(job)
        return execution_input.complete(given, started_at, entry.params if entry else {})

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
        return self.logs.streams(execution.timeline, step)

    def failures(self, limit: int = 50, cursor: str | None = None) -> Page:
        return self._paged(lambda: self.repo.recent_failures(limit, check_cursor(cursor, ("gsi2pk", "gsi2sk"))), cursor)

    def skips(self, limit: int = 50, cursor: str | None = None) -> Page:
        return self._paged(lambda: self.repo.recent_skips(limit, check_cursor(cursor, ("gsi2pk", "gsi2sk"))), cursor)

    def audit(self, limit: int = 100) -> list[dict[str, Any]]:
        return self.repo.audit_log(limit)

    # -- actions ----------------------------------------------------------------------------
    def step_names(self, job: str) -> list[str]:
        """Steps a run can start at: top-level steps and parallel groups' members."""
        return self.entry(job).step_names

    def run_now(self, job: str, actor: str, params: dict[str, Any] | None = None, reason: str = "",
                from_step: str | None = None, name: str | None = None, idempotency_key: str | None = None) -> str:
        """Start a run now; its execution name. With ``idempotency_key``, the same request again
        (a double click, a retried call) answers with the run it started, not a second one."""
        entry = self.entry(job)
        check_reason(reason, required=False)
        if from_step is not None and from_step not in self.step_names(job):
            raise Invalid(f"{job} has no step {quoted(from_step)}; steps: {', '.join(self.step_names(job))}",
                          {"from_step": "unknown step"})
        params = self.checked_params(entry, params)
        payload = execution_input.manual(actor, entry.params, params) | {"resume_from": from_step}
        name = name or (idempotent_name(job, actor, idempotency_key) if idempotency_key is not None else uuid.uuid4().hex)
        return self._start_once(job, payload, name, idempotency_key is not None, lambda: self.audited(
            actor, "run", job, name, reason, {"params": params} | ({"from_step": from_step} if from_step else {}),
            lambda: self.start_execution(job, payload, name)))

    def rerun(self, execution: str, actor: str, from_failed_step: bool = True,
              params: dict[str, Any] | None = None, reason: str = "", name: str | None = None,
              idempotency_key: str | None = None, loaded: ExecutionView | None = None) -> str:
        """``loaded``: the execution as the caller just read it (to authorize the actor), so it
        is not read again (a GetItem, and possibly its history and logs)."""
        check_reason(reason, required=False)
        original = loaded if loaded is not None and loaded.execution == execution else self.execution(execution)
        if original.running:
            raise Conflict(f"{execution} is still running; stop it first", {"execution": execution})
        if original.status == ExecutionStatus.MISSED.value:  # no run to repeat: run the fire itself, once
            fire = original.input.get("scheduled_time")
            raise Conflict(f"{execution} is a missed fire, not a run: run it as that fire with a backfill "
                           f"(jobplane backfill {original.job} --from {fire} --to {fire})",
                           {"execution": execution, "status": original.status})
        entry = self.entry(original.job)
        overrides = self.checked_params(entry, params)
        resume_from = None
        if from_failed_step:
            resume_from = original.failed_step
            if original.status in (ExecutionStatus.SUCCEEDED.value, ExecutionStatus.SKIPPED.value) or not resume_from:
                raise Conflict(f"{execution} has no failed step to resume from ({original.status}); re-run the whole job",
                               {"execution": execution, "status": original.status})
            if resume_from not in self.step_names(original.job):
                raise Conflict(f"step {resume_from!r} is no longer in {original.job}; re-run the whole job",
                               {"execution": execution, "step": resume_from})
        declared = entry.params
        # The original run's values for params the job still declares, then the operator's changes.
        kept = {k: v for k, v in (original.input.get("params") or {}).items() if k in declared}
        merged = {**declared, **kept, **overrides}
        payload = execution_input.rerun(actor, execution, merged, resume_from)
        name = name or (idempotent_name(original.job, actor, idempotency_key) if idempotency_key is not None
                        else uuid.uuid4().hex)
        self._start_once(original.job, payload, name, idempotency_key is not None, lambda: self.audited(
            actor, "rerun_from_failed_step" if from_failed_step else "rerun", original.job, name, reason,
            {"rerun_of": execution, "resume_from": resume_from, "params": overrides},
            lambda: self.start_execution(original.job, payload, name)))
        self.repo.link_rerun(execution, name)  # lineage: best effort, the audit entry names the original too
        return name

    def _start_once(self, job: str, payload: dict[str, Any], name: str, idempotent: bool, start: Any) -> str:
        """``start()`` (the audited start of execution ``name``), unless an idempotent request
        already started it: then the same answer, and no second run or audit entry. Step
        Functions starts a name once (two racing requests: one wins, the other finds its run)."""
        if idempotent and self._started_as(job, name, payload):
            return name
        try:
            start()
        except self.sfn.exceptions.ExecutionAlreadyExists:
            if idempotent and self._started_as(job, name, payload):
                return name  # the same request won the race; its audit entry is the one kept
            raise Conflict(f"an execution named {name} exists already", {"execution": name}) from None
        return name

    def _started_as(self, job: str, name: str, payload: dict[str, Any]) -> bool:
        """True if ``name`` was started by the same request; Conflict if by another one."""
        try:
            d = self.sfn.describe_execution(executionArn=self.deployment.execution_arn(job, name))
        except self.sfn.exceptions.ExecutionDoesNotExist:
            return False
        given = json.loads(d.get("input") or "{}")
        if any(given.get(k) != payload.get(k) for k in ("trigger", "requested_by", "params", "resume_from", "rerun_of")):
            raise Conflict("this Idempotency-Key was used for another request; send a new key for a new run",
                           {"execution": name, "idempotency_key": "reused"})
        return True

    def checked_params(self, entry: CatalogJob, params: dict[str, Any] | None) -> dict[str, Any]:
        """A run's params: only those the job declares (they never reach a step's fixed
        arguments, see runner/targets.py), within the size an ECS override can carry."""
        params = dict(params or {})
        declared = entry.params
        unknown = sorted(set(params) - set(declared))
        if unknown:
            shown = [quoted(k, 40) for k in unknown[:10]]
            raise Invalid(f"{entry.name} has no param{'s' if len(unknown) > 1 else ''} {', '.join(shown)}"
                          + (f"; it takes {', '.join(sorted(declared))}" if declared else "; it takes none"),
                          {"job": entry.name, "unknown_params": [k[:40] for k in unknown[:10]],
                           "params": sorted(declared)})
        if any(rc.nesting(v) > rc.MAX_PARAMS_DEPTH for v in params.values()):  # each value, as in a definition
            raise Invalid(f"params nest more than {rc.MAX_PARAMS_DEPTH} lists or objects deep",
                          {"params": "too deep"})
        size = len(json.dumps(params, separators=(",", ":")))
        if size > MAX_PARAMS_BYTES:
            raise Invalid(f"params are {size} bytes as JSON; at most {MAX_PARAMS_BYTES} (ECS passes them in "
                          "the task's overrides, 8,192 characters in all)", {"params": "too large"})
        merged = {**entry.params, **params}
        if entry.params_budget is not None and rc.params_in_override(merged) > entry.params_budget:
            raise Invalid(f"params would take {rc.params_in_override(merged)} characters of {entry.name}'s ECS "
                          f"overrides; its steps leave {entry.params_budget}", {"params": "too large"})
        return params

    def audited(self, actor: str, action: str, job: str, execution: str | None, reason: str,
                details: dict[str, Any] | None, act: Any, undo: Any = None) -> Any:
        """An action and its audit entry, all or nothing: the entry is written first (a failed
        write changes nothing), then the action; if the action fails, the entry is removed (and
        ``undo``, a list of callables, reverses what the action had done) before the error
        propagates."""
        entry = self.repo.add_audit(actor, action, job, execution, reason, details)
        try:
            return act()
        except BaseException:
            for step in undo or ():  # each part on its own: one that fails must not stop the others
                try:
                    step()
                except Exception:
                    log.exception("could not undo part of a failed %s of %s", action, job)
            self.repo.delete_audit(entry)
            raise

    def start_execution(self, job: str, payload: dict[str, Any], name: str) -> str:
        try:
            self.sfn.start_execution(stateMachineArn=self.deployment.state_machine_arn(job), name=name,
                                     input=json.dumps(payload))
        except self.sfn.exceptions.StateMachineDoesNotExist:
            raise Conflict(f"{job} is not deployed", {"job": job}) from None
        return name

    def stop(self, execution: str, actor: str, reason: str, loaded: ExecutionView | None = None) -> None:
        check_reason(reason)
        view = loaded if loaded is not None and loaded.execution == execution else self.execution(execution)
        if not view.running:
            raise Conflict(f"{execution} is not running ({view.status})", {"execution": execution, "status": view.status})
        self.audited(actor, "stop", view.job, execution, reason, None, lambda: self.sfn.stop_execution(
            executionArn=view.execution_arn, error="Stopped", cause=f"stopped by {actor}: {reason}"))

    def pause(self, job: str, actor: str, reason: str) -> None:
        check_reason(reason)
        entry = self.entry(job)
        state = self.repo.job_state(job)
        if state and state.paused:
            raise Conflict(f"{job} is already paused (by {state.paused_by}: {state.paused_reason})", {"job": job})
        if not entry.schedule:
            raise Conflict(f"{job} has no schedule to pause (it runs only when started)", {"job": job})

        def act() -> None:  # the flag first (what the portal shows), then the schedules
            self.repo.set_paused(job, entry.team, actor, reason, now_iso())
            self._set_schedule_state(entry, "DISABLED")

        undo = [lambda: self.repo.clear_paused(job),
                lambda: self._set_schedule_state(entry, "ENABLED" if entry.enabled else "DISABLED")]
        self.audited(actor, "pause", job, None, reason, None, act, undo)

    def resume(self, job: str, actor: str, reason: str) -> None:
        check_reason(reason)
        entry = self.entry(job)
        state = self.repo.job_state(job)
        if not (state and state.paused):
            raise Conflict(f"{job} is not paused", {"job": job})

        def act() -> None:
            if not self.repo.clear_paused(job):
                raise Conflict(f"{job} is not paused", {"job": job})
            self._set_schedule_state(entry, "ENABLED" if entry.enabled else "DISABLED")

        undo = [lambda: self.repo.set_paused(job, entry.team, state.paused_by or actor, state.paused_reason or "",
                                             state.paused_at or now_iso()),
                lambda: self._set_schedule_state(entry, "DISABLED")]
        self.audited(actor, "resume", job, None, reason, None, act, undo)

    def apply_pauses(self) -> list[str]:
        """Re-disable the schedules of paused jobs (after a deploy re-created them)."""
        paused = [s.job for s in self.repo.job_states() if s.paused and s.job in self.entries]
        for job in paused:
            self._set_schedule_state(self.entries[job], "DISABLED")
        return paused

    def _set_schedule_state(self, entry: CatalogJob, state: str) -> None:
        group = self.deployment.name_prefix
        for i in range(len(entry.schedule)):
            name = names.schedule_name(self.deployment.name_prefix, entry.name, i)
            try:
                current = self.scheduler.get_schedule(Name=name, GroupName=group)
            except self.scheduler.exceptions.ResourceNotFoundException:
                raise Conflict(f"{entry.name}'s schedule {name} is not deployed; deploy the job first",
                               {"job": entry.name, "schedule": name}) from None
            spec = {k: current[k] for k in ("ScheduleExpression", "FlexibleTimeWindow", "Target") if k in current}
            # UpdateSchedule replaces the whole schedule: a field left out is reset to its default
            # (a customer managed KMS key to the AWS owned one), so every one it has is passed back
            # (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_UpdateSchedule.html)
            for k in ("ScheduleExpressionTimezone", "StartDate", "EndDate", "Description", "KmsKeyArn",
                      "ActionAfterCompletion"):
                if current.get(k):
                    spec[k] = current[k]
            self.scheduler.update_schedule(Name=name, GroupName=group, State=state, **spec)

    def acknowledge(self, job: str, actor: str, reason: str) -> None:
        check_reason(reason)
        self.entry(job)
        state = self.repo.job_state(job)
        if state is None or not state.blocked:
            raise Conflict(f"{job} has no unacknowledged failure", {"job": job})

        def act() -> None:
            if not self.repo.acknowledge_failure(job, state.blocked_by, actor):
                raise Conflict(f"{job} has no unacknowledged failure", {"job": job})

        self.audited(actor, "acknowledge_failure", job, state.blocked_by, reason, None, act)

    def release_claim(self, job: str, actor: str, reason: str) -> list[str]:
        """Release claims held by executions that are no longer running (a crashed cleanup)."""
        check_reason(reason)
        self.entry(job)
        state = self.repo.job_state(job)
        holders = set(state.running) if state else set()
        if state and state.holder:
            holders.add(state.holder.rsplit(":", 1)[1])
        stale = []
        for name in sorted(holders):
            arn = self.deployment.execution_arn(job, name)
            try:
                status = self.sfn.describe_execution(executionArn=arn)["status"]
            except (self.sfn.exceptions.ExecutionDoesNotExist, self.sfn.exceptions.InvalidArn):
                status = "GONE"
            if status != ExecutionStatus.RUNNING.value:
                stale.append(name)
        if not stale:
            raise Conflict(f"{job} has no stale claim: every claim belongs to a running execution"
                           if holders else f"{job} holds no claim", {"job": job, "claims": sorted(holders)[:20]})

        def act() -> list[str]:
            released = []
            for name in stale:
                holder_arn = state.holder if state and state.holder and state.holder.endswith(":" + name) else None
                if self.repo.release_claim(job, name, holder_arn):
                    released.append(name)
            if not released:
                raise Conflict(f"{job}'s stale claims were released meanwhile", {"job": job})
            return released

        released: list[str] = self.audited(actor, "release_claim", job, stale[0], reason, {"released": stale}, act)
        return released


_CURSOR_KEYS = {"pk", "sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk"}


def check_cursor(cursor: str | None, index_keys: tuple[str, ...] = ()) -> str | None:
    """A paging cursor must have the shape of one a page returned: a DynamoDB key of the table's
    string key attributes (with the queried index's, ``index_keys``), as JSON. What the store
    still refuses is answered 400 as well (ControlPlane._paged)."""
    if cursor is None:
        return None
    try:
        value = json.loads(cursor)
    except (ValueError, RecursionError):  # RecursionError: ~1,000 brackets fit in a cursor
        value = None
    if (isinstance(value, dict) and {"pk", "sk", *index_keys} <= set(value) <= _CURSOR_KEYS
            and all(isinstance(v, dict) and list(v) == ["S"] and isinstance(v["S"], str) and 0 < len(v["S"]) <= 1024
                    for v in value.values())):
        return cursor
    raise Invalid("cursor is not one this API returned", {"cursor": "invalid"})


def check_reason(reason: str, required: bool = True) -> None:
    """Checked before any side effect: a reason is what the audit log says, so it is bounded."""
    if required and (not reason or not reason.strip()):
        raise Invalid("a reason is required", {"reason": "required"})
    if len(reason) > MAX_REASON:
        raise Invalid(f"the reason is {len(reason)} characters; at most {MAX_REASON}", {"reason": "too long"})
