"""Backfill on the local engine (issue 15): the window's fires come from the job's schedule and
timezone (the evaluator of `jobplane next`), only the missed ones run by default, a fire never
runs twice at once, the job's policy holds, and every backfill is audited.

The compiled state machines run on the embedded local AWS and the runner as real subprocesses;
the test drives each backfill itself (`Backfills.follow`), as the CLI does, while the platform's
own background driver may move it on too: both are meant to run at once.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

from devkit import backfill_repo
from jobplane.cli.app import main
from jobplane.contract import execution_input
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.backfill_model import Backfill, FireState, Status
from jobplane.platform.control import Conflict, Invalid

ME = "aiko@example.com"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevPlatform]:
    tmp = tmp_path_factory.mktemp("backfill")
    p = DevPlatform(load_config(backfill_repo(tmp / "repo")), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600).start()
    yield p
    p.stop()


def drive(platform: DevPlatform, bf: Backfill) -> Backfill:
    """Drive ``bf`` to its end, with a hang guard (not a time budget: each run is a no-op)."""
    stop = threading.Event()
    timer = threading.Timer(600, stop.set)
    timer.start()
    try:
        done = platform.backfills.follow(bf.id, lambda b: None, interval=0.1, stop=stop)
    finally:
        timer.cancel()
    assert not stop.is_set(), f"{bf.id} still driven after 600 s: {done}"
    return done


def records(platform: DevPlatform, job: str, trigger: str = "backfill") -> list:  # type: ignore[type-arg]
    page = platform.control.repo.executions(job, limit=500)
    return [r for r in page.items if r.trigger == trigger]


def run_scheduled(platform: DevPlatform, job: str, fire: str) -> str:
    """A fire as EventBridge Scheduler would have delivered it; its final status."""
    arn = platform.aws.start(job, execution_input.scheduled(fire, {}))
    platform.aws.wait(arn, timeout=300)
    return platform.control.repo.execution(arn.rsplit(":", 1)[1]).status


def test_a_window_over_a_dst_change_backfills_exactly_the_fires_jobplane_next_lists(platform: DevPlatform) -> None:
    # 2026-03-08: New York springs forward at 02:00, so 02:30 local does not exist and does not fire
    r = CliRunner().invoke(main, ["--root", str(platform.config.root), "next", "hourly", "-n", "4",
                                  "--after", "2026-03-07T23:59:00-05:00"])
    assert r.exit_code == 0, r.output
    listed = re.findall(r"^\s+(2026-03-08 Sun \d\d:\d\d \w+)", r.output, re.M)
    assert listed == ["2026-03-08 Sun 00:30 EST", "2026-03-08 Sun 01:30 EST", "2026-03-08 Sun 03:30 EDT",
                      "2026-03-08 Sun 04:30 EDT"]
    backfills = platform.backfills
    preview = backfills.preview("hourly", "2026-03-08T00:00", "2026-03-08T04:59")  # the job's own timezone
    assert [p.local.strftime("%Y-%m-%d %a %H:%M %Z") for p in preview] == listed
    assert all(p.runs and p.covered_by is None for p in preview)
    bf = backfills.create("hourly", ME, "2026-03-08T00:00", "2026-03-08T04:59", reason="outage on the 8th",
                          max_concurrent=4)
    done = drive(platform, bf)
    assert done.status == Status.COMPLETED and [f.status for f in done.fires] == ["SUCCEEDED"] * 4
    ran = sorted(r.scheduled_time for r in records(platform, "hourly"))
    assert ran == ["2026-03-08T05:30:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z", "2026-03-08T08:30:00Z"]
    assert {r.requested_by for r in records(platform, "hourly")} == {ME}
    entry = next(a for a in platform.control.audit(50) if a.action == "backfill" and bf.id in a.details)
    assert (entry.actor, entry.reason, entry.job) == (ME, "outage on the 8th", "hourly")
    # the same window again: nothing is missing any more
    with pytest.raises(Conflict, match="every one of the 4 fires"):
        backfills.create("hourly", ME, "2026-03-08T00:00", "2026-03-08T04:59", reason="again")


def test_only_missed_starts_only_the_fires_with_no_record(platform: DevPlatform) -> None:
    fires = [f"2026-04-01T{h:02d}:30:00Z" for h in range(10, 15)]  # 06:30 .. 10:30 New York (EDT)
    assert run_scheduled(platform, "hourly", fires[1]) == "SUCCEEDED"
    assert run_scheduled(platform, "hourly", fires[3]) == "SUCCEEDED"
    assert run_scheduled(platform, "hourly", fires[2]) == "SKIPPED"  # older than a claimed fire: a duplicate
    preview = platform.backfills.preview("hourly", fires[0], fires[-1])
    assert [p.at for p in preview] == fires
    assert [p.runs for p in preview] == [True, False, False, False, True]
    assert preview[1].covered_by.startswith("SUCCEEDED ") and preview[2].covered_by.startswith("SKIPPED ")
    bf = platform.backfills.create("hourly", ME, fires[0], fires[-1], reason="missed two", max_concurrent=2)
    assert [f.at for f in bf.fires] == [fires[0], fires[4]]
    done = drive(platform, bf)
    assert [(f.at, f.status) for f in done.fires] == [(fires[0], "SUCCEEDED"), (fires[4], "SUCCEEDED")]
    mine = [r for r in records(platform, "hourly") if r.input.backfill == bf.id]
    assert sorted(r.scheduled_time for r in mine) == [fires[0], fires[4]]
    # --all re-runs every fire, each once more
    again = drive(platform, platform.backfills.create("hourly", ME, fires[0], fires[-1], mode="all", reason="re-run",
                                                      max_concurrent=5))
    assert [f.status for f in again.fires] == ["SUCCEEDED"] * 5
    rerun = [r for r in records(platform, "hourly") if r.input.backfill == again.id]
    assert sorted(r.scheduled_time for r in rerun) == fires


def test_two_concurrent_backfills_of_one_window_run_each_fire_once(platform: DevPlatform,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from jobplane.platform import backfill as backfill_module

    start, end = "2026-05-01T00:00:00Z", "2026-05-01T05:59:00Z"
    # the platform's own driver (a pass every 2 s) must not start a's fires before b is planned:
    # it waits for this lock while both are created (a CI run saw b planned after a's first fire)
    held, drive_once = threading.Lock(), backfill_module.BackfillDriver.drive_once

    def after_planning(driver: backfill_module.BackfillDriver) -> list[str]:
        with held:
            return drive_once(driver)

    monkeypatch.setattr(backfill_module.BackfillDriver, "drive_once", after_planning)
    with held:
        a = platform.backfills.create("hourly", ME, start, end, reason="first", max_concurrent=3)
        b = platform.backfills.create("hourly", "ben@example.com", start, end, reason="second", max_concurrent=3)
    assert len(a.fires) == len(b.fires) == 6  # both planned before either ran a fire
    results: dict[str, Backfill] = {}
    threads = [threading.Thread(target=lambda x=x: results.__setitem__(x.id, drive(platform, x))) for x in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ran = [r.scheduled_time for r in records(platform, "hourly") if r.input.backfill in (a.id, b.id)]
    assert sorted(ran) == [f.at for f in a.fires]  # each fire once, by one of the two
    for x in results.values():
        assert x.status == Status.COMPLETED
        assert all(f.state in (FireState.DONE, FireState.TAKEN) for f in x.fires)
    taken = [f for x in results.values() for f in x.fires if f.state == FireState.TAKEN]
    assert len(taken) == 6 and all(f.note and f.note.startswith("run by bf-") for f in taken)


def test_a_driver_that_read_the_backfill_before_its_run_ended_does_not_lease_the_fire_again(
        platform: DevPlatform) -> None:
    """Two drivers move a backfill at once (the CLI and the platform's background driver). One
    that read the backfill before a fire's run ended tries to lease that fire for the same
    execution; the lease must stay done, or the fire looks in flight for ever (a CI run of
    test_only_missed_starts_only_the_fires_with_no_record lost a fire from its --all backfill)."""
    start, end = "2026-10-01T00:00:00Z", "2026-10-01T01:59:00Z"
    done = drive(platform, platform.backfills.create("hourly", ME, start, end, reason="missed", max_concurrent=2))
    assert [f.status for f in done.fires] == ["SUCCEEDED"] * 2
    store, fire = platform.backfills.store, done.fires[0]
    assert fire.execution is not None
    for over_done in (False, True):  # the stale driver of an --only-missed and of an --all backfill
        held = store.lease("hourly", fire.at, done.id, fire.execution, over_done=over_done)
        assert held is not None and (held.execution, held.state) == (fire.execution, "done")
    assert store.leases("hourly", start, end)[fire.at].state == "done"
    preview = platform.backfills.preview("hourly", start, end, mode="all")
    assert [p.runs for p in preview] == [True, True]
    assert preview[0].covered_by == f"SUCCEEDED {fire.execution}"  # its record, not "in flight: ..."


def test_skip_if_running_backfills_one_at_a_time_in_order_and_waits_for_a_held_claim(platform: DevPlatform,
                                                                                    tmp_path: Path) -> None:
    release = tmp_path / "release"
    held = platform.control.run_now("serial", ME, {"mode": "wait", "release": str(release), "seconds": 600})
    deadline = time.monotonic() + 300  # hang guard
    while not platform.control.repo.job_state("serial") or not platform.control.repo.job_state("serial").running:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    bf = platform.backfills.create("serial", ME, "2026-06-01T00:00:00Z", "2026-06-01T02:59:00Z", max_concurrent=5,
                                   reason="backfill a serial job")
    assert bf.max_concurrent == 1
    for _ in range(3):  # the claim is held: the backfill waits rather than start runs to be skipped
        after = platform.backfills.tick(bf.id)
        assert all(f.state == FireState.PENDING for f in after.fires)
    release.write_text("go")
    done = drive(platform, bf)
    assert done.status == Status.COMPLETED and [f.status for f in done.fires] == ["SUCCEEDED"] * 3
    runs = sorted(records(platform, "serial"), key=lambda r: r.started_at)
    assert [r.scheduled_time for r in runs] == [f.at for f in bf.fires]  # in order
    for earlier, later in zip(runs, runs[1:]):
        assert earlier.finished_at <= later.started_at  # one at a time
    assert platform.control.execution(held).status == "SUCCEEDED"


def test_cancel_stops_new_fires_and_resume_goes_on_each_audited(platform: DevPlatform, tmp_path: Path) -> None:
    release = tmp_path / "release"
    bf = platform.backfills.create("hourly", ME, "2026-07-01T00:00:00Z", "2026-07-01T02:59:00Z", max_concurrent=1,
                                   params={"mode": "wait", "release": str(release), "seconds": 600},
                                   reason="with a held first run")
    first = platform.backfills.tick(bf.id)
    assert [f.state for f in first.fires] == [FireState.RUNNING, FireState.PENDING, FireState.PENDING]
    cancelled = platform.backfills.cancel(bf.id, "ben@example.com", "wrong params")
    assert cancelled.status == Status.CANCELLED and cancelled.driven  # its run still goes on
    with pytest.raises(Conflict, match="is CANCELLED"):
        platform.backfills.cancel(bf.id, ME, "twice")
    release.write_text("go")
    after = drive(platform, bf)  # follows the run in flight, starts nothing
    assert after.status == Status.CANCELLED and not after.driven
    assert [f.state for f in after.fires] == [FireState.DONE, FireState.PENDING, FireState.PENDING]
    platform.backfills.resume(bf.id, ME, "params were right after all")
    done = drive(platform, bf)
    assert done.status == Status.COMPLETED and [f.status for f in done.fires] == ["SUCCEEDED"] * 3
    actions = [(a.actor, a.action, a.reason) for a in platform.control.audit(100) if bf.id in a.details]
    assert set(actions) == {(ME, "backfill", "with a held first run"), ("ben@example.com", "backfill_cancel", "wrong params"),
                            (ME, "backfill_resume", "params were right after all")}


def test_what_a_backfill_refuses_says_which_field(platform: DevPlatform) -> None:
    b = platform.backfills
    cases = [
        (dict(job="every-minute", start="2026-01-01T00:00:00Z", end="2026-01-02T00:00:00Z"), "more than 1,000 fires"),
        (dict(job="hourly", start="2026-01-01T00:00:00Z", end="2099-01-01T00:00:00Z"), "in the future"),
        (dict(job="hourly", start="2026-01-02T00:00:00Z", end="2026-01-01T00:00:00Z"), "is after to"),
        (dict(job="hourly", start="yesterday", end="2026-01-01T00:00:00Z"), "from: 'yesterday' is not an ISO 8601"),
        (dict(job="flaky-load", start="2026-01-01T00:00:00Z", end="2026-01-02T00:00:00Z"), "has no schedule"),
        (dict(job="hourly", start="2026-01-01T00:00:00Z", end="2026-01-01T00:10:00Z"), "no fire of hourly"),
    ]
    for kwargs, message in cases:
        with pytest.raises(Invalid, match=re.escape(message)):
            b.create(kwargs["job"], ME, kwargs["start"], kwargs["end"], reason="checks")
    with pytest.raises(Invalid, match="a reason is required"):
        b.create("hourly", ME, "2026-01-01T00:00:00Z", "2026-01-01T02:00:00Z")
    with pytest.raises(Invalid, match="hourly has no param"):
        b.create("hourly", ME, "2026-01-01T00:00:00Z", "2026-01-01T02:00:00Z", params={"nope": 1}, reason="x")
    assert not [a for a in platform.control.audit(100) if a.reason == "checks"]  # nothing refused is audited


def test_the_cli_previews_starts_and_follows_a_backfill(platform: DevPlatform) -> None:
    def cli(*args: str):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(main, ["--root", str(platform.config.root), "backfill", *args,
                                         "--data-dir", str(platform.data_dir)])

    window = ("--from", "2026-08-01T00:00", "--to", "2026-08-01T02:00")  # New York time: 3 fires
    assert run_scheduled(platform, "hourly", "2026-08-01T05:30:00Z") == "SUCCEEDED"  # 01:30 EDT ran
    r = cli("hourly", *window, "--dry-run")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "hourly (America/New_York): 2 fires in the window, 1 to run (only-missed)"
    assert lines[1] == "  2026-08-01 Sat 00:30 EDT  2026-08-01T04:30:00Z  runs"
    assert lines[2].startswith("  2026-08-01 Sat 01:30 EDT  2026-08-01T05:30:00Z  has a record  (SUCCEEDED ")
    assert lines[3] == "dry run: nothing started"
    assert not [b for b in platform.backfills.of_job("hourly") if b.start.startswith("2026-08-01")]
    r = cli("hourly", *window)
    assert r.exit_code == 2 and "--reason is required" in r.output
    r = cli("hourly", *window, "--all", "--max-concurrent", "2", "-p", "mode=ok", "--reason", "re-run August 1st",
            "--detach")
    assert r.exit_code == 0, r.output
    backfill_id = re.search(r"^started (bf-[0-9a-f]{12}): 2 runs, 2 at a time \(", r.output, re.M)[1]
    r = cli(backfill_id)  # follow it to the end
    assert r.exit_code == 0, r.output
    assert re.search(r"^  2026-08-01T04:30:00Z  SUCCEEDED  bf-", r.output, re.M)
    assert r.output.rstrip().splitlines()[-1] == f"{backfill_id}: COMPLETED (2 SUCCEEDED)"
    # again, only the missed ones: none is left, which is said (no reason is asked for nothing)
    r = cli("hourly", *window)
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "hourly (America/New_York): 2 fires in the window, 0 to run (only-missed)"
    assert r.output.rstrip().splitlines()[-1] == "nothing to run: every fire in the window has a record (--all runs them again)"
    r = cli(backfill_id, "--cancel", "--reason", "too late")
    assert r.exit_code == 1 and f"{backfill_id} is COMPLETED" in r.output
    r = cli("hourly", "--from", "2026-08-01T00:00", "--to", "2099-01-01T00:00", "--dry-run")
    assert r.exit_code == 1 and "is in the future" in r.output


def test_the_api_previews_starts_reads_and_cancels_a_backfill_for_members_only(platform: DevPlatform,
                                                                                tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from portal_kit import BILLING, GROWTH, as_user, header_app

    client = TestClient(header_app(platform))
    window = {"from": "2026-09-01T00:00:00Z", "to": "2026-09-01T02:59:00Z"}
    r = client.get("/api/jobs/hourly/backfill-preview", params=window, headers=as_user(GROWTH))  # any reader
    assert r.status_code == 200 and [f["at"] for f in r.json()] == [f"2026-09-01T0{h}:30:00Z" for h in range(3)]
    assert all(f["runs"] and f["local"].endswith("-04:00") for f in r.json())
    body = window | {"reason": "API backfill", "params": {"mode": "wait", "release": str(tmp_path / "go")}}
    r = client.post("/api/jobs/hourly/backfills", json=body, headers=as_user(GROWTH))
    assert r.status_code == 403  # growth may read billing's jobs, not act on them
    r = client.post("/api/jobs/hourly/backfills", json=body | {"mode": "sometimes"}, headers=as_user(BILLING))
    assert r.status_code == 400
    r = client.post("/api/jobs/hourly/backfills", json=body, headers=as_user(BILLING))
    assert r.status_code == 202, r.text
    out = r.json()
    assert (out["status"], out["requested_by"], len(out["fires"]), out["url"]) == (
        "RUNNING", BILLING, 3, f"/backfills/{out['id']}")
    r = client.post(f"/api/backfills/{out['id']}/cancel", json={"reason": "not now"}, headers=as_user(BILLING))
    assert r.status_code == 200 and r.json()["status"] == "CANCELLED"
    r = client.post(f"/api/backfills/{out['id']}/cancel", json={"reason": "again"}, headers=as_user(BILLING))
    assert r.status_code == 409
    (tmp_path / "go").write_text("go")
    done = drive(platform, platform.backfills.get(out["id"]))  # whatever started before the cancel finishes
    r = client.get(f"/api/backfills/{out['id']}", headers=as_user(GROWTH))
    assert r.status_code == 200 and r.json()["status"] == "CANCELLED"
    assert [f["state"] for f in r.json()["fires"]] == [f.state.value for f in done.fires]
    assert all(f["state"] in ("pending", "done") for f in r.json()["fires"])
    listed = client.get("/api/backfills", params={"job": "hourly"}, headers=as_user(GROWTH)).json()
    assert out["id"] in [b["id"] for b in listed]
    assert client.get("/api/backfills/bf-000000000000", headers=as_user(GROWTH)).status_code == 404



def test_a_fire_whose_run_is_in_flight_is_never_started_again_even_with_all(platform: DevPlatform,
                                                                            tmp_path: Path) -> None:
    release = tmp_path / "release"
    fires = ["2026-10-05T10:30:00Z", "2026-10-05T11:30:00Z"]
    arn = platform.aws.start("hourly", execution_input.scheduled(fires[0], {"mode": "wait", "release": str(release),
                                                                            "seconds": 600}))
    name = arn.rsplit(":", 1)[1]
    deadline = time.monotonic() + 300  # hang guard
    while name not in (platform.control.repo.job_state("hourly").running if platform.control.repo.job_state("hourly") else ()):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    preview = platform.backfills.preview("hourly", fires[0], fires[1], mode="all")
    assert [(p.at, p.runs, p.covered_by) for p in preview] == [(fires[0], False, f"in flight: {name}"),
                                                               (fires[1], True, None)]
    release.write_text("go")
    platform.aws.wait(arn, timeout=300)


def test_a_backfill_goes_on_after_its_cli_is_interrupted(platform: DevPlatform, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    release = tmp_path / "release"
    # started with SIGINT ignored, as under nohup, `&` or some CI launchers (issue 65 item 10: the
    # CLI inherited it and ran to the end, and this test failed whenever the suite itself was so
    # started): the command installs its own handler, so the test holds however it is launched
    cli = subprocess.Popen(
        [str(Path(sys.executable).parent / "jobplane"), "--root", str(platform.config.root), "backfill", "hourly",
         "--from", "2026-10-10T00:00", "--to", "2026-10-10T01:59", "-p", "mode=wait", "-p", f"release={release}",
         "--reason", "interrupted on purpose", "--data-dir", str(platform.data_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    lines = []
    for line in cli.stdout:  # type: ignore[union-attr]
        lines.append(line)
        if line.startswith("  2026-") and "running" in line:  # its first run started: interrupt it
            cli.send_signal(signal.SIGINT)
            break
    rest = cli.communicate(timeout=300)[0]
    assert cli.returncode == 130, "".join(lines) + rest
    backfill_id = re.search(r"^started (bf-[0-9a-f]{12})", "".join(lines), re.M)[1]
    assert f"interrupted: {backfill_id} goes on" in rest
    release.write_text("go")
    deadline = time.monotonic() + 600  # hang guard: the platform's own driver finishes it
    while platform.backfills.get(backfill_id).status != Status.COMPLETED:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert [f.status for f in platform.backfills.get(backfill_id).fires] == ["SUCCEEDED", "SUCCEEDED"]


@pytest.mark.parametrize("window", [
    {"from": "0001-01-01T00:00:00Z", "to": "0001-01-01T05:00:00Z"},
    {"from": "0001-01-01T00:00:00", "to": "0001-01-02T00:00:00"},  # local time, New York: before year 1 in UTC
    {"from": "9999-12-31T20:00:00Z", "to": "9999-12-31T23:59:59Z"},
    {"from": "0001-01-01T00:00:00Z", "to": "2026-09-01T00:00:00Z"},
])
def test_dates_at_the_ends_of_the_calendar_are_a_clear_400_not_a_server_error(platform: DevPlatform,
                                                                               window: dict) -> None:  # type: ignore[type-arg]
    """Issue 40 item 11: a preview from year 0001 was a 500 (OverflowError)."""
    from fastapi.testclient import TestClient

    from portal_kit import BILLING, as_user, header_app

    client = TestClient(header_app(platform), raise_server_exceptions=False)
    r = client.get("/api/jobs/hourly/backfill-preview", params=window, headers=as_user(BILLING))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["message"]
    r = client.post("/api/jobs/hourly/backfills", json=window | {"reason": "edge"}, headers=as_user(BILLING))
    assert r.status_code == 400, r.text
