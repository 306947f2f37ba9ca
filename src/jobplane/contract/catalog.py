"""The catalog: what the compiler tells the runtime about every job (``catalog.json``, one part
per team root, merged by the readers).

The portal, the CLI, the slow-run check and the local engine read jobs from here instead of
parsing Jsonnet or Terraform; the compiler writes it from its validated model. Both sides use
these models, so a field renamed on one side fails to load on the other instead of reading as
missing. The file is a wire format between a compile and a deployed runtime: add fields with
defaults, never rename.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from jobplane.contract.blackouts import JobWindow, windows_of
from jobplane.contract.business_fires import CalendarSchedule
from jobplane.contract.calendars import CatalogCalendar
from jobplane.contract.layout import CATALOG_FILE
from jobplane.contract.output_files import OutputFiles
from jobplane.contract.params import ParamSet, from_schema as params_from_schema
from jobplane.contract import policies
from jobplane.contract.policies import ExecutionPolicy
from jobplane.contract.statuses import Event, Policy
from jobplane.contract.types import JsonObject

CATALOG_VERSION = 1
__all__ = ["CATALOG_FILE", "CATALOG_VERSION", "Catalog", "CatalogJob", "CatalogStep", "CatalogTeam"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class StepRetry(_Model):
    attempts: int = 1
    interval: int = 30
    backoff: float = 2.0
    max_interval: int = 3600


class CatalogStep(_Model):
    """A step, or a parallel group (``parallel`` set; no target or resources of its own)."""

    name: str
    kind: str
    description: str = ""
    parallel: list[CatalogStep] | None = None
    target: JsonObject | None = None  # the runner's target spec (runner contract)
    timeout: int | None = None
    retry: StepRetry | None = None
    cpu: int | None = None
    memory: int | None = None
    env: dict[str, str] = Field(default_factory=dict)
    secrets: list[str] = Field(default_factory=list)  # names only: the runtime never needs the ARNs
    pool: str | None = None  # the pool its attempts hold a slot of (docs/pools.md); unset: none
    stall_after: int | None = None  # seconds without progress that raise STALLED (platform/stalls.py)
    #: its expectations as written ({metric, check, on_fail, on_missing}; contract/expectations.py);
    #: written only when it has some
    expect: list[JsonObject] | None = None


class Runbook(_Model):
    impact: str
    workaround: str = ""
    recovery: str


class NotifySettings(_Model):
    channels: list[str] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    #: the job's failures alert from the N-th in a row (platform/alert_streak.py); written only when set
    after_failures: int = 1
    #: seconds after which an unacknowledged failure is announced once more (platform/renotify.py)
    renotify_after: int | None = None


class CatalogAfter(_Model):
    """One upstream job a job runs after (contract/upstream.py)."""

    job: str
    on: str = "SUCCEEDED"


class CatalogJob(_Model):
    name: str
    team: str
    description: str = ""
    runbook: Runbook | None = None
    source: str = ""  # the definition file, relative to the project
    schedule: list[str] = Field(default_factory=list)
    timezone: str = "UTC"
    enabled: bool = True
    policy: Policy
    timeout: int
    expected_duration: int | None = None
    missed_after: int | None = None  # seconds a fire may be late before it is MISSED (None: the default)
    deadline: str | None = None  # by when each scheduled fire must have SUCCEEDED (contract/deadlines.py)
    notify: NotifySettings = Field(default_factory=NotifySettings)
    params: JsonObject = Field(default_factory=dict)
    steps: list[CatalogStep]
    state_machine: str
    # where its ASL is stored, relative to the compiler's output directory: its Terraform file
    # (teams/<team>/<job>.job.tf.json; read with contract.bindings.asl_of), or an .asl.json file
    asl: str
    states: int  # how many states it has (the portal shows it; docs/state-machine.md)
    # Characters a run's params may take in its steps' ECS overrides (runner.params_in_override);
    # None: not known (a catalog from before it was added).
    params_budget: int | None = None
    after: list[CatalogAfter] = Field(default_factory=list)
    # A calendar job (contract/business_fires.py): ``schedule`` holds the crons deployed over the
    # calendar's years; these say what they were compiled from, for every reader of its fires.
    rules: list[str] = Field(default_factory=list)  # the schedule as declared (business(...) rules, cron, at)
    calendar: CatalogCalendar | None = None
    on_closed_day: str = "skip"
    #: The digest of its definition document (contract/definition_digest.py): every run started
    #: of this compile carries it (ExecutionInput.definition). None: a catalog from before it.
    definition: str | None = None
    # Typed params (contract/params.py): the JSON Schema every starter checks a run's params
    # against; None for a job of plain params only (``params`` are then its whole declaration).
    params_schema: JsonObject | None = None
    # The blackout windows it is in (contract/blackouts.py), each with its occurrences as UTC
    # intervals: written only when it names one, so other entries stay as they were.
    blackouts: list[JsonObject] = Field(default_factory=list)
    # pool -> the slots one run holds at once at most (compiler/peak.py, as `jobplane plan
    # --starts` adds them up); set only for a job that holds a pool: the timeline's next-24h
    # view draws each pool's expected demand from its fires (portal/timeline_fires.py)
    pool_peak: dict[str, int] = Field(default_factory=dict)
    #: The runner image its runs use, as the compile was told (JOBPLANE_RUNNER_IMAGE; `jobplane
    #: dev`: its runner's identity): part of its definition document, so a new image is a new
    #: definition (contract/definition_digest.py). None: not told (the digest is the JSON's alone).
    runner_image: str | None = None

    def param_set(self) -> ParamSet:
        """The job's parameters, typed or plain (contract/params.py)."""
        return params_from_schema(self.params_schema, self.params)

    @property
    def windows(self) -> list[JobWindow]:
        """Its blackout windows (contract/blackouts.py: a fire inside one is skipped or deferred)."""
        return windows_of(self.blackouts)

    @property
    def step_names(self) -> list[str]:
        """Every step a run can start from: the top-level steps, then the members of groups."""
        return [s.name for s in self.steps] + [m.name for s in self.steps for m in s.parallel or []]

    @property
    def stall_limits(self) -> dict[str, int]:
        """Step name -> its ``stall_after`` (seconds), for the steps that set one, groups' members
        included: what the stall check watches (platform/stalls.py)."""
        out: dict[str, int] = {}
        todo = list(self.steps)
        while todo:
            step = todo.pop()
            todo.extend(step.parallel or [])
            if step.stall_after is not None:
                out[step.name] = step.stall_after
        return out

    @property
    def policy_rules(self) -> ExecutionPolicy:
        """What the job's policy does (contract/policies.py): backfills and the portal ask it."""
        return policies.of(self.policy)

    @property
    def started_by(self) -> str:
        """What starts it besides a person, in words: its upstream jobs ("after load
        (SUCCEEDED)"), else "manual only"; a schedule is shown by its own words."""
        return ", ".join(f"after {a.job} ({a.on})" for a in self.after) or "manual only"

    @property
    def calendar_schedule(self) -> CalendarSchedule | None:
        """What computes its fires when it has a calendar (None: its schedule's own fires)."""
        if self.calendar is None:
            return None
        return CalendarSchedule(tuple(self.rules), self.calendar, self.on_closed_day, self.timezone)

    @property
    def scheduled(self) -> bool:
        """Fires on its own (has a schedule and is enabled)."""
        return self.enabled and bool(self.schedule)


class CatalogTeam(_Model):
    name: str
    channel: str | None = None


class Catalog(_Model):
    version: int = CATALOG_VERSION
    name_prefix: str
    teams: list[CatalogTeam] = Field(default_factory=list)
    jobs: list[CatalogJob] = Field(default_factory=list)

    def job(self, name: str) -> CatalogJob | None:
        return next((j for j in self.jobs if j.name == name), None)

    def render(self, jobs: list[dict[str, Any]] | None = None) -> str:
        """The file's bytes: stable (sorted keys), fields the compiler did not set left out;
        compact, as the job files (a program reads it; ``jq .`` shows it indented). ``jobs``:
        the entries as ``model_dump(mode="json", exclude_unset=True)`` gave them, in place of
        this catalog's (`jobplane dev` keeps unchanged jobs' entries so: compiler/root_memo.py)."""
        import json

        data = self.model_dump(mode="json", exclude_unset=True, exclude={"jobs"} if jobs is not None else None)
        if jobs is not None:
            data["jobs"] = jobs
        return json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"

    @classmethod
    def merge(cls, parts: list[Catalog]) -> Catalog:
        """One catalog of every job from the teams' parts (one per Terraform root, contract/layout.py).
        Parts of two platforms, or a job in two parts, are refused rather than silently mixed."""
        if not parts:
            raise ValueError("no catalog parts: compile first (jobplane compile)")
        prefixes = {p.name_prefix for p in parts}
        if len(prefixes) > 1:
            raise ValueError(f"catalog parts of different platforms: {', '.join(sorted(prefixes))}")
        teams = {t.name: t for p in parts for t in p.teams}
        jobs: dict[str, CatalogJob] = {}
        for part in parts:
            for job in part.jobs:
                if job.name in jobs:
                    raise ValueError(f"job {job.name!r} is in two catalog parts")
                jobs[job.name] = job
        return cls(version=max(p.version for p in parts), name_prefix=parts[0].name_prefix,
                   teams=[teams[n] for n in sorted(teams)], jobs=[jobs[n] for n in sorted(jobs)])

    @classmethod
    def load(cls, path: Path | str) -> Catalog:
        """A catalog file, or a compiler output directory (every team's part, merged)."""
        path = Path(path)
        if path.is_dir():
            return cls.load_output(OutputFiles(path))
        return cls.model_validate_json(path.read_text())

    @classmethod
    def load_output(cls, output: OutputFiles) -> Catalog:
        """Every team's part of a compiler output, merged (contract/output_files.py: also while
        `jobplane dev` is still writing it)."""
        parts = output.catalog_parts()
        if not parts:
            raise FileNotFoundError(f"{output.directory}: no teams/*/catalog.json (compile first: jobplane compile)")
        return cls.merge([cls.model_validate_json(output.read_text(rel)) for rel in parts])
