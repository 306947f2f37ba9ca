"""A first start of `jobplane dev` deploys each job from what its compile rendered, reading no job
file back (compiler/rendered_jobs.py, devserver/deploy_record.py; issue 66 item 5): the state
machines and schedules it creates are those a deploy from the files creates, the compile's shape
check stands in for the create's only where it is that check, and an entry made from another
file than the one compiled is not used."""

from __future__ import annotations

import dataclasses
import json
import sys
from datetime import datetime
from pathlib import Path

import pytest

from conftest import ROOT
from devkit import make_repo
from jobplane.compiler import fork_workers
from jobplane.contract import asl_shape
from jobplane.contract.bindings import bind
from jobplane.contract.catalog import Catalog, CatalogJob
from jobplane.contract.config import load_config
from jobplane.contract.names import schedule_name, state_machine_name, team_role_name
from jobplane.devserver.deploy_record import DeployRecord
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.definitions import DefinitionStore, key as definition_key
from jobplane.platform.local.compiled_roles import ScheduleRoles
from jobplane.platform.local.engine import LocalAWS, job_source

sys.path.insert(0, str(ROOT / "bench"))
from jobtree import write_repo  # noqa: E402  (the benches' one job generator)


def repository(kind: str, path: Path) -> Path:
    """The project's own example jobs; the tests' jobs; or generated ones in split team roots with
    secrets and Lambda steps (their own task definitions and runner functions)."""
    if kind == "examples":
        return ROOT
    if kind == "tests":
        make_repo(path)
        return path
    return Path(write_repo(path, 45, roots={"billing": 2, "growth": 1, "platform": 2}, mix=True))


class FirstStart:
    """A start on an empty data directory: what it deployed and how, and what a deploy of the
    files it compiled creates (each job's ASL and role read back from its file, bound to this
    start's resources, as LocalAWS.deploy_output's default source does)."""

    def __init__(self, root: Path, data: Path):
        platform = DevPlatform(load_config(root), data, 0, 0, run_scheduler=False, run_services=False,
                               snapshot_interval=3600).start()
        try:
            aws = platform.aws
            assert aws is not None and aws.catalog is not None
            self.jobs = sorted(platform.jobs)
            self.handed, self.read, self.kept = sorted(platform.deploy_handed), platform.deploy_read, platform.deploy_kept
            self.checked = aws.definitions_checked
            self.left = platform.rendered_jobs  # dropped once handed to the deploy
            sfn = aws.client("stepfunctions")
            self.machines = {m["name"]: sfn.describe_state_machine(stateMachineArn=m["stateMachineArn"])["definition"]
                             for m in sfn.get_paginator("list_state_machines").paginate().build_full_result()["stateMachines"]}
            scheduler = aws.client("scheduler")
            listed = scheduler.get_paginator("list_schedules").paginate().build_full_result()["Schedules"]
            # each schedule's role, by name (its ARN's last part)
            self.schedule_roles = {s["Name"]: scheduler.get_schedule(Name=s["Name"], GroupName=s["GroupName"])
                                   ["Target"]["RoleArn"].rsplit("/", 1)[1] for s in listed}
            prefix = platform.config.name_prefix
            roles = ScheduleRoles()
            self.from_files, self.roles_from_files = {}, {}
            # each definition recorded, and the object a record made from the files would hold
            s3 = aws.client("s3")
            self.recorded, self.recorded_from_files = {}, {}
            for where in aws.definitions_recorded:
                self.recorded[where] = s3.get_object(Bucket=aws.resources["items_bucket"], Key=where)["Body"].read()
            for job in aws.catalog.jobs:
                asl, role = job_source(platform.output_dir, job, roles)
                self.from_files[state_machine_name(prefix, job.name)] = bind(asl, aws.bindings())
                assert job.definition is not None
                where = definition_key(job.name, job.definition)
                if where in self.recorded:
                    stored = json.loads(self.recorded[where])
                    ((_, made),) = DefinitionStore(s3, "unused").to_record(
                        [(job, asl)], set(), stored["commit"], stored["image"],
                        datetime.strptime(stored["recorded_at"], "%Y-%m-%dT%H:%M:%SZ"), {job.name: stored["version"]})
                    self.recorded_from_files[where] = made.body()
                for i in range(len(job.schedule)):  # LocalAWS.deploy_schedules' role when the file names none
                    self.roles_from_files[schedule_name(prefix, job.name, i)] = (
                        role or team_role_name(prefix, job.team, "scheduler", "local", 1))
        finally:
            platform.stop()


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "forked-roots"])
@pytest.mark.parametrize("kind", ["examples", "tests", "generated"])
def test_a_first_start_deploys_what_its_compile_rendered_and_reads_no_job_file(
        kind: str, workers: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the roots' files made here or in forked workers, whose results come back pickled (root_pool.py)
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: workers)
    handed_documents: list[str] = []
    document = DeployRecord.document

    def counted(self: DeployRecord, job: CatalogJob) -> str | None:
        found = document(self, job)
        if found is not None:
            handed_documents.append(job.name)
        return found

    monkeypatch.setattr(DeployRecord, "document", counted)
    first = FirstStart(repository(kind, tmp_path / "repo"), tmp_path / "data")
    assert first.jobs and first.handed == first.jobs and first.read == [] and first.kept == []
    # each definition recorded from the document its compile made, the bytes a record from the files writes
    assert sorted(handed_documents) == first.jobs and len(first.recorded) == len(first.jobs)
    assert first.recorded == first.recorded_from_files
    assert first.checked == 0  # each definition's shape checked where its file was rendered
    assert first.left == {}
    # byte for byte what a deploy from the files creates, each schedule passing the same role
    assert first.machines == first.from_files
    assert first.schedule_roles and first.schedule_roles == first.roles_from_files


def test_an_entry_made_from_another_file_is_not_used(tmp_path: Path) -> None:
    """An entry is used only for the file it was made from: its path, its digest and its roles
    file's digest equal those compiled (the deploy record's own rule); else the job is read from
    its file. A definition whose shape the compile did not pass is checked at create."""
    platform = DevPlatform(load_config(make_repo(tmp_path / "repo").path), tmp_path / "data", 0, 0,
                           run_scheduler=False, run_services=False)
    platform.compile()
    catalog = Catalog.load(platform.output_dir)
    rendered = dict(platform.rendered_jobs)
    assert sorted(rendered) == sorted(j.name for j in catalog.jobs)
    wrong = "{}"  # what a used entry would deploy: no state machine at all
    other = {"every-minute": dataclasses.replace(rendered["every-minute"], file_sha="0" * 64, asl=wrong),
             "flaky-load": dataclasses.replace(rendered["flaky-load"], roles_sha="0" * 64, asl=wrong),
             "other-team": dataclasses.replace(rendered["other-team"],
                                               file=rendered["flaky-load"].file, asl=wrong)}
    unchecked = "slow-report"
    record = DeployRecord(tmp_path / "deployed.json", platform.digests,
                          {**rendered, **other, unchecked: dataclasses.replace(rendered[unchecked], shape_checked=False)})
    with LocalAWS() as aws:
        aws.deploy_output(platform.output_dir, source=record.source, checked=record.checked,
                          shape_checked=record.shape_checked)
        assert sorted(record.read) == sorted(other) and sorted(record.handed) == sorted(set(rendered) - set(other))
        assert aws.definitions_checked == len(other) + 1  # those read, and the one the compile did not pass
        sfn = aws.client("stepfunctions")
        roles = ScheduleRoles()
        for job in catalog.jobs:
            deployed = sfn.describe_state_machine(stateMachineArn=aws.state_machines[job.name])["definition"]
            assert deployed == bind(job_source(platform.output_dir, job, roles)[0], aws.bindings())
    record.save()
    saved = json.loads((tmp_path / "deployed.json").read_text())
    assert sorted(saved["jobs"]) == sorted(rendered)  # kept for the next start, the ones handed over too


def test_the_compiles_shape_check_stands_only_while_the_bound_values_keep_its_verdict(tmp_path: Path) -> None:
    """The shape check ran on the ASL with its tokens; the create's runs on it bound. A value that
    is not plain (a quote) can make a passing ASL no JSON once bound: then the create checks it
    again, and refuses it, as it would without the compile's check."""
    platform = DevPlatform(load_config(make_repo(tmp_path / "repo").path), tmp_path / "data", 0, 0,
                           run_scheduler=False, run_services=False)
    platform.compile()
    entry = platform.rendered_jobs["every-minute"]
    assert entry.shape_checked and "<<jobplane:table_name>>" in entry.asl
    assert asl_shape.plain({"a": "jp-table", "b": "arn:aws:states:::x"})
    assert not asl_shape.plain({"a": 'x"y'}) and not asl_shape.plain({"a": "x\\y"}) and not asl_shape.plain({"a": "\n"})
    with LocalAWS() as aws:
        aws.deploy("plain", entry.asl, shape_checked=True)
        with pytest.raises(Exception, match="Invalid State Machine Definition: not JSON"):
            aws.deploy("quoted", entry.asl, shape_checked=True, table_name='jp"table')
