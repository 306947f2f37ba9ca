"""The actions on jobs: pause and resume their schedules, snooze and unsnooze their alerts,
acknowledge a failure that blocks a SKIP_IF_FAILED job, release a claim its holder no longer holds."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from jobplane.contract import arns, names
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.clock import iso_millis, now_iso
from jobplane.platform.control.access import Actor
from jobplane.platform.control.errors import Conflict, Invalid, check_reason
from jobplane.platform.context import PlatformContext
from jobplane.platform.control.reads import Reads
from jobplane.platform.control.runs import Runs
from jobplane.platform.control.views import JobSummary

if TYPE_CHECKING:  # the catalog's models (pydantic) load with the catalog
    from jobplane.contract.catalog import CatalogJob


#: The longest snooze: a job silenced for longer wants a pause, or a fix.
MAX_SNOOZE = timedelta(days=7)


class JobActions:
    """Pause, resume, acknowledge, release a claim: each authorized and audited by ``runs``."""

    def __init__(self, context: PlatformContext, reads: Reads, runs: Runs):
        self.context, self.reads, self.runs = context, reads, runs
        self.deployment, self.repo = context.deployment, context.repo

    def pause(self, job: str, actor: Actor | str, reason: str) -> None:
        check_reason(reason)
        entry = self.reads.entry(job)
        who = self.runs.authorize(actor, job)
        state = self.repo.job_state(job)
        if state and state.paused:
            raise Conflict(f"{job} is already paused (by {state.paused_by}: {state.paused_reason})", {"job": job})
        if not entry.schedule:
            raise Conflict(f"{job} has no schedule to pause (it runs only when started)", {"job": job})

        def act() -> None:  # the flag first (what the portal shows), then the schedules
            self.repo.set_paused(job, entry.team, who.actor.name, reason, now_iso())
            self._set_schedule_state(entry, "DISABLED")

        undo = [lambda: self.repo.clear_paused(job),
                lambda: self._set_schedule_state(entry, "ENABLED" if entry.enabled else "DISABLED")]
        from jobplane.contract import audit  # every kind of event (not on a run start's path: contract/audit_event.py)
        self.runs.audited(who, audit.Pause(job), reason, act, undo)

    def resume(self, job: str, actor: Actor | str, reason: str) -> None:
        check_reason(reason)
        entry = self.reads.entry(job)
        who = self.runs.authorize(actor, job)
        state = self.repo.job_state(job)
        if not (state and state.paused):
            raise Conflict(f"{job} is not paused", {"job": job})

        def act() -> None:
            if not self.repo.clear_paused(job):
                raise Conflict(f"{job} is not paused", {"job": job})
            self._set_schedule_state(entry, "ENABLED" if entry.enabled else "DISABLED")

        undo = [lambda: self.repo.set_paused(job, entry.team, state.paused_by or who.actor.name, state.paused_reason or "",
                                             state.paused_at or now_iso()),
                lambda: self._set_schedule_state(entry, "DISABLED")]
        from jobplane.contract import audit
        self.runs.audited(who, audit.Resume(job), reason, act, undo)

    def snooze(self, job: str, actor: Actor | str, until: datetime, reason: str) -> None:
        """Hold the job's alerts until ``until`` (platform/snooze.py): audited, ending by itself,
        summarised at its end. At most 7 days ahead: a longer silence is a pause or a fix."""
        check_reason(reason)
        entry = self.reads.entry(job)
        who = self.runs.authorize(actor, job)
        now = datetime.now(timezone.utc)
        if until.tzinfo is None:
            raise Invalid("the snooze's end needs a timezone (e.g. 2026-12-08T09:00:00+09:00)", {"until": str(until)})
        if not now < until <= now + MAX_SNOOZE:
            raise Invalid(f"a snooze ends after now and within {MAX_SNOOZE.days} days", {"until": until.isoformat()})
        end = iso_millis(until.astimezone(timezone.utc))

        def act() -> None:  # one write: when it fails, nothing changed (and the entry goes)
            if not self.repo.set_snooze(job, entry.team, end, who.actor.name, reason):
                raise Conflict(f"{job}'s last snooze is being summarised: snooze again in a minute", {"job": job})

        from jobplane.contract import audit
        self.runs.audited(who, audit.Snooze(job, end), reason, act)

    def unsnooze(self, job: str, actor: Actor | str, reason: str) -> None:
        """End a snooze now: the periodic check sends its summary (platform/snooze.py)."""
        check_reason(reason)
        self.reads.entry(job)
        who = self.runs.authorize(actor, job)
        state = self.repo.job_state(job)
        if not (state and state.snoozed(now_iso())):
            raise Conflict(f"{job}'s alerts are not snoozed", {"job": job})

        def act() -> None:  # one conditional write: when it fails, nothing changed
            if not self.repo.end_snooze_now(job, now_iso()):
                raise Conflict(f"{job}'s alerts are not snoozed", {"job": job})

        from jobplane.contract import audit
        self.runs.audited(who, audit.Unsnooze(job), reason, act)

    def apply_pauses(self) -> list[str]:
        """Re-disable the schedules of paused jobs (after a deploy re-created them)."""
        paused = [s.job for s in self.repo.job_states() if s.paused and s.job in self.context.entries]
        for job in paused:
            self._set_schedule_state(self.context.entries[job], "DISABLED")
        return paused

    def repair_pauses(self) -> list[str]:
        """The paused jobs whose schedule was found ENABLED (an apply set the compiled state
        again, or someone outside jobplane did), each disabled again; returns the schedules.

        On AWS nothing else re-disables them: `terraform apply` of a team root writes each
        schedule's compiled state, and a paused job's fires would each start an execution (the
        claim then records it SKIPPED). The pipeline runs this after every apply (`jobplane
        repair-pauses`) and the periodic Lambda on every pass, which reports what it repaired as
        drift. A schedule not deployed (yet) is left for the apply that creates it."""
        repaired = []
        group = self.deployment.name_prefix
        for state in self.repo.job_states():
            entry = self.context.entries.get(state.job)
            if not state.paused or entry is None:
                continue
            for i in range(len(entry.schedule)):
                name = names.schedule_name(group, entry.name, i)
                try:
                    current = self.context.scheduler.get_schedule(Name=name, GroupName=group)
                except self.context.scheduler.exceptions.ResourceNotFoundException:
                    continue
                if current.get("State") == "ENABLED":
                    self._update_schedule(name, current, "DISABLED")
                    repaired.append(name)
        return repaired

    def _set_schedule_state(self, entry: CatalogJob, state: str) -> None:
        group = self.deployment.name_prefix
        for i in range(len(entry.schedule)):
            name = names.schedule_name(self.deployment.name_prefix, entry.name, i)
            try:
                current = self.context.scheduler.get_schedule(Name=name, GroupName=group)
            except self.context.scheduler.exceptions.ResourceNotFoundException:
                raise Conflict(f"{entry.name}'s schedule {name} is not deployed; deploy the job first",
                               {"job": entry.name, "schedule": name}) from None
            self._update_schedule(name, current, state)

    def _update_schedule(self, name: str, current: dict[str, object], state: str) -> None:
        spec: dict[str, object] = {k: current[k] for k in ("ScheduleExpression", "FlexibleTimeWindow", "Target")
                                   if k in current}
        # UpdateSchedule replaces the whole schedule: a field left out is reset to its default
        # (a customer managed KMS key to the AWS owned one), so every one it has is passed back
        # (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_UpdateSchedule.html)
        for k in ("ScheduleExpressionTimezone", "StartDate", "EndDate", "Description", "KmsKeyArn",
                  "ActionAfterCompletion"):
            if current.get(k):
                spec[k] = current[k]
        self.context.scheduler.update_schedule(Name=name, GroupName=self.deployment.name_prefix, State=state, **spec)

    def acknowledge(self, job: str, actor: Actor | str, reason: str) -> None:
        check_reason(reason)
        who = self.runs.authorize(actor, job)
        # only a failure that holds back fires (JobSummary.blocked_by: not under every policy)
        blocked_by = JobSummary(self.reads.entry(job), self.repo.job_state(job)).blocked_by
        if blocked_by is None:
            raise Conflict(f"{job} has no unacknowledged failure that blocks its schedule", {"job": job})

        def act() -> None:
            if not self.repo.acknowledge_failure(job, blocked_by, who.actor.name):
                raise Conflict(f"{job} has no unacknowledged failure that blocks its schedule", {"job": job})

        from jobplane.contract import audit
        self.runs.audited(who, audit.Acknowledge(job, blocked_by), reason, act)

    def release_claim(self, job: str, actor: Actor | str, reason: str) -> list[str]:
        """Release claims held by executions that are no longer running (a crashed cleanup)."""
        check_reason(reason)
        who = self.runs.authorize(actor, job)
        state = self.repo.job_state(job)
        holders = set(state.running) if state else set()
        if state and state.holder:
            holders.add(arns.execution_name(state.holder))
        stale = []
        for name in sorted(holders):
            arn = self.deployment.execution_arn(job, name)
            try:
                status = self.context.sfn.describe_execution(executionArn=arn)["status"]
            except (self.context.sfn.exceptions.ExecutionDoesNotExist, self.context.sfn.exceptions.InvalidArn):
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

        from jobplane.contract import audit
        released: list[str] = self.runs.audited(who, audit.ReleaseClaim(job, tuple(stale)), reason, act)
        return released
