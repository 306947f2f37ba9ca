"""The local AWS creates the compiled jobs' objects in moto's backends directly (moto_patches/backends.py, as
`terraform apply` creates them on AWS). This is its probe: the same job created through the API
and straight into the backends must read the same through every API our code reads them with,
and run the same. An upgrade of moto that changes a backend signature or adds something in its
API layer fails here."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.contract.bindings import bind
from jobplane.platform.local import moto_patches
from jobplane.platform.local.engine import LocalAWS

HERE = Path(__file__).resolve().parent
TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                           "Principal": {"Service": "scheduler.amazonaws.com"}}]})
# what differs between two objects of different names created at different instants
VARYING = {"ResponseMetadata", "name", "stateMachineArn", "creationDate", "RoleName", "Arn", "RoleId", "CreateDate",
           "Name", "CreationDate", "LastModificationDate", "RoleLastUsed"}


def same_shape(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in VARYING}


@pytest.mark.parametrize("server", [False, True], ids=["in-process", "server"])
def test_a_job_created_in_the_backends_reads_and_runs_as_one_created_through_the_api(server: bool) -> None:
    job = Job.from_definition({"name": "probe", "team": "billing", "timezone": "UTC",
                              "steps": [{"name": "work", "shell": ["true"]}]})
    with LocalAWS(server_port=0 if server else None, env={"PYTHONPATH": str(HERE)}) as aws:
        sfn, iam, scheduler = aws.client("stepfunctions"), aws.client("iam"), aws.client("scheduler")
        definition = bind(asl.compile_job(job, aws.prefix), aws.bindings())
        role = aws.resources["role_arn"]
        arns = {
            "api": sfn.create_state_machine(name="jobplane-api", definition=definition, roleArn=role,
                                            type="STANDARD")["stateMachineArn"],
            "direct": moto_patches.create_state_machine(aws.region, "jobplane-direct", definition, role),
        }
        described = {how: sfn.describe_state_machine(stateMachineArn=arn) for how, arn in arns.items()}
        assert described["direct"]["name"] == "jobplane-direct"
        assert described["direct"]["stateMachineArn"] == arns["direct"]
        assert same_shape(described["api"]) == same_shape(described["direct"])
        assert json.loads(described["direct"]["definition"]) == json.loads(definition)
        listed = {m["name"] for m in sfn.list_state_machines()["stateMachines"]}
        assert {"jobplane-api", "jobplane-direct"} <= listed

        roles = {"api": iam.create_role(RoleName="probe-api", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"],
                 "direct": moto_patches.create_role("probe-direct", TRUST)}
        got = {how: iam.get_role(RoleName=f"probe-{how}")["Role"] for how in roles}
        assert got["direct"]["Arn"] == roles["direct"]
        assert same_shape(got["api"]) == same_shape(got["direct"])

        group = aws._ensure_schedule_group()
        for how in ("api", "direct"):
            spec = dict(Name=f"probe-{how}", GroupName=group, ScheduleExpression="cron(0 3 * * ? *)",
                        ScheduleExpressionTimezone="Europe/Paris", State="DISABLED", FlexibleTimeWindow={"Mode": "OFF"},
                        Target={"Arn": arns[how], "RoleArn": roles[how], "Input": "{}"})
            if how == "api":
                scheduler.create_schedule(**spec)
                scheduler.update_schedule(**(spec | {"State": "ENABLED"}))
            else:
                moto_patches.put_schedule(aws.region, spec)
                moto_patches.put_schedule(aws.region, spec | {"State": "ENABLED"})  # exists: updated
        schedules = {how: scheduler.get_schedule(Name=f"probe-{how}", GroupName=group) for how in ("api", "direct")}
        assert schedules["direct"]["State"] == "ENABLED"
        assert schedules["direct"]["Target"]["Arn"] == arns["direct"]
        api_schedule, direct_schedule = same_shape(schedules["api"]), same_shape(schedules["direct"])
        api_schedule["Target"] = {k: v for k, v in api_schedule["Target"].items() if k not in ("Arn", "RoleArn")}
        direct_schedule["Target"] = {k: v for k, v in direct_schedule["Target"].items() if k not in ("Arn", "RoleArn")}
        assert api_schedule == direct_schedule

        runs = {}
        for hour, (how, arn) in enumerate(arns.items()):  # one job's two machines: fires of their own
            aws.state_machines[how] = arn
            runs[how] = aws.run(how, execution_input.scheduled(f"2027-01-01T0{hour}:00:00Z"))
        assert runs["direct"].status == runs["api"].status == "SUCCEEDED"
        assert runs["direct"].states_entered == runs["api"].states_entered


def test_the_running_executions_are_those_list_executions_answers_and_ended_ones_can_be_forgotten() -> None:
    jobs = {name: Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "policy": "ALWAYS_RUN",
                                      "steps": [{"name": "work", "shell": argv}]})
            for name, argv in (("slow", ["sleep", "120"]), ("quick", ["true"]))}
    with LocalAWS(env={"PYTHONPATH": str(HERE)}) as aws:
        sfn = aws.client("stepfunctions")
        for job in jobs.values():
            aws.deploy(job.name, asl.compile_job(job, aws.prefix))
        # an execution of a state machine that is not a deployed job's is not the engine's
        other = sfn.create_state_machine(name="not-a-job", roleArn=aws.resources["role_arn"], definition=json.dumps(
            {"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 120, "End": True}}}))["stateMachineArn"]
        sfn.start_execution(stateMachineArn=other)
        quick = aws.run("quick", execution_input.scheduled("2027-01-01T00:00:00Z"))
        # manual runs: two scheduled fires could be taken for duplicates of each other
        slow = [aws.start("slow", execution_input.manual(f"probe-{n}@example.com")) for n in (1, 2)]

        def listed() -> list[str]:
            return [e["executionArn"] for arn in aws.state_machines.values()
                    for e in sfn.list_executions(stateMachineArn=arn, statusFilter="RUNNING")["executions"]]

        for arn in slow:  # both in their step (a stop at the very start is stop_is_final's case)
            deadline = time.monotonic() + 120
            while "TaskSubmitted" not in [e["type"] for e in sfn.get_execution_history(executionArn=arn)["events"]]:
                assert time.monotonic() < deadline, sfn.describe_execution(executionArn=arn)
                time.sleep(0.05)
        assert quick.status == "SUCCEEDED"
        assert sorted(aws.running_executions()) == sorted(listed()) == sorted(slow)
        sfn.stop_execution(executionArn=slow[0])
        assert aws.wait(slow[0]).status == "ABORTED"
        assert aws.running_executions() == listed() == [slow[1]]

        # a long `jobplane dev` lets moto forget what ended long ago; what runs is never forgotten
        def everything() -> list[str]:
            return sorted(e["executionArn"] for arn in aws.state_machines.values()
                          for e in sfn.list_executions(stateMachineArn=arn)["executions"])

        assert len(everything()) == 3
        assert aws.forget_ended_executions(datetime.now(timezone.utc) - timedelta(minutes=5)) == 0
        assert aws.forget_ended_executions(datetime.now(timezone.utc) + timedelta(seconds=1)) == 2
        assert everything() == [slow[1]] and aws.running_executions() == [slow[1]]
        with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
            sfn.describe_execution(executionArn=quick.arn)
        assert sfn.describe_execution(executionArn=slow[1])["status"] == "RUNNING"
        aws.stop_all()
        assert aws.running_executions() == listed() == []
        assert sfn.list_executions(stateMachineArn=other, statusFilter="RUNNING")["executions"]  # not the engine's
        sfn.stop_execution(executionArn=sfn.list_executions(stateMachineArn=other)["executions"][0]["executionArn"])


def test_a_deploy_looks_up_what_exists_once_and_creates_what_moto_would() -> None:
    """moto's own creates walk every state machine (describe_state_machine) and every role for
    each create: quadratic, 40% of a 5,000-job deploy. A Terraform (one deploy) reads what
    exists once. Probe: the lookups each way for 30 creates (stock: 30 and 30, the deploy: none),
    and what a create of an existing object does is moto's (the machine returned unchanged, the
    role refused with the API's error)."""
    from moto.iam.models import iam_backends
    from moto.stepfunctions.responses import get_backend

    job = Job.from_definition({"name": "probe", "team": "billing", "timezone": "UTC",
                              "steps": [{"name": "work", "shell": ["true"]}]})
    with LocalAWS() as aws:
        sfn, iam = aws.client("stepfunctions"), aws.client("iam")
        definition = bind(asl.compile_job(job, aws.prefix), aws.bindings())
        role = aws.resources["role_arn"]
        machines, roles = get_backend(moto_patches.ACCOUNT, aws.region), iam_backends[moto_patches.ACCOUNT]["global"]
        walks = {"describe_state_machine": 0, "get_roles": 0}

        def counted(name: str, method: Any) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                walks[name] += 1
                return method(*args, **kwargs)
            return call

        machines.describe_state_machine = counted("describe_state_machine", machines.describe_state_machine)
        roles.get_roles = counted("get_roles", roles.get_roles)
        try:
            for i in range(30):  # stock: moto's creates, as the API runs them
                machines.create_state_machine(name=f"stock-{i}", definition=definition, roleArn=role, sm_type="STANDARD")
                roles.create_role(f"stock-{i}", TRUST, "/", None, None, [], 3600)
            stock = dict(walks)
            walks.update(dict.fromkeys(walks, 0))
            deploy = moto_patches.Terraform(aws.region)
            created = [(deploy.state_machine(f"deployed-{i}", definition, role), deploy.role(f"deployed-{i}", TRUST))
                       for i in range(30)]
            fixed = dict(walks)
        finally:
            del machines.describe_state_machine, roles.get_roles
        assert stock == {"describe_state_machine": 30, "get_roles": 30}
        assert fixed == {"describe_state_machine": 0, "get_roles": 0}

        for i, (machine_arn, role_arn) in enumerate(created):
            assert sfn.describe_state_machine(stateMachineArn=machine_arn)["name"] == f"deployed-{i}"
            assert iam.get_role(RoleName=f"deployed-{i}")["Role"]["Arn"] == role_arn
        assert same_shape(sfn.describe_state_machine(stateMachineArn=created[0][0])) == same_shape(
            sfn.describe_state_machine(stateMachineArn=created[0][0].replace("deployed-0", "stock-0")))
        assert same_shape(iam.get_role(RoleName="deployed-0")["Role"]) == same_shape(iam.get_role(RoleName="stock-0")["Role"])
        listed = [m["name"] for p in sfn.get_paginator("list_state_machines").paginate() for m in p["stateMachines"]]
        assert len([n for n in listed if n.startswith("deployed-")]) == 30

        # what exists: moto answers a create of an existing machine with it, unchanged; a role is refused
        again = moto_patches.Terraform(aws.region)
        other = definition.replace('"work"', '"other"')
        assert other != definition
        assert again.state_machine("deployed-3", other, role) == created[3][0]
        assert sfn.describe_state_machine(stateMachineArn=created[3][0])["definition"] == definition
        with pytest.raises(iam.exceptions.EntityAlreadyExistsException):
            iam.create_role(RoleName="deployed-3", AssumeRolePolicyDocument=TRUST)
        with pytest.raises(Exception, match="already exists"):
            again.role("deployed-3", TRUST)
        with pytest.raises(Exception, match="Invalid State Machine Definition"):  # the parser backend's check
            again.state_machine("not-a-machine", "{}", role)


@pytest.mark.parametrize("server", [False, True], ids=["in-process", "server"])
def test_a_log_stream_put_back_in_the_backend_reads_as_one_put_through_the_api(server: bool) -> None:
    """A start puts the kept step logs back straight into moto's CloudWatch Logs
    (moto_patches.LogStreams, engine.py restore_logs). Probe: the same events put both ways read
    the same through GetLogEvents and DescribeLogStreams, in a group that exists (the runner's)
    and one that does not yet (a Lambda step's: made either way); a stream that exists takes the
    events after its own; events older than PutLogEvents' 14 days are kept by neither."""
    now = int(time.time() * 1000)
    events = [{"timestamp": now - 15 * 86_400_000, "message": "too old"},
              *({"timestamp": now - 1000 + i, "message": f"line {i} é"} for i in range(5))]
    with LocalAWS(server_port=0 if server else None) as aws:
        logs = aws.client("logs")
        streams = moto_patches.LogStreams(aws.region)
        for group in (aws.log_group, "/aws/lambda/probe-runner"):
            try:
                logs.create_log_stream(logGroupName=group, logStreamName="api/1")
            except logs.exceptions.ResourceNotFoundException:
                logs.create_log_group(logGroupName=group)
                logs.create_log_stream(logGroupName=group, logStreamName="api/1")
            logs.put_log_events(logGroupName=group, logStreamName="api/1", logEvents=events)
            streams.put(group, "direct/1", events)

            def read(stream: str) -> list[tuple[int, str]]:
                got = logs.get_log_events(logGroupName=group, logStreamName=stream, startFromHead=True)["events"]
                return [(e["timestamp"], e["message"]) for e in got]

            assert read("direct/1") == read("api/1") == [(e["timestamp"], e["message"]) for e in events[1:]]
            described = {s["logStreamName"]: s for s in logs.describe_log_streams(logGroupName=group)["logStreams"]}
            assert set(described) == {"api/1", "direct/1"}
            shape = {"firstEventTimestamp", "lastEventTimestamp", "storedBytes"}
            assert {k: described["direct/1"].get(k) for k in shape} == {k: described["api/1"].get(k) for k in shape}

            # a stream that exists is kept, the events put after its own (a restart's replay
            # into a stream made since, either way)
            later = [{"timestamp": now, "message": "later"}]
            logs.put_log_events(logGroupName=group, logStreamName="api/1", logEvents=later)
            streams.put(group, "direct/1", later)
            assert read("direct/1") == read("api/1") and read("api/1")[-1] == (now, "later")


@pytest.mark.parametrize("server", [False, True], ids=["in-process", "server"])
def test_an_object_written_in_the_backend_reads_as_one_put_through_the_api(server: bool) -> None:
    """The deploy's record of definitions writes straight into moto's S3 (moto_patches.Objects,
    as the pipeline's record-definitions writes them on AWS). Probe: the same bytes written both
    ways read the same through GetObject, HeadObject and ListObjectsV2; a key that exists is not
    replaced either way (the API's conditional put answers 412 for one written directly)."""
    with LocalAWS(server_port=0 if server else None) as aws:
        s3, bucket = aws.client("s3"), aws.resources["items_bucket"]
        body = json.dumps({"job": "probe", "document": {"é": 1}}, ensure_ascii=False).encode()
        s3.put_object(Bucket=bucket, Key="definitions/api/1.json", Body=body, ContentType="application/json",
                      IfNoneMatch="*")
        objects = moto_patches.Objects(aws.region, bucket)
        assert objects.put_new("definitions/direct/1.json", body, "application/json")
        got = {how: s3.get_object(Bucket=bucket, Key=f"definitions/{how}/1.json") for how in ("api", "direct")}
        assert got["direct"]["Body"].read() == got["api"]["Body"].read() == body
        shape = {"ContentType", "ContentLength", "ETag"}
        assert {k: got["direct"][k] for k in shape} == {k: got["api"][k] for k in shape}
        head = s3.head_object(Bucket=bucket, Key="definitions/direct/1.json")
        assert (head["ContentType"], head["ContentLength"]) == ("application/json", len(body))
        listed = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="definitions/")["Contents"]}
        assert listed == objects.keys("definitions/") == {"definitions/api/1.json", "definitions/direct/1.json"}
        assert objects.keys("definitions/api/") == {"definitions/api/1.json"}

        # never replaced: neither way over the other's object
        assert not objects.put_new("definitions/api/1.json", b"other", "application/json")
        assert not objects.put_new("definitions/direct/1.json", b"other", "application/json")
        with pytest.raises(s3.exceptions.ClientError, match="PreconditionFailed"):
            s3.put_object(Bucket=bucket, Key="definitions/direct/1.json", Body=b"other", IfNoneMatch="*")
        for how in ("api", "direct"):
            assert s3.get_object(Bucket=bucket, Key=f"definitions/{how}/1.json")["Body"].read() == body


def test_the_deploys_name_check_gives_moto_s_verdict_and_error_for_every_name() -> None:
    """moto_patches.check_state_machine_name, one set intersection, against moto's own method."""
    from moto.stepfunctions.models import stepfunctions_backends

    backend = stepfunctions_backends[moto_patches.ACCOUNT]["us-east-1"]
    forbidden = list(backend.invalid_chars_for_name) + list(backend.invalid_unicodes_for_name)
    names = ["jp-nightly", "a" * 80, "a" * 81, "", "é-ünïcode", "x\u2029y"]
    names += [f"job{c}name" for c in forbidden] + [f"{c}" * 90 for c in forbidden[:5]] + ["b" * 90 + forbidden[0]]

    def verdict(check: Any, name: str) -> tuple[str, str] | None:
        try:
            check(name)
        except Exception as e:  # noqa: BLE001 - the error itself is compared
            return type(e).__name__, str(e)
        return None

    for name in names:
        assert (verdict(lambda n: moto_patches.check_state_machine_name(backend, n), name)
                == verdict(backend._validate_name, name)), name
    assert sum(verdict(backend._validate_name, n) is None for n in names) == 5  # the plain, 80-long, empty and two non-ASCII names
