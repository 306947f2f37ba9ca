"""The moto patch ``ecs_task_errors``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_ecs_task_errors`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import json

#: "If a non-empty Failures field is encountered, the task is failed with an AmazonECS.Unknown
#: error" (https://docs.aws.amazon.com/step-functions/latest/dg/connect-ecs.html)
RUN_TASK_FAILURES = "AmazonECS.Unknown"


def fix_ecs_task_errors() -> None:
    """How an ``ecs:runTask`` Task fails when the RunTask call does (Step Functions developer
    guide, "Run Amazon ECS or Fargate tasks", https://docs.aws.amazon.com/step-functions/latest/dg/connect-ecs.html):
    a RunTask answer with ``failures`` and no task (no capacity, an ENI limit) fails the Task with
    ``AmazonECS.Unknown``; an error answer (a throttle) fails it with the service's error name,
    ``ECS.<Code>``, as the DynamoDB and Lambda integrations name theirs (``DynamoDB.<Code>``,
    ``Lambda.<Code>``, which moto already does). moto 5.2.5 reads ``Tasks[0]`` of any answer
    (an IndexError on failures) and has no error mapping for ECS: both end as ``States.Runtime``,
    which no compiled Retry may list (AWS never retries it), so a capacity shortfall or a throttle
    failed the step at once instead of being retried."""
    from botocore.exceptions import ClientError
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent, FailureEventException)
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_ecs as ecs
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    cls = ecs.StateTaskServiceEcs

    def failure(self, env, error, cause):
        return FailureEvent(env=env, error_name=CustomErrorName(error), event_type=HistoryEventType.TaskFailed,
                            event_details=EventDetails(taskFailedEventDetails=TaskFailedEventDetails(
                                error=error, cause=cause, resource=self._get_sfn_resource(),
                                resourceType=self._get_sfn_resource_type())))

    original_eval = cls._eval_service_task

    def _eval_service_task(self, env, resource_runtime_part, normalised_parameters, state_credentials):
        if self._get_boto_service_action() != "run_task":
            return original_eval(self, env, resource_runtime_part, normalised_parameters, state_credentials)
        client = ecs.boto_client_for(region=resource_runtime_part.region, service="ecs",
                                     state_credentials=state_credentials)
        response = client.run_task(**normalised_parameters)
        response.pop("ResponseMetadata", None)
        if response.get("failures") and not response.get("tasks"):
            raise FailureEventException(failure_event=failure(
                self, env, RUN_TASK_FAILURES, json.dumps({"Failures": response["failures"]}, default=str)))
        # as moto's own: the Task's output is the task's description, not RunTask's answer
        self._normalise_response(response=response, service_action_name="run_task")
        task = response["Tasks"][0]
        described = client.describe_tasks(cluster=task["ClusterArn"], tasks=[task["TaskArn"]])
        described.pop("ResponseMetadata", None)
        self._normalise_response(response=described, service_action_name="describe_tasks")
        env.stack.append(described)

    original_from_error = cls._from_error

    def _from_error(self, env, ex):
        if isinstance(ex, ClientError):
            error = f"ECS.{ex.response['Error']['Code']}"
            meta = ex.response.get("ResponseMetadata", {})
            cause = (f"{ex.response['Error'].get('Message', '')} (Service: AmazonECS; Status Code: "
                     f"{meta.get('HTTPStatusCode')}; Error Code: {ex.response['Error']['Code']}; "
                     f"Request ID: {meta.get('RequestId')}; Proxy: null)")
            return failure(self, env, error, cause)
        return original_from_error(self, env, ex)

    cls._eval_service_task = _eval_service_task
    cls._from_error = _from_error
