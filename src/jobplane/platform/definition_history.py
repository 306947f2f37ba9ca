"""What definition a run ran, and how it differs from another run's (issue 69 part 1): the one
reading the portal's run page, ``jobplane diff RUN_A RUN_B``, ``jobplane status`` and the API
share.

A run's digest is in its input (``ExecutionInput.definition``, stamped by whoever started it:
contract/definition_digest.py); the definitions themselves are in the store (platform/
definitions.py). "Changed since the previous run" compares with the job's run that started
before it (the job's history, newest first: the records' by-job index), skipping the records of
fires that never ran (MISSED: no input was ever sent).
"""

from __future__ import annotations

from dataclasses import dataclass

from jobplane.contract import datamodel as dm
from jobplane.contract import definition_digest
from jobplane.contract.definition_digest import Change
from jobplane.contract.records import ExecutionRecord
from jobplane.contract.statuses import ExecutionStatus
from jobplane.platform.context import PlatformContext
from jobplane.platform.definitions import DefinitionStore, StoredDefinition

#: How many of a job's earlier records are read to find its previous run (pages of 10).
PREVIOUS_SCAN = 50


def store(context: PlatformContext) -> DefinitionStore:
    """The deployment's store: the catalog bucket (locally the engine's)."""
    return DefinitionStore(context.s3, context.deployment.items_bucket)


@dataclass(frozen=True)
class Comparison:
    """Two runs' definitions: each digest (None: a run started before digests) and what is
    recorded of it (None: not in the store), and the changes from the first to the second
    (None: not known, a side is missing; empty: the same definition)."""

    before_run: str
    after_run: str
    before: str | None
    after: str | None
    before_stored: StoredDefinition | None
    after_stored: StoredDefinition | None

    @property
    def same(self) -> bool:
        return self.before is not None and self.before == self.after

    @property
    def changes(self) -> list[Change] | None:
        if self.same:
            return []
        if self.before_stored is None or self.after_stored is None:
            return None
        return definition_digest.diff(self.before_stored.document, self.after_stored.document)

    def lines(self) -> list[str]:
        """The comparison in words, one line each (what `jobplane diff` prints)."""
        head = [f"{self.before_run}: definition {definition_digest.short(self.before)}{_origin(self.before_stored)}",
                f"{self.after_run}: definition {definition_digest.short(self.after)}{_origin(self.after_stored)}"]
        changes = self.changes
        if self.same:
            return head + ["the same definition"]
        if changes is None:
            missing = [run for run, digest, stored in ((self.before_run, self.before, self.before_stored),
                                                       (self.after_run, self.after, self.after_stored))
                       if stored is None]
            return head + [f"the definitions differ; not recorded for {', '.join(missing)} (a run started before "
                           "definitions were kept, or a deploy that did not record them), so no details"]
        return head + [f"  {c.line()}" for c in changes]


def _origin(stored: StoredDefinition | None) -> str:
    if stored is None:
        return ""
    parts = [f"deployed {stored.recorded_at}" if stored.recorded_at else "",
             f"commit {stored.commit[:12]}" if stored.commit else "", f"image {stored.image}" if stored.image else ""]
    shown = ", ".join(p for p in parts if p)
    return f" ({shown})" if shown else ""


def compare(context: PlatformContext, job_before: str, run_before: str, digest_before: str | None,
            job_after: str, run_after: str, digest_after: str | None) -> Comparison:
    kept = store(context)

    def stored(job: str, digest: str | None) -> StoredDefinition | None:
        return kept.get(job, digest) if digest else None

    return Comparison(run_before, run_after, digest_before, digest_after, stored(job_before, digest_before),
                      stored(job_after, digest_after))


def previous_run(context: PlatformContext, job: str, started_at: str | None) -> ExecutionRecord | None:
    """The job's run that started last before ``started_at`` (a MISSED fire's record is no run)."""
    if not started_at:
        return None
    repo = context.repo
    kwargs = {"TableName": repo.table, "IndexName": dm.GSI_BY_OWNER,
              "KeyConditionExpression": "gsi1pk = :p AND gsi1sk < :t",
              "ExpressionAttributeValues": {":p": {"S": dm.job_partition(job)}, ":t": {"S": started_at}},
              "ScanIndexForward": False, "Limit": 10}
    read = 0
    while read < PREVIOUS_SCAN:
        page = repo.ddb.query(**kwargs)
        for item in page.get("Items", []):
            record = ExecutionRecord.from_item(item)
            if record.status != ExecutionStatus.MISSED.value:
                return record
        read += len(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return None
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return None


@dataclass(frozen=True)
class RunDefinition:
    """What the run page says of a run's definition."""

    digest: str | None
    stored: StoredDefinition | None
    previous: Comparison | None  # with the job's previous run; None: it has none

    @property
    def short(self) -> str:
        return definition_digest.short(self.digest)


def run_definition(context: PlatformContext, job: str, execution: str, digest: str | None,
                   started_at: str | None) -> RunDefinition:
    earlier = previous_run(context, job, started_at)
    comparison = None
    if earlier is not None and earlier.execution != execution:
        from jobplane.contract.execution_input import ExecutionInput

        given = ExecutionInput.read(earlier.given, earlier.started_at)
        comparison = compare(context, job, earlier.execution, given.definition, job, execution, digest)
    stored = comparison.after_stored if comparison is not None else (store(context).get(job, digest) if digest else None)
    return RunDefinition(digest, stored, comparison)
