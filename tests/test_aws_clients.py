"""platform/aws_clients.py's loader finds a service's model without listing every service
botocore ships (issue 54 item 5: ~25 ms of `jobplane run`'s CPU before its run could start):
what it loads must be exactly what botocore's own loader loads, and a name botocore does not
ship must fail as it fails there."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from botocore.regions import EndpointResolver
from botocore.exceptions import UnknownServiceError
from botocore.loaders import create_loader

from jobplane.platform import aws_clients, endpoint_data

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
        loaded = ours.load_service_model(service, type_name)
        # equal, and in the same order (a dict equals an OrderedDict whatever their orders)
        assert loaded == expected and json.dumps(loaded) == json.dumps(expected), (service, type_name)
    # an explicit version is botocore's own path
    version = stock.determine_latest_version(service, "service-2")
    assert ours.load_service_model(service, "service-2", version) == stock.load_service_model(service, "service-2", version)


@pytest.mark.parametrize("name", ["partitions", "sdk-default-configuration", "_retry"])
def test_the_loader_loads_the_session_data_botocore_loads(name: str) -> None:
    # the endpoint data and the rest a session loads by name, parsed into plain dicts
    ours, stock = aws_clients._loader(None).load_data(name), create_loader(None).load_data(name)
    assert ours == stock and json.dumps(ours) == json.dumps(stock)
    assert type(ours) is dict and type(stock) is not dict  # botocore's own is an OrderedDict
    with pytest.raises(Exception) as missing_ours:
        aws_clients._loader(None).load_data("no-such-data")
    with pytest.raises(Exception) as missing_stock:
        create_loader(None).load_data("no-such-data")
    assert type(missing_ours.value) is type(missing_stock.value)


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


def _stock_endpoints() -> dict[str, Any]:
    data: dict[str, Any] = create_loader(None).load_data("endpoints")
    return data


def _plain(value: Any) -> Any:
    """A parse with its lazy tables made dicts (iterating one parses it whole)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_the_endpoint_data_is_botocores_each_service_parsed_when_looked_up() -> None:
    stock = _stock_endpoints()
    ours = aws_clients._loader(None).load_data("endpoints")
    tables = [p["services"] for p in ours["partitions"]]
    assert tables and all(isinstance(t, endpoint_data.LazyServices) for t in tables)  # the layout was found
    # every service of every partition, each looked up alone in a fresh parse (before any
    # whole-table parse could answer for it), is botocore's entry
    for i, partition in enumerate(stock["partitions"]):
        for service, entry in partition["services"].items():
            fresh = aws_clients._loader(None).load_data("endpoints")["partitions"][i]["services"] \
                if service in ("dynamodb", "states", "sts") else tables[i]
            assert fresh[service] == entry and json.dumps(fresh[service]) == json.dumps(entry), (i, service)
        assert "no-such-service" not in tables[i] and tables[i].get("no-such-service") is None
    # the whole, in botocore's order, and equal as a mapping
    assert json.dumps(_plain(ours)) == json.dumps(stock) and ours == stock


def test_endpoints_resolve_as_botocore_resolves_them() -> None:
    stock = EndpointResolver(_stock_endpoints(), uses_builtin_data=True)
    ours = EndpointResolver(aws_clients._loader(None).load_data("endpoints"), uses_builtin_data=True)
    regions = ("us-east-1", "eu-west-1", "ap-northeast-1", "cn-north-1", "us-gov-west-1", "us-iso-east-1",
               "us-isob-east-1", "aws-global", "no-such-region")
    services = ("dynamodb", "states", "scheduler", "logs", "sqs", "sns", "s3", "sts", "ecs", "events", "ssm",
                "secretsmanager", "lambda", "iam", "no-such-service")
    for service in services:
        for region in regions:
            for fips, dual in ((False, False), (True, False), (False, True)):
                try:
                    expected = stock.construct_endpoint(service, region, use_fips_endpoint=fips,
                                                        use_dualstack_endpoint=dual)
                except Exception as e:  # noqa: BLE001 - a variant a partition has not fails alike
                    with pytest.raises(type(e)):
                        ours.construct_endpoint(service, region, use_fips_endpoint=fips, use_dualstack_endpoint=dual)
                    continue
                got = ours.construct_endpoint(service, region, use_fips_endpoint=fips, use_dualstack_endpoint=dual)
                assert got == expected, (service, region, fips, dual)
        for partition in stock.get_available_partitions():
            assert ours.get_available_endpoints(service, partition) == stock.get_available_endpoints(service, partition)
    assert ours.get_available_partitions() == stock.get_available_partitions()
    assert [ours.get_partition_for_region(r) for r in regions[:-2]] == \
        [stock.get_partition_for_region(r) for r in regions[:-2]]


def test_endpoint_data_not_laid_out_as_botocore_ships_it_is_parsed_whole() -> None:
    stock = _stock_endpoints()
    for text in (json.dumps(stock), json.dumps(stock, indent=4), json.dumps(stock, indent=2, separators=(",", " : "))):
        parsed = endpoint_data.parse(text)
        assert all(type(p["services"]) is dict for p in parsed["partitions"])
        assert parsed == stock and json.dumps(parsed) == json.dumps(stock)


def test_a_client_made_under_other_credentials_in_the_environment_signs_with_them(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """One process that acts for two deployments in turn (the operator CLI invoked twice in one
    test worker, each with its deployment's AWS_* environment) signed the second one's requests
    with the first one's key: the process-wide session had resolved the credentials once."""
    from jobplane.platform.aws_clients import client

    keys = []
    for key in ("AKIAFIRSTDEPLOYMENT", "AKIASECONDDEPLOYMENT"):
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", f"secret-of-{key}")
        made = client("sts", region_name="us-east-1")
        keys.append(made._request_signer._credentials.get_frozen_credentials().access_key)
    assert keys == ["AKIAFIRSTDEPLOYMENT", "AKIASECONDDEPLOYMENT"]
