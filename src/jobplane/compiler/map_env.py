"""What a ``jp.map``'s members add to their ECS task's environment (compiler/overrides.py):
the items step, where to write its list; an each step, its item, its index and the run's
execution name (a child execution's own ``$$.Execution`` is the child's). Its own module, so the
overrides (which the ECS executor and ``jobplane validate`` read) do not import the ASL builder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobplane.contract import map_items
from jobplane.contract.bindings import token

if TYPE_CHECKING:
    from jobplane.compiler.model import Job, Step


def role_in(job: Job, step: Step) -> tuple[str, Step] | None:
    """("items" or "each", the map) when ``step`` is a member of one of the job's maps."""
    for s in job.steps:
        if s.kind_ is not None and s.kind_.info.per_item:  # a map: its items step, then its each step
            for role, member in zip(("items", "each"), s.parallel or []):
                if step is member:
                    return role, s
    return None


def map_env(job: Job, step: Step) -> tuple[list[dict[str, str]], str | None]:
    """Extra container environment of a map's member, and the execution name's path for an each
    step (its own ``$$.Execution`` is the child's)."""
    role = role_in(job, step)
    if role is None:
        return [], None
    kind, m = role
    if kind == "items":
        # the key the map's ``items key`` state drew (a UUID per run: contract/map_items.py)
        return [{"Name": map_items.ENV_ITEMS_URI,
                 "Value.$": f"States.Format('s3://{token('items_bucket')}/{{}}', {map_items.KEY_PATH}.key)"}], None
    return [{"Name": map_items.ENV_ITEM, "Value.$": "States.JsonToString($.item)"},
            {"Name": map_items.ENV_ITEM_INDEX, "Value.$": "States.Format('{}', $.index)"}], "$.execution"
