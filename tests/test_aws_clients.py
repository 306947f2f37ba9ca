"""platform/aws_clients.py's loader finds a service's model without listing every service
botocore ships (issue 54 item 5: ~25 ms of `jobplane run`'s CPU before its run could start):
what it loads must be exactly what botocore's own loader loads, and a name botocore does not
ship must fail as it fails there."""

from __future__ import annotations

import pytest
from botocore.exceptions import UnknownServiceError
from botocore.loaders import create_loader

from jobplane.platform import aws_clients

#: every service the platform and its CLI make clients of, and the model types a client loads
SERVICES = ("dynamodb", "stepfunctions", "scheduler", "logs", "sqs", "sns", "s3", "sts", "ecs", "events", "ssm",
            "secretsmanager", "lambda")
TYPES = ("service-2", "endpoint-rule-set-1", "paginators-1", "waiters-2")


@pytest.mark.parametrize("service", SERVICES)
def test_the_loader_loads_what_botocore_loads(service: str) -> None:
    ours, stock = aws_clients._loader(None), create_loader(None)
    assert ours.search_paths == stock.search_paths
    for type_name in TYPES:
        try:
            expected = stock.load_service_model(service, type_name)
        except Exception as e:  # noqa: BLE001 - a type a service has no file of fails alike
            with pytest.raises(type(e)):
                ours.load_service_model(service, type_name)
            continue
        assert ours.load_service_model(service, type_name) == expected, (service, type_name)
    # an explicit version is botocore's own path
    version = stock.determine_latest_version(service, "service-2")
    assert ours.load_service_model(service, "service-2", version) == stock.load_service_model(service, "service-2", version)


def test_the_loader_refuses_an_unknown_service_as_botocore_does() -> None:
    with pytest.raises(UnknownServiceError) as ours:
        aws_clients._loader(None).load_service_model("no-such-service", "service-2")
    with pytest.raises(UnknownServiceError) as stock:
        create_loader(None).load_service_model("no-such-service", "service-2")
    assert str(ours.value) == str(stock.value)


def test_clients_are_made_with_that_loader_and_answer_as_usual() -> None:
    ddb = aws_clients.client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
                             aws_access_key_id="x", aws_secret_access_key="y")
    assert type(aws_clients._session.get_component("data_loader")).__name__ == "_Loader"
    assert ddb.meta.service_model.service_name == "dynamodb" and "GetItem" in ddb.meta.service_model.operation_names
    with pytest.raises(UnknownServiceError):
        aws_clients.client("no-such-service", region_name="us-east-1")
