"""Where a deployment is (its names, region, endpoint and credentials) and its catalog: what
the control plane is built on, locally and on AWS alike."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jobplane.contract import arns, names
from jobplane.contract.catalog_brief import JobBrief, find_job
from jobplane.contract.environment import RuntimeEnvironment
from jobplane.contract.layout import catalog_parts
from jobplane.contract.types import Client, JsonObject

if TYPE_CHECKING:  # the catalog's models (pydantic) load only where the whole catalog is read
    from jobplane.contract.catalog import Catalog

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Deployment:
    """Where a platform's resources are (the base module's outputs)."""

    table: str
    topic_arn: str
    name_prefix: str = "jobplane"
    region: str = "us-east-1"
    account_id: str = "123456789012"
    endpoint_url: str | None = None  # the embedded local AWS; None for real AWS
    catalog_path: Path | str | None = None  # the compiler's output dir or a catalog file, or s3://bucket/catalog/ on AWS
    log_group: str | None = None  # the step logs' CloudWatch Logs group (default: names.runner_log_group)
    # The embedded local AWS's per-start key (dev.json); None: boto3's standard credential chain.
    access_key_id: str | None = None
    secret_access_key: str | None = None

    @classmethod
    def from_environment(cls, env: RuntimeEnvironment | None = None) -> Deployment:
        """The deployment a Lambda handler or the portal's task runs in, from the environment the
        base module gives it (contract/environment.py), boto3's own credentials."""
        env = env or RuntimeEnvironment.from_environment()
        catalog = env.catalog
        return cls(table=env.table, topic_arn=env.topic_arn, name_prefix=env.name_prefix, region=env.region,
                   account_id=env.account_id, catalog_path=catalog if catalog.startswith("s3://") else Path(catalog),
                   log_group=env.log_group)

    def client(self, service: str, config: object = None) -> Client:
        """A boto3 client of ``service`` here (platform/aws_clients.py: without importing boto3);
        ``config``: a botocore Config (timeouts, retries) where the default ones do not fit."""
        from jobplane.platform.aws_clients import client

        kwargs: JsonObject = {"region_name": self.region}
        if config is not None:
            kwargs["config"] = config
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        if self.access_key_id and self.secret_access_key:
            kwargs |= {"aws_access_key_id": self.access_key_id, "aws_secret_access_key": self.secret_access_key}
        return client(service, **kwargs)

    @property
    def items_bucket(self) -> str:
        """Where maps' item lists are (contract/map_items.py): the base module's catalog bucket
        (``s3://<bucket>/catalog/``), or locally the engine's (platform/local/engine.py)."""
        where = str(self.catalog_path or "")
        if where.startswith("s3://"):
            return where[len("s3://"):].split("/", 1)[0]
        return f"{self.name_prefix}-catalog"

    @property
    def runner_log_group(self) -> str:
        return self.log_group or names.runner_log_group(self.name_prefix)

    def state_machine_arn(self, job: str) -> str:
        return arns.state_machine_arn(self.region, self.account_id, names.state_machine_name(self.name_prefix, job))

    def execution_arn(self, job: str, execution: str) -> str:
        return arns.execution_arn(self.region, self.account_id, names.state_machine_name(self.name_prefix, job),
                                  execution)

    def to_json(self) -> JsonObject:
        return {"table": self.table, "topic_arn": self.topic_arn, "name_prefix": self.name_prefix,
                "region": self.region, "account_id": self.account_id, "endpoint_url": self.endpoint_url,
                "catalog_path": str(self.catalog_path) if self.catalog_path else None,
                "log_group": self.log_group,
                "access_key_id": self.access_key_id, "secret_access_key": self.secret_access_key}

    @classmethod
    def from_json(cls, data: JsonObject) -> Deployment:
        data = dict(data)
        data.pop("log_dir", None)  # written by earlier versions (logs were local files)
        where = data.get("catalog_path")
        data["catalog_path"] = (where if str(where).startswith("s3://") else Path(where)) if where else None
        return cls(**data)


def load_catalog(deployment: Deployment) -> Catalog:
    """The compiler's catalog: a compiler output directory or one file (jobplane dev, a
    checkout), or on AWS the objects the team roots upload to the base module's bucket: every
    ``catalog/<team>.json`` under the base module's output catalog_uri (``s3://<bucket>/catalog/``),
    merged. A location that names one object (``.json``) is read alone."""
    from jobplane.contract.catalog import Catalog

    location = str(deployment.catalog_path or "")
    if not location:
        raise ValueError("a catalog or deployment.catalog_path is needed")
    if location.startswith("s3://"):  # the parts as _catalog_texts lists and reads them
        parts = [Catalog.model_validate_json(text) for text in _catalog_texts(deployment)]
        if location.endswith(".json"):
            return parts[0]
        if not parts:
            raise ValueError(f"no catalog under {location}: apply the team roots (docs/deploy.md)")
        return Catalog.merge(parts)
    return Catalog.load(Path(location))


def catalog_job(deployment: Deployment, job: str, s3: Client | None = None) -> JobBrief | None:
    """``job``'s entry alone (contract/catalog_brief.py), from the catalog ``load_catalog`` reads:
    the parts are read in turn until one holds it, and only that one is parsed (a command that
    starts one run need not validate every job of every team). None: no part holds it. ``s3``:
    the client to read them with (default: the deployment's)."""
    return find_job(_catalog_texts(deployment, s3), job)


def _catalog_texts(deployment: Deployment, s3: Client | None = None) -> Iterator[bytes]:
    """Each catalog part's bytes, from where ``load_catalog`` reads them."""
    location = str(deployment.catalog_path or "")
    if not location:
        raise ValueError("a catalog or deployment.catalog_path is needed")
    if location.startswith("s3://"):
        bucket, _, key = location[len("s3://"):].partition("/")
        s3 = s3 or deployment.client("s3")
        keys = [key] if key.endswith(".json") else sorted(
            o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key)
            for o in page.get("Contents", []) if o["Key"].endswith(".json"))
        for k in keys:
            body: bytes = s3.get_object(Bucket=bucket, Key=k)["Body"].read()
            yield body
        return
    path = Path(location)
    for part in catalog_parts(path) if path.is_dir() else [path]:
        yield part.read_bytes()
