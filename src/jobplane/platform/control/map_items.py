"""A run's map items (``jp.map``): read them, and re-run only the failed ones.

A re-run of failed items is a re-run from the map's ``each`` step (the compiled Route goes
straight to the Map: compiler/map_states.py ``map_routes``) whose list is the failed items alone,
written under the new run's name before it starts (contract/map_items.py), each with its index
in the original list, so the new run's records line up with the old ones. It is audited
(``rerun_failed_items``) all or nothing like every action: a start that fails removes the entry
and the list it wrote.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

from jobplane.contract import execution_input, map_items
from jobplane.contract.map_items import ItemOutcome
from jobplane.contract.step_kinds import per_item_steps
from jobplane.platform.control.access import Actor
from jobplane.contract.types import JsonObject
from jobplane.platform.control.errors import Conflict, Invalid, NotFound, check_reason
from jobplane.platform.context import PlatformContext
from jobplane.platform.control.reads import Reads
from jobplane.platform.control.runs import Runs, idempotent_name, rerun_params
from jobplane.platform.control.views import ExecutionSubject
from jobplane.platform.timeline import Patience
from jobplane.platform.map_records import (FIRST_FEW, ItemAttempts, MapProgress, item_attempts, item_outcomes,
                                           item_record, item_total, progress, with_own_errors)

if TYPE_CHECKING:  # the catalog's models (pydantic) load with the catalog
    from jobplane.contract.catalog import CatalogJob, CatalogStep


#: how many failed items of a map a listing of its items gives their own error line (the rest say
#: their task's exit code; the portal's item page is where one is looked at)
ITEM_LOG_READS = 100


def map_steps(entry: CatalogJob) -> list[CatalogStep]:
    return per_item_steps(entry.steps)


class MapItems:
    """A run's map items: read them, re-run the failed ones (authorized and audited by ``runs``)."""

    def __init__(self, context: PlatformContext, reads: Reads, runs: Runs):
        self.context, self.reads, self.runs = context, reads, runs
        self.deployment, self.ddb = context.deployment, context.ddb

    def map_progress(self, execution: str, loaded: ExecutionSubject | None = None,
                     own_errors: bool = True) -> list[MapProgress]:
        """Each map of the run: done, failed, running, waiting of N, and its failed items (the
        first few with their step's own error line, unless ``own_errors`` is False: counts only)."""
        subject = loaded if loaded is not None and loaded.execution == execution else self.reads.subject(execution)
        entry = self.reads.entry(subject.job)
        maps = map_steps(entry)
        if not maps:
            return []
        s3 = self.context.s3
        totals = {}
        for m in maps:
            total = item_total(s3, self.deployment.items_bucket, subject.job, execution, m.name)
            if total is not None:
                totals[m.name] = total
        # the run's record is written when it ends: without one its WAITING items still wait
        live = subject.record is None or subject.record.status == "RUNNING"
        # the first few failed items of each map with their step's own error line (their logs)
        outcomes = item_outcomes(self.ddb, self.deployment.table, execution)
        outcomes = with_own_errors(outcomes, self.context.logs) if own_errors else outcomes
        pooled = frozenset(m.name for m in maps if m.parallel and m.parallel[1].pool)
        return progress(outcomes, totals, live, pooled)

    def items(self, execution: str, map_name: str | None = None) -> list[ItemOutcome]:
        """Every item record; the first :data:`ITEM_LOG_READS` failed ones of each map with their
        step's own error line (one log read each: a list of 10,000 failures reads 100 logs)."""
        self.reads.subject(execution)  # NotFound for an execution that is not there
        return with_own_errors(item_outcomes(self.ddb, self.deployment.table, execution, map_name), self.context.logs,
                               ITEM_LOG_READS)

    def item(self, execution: str, map_name: str, index: int, patience: Patience | None = None) -> ItemAttempts:
        """One item: its record and every try of its step, each with its error and the retry
        taken (read from its child execution's history: the Task's own retries are there only).
        ``patience``: a reader of many items waits out a throttled history read (a page a
        person looks at shows the throttle instead: platform/timeline.py ``Patience``)."""
        self.reads.subject(execution)  # NotFound for an execution that is not there
        outcome = item_record(self.ddb, self.deployment.table, execution, map_name, index)
        if outcome is None:
            raise NotFound(f"{execution} has no record of item {index} of map {map_name!r} (not ended or started yet, "
                           "or no such item)", {"execution": execution, "map": map_name, "index": index})
        return item_attempts(self.context.sfn, outcome, patience)

    def rerun_failed_items(self, execution: str, actor: Actor | str, map_name: str | None = None, reason: str = "",
                           params: JsonObject | None = None, name: str | None = None,
                           idempotency_key: str | None = None, loaded: ExecutionSubject | None = None) -> str:
        """Start a run of only the failed items of ``execution``'s map (the only one with failed
        items, or ``map_name``), with the original run's params and ``params``' changes; the new
        execution's name."""
        check_reason(reason, required=False)
        who = self.runs.authorize_run(execution, actor, loaded)
        original = self.runs.ended_run(who)
        entry = self.reads.entry(original.job)
        maps = {m.name: m for m in map_steps(entry)}
        if map_name is not None and map_name not in maps:
            raise Invalid(f"{original.job} has no map {map_name!r}" + (f"; maps: {', '.join(maps)}" if maps else ""),
                          {"map": "unknown"})
        failed = [o for o in item_outcomes(self.ddb, self.deployment.table, execution, map_name)
                  if o.failed and o.map in maps]
        by_map = sorted({o.map for o in failed})
        if not failed:
            raise Conflict(f"{execution} has no failed map items to re-run", {"execution": execution})
        if len(by_map) > 1:
            raise Invalid(f"items failed in several maps ({', '.join(by_map)}); name one with map",
                          {"map": "required", "maps": by_map})
        m = maps[by_map[0]]
        each = (m.parallel or [])[1]
        overrides = self.runs.checked_params(entry, params, complete=False)  # the original's values stay
        resolved = self.runs.reads.resolved_params(original.job, execution) if entry.param_set().calendar_defaults() else {}
        payload = execution_input.rerun(who.actor.name, execution, rerun_params(entry, original, overrides, resolved),
                                        each.name, definition=self.runs.rerun_definition(original, entry, current=False))
        version = self.runs.rerun_version(original.job, payload.definition, entry)  # its own definition's version
        name = name or (idempotent_name(original.job, who.actor.name, idempotency_key) if idempotency_key is not None
                        else uuid.uuid4().hex)
        s3 = self.context.s3
        # under map-reruns/, which no runner task role may write (contract/map_items.py rerun_key)
        bucket, key = self.deployment.items_bucket, map_items.rerun_key(original.job, name, m.name)
        shown = tuple((o.item if isinstance(o.item, str) else json.dumps(o.item))[:80] for o in failed[:FIRST_FEW])

        def start() -> str:
            s3.put_object(Bucket=bucket, Key=key, Body=map_items.encode([o.sent for o in failed],
                                                                        [o.index for o in failed]),
                          ContentType=map_items.CONTENT_TYPE, Metadata={map_items.COUNT_METADATA: str(len(failed))})
            return self.runs.start_execution(original.job, payload, name, version)

        from jobplane.contract import audit  # every kind of event (not on a run start's path: contract/audit_event.py)
        self.runs.start_once(original.job, payload, name, idempotency_key is not None, lambda: self.runs.audited(
            who, audit.RerunItems(original.job, name, execution, m.name, len(failed), shown), reason, start,
            undo=[lambda: s3.delete_object(Bucket=bucket, Key=key)]))
        self.context.repo.link_rerun(execution, name)
        return name
