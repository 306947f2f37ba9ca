"""One platform context: what every part of the platform that reads or acts on a deployment
works over (the control plane's services, the periodic checks, backfills, the portal), built once
by :func:`platform_context` from a :class:`Deployment`.

It holds the deployment, its boto3 clients, the store (``repo``), the catalog, the clock and the
audit writer, so a periodic check takes this and no longer reaches through the control plane for
its clients (issue 63 item 6). What a run's start does not need is made when first used, so
`jobplane run` builds one without the catalog's models or the logs and scheduler clients
(tests/test_run_lean.py): the whole catalog, its entries, the scheduler, logs, S3, SNS and SQS
clients and the schedules' anchors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cached_property
from typing import TYPE_CHECKING

from jobplane.contract.types import Client
from jobplane.platform.deployment import Deployment, load_catalog
from jobplane.platform.repository import Repository

if TYPE_CHECKING:  # the catalog's models (pydantic) load with the catalog
    from jobplane.contract.audit_event import AuditEvent
    from jobplane.contract.catalog import Catalog, CatalogJob
    from jobplane.platform.anchors import ScheduleAnchors
    from jobplane.platform.schedule_health import DeployedSchedules
    from jobplane.platform.logs import StepLogs

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class AuditWriter:
    """Writes an action's audit entry before the action, and removes it if the action fails
    (the control plane's ``audited``: all or nothing)."""

    repo: Repository

    def write(self, actor: str, event: AuditEvent, reason: str, authority: str) -> str:
        return self.repo.add_audit(actor, event, reason, authority)

    def remove(self, entry: str) -> None:
        self.repo.delete_audit(entry)


@dataclass(frozen=True)
class PlatformContext:
    """A deployment and what reads and acts on it (see the module's docstring). Frozen: the
    fields are set once; the ``cached_property`` parts are each made once, when first used.
    ``given_catalog``: the catalog as the caller has it (``jobplane dev``: the one it just
    deployed), else read from the deployment when first needed."""

    deployment: Deployment
    ddb: Client
    sfn: Client
    repo: Repository
    audit: AuditWriter
    given_catalog: Catalog | None = None
    clock: Clock = utc_now

    def client(self, service: str) -> Client:
        """Another client of this deployment (one made per call: the callers keep theirs)."""
        return self.deployment.client(service)

    @cached_property
    def catalog(self) -> Catalog:
        return self.given_catalog if self.given_catalog is not None else load_catalog(self.deployment)

    @cached_property
    def entries(self) -> dict[str, CatalogJob]:
        return {j.name: j for j in self.catalog.jobs}

    @property
    def catalog_read(self) -> bool:
        """Whether the whole catalog is at hand (given, or its entries read): a run's start then
        takes its job's entry from it, not by reading that entry alone."""
        return self.given_catalog is not None or "entries" in self.__dict__

    @cached_property
    def scheduler(self) -> Client:
        return self.deployment.client("scheduler")

    @cached_property
    def s3(self) -> Client:
        return self.deployment.client("s3")

    @cached_property
    def logs(self) -> StepLogs:
        from jobplane.platform.logs import StepLogs  # not on a run start's path

        return StepLogs(self.deployment.client("logs"), self.deployment.runner_log_group)

    @cached_property
    def deployed_schedules(self) -> DeployedSchedules:
        """The jobs' schedules as deployed, each read again only once it changed."""
        from jobplane.platform.schedule_health import DeployedSchedules

        return DeployedSchedules(self.scheduler, self.deployment.name_prefix)

    @cached_property
    def anchors(self) -> ScheduleAnchors:
        from jobplane.platform.anchors import ScheduleAnchors  # and its thread pool: not a run's

        return ScheduleAnchors(self.scheduler, self.deployment.name_prefix)

    def schedule_anchors(self, entry: CatalogJob) -> tuple[datetime | None, ...]:
        """When each of the job's rate() schedules started (platform/anchors.py); cron() and
        at() schedules need none."""
        from jobplane.contract import names
        from jobplane.contract.schedule_kinds import kind_of  # not on `jobplane run`'s path (test_run_lean)

        anchors: list[datetime | None] = []
        for i, expression in enumerate(entry.schedule):
            rate = kind_of(expression).counts_from_deployment
            anchors.append(self.anchors.get(names.schedule_name(self.deployment.name_prefix, entry.name, i))
                           if rate else None)
        return tuple(anchors)

    def set_entries(self, entries: dict[str, CatalogJob]) -> None:
        """Stand in another catalog's entries (a test of many jobs' states without deploying
        them: tests/test_correctness.py)."""
        self.__dict__["entries"] = entries


def platform_context(deployment: Deployment, catalog: Catalog | None = None, *, load: bool = True,
                     clock: Clock = utc_now) -> PlatformContext:
    """The one context of ``deployment``. ``load``: read the whole catalog now (a long-lived
    reader: the platform, the portal; a missing or broken catalog fails here, not in a
    request); False: when first needed (`jobplane run`'s start-up, issue 54 item 5)."""
    ddb = deployment.client("dynamodb")
    repo = Repository(ddb, deployment.table)
    context = PlatformContext(deployment, ddb, deployment.client("stepfunctions"), repo, AuditWriter(repo),
                              catalog, clock)
    if load:
        _ = context.entries
    return context
