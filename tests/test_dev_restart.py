"""A restart of `jobplane dev` keeps what did not change (issue 66 item 5): the compile evaluates
only the definitions whose file or imports changed, and the deploy reads only the compiled
files that changed (devserver/deploy_record.py); what the local AWS runs after a restart is
still exactly what the files say, and a damaged record or cache is never trusted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devkit import FakeClock, make_repo, utc
from jobplane.compiler.output import compile_all, read_output
from jobplane.contract.bindings import bind
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.local.compiled_roles import ScheduleRoles
from jobplane.platform.local.engine import job_source

EDITED = "timeout: '7h',"  # in its state machine: 25,200 seconds
LIBRARY = "jobs/lib/billing_defaults.libsonnet"


@pytest.fixture
def repo_root(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    # a team library imported by two of the jobs (and by no other)
    repo.write(LIBRARY, "{ description: 'Billing, version 1.' }\n")
    for name in ("slow-report", "typed-params"):
        path = tmp_path / "repo" / "jobs" / "billing" / f"{name}.jsonnet"
        text = path.read_text().replace("local jp = import 'jobplane.libsonnet';",
                                        "local jp = import 'jobplane.libsonnet';\n"
                                        "local billing = import 'billing_defaults.libsonnet';", 1)
        path.write_text(text.replace("description: '", "description: billing.description + ' ' + '", 1))
    return tmp_path / "repo"


class Started:
    """What one start compiled and deployed, and what its local AWS then held."""

    def __init__(self, root: Path, data: Path):
        platform = DevPlatform(load_config(root), data, 0, 0, clock=FakeClock(utc("2027-03-01T10:00:30")),
                               run_scheduler=False, run_services=False, snapshot_interval=3600).start()
        try:
            assert platform.aws is not None
            self.jobs = sorted(platform.jobs)
            self.evaluated, self.reused = platform.evaluated, platform.evaluations_reused
            self.built_reused = platform.builds_reused
            self.files = read_output(platform.output_dir)
            self.kept, self.read = sorted(platform.deploy_kept), sorted(platform.deploy_read)
            self.checked = platform.aws.definitions_checked  # definitions the create parsed and checked
            sfn = platform.aws.client("stepfunctions")
            self.machines = {m["name"]: sfn.describe_state_machine(stateMachineArn=m["stateMachineArn"])["definition"]
                             for m in sfn.get_paginator("list_state_machines").paginate().build_full_result()["stateMachines"]}
            scheduler = platform.aws.client("scheduler")
            self.schedules = {s["Name"]: scheduler.get_schedule(Name=s["Name"], GroupName=s["GroupName"])
                              for s in scheduler.list_schedules()["Schedules"]}
            # what a deploy from the files themselves would create: every job's ASL read from its
            # compiled file, bound to this start's resources
            assert platform.aws.catalog is not None
            roles = ScheduleRoles()
            self.from_files = {f"jp-{j.name}": bind(job_source(platform.output_dir, j, roles)[0], platform.aws.bindings())
                               for j in platform.aws.catalog.jobs}
        finally:
            platform.stop()


def test_a_restart_after_an_edit_deploys_the_edited_job_and_keeps_the_others(repo_root: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = Started(repo_root, data)
    assert first.kept == [] and first.read == first.jobs and first.evaluated == len(first.jobs)
    assert first.machines == first.from_files

    again = Started(repo_root, data)  # nothing changed: nothing read again, the same definitions
    assert again.kept == first.jobs and again.read == [] and again.machines == again.from_files

    job = repo_root / "jobs" / "billing" / "every-minute.jsonnet"
    job.write_text(job.read_text().replace("timezone: 'UTC',", "timezone: 'UTC', " + EDITED))
    edited = Started(repo_root, data)
    assert (edited.evaluated, edited.reused) == (1, len(first.jobs) - 1)  # only the edited file evaluated
    # and only its job built: the others' documents were kept beside their files' results, and
    # the output is byte for byte a compile's from nothing
    assert first.built_reused == 0 and edited.built_reused == len(first.jobs) - 1
    from jobplane.platform.local.runner_identity import local_runner_image

    # (`jobplane dev` compiles with its runner's identity as each definition's image)
    assert edited.files == compile_all(load_config(repo_root), runner_image=local_runner_image()).files
    assert edited.read == ["every-minute"] and edited.kept == [j for j in first.jobs if j != "every-minute"]
    assert "25200" in edited.machines["jp-every-minute"] and "25200" not in again.machines["jp-every-minute"]
    assert edited.machines == edited.from_files  # every job as its file says, the kept ones too
    assert edited.schedules.keys() == first.schedules.keys()

    job.unlink()  # a deleted job is gone from the local AWS after the restart
    removed = Started(repo_root, data)
    assert "every-minute" not in removed.jobs and "jp-every-minute" not in removed.machines
    assert not [s for s in removed.schedules if "every-minute" in s] and [s for s in first.schedules if "every-minute" in s]
    # its team's shared roles lose a member (roles.tf.json changed): its team-mates are read again,
    # the other team's job is kept
    assert set(removed.read) | set(removed.kept) == set(first.jobs) - {"every-minute"}
    assert removed.kept == ["other-team"] and removed.machines == removed.from_files
    record = json.loads((data / "deployed.json").read_text())
    assert "every-minute" not in record["jobs"]


def test_a_library_edit_re_evaluates_exactly_its_users(repo_root: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = Started(repo_root, data)
    assert first.evaluated == len(first.jobs)
    (repo_root / LIBRARY).write_text("{ description: 'Billing, version 2.' }\n")
    after = Started(repo_root, data)
    assert (after.evaluated, after.reused) == (2, len(first.jobs) - 2)  # slow-report and typed-params
    assert after.machines == after.from_files
    # the users' compiled files changed (their description is in their Terraform), so they are
    # read again; the others are deployed from the record
    assert set(after.read) <= {"slow-report", "typed-params"} and set(after.kept) >= set(first.jobs) - {"slow-report", "typed-params"}


def test_a_damaged_record_or_cache_is_not_trusted(repo_root: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = Started(repo_root, data)
    path = data / "deployed.json"
    record = json.loads(path.read_text())
    entry = record["jobs"]["other-team"]  # its key still matches the file: only its text is damaged
    texts = data / record["texts"]
    kept = texts.read_bytes()
    text = kept[entry["at"]:entry["at"] + entry["size"]]
    assert b'"StartAt"' in text
    texts.write_bytes(kept[:entry["at"]] + text.replace(b'"StartAt"', b'"StartAx"', 1) + kept[entry["at"] + entry["size"]:])
    damaged = Started(repo_root, data)
    assert damaged.read == ["other-team"] and damaged.machines == damaged.from_files
    assert damaged.checked == 1  # its definition checked as it is deployed, the kept ones not again

    path.write_text("{not json")  # a record that does not parse: every job read from its file
    (data / "cache").mkdir(exist_ok=True)
    for kept in (data / "cache").glob("*.pickle"):
        kept.write_bytes(b"not a pickle")  # and an evaluation cache that does not read
    job = repo_root / "jobs" / "growth" / "other-team.jsonnet"
    job.write_text(job.read_text() + "\n// a change, so the compile runs\n")
    unreadable = Started(repo_root, data)
    assert unreadable.read == first.jobs and unreadable.kept == []
    assert unreadable.evaluated == len(first.jobs) and unreadable.machines == unreadable.from_files


def test_a_restart_reads_no_unchanged_compiled_file_and_rewrites_no_unchanged_record(repo_root: Path, tmp_path: Path) -> None:
    """The kept output is told unchanged from each file's size and time (compiled_stamp.py), the
    deploy record is not rewritten when every job was kept; an edited compiled file is still
    found, and compiled again."""
    data = tmp_path / "data"
    Started(repo_root, data)
    Started(repo_root, data)  # files written in the stamp's own clock tick are read once here
    record = data / "deployed.json"
    record_stat = record.stat()
    platform = DevPlatform(load_config(repo_root), data, 0, 0, run_scheduler=False, run_services=False)
    platform.compile()
    assert platform.compile_reused and platform.outputs_hashed == []
    again = Started(repo_root, data)
    assert again.read == [] and again.kept == again.jobs
    assert (record.stat().st_mtime_ns, record.stat().st_ino) == (record_stat.st_mtime_ns, record_stat.st_ino)
    assert again.machines == again.from_files

    # a compiled file changed by hand (same size, so only its time tells): read, and compiled again
    target = data / "compiled" / next(rel for rel in again.files if rel.endswith("every-minute.job.tf.json"))
    text = target.read_text()
    target.write_text(text.replace('"every-minute"', '"every-minutX"', 1))
    assert len(target.read_text()) == len(text) and target.read_text() != text
    platform = DevPlatform(load_config(repo_root), data, 0, 0, run_scheduler=False, run_services=False)
    platform.compile()
    assert not platform.compile_reused and target.read_text() == text
    assert platform.outputs_hashed == [target.relative_to(data / "compiled").as_posix()]


def test_a_restart_checks_only_the_definitions_not_checked_before(repo_root: Path, tmp_path: Path) -> None:
    """A definition the last start deployed from the same ASL (by the same moto and jobplane) is
    not parsed and checked again; an edited one is, a damaged entry's is, and every one is when
    the record was checked by another version."""
    data = tmp_path / "data"
    first = Started(repo_root, data)
    assert first.checked == len(first.jobs)
    again = Started(repo_root, data)
    assert again.checked == 0 and again.machines == again.from_files

    job = repo_root / "jobs" / "billing" / "every-minute.jsonnet"
    job.write_text(job.read_text().replace("timezone: 'UTC',", "timezone: 'UTC', " + EDITED))
    edited = Started(repo_root, data)
    assert edited.read == ["every-minute"] and edited.checked == 1
    assert "25200" in edited.machines["jp-every-minute"] and edited.machines == edited.from_files

    path = data / "deployed.json"
    record = json.loads(path.read_text())
    record["checked_by"] = "jobplane 0.0.0, moto 0.0.0"
    path.write_text(json.dumps(record))
    other = Started(repo_root, data)  # the ASL still kept, but each checked as it is deployed
    assert other.kept == other.jobs and other.checked == len(other.jobs)
    assert json.loads(path.read_text())["checked_by"] != "jobplane 0.0.0, moto 0.0.0"
    assert Started(repo_root, data).checked == 0


def test_the_record_names_its_texts_file_and_a_missing_one_is_not_trusted(repo_root: Path, tmp_path: Path) -> None:
    """The ASL texts live in one file beside the record (deploy_record.py); after each save only
    the one the record names is left, and without it every job is read from its file."""
    data = tmp_path / "data"
    first = Started(repo_root, data)
    job = repo_root / "jobs" / "billing" / "every-minute.jsonnet"
    job.write_text(job.read_text().replace("timezone: 'UTC',", "timezone: 'UTC', " + EDITED))
    Started(repo_root, data)  # a new save: a new texts file, the old one removed
    path = data / "deployed.json"
    texts = json.loads(path.read_text())["texts"]
    assert [p.name for p in data.glob("deployed-*.asl")] == [texts]
    (data / texts).unlink()
    missing = Started(repo_root, data)
    assert missing.read == first.jobs and missing.kept == [] and missing.machines == missing.from_files
    assert "25200" in missing.machines["jp-every-minute"]
