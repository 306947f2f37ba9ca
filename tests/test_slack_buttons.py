"""Buttons on the alert (issue 68 part 2), end to end on `jobplane dev`'s platform: the real
runner, the local engine, the portal's /slack/interactions route over HTTP, the local queue and
the worker, and the Slack Web API as a real local HTTP server (slack_app_receiver.py). Clicks are
what `jobplane dev-slack-click` sends: Slack's payloads, signed with the app's signing secret."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Iterator

import pytest

from devkit import FakeClock, make_repo, utc
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.slack_actions import clicks
from jobplane.platform.slack_actions.store import AlertButtons, AlertRecord
from slack_app_receiver import BOT_TOKEN, SlackApi, person

SECRET = "8f14e45fceea167a5a36dedd4bea2543"
APP, WORKSPACE = "A0JOBPLANE", "T0WORKSPACE"
AIKO, BEN = "U0AIKO0001", "U0BEN00001"  # billing's member (by her Slack e-mail), growth's (by the map)
SLACK_TOML = f"""
[slack]
app_id = "{APP}"
team_id = "{WORKSPACE}"
users = {{ {BEN} = "ben@example.com" }}
"""


#: An approval step Aiko may decide (a named approver): Ben (growth) may not.
SIGN_OFF = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'sign-slack',
  team: 'billing',
  steps: [jp.approval('sign-off', { approvers: ['aiko@example.com'], prompt: 'Send the invoices?' }),
          jp.shell('send', ['sh', '-c', 'echo sent'])],
}
"""


def wait_for(predicate, timeout: float = 90.0, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackApi]:
    api = SlackApi({AIKO: person(AIKO, "aiko@example.com", WORKSPACE)})
    yield api
    api.close()


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, slack: SlackApi) -> Iterator[DevPlatform]:
    root = tmp_path_factory.mktemp("buttons") / "repo"
    make_repo(root)
    (root / "jobplane.toml").write_text((root / "jobplane.toml").read_text() + SLACK_TOML)
    (root / "jobs" / "billing" / "sign-slack.jsonnet").write_text(SIGN_OFF)
    p = DevPlatform(load_config(root), root.parent / "data", 0, 0, clock=FakeClock(utc("2027-03-01T10:00:30")),
                    slack_bot_token=BOT_TOKEN, slack_api_url=slack.api_url, slack_signing_secret=SECRET,
                    run_scheduler=False, run_services=False, snapshot_interval=3600).start()
    yield p
    p.stop()


def failed_alert(platform: DevPlatform) -> tuple[str, AlertRecord]:
    """A run of flaky-load that fails at its step 'load', and its alert with buttons as posted."""
    assert platform.control is not None
    control = platform.control
    # flaky-load is SKIP_IF_RUNNING: a re-run an earlier test clicked may still hold its claim
    # (on a loaded machine), and a run started now would be skipped, with no failure to alert
    wait_for(lambda: not ((state := control.repo.job_state("flaky-load")) and state.running),
             what="flaky-load's earlier runs to end")
    name = control.run_now("flaky-load", "dev@localhost")
    store = store_of(platform)
    alert = wait_for(lambda: next(iter(store.of_execution(name)), None), what=f"{name}'s alert")
    record = wait_for(lambda: (r := store.get(alert)) and r.ts and r, what="the alert's post")
    return name, record


def store_of(platform: DevPlatform) -> AlertButtons:
    assert platform.control is not None
    return AlertButtons(platform.control.ddb, platform.control.deployment.table)


def url(platform: DevPlatform) -> str:
    return f"{platform.portal_url}/slack/interactions"


def handled(platform: DevPlatform, count: int) -> list[str]:
    assert platform.slack_actions is not None
    feed = platform.slack_actions
    return wait_for(lambda: len(feed.handled) >= count and feed.handled[:], what=f"{count} interactions handled")


def audit_of(platform: DevPlatform, execution: str | None = None, action: str | None = None) -> list:  # type: ignore[type-arg]
    assert platform.control is not None
    return [e for e in platform.control.audit(500) if (execution is None or e.execution == execution
                                                       or json.loads(e.details).get("rerun_of") == execution)
            and (action is None or e.action == action)]


def test_the_failure_alert_carries_buttons_whose_value_is_an_opaque_id(platform: DevPlatform, slack: SlackApi) -> None:
    name, record = failed_alert(platform)
    posted = next(b for b in slack.of("chat.postMessage") if record.id in json.dumps(b.get("blocks")))
    buttons = next(b for b in posted["blocks"] if b.get("block_id") == "jobplane_buttons")["elements"]
    assert [b["action_id"] for b in buttons] == ["jobplane:rerun_from_failed_step", "jobplane:rerun",
                                                 "jobplane:acknowledge", "jobplane:snooze_1d"]
    # each carries the alert's random id alone: not the run, not the job, nothing that grants anything
    assert {b["value"] for b in buttons} == {record.id} and len(record.id) >= 22
    assert name not in record.id and "flaky" not in record.id and BOT_TOKEN not in json.dumps(posted["blocks"])
    assert (record.execution, record.job, record.channel) == (name, "flaky-load", "C0ALERTS01")


def test_a_click_reruns_the_failed_run_from_its_failed_step(platform: DevPlatform, slack: SlackApi) -> None:
    """The done-when: a failed run re-run from its failed step by a click, as the person who
    clicked (mapped by Slack's confirmed e-mail), audited via Slack with the reason, and the alert
    updated in place."""
    assert platform.control is not None
    name, record = failed_alert(platform)
    before = len(platform.slack_actions.handled) if platform.slack_actions else 0
    status, _ = clicks.send(url(platform), SECRET, clicks.body_of(
        clicks.click(platform.config.slack, AIKO, record, "rerun_from_failed_step")))
    assert status == 200
    opened = wait_for(lambda: [v for v in slack.of("views.open") if record.id in json.dumps(v)], what="the modal")
    view = opened[0]["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert json.loads(view["private_metadata"]) == {"alert": record.id, "action": "rerun_from_failed_step"}
    status, _ = clicks.send(url(platform), SECRET, clicks.body_of(
        clicks.submission(platform.config.slack, AIKO, record, "rerun_from_failed_step", "partner API is back")))
    assert status == 200
    results = handled(platform, before + 2)[before:]
    assert results[0] == "modal opened" and results[1].startswith("done: re-run from its failed step: run ")
    [entry] = audit_of(platform, name, "rerun_from_failed_step")
    assert (entry.actor, entry.authority, entry.reason) == ("aiko@example.com", "team billing via Slack",
                                                           "partner API is back")
    rerun = platform.control.execution(entry.execution, "flaky-load")
    view_of = wait_for(lambda: (v := platform.control.execution(entry.execution, "flaky-load")) and not v.running
                       and v.record and v, what="the re-run to end")
    assert rerun.input.rerun_of == name and rerun.input.resume_from == "load"
    assert [r.step for r in view_of.timeline] == ["load"]  # prepare, which succeeded, did not run again
    update = wait_for(lambda: [u for u in slack.of("chat.update") if u.get("ts") == record.ts], what="chat.update")[-1]
    shown = json.dumps(update["blocks"])
    assert f"by <@{AIKO}> (aiko@example.com)" in shown and entry.execution in shown
    assert "jobplane:rerun_from_failed_step" not in shown and "jobplane:rerun\"" in shown  # what is left to click


def test_another_teams_member_is_refused_in_the_thread_and_audited_and_nothing_changes(
        platform: DevPlatform, slack: SlackApi) -> None:
    assert platform.control is not None
    name, record = failed_alert(platform)
    before = len(platform.slack_actions.handled) if platform.slack_actions else 0
    opened_before = len(slack.of("views.open"))
    for body in (clicks.click(platform.config.slack, BEN, record, "rerun_from_failed_step"),
                 # and a submission sent straight away, as if the modal had been opened: refused too
                 clicks.submission(platform.config.slack, BEN, record, "rerun_from_failed_step", "let me")):
        assert clicks.send(url(platform), SECRET, clicks.body_of(body))[0] == 200
    assert handled(platform, before + 2)[before:] == ["refused", "refused"]
    assert len(slack.of("views.open")) == opened_before  # no modal for him
    said = [m for m in slack.of("chat.postMessage") if m.get("thread_ts") == record.ts]
    assert len(said) == 2 and all(f"<@{BEN}>: refused: ben@example.com may read but not act on team billing" in m["text"]
                                  for m in said)
    refusals = audit_of(platform, name, "refused")
    assert [(e.actor, e.authority, json.loads(e.details)) for e in refusals] == \
        [("ben@example.com", "refused", {"asked": "rerun_from_failed_step", "via": "Slack"})] * 2
    assert audit_of(platform, name, "rerun_from_failed_step") == []  # nothing changed
    assert store_of(platform).claimed(record.id, "rerun_from_failed_step") is None
    assert not [u for u in slack.of("chat.update") if u.get("ts") == record.ts]


def test_someone_jobplane_cannot_name_is_refused_in_the_thread_and_audited_under_their_slack_id(
        platform: DevPlatform, slack: SlackApi) -> None:
    """A click by a Slack user jobplane cannot name (not in [slack] users; users.info says they
    are of another workspace, as a Slack Connect guest is): nothing is done, the thread says why,
    and the audit log has the refusal under ``slack:<user id>``."""
    assert platform.control is not None
    stranger = "U0STRANGE1"
    slack.users[stranger] = person(stranger, "guest@partner.example", "T0PARTNER1")
    name, record = failed_alert(platform)
    before = len(platform.slack_actions.handled) if platform.slack_actions else 0
    opened_before = len(slack.of("views.open"))
    body = clicks.click(platform.config.slack, stranger, record, "rerun_from_failed_step")
    assert clicks.send(url(platform), SECRET, clicks.body_of(body))[0] == 200
    assert handled(platform, before + 1)[before:] == ["unmapped"]
    assert len(slack.of("views.open")) == opened_before
    said = [m["text"] for m in slack.of("chat.postMessage") if m.get("thread_ts") == record.ts]
    assert len(said) == 1 and f"<@{stranger}>: jobplane cannot tell who you are" in said[0]
    [refusal] = audit_of(platform, name, "refused")
    assert (refusal.actor, refusal.authority, json.loads(refusal.details)) == \
        (f"slack:{stranger}", "refused", {"asked": "rerun_from_failed_step", "via": "Slack"})
    assert "not a known person" in refusal.reason
    assert store_of(platform).claimed(record.id, "rerun_from_failed_step") is None


def test_a_replayed_or_repeated_submission_acts_once(platform: DevPlatform, slack: SlackApi) -> None:
    assert platform.control is not None
    name, record = failed_alert(platform)
    assert platform.slack_actions is not None
    platform.slack_actions.stop()  # the work waits in the queue: Slack is answered before it is done
    try:
        body = clicks.body_of(clicks.submission(platform.config.slack, AIKO, record, "rerun", "rerun it"))
        signed_at = time.time()
        # the same request three times (Slack's retry, or someone replaying it within the five
        # minutes), and a second submission of the form (another view)
        answers = [clicks.send(url(platform), SECRET, body, now=signed_at) for _ in range(3)]
        answers.append(clicks.send(url(platform), SECRET, clicks.body_of(
            clicks.submission(platform.config.slack, AIKO, record, "rerun", "rerun it again"))))
        assert [a[0] for a in answers] == [200] * 4
        assert audit_of(platform, name, "rerun") == []  # answered, and nothing done yet
        results = []
        while len(results) < 4:
            before = len(platform.slack_actions.handled)
            platform.slack_actions.drain()
            results += platform.slack_actions.handled[before:]
    finally:
        platform.slack_actions.start()
    assert sorted(results) == ["already done"] * 3 + [next(r for r in results if r.startswith("done: re-run whole"))]
    [entry] = audit_of(platform, name, "rerun")
    assert entry.authority == "team billing via Slack" and entry.reason == "rerun it"
    rerun = wait_for(lambda: (v := platform.control.execution(entry.execution, "flaky-load")) and not v.running
                     and v.record and v, what="the re-run to end")  # (the job runs one at a time)
    assert rerun.input.rerun_of == name and rerun.input.resume_from is None
    assert store_of(platform).claimed(record.id, "rerun").actor == "aiko@example.com"


def test_unsigned_stale_and_foreign_requests_are_refused_before_anything_is_queued(platform: DevPlatform) -> None:
    _, record = failed_alert(platform)
    app = platform.config.slack
    body = clicks.body_of(clicks.submission(app, AIKO, record, "acknowledge", "x"))
    assert clicks.send(url(platform), "another-apps-secret-0000", body)[0] == 401
    assert clicks.send(url(platform), SECRET, body, now=time.time() - 301)[0] == 401  # older than five minutes
    assert clicks.send(url(platform), SECRET, body, now=time.time() + 301)[0] == 401
    from dataclasses import replace

    other_app = clicks.body_of(clicks.submission(replace(app, app_id="A0OTHERAPP"), AIKO, record, "acknowledge", "x"))
    other_ws = clicks.body_of(clicks.submission(replace(app, team_id="T0ELSEWHERE"), AIKO, record, "acknowledge", "x"))
    assert clicks.send(url(platform), SECRET, other_app)[0] == 403
    assert clicks.send(url(platform), SECRET, other_ws)[0] == 403
    # a body changed after signing
    import urllib.request
    from jobplane.platform.slack_actions.signing import signed_headers

    headers = signed_headers(SECRET, body)
    request = urllib.request.Request(url(platform), data=body.replace(b"acknowledge", b"snooze_1d"), method="POST",
                                     headers=headers)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    assert store_of(platform).claimed(record.id, "acknowledge") is None


def test_the_base_modules_roles_allow_every_call_of_the_ingress_the_worker_and_the_buttons_and_no_more(
        platform: DevPlatform) -> None:
    """The ingress, the worker and the notifier's buttons on AWS run this same code under the
    base module's roles (terraform/platform/slack_actions.tf): each call they make here is one
    their role allows (a re-run from the failed step, a refusal, a repeated submission), and each
    statement of the ingress's and the buttons' is needed by one."""
    import dataclasses
    from typing import Any

    import base_module as bm
    from iam_calls import calls_into, iam_calls
    from iam_policy import denied_calls
    from jobplane.platform.slack_actions.ingress import Ingress

    assert platform.control is not None and platform.slack_actions is not None and platform.aws is not None
    prefix = platform.config.name_prefix
    tfvars = {"name_prefix": prefix}
    name, record = failed_alert(platform)
    feed = platform.slack_actions
    sqs = platform.aws.client("sqs")
    queue = sqs.get_queue_url(QueueName=f"{prefix}-slack-actions")["QueueUrl"]
    ingress_calls: list[dict[str, Any]] = []
    ingress = Ingress(SECRET, platform.config.slack, lambda text: sqs.send_message(QueueUrl=queue, MessageBody=text))
    feed.stop()
    try:
        app = platform.config.slack
        with calls_into(ingress_calls):
            for payload in (clicks.click(app, AIKO, record, "rerun_from_failed_step"),
                            clicks.submission(app, AIKO, record, "rerun_from_failed_step", "fixed"),
                            clicks.submission(app, AIKO, record, "rerun_from_failed_step", "fixed"),
                            clicks.click(app, BEN, record, "rerun")):
                body = clicks.body_of(payload)
                from jobplane.platform.slack_actions.signing import signed_headers

                assert ingress.accept(signed_headers(SECRET, body), body)[0] == 200
        worker_calls: list[dict[str, Any]] = []
        results: list[str] = []
        with calls_into(worker_calls):
            while len(results) < 4:
                before = len(feed.handled)
                feed.drain()
                results += feed.handled[before:]
    finally:
        feed.start()
    assert sorted(r.split(":")[0] for r in results) == ["already done", "done", "modal opened", "refused"]
    bucket = bm.resolve("${aws_s3_bucket.catalog.id}", tfvars)
    for c in worker_calls:
        if c["service"] == "s3":  # the local engine's catalog bucket, by the base module's name
            c["params"] = dict(c["params"], Bucket=bucket)
    worker = iam_calls(worker_calls)
    assert {c.action for c in worker} >= {"dynamodb:GetItem", "dynamodb:PutItem", "states:StartExecution",
                                          "sqs:ReceiveMessage", "sqs:DeleteMessage"}
    statements = bm.policy_statements("slack_worker", tfvars)
    assert denied_calls(statements, worker) == []
    # each statement is needed by one of these calls, but those of what AWS calls for the function
    # (its logs, traces), of its start (the bot token) and of the catalog (jobplane dev's control
    # plane has it in memory; on AWS the worker reads its job's entry as the periodic Lambda does),
    # and an approval's decision (proven needed by the approval test below)
    for i, statement in enumerate(statements):
        if statement.get("sid") not in ("Tracing", "Logs", "BotToken", "ReadCatalog", "ListCatalog", "DecideApprovals"):
            assert denied_calls(statements[:i] + statements[i + 1:], worker), statement.get("sid")
    ingress_iam = iam_calls(ingress_calls)
    assert {c.action for c in ingress_iam} == {"sqs:SendMessage"}
    ingress_statements = bm.policy_statements("slack_ingress", tfvars)
    assert denied_calls(ingress_statements, ingress_iam) == []
    for i, statement in enumerate(ingress_statements):  # its secret is read once, at a cold start
        if statement.get("sid") not in ("Tracing", "Logs", "SigningSecret", "QueueKey"):
            assert denied_calls(ingress_statements[:i] + ingress_statements[i + 1:], ingress_iam), statement.get("sid")
    # the notifier's two writes per post, under its SlackButtons statement alone
    notifier_calls: list[dict[str, Any]] = []
    with calls_into(notifier_calls):
        store = store_of(platform)
        alert = store.mint("flaky-load", "billing", name, "FAILED", ("rerun",), None, [])
        store.posted(alert, "C0ALERTS01", "1700000000.000999")
    buttons = bm.policy_statements("notifier_slack_buttons", tfvars)
    # each write's partition key, as IAM sees it (dynamodb:LeadingKeys)
    keys = [(c["params"].get("Item") or c["params"]["Key"])["pk"]["S"] for c in notifier_calls]
    notifier = [dataclasses.replace(call, context={"dynamodb:LeadingKeys": [key]})
                for call, key in zip(iam_calls(notifier_calls), keys)]
    assert {k.split("#")[0] for k in keys} == {"SLACKALERT", "SLACKRUN"}
    assert denied_calls(buttons, notifier) == [] and denied_calls([], notifier)
    # and nothing else of the table: a job's state is not the buttons' to write
    from iam_policy import Call

    job_item = Call("dynamodb:PutItem", bm.resolve("${aws_dynamodb_table.jobplane.arn}", tfvars),
                    {"dynamodb:LeadingKeys": ["JOB#flaky-load"]}, "a job's state")
    assert denied_calls(buttons, [job_item])


def test_jobplane_dev_slack_click_snoozes_from_the_alert_and_a_refused_action_is_answered_in_the_thread(
        platform: DevPlatform, slack: SlackApi, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command a developer uses: the click and the submission, signed, over HTTP to the
    running platform; then an action the job's state refuses (flaky-load's policy does not block
    on failure: nothing to acknowledge) is answered in the thread with the control plane's
    reason, changes nothing, and leaves the button to be tried again."""
    from click.testing import CliRunner

    from jobplane.cli.app import main

    assert platform.control is not None and platform.slack_actions is not None
    name, record = failed_alert(platform)
    before = len(platform.slack_actions.handled)
    monkeypatch.setenv("JOBPLANE_SLACK_SIGNING_SECRET", SECRET)
    result = CliRunner().invoke(main, ["--root", str(platform.config.root), "dev-slack-click", name, "--action",
                                       "snooze_1d", "--user", AIKO, "--reason", "partner maintenance today",
                                       "--data-dir", str(platform.data_dir)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["click: HTTP 200", "submission: HTTP 200"]
    results = handled(platform, before + 2)[before:]
    assert sorted(r.split(":")[0] for r in results) == ["done", "modal opened"]
    [entry] = [e for e in platform.control.audit(500) if e.action == "snooze" and e.reason == "partner maintenance today"]
    assert (entry.actor, entry.authority) == ("aiko@example.com", "team billing via Slack")
    assert platform.control.repo.job_state("flaky-load").snoozed_by == "aiko@example.com"
    platform.control.unsnooze("flaky-load", "aiko@example.com", "test over")  # the next tests' alerts go out
    before = len(platform.slack_actions.handled)
    body = clicks.body_of(clicks.submission(platform.config.slack, AIKO, record, "acknowledge", "looked at it"))
    assert clicks.send(url(platform), SECRET, body)[0] == 200
    [result_line] = handled(platform, before + 1)[before:]
    assert result_line.startswith("not done: flaky-load has no unacknowledged failure")
    said = [m["text"] for m in slack.of("chat.postMessage") if m.get("thread_ts") == record.ts]
    assert any("could not acknowledge: flaky-load has no unacknowledged failure" in t for t in said)
    assert store_of(platform).claimed(record.id, "acknowledge") is None  # may be tried again
    assert not [e for e in platform.control.audit(500) if e.action == "acknowledge_failure" and e.execution == name]


def test_an_approval_is_approved_from_its_request_in_slack_by_a_named_approver_only(
        platform: DevPlatform, slack: SlackApi) -> None:
    """The approval request carries Approve and Reject; Ben (not an approver) is refused before
    any form opens; Aiko's approval goes through the approvals' own decision (audited via Slack)
    and the run goes on to its end."""
    from typing import Any

    import base_module as bm
    from iam_calls import calls_into, iam_calls
    from iam_policy import denied_calls
    from jobplane.platform.approvals import ApprovalReminders

    assert platform.control is not None and platform.slack_actions is not None
    name = platform.control.run_now("sign-slack", "dev@localhost")
    arn = platform.deployment.execution_arn("sign-slack", name)
    wait_for(lambda: _pending(platform, name), what="the approval to wait")
    ApprovalReminders(platform.control, platform.aws.client("sns"), platform.deployment.topic_arn).check()
    store = store_of(platform)
    alert = wait_for(lambda: next(iter(store.of_execution(name)), None), what="the approval request's buttons")
    record = wait_for(lambda: (r := store.get(alert)) and r.ts and r, what="the request's post")
    assert record.actions == ("approve", "reject") and record.event == "APPROVAL"
    before = len(platform.slack_actions.handled)
    assert clicks.send(url(platform), SECRET, clicks.body_of(
        clicks.click(platform.config.slack, BEN, record, "approve")))[0] == 200
    assert handled(platform, before + 1)[before:] == ["refused"]
    assert [json.loads(e.details) for e in audit_of(platform, name, "refused")] == [{"asked": "approve", "via": "Slack"}]
    feed = platform.slack_actions
    feed.stop()  # the worker's calls recorded as it drains: what its role must allow on AWS
    worker_calls: list[dict[str, Any]] = []
    try:
        for body in (clicks.click(platform.config.slack, AIKO, record, "approve"),
                     clicks.submission(platform.config.slack, AIKO, record, "approve", "totals checked")):
            assert clicks.send(url(platform), SECRET, clicks.body_of(body))[0] == 200
        with calls_into(worker_calls):
            while len(feed.handled) < before + 3:
                feed.drain()
    finally:
        feed.start()
    results = feed.handled[before + 1:before + 3]
    assert results == ["modal opened", "done: sign-off approved: the run goes on"], results
    worker = [c for c in iam_calls(worker_calls) if not c.action.startswith("s3:")]  # dev: the catalog in memory
    assert {"states:SendTaskSuccess", "dynamodb:Query", "dynamodb:UpdateItem"} <= {c.action for c in worker}
    statements = bm.policy_statements("slack_worker", {"name_prefix": platform.config.name_prefix})
    assert denied_calls(statements, worker) == []
    assert denied_calls([s for s in statements if s.get("sid") != "DecideApprovals"], worker)  # needed
    [entry] = audit_of(platform, name, "approve")
    assert (entry.actor, entry.reason, json.loads(entry.details)) == (
        "aiko@example.com", "totals checked", {"step": "sign-off", "via": "slack"})
    assert platform.aws.wait(arn, timeout=300).status == "SUCCEEDED"  # a hang guard, not a time assert


def _pending(platform: DevPlatform, name: str) -> list:  # type: ignore[type-arg]
    from jobplane.platform.approvals import Approvals

    assert platform.control is not None
    return [a for a in Approvals(platform.control).of_run(name) if a.pending]
