"""The actions on runs: start one now, re-run one (from its failed step), stop one; each
audited all or nothing (``audited``), and each start idempotent when asked.

An action authorizes its actor once, at its entry (:meth:`Runs.authorize`, or
:meth:`Runs.authorize_run` for an action on an execution), and passes what that found (an
:class:`Authorized`: who, on which job, by which right, and the execution's subject) down to its
audit entry, which then neither reads the job nor judges the actor again."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from jobplane.contract import audit_event, execution_input
from jobplane.contract.attribute_values import json_object
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract import runner as rc
from jobplane.contract.catalog_brief import JobBrief
from jobplane.contract.params import ParamProblem
from jobplane.contract.quoting import quoted
from jobplane.contract.environment import DEFAULT_RETENTION_DAYS
from jobplane.contract.statuses import ExecutionStatus
from jobplane.platform.control.access import Actor, as_actor
from jobplane.platform.control.errors import MAX_PARAMS_BYTES, Conflict, Invalid, NotFound, check_reason
from jobplane.platform.control.reads import Reads
from jobplane.platform.context import PlatformContext
from jobplane.platform.control.views import ExecutionSubject, ExecutionView
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.contract.catalog import CatalogJob

log = logging.getLogger(__name__)

#: An Idempotency-Key: what a client may send (IETF draft "The Idempotency-Key HTTP Header Field").
IDEMPOTENCY_KEY_MAX = 255

#: A re-run's checkpoint item lives as long as the run records (the table's TTL).
RETENTION_SECONDS = DEFAULT_RETENTION_DAYS * 86400


def idempotent_name(job: str, actor: str, key: str) -> str:
    """The execution name of a request with an idempotency key: the same job, person and key give
    the same name (Step Functions starts a name only once), another person's key never does."""
    if not key or len(key) > IDEMPOTENCY_KEY_MAX or not key.isprintable():
        raise Invalid(f"an Idempotency-Key is 1 to {IDEMPOTENCY_KEY_MAX} printable characters",
                      {"idempotency_key": "invalid"})
    return hashlib.sha256(f"{job}\n{actor}\n{key}".encode()).hexdigest()[:32]


T = TypeVar("T")


@dataclass(frozen=True)
class Authorized:
    """What an action's authorization found, at its entry: the actor, the job acted on and by
    which right (what the audit entry says: ``AuditEntry.authority``)."""

    actor: Actor
    job: str
    authority: str


@dataclass(frozen=True)
class AuthorizedRun(Authorized):
    """An action on an execution, authorized on its record's job: the subject as read then (its
    record, if any), so the action reads it no second time."""

    subject: ExecutionSubject


class Runs:
    """Run, re-run, stop; the authorization and the audit of every action (the other services
    act through :meth:`authorize` and :meth:`audited`)."""

    def __init__(self, context: PlatformContext, reads: Reads):
        self.context, self.reads = context, reads

    def run_now(self, job: str, actor: Actor | str, params: JsonObject | None = None, reason: str = "",
                from_step: str | None = None, name: str | None = None, idempotency_key: str | None = None) -> str:
        """Start a run now; its execution name. With ``idempotency_key``, the same request again
        (a double click, a retried call) answers with the run it started, not a second one.
        Reads only this job's entry of the catalog (``brief``)."""
        entry = self.reads.brief(job)
        who = self.authorize(actor, job)
        check_reason(reason, required=False)
        steps = self.reads.step_names(job)
        if from_step is not None and from_step not in steps:
            raise Invalid(f"{job} has no step {quoted(from_step)}; steps: {', '.join(steps)}",
                          {"from_step": "unknown step"})
        params = self.checked_params(entry, params)
        payload = execution_input.manual(who.actor.name, entry.params, params, resume_from=from_step,
                                         definition=entry.definition)
        if entry.param_set().calendar_defaults():  # resolved now, in the job's timezone: recorded in the input
            payload = with_calendar_defaults(self.reads.entry(job), payload)
        name = name or (idempotent_name(job, who.actor.name, idempotency_key) if idempotency_key is not None
                        else uuid.uuid4().hex)
        return self.start_once(job, payload, name, idempotency_key is not None, lambda: self.audited(
            who, audit_event.Run(job, name, params, from_step), reason, lambda: self.start_execution(job, payload, name)))

    def authorize_run(self, execution: str, actor: Actor | str, loaded: ExecutionSubject | None = None) -> AuthorizedRun:
        """The actor, authorized on ``execution``'s job (read from its record: ``subject``), and
        that subject. ``loaded``: the subject as the caller just read it, so it is not read again."""
        subject = loaded if loaded is not None and loaded.execution == execution else self.reads.subject(execution)
        who = self.authorize(actor, subject.job)
        return AuthorizedRun(who.actor, who.job, who.authority, subject)

    def ended_run(self, who: AuthorizedRun) -> ExecutionView:
        """The authorized execution, which has ended (Conflict while it runs)."""
        subject = who.subject
        original = self.reads.record_view(subject) or self.reads.execution(subject.execution, subject.job)
        if original.running:
            raise Conflict(f"{subject.execution} is still running; stop it first", {"execution": subject.execution})
        return original

    def rerun(self, execution: str, actor: Actor | str, from_failed_step: bool = True,
              params: JsonObject | None = None, reason: str = "", name: str | None = None,
              idempotency_key: str | None = None, loaded: ExecutionSubject | None = None,
              current: bool = False, from_scratch: bool = False) -> str:
        """``loaded``: the execution's subject as the caller just read it (to authorize the
        actor), so it is not read again. Only the record is read (not the history or logs),
        unless the execution has none yet: then it is running, or has just ended.

        A re-run runs the definition the original ran (:meth:`rerun_definition`); ``current``:
        the one deployed now, whatever the original ran. A re-run from the failed step gives it
        the checkpoint the original's attempt last reported (:meth:`checkpoint`), unless
        ``from_scratch``."""
        check_reason(reason, required=False)
        who = self.authorize_run(execution, actor, loaded)
        original = self.ended_run(who)
        if original.status == ExecutionStatus.MISSED.value:  # no run to repeat: run the fire itself, once
            fire = original.input.scheduled_time
            raise Conflict(f"{execution} is a missed fire, not a run: run it as that fire with a backfill "
                           f"(jobplane backfill {original.job} --from {fire} --to {fire})",
                           {"execution": execution, "status": original.status})
        entry = self.reads.entry(original.job)
        definition = self.rerun_definition(original, entry, current)
        version = self.rerun_version(original.job, definition, entry)
        overrides = self.checked_params(entry, params, complete=False)
        resume_from = None
        if from_failed_step:
            resume_from = original.failed_step
            if original.status in (ExecutionStatus.SUCCEEDED.value, ExecutionStatus.SKIPPED.value) or not resume_from:
                raise Conflict(f"{execution} has no failed step to resume from ({original.status}); re-run the whole job",
                               {"execution": execution, "status": original.status})
            steps = self.reads.step_names(original.job) if version is None else self.version_steps(original.job, definition)
            if resume_from not in steps:
                raise Conflict(f"step {resume_from!r} is no longer in {original.job}; re-run the whole job",
                               {"execution": execution, "step": resume_from})
        resolved = self.reads.resolved_params(original.job, execution) if entry.param_set().calendar_defaults() else {}
        payload = execution_input.rerun(who.actor.name, execution, rerun_params(entry, original, overrides, resolved),
                                        resume_from, definition=definition)
        name = name or (idempotent_name(original.job, who.actor.name, idempotency_key) if idempotency_key is not None
                        else uuid.uuid4().hex)
        cursor = self.checkpoint(original.job, execution, resume_from) if resume_from and not from_scratch else None

        def start() -> str:
            if cursor is not None and resume_from is not None:
                # before the start, so the step finds it; a start that then fails leaves it to
                # expire with the records (an execution of that name never runs)
                now = time.time()
                self.context.repo.seed_checkpoint(original.job, name, resume_from, cursor, execution, round(now, 3),
                                                  int(now) + RETENTION_SECONDS)
            return self.start_execution(original.job, payload, name, version)

        from jobplane.contract import audit  # every kind of event (not on a run start's path: contract/audit_event.py)
        self.start_once(original.job, payload, name, idempotency_key is not None, lambda: self.audited(
            who, audit.Rerun(original.job, name, execution, resume_from, overrides), reason, start))
        self.context.repo.link_rerun(execution, name)  # lineage: best effort, the audit entry names the original too
        return name

    def checkpoint(self, job: str, execution: str, step: str) -> str | None:
        """The cursor ``step`` of ``execution`` last reported (``jobplane.progress(cursor=...)``):
        where a re-run from that step resumes; None without one. One Query of its progress."""
        return next((p.cursor for p in self.reads.step_progress(job, execution) if p.step == step and p.cursor), None)

    def rerun_definition(self, original: ExecutionView, entry: CatalogJob, current: bool) -> str | None:
        """The definition a re-run of ``original`` runs (its digest, what the re-run is stamped
        with): the original's own, by default, or with ``current`` the one deployed now.

        The original's own, when the job was deployed since, runs as the Step Functions version
        published of it (:meth:`rerun_version`, platform/sfn_versions.py). Without that version
        (a definition deployed before versions were published, or its version pruned) only the
        definition deployed now can run: the re-run goes on with it when that changes no step (a
        schedule, an alert, the policy: not what its steps do); otherwise it is refused, saying
        what changed, for a changed step list must never silently run instead. A run whose
        definitions were not recorded cannot be compared: refused the same way unless
        ``current``. A run from before definitions were stamped (no digest) re-runs the deployed
        one, as every re-run did before them.

        A version pins the state machine, not the runner image (a step runs the task definition
        family's latest revision, the runner function as deployed), so a definition whose image
        differs from the deployed one cannot be run as it was: when that is the only kind of
        change (no step, no state machine), the re-run runs, and is stamped with, the deployed
        definition; when its steps changed too, it is refused like a definition without a
        version, for a re-run stamped with the old image would say it ran code it did not."""
        deployed, ran = entry.definition, original.input.definition
        if current or deployed is None or ran is None or ran == deployed:
            return deployed
        from jobplane.contract import definition_digest
        from jobplane.platform.definition_history import compare

        versioned = self.version_of(original.job, ran) is not None
        comparison = compare(self.context, original.job, original.execution, ran, original.job, "deployed", deployed)
        changes = comparison.changes
        new_image = changes is not None and any(c.what == "image" for c in changes)
        if versioned and not new_image:
            return ran
        if changes is not None and not any(c.what.startswith("step") or c.what == "state machine" for c in changes):
            return deployed
        shown = "; ".join(c.line() for c in (changes or [])[:5]) if changes else "not recorded, so not comparable"
        why = ("which a re-run cannot run as it was: a Step Functions version does not pin the runner image"
               if versioned else "which is no longer deployed")
        raise Conflict(f"{original.execution} ran definition {definition_digest.short(ran)}; {original.job} now runs "
                       f"{definition_digest.short(deployed)} ({shown}). A re-run runs the definition of the run it "
                       f"re-runs, {why}: re-run with --current (the portal: \"run the current "
                       "definition\") to run the deployed one",
                       {"execution": original.execution, "definition": ran, "deployed": deployed,
                        "changes": [c.line() for c in changes] if changes else None})

    def version_of(self, job: str, digest: str) -> str | None:
        """The ARN of the Step Functions version published of ``job``'s definition ``digest``
        (recorded with it in the definitions store), None without one."""
        from jobplane.platform.definition_history import store

        stored = store(self.context).get(job, digest)
        return stored.version if stored is not None else None

    def version_steps(self, job: str, digest: str | None) -> list[str]:
        """The steps a run of ``job``'s recorded definition ``digest`` can start at (its top-level
        steps, then its groups' members, as CatalogJob.step_names): where a re-run of an older
        definition may resume."""
        from jobplane.platform.definition_history import store

        stored = store(self.context).get(job, digest) if digest else None
        fields = stored.document.get("job") if stored is not None else None
        raw = fields.get("steps") if isinstance(fields, dict) else None
        steps = [s for s in raw if isinstance(s, dict)] if isinstance(raw, list) else []
        members = [m for s in steps for m in (s.get("parallel") or []) if isinstance(m, dict)]
        return [str(s.get("name")) for s in steps + members]

    def rerun_version(self, job: str, definition: str | None, entry: CatalogJob) -> str | None:
        """The version ARN a re-run stamped with ``definition`` starts: that definition's
        version when it is not the one deployed now (:meth:`rerun_definition` chose it); None,
        the state machine's unqualified ARN (its latest revision), otherwise."""
        if definition is None or definition == entry.definition:
            return None
        return self.version_of(job, definition)

    def start_once(self, job: str, payload: ExecutionInput, name: str, idempotent: bool,
                    start: Callable[[], object]) -> str:
        """``start()`` (the audited start of execution ``name``), unless an idempotent request
        already started it: then the same answer, and no second run or audit entry. Step
        Functions starts a name once (two racing requests: one wins, the other finds its run)."""
        if idempotent and self._started_as(job, name, payload):
            return name
        try:
            start()
        except self.context.sfn.exceptions.ExecutionAlreadyExists:
            if idempotent and self._started_as(job, name, payload):
                return name  # the same request won the race; its audit entry is the one kept
            raise Conflict(f"an execution named {name} exists already", {"execution": name}) from None
        return name

    def _started_as(self, job: str, name: str, payload: ExecutionInput) -> bool:
        """True if ``name`` was started by the same request; Conflict if by another one."""
        try:
            d = self.context.sfn.describe_execution(executionArn=self.context.deployment.execution_arn(job, name))
        except self.context.sfn.exceptions.ExecutionDoesNotExist:
            return False
        given, sent = json_object(d.get("input")), payload.to_json()
        if any(given.get(k) != sent.get(k) for k in ("trigger", "requested_by", "params", "resume_from", "rerun_of")):
            raise Conflict("this Idempotency-Key was used for another request; send a new key for a new run",
                           {"execution": name, "idempotency_key": "reused"})
        return True

    def checked_params(self, entry: CatalogJob | JobBrief, params: JsonObject | None,
                       complete: bool = True) -> JsonObject:
        """A run's params: only those the job declares (they never reach a step's fixed
        arguments, see runner/targets.py), each by its declared type and rules (the job's params
        schema, contract/params.py: every problem at once, each naming the parameter and the
        rule), within the size an ECS override can carry. ``complete``: ``params`` and the job's
        defaults are all the run gets (a re-run keeps its original's too), so a required one
        missing is refused."""
        params = dict(params or {})
        param_set = entry.param_set()
        declared = param_set.names()
        unknown = sorted(set(params) - set(declared))
        typed = [p for p in param_set.problems({**param_set.defaults(), **params}, complete=complete)
                 if p.rule != "unknown"]
        if unknown:
            shown = [quoted(k, 40) for k in unknown[:10]]
            raise Invalid(f"{entry.name} has no param{'s' if len(unknown) > 1 else ''} {', '.join(shown)}"
                          + (f"; it takes {', '.join(sorted(declared))}" if declared else "; it takes none")
                          + "".join(f"; {p}" for p in typed[:10]),
                          {"job": entry.name, "unknown_params": [k[:40] for k in unknown[:10]],
                           "params": sorted(declared), "problems": _problems_json(typed)})
        if typed:
            raise Invalid(f"{entry.name}'s params: " + "; ".join(str(p) for p in typed[:20]),
                          {"job": entry.name, "problems": _problems_json(typed)})
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

    def authorize(self, actor: Actor | str, job: str) -> Authorized:
        """The actor, if they may act on ``job`` (platform/control/access.py, ``as_actor`` for a
        name alone), and by which right; Forbidden if not."""
        who = as_actor(actor)
        return Authorized(who, job, who.authority(self.reads.brief(job).team))

    def audited(self, actor: Authorized | Actor | str, event: audit_event.AuditEvent, reason: str, act: Callable[[], T],
                undo: Sequence[Callable[[], object]] | None = None) -> T:
        """An action and its audit entry, all or nothing: the actor is authorized for the event's
        job (every action passes here: an :class:`Authorized` of that job was at the action's
        entry, anyone else is now), the entry is written (a failed write changes nothing),
        then the action; if the action fails, the entry is removed (and ``undo``, a list of
        callables, reverses what the action had done) before the error propagates."""
        who = actor if isinstance(actor, Authorized) and actor.job == event.job else \
            self.authorize(actor.actor if isinstance(actor, Authorized) else actor, event.job)
        entry = self.context.audit.write(who.actor.name, event, reason, who.authority)
        try:
            return act()
        except BaseException:
            for step in undo or ():  # each part on its own: one that fails must not stop the others
                try:
                    step()
                except Exception:
                    log.exception("could not undo part of a failed %s of %s", event.action, event.job)
            self.context.audit.remove(entry)
            raise

    def start_execution(self, job: str, payload: ExecutionInput, name: str, version: str | None = None) -> str:
        """Start ``job`` (its latest revision: the unqualified ARN) or, with ``version``, that
        published version of it: a qualified ARN, which "starts execution for that version"
        (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html);
        the execution is named under the state machine either way. The starter's
        ``states:StartExecution`` on the state machine's ARN covers its versions: "Step
        Functions uses the state machine's ARN instead of using the version ARN or alias ARN"
        (https://docs.aws.amazon.com/step-functions/latest/dg/auth-version-alias.html)."""
        try:
            self.context.sfn.start_execution(stateMachineArn=version or self.context.deployment.state_machine_arn(job),
                                             name=name, input=json.dumps(payload.to_json()))
        except self.context.sfn.exceptions.StateMachineDoesNotExist:
            if version is not None:
                raise Conflict(f"the version of {job}'s definition this re-run runs ({version}) no longer exists "
                               "(versions are pruned: docs/operate.md); re-run with --current to run the deployed one",
                               {"job": job, "version": version}) from None
            raise Conflict(f"{job} is not deployed", {"job": job}) from None
        return name

    def stop(self, execution: str, actor: Actor | str, reason: str, loaded: ExecutionSubject | None = None) -> None:
        """Reads the record (or, while there is none, what DescribeExecution says), never the
        history or logs."""
        check_reason(reason)
        who = self.authorize_run(execution, actor, loaded)
        subject, sfn = who.subject, self.context.sfn
        arn = self.context.deployment.execution_arn(subject.job, execution)
        if subject.record is not None and subject.record.status != ExecutionStatus.RUNNING.value:
            status = subject.record.status
        else:
            try:
                status = sfn.describe_execution(executionArn=arn)["status"]
            except sfn.exceptions.ExecutionDoesNotExist:
                raise NotFound(f"no execution named {execution!r}", {"execution": execution}) from None
        if status != ExecutionStatus.RUNNING.value:
            raise Conflict(f"{execution} is not running ({status})", {"execution": execution, "status": status})
        from jobplane.contract import audit
        self.audited(who, audit.Stop(subject.job, execution), reason, lambda: sfn.stop_execution(
            executionArn=arn, error="Stopped", cause=f"stopped by {who.actor.name}: {reason}"))


def _problems_json(problems: Sequence[ParamProblem]) -> list[JsonObject]:
    """Each problem of a run's params for an API answer: the parameter, the rule, the sentence."""
    return [{"param": p.name[:40], "rule": p.rule, "message": p.message} for p in problems[:20]]


def with_calendar_defaults(entry: CatalogJob, payload: ExecutionInput, now: datetime | None = None) -> ExecutionInput:
    """``payload`` with the job's calendar defaults its params lack resolved for its scheduled
    time (contract/params.py), so the run's input records the values it ran with."""
    param_set = entry.param_set()
    if not param_set.calendar_defaults():
        return payload
    at = datetime.fromisoformat(payload.scheduled_time.replace("Z", "+00:00"))
    params, _ = param_set.resolve(dict(payload.params), at, entry.timezone, entry.calendar, now)
    return dataclasses.replace(payload, params=params)


def rerun_params(entry: CatalogJob, original: ExecutionView, overrides: JsonObject,
                 resolved: JsonObject | None = None) -> JsonObject:
    """A re-run's params: the job's defaults, the original run's values for params the job still
    declares (``resolved``: the calendar defaults its runner resolved at its fire, so a re-run of
    March's close closes March), then the operator's changes."""
    declared = set(entry.param_set().names())  # typed ones without a default too (a required tenant, a month)
    kept = {k: v for k, v in {**(resolved or {}), **original.input.params}.items() if k in declared}
    return {**entry.params, **kept, **overrides}
