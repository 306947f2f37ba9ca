"""One job of the catalog read as plain data: what starting and following one run needs of it
(its team, params, steps and their retry policies).

``jobplane run`` starts one job; loading the catalog's pydantic models (contract/catalog.py)
and validating every job of every team's part cost it ~0.15 s of start-up before its first
call, more with thousands of jobs (issue 54 item 5, bench/dev_e2e.py). This reader takes the
one job's entry from the parts' JSON with the standard library. The catalog models stay the
contract: the fields and defaults here are theirs (StepRetry's, CatalogJob's), and
tests/test_catalog_brief.py holds every example job's brief equal to its model's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from jobplane.contract.params import ParamSet, from_schema as params_from_schema
from jobplane.contract.types import JsonObject, JsonValue


@dataclass(frozen=True)
class RetryBrief:
    """A step's retry policy (catalog StepRetry, same defaults)."""

    attempts: int = 1
    interval: int = 30
    backoff: float = 2.0
    max_interval: int = 3600

    @classmethod
    def from_json(cls, raw: JsonValue) -> RetryBrief | None:
        if not isinstance(raw, dict):
            return None
        return cls(attempts=int(_number(raw, "attempts", 1)), interval=int(_number(raw, "interval", 30)),
                   backoff=float(_number(raw, "backoff", 2.0)),
                   max_interval=int(_number(raw, "max_interval", 3600)))


@dataclass(frozen=True)
class StepBrief:
    """A step, or a parallel group (``parallel``: its members)."""

    name: str
    retry: RetryBrief | None = None
    parallel: tuple[StepBrief, ...] | None = None
    kind: str | None = None  # the catalog's (``map``: `jobplane run` follows its items)

    @classmethod
    def from_json(cls, raw: JsonValue) -> StepBrief:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise ValueError(f"a catalog step without a name: {str(raw)[:200]}")
        members = raw.get("parallel")
        kind = raw.get("kind")
        return cls(name=str(raw["name"]), retry=RetryBrief.from_json(raw.get("retry")),
                   parallel=tuple(cls.from_json(m) for m in members) if isinstance(members, list) else None,
                   kind=kind if isinstance(kind, str) else None)


@dataclass(frozen=True)
class JobBrief:
    """A catalog job as a run needs it (CatalogJob's fields of the same names)."""

    name: str
    team: str
    params: JsonObject
    params_budget: int | None
    steps: tuple[StepBrief, ...]
    # what its definition says of its alerts (CatalogJob.notify, .runbook): the reconciler's
    # alerts carry them as the state machine's own do
    notify_channels: tuple[str, ...] = ()
    notify_events: tuple[str, ...] = ()
    runbook: dict[str, str] | None = None
    #: failures alert from the N-th in a row (platform/alert_streak.py): the reconciler's alerts
    #: carry it as the state machine's do
    notify_after_failures: int = 1
    #: the digest of its definition (CatalogJob.definition): what a run started of it carries
    definition: str | None = None
    #: typed params (CatalogJob.params_schema): what checked_params validates a run's against
    params_schema: JsonObject | None = None
    timezone: str = "UTC"

    def param_set(self) -> ParamSet:
        """The job's parameters, typed or plain (contract/params.py), as CatalogJob.param_set."""
        return params_from_schema(self.params_schema, self.params)

    @property
    def step_names(self) -> list[str]:
        """Every step a run can start from: the top-level steps, then the members of groups
        (as CatalogJob.step_names)."""
        return [s.name for s in self.steps] + [m.name for s in self.steps for m in s.parallel or ()]

    @property
    def retries(self) -> dict[str, RetryBrief]:
        """Each step's retry policy, groups' members included (steps without one are left out)."""
        return {s.name: s.retry for top in self.steps for s in (top.parallel or (top,)) if s.retry is not None}

    @classmethod
    def from_json(cls, raw: JsonObject) -> JobBrief:
        """A job of the catalog's JSON (a part as the compiler renders it, or a model's dump)."""
        name, team, params, steps = raw.get("name"), raw.get("team"), raw.get("params", {}), raw.get("steps")
        budget = raw.get("params_budget")
        if not (isinstance(name, str) and isinstance(team, str) and isinstance(params, dict)
                and isinstance(steps, list) and (budget is None or isinstance(budget, int))):
            raise ValueError(f"not a catalog job: {str(raw)[:200]}")
        notify, runbook = raw.get("notify") or {}, raw.get("runbook")
        channels, events = (notify.get("channels") or [], notify.get("events") or []) if isinstance(notify, dict) else ([], [])
        if not (isinstance(channels, list) and isinstance(events, list) and all(isinstance(x, str) for x in channels + events)
                and (runbook is None or (isinstance(runbook, dict) and all(isinstance(v, str) for v in runbook.values())))):
            raise ValueError(f"not a catalog job's notify or runbook: {str(raw)[:200]}")
        after = notify.get("after_failures", 1) if isinstance(notify, dict) else 1
        return cls(name=name, team=team, params=params, params_budget=budget,
                   steps=tuple(StepBrief.from_json(s) for s in steps), notify_channels=tuple(channels),
                   notify_events=tuple(events), runbook=_runbook(runbook),
                   notify_after_failures=after if isinstance(after, int) and after >= 1 else 1,
                   definition=_str_or_none(raw.get("definition")),
                   params_schema=schema if isinstance(schema := raw.get("params_schema"), dict) else None,
                   timezone=tz if isinstance(tz := raw.get("timezone"), str) else "UTC")


def _str_or_none(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None


def _runbook(raw: dict[str, str] | None) -> dict[str, str] | None:
    """A runbook with the Runbook model's fields and defaults (a part leaves out a default)."""
    if raw is None:
        return None
    return {"impact": raw.get("impact", ""), "workaround": raw.get("workaround", ""), "recovery": raw.get("recovery", "")}


def find_job(parts: Iterable[bytes], job: str) -> JobBrief | None:
    """``job``'s brief from the first catalog part (its JSON bytes) that holds it; None if none
    does. A part whose text does not hold the name is not parsed (a name of printable ASCII
    without quotes or backslashes is written verbatim in JSON; any other name parses every part)."""
    verbatim = job.isascii() and job.isprintable() and '"' not in job and "\\" not in job
    for text in parts:
        if verbatim and job.encode() not in text:
            continue
        catalog = json.loads(text)
        for raw in catalog.get("jobs", []) if isinstance(catalog, dict) else []:
            if isinstance(raw, dict) and raw.get("name") == job:
                return JobBrief.from_json(raw)
    return None


def _number(raw: JsonObject, key: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"catalog retry {key} is not a number: {value!r}")
    return value
