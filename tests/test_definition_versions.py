"""Every run stamped with the definition it ran (issue 69 part 1), on the local engine: the
compiled state machines on moto, the runner as real subprocesses.

The compiler takes a digest of each job's definition (contract/definition_digest.py) and writes
it where every starter reads it; each deploy keeps the definition by digest (platform/
definitions.py); a run's record carries the digest from its start, whoever started it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, Repo, local_control
from jobplane.contract import definition_digest, execution_input
from jobplane.contract.bindings import asl_of
from jobplane.contract.catalog import Catalog
from jobplane.platform.definitions import DefinitionStore
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.local.scheduler import LocalScheduler

JOB = """\
    local jp = import 'jobplane.libsonnet';
    {
      name: '%(name)s',
      team: 'billing',
      description: '%(description)s',
      schedule: %(schedule)s,
      timezone: 'UTC',
      policy: jp.policy.ALWAYS_RUN,
      params: { mode: 'ok', marker: null, seconds: 30, release: null },
      steps: [%(steps)s],
      after: %(after)s,
    }
"""
WORK = "jp.python('work', 'sample_apps.functions:behave')"
CHECK = "jp.python('check', 'sample_apps.functions:behave')"


def write_job(repo: Repo, name: str, *, steps: str = WORK, schedule: str = "jp.daily('02:00')", after: str = "[]",
              description: str = "first") -> None:
    repo.write(f"jobs/billing/{name}.jsonnet", JOB % {"name": name, "steps": steps, "schedule": schedule,
                                                      "after": after, "description": description})


def compile_repo(repo: Repo) -> Catalog:
    result = repo.cli("compile", "--out", str(repo.path / "out"))
    assert result.exit_code == 0, result.output
    return Catalog.load(repo.path / "out")


def job_file(repo: Repo, catalog: Catalog, job: str) -> dict[str, Any]:
    entry = catalog.job(job)
    assert entry is not None
    loaded: dict[str, Any] = json.loads((repo.path / "out" / entry.asl).read_text())
    return loaded


@dataclass
class Deployed:
    repo: Repo
    aws: LocalAWS
    catalog: Catalog

    def control(self) -> Any:
        return local_control(self.aws, self.repo.path / "out")

    def redeploy(self) -> Catalog:
        """Compile the repository again and deploy it, as a `jobplane dev` restart does."""
        self.catalog = compile_repo(self.repo)
        self.aws.deploy_output(self.repo.path / "out")
        return self.catalog

    def definition(self, job: str) -> str:
        entry = self.catalog.job(job)
        assert entry is not None and entry.definition is not None
        return entry.definition

    def ended(self, job: str, name: str) -> Any:
        self.aws.wait(f"{self.aws.state_machines[job].replace(':stateMachine:', ':execution:')}:{name}",
                      timeout=300)
        return self.control().execution(name, job)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    repo = Repo(tmp_path_factory.mktemp("versions"))
    write_job(repo, "ledger")
    write_job(repo, "follow", schedule="jp.manual", after="[jp.after('ledger')]")
    catalog = compile_repo(repo)
    with LocalAWS(env={"PYTHONPATH": str(ROOT / "tests")}) as aws:
        aws.deploy_output(repo.path / "out")
        yield Deployed(repo, aws, catalog)


def test_the_compile_stamps_each_job_with_the_digest_of_its_definition(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    write_job(repo, "ledger")
    write_job(repo, "follow", schedule="jp.manual", after="[jp.after('ledger')]")
    first = compile_repo(repo)
    ledger, follow = first.job("ledger"), first.job("follow")
    assert ledger is not None and follow is not None and ledger.definition and follow.definition
    # the digest is the one of the document the entry and its state machine make
    doc = job_file(repo, first, "ledger")
    assert ledger.definition == definition_digest.digest(
        definition_digest.document(ledger, asl_of(json.dumps(doc))))
    # the schedule's input and the after rule's input carry it, as every start does
    (schedule,) = doc["resource"]["aws_scheduler_schedule"].values()
    assert json.loads(schedule["target"]["input"])["definition"] == ledger.definition
    (target,) = job_file(repo, first, "follow")["resource"]["aws_cloudwatch_event_target"].values()
    template = target["input_transformer"]["input_template"]
    assert json.loads(template.replace("<name>", "n").replace("<time>", "t"))["definition"] == follow.definition
    # the same definition again: the same digest; a description is not what runs
    write_job(repo, "ledger", description="edited words only")
    assert compile_repo(repo).job("ledger").definition == ledger.definition  # type: ignore[union-attr]
    # another step list: another digest, the other job's unchanged
    write_job(repo, "ledger", steps=f"{WORK}, {CHECK}")
    again = compile_repo(repo)
    assert again.job("ledger").definition != ledger.definition  # type: ignore[union-attr]
    assert again.job("follow").definition == follow.definition  # type: ignore[union-attr]


def test_every_start_carries_the_digest_and_the_deploy_keeps_the_definition(deployed: Deployed) -> None:
    control = deployed.control()
    digest = deployed.definition("ledger")
    # a manual run (the CLI's, the portal's and the API's path)
    manual = control.runs.run_now("ledger", "alice", {"mode": "ok"})
    # a scheduled fire: the local scheduler sends the schedule's stored input, as AWS does
    when = datetime(2027, 3, 1, 2, 0, tzinfo=timezone.utc)
    clock = [when - timedelta(seconds=30)]
    scheduler = LocalScheduler(deployed.aws.client("scheduler"), deployed.aws.client("stepfunctions"),
                               deployed.aws.prefix, clock=lambda: clock[0])
    scheduler.start()
    clock[0] = when + timedelta(seconds=5)
    (fire,) = [f for f in scheduler.tick() if "ledger" in f.schedule]
    fired = deployed.aws.wait(fire.execution_arn, timeout=300)
    # an `after` start, as the compiled rule delivers the upstream's status event
    (after_arn,) = deployed.aws.deliver_status_event(fire.execution_arn, fired.status)
    deployed.aws.wait(after_arn, timeout=300)
    views = [deployed.ended("ledger", manual), deployed.ended("ledger", fire.execution_arn.rsplit(":", 1)[1]),
             deployed.ended("follow", after_arn.rsplit(":", 1)[1])]
    assert [v.input.definition for v in views] == [digest, digest, deployed.definition("follow")]
    # and `jobplane status --json` says which definition each job has deployed
    status = cli_on(deployed, "status", "--json")
    assert {j["job"]: j["definition"] for j in json.loads(status.output)} == {
        "ledger": digest, "follow": deployed.definition("follow")}
    # the deploy kept each definition under its digest, as compiled
    store = DefinitionStore(deployed.aws.client("s3"), f"{deployed.aws.prefix}-catalog")
    kept = store.get("ledger", digest)
    assert kept is not None and definition_digest.digest(kept.document) == digest
    assert kept.document["job"]["steps"][0]["name"] == "work"


def run_to_end(deployed: Deployed, job: str, **params: Any) -> Any:
    name = deployed.control().runs.run_now(job, "alice", {"mode": "ok", **params})
    return deployed.ended(job, name)


def cli_on(deployed: Deployed, *args: str, upload: bool = True) -> Any:
    """`jobplane ARGS --deployment` against the served engine, as an operator's shell on AWS: the
    catalog read from the bucket the team roots upload it to (``upload``: the compiled one, as an
    apply does), boto3's standard environment."""
    from click.testing import CliRunner

    from jobplane.cli import main
    from jobplane.contract.layout import catalog_parts

    aws = deployed.aws
    bucket = f"{aws.prefix}-catalog"
    for part in catalog_parts(deployed.repo.path / "out") if upload else []:
        aws.client("s3").put_object(Bucket=bucket, Key=f"catalog/{part.parent.name}.json", Body=part.read_bytes())
    out = deployed.repo.path / "deployment.json"
    out.write_text(json.dumps({"table": aws.resources["table_name"], "topic_arn": aws.resources["topic_arn"],
                               "region": aws.region, "account_id": "123456789012", "name_prefix": aws.prefix,
                               "catalog_uri": f"s3://{bucket}/catalog/", "log_group": aws.log_group}))
    env = {"JOBPLANE_DEPLOYMENT": str(out), "AWS_ENDPOINT_URL": aws.endpoint_url,
           "AWS_ACCESS_KEY_ID": aws.credentials.access_key_id, "AWS_SECRET_ACCESS_KEY": aws.credentials.secret_access_key,
           "AWS_DEFAULT_REGION": aws.region, "JOBPLANE_DATA_DIR": str(deployed.repo.path / "no-dev-here")}
    return CliRunner().invoke(main, ["--root", str(deployed.repo.path), *args], env=env, catch_exceptions=False)


def run_page(deployed: Deployed, execution: str) -> str:
    """The portal's run page of ``execution``, over the engine's control plane."""
    from types import SimpleNamespace

    from fastapi.testclient import TestClient

    from jobplane.contract.config import load_config
    from portal_kit import ADMIN, as_user, header_app

    control = deployed.control()
    platform = SimpleNamespace(config=load_config(deployed.repo.path), deployment=control.context.deployment,
                               control=control)
    page = TestClient(header_app(platform)).get(f"/executions/{execution}", headers=as_user(ADMIN))
    assert page.status_code == 200, page.text
    return page.text


def test_a_changed_definition_is_said_on_the_run_page_and_by_jobplane_diff(deployed: Deployed) -> None:
    first = run_to_end(deployed, "ledger")
    before = deployed.definition("ledger")
    write_job(deployed.repo, "ledger", steps=f"{WORK}, {CHECK}", schedule="jp.daily('03:00')")
    deployed.redeploy()
    second = run_to_end(deployed, "ledger")
    after = deployed.definition("ledger")
    assert (first.input.definition, second.input.definition) == (before, after) and before != after
    third = run_to_end(deployed, "ledger")
    # the run page: its definition, changed since the previous run, and how
    page = run_page(deployed, second.execution)
    assert f'data-definition="{after}"' in page and 'data-definition-change="changed"' in page
    assert "step check: added" in page and "schedule: " in page and first.execution[:12] in page
    assert 'data-definition-change="same"' in run_page(deployed, third.execution)
    # jobplane diff RUN_A RUN_B: the same words
    result = cli_on(deployed, "diff", first.execution, second.execution)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{first.execution}: definition {before[:12]}")
    assert "  step check: added {\"kind\":\"python\"" in result.output
    assert any(line.startswith("  schedule: [\"cron(0 2 * * ? *)\"] -> [\"cron(0 3 * * ? *)\"]") for line in lines)
    same = cli_on(deployed, "diff", second.execution, third.execution)
    assert same.exit_code == 0 and same.output.splitlines()[-1] == "the same definition"
    as_json = json.loads(cli_on(deployed, "diff", "--json", first.execution, second.execution).output)
    assert as_json["definitions"] == [before, after] and not as_json["same"]
    assert {"what": "step check", "before": None,
            "after": '{"kind":"python","target":"sample_apps.functions:behave"}'} in as_json["changes"]


def step_order(entered: list[str]) -> list[str]:
    """The steps a run ran, in their order, from the states it entered (each step's states are
    named for it: compiler/states.py)."""
    def first(step: str) -> int:
        return min((i for i, e in enumerate(entered) if step in e.split()), default=len(entered))
    return sorted((s for s in ("work", "check") if first(s) < len(entered)), key=first)


def test_a_rerun_runs_its_own_definition_as_its_published_version_unless_current(deployed: Deployed) -> None:
    """Issue 69 part 1: a re-run runs the definition of the run it re-runs, by default, even
    when the job's steps changed since: each deploy publishes a Step Functions version, the
    definitions store records it beside the definition, and the re-run starts that version's
    ARN; the old steps run, in their old order, with the real runner. ``current`` runs the
    deployed one; a version pruned since is refused, naming --current."""
    from jobplane.platform.control.errors import Conflict

    write_job(deployed.repo, "ledger", steps=f"{WORK}, {CHECK}", schedule="jp.daily('04:00')")
    deployed.redeploy()
    failed = run_to_end(deployed, "ledger", mode="fail")
    ran = failed.input.definition
    assert failed.status == "FAILED" and ran == deployed.definition("ledger")
    kept = DefinitionStore(deployed.aws.client("s3"), f"{deployed.aws.prefix}-catalog").get("ledger", ran)
    assert kept is not None and kept.version is not None and kept.version.startswith(deployed.aws.state_machines["ledger"] + ":")
    # deployed again with the steps in the other order: the re-run still runs work, then check
    write_job(deployed.repo, "ledger", steps=f"{CHECK}, {WORK}", schedule="jp.daily('04:00')")
    deployed.redeploy()
    assert deployed.definition("ledger") != ran
    control = deployed.control()
    name = control.runs.rerun(failed.execution, "alice", from_failed_step=False, params={"mode": "ok"})
    arn = f"{deployed.aws.state_machines['ledger'].replace(':stateMachine:', ':execution:')}:{name}"
    rerun = deployed.aws.wait(arn, timeout=300)
    assert rerun.status == "SUCCEEDED" and step_order(rerun.states_entered) == ["work", "check"], rerun.states_entered
    sfn = deployed.aws.client("stepfunctions")
    assert sfn.describe_execution(executionArn=arn)["stateMachineVersionArn"] == kept.version
    again = deployed.ended("ledger", name)
    assert again.input.definition == ran and again.input.rerun_of == failed.execution
    # asked for the deployed definition: it runs that one (check, then work), stamped so
    current_name = control.runs.rerun(failed.execution, "alice", from_failed_step=False, params={"mode": "ok"},
                                      current=True)
    current_arn = arn.rsplit(":", 1)[0] + f":{current_name}"
    current = deployed.aws.wait(current_arn, timeout=300)
    assert current.status == "SUCCEEDED" and step_order(current.states_entered) == ["check", "work"], current.states_entered
    assert "stateMachineVersionArn" not in sfn.describe_execution(executionArn=current_arn)
    assert deployed.ended("ledger", current_name).input.definition == deployed.definition("ledger")
    # deployed again without the step that failed: a re-run from it resumes there, in its own
    # definition (where the step still is)
    write_job(deployed.repo, "ledger", steps=CHECK, schedule="jp.daily('04:00')")
    deployed.redeploy()
    control = deployed.control()
    assert control.reads.step_names("ledger") == ["check"]
    resumed_name = control.runs.rerun(failed.execution, "alice", params={"mode": "ok"})
    resumed = deployed.aws.wait(arn.rsplit(":", 1)[0] + f":{resumed_name}", timeout=300)
    assert resumed.status == "SUCCEEDED" and step_order(resumed.states_entered) == ["work", "check"]
    assert deployed.ended("ledger", resumed_name).input.resume_from == "work"
    # its version pruned since: refused, saying how to run the deployed one
    sfn.delete_state_machine_version(stateMachineVersionArn=kept.version)
    with pytest.raises(Conflict) as refused:
        control.runs.rerun(failed.execution, "alice", from_failed_step=False, params={"mode": "ok"})
    assert "--current" in refused.value.message and "no longer exists" in refused.value.message
    cli = cli_on(deployed, "rerun", failed.execution, "--whole")
    assert cli.exit_code == 1 and "--current" in cli.output


def test_recording_and_reading_definitions_is_what_the_base_module_allows(deployed: Deployed) -> None:
    """`jobplane record-definitions` (the pipeline's step after an apply) keeps a definition the
    deploy did not, once, with its commit and image; the operator policy allows each call of it
    and of the reads (the portal's policy those of the reads), each new statement is needed, and
    no statement allows a write that could replace a kept definition."""
    import base_module as bm
    from iam_calls import DEFINITION_STATEMENTS, calls_into, iam_calls
    from iam_policy import Call, allowed, denied_calls

    from jobplane.platform.definition_history import run_definition

    ran = run_to_end(deployed, "ledger")
    write_job(deployed.repo, "ledger", steps=WORK, schedule="jp.daily('05:00')")
    compiled = compile_repo(deployed.repo)  # compiled, not deployed: its definition is not kept yet
    digest = compiled.job("ledger").definition  # type: ignore[union-attr]
    assert digest is not None and digest != ran.input.definition
    # applied as Terraform applies it (its state machine updated, a version published), not recorded
    entry = compiled.job("ledger")
    assert entry is not None
    deployed.aws.deploy("ledger", asl_of((deployed.repo.path / "out" / entry.asl).read_text()), digest=digest)
    published = deployed.aws.versions["ledger"]
    cli_on(deployed, "status")  # the compiled catalog uploaded, as the apply does, outside the recording
    recorded: list[dict[str, Any]] = []
    with calls_into(recorded):
        shown = run_definition(deployed.control().context, "ledger", ran.execution, ran.input.definition,
                               ran.started_at)
        diff = cli_on(deployed, "diff", ran.execution, ran.execution, upload=False)
        first = cli_on(deployed, "record-definitions", "--out", str(deployed.repo.path / "out"),
                       "--commit", "0123456789abcdef", "--image", "runner:abc", upload=False)
    again = cli_on(deployed, "record-definitions", "--out", str(deployed.repo.path / "out"), "--commit", "fedcba",
                   upload=False)
    assert shown.stored is not None and diff.exit_code == 0
    assert first.exit_code == 0 and first.output.startswith("1 new definition(s) recorded, 1 already kept"), first.output
    assert again.output.startswith("0 new definition(s) recorded, 2 already kept"), again.output
    kept = DefinitionStore(deployed.aws.client("s3"), f"{deployed.aws.prefix}-catalog").get("ledger", digest)
    assert kept is not None and (kept.commit, kept.image) == ("0123456789abcdef", "runner:abc")  # the first write stays
    assert kept.version == published  # the version the apply published of it, found by its definition
    # as IAM sees them, in the base module's catalog bucket
    bucket = bm.resolve("${aws_s3_bucket.catalog.id}", {"name_prefix": deployed.aws.prefix})
    for c in recorded:
        if c["service"] == "s3":
            c["params"] = dict(c["params"], Bucket=bucket)
    calls = iam_calls(recorded)
    assert {c.action for c in calls} >= {"s3:GetObject", "s3:ListBucket", "s3:PutObject", "dynamodb:Query",
                                         "states:ListStateMachineVersions", "states:DescribeStateMachine"}
    operator = bm.policy_statements("operator", {"name_prefix": deployed.aws.prefix})
    assert denied_calls(operator, calls) == []
    reads = [c for c in calls if c.action != "s3:PutObject" and not (c.action == "s3:ListBucket" and
                                                                     c.context.get("s3:prefix") == "definitions/")]
    reads = [c for c in reads if c.action not in ("kms:GenerateDataKey", "states:ListStateMachineVersions")]
    assert denied_calls(bm.policy_statements("portal", {"name_prefix": deployed.aws.prefix}), reads) == []
    for i, statement in enumerate(operator):
        if statement.get("sid") in DEFINITION_STATEMENTS:
            assert denied_calls(operator[:i] + operator[i + 1:], calls), statement.get("sid")
    # a PutObject without If-None-Match (one that would replace a kept definition) is allowed by nothing
    put = next(c for c in calls if c.action == "s3:PutObject")
    assert not allowed(operator, Call(put.action, put.resource, {}, "an unconditional write"))


def test_a_definition_kept_without_a_version_reruns_as_deployed_only_if_no_step_changed(deployed: Deployed) -> None:
    """A definition recorded before versions were published (no version beside it) can only run
    as deployed now: a re-run of one of its runs goes on with the deployed definition when no
    step changed (stamped with it), and is refused, naming what changed and --current, when one did."""
    from jobplane.platform.control.errors import Conflict

    store = DefinitionStore(deployed.aws.client("s3"), f"{deployed.aws.prefix}-catalog")

    def kept_without_version(steps: str, schedule: str) -> str:
        """A definition compiled and recorded as a deploy before versions did (not applied)."""
        write_job(deployed.repo, "ledger", steps=steps, schedule=schedule)
        entry = compile_repo(deployed.repo).job("ledger")
        assert entry is not None and entry.definition is not None
        store.record([(entry, asl_of((deployed.repo.path / "out" / entry.asl).read_text()))])
        kept = store.get("ledger", entry.definition)
        assert kept is not None and kept.version is None
        return entry.definition

    def run_stamped(digest: str) -> str:
        arn = deployed.aws.start("ledger", execution_input.manual("alice", {"mode": "ok"}, definition=digest))
        deployed.aws.wait(arn, timeout=300)
        return arn.rsplit(":", 1)[1]

    old = kept_without_version(f"{WORK}, {CHECK}", "jp.daily('06:00')")
    write_job(deployed.repo, "ledger", steps=f"{WORK}, {CHECK}", schedule="jp.daily('07:00')")
    deployed.redeploy()
    ran = run_stamped(old)
    control = deployed.control()
    again = deployed.ended("ledger", control.runs.rerun(ran, "alice", from_failed_step=False))
    assert again.status == "SUCCEEDED" and again.input.definition == deployed.definition("ledger") != old
    write_job(deployed.repo, "ledger", steps=f"{CHECK}, {WORK}", schedule="jp.daily('07:00')")
    deployed.redeploy()
    control = deployed.control()
    with pytest.raises(Conflict) as refused:
        control.runs.rerun(ran, "alice", from_failed_step=False)
    assert "--current" in refused.value.message and "step order: work, check -> check, work" in refused.value.message
