"""`jobplane dev`'s platform in this process: the embedded AWS over HTTP, the compiled jobs, the
local scheduler (driven by a fake clock), real runner subprocesses, Slack alerts to a real local
HTTP receiver, the portal, and state that survives a restart."""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from slack_sdk.models.blocks import Block

from devkit import FakeClock, make_repo, utc
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from slack_receiver import Receiver


def start_platform(root: Path, data_dir: Path, webhook: str | None = None, clock: FakeClock | None = None) -> DevPlatform:
    return DevPlatform(load_config(root), data_dir, 0, 0, clock=clock or FakeClock(utc("2027-03-01T10:00:30")),
                       webhook_url=webhook, run_scheduler=False, run_services=False, snapshot_interval=3600).start()


def wait_for(predicate, timeout: float = 60.0, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def finished(platform: DevPlatform, name: str, job: str):  # type: ignore[no-untyped-def]
    return wait_for(lambda: (v := platform.control.execution(name, job)) and not v.running and v.record and v, what=name)


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[Receiver]:
    r = Receiver(getattr(request, "param", []))
    yield r
    r.close()


@pytest.fixture
def repo_root(tmp_path: Path) -> Path:
    make_repo(tmp_path / "repo")
    return tmp_path / "repo"


def test_a_job_fires_on_time_by_the_local_clock_and_runs_its_steps(repo_root: Path, tmp_path: Path) -> None:
    clock = FakeClock(utc("2027-03-01T10:00:30"))
    platform = start_platform(repo_root, tmp_path / "data", clock=clock)
    try:
        platform.scheduler.start()
        clock.now = utc("2027-03-01T10:00:59")
        assert platform.scheduler.tick() == []  # not yet
        clock.now = utc("2027-03-01T10:01:02")
        fires = platform.scheduler.tick()
        assert [(f.schedule, f.scheduled_time) for f in fires] == [("jp-every-minute", utc("2027-03-01T10:01:00"))]
        name = fires[0].execution_arn.rsplit(":", 1)[1]
        view = finished(platform, name, "every-minute")
        assert view.status == "SUCCEEDED"
        assert view.input.scheduled_time == "2027-03-01T10:01:00Z" and view.input.trigger == "schedule"
        assert [(r.step, r.outcome) for r in view.timeline] == [("tick", "succeeded")]
        stream = platform.control.log_streams(name, "tick")[0]
        assert '"message": "step succeeded"' in stream.read()  # the real runner's JSON log line
        # the same minute delivered again (at-least-once) is recorded as a duplicate, not run
        again = platform.aws.start("every-minute", fires[0] and view.input.to_json())
        dup = finished(platform, again.rsplit(":", 1)[1], "every-minute")
        assert (dup.status, dup.record.skip_reason) == ("SKIPPED", "DUPLICATE")
    finally:
        platform.stop()


def test_a_failing_job_posts_one_slack_message_with_the_execution_link(repo_root: Path, tmp_path: Path,
                                                                       receiver: Receiver) -> None:
    platform = start_platform(repo_root, tmp_path / "data", webhook=receiver.url)
    try:
        name = platform.control.run_now("flaky-load", "dev@localhost")
        view = finished(platform, name, "flaky-load")
        assert (view.status, view.failed_step) == ("FAILED", "load")
        wait_for(lambda: receiver.posts, what="a Slack post")
        time.sleep(1.0)  # nothing else arrives
        assert len(receiver.posts) == 1
        payload = receiver.posts[0]
        blocks = [Block.parse(b) for b in payload["blocks"]]
        assert all(b is not None for b in blocks)
        text = str(payload)
        assert f"{platform.portal_url}/executions/{name}" in text
        assert "ConnectionError: partner API answered 503" in text  # the error line from the step's log
        assert "Fix the input" in text and "*Duration*" in text
        assert platform.control.execution(name).error == "ConnectionError: partner API answered 503"
    finally:
        platform.stop()


def test_a_stopped_runs_alert_follows_its_jobs_notify_settings(repo_root: Path, tmp_path: Path,
                                                               receiver: Receiver) -> None:
    """A stopped run cannot send its own alert: the reconciler records it ABORTED and sends it,
    with the job's events, channels and runbook as the state machine's own alerts carry them.
    slow-report subscribes to FAILED and SLOW only, so its stop posts nothing (it posted
    ABORTED: found by a newcomer QA pass); flaky-load keeps the defaults, so its stop posts
    ABORTED, with its runbook."""
    platform = start_platform(repo_root, tmp_path / "data", webhook=receiver.url)
    try:
        quiet = platform.control.run_now("slow-report", "dev@localhost", {"release": str(tmp_path / "never")})
        wait_for(lambda: platform.control.log_streams(quiet), what="slow-report's step to start")
        platform.control.stop(quiet, "dev@localhost", "testing its alert")
        assert finished(platform, quiet, "slow-report").status == "ABORTED"
        # its alert published (the reconciler clears the mark after the publish) before the next
        # run starts: had it been posted, it would come before flaky-load's
        wait_for(lambda: not platform.control.repo.execution(quiet).alert_pending, what="slow-report's alert")
        loud = platform.control.run_now("flaky-load", "dev@localhost", {"mode": "sleep"})  # 30 s
        wait_for(lambda: platform.control.log_streams(loud, "load"), what="flaky-load's load step to start")
        platform.control.stop(loud, "dev@localhost", "testing its alert")
        assert finished(platform, loud, "flaky-load").status == "ABORTED"
        post = wait_for(lambda: receiver.posts, what="the ABORTED post")[0]
        time.sleep(1.0)  # nothing else arrives
        assert len(receiver.posts) == 1
        text = str(post)
        assert loud in text and "flaky-load" in text and "Fix the input" in text  # its runbook
    finally:
        platform.stop()


@pytest.mark.parametrize("receiver", [[500, 500]], indirect=True)
def test_a_webhook_answering_500_twice_still_gets_the_message_once(repo_root: Path, tmp_path: Path,
                                                                    receiver: Receiver) -> None:
    platform = start_platform(repo_root, tmp_path / "data", webhook=receiver.url)
    try:
        name = platform.control.run_now("flaky-load", "dev@localhost")
        finished(platform, name, "flaky-load")
        wait_for(lambda: platform.alerts.delivered, what="delivery")
        assert [p for p in receiver.posts if name in str(p)] and len(receiver.posts) == 3  # 500, 500, 200
        assert platform.alerts.delivered == [(name, ["sent"])]
        assert platform.dead_letters.peek() == []
    finally:
        platform.stop()


@pytest.mark.parametrize("receiver", [["hang"] * 20], indirect=True)
def test_an_unreachable_webhook_leaves_the_alert_in_the_dead_letter_queue_until_it_is_resent(
        repo_root: Path, tmp_path: Path, receiver: Receiver) -> None:
    """As on AWS (the notifier Lambda's dead-letter queue): the alert is kept in
    <prefix>-events-dlq with why, survives a restart, and `jobplane dead-letters --resend`
    delivers it once Slack answers again (audited), leaving the queue empty."""
    from click.testing import CliRunner

    from jobplane.cli import main

    platform = start_platform(repo_root, tmp_path / "data", webhook=receiver.url)
    platform.alerts.notifier.timeout, platform.alerts.notifier.retries = 1, 1
    try:
        name = platform.control.run_now("flaky-load", "dev@localhost")
        finished(platform, name, "flaky-load")
        (kept,) = wait_for(platform.dead_letters.peek, timeout=60, what="a dead letter")
        assert kept.kind == "alert" and kept.alert is not None and kept.alert.execution == name
        assert "Slack delivery to #billing-alerts failed" in kept.error
        assert "Timeout" in kept.error or "timed out" in kept.error
        assert platform.dead_letters.count() == 1  # listing left it in the queue
    finally:
        platform.stop()
    platform = start_platform(repo_root, tmp_path / "data", webhook=receiver.url)  # moto starts empty: restored
    try:
        (again,) = platform.dead_letters.peek()
        assert again.alert == kept.alert and again.error == kept.error
        receiver.script = []  # Slack answers again
        cli = CliRunner()
        args = ["--root", str(repo_root), "dead-letters", "--data-dir", str(tmp_path / "data")]
        listed = cli.invoke(main, args)
        assert listed.exit_code == 0 and f"FAILED alert of flaky-load ({name})" in listed.output, listed.output
        before = len(receiver.posts)
        resent = cli.invoke(main, [*args, "--resend", "--reason", "webhook fixed"])
        assert resent.exit_code == 0 and "1 alert published again" in resent.output, resent.output
        wait_for(lambda: any(name in str(p) for p in receiver.posts[before:]), what="the re-sent alert")
        wait_for(lambda: (name, ["sent"]) in platform.alerts.delivered, what="its delivery")
        assert platform.dead_letters.peek() == [] and not platform.dead_letters.count()
        assert [a.reason for a in platform.control.audit(10) if a.action == "resend_alert"] == ["webhook fixed"]
    finally:
        platform.stop()


def test_a_run_past_its_expected_duration_is_announced_once_while_it_runs(repo_root: Path, tmp_path: Path,
                                                                          receiver: Receiver) -> None:
    from datetime import datetime, timedelta, timezone

    from jobplane.platform.slow import SlowWatch

    platform = start_platform(repo_root, tmp_path / "data", webhook=receiver.url)
    release = tmp_path / "release"
    try:
        name = platform.control.run_now("slow-report", "dev@localhost", {"release": str(release)})
        wait_for(lambda: platform.control.log_streams(name), what="the step to start")
        now = datetime.now(timezone.utc)
        at = FakeClock(now + timedelta(seconds=30))
        watch = SlowWatch(platform.control.reads, platform.aws.client("sns"), platform.deployment.topic_arn, clock=at)
        assert watch.check() == []  # within its expected minute
        at.now = now + timedelta(minutes=2)
        assert watch.check() == [name]
        assert watch.check() == []  # once
        post = wait_for(lambda: receiver.posts, what="the SLOW post")[0]
        assert Block.parse(post["blocks"][0]) is not None
        text = str(post)
        assert "slow" in text and "still running after" in text and "crunch" in text and name in text
        release.write_text("go")
        assert finished(platform, name, "slow-report").status == "SUCCEEDED"
        assert watch.check() == [] and len(receiver.posts) == 1
    finally:
        platform.stop()


def test_a_restart_keeps_job_state_history_pauses_and_audit(repo_root: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    platform = start_platform(repo_root, data)
    try:
        ok = platform.control.run_now("flaky-load", "dev@localhost", {"mode": "ok"})
        finished(platform, ok, "flaky-load")
        bad = platform.control.run_now("flaky-load", "dev@localhost")
        finished(platform, bad, "flaky-load")
        platform.control.pause("long-wait", "dev@localhost", "waiting for the vendor")
    finally:
        platform.stop()
    assert not (data / "dev.json").exists()

    again = start_platform(repo_root, data)
    try:
        state = again.control.repo.job_state("flaky-load")
        assert (state.last_status, state.last_execution, state.blocked_by) == ("FAILED", bad, bad)
        history = {x.execution: x.status for x in again.control.executions("flaky-load").items}
        assert history == {ok: "SUCCEEDED", bad: "FAILED"}
        assert [r.step for r in again.control.execution(bad).timeline] == ["prepare", "load"]  # kept on the record
        assert again.control.log_streams(bad, "load")  # logs are files in the data dir
        long_wait = again.control.job("long-wait")
        assert long_wait.paused and long_wait.state.paused_reason == "waiting for the vendor"
        schedule = again.aws.client("scheduler").get_schedule(Name="jp-long-wait", GroupName="jp")
        assert schedule["State"] == "DISABLED"  # redeployed, and still paused
        assert [a.action for a in again.control.audit()][:1] == ["pause"]
    finally:
        again.stop()

    fresh = DevPlatform(load_config(repo_root), data, 0, 0, reset=True, run_scheduler=False,
                        run_services=False).start()
    try:
        assert fresh.control.executions("flaky-load").items == []
    finally:
        fresh.stop()


def test_stopping_aborts_running_executions_and_a_crash_is_closed_on_the_next_start(repo_root: Path,
                                                                                   tmp_path: Path) -> None:
    data = tmp_path / "data"
    platform = start_platform(repo_root, data)
    release = tmp_path / "never"
    name = platform.control.run_now("long-wait", "dev@localhost", {"release": str(release)})
    wait_for(lambda: platform.control.log_streams(name), what="the step to start")
    platform.save()  # the snapshot sees it running ...
    # ... then the process "dies": nothing records the run (stop the engine under it).
    platform._stop.set()
    platform.portal.should_exit = True
    platform.aws.reconcile = False
    platform.alerts.stop()
    platform.aws.__exit__(None, None, None)  # the engine goes with the process
    (data / "dev.json").unlink()

    again = start_platform(repo_root, data)
    try:
        assert again.interrupted == [name]
        view = again.control.execution(name)
        assert view.status == "ABORTED" and "stopped while this execution was running" in view.error
        assert not again.control.repo.job_state("long-wait").running  # claim released: the job can run
        nxt = again.control.run_now("long-wait", "dev@localhost", {"release": str(release)})
        wait_for(lambda: again.control.log_streams(nxt), what="the next run to start")
    finally:
        again.stop()  # stops the running one: recorded ABORTED before the state is saved
    last = start_platform(repo_root, data)
    try:
        assert last.control.execution(nxt).status == "ABORTED" and last.interrupted == []
    finally:
        last.stop()


def test_the_portal_is_served_with_its_health_url(repo_root: Path, tmp_path: Path) -> None:
    platform = start_platform(repo_root, tmp_path / "data")
    try:
        with urllib.request.urlopen(f"{platform.portal_url}/healthz", timeout=60) as r:
            assert r.status == 200 and b'"jobs":6' in r.read().replace(b" ", b"")
        assert "portal" in platform.banner() and platform.portal_url in platform.banner()
    finally:
        platform.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{platform.portal_url}/healthz", timeout=2)



def test_cli_run_from_a_step_status_and_logs_talk_to_the_running_platform(repo_root: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from jobplane.cli import main

    data = tmp_path / "data"
    platform = start_platform(repo_root, data)

    def cli(*args: str):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(main, ["--root", str(repo_root), *args, "--data-dir", str(data)])

    try:
        r = cli("run", "flaky-load", "--from-step", "load", "-p", "mode=ok", "--reason", "partner fixed the feed")
        assert r.exit_code == 0, r.output
        assert [(a.action, a.reason) for a in platform.control.audit(1)] == [("run", "partner fixed the feed")]
        assert "load (attempt 1): succeeded" in r.output and "prepare" not in r.output and "SUCCEEDED" in r.output
        name = re.search(r"started flaky-load: (\w+)", r.output).group(1)
        assert f"{platform.portal_url}/executions/{name}" in r.output
        r = cli("run", "flaky-load")  # mode=fail by default
        assert r.exit_code == 1 and "FAILED at load (exit code 75): ConnectionError: partner API answered 503" in r.output
        failed = re.search(r"started flaky-load: (\w+)", r.output).group(1)
        r = cli("logs", failed, "--step", "load")
        assert r.exit_code == 0 and "==> load (attempt 1" in r.output and "partner API answered 503" in r.output
        blocker = platform.control.run_now("long-wait", "dev@localhost", {"release": str(tmp_path / "go")})
        wait_for(lambda: platform.control.log_streams(blocker), what="long-wait to run")
        r = cli("run", "long-wait")  # SKIP_IF_RUNNING
        assert r.exit_code == 1 and "SKIPPED (RUNNING)" in r.output
        (tmp_path / "go").write_text("go")
        r = cli("run", "flaky-load", "--from-step", "nope")
        assert r.exit_code != 0 and "has no step 'nope'" in r.output
        r = cli("run", "flaky-LOAD")
        assert r.exit_code != 0 and "no job named 'flaky-LOAD' (did you mean 'flaky-load'?)" in r.output
        # a job written after this jobplane dev started: defined, not deployed, and said so
        (repo_root / "jobs" / "billing" / "written-since.jsonnet").write_text((repo_root / "jobs" / "billing" /
                                                                              "flaky-load.jsonnet").read_text())
        r = cli("run", "written-since")
        assert r.exit_code != 0 and "no job named 'written-since'" in r.output
        assert "jobs/billing/written-since.jsonnet defines it" in r.output and "restart it" in r.output
        r = cli("run", "*")  # a name, never a pattern: nothing matches it
        assert r.exit_code != 0 and "defines it" not in r.output
        r = cli("run", "flaky-load", "-p", "typo=1")
        assert r.exit_code != 0 and "has no param 'typo'" in r.output
        r = cli("status")
        assert r.exit_code == 0
        row = next(line for line in r.output.splitlines() if line.startswith("flaky-load"))
        assert "FAILED" in row and "manual" in row
        assert "every-minute" in r.output and "UTC" in r.output
        running = r.output
    finally:
        platform.stop()
    # Stopped: what is on disk is still readable (issue 17), and what needs the platform says
    # which data directory it looked at.
    r = cli("status")
    assert r.exit_code == 0 and "jobplane dev is not running; its last saved state" in r.output
    # the same jobs in the same order, a next fire written the same way (its zone's name and the
    # UTC time: the stopped view wrote "UTC-05:00" instead)
    def jobs_and_fire(text: str) -> tuple[list[str], str]:
        lines = [line for line in text.splitlines() if line.split(" ")[0] in platform.control.entries]
        weekly = next(line for line in lines if line.startswith("other-team"))
        return [line.split(" ")[0] for line in lines], re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d E[SD]T \(\d\d:\d\d UTC\)", weekly)[0]
    assert jobs_and_fire(r.output) == jobs_and_fire(running)
    assert "FAILED" in next(line for line in r.output.splitlines() if line.startswith("flaky-load"))
    r = cli("logs", failed, "--step", "load")
    assert r.exit_code == 0 and "partner API answered 503" in r.output and "not running: logs read from" in r.output
    r = cli("run", "flaky-load")
    assert r.exit_code != 0 and f"not running with data directory {data}" in r.output and "JOBPLANE_DATA_DIR" in r.output


def test_two_instances_run_their_own_services_and_a_dead_service_is_reported(
        repo_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 17: the example service's port was fixed in [dev.services]; a second `jobplane dev`
    could not start its own (and its jobs silently used the first one's). {port:NAME} is now a
    port chosen per instance, and a service that exits is said. Issue 40 (decided): a service
    gets what a step gets, the OS basics and [dev] env, not the developer's whole environment."""
    import json
    import os
    import signal
    import subprocess
    import sys

    toml = repo_root / "jobplane.toml"
    toml.write_text(toml.read_text().replace("[dev.env]\n", '[dev.env]\nECHO_URL = "http://127.0.0.1:{port:echo}/"\n')
                    + '\n[dev.services]\necho = ["python", "-m", "http.server", "{port:echo}", "--bind", "127.0.0.1"]\n'
                    + 'crash = ["python", "-c", "import sys; sys.exit(3)"]\n'
                    + 'envdump = ["python", "-c", "import json, os, sys; open(sys.argv[1] + \'.tmp\', \'w\').write('
                      'json.dumps(dict(os.environ))); os.replace(sys.argv[1] + \'.tmp\', sys.argv[1])", '
                      f'"{tmp_path}/service-env-{{port:echo}}.json"]\n')
    monkeypatch.setenv("JOBPLANE_SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T1/B2/developers-own")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "developers-own-aws-secret")
    caplog.set_level("INFO", logger="jobplane.dev")
    first = DevPlatform(load_config(repo_root), tmp_path / "a", 0, 0, run_scheduler=False, run_services=True,
                        snapshot_interval=3600).start()
    second = None
    try:
        second = subprocess.Popen([str(Path(sys.executable).parent / "jobplane"), "--root", str(repo_root), "dev",
                                   "--data-dir", str(tmp_path / "b"), "--aws-port", "0", "--portal-port", "0"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        runtime = wait_for(lambda: (tmp_path / "b" / "dev.json").exists() and json.loads((tmp_path / "b" / "dev.json").read_text()),
                           timeout=300, what="the second jobplane dev")
        ports = first.service_ports["echo"], runtime["service_ports"]["echo"]
        assert ports[0] != ports[1]
        assert first.aws.env["ECHO_URL"] == f"http://127.0.0.1:{ports[0]}/"  # what steps are given
        for port in ports:  # both instances' services answer, each on its own port
            assert wait_for(lambda p=port: _answers(f"http://127.0.0.1:{p}/"), timeout=60, what=f"service on {port}")
        wait_for(lambda: any("service crash exited with status 3" in r.getMessage() for r in caplog.records),
                 timeout=60, what="the dead service to be reported")
        dumped = tmp_path / f"service-env-{ports[0]}.json"
        service_env = wait_for(lambda: dumped.exists() and json.loads(dumped.read_text()), timeout=60,
                               what="the envdump service")
        assert "JOBPLANE_SLACK_WEBHOOK_URL" not in service_env and "AWS_SECRET_ACCESS_KEY" not in service_env
        assert service_env["ECHO_URL"] == f"http://127.0.0.1:{ports[0]}/"  # [dev] env, its ports filled in
        assert service_env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    finally:
        first.stop()
        if second is not None:
            os.killpg(second.pid, signal.SIGINT)
            out = second.communicate(timeout=120)[0].decode(errors="replace")
            assert "service crash exited with status 3" in out, out[-3000:]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def test_a_restart_with_unchanged_definitions_keeps_the_compiled_output(repo_root: Path, tmp_path: Path) -> None:
    """The compile is skipped only when its inputs and the kept output are what they were."""
    data = tmp_path / "data"

    def start() -> tuple[bool, list[str]]:
        platform = start_platform(repo_root, data)
        try:
            return platform.compile_reused, sorted(platform.jobs)
        finally:
            platform.stop()

    first = start()
    assert first[0] is False and first[1]  # nothing kept yet: compiled
    assert start() == (True, first[1])  # the same inputs: kept
    job = next((repo_root / "jobs").rglob("*.jsonnet"))
    job.write_text(job.read_text() + "\n// edited\n")
    assert start() == (False, first[1])  # a job file changed: compiled again
    assert start()[0] is True
    kept = next((data / "compiled").rglob("*.job.tf.json"))
    kept.write_text(kept.read_text().replace("jobplane-runner", "tampered", 1))
    assert start()[0] is False  # the kept output was changed: compiled again, and put right
    assert "tampered" not in kept.read_text()


def test_a_pause_holds_when_an_apply_enables_the_schedule_again(repo_root: Path, tmp_path: Path) -> None:
    """A pause disables the job's schedule, but the team's next `terraform apply` sets the
    compiled state (ENABLED) again: the claim itself refuses a paused job's scheduled fires
    (recorded SKIPPED, reason PAUSED), while a manual run still runs. The pause's UpdateSchedule
    passes back every field the schedule has: one left out (its KMS key) would be reset."""
    from jobplane.contract import execution_input

    platform = start_platform(repo_root, tmp_path / "data")
    try:
        scheduler, job, name = platform.aws.client("scheduler"), "every-minute", "jp-every-minute"
        spec = {k: v for k, v in scheduler.get_schedule(Name=name, GroupName="jp").items()
                if k in ("ScheduleExpression", "ScheduleExpressionTimezone", "FlexibleTimeWindow", "Target")}
        key = "arn:aws:kms:us-east-1:123456789012:key/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
        scheduler.update_schedule(Name=name, GroupName="jp", State="ENABLED", KmsKeyArn=key, **spec)
        platform.control.pause(job, "dev@localhost", "vendor outage")
        paused = scheduler.get_schedule(Name=name, GroupName="jp")
        assert paused["State"] == "DISABLED" and paused.get("KmsKeyArn") == key
        scheduler.update_schedule(Name=name, GroupName="jp", State="ENABLED", KmsKeyArn=key, **spec)  # the apply

        def fire(at: str) -> object:
            arn = platform.aws.start(job, execution_input.scheduled(at, {}))
            platform.aws.wait(arn, timeout=300)
            return platform.control.repo.execution(arn.rsplit(":", 1)[1])

        skipped = fire("2027-03-01T10:01:00Z")
        assert (skipped.status, skipped.skip_reason) == ("SKIPPED", "PAUSED")
        manual = platform.control.run_now(job, "dev@localhost")
        assert finished(platform, manual, job).record.status == "SUCCEEDED"
        platform.control.resume(job, "dev@localhost", "vendor back")
        ran = fire("2027-03-01T10:02:00Z")
        assert ran.status == "SUCCEEDED"
    finally:
        platform.stop()


def test_a_port_another_program_holds_stops_the_start_with_the_setting_that_moves_it(repo_root: Path,
                                                                                     tmp_path: Path) -> None:
    """Each of the two ports `jobplane dev` listens on, already held: the start fails with a
    message that names the port and the setting to change, and leaves nothing running (the local
    AWS's port used to end the process through werkzeug's own exit with its generic advice)."""
    import socket

    from jobplane.devserver.runtime import DevError

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        for ports, setting in (((port, 0), "JOBPLANE_AWS_PORT"), ((0, port), "JOBPLANE_PORTAL_PORT")):
            platform = DevPlatform(load_config(repo_root), tmp_path / "data", *ports, run_scheduler=False,
                                   run_services=False, snapshot_interval=3600)
            with pytest.raises(DevError) as refused:
                platform.start()
            message = str(refused.value)
            assert f"127.0.0.1:{port}" in message and setting in message and "0: any free port" in message
            # nothing of the failed start is left listening: a start on free ports works at once
            platform = DevPlatform(load_config(repo_root), tmp_path / "data", 0, 0, run_scheduler=False,
                                   run_services=False, snapshot_interval=3600).start()
            platform.stop()


def test_the_banner_suggests_a_job_of_this_project_and_a_command_this_shell_can_run(repo_root: Path,
                                                                                    tmp_path: Path) -> None:
    """The banner's "run a job" line: one of this project's scheduled jobs (it named the examples'
    daily-sales-report in any project), and the `jobplane` beside this interpreter as the shell
    can type it (``jobplane run`` was not found after `make dev`, which puts it in .venv/bin)."""
    import os
    import shutil
    import sys

    platform = start_platform(repo_root, tmp_path / "data")
    try:
        line = next(line for line in platform.banner().splitlines() if line.lstrip().startswith("run a job"))
    finally:
        platform.stop()
    command, job = re.search(r"run a job\s+(\S+) run (\S+)", line).groups()
    assert job in platform.control.entries and platform.control.entries[job].schedule
    beside = Path(sys.executable).parent / "jobplane"
    typed = shutil.which(command) if "/" not in command else command
    assert typed and Path(typed).resolve() == beside.resolve() and os.access(typed, os.X_OK)
