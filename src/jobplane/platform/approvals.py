"""Approval steps at run time (``jp.approval``): the pending approvals, who may decide, and the
one function every way in decides through (:func:`decide`: the portal's form, ``jobplane
approve|reject``, and Slack's buttons later), plus the reminders the periodic check sends.

A decision is an operator action like a re-run: the one authorization rule first (the actor may
act on the job's team: platform/control/access.py), then the approval's own rules (one of its
``approvers``, a team or a person, when it names any; not the run's starter under ``four_eyes``),
then, audited all or nothing (``Runs.audited``): a conditional write on the record (``status =
PENDING``: the first decision wins, a second is refused with who decided), then SendTaskSuccess
or SendTaskFailure with the record's task token, which is read here and goes nowhere else. A
token whose wait has timed out answers TaskTimedOut ("SendTaskSuccess" errors,
https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskSuccess.html): the
decision is then refused, the record marked TIMED_OUT (the step took its on_timeout).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from jobplane.contract import approvals as ca
from jobplane.contract import audit
from jobplane.contract import datamodel as dm
from jobplane.platform.control.access import Actor, as_actor
from jobplane.platform.control.runs import Authorized
from jobplane.platform.control.errors import Conflict, Forbidden, Invalid, NotFound, check_reason

if TYPE_CHECKING:
    from jobplane.platform.control import ControlPlane
    from jobplane.platform.step_progress import StepProgress

#: What a decision says it came through (the audit entry's ``via``).
VIAS = ("portal", "cli", "slack", "api")
_METRIC = re.compile(r"\{([a-z][a-z0-9_-]*)\.([A-Za-z_][\w.-]*)\}")


@dataclass(frozen=True)
class Approval:
    """One approval step of one run, as its record says (never its task token)."""

    job: str
    team: str
    execution: str
    step: str
    status: str
    approvers: tuple[str, ...]
    prompt: str
    channel: str | None
    four_eyes: bool
    started_by: str
    asked_at: str
    timeout_seconds: int
    on_timeout: str
    remind_seconds: int | None
    reminders_sent: int
    decided_by: str | None = None
    decided_at: str | None = None
    reason: str | None = None
    via: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)  # "<step>.<name>" of the run's earlier steps

    @property
    def pending(self) -> bool:
        return self.status == ca.ApprovalStatus.PENDING.value

    @property
    def asked(self) -> datetime:
        return _instant(self.asked_at)

    @property
    def timeout_at(self) -> datetime:
        return datetime.fromtimestamp(self.asked.timestamp() + self.timeout_seconds, timezone.utc)

    def shown_prompt(self) -> str:
        """The prompt with each ``{step.metric}`` replaced by the value the run's step reported
        (jobplane.metric), so the approver sees what they approve; a metric not reported shows
        as ``?``."""
        def value(m: re.Match[str]) -> str:
            v = self.metrics.get(f"{m[1]}.{m[2]}")
            return "?" if v is None else (f"{int(v):,}" if float(v).is_integer() else f"{v:,}")

        return _METRIC.sub(value, self.prompt) if self.prompt else ""

    def as_json(self) -> dict[str, Any]:
        return {"job": self.job, "team": self.team, "execution": self.execution, "step": self.step,
                "status": self.status, "approvers": list(self.approvers), "prompt": self.shown_prompt(),
                "four_eyes": self.four_eyes, "started_by": self.started_by, "asked_at": self.asked_at,
                "timeout_at": self.timeout_at.isoformat(), "on_timeout": self.on_timeout,
                "decided_by": self.decided_by, "decided_at": self.decided_at, "reason": self.reason,
                "via": self.via, "metrics": self.metrics}


def _instant(text: str) -> datetime:
    at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return at if at.tzinfo else at.replace(tzinfo=timezone.utc)


def _s(item: dict[str, Any], name: str) -> str | None:
    v = item.get(name)
    return str(v["S"]) if isinstance(v, dict) and "S" in v else None


def _n(item: dict[str, Any], name: str) -> int | None:
    v = item.get(name)
    return int(float(v["N"])) if isinstance(v, dict) and "N" in v else None


def of_item(item: dict[str, Any], progress: list[StepProgress] | None = None) -> Approval:
    try:
        approvers = tuple(str(a) for a in json.loads(_s(item, ca.APPROVERS) or "[]"))
    except ValueError:
        approvers = ()
    metrics = {f"{p.step}.{k}": v for p in progress or [] for k, v in p.metrics.items()}
    return Approval(
        job=_s(item, "job") or "", team=_s(item, "team") or "", execution=_s(item, dm.ATTR_EXECUTION) or "",
        step=_s(item, "step") or _s(item, "sk") or "", status=_s(item, ca.STATUS) or "",
        approvers=approvers, prompt=_s(item, ca.PROMPT) or "", channel=_s(item, ca.CHANNEL),
        four_eyes=_s(item, ca.FOUR_EYES) == "1", started_by=_s(item, ca.STARTED_BY) or "",
        asked_at=_s(item, ca.ASKED_AT) or "1970-01-01T00:00:00Z", timeout_seconds=_n(item, ca.TIMEOUT) or 0,
        on_timeout=_s(item, ca.ON_TIMEOUT) or ca.OnTimeout.REJECT.value, remind_seconds=_n(item, ca.REMIND),
        reminders_sent=_n(item, ca.REMINDERS) or 0, decided_by=_s(item, ca.DECIDED_BY),
        decided_at=_s(item, ca.DECIDED_AT), reason=_s(item, ca.REASON), via=_s(item, ca.VIA), metrics=metrics)


def approver_authority(actor: Actor, approval: Approval) -> str | None:
    """By which right ``actor`` is one of the approval's ``approvers`` (a person by name, or a
    member of a named team), None if they are not; with no approvers named, None too (then the
    one authorization rule decides: platform/control/access.py)."""
    if actor.name in approval.approvers:
        return "approver"
    teams = sorted(actor.teams & set(approval.approvers))
    return f"approver (team {teams[0]})" if teams else None


def may_decide(actor: Actor, approval: Approval) -> str | None:
    """Why ``actor`` may not decide ``approval`` (None: they may). An approval that names its
    approvers is decided by them only (the sign-off it asks for is theirs: a member of the job's
    team or an admin who is not named is refused); one that names none, by whoever may act on the
    job's team (the one authorization rule). Under ``four_eyes`` never by the run's starter."""
    if approval.approvers:
        if approver_authority(actor, approval) is None:
            return f"{actor.name} is not among the approvers of {approval.step} ({', '.join(approval.approvers)})"
    elif not actor.can_act(approval.team):
        return f"{actor.name} may read but not act on team {approval.team}'s jobs"
    if approval.four_eyes and actor.name == approval.started_by:
        return (f"four eyes: {actor.name} started this run and may not decide its approval {approval.step}; "
                "ask another approver")
    return None


class Approvals:
    """The approvals of one deployment, over its control plane (reads, authorization, audit)."""

    def __init__(self, control: ControlPlane):
        self.control = control
        self.context = control.context

    @property
    def _table(self) -> str:
        return str(self.context.repo.table)

    def of_run(self, execution: str) -> list[Approval]:
        """Every approval step of ``execution`` (one Query of its partition), with its metrics."""
        out = self.context.ddb.query(TableName=self._table, KeyConditionExpression="pk = :pk",
                                     ExpressionAttributeValues={":pk": {"S": ca.pk(execution)}}, ConsistentRead=True)
        items = out.get("Items", [])
        progress = self.control.step_progress(_s(items[0], "job") or "", execution) if items else []
        return [of_item(i, progress) for i in items]

    def pending(self, person: Actor | None = None) -> list[Approval]:
        """The pending approvals, oldest first (the gsi2 partition only pending ones are in);
        with ``person``, only those they may decide (the inbox)."""
        kwargs: dict[str, Any] = {"TableName": self._table, "IndexName": dm.GSI_BY_KIND,
                                  "KeyConditionExpression": "gsi2pk = :p",
                                  "ExpressionAttributeValues": {":p": {"S": ca.PENDING_PARTITION}}}
        items: list[dict[str, Any]] = []
        while True:
            out = self.context.ddb.query(**kwargs)
            items += out.get("Items", [])
            if "LastEvaluatedKey" not in out:
                break
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]
        found = [of_item(i, self.control.step_progress(_s(i, "job") or "", _s(i, dm.ATTR_EXECUTION) or "")) for i in items]
        found = [a for a in found if a.pending]
        if person is not None:
            found = [a for a in found if may_decide(person, a) is None]
        return found

    def waiting(self, execution: str, step: str | None = None) -> Approval:
        """The approval of ``execution`` waiting for a decision (``step`` when it has several)."""
        found = [a for a in self.of_run(execution) if step is None or a.step == step]
        if not found:
            raise NotFound(f"{execution} has no approval step waiting" + (f" named {step}" if step else ""),
                           {"execution": execution})
        pending = [a for a in found if a.pending]
        if not pending:
            a = found[-1]
            raise Conflict(f"the approval {a.step} of {execution} was already decided: {a.status}"
                           + (f" by {a.decided_by}" if a.decided_by else ""),
                           {"execution": execution, "status": a.status})
        return pending[0]

    def authorized(self, execution: str, actor: Actor | str, step: str | None = None) -> tuple[Approval, Authorized]:
        """The approval ``execution`` waits on and ``actor``'s right to decide it, or the refusal
        (Forbidden; NotFound, Conflict when nothing waits): what :meth:`decide` checks first, and
        what a Slack button checks before it opens its form (platform/slack_actions/registry.py)."""
        approval = self.waiting(execution, step)
        person = as_actor(actor)
        named = approver_authority(person, approval)
        # a named approver acts by that right; with none named, the one rule (Forbidden if not)
        who = (Authorized(person, approval.job, named) if named is not None and approval.approvers
               else self.control.runs.authorize(person, approval.job))
        refused = may_decide(who.actor, approval)
        if refused:
            raise Forbidden(refused, {"actor": who.actor.name, "execution": execution, "step": approval.step})
        return approval, who

    def decide(self, execution: str, actor: Actor | str, decision: ca.Decision | str, reason: str,
               via: str = "portal", step: str | None = None) -> Approval:
        """Approve or reject the approval ``execution`` waits on, as ``actor``: authorized,
        checked, audited, first decision wins. Returns the approval as decided."""
        decision = ca.Decision(decision)
        if via not in VIAS:
            raise Invalid(f"via is one of {', '.join(VIAS)}", {"via": via})
        check_reason(reason, required=decision is ca.Decision.REJECT)
        approval, who = self.authorized(execution, actor, step)
        status = ca.ApprovalStatus.APPROVED if decision is ca.Decision.APPROVE else ca.ApprovalStatus.REJECTED
        event = (audit.Approve if decision is ca.Decision.APPROVE else audit.Reject)(
            approval.job, execution, approval.step, via)
        now = self.context.clock().isoformat().replace("+00:00", "Z")
        key = {"pk": {"S": ca.pk(execution)}, "sk": {"S": approval.step}}

        def act() -> None:
            try:
                out = self.context.ddb.update_item(
                    TableName=self._table, Key=key,
                    UpdateExpression=(f"SET #st = :st, {ca.DECIDED_BY} = :by, {ca.DECIDED_AT} = :at, "
                                      f"{ca.REASON} = :why, {ca.VIA} = :via REMOVE gsi2pk, gsi2sk"),
                    ConditionExpression="#st = :pending", ExpressionAttributeNames={"#st": ca.STATUS},
                    ExpressionAttributeValues={":st": {"S": status.value}, ":by": {"S": who.actor.name},
                                               ":at": {"S": now}, ":why": {"S": reason}, ":via": {"S": via},
                                               ":pending": {"S": ca.ApprovalStatus.PENDING.value}},
                    ReturnValues="ALL_NEW")
            except self.context.ddb.exceptions.ConditionalCheckFailedException:
                now_is = self.waiting_or_decided(execution, approval.step)
                raise Conflict(f"the approval {approval.step} of {execution} was decided first: {now_is.status}"
                               + (f" by {now_is.decided_by}" if now_is.decided_by else ""),
                               {"execution": execution, "status": now_is.status}) from None
            token = _s(out["Attributes"], ca.TOKEN) or ""
            sfn = self.context.sfn
            try:
                if status is ca.ApprovalStatus.APPROVED:
                    sfn.send_task_success(taskToken=token, output=json.dumps(
                        {"decision": decision.value, "by": who.actor.name, "reason": reason}))
                else:
                    sfn.send_task_failure(taskToken=token, error=ca.REJECTED_ERROR,
                                          cause=f"rejected by {who.actor.name}: {reason}"[:32768])
            except (sfn.exceptions.TaskTimedOut, sfn.exceptions.TaskDoesNotExist, sfn.exceptions.InvalidToken):
                # the wait is over (timed out, or the run was stopped): the step took its course
                self.context.ddb.update_item(
                    TableName=self._table, Key=key, UpdateExpression="SET #st = :to",
                    ExpressionAttributeNames={"#st": ca.STATUS},
                    ExpressionAttributeValues={":to": {"S": ca.ApprovalStatus.TIMED_OUT.value}})
                raise Conflict(f"the approval {approval.step} of {execution} is no longer waiting (it timed out, or "
                               "the run ended)", {"execution": execution}) from None

        self.control.runs.audited(who, event, reason, act)
        return self.waiting_or_decided(execution, approval.step)

    def waiting_or_decided(self, execution: str, step: str) -> Approval:
        return next(a for a in self.of_run(execution) if a.step == step)




@dataclass(frozen=True)
class Reminder:
    """One approval request or reminder sent by :class:`ApprovalReminders` (``number``: the count after it, 1 for the request)."""

    job: str
    execution: str
    step: str
    number: int


class ApprovalReminders:
    """The periodic check's part for approvals: each pending approval's request once, as soon as
    a pass sees it, then a reminder every ``remind`` while nobody decided, through the notifier
    like every alert (an APPROVAL message to the approval's channel, else the job's). One per
    interval: a pass that finds several intervals gone (the platform was down) sends one and
    counts them all; the count is a conditional write (``reminders_sent`` as read), so two
    checkers never both send, and a publish that fails takes the count back before the error
    propagates (never a reminder counted and not sent)."""

    def __init__(self, control: ControlPlane, sns: Any, topic_arn: str, clock: Any = None):
        from jobplane.contract.clock import utc_now

        self.approvals, self.sns, self.topic_arn = Approvals(control), sns, topic_arn
        self.clock = clock or utc_now

    def due(self, a: Approval, now: datetime) -> int | None:
        """The count ``a`` should have after this pass, if a message is due now (None: nothing)."""
        if a.reminders_sent == 0:
            return 1 if not a.remind_seconds else 1 + max(0, int((now - a.asked).total_seconds() // a.remind_seconds))
        if not a.remind_seconds or now >= a.timeout_at:
            return None
        intervals = int((now - a.asked).total_seconds() // a.remind_seconds)
        return intervals + 1 if intervals + 1 > a.reminders_sent else None

    def check(self) -> list[Reminder]:
        now = self.clock()
        sent: list[Reminder] = []
        for a in self.approvals.pending():
            count = self.due(a, now)
            if count is None or not self._count(a, count):
                continue
            try:
                self._publish(a, now, reminder=a.reminders_sent > 0)
            except BaseException:
                self._count(a, a.reminders_sent, was=count)  # not sent: the next pass sends it
                raise
            sent.append(Reminder(a.job, a.execution, a.step, count))
        return sent

    def _count(self, a: Approval, count: int, was: int | None = None) -> bool:
        ddb = self.approvals.context.ddb
        try:
            ddb.update_item(
                TableName=self.approvals._table, Key={"pk": {"S": ca.pk(a.execution)}, "sk": {"S": a.step}},
                UpdateExpression=f"SET {ca.REMINDERS} = :n",
                ConditionExpression=f"#st = :pending AND {ca.REMINDERS} = :was",
                ExpressionAttributeNames={"#st": ca.STATUS},
                ExpressionAttributeValues={":n": {"N": str(count)}, ":pending": {"S": ca.ApprovalStatus.PENDING.value},
                                           ":was": {"N": str(a.reminders_sent if was is None else was)}})
        except ddb.exceptions.ConditionalCheckFailedException:
            return False  # decided meanwhile, or another checker sent it
        return True

    def _publish(self, a: Approval, now: datetime, reminder: bool) -> None:
        from jobplane.contract.clock import iso_millis
        from jobplane.contract.notifications import NotificationMessage, Outcome, publish

        entry = self.approvals.context.entries.get(a.job)
        view = self.approvals.control.execution(a.execution, a.job)
        who = ", ".join(a.approvers) or f"team {a.team}"
        waited = int((now - a.asked).total_seconds())
        words = (f"{a.job} waits for approval of step {a.step}" + (f": {a.shown_prompt()}" if a.prompt else "")
                 + f"\nApprovers: {who}" + (f" (four eyes: not {a.started_by})" if a.four_eyes else "")
                 + f"\nDecide in the portal (/approvals) or with `jobplane approve|reject {a.execution} --reason ...`; "
                 f"nobody deciding by {a.timeout_at.isoformat()[:16]} UTC means {a.on_timeout}.")
        publish(self.sns, self.topic_arn, NotificationMessage(
            version=1, event="APPROVAL", job=a.job, team=a.team, execution=a.execution,
            execution_arn=view.execution_arn, trigger=view.input.trigger, scheduled_time=view.input.scheduled_time,
            requested_by=view.input.requested_by, started_at=view.started_at, finished_at=iso_millis(now),
            outcome=Outcome(status="WAITING_APPROVAL", step=a.step),
            channels=[a.channel] if a.channel else (list(entry.notify.channels) if entry else []),
            events=None, runbook=entry.runbook.model_dump() if entry and entry.runbook else None, error=words,
            reminder=f"waiting {waited // 3600}h {waited % 3600 // 60}m" if reminder else None))
