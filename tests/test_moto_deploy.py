"""The local AWS creates the compiled jobs' objects in moto's backends directly (moto_deploy.py, as
`terraform apply` creates them on AWS). This is its probe: the same job created through the API
and straight into the backends must read the same through every API our code reads them with,
and run the same. An upgrade of moto that changes a backend signature or adds something in its
API layer fails here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.contract.bindings import bind
from jobplane.platform.local import moto_deploy
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
    job = Job.model_validate({"name": "probe", "team": "billing", "timezone": "UTC",
                              "steps": [{"name": "work", "shell": ["true"]}]})
    with LocalAWS(server_port=0 if server else None, env={"PYTHONPATH": str(HERE)}) as aws:
        sfn, iam, scheduler = aws.client("stepfunctions"), aws.client("iam"), aws.client("scheduler")
        definition = bind(asl.compile_job(job, aws.prefix), aws.bindings())
        role = aws.resources["role_arn"]
        arns = {
            "api": sfn.create_state_machine(name="jobplane-api", definition=definition, roleArn=role,
                                            type="STANDARD")["stateMachineArn"],
            "direct": moto_deploy.create_state_machine(aws.region, "jobplane-direct", definition, role),
        }
        described = {how: sfn.describe_state_machine(stateMachineArn=arn) for how, arn in arns.items()}
        assert described["direct"]["name"] == "jobplane-direct"
        assert described["direct"]["stateMachineArn"] == arns["direct"]
        assert same_shape(described["api"]) == same_shape(described["direct"])
        assert json.loads(described["direct"]["definition"]) == json.loads(definition)
        listed = {m["name"] for m in sfn.list_state_machines()["stateMachines"]}
        assert {"jobplane-api", "jobplane-direct"} <= listed

        roles = {"api": iam.create_role(RoleName="probe-api", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"],
                 "direct": moto_deploy.create_role("probe-direct", TRUST)}
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
                moto_deploy.put_schedule(aws.region, spec)
                moto_deploy.put_schedule(aws.region, spec | {"State": "ENABLED"})  # exists: updated
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
