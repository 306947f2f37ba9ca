"""A restart of `jobplane dev` keeps what did not change (issue 66 item 5): the compile evaluates
only the definitions whose file or imports changed, and the deploy reads only the compiled
files that changed (devserver/deploy_record.py); what the local AWS runs after a restart is
still exactly what the files say, and a damaged record or cache is never trusted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devkit import FakeClock, make_repo, utc
from jobplane.compiler.output import compile_all, read_output
from jobplane.contract.bindings import bind
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.definition_history import compare
from jobplane.platform.definitions import DefinitionStore, key as definition_key
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
    """What one start compiled and deployed, and what its local AWS then held; ``also``: (job,
    digest) of definitions to look up in its definitions store besides the deployed ones."""

    def __init__(self, root: Path, data: Path, also: tuple[tuple[str, str], ...] = ()):
        platform = DevPlatform(load_config(root), data, 0, 0, clock=FakeClock(utc("2027-03-01T10:00:30")),
                               run_scheduler=False, run_services=False, snapshot_interval=3600).start()
        try:
            assert platform.aws is not None
            self.jobs = sorted(platform.jobs)
            self.evaluated, self.reused = platform.evaluated, platform.evaluations_reused
            self.built_reused = platform.builds_reused
            self.files = read_output(platform.output_dir)
            self.kept, self.read = sorted(platform.deploy_kept), sorted(platform.deploy_read)
            self.handed = sorted(platform.deploy_handed)  # as this start's compile rendered them
            self.checked = platform.aws.definitions_checked  # definitions the create parsed and checked
            # the definitions store: what the deploy wrote, what it put back, and what the run
            # page, `jobplane diff` and re-runs then read through GetObject (platform/definitions.py)
            self.recorded = sorted(platform.aws.definitions_recorded)
            self.restored = platform.aws.definitions_restored
            assert platform.aws.catalog is not None and platform.control is not None
            self.digests = {j.name: str(j.definition) for j in platform.aws.catalog.jobs}
            self.versions = dict(platform.aws.versions)
            store = DefinitionStore(platform.aws.client("s3"), platform.aws.resources["items_bucket"])
            self.stored = {(job, digest): store.get(job, digest) for job, digest in (*self.digests.items(), *also)}
            self.version_of = {(job, digest): platform.control.runs.version_of(job, digest) for job, digest in self.stored}
            self.context = platform.control.context
            self.compared = ([line for line in compare(platform.control.context, "every-minute", "before", also[0][1],
                                                       "every-minute", "after", self.digests["every-minute"]).lines()]
                             if also else [])
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
    assert first.kept == [] and first.read == [] and first.handed == first.jobs  # no job file read back
    assert first.evaluated == len(first.jobs) and first.machines == first.from_files

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
    assert edited.handed == ["every-minute"] and edited.read == []
    assert edited.kept == [j for j in first.jobs if j != "every-minute"]
    assert "25200" in edited.machines["jp-every-minute"] and "25200" not in again.machines["jp-every-minute"]
    assert edited.machines == edited.from_files  # every job as its file says, the kept ones too
    assert edited.schedules.keys() == first.schedules.keys()

    job.unlink()  # a deleted job is gone from the local AWS after the restart
    removed = Started(repo_root, data)
    assert "every-minute" not in removed.jobs and "jp-every-minute" not in removed.machines
    assert not [s for s in removed.schedules if "every-minute" in s] and [s for s in first.schedules if "every-minute" in s]
    # its team's shared roles lose a member (roles.tf.json changed): its team-mates are taken from
    # the compile where it rendered their files again, else read again; the other team's job is kept
    assert set(removed.read) | set(removed.handed) | set(removed.kept) == set(first.jobs) - {"every-minute"}
    assert not set(removed.read) & set(removed.handed)
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
    assert set(after.read) | set(after.handed) <= {"slow-report", "typed-params"}
    assert set(after.kept) >= set(first.jobs) - {"slow-report", "typed-params"}


def _damage_entry(index: Path, entries: str, data_file: str, name: str, marker: bytes) -> dict[str, Any]:
    """One entry's bytes damaged in an index-plus-bytes file (devserver/indexed_file.py): the
    first ``marker`` in them gets its last character changed; returns the index as it was read."""
    read = json.loads(index.read_text())
    entry = read[entries][name]
    stored = index.parent / read[data_file]
    raw = stored.read_bytes()
    part = raw[entry["at"]:entry["at"] + entry["size"]]
    assert marker in part
    stored.write_bytes(raw[:entry["at"]] + part.replace(marker, marker[:-2] + b'x"', 1) + raw[entry["at"] + entry["size"]:])
    return read  # type: ignore[no-any-return]


def test_a_damaged_record_or_cache_is_not_trusted(repo_root: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = Started(repo_root, data)
    path = data / "deployed.json"
    # its key still matches the file: only its text is damaged
    _damage_entry(path, "jobs", "texts", "other-team", b'"StartAt"')
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
    # the changed file's job rendered again (taken from the compile), the others' files on disk as
    # they would be rendered (compiler/root_memo.py), so read
    assert unreadable.handed == ["other-team"] and unreadable.kept == []
    assert unreadable.read == [j for j in first.jobs if j != "other-team"]
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
    assert first.checked == 0  # each checked by the compile that rendered it (compiler/rendered_jobs.py)
    again = Started(repo_root, data)
    assert again.checked == 0 and again.machines == again.from_files

    job = repo_root / "jobs" / "billing" / "every-minute.jsonnet"
    job.write_text(job.read_text().replace("timezone: 'UTC',", "timezone: 'UTC', " + EDITED))
    edited = Started(repo_root, data)
    assert edited.handed == ["every-minute"] and edited.checked == 0
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


def test_a_restart_writes_no_definition_again_and_every_recorded_one_stays_readable(repo_root: Path,
                                                                                  tmp_path: Path) -> None:
    """moto's S3 starts empty: every restart wrote each definition again, one PutObject each
    (5,000 at 5,000 jobs: ~30 s of a restart), and an edited job's earlier definition was gone,
    so `jobplane diff` and the run page of a run from before the edit knew nothing of it. The
    definitions recorded are kept (devserver/definition_archive.py) and put back: a restart
    writes only what is new, and every definition deployed on the data directory stays readable
    through GetObject, with when it was first deployed."""
    data = tmp_path / "data"
    first = Started(repo_root, data)
    keys = sorted(definition_key(job, digest) for job, digest in first.digests.items())
    assert first.recorded == keys and first.restored == 0
    assert all(stored is not None for stored in first.stored.values())

    again = Started(repo_root, data)
    assert again.recorded == [] and again.restored == len(keys)
    assert again.digests == first.digests
    for found in (again.stored[job, digest] for job, digest in again.digests.items()):
        assert found is not None and found == first.stored[found.job, found.digest]  # first deployed then
        assert found.version == again.versions[found.job] == again.version_of[found.job, found.digest]

    job = repo_root / "jobs" / "billing" / "every-minute.jsonnet"
    job.write_text(job.read_text().replace("timezone: 'UTC',", "timezone: 'UTC', " + EDITED))
    before = ("every-minute", first.digests["every-minute"])
    edited = Started(repo_root, data, also=(before,))
    after = ("every-minute", edited.digests["every-minute"])
    assert after != before and edited.recorded == [definition_key(*after)] and edited.restored == len(keys)
    old, new = edited.stored[before], edited.stored[after]
    assert old is not None and new is not None and "25200" in json.dumps(new.document)
    assert old.document == first.stored[before].document  # type: ignore[union-attr]
    assert old.recorded_at == first.stored[before].recorded_at  # type: ignore[union-attr]
    # `jobplane diff` of a run from before the edit and one after: both known, the change named
    assert any("timeout" in line for line in edited.compared), edited.compared
    # the version recorded with the earlier definition was an earlier start's Step Functions': this
    # start published the edited one as that number, so a re-run of it must not start it
    assert first.stored[before].version == edited.versions["every-minute"]  # type: ignore[union-attr]
    assert old.version is None and edited.version_of[before] is None
    assert new.version == edited.versions["every-minute"] == edited.version_of[after]

    third = Started(repo_root, data, also=(before,))  # and so on: nothing new, nothing written
    assert third.recorded == [] and third.restored == len(keys) + 1
    assert third.stored[before] == old and third.stored[after] == new


def test_a_damaged_kept_definition_is_not_put_back(repo_root: Path, tmp_path: Path) -> None:
    """A kept object whose bytes do not match their digest is dropped and its definition, when
    deployed, recorded again; an index that does not parse is ignored whole. Either way the kept
    definitions are written anew, and the next start puts every one back."""
    data = tmp_path / "data"
    first = Started(repo_root, data)
    index = data / "definitions.json"
    key = definition_key("other-team", first.digests["other-team"])
    kept = _damage_entry(index, "objects", "bodies", key, b'"recorded_at"')
    bodies = data / kept["bodies"]
    damaged = Started(repo_root, data)
    assert damaged.recorded == [key] and damaged.restored == len(first.jobs) - 1
    assert all(stored is not None for stored in damaged.stored.values())
    assert damaged.stored["other-team", first.digests["other-team"]].recorded_at  # type: ignore[union-attr]
    assert not bodies.exists() and json.loads(index.read_text())["bodies"] != kept["bodies"]  # written anew

    renamed = json.loads(index.read_text())
    wrong = renamed["objects"].pop(key)  # an entry under another job's key: not that job's definition
    renamed["objects"][definition_key("every-minute", first.digests["other-team"])] = wrong
    index.write_text(json.dumps(renamed))
    moved = Started(repo_root, data, also=(("every-minute", first.digests["other-team"]),))
    assert moved.recorded == [key] and moved.restored == len(first.jobs) - 1
    assert moved.stored["every-minute", first.digests["other-team"]] is None

    index.write_text("{not json")
    unreadable = Started(repo_root, data)
    assert unreadable.restored == 0 and unreadable.recorded == sorted(
        definition_key(job, digest) for job, digest in first.digests.items())
    assert len(list(data.glob("definitions-*.bin"))) == 1  # the unnamed one removed
    whole = Started(repo_root, data)
    assert whole.recorded == [] and whole.restored == len(first.jobs)
