"""Approval steps (issue 68 part 3, docs/dsl.md "Approval steps"): a run waits on a
``.waitForTaskToken`` Task until a person allowed approves or rejects it through the one platform
function (platform/approvals.py ``decide``), or its timeout takes its ``on_timeout``; on the local
AWS with the runner as a real subprocess."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, Repo, served
from jobplane.contract import execution_input
from jobplane.platform.approvals import Approval, Approvals
from jobplane.platform.control import ControlPlane, Forbidden
from jobplane.platform.control.access import Access
from jobplane.platform.local.engine import LocalAWS

SIGN_OFF = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'month-end-invoices',
  team: 'billing',
  params: { tenants: 3 },
  steps: [
    jp.python('close', 'sample_apps.progress_steps:close_tenants'),
    jp.approval('sign-off', { approvers: ['finance', 'aiko@example.com'], four_eyes: true,
                              prompt: 'Send {close.invoices_sent} invoices?', timeout: '%(timeout)s',
                              on_timeout: '%(on_timeout)s' }),
    jp.shell('send', ['sh', '-c', 'echo sent']),
  ],
}
"""
#: No approvers named: whoever may act on the job's team decides (an operator's AWS identity too).
ANY = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'sign-any',
  team: 'billing',
  steps: [jp.approval('go-ahead', { prompt: 'Go ahead?' }), jp.shell('send', ['sh', '-c', 'echo sent'])],
}
"""
TEAMS = """
[teams.finance]
channel = "#finance"
members = ["mei@example.com"]
"""


def _job(name: str, timeout: str = "4h", on_timeout: str = "reject") -> str:
    return (SIGN_OFF % {"timeout": timeout, "on_timeout": on_timeout}).replace("month-end-invoices", name)


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane, Access]]:
    from jobplane.contract.config import load_config

    repo = Repo(tmp_path_factory.mktemp("repo"))
    toml = (repo.path / "jobplane.toml").read_text()
    toml = toml.replace('members = ["aiko@example.com"]', 'members = ["aiko@example.com", "kenji@example.com"]')
    (repo.path / "jobplane.toml").write_text(toml + TEAMS)
    repo.write("jobs/billing/month-end-invoices.jsonnet", _job("month-end-invoices"))
    repo.write("jobs/billing/sign-or-go.jsonnet", _job("sign-or-go", "3s", "approve"))
    repo.write("jobs/billing/sign-or-stop.jsonnet", _job("sign-or-stop", "3s", "reject"))
    repo.write("jobs/billing/sign-or-fail.jsonnet", _job("sign-or-fail", "3s", "fail"))
    repo.write("jobs/billing/sign-any.jsonnet", ANY)
    repo.write("jobs/billing/sign-by-noon.jsonnet", ANY.replace("sign-any", "sign-by-noon").replace(
        "  team: 'billing',\n", "  team: 'billing',\n  schedule: 'cron(0 9 * * ? *)',\n  timezone: 'Asia/Tokyo',\n"
        "  deadline: '3h',\n  policy: jp.policy.ALWAYS_RUN,\n"))
    repo.write("jobs/billing/sign-remind.jsonnet", ANY.replace("sign-any", "sign-remind").replace(
        "{ prompt: 'Go ahead?' }", "{ prompt: 'Go ahead?', remind: '5m', timeout: '1h', channel: '#accounting' }"))
    # the example month-end job as the repository has it (its python steps: examples/billing/invoices.py)
    repo.write("jobs/billing/month-end-example.jsonnet", (ROOT / "jobs" / "billing" / "month-end-invoices.jsonnet")
               .read_text().replace("name: 'month-end-invoices'", "name: 'month-end-example'"))
    examples = tmp_path_factory.mktemp("examples-data")
    with served(repo, PYTHONPATH=f"{ROOT / 'tests'}:{ROOT}", EXAMPLES_DATA_DIR=str(examples)) as (aws, control):
        yield aws, control, Access.from_config(load_config(repo.path))


def _waiting(aws: LocalAWS, approvals: Approvals, job: str, by: str) -> tuple[str, str, Approval]:
    arn = aws.start(job, execution_input.manual(by))
    name = arn.rsplit(":", 1)[1]
    deadline = time.monotonic() + 300  # a hang guard
    while not (found := [a for a in approvals.of_run(name) if a.pending]):
        assert time.monotonic() < deadline, "the run never asked for its approval"
        assert aws.client("stepfunctions").describe_execution(executionArn=arn)["status"] == "RUNNING"
        time.sleep(0.1)
    return arn, name, found[0]


def _record(control: ControlPlane, name: str) -> dict[str, Any]:
    item = control.context.ddb.get_item(TableName=control.context.repo.table,
                                        Key={"pk": {"S": f"EXEC#{name}"}, "sk": {"S": "EXEC"}}, ConsistentRead=True)
    return dict(item.get("Item") or {})


def _ran(aws: LocalAWS, arn: str) -> list[str]:
    events = aws.client("stepfunctions").get_execution_history(executionArn=arn, maxResults=1000)["events"]
    return [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]


def test_a_run_waits_for_its_approval_and_an_approve_goes_on(platform: tuple[LocalAWS, ControlPlane, Access]) -> None:
    """The run asks (its record names the step, the approvers and the prompt with the metric the
    earlier step reported, never the token), waits, and goes on to its next step once a member
    of an approver team approves; the decision is audited and a second one is refused."""
    aws, control, access = platform
    approvals = Approvals(control)
    arn, name, approval = _waiting(aws, approvals, "month-end-invoices", "aiko@example.com")
    assert (approval.step, approval.approvers, approval.four_eyes, approval.started_by) == (
        "sign-off", ("finance", "aiko@example.com"), True, "aiko@example.com")
    assert approval.shown_prompt() == "Send 21 invoices?"
    assert "task_token" not in str(approval.as_json()) and "token" not in approval.as_json()
    assert [a.execution for a in approvals.pending(access.person("mei@example.com"))] == [name]
    assert approvals.pending(access.person("ben@example.com")) == []  # another team's member: not in their inbox
    decided = approvals.decide(name, access.person("mei@example.com"), "approve", "totals match the ledger",
                               via="cli")
    assert (decided.status, decided.decided_by, decided.via) == ("APPROVED", "mei@example.com", "cli")
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"
    assert _record(control, name)["status"]["S"] == "SUCCEEDED"
    assert "send" in _ran(aws, arn)
    [entry] = [e for e in control.audit(500) if e.execution == name and e.action == "approve"]
    assert (entry.actor, entry.reason) == ("mei@example.com", "totals match the ledger")
    with pytest.raises(Exception, match="already decided: APPROVED by mei@example.com"):
        approvals.decide(name, access.person("aiko@example.com"), "reject", "too late")


def test_a_reject_ends_the_run_rejected_without_a_failure(platform: tuple[LocalAWS, ControlPlane, Access]) -> None:
    aws, control, access = platform
    approvals = Approvals(control)
    arn, name, _ = _waiting(aws, approvals, "month-end-invoices", "kenji@example.com")
    with pytest.raises(Exception, match="a reason is required"):
        approvals.decide(name, access.person("aiko@example.com"), "reject", "")
    approvals.decide(name, access.person("aiko@example.com"), "reject", "ledger off by one invoice", via="portal")
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"  # no execution failure: no failure alert either
    aws.wait_reconciled(arn, timeout=600)  # and the reconciler leaves its record as the run wrote it
    record = _record(control, name)
    assert (record["status"]["S"], record["failed_step"]["S"]) == ("REJECTED", "sign-off")
    assert "gsi2pk" not in record  # not in the failures feed
    assert "send" not in _ran(aws, arn) and "Notify failure" not in _ran(aws, arn)
    state = control.context.ddb.get_item(TableName=control.context.repo.table,
                                         Key={"pk": {"S": "JOB#month-end-invoices"}, "sk": {"S": "STATE"}},
                                         ConsistentRead=True)["Item"]
    assert state["last_status"]["S"] == "REJECTED" and "blocked_by" not in state  # no failure block
    [entry] = [e for e in control.audit(500) if e.execution == name and e.action == "reject"]
    assert entry.actor == "aiko@example.com"


def test_four_eyes_refuses_the_runs_starter_and_others_not_allowed(
        platform: tuple[LocalAWS, ControlPlane, Access]) -> None:
    aws, control, access = platform
    approvals = Approvals(control)
    arn, name, _ = _waiting(aws, approvals, "month-end-invoices", "aiko@example.com")
    with pytest.raises(Forbidden, match="four eyes: aiko@example.com started this run"):
        approvals.decide(name, access.person("aiko@example.com"), "approve", "")
    with pytest.raises(Forbidden, match="kenji@example.com is not among the approvers"):
        approvals.decide(name, access.person("kenji@example.com"), "approve", "")  # billing, but not an approver
    with pytest.raises(Forbidden, match="ben@example.com may read but not act on team billing"):
        approvals.decide(name, access.person("ben@example.com"), "approve", "")  # the one rule
    with pytest.raises(Forbidden, match="dev@localhost is not among the approvers"):
        approvals.decide(name, access.person("dev@localhost"), "approve", "")  # an admin, not named
    [still] = approvals.of_run(name)
    assert still.pending and not [e for e in control.audit(500) if e.execution == name]
    approvals.decide(name, access.person("mei@example.com"), "approve", "")
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"


@pytest.mark.parametrize(("job", "status", "ran_send"), [
    ("sign-or-go", "SUCCEEDED", True), ("sign-or-stop", "REJECTED", False), ("sign-or-fail", "TIMED_OUT", False)])
def test_an_approval_nobody_decides_takes_its_on_timeout(platform: tuple[LocalAWS, ControlPlane, Access], job: str,
                                                          status: str, ran_send: bool) -> None:
    aws, control, access = platform
    approvals = Approvals(control)
    arn, name, _ = _waiting(aws, approvals, job, "kenji@example.com")
    aws.wait(arn, timeout=600)
    record = _record(control, name)
    assert record["status"]["S"] == status
    assert ("send" in _ran(aws, arn)) is ran_send
    [approval] = approvals.of_run(name)
    assert approval.status == "TIMED_OUT" and name not in [a.execution for a in approvals.pending()]
    with pytest.raises(Exception, match="already decided: TIMED_OUT"):
        approvals.decide(name, access.person("mei@example.com"), "approve", "late")


def test_a_kinds_durations_are_the_models() -> None:
    """A kind's own fields (an approval's timeout) and the job's parse durations with one
    definition (compiler/durations.py), not a copy that could drift."""
    from jobplane.compiler import durations, model

    assert model.parse_duration is durations.parse_duration and model.Duration is durations.Duration


def test_an_approvals_options_are_checked_with_the_job_and_field_named(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write("jobs/billing/bad-sign.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'bad-sign', team: 'billing', steps: [
          jp.approval('sign-off', { on_timeout: 'shrug', timeout: '2h', remind: '1m', channel: 'finance' }),
        ] }
        """)
    result = repo.cli("validate")
    assert result.exit_code != 0
    out = result.output
    assert "bad-sign" in out and "approval.on_timeout" in out and "'shrug' is not one of reject, approve, fail" in out
    assert "approval.remind" in out and "at least 5m" in out
    assert "approval.channel" in out and "not a Slack channel" in out



def test_an_approvals_channel_and_approvers_are_checked_against_jobplane_toml(tmp_path: Path) -> None:
    """Its channel is one the team may alert (as notify.channels), each approver a declared team or
    a person: a typo would leave runs waiting for nobody."""
    repo = Repo(tmp_path)
    repo.write("jobs/billing/odd-sign.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'odd-sign', team: 'billing', steps: [
          jp.approval('sign-off', { approvers: ['billing', 'finanse', 'mei@example.com'], channel: '#growth-alerts' }),
        ] }
        """)
    result = repo.cli("validate")
    assert result.exit_code != 0
    out = result.output
    assert "odd-sign" in out and "steps[0].approval.approvers[1]" in out and "'finanse' is neither a team" in out
    assert "approvers[0]" not in out and "approvers[2]" not in out
    assert "steps[0].approval.channel" in out and "may not send to '#growth-alerts'" in out


def test_jobplane_status_shows_the_waiting_run_and_approve_and_reject_decide_it(
        platform: tuple[LocalAWS, ControlPlane, Access], tmp_path: Path) -> None:
    """The CLI as an operator on AWS runs it (--deployment): the waiting run in `jobplane status`
    and `jobplane approvals`, `jobplane approve` goes on, `jobplane reject` ends it REJECTED."""
    import json

    from operator_cli import operator_cli

    aws, control, _ = platform
    approvals = Approvals(control)
    root = Path(str(control.deployment.catalog_path)).parent

    def cli(*args: str) -> Any:
        return operator_cli(aws, control, tmp_path, root, *args)

    arn, name, _ = _waiting(aws, approvals, "sign-any", "kenji@example.com")
    status = cli("status")
    assert status.exit_code == 0, status.output
    assert f"  sign-any: {name} go-ahead: WAITING_APPROVAL since " in status.output
    assert "for team billing; reject at " in status.output and status.output.rstrip().count("Go ahead?") == 1
    [listed] = json.loads(cli("approvals", "--json").output)
    assert (listed["execution"], listed["step"], listed["prompt"]) == (name, "go-ahead", "Go ahead?")
    assert "task_token" not in json.dumps(listed)
    done = cli("approve", name, "--reason", "checked")
    assert done.exit_code == 0 and f"go-ahead of {name} (sign-any): approved" in done.output, done.output
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED" and _record(control, name)["status"]["S"] == "SUCCEEDED"
    again = cli("approve", name, "--reason", "twice")
    assert again.exit_code != 0 and "already decided: APPROVED" in again.output

    arn, name, _ = _waiting(aws, approvals, "sign-any", "kenji@example.com")
    assert cli("reject", name).exit_code != 0  # --reason is required
    done = cli("reject", name, "--reason", "not this month")
    assert done.exit_code == 0 and "rejected" in done.output, done.output
    aws.wait(arn, timeout=600)
    assert _record(control, name)["status"]["S"] == "REJECTED"
    [entry] = [e for e in control.audit(500) if e.execution == name]
    assert (entry.action, entry.reason, entry.authority) == ("reject", "not this month", "operator")
    assert cli("approvals").output.strip() == "No run waits for an approval."


def _portal(control: ControlPlane) -> Any:
    from operator_cli import operator_portal

    return operator_portal(control)


def test_the_portal_inbox_shows_what_each_person_may_decide_and_its_form_decides(
        platform: tuple[LocalAWS, ControlPlane, Access]) -> None:
    """Each person's /approvals inbox lists what they may decide (the prompt with the reported
    metric), others see it read-only; the execution page says WAITING_APPROVAL; the starter's
    approve is refused (four eyes: 403, nothing changes); another approver's reject ends the run."""
    from fastapi.testclient import TestClient

    from portal_kit import as_user

    aws, control, _ = platform
    approvals = Approvals(control)
    arn, name, _ = _waiting(aws, approvals, "month-end-invoices", "aiko@example.com")
    with TestClient(_portal(control)) as client:
        mine = client.get("/approvals", headers=as_user("mei@example.com")).text
        inbox = mine.split("Waiting for others")[0]
        assert f'data-approval="{name}" data-step="sign-off" data-status="PENDING"' in inbox
        assert "Send 21 invoices?" in inbox and "four eyes: not aiko@example.com" in inbox
        theirs = client.get("/approvals", headers=as_user("aiko@example.com")).text  # the starter: not theirs
        assert f'data-approval="{name}" data-step' not in theirs.split("Waiting for others")[0]
        assert f'<tr data-approval="{name}">' in theirs
        assert "task_token" not in mine and "task_token" not in theirs
        page = client.get(f"/executions/{name}", headers=as_user("aiko@example.com")).text
        assert "<strong>WAITING_APPROVAL</strong>" in page and "Send 21 invoices?" in page

        def token(user: str) -> str:  # the form's token, as the page the user would post from carries it
            return str(client.app.state.portal.csrf.token(user))  # type: ignore[attr-defined]

        assert 'name="csrf_token"' in inbox and f'action="/approvals/{name}/sign-off/reject"' in inbox

        refused = client.post(f"/approvals/{name}/sign-off/approve", headers=as_user("aiko@example.com"),
                              data={"csrf_token": token("aiko@example.com"), "reason": ""}, follow_redirects=False)
        assert refused.status_code == 403 and "four eyes" in refused.text
        assert approvals.of_run(name)[0].pending
        done = client.post(f"/approvals/{name}/sign-off/reject", headers=as_user("mei@example.com"),
                           data={"csrf_token": token("mei@example.com"), "reason": "invoices double-counted"},
                           follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == f"/executions/{name}?notice=rejected"
    aws.wait(arn, timeout=600)
    assert _record(control, name)["status"]["S"] == "REJECTED"
    [decided] = approvals.of_run(name)
    assert (decided.status, decided.decided_by, decided.via, decided.reason) == (
        "REJECTED", "mei@example.com", "portal", "invoices double-counted")


def test_a_decision_calls_what_the_portal_role_allows_and_no_more(platform: tuple[LocalAWS, ControlPlane, Access]) -> None:
    """The calls a decision and the inbox make (the record's Query and conditional write, the
    step progress read, the audit entry, SendTaskSuccess / SendTaskFailure) are allowed by the
    base module's portal role (and so the operator policy made of it), and its DecideApprovals
    statement is needed by them; the state machine's own role has no SendTask* at all."""
    import base_module as bm
    from iam_calls import APPROVAL_STATEMENTS, calls_into, iam_calls
    from iam_policy import denied_calls

    aws, control, access = platform
    approvals = Approvals(control)
    recorded: list[dict[str, Any]] = []
    for decision in ("approve", "reject"):
        arn, name, _ = _waiting(aws, approvals, "month-end-invoices", "kenji@example.com")
        with calls_into(recorded):
            approvals.pending(access.person("mei@example.com"))
            approvals.decide(name, access.person("mei@example.com"), decision, "checked")
        aws.wait(arn, timeout=600)
    calls = iam_calls(recorded)
    assert {"states:SendTaskSuccess", "states:SendTaskFailure", "dynamodb:UpdateItem", "dynamodb:Query"} <= {
        c.action for c in calls}
    for role in ("portal", "operator"):
        statements = bm.policy_statements(role, {"name_prefix": control.deployment.name_prefix})
        assert denied_calls(statements, calls) == []
        without = [s for s in statements if s.get("sid") not in APPROVAL_STATEMENTS]
        assert denied_calls(without, calls) != []  # DecideApprovals is what allows them
    compiled = (Path(str(control.deployment.catalog_path)) / "teams" / "billing"
                / "month-end-invoices.job.tf.json").read_text()
    assert "states:SendTask" not in compiled and "ApprovalRecords" in compiled


def test_the_month_end_example_waits_for_its_sign_off_and_sends_once_approved(
        platform: tuple[LocalAWS, ControlPlane, Access]) -> None:
    """jobs/billing/month-end-invoices.jsonnet as committed: it totals the invoices, asks billing
    to sign the totals off (the prompt shows the totals the step reported), and sends them once a
    member other than the run's starter approves."""
    aws, control, access = platform
    approvals = Approvals(control)
    arn, name, approval = _waiting(aws, approvals, "month-end-example", "aiko@example.com")
    invoices, total = approval.metrics["total.invoices"], approval.metrics["total.total_yen"]
    assert invoices == 120 and approval.shown_prompt() == f"Send 120 invoices totalling {int(total):,} yen?"
    with pytest.raises(Forbidden, match="four eyes"):
        approvals.decide(name, access.person("aiko@example.com"), "approve", "")
    approvals.decide(name, access.person("kenji@example.com"), "approve", "totals checked against the ledger")
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"
    assert _ran(aws, arn)[-2:] == ["send", "Finish"]


def test_the_request_and_each_reminder_are_sent_once_an_interval_while_nobody_decides(
        platform: tuple[LocalAWS, ControlPlane, Access]) -> None:
    """The periodic check (a clock it is given) sends the approval's request once, then one
    reminder per `remind` interval (one for several intervals missed), to the approval's channel
    through the notifier's topic, whatever events the job alerts on; nothing once decided. Its
    calls are the periodic role's."""
    import json
    from datetime import timedelta

    import base_module as bm
    from iam_calls import calls_into, iam_calls
    from iam_policy import denied_calls
    from jobplane.contract.notifications import NotificationMessage, subscribed
    from jobplane.contract.statuses import DEFAULT_EVENTS
    from jobplane.platform.approvals import ApprovalReminders

    aws, control, access = platform
    sqs = aws.client("sqs")
    queue = sqs.create_queue(QueueName="approval-reminders")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    aws.client("sns").subscribe(TopicArn=control.deployment.topic_arn, Protocol="sqs", Endpoint=queue_arn,
                                Attributes={"RawMessageDelivery": "true"})
    approvals = Approvals(control)
    arn, name, approval = _waiting(aws, approvals, "sign-remind", "kenji@example.com")
    clock = [approval.asked + timedelta(seconds=10)]
    check = ApprovalReminders(control, aws.client("sns"), control.deployment.topic_arn, clock=lambda: clock[0])

    def sent() -> list[tuple[str, int]]:
        return [(r.execution, r.number) for r in check.check() if r.execution == name]

    recorded: list[dict[str, Any]] = []
    with calls_into(recorded):
        assert sent() == [(name, 1)]  # the request
    assert sent() == []  # once
    clock[0] = approval.asked + timedelta(minutes=4)
    assert sent() == []
    clock[0] = approval.asked + timedelta(minutes=5)
    assert sent() == [(name, 2)]  # the first reminder
    clock[0] = approval.asked + timedelta(minutes=17)
    assert sent() == [(name, 4)]  # one for the intervals at 10m and 15m
    messages = []
    while len(messages) < 3:
        got = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=5, MaxNumberOfMessages=10).get("Messages", [])
        messages += [NotificationMessage.model_validate_json(m["Body"]) for m in got]
        messages = [m for m in messages if m.execution == name]
    request, *reminders = messages
    assert (request.event, request.outcome.status, request.outcome.step, request.channels, request.reminder) == (
        "APPROVAL", "WAITING_APPROVAL", "go-ahead", ["#accounting"], None)
    assert request.error is not None and "Go ahead?" in request.error and f"jobplane approve|reject {name}" in request.error
    assert [r.reminder for r in reminders] == ["waiting 0h 5m", "waiting 0h 17m"]
    assert subscribed(request, tuple(e.value for e in DEFAULT_EVENTS))  # whatever the job alerts on
    assert "task_token" not in json.dumps([m.model_dump() for m in messages])
    approvals.decide(name, access.person("aiko@example.com"), "approve", "")
    clock[0] = approval.asked + timedelta(minutes=30)
    assert sent() == []  # decided: no more
    aws.wait(arn, timeout=600)
    calls = iam_calls(recorded)
    assert {c.action for c in calls} >= {"dynamodb:Query", "dynamodb:UpdateItem", "sns:Publish"}
    assert denied_calls(bm.policy_statements("slow", {"name_prefix": control.deployment.name_prefix}), calls) == []


def test_a_run_waiting_for_approval_raises_its_deadline_in_time(platform: tuple[LocalAWS, ControlPlane, Access]) -> None:
    """The wait counts against the job's deadline: a scheduled run still waiting for its approval
    at the deadline is a fire not SUCCEEDED, so the deadline checker (a clock it is given) raises
    DEADLINE then, once, long before the approval's own timeout (1 day); approved later, it ends."""
    from datetime import timedelta

    from jobplane.platform.deadlines import DeadlineWatch, deployed_since, fires

    aws, control, access = platform
    entry = control.context.entries["sign-by-noon"]
    created = deployed_since(control.context, entry)
    assert created is not None
    fire = fires(control.context, entry, created, created + timedelta(days=2))[0]
    approvals = Approvals(control)
    arn = aws.start("sign-by-noon", execution_input.scheduled(fire))
    name = arn.rsplit(":", 1)[1]
    deadline = time.monotonic() + 300  # a hang guard
    while not [a for a in approvals.of_run(name) if a.pending]:
        assert time.monotonic() < deadline, "the run never asked for its approval"
        time.sleep(0.1)

    def watch(at: Any) -> list[str]:
        return DeadlineWatch(control.reads, aws.client("sns"), control.deployment.topic_arn, clock=lambda: at).check(
            {"sign-by-noon"})

    assert watch(fire + timedelta(minutes=5)) == []  # waiting, in time
    assert watch(fire + timedelta(hours=3, minutes=1)) == [f"sign-by-noon {execution_input.iso(fire)} DEADLINE"]
    assert watch(fire + timedelta(hours=3, minutes=6)) == []  # once
    approvals.decide(name, access.person("aiko@example.com"), "approve", "late, but right")
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"
    assert _record(control, name)["status"]["S"] == "SUCCEEDED"
