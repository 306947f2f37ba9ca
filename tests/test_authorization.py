"""One authorization rule for every way in (issue 47 item 4): each operator action (run, re-run,
stop, pause, resume, acknowledge), through the portal's forms, its JSON API and the CLI on
`jobplane dev`, is allowed to a member of the job's team and refused to a member of another
team, on the local AWS with real runs; the audit entry says who acted and by which right. Before,
the CLI acted as `[dev] dev_user` on any team's job. (The CLI with --deployment acts as an
operator: tests/test_cli_aws.py.)

Also (issue 51 seam 4c): authorizing an action on an execution reads its record, not its
history or logs."""

from __future__ import annotations

import html
import re
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from devkit import make_repo
from jobplane.cli import main
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.control import Access, Actor, ControlPlane, Forbidden
from jobplane.portal import actions
from portal_kit import ADMIN, BILLING, GROWTH, READER, as_user, header_app

JOB = "guarded"  # growth's: GROWTH may act on it, BILLING (and the CLI's dev@localhost) may not
GUARDED = """\
    local jp = import 'jobplane.libsonnet';
    {
      name: 'guarded',
      team: 'growth',
      description: 'Fails unless told otherwise; blocks its schedule when it does.',
      schedule: jp.daily('03:00'),
      policy: jp.policy.SKIP_IF_FAILED,
      params: { mode: 'fail', release: null, seconds: 60 },
      steps: [jp.python('work', 'sample_apps.functions:behave')],
    }
"""


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevPlatform]:
    tmp = tmp_path_factory.mktemp("authorization")
    repo = make_repo(tmp / "repo")
    repo.write(f"jobs/growth/{JOB}.jsonnet", textwrap.dedent(GUARDED))
    p = DevPlatform(load_config(tmp / "repo"), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600).start()
    yield p
    p.stop()


@pytest.fixture(scope="module")
def client(platform: DevPlatform) -> Iterator[TestClient]:
    with TestClient(header_app(platform)) as c:
        yield c


@dataclass
class Outcome:
    allowed: bool
    text: str  # the answer (a page, JSON, the CLI's output)
    execution: str | None = None  # the run an allowed run or re-run started


class Portal:
    """The portal's forms (``api`` False) or its JSON API, as ``user`` behind the proxy."""

    def __init__(self, client: TestClient, api: bool):
        self.client, self.api = client, api

    def _post(self, user: str, path: str, body: dict[str, Any]) -> Outcome:
        if self.api:
            r = self.client.post(f"/api{path}", json=body, headers=as_user(user))
            ok = r.status_code in (200, 202)
            return Outcome(ok, r.text, r.json().get("execution") if ok else None)
        form = {"csrf_token": self.client.app.state.portal.csrf.token(user)}  # type: ignore[attr-defined]
        for k, v in body.items():
            form[k] = "\n".join(f"{pk}={pv}" for pk, pv in v.items()) if k == "params" else v
        r = self.client.post(path, data=form, headers=as_user(user), follow_redirects=False)
        if r.status_code != 303:
            return Outcome(False, html.unescape(r.text))
        m = re.match(r"/executions/([0-9a-f]{32})\?", r.headers["location"])
        return Outcome(True, r.headers["location"], m[1] if m else None)

    def run(self, user: str, params: dict[str, Any]) -> Outcome:
        return self._post(user, f"/jobs/{JOB}/run" if not self.api else f"/jobs/{JOB}/runs",
                          {"params": params, "reason": "try it"})

    def rerun(self, user: str, execution: str, params: dict[str, Any]) -> Outcome:
        body: dict[str, Any] = {"params": params, "reason": "again"}
        body |= {"from_failed_step": True} if self.api else {"mode": "failed-step"}
        return self._post(user, f"/executions/{execution}/rerun", body)

    def stop(self, user: str, execution: str) -> Outcome:
        return self._post(user, f"/executions/{execution}/stop", {"reason": "enough"})

    def job_action(self, user: str, action: str) -> Outcome:
        return self._post(user, f"/jobs/{JOB}/{'acknowledge' if action == 'ack' else action}", {"reason": "because"})


class Cli:
    """`jobplane` on the running `jobplane dev`, as ``[dev] dev_user`` = ``user``: a checkout whose
    jobplane.toml differs from the platform's only in dev_user."""

    def __init__(self, platform: DevPlatform, tmp: Path):
        self.platform, self.tmp = platform, tmp

    def _root(self, user: str) -> Path:
        root = self.tmp / re.sub(r"\W", "_", user)
        if not root.exists():
            root.mkdir()
            toml = (self.platform.config.root / "jobplane.toml").read_text()
            (root / "jobplane.toml").write_text(toml.replace('dev_user = "dev@localhost"', f'dev_user = "{user}"'))
        return root

    def _cli(self, user: str, *args: str) -> Outcome:
        r = CliRunner().invoke(main, ["--root", str(self._root(user)), *args,
                                      "--data-dir", str(self.platform.data_dir)], catch_exceptions=False)
        m = re.search(r"started (?:\S+: )?([0-9a-f]{32})", r.output)
        return Outcome(r.exit_code == 0, r.output, m[1] if m and r.exit_code == 0 else None)

    def run(self, user: str, params: dict[str, Any]) -> Outcome:
        return self._cli(user, "run", JOB, "--no-wait", *[a for k, v in params.items() for a in ("-p", f"{k}={v}")])

    def rerun(self, user: str, execution: str, params: dict[str, Any]) -> Outcome:
        return self._cli(user, "rerun", execution, "--reason", "again",
                         *[a for k, v in params.items() for a in ("-p", f"{k}={v}")])

    def stop(self, user: str, execution: str) -> Outcome:
        return self._cli(user, "stop", execution, "--reason", "enough")

    def job_action(self, user: str, action: str) -> Outcome:
        return self._cli(user, action, JOB, "--reason", "because")


def wait_record(platform: DevPlatform, name: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout  # a hang guard
    while (record := platform.control.repo.execution(name)) is None:
        assert time.monotonic() < deadline, f"{name} has no record"
        time.sleep(0.1)
    return record


def wait_running_step(platform: DevPlatform, name: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout  # a hang guard
    while not platform.control.execution(name, JOB).timeline:
        assert time.monotonic() < deadline, f"{name} never started its step"
        time.sleep(0.1)


def every_action(platform: DevPlatform, way: Portal | Cli, allowed: str, refused: str, tmp: Path) -> None:
    """Each action refused to ``refused`` (nothing changes, no audit entry), then done by
    ``allowed`` (audited as them, by their team)."""
    control = platform.control

    def refused_then_allowed(act: Any, action: str) -> Outcome:
        before = control.audit(500)
        no = act(refused)
        assert not no.allowed and "may read but not act on team growth's jobs" in no.text, no.text
        assert control.audit(500) == before
        yes = act(allowed)
        assert yes.allowed, yes.text
        newest = control.audit(1)[0]
        assert (newest.actor, newest.action, newest.job, newest.authority) == (allowed, action, JOB, "team growth")
        return yes

    failed = refused_then_allowed(lambda u: way.run(u, {"mode": "fail"}), "run").execution
    assert failed and wait_record(platform, failed).status == "FAILED"
    assert control.repo.job_state(JOB).blocked

    refused_then_allowed(lambda u: way.job_action(u, "ack"), "acknowledge_failure")
    assert control.repo.job_state(JOB).acknowledged_by == allowed

    release = tmp / f"release-{failed}"
    params = {"mode": "wait", "release": str(release), "seconds": 60}
    again = refused_then_allowed(lambda u: way.rerun(u, failed, params), "rerun_from_failed_step").execution
    assert again and control.audit(1)[0].event.rerun_of == failed  # type: ignore[attr-defined]
    wait_running_step(platform, again)

    refused_then_allowed(lambda u: way.stop(u, again), "stop")
    assert wait_record(platform, again).status == "ABORTED"

    refused_then_allowed(lambda u: way.job_action(u, "pause"), "pause")
    assert control.repo.job_state(JOB).paused_by == allowed
    refused_then_allowed(lambda u: way.job_action(u, "resume"), "resume")
    assert not control.repo.job_state(JOB).paused


def test_every_action_through_the_portal_forms(platform: DevPlatform, client: TestClient, tmp_path: Path) -> None:
    every_action(platform, Portal(client, api=False), GROWTH, BILLING, tmp_path)


def test_every_action_through_the_api(platform: DevPlatform, client: TestClient, tmp_path: Path) -> None:
    every_action(platform, Portal(client, api=True), GROWTH, BILLING, tmp_path)


def test_every_action_through_the_cli_on_jobplane_dev(platform: DevPlatform, tmp_path: Path) -> None:
    """`[dev] dev_user` is judged as the portal judges a signed-in user: dev@localhost is in
    billing (tests/devkit.py), so it may not act on growth's job; as ben@example.com it may."""
    assert platform.config.dev.dev_user == "dev@localhost"
    every_action(platform, Cli(platform, tmp_path), GROWTH, "dev@localhost", tmp_path)


def test_an_admin_acts_on_every_team_and_the_audit_says_so(platform: DevPlatform, client: TestClient,
                                                           tmp_path: Path) -> None:
    way = Cli(platform, tmp_path)
    assert way.job_action(ADMIN, "pause").allowed
    assert Portal(client, api=True).job_action(ADMIN, "resume").allowed
    assert [(a.actor, a.action, a.authority) for a in platform.control.audit(2)] == \
        [(ADMIN, "resume", "admin"), (ADMIN, "pause", "admin")]
    out = way.job_action(READER, "pause")  # no team at all
    assert not out.allowed and "may read but not act" in out.text


def test_authorizing_an_action_reads_the_record_not_the_history_or_logs(platform: DevPlatform) -> None:
    """The portal's re-run and stop read the execution's record (one GetItem) or, while it runs,
    what DescribeExecution says, to authorize; never its history or its step logs."""
    control = ControlPlane(platform.deployment)  # its own clients: only this test's calls are counted
    calls: list[str] = []
    for client in (control.sfn, control.logs.client, control.ddb):
        client.meta.events.register("before-call", lambda model, **_: calls.append(model.name))
    person = Access.from_config(platform.config).person(GROWTH)
    failed = control.run_now(JOB, person, {"mode": "fail"})
    wait_record(platform, failed)

    def authorize(team: str) -> Any:
        person.authority(team)
        return person

    calls.clear()
    with pytest.raises(Forbidden):
        actions.rerun(control, lambda team: Access.from_config(platform.config).person(BILLING).authority(team),
                      failed, True, {}, "", None)
    assert calls == ["GetItem"]  # the record: refused before anything more is read
    calls.clear()
    # a step that runs until it is stopped ("wait" without a release file returns at once, so the
    # stop raced the step's end: it failed once in a clean-clone CI run)
    started = actions.rerun(control, authorize, failed, True, {"mode": "sleep", "seconds": 120}, "", None)
    assert "GetExecutionHistory" not in calls and not any("Log" in c for c in calls), calls
    wait_running_step(platform, started.execution)
    calls.clear()
    actions.stop(control, authorize, started.execution, "enough")
    assert "GetExecutionHistory" not in calls and not any("Log" in c for c in calls), calls
    assert "DescribeExecution" in calls and "StopExecution" in calls
    assert wait_record(platform, started.execution).status == "ABORTED"


@dataclass(frozen=True)
class CountingActor(Actor):
    """A person whose every judgement by the access rule is noted (which team it was asked for)."""

    judged: list[str] = field(default_factory=list, compare=False, hash=False)

    def authority(self, team: str) -> str:
        self.judged.append(team)
        return super().authority(team)


def test_an_action_judges_its_actor_once_and_its_audit_entry_says_by_which_right(platform: DevPlatform) -> None:
    """Authorize once (issue 63 item 6): an action authorizes at its entry and hands what it found
    to its audit entry; before, the entry judged the actor again (a re-run: twice, a re-read of
    the execution's subject threaded through with ``loaded=``)."""
    control = platform.control
    person = Access.from_config(platform.config).person(GROWTH)
    actor = CountingActor(person.name, person.teams, person.admin)
    failed = control.run_now(JOB, actor, {"mode": "fail"})
    assert actor.judged == ["growth"]
    wait_record(platform, failed)
    actor.judged.clear()
    again = control.rerun(failed, actor, from_failed_step=False, params={"mode": "ok"}, reason="once")
    assert actor.judged == ["growth"]
    newest = control.audit(1)[0]
    assert (newest.actor, newest.action, newest.execution, newest.authority) == (GROWTH, "rerun", again, "team growth")
    wait_record(platform, again)
    actor.judged.clear()
    control.pause(JOB, actor, "judged once")
    control.resume(JOB, actor, "judged once")
    assert actor.judged == ["growth", "growth"]  # one each
    assert [(e.action, e.authority) for e in control.audit(2)] == [("resume", "team growth"), ("pause", "team growth")]
