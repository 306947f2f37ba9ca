"""The moto patch ``client_reuse``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_client_reuse`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import threading
from typing import Any


def _ensure_request_id(parsed: dict | None = None, **_: object) -> None:
    """moto's interpreter formats a service error with ResponseMetadata.RequestId; an error
    answer without one (seen once in 100 concurrent runs over the HTTP server) made it crash with
    States.Runtime KeyError('RequestId') instead of reporting the service's error, which the
    state's Retry would have handled."""
    if isinstance(parsed, dict):
        parsed.setdefault("ResponseMetadata", {}).setdefault("RequestId", "local-no-request-id")


#: The access key the server-mode front (jobplane.platform.local.front) accepts; the
#: interpreter's own calls to localhost:$MOTO_PORT must be signed with it too.
SERVER_CREDENTIALS: Any = None  # the front's Credentials of this start (server mode)


def fix_client_reuse() -> None:
    """moto's interpreter builds a new boto3 client (from the shared default session, which is
    not thread-safe) for every Task state it runs. With 50 concurrent executions that dominated
    the run time (~0.5 s per skip path). Clients are thread-safe once built: build one per
    service, region, endpoint and key, under a lock, and reuse it.

    In server mode the client signs with this start's key (``SERVER_CREDENTIALS``) instead of
    moto's fixed ``ak``, since the front refuses every other key."""
    import boto3
    from botocore.config import Config
    from moto.settings import moto_server_port
    from moto.stepfunctions.parser.asl.utils import boto_client
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSeconds
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_aws_sdk, state_task_service_dynamodb, state_task_service_ecs, state_task_service_sfn,
        state_task_service_sns)

    cache: dict[tuple, object] = {}
    lock = threading.Lock()

    def boto_client_for(region, service, state_credentials=None):
        from moto.core.models import botocore_stubber

        # The endpoint is part of the key: a server-mode client calls localhost:$MOTO_PORT, and
        # a later LocalAWS in this process (a restarted dev platform) serves on another port.
        intercepted = botocore_stubber.enabled
        credentials = SERVER_CREDENTIALS
        key = (region, service, intercepted, moto_server_port(), credentials)
        with lock:
            if key not in cache:
                kwargs = {} if intercepted else {"endpoint_url": f"http://localhost:{moto_server_port()}"}
                client = boto3.client(
                    service, region_name=region,
                    aws_access_key_id=credentials.access_key_id if credentials else "ak",
                    aws_secret_access_key=credentials.secret_access_key if credentials else "sk",
                    config=Config(parameter_validation=False, retries={"max_attempts": 0, "total_max_attempts": 1},
                                  connect_timeout=TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS,
                                  read_timeout=TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS),
                    **kwargs)
                client.meta.events.register("after-call", _ensure_request_id)
                cache[key] = client
            return cache[key]

    boto_client.boto_client_for = boto_client_for
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    # a Distributed Map's ItemReader reads S3 with its own import of the function
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval import resource_eval_s3

    for module in (state_task_service_aws_sdk, state_task_service_dynamodb, state_task_service_ecs,
                   state_task_service_sfn, state_task_service_sns, lambda_eval_utils, resource_eval_s3):
        if hasattr(module, "boto_client_for"):
            module.boto_client_for = boto_client_for
