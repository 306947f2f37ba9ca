"""The moto patch ``service_casing``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_service_casing`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import datetime
import threading


def _epoch_millis(value: object) -> None:
    """SDK datetimes become epoch milliseconds (as the ECS integration returns them on AWS);
    left as datetimes they break the execution's JSON output."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items):
        if isinstance(item, datetime.datetime):
            value[key] = int(item.timestamp() * 1000)
        else:
            _epoch_millis(item)


def fix_service_casing() -> None:
    """Service integrations take and return the API's PascalCase names on AWS, whatever casing
    the SDK uses. moto 5.2.5 keeps LocalStack's converters but never calls them (upstream
    getmoto/moto#10076), so ``aws-sdk:sfn:describeExecution`` with ``ExecutionArn`` fails with
    States.Runtime ``'ExecutionArn'`` (boto3 wants ``executionArn``), and ``ecs:runTask`` with
    ``'Cluster'``. This restores the conversion both ways using botocore's service model.
    """
    import botocore.session
    from botocore import xform_name
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service as sts

    session = botocore.session.get_session()
    operations: dict[tuple[str, str], object] = {}
    lock = threading.Lock()

    def operation(service: str, action: str):
        key = (service, action)
        if key not in operations:
            with lock:  # load each service model once, even when 50 executions ask at once
                if key not in operations:
                    model = session.get_service_model(service)
                    by_snake = {xform_name(op): op for op in model.operation_names}
                    operations[key] = model.operation_model(by_snake[xform_name(action)])
        return operations[key]

    def _normalise_parameters(self, parameters, boto_service_name=None, service_action_name=None):
        op = operation(self._get_boto_service_name(boto_service_name), self._get_boto_service_action(service_action_name))
        if op.input_shape is not None:
            self._to_boto_request(parameters, op.input_shape)

    def _normalise_response(self, response, boto_service_name=None, service_action_name=None):
        op = operation(self._get_boto_service_name(boto_service_name), self._get_boto_service_action(service_action_name))
        if op.output_shape is not None:
            self._from_boto_response(response, op.output_shape)
        _epoch_millis(response)

    sts.StateTaskService._normalise_parameters = _normalise_parameters
    sts.StateTaskService._normalise_response = _normalise_response
