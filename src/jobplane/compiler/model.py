"""The resolved job model: what a Jsonnet definition means once defaults are applied.

Each model is a frozen dataclass whose fields say their type, default, description and checks
(:mod:`jobplane.compiler.fields`); the same table gives `jobplane schema` its JSON Schema. A rule
that a person would state in one sentence lives next to its field as a check. Cross-job rules
(unique names, derived AWS name lengths, known teams) live in :mod:`jobplane.compiler.validate`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from jobplane.compiler import kinds as kinds_registry
from jobplane.compiler.fields import (Anything, Bool, Choice, describe_value, Int, ListOf, Loc, MapOf, Model, Nested, Nullable, Number,
                                     Parsed, Problems, Slot, Str, field)
from jobplane.compiler.durations import Duration, parse_duration
from jobplane.compiler.kinds import GroupKind, StepKind
from jobplane.compiler.params import ParamsType
from jobplane.contract.params import FireDefaults, ParamSet, declared as declared_params
from jobplane.compiler.secret_scope import PARAMETER_NAME_PREFIX, SECRET_NAME_PREFIX
from jobplane.contract import runner as rc
from jobplane.contract import channels
from jobplane.contract.quoting import quoted
from jobplane.contract.schedule import ScheduleError, validate_timezone
from jobplane.contract import spread
from jobplane.contract.schedule_kinds import kind_of
from jobplane.contract.states import STEP_NAME_MAX, STEP_NAME_RE, step_key
from jobplane.contract.statuses import DEFAULT_EVENTS, DEFAULT_POLICY, Event, Policy
from jobplane.contract.types import JsonObject, JsonValue

NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
# A secret is named, never given by ARN: a Secrets Manager secret ('secretsmanager:NAME',
# jp.secret(NAME)) or an SSM parameter ('ssm:NAME', jp.parameter(NAME)), both in the deployment's
# own account and region (the compiler builds the ARNs from them), so a job cannot be granted a
# secret in another account or by wildcard; which names a team may use is checked in validation
# (compiler/secret_scope.py, which holds the two prefixes). The prefix says it is a name, so a password pasted here is still
# refused as a plain value. Names use the characters each service allows; an SSM name with a
# '/' is fully qualified (starts with '/'), as Parameter Store requires.
SECRET_NAME_RE = re.compile(r"^secretsmanager:[A-Za-z0-9/_+=.@-]{1,512}$")
PARAMETER_NAME_RE = re.compile(r"^ssm:(/[A-Za-z0-9_.-]+)+$|^ssm:[A-Za-z0-9_.-]+$")
SECRET_ANY_ARN_RE = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:(?P<name>.+?)(-[A-Za-z0-9]{6})?$")
PARAMETER_ARN_RE = re.compile(r"^arn:aws[a-z-]*:ssm:[a-z0-9-]+:\d{12}:parameter(?P<name>/.+)$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SECRETISH_RE = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|CREDENTIAL)", re.I)
SLACK_CHANNEL_RE = re.compile(r"^#[a-z0-9][a-z0-9._-]{0,79}$")

MAX_ATTEMPTS = 10


@dataclass(frozen=True, kw_only=True)
class Retry(Model):
    """How often a step's own retryable failures are retried (infrastructure errors are separate)."""

    attempts: int = field(Int(ge=1, le=MAX_ATTEMPTS), 1, description="Total attempts, the first included.")
    interval: int = field(Duration, 30, description="Wait before the second attempt.")
    backoff: float = field(Number(ge=1.0, le=10.0), 2.0, description="Each wait is the previous times this.")
    max_interval: int = field(Duration, 3600, description="Upper bound of any single wait.")

    def delays(self) -> list[int]:
        """Seconds to wait before attempts 2..n (static: EventBridge/Step Functions have no pow)."""
        return [min(int(round(self.interval * self.backoff ** i)), self.max_interval)
                for i in range(self.attempts - 1)]


def _schedule_expression(v: JsonValue) -> str:
    if not isinstance(v, str):
        raise ValueError(f"must be a schedule expression string (e.g. jp.daily('02:00') or 'cron(0 2 * * ? *)'), "
                         f"not {describe_value(v)}")
    if v != v.strip():  # deployed as written: EventBridge would be given the spaces too
        raise ValueError(f"{quoted(v)} has spaces or a line break around it")
    try:
        kind = kind_of(v)  # a business-day rule needs the job's calendar (calendars.py checks it names one)
        kind.parse(v)
        for problem in kind.problems(v):
            raise ValueError(problem)
    except ScheduleError as e:
        raise ValueError(str(e)) from None
    return v


def _matches(pattern: re.Pattern[str], message: str) -> JsonValue:
    """A field check: the whole value (when given) matches ``pattern``, else ``message`` about it.
    (Whole: ``$`` alone also matches before a final line break, which let 'name\n' through.)"""
    def check(v: str | None, _: JsonObject) -> Iterator[str]:
        if v is not None and not pattern.fullmatch(v):
            yield message.format(value=quoted(v))
    return check


def _step_name(v: str, _: JsonObject) -> Iterator[str]:
    if not STEP_NAME_RE.fullmatch(v) or len(v) > STEP_NAME_MAX:
        yield f"{quoted(v)}: step names are 1-40 lower-case letters, digits, '-' or '_', starting with a letter"


def _env(v: dict[str, str], _: JsonObject) -> Iterator[str]:
    for key, value in v.items():
        if not ENV_NAME_RE.fullmatch(key):
            yield f"{quoted(key)} is not a valid environment variable name"
        elif key.startswith("JOBPLANE_") or key == rc.ENV_TRACEPARENT:
            yield f"{quoted(key)} is reserved for the platform"
        elif SECRETISH_RE.search(key) and value:
            yield f"{quoted(key)} looks like a secret given as plain text; put it under secrets instead (jp.secret(NAME))"


def _secrets(v: dict[str, str], _: JsonObject) -> Iterator[str]:
    for key, value in v.items():
        if not ENV_NAME_RE.fullmatch(key):
            yield f"{quoted(key)} is not a valid environment variable name"
        elif SECRET_NAME_RE.fullmatch(value) or PARAMETER_NAME_RE.fullmatch(value):
            continue
        elif arn := SECRET_ANY_ARN_RE.fullmatch(value):
            yield (f"{quoted(key)}: {quoted(value)} is an ARN; name the secret instead "
                   f"(jp.secret({quoted(arn['name'])})): it is read in the deployment's own account and region, "
                   "and a secret of another account is not granted")
        elif arn := PARAMETER_ARN_RE.fullmatch(value):
            yield (f"{quoted(key)}: {quoted(value)} is an ARN; name the parameter instead "
                   f"(jp.parameter({quoted(arn['name'])})): it is read in the deployment's own account and "
                   "region, and a parameter of another account is not granted")
        elif value.startswith(PARAMETER_NAME_PREFIX):
            yield (f"{quoted(key)}: {quoted(value)} is not a Parameter Store name: letters, digits, '_', '.', '-', "
                   "and a name with '/' starts with '/' (fully qualified)")
        else:
            yield (f"{quoted(key)} is given as a plain value; secrets take a Secrets Manager secret or an SSM "
                   "parameter by name (jp.secret('billing/ledger-api-token'), jp.parameter('/billing/api-key')), "
                   "never the secret itself")


def _pool_shorthand(v: JsonValue) -> JsonValue:
    """``pool: 'billing-db'`` is ``pool: {name: 'billing-db'}`` (weight 1)."""
    return {"name": v} if isinstance(v, str) else v


@dataclass(frozen=True, kw_only=True)
class PoolUse(Model):
    """A slot (or ``weight`` slots) of a pool declared in jobplane.toml ``[pools]``, held by each
    attempt of the step while its task runs (docs/pools.md)."""

    name: str = field(Str(), description="A pool of jobplane.toml [pools].")
    weight: int = field(Int(ge=1, le=100), 1, description="Slots each attempt holds.")


_POOL_SCHEMA: JsonObject = {"anyOf": [
    {"type": "string", "description": "A pool of jobplane.toml [pools] (weight 1)."},
    {"type": "object", "title": "PoolUse", "additionalProperties": False, "required": ["name"],
     "properties": {"name": {"type": "string"}, "weight": {"type": "integer", "minimum": 1, "maximum": 100,
                                                           "default": 1}}},
    {"type": "null"}]}


def _stall_range(v: int | None, checked: JsonObject) -> Iterator[str]:
    """The periodic check looks every few minutes and a step's progress is written at most every
    10 s (contract/progress.py): a shorter stall cannot be told from a quiet step."""
    timeout = checked.get("timeout")
    if v is not None and (v < 60 or (isinstance(timeout, int) and v >= timeout)):
        yield f"stall_after ({v}s) must be at least 1m and shorter than the step's timeout ({timeout}s)"


def _expect_metric(v: str, _: JsonObject) -> Iterator[str]:
    from jobplane.contract.expectations import metric_problem

    if (problem := metric_problem(v)) is not None:
        yield problem


def _expect_check(v: str, _: JsonObject) -> Iterator[str]:
    from jobplane.contract.expectations import BadExpectation, parse

    try:
        parse(v)
    except BadExpectation as e:
        yield str(e)


@dataclass(frozen=True, kw_only=True)
class Expectation(Model):
    """A check of a metric the step reports (jobplane.metric), after the step succeeds
    (jp.expect(metric, check, on_fail, on_missing); docs/expectations.md)."""

    metric: str = field(Str(), description="The metric's name, as the step reports it.", check=_expect_metric)
    check: str = field(Str(), description="'<op> <number>', '<op> baseline' or '<op> <factor> * baseline' "
                                          "(op: >= > <= < == !=).", check=_expect_check)
    on_fail: str = field(Choice(("fail", "warn")), "fail", description=(
        "fail: the attempt fails (the step's retries apply); warn: the run goes on, marked, with an "
        "EXPECTATION notification."))
    on_missing: str | None = field(Nullable(Choice(("fail", "warn", "pass"))), None, description=(
        "A metric the step never reported: fail, warn or pass (default: as on_fail)."))

    when: str | None = field(Nullable(Str()), None, description=(
        "Judge it only on business days: 'business_days' (the job's calendar; without one Monday to Friday) "
        "or a calendar of jobplane.toml [calendars]; on another day the check is skipped and says why."))

    @property
    def uses_baseline(self) -> bool:
        from jobplane.contract.expectations import parse

        return parse(self.check).uses_baseline


def _expectations(v: list[Expectation], _: JsonObject) -> Iterator[str]:
    seen: set[tuple[str, str]] = set()
    for e in v:
        if isinstance(e, Expectation):
            if (e.metric, e.check) in seen:
                yield f"expectation {e.metric} {e.check!r} is given twice"
            seen.add((e.metric, e.check))


#: Step.slots, by class
_STEP_SLOTS: dict[type, list[Slot]] = {}


@dataclass(frozen=True, kw_only=True)
class Step(Model):
    """One unit of work: exactly one kind field (python, celery, django, shell, parallel or
    lambda: compiler/kinds/), its target, and what the kind takes of the common fields."""

    name: str = field(Str(), description="Unique within the job; kebab-case or snake_case.", check=_step_name)
    description: str = field(Str(), "")
    # The kind fields (one per registered kind) sit here in the definition's table (Step.slots);
    # the one given becomes ``kind`` and its value ``target``.
    args: list[JsonValue] = field(ListOf(Anything()), factory=list, description="Arguments of a celery or django step.")
    kwargs: JsonObject = field(MapOf(Anything()), factory=dict,
                                   description="Keyword arguments of a python, celery or lambda step.")
    timeout: int = field(Duration, 3600, description="Per attempt (a lambda step: at most 15m, its default).")
    retry: Retry = field(Nested(lambda: Retry), factory=Retry)
    cpu: int = field(Int(), 256, description="Fargate CPU units.")
    memory: int = field(Int(), 512, description="MiB; must suit cpu on Fargate (a lambda step: 128-10240).")
    env: dict[str, str] = field(MapOf(Str()), factory=dict, check=_env)
    secrets: dict[str, str] = field(MapOf(Str()), factory=dict, check=_secrets, description=(
        "ENV_NAME -> jp.secret(NAME) (Secrets Manager) or jp.parameter(NAME) (SSM Parameter Store), a name "
        "the job's team may use."))
    stall_after: int | None = field(Nullable(Duration), None, check=_stall_range, description=(
        "An attempt whose progress (jobplane.progress) has not moved this long raises STALLED, once per stall: "
        "1m to the step's timeout (docs/progress.md#a-stalled-step)."))
    expect: list[Expectation] = field(ListOf(Nested(lambda: Expectation)), factory=list, check=_expectations,
                                      description=(
        "Checks of the metrics the step reports, after it succeeds: [jp.expect('rows_loaded', '>= 1')] "
        "(docs/expectations.md)."))
    pool: PoolUse | None = field(Nullable(Nested(lambda: PoolUse)), None, before=_pool_shorthand,
                                 json_schema=_POOL_SCHEMA, description=(
                                     "A pool of jobplane.toml [pools] ('billing-db', or {name, weight}): each attempt "
                                     "holds a slot while it runs, waiting (WAITING) for one first; default: the group's "
                                     "or the job's pool."))
    #: The kind the definition names (None only while it is checked: model_problems refuses it).
    kind_: StepKind | None = dataclasses.field(default=None)
    #: The kind field's value: a python target, a task or command name, an argv, a group's steps.
    target: Any = dataclasses.field(default=None)
    #: The kind fields a definition gave, when it did not give exactly one (for its message).
    kinds_given: tuple[str, ...] = dataclasses.field(default=())

    @classmethod
    def slots(cls) -> list[Slot]:
        # made once per class (the registry is a constant): a new list for each step built was
        # ~5% of the model's checks at 5,000 jobs (issue 66 item 5)
        if cls not in _STEP_SLOTS:
            own = super().slots()
            kinds = [Slot(k.name, k.spec, None) for k in kinds_registry.REGISTRY]
            _STEP_SLOTS[cls] = own[:2] + kinds + own[2:]
        return _STEP_SLOTS[cls]

    @classmethod
    def build(cls, data: JsonValue, loc: Loc, problems: Problems) -> Step:
        """A kind's own defaults (a lambda step's timeout) apply where the definition is silent."""
        if isinstance(data, dict):
            named = [k for k in kinds_registry.REGISTRY if data.get(k.name) is not None]
            if len(named) == 1 and (defaults := getattr(named[0], "defaults", None)):
                data = {**defaults, **data}
        return super().build(data, loc, problems)

    @classmethod
    def construct(cls, values: JsonObject) -> Step:
        given = [k for k in kinds_registry.REGISTRY if values.get(k.name) is not None]
        kind = given[0] if len(given) == 1 else None
        target = values[kind.name] if kind else None
        rest = {k: v for k, v in values.items() if k not in kinds_registry.BY_NAME}
        return cls(**rest, kind_=kind, target=target, kinds_given=() if kind else tuple(k.name for k in given))

    @classmethod
    def checkable(cls, refused: frozenset[str]) -> bool:
        """A step whose kind field was refused (a map missing its each step) has no kind to
        check, nor one the group or map holding it could read."""
        return not refused & kinds_registry.BY_NAME.keys()

    def model_problems(self, refused: frozenset[str] = frozenset()) -> Iterator[str]:
        kind = self.kind_
        if kind is None:
            found = self.kinds_given
            yield (f"a step needs exactly one of {', '.join(kinds_registry.NAMES)} "
                   f"(found {', '.join(found) if found else 'none'})")
            return
        if self.args and not kind.takes_args:
            yield f"args apply to {_which('takes_args')} steps, not {kind.name}"
        elif self.kwargs and not kind.takes_kwargs:
            yield f"kwargs apply to {_which('takes_kwargs')} steps, not {kind.name}"
        if self.stall_after is not None and isinstance(kind, GroupKind):
            yield f"stall_after applies to a step that runs, not a {kind.name} group: set it on its steps"
        if self.expect and isinstance(kind, GroupKind):
            yield f"expect applies to a step that runs, not a {kind.name} group: set it on its steps"
        if not refused & _SIZED:  # the executors' rules read these (a refused cpu is not 256)
            yield from kind.problems(self)

    @property
    def kind(self) -> StepKind:
        if self.kind_ is None:
            raise AssertionError("validated step has a kind")
        return self.kind_

    @property
    def parallel(self) -> list[Step] | None:
        """A group's members (a map's: its items and each steps); None for a step that runs itself."""
        return self.kind_.members(self) if self.kind_ is not None else None

    @property
    def key(self) -> str:
        """A JSONPath-safe identifier for the step (state data keys, DynamoDB JSON)."""
        return step_key(self.name)

    def target_spec(self) -> JsonObject:
        """What the runner needs to find and call the target (the JOBPLANE_TARGET variable)."""
        return self.kind.target_spec(self)


#: The fields a kind's own rules read besides its target and retry (a refused retry's default,
#: one attempt, breaks no rule): Fargate and Lambda sizes and the Lambda timeout.
_SIZED = frozenset({"cpu", "memory", "timeout"})


def _which(flag: str) -> str:
    names = [k.name for k in kinds_registry.REGISTRY if getattr(k, flag)]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


@dataclass(frozen=True, kw_only=True)
class Runbook(Model):
    """What an operator reads in the failure alert and on the job page."""

    impact: str = field(Str(), description="What breaks, for whom, if this job does not run.")
    workaround: str = field(Str(), "")
    recovery: str = field(Str(), description="How to recover: is a re-run safe, from which step.")


def _channels(v: list[str], _: JsonObject) -> Iterator[str]:
    for ch in v:  # each address by its channel's check (contract/channels.py)
        should_be = channels.address_problem(ch)
        if should_be:
            yield f"{quoted(ch)} is not {should_be}"


#: The longest failure streak a job may wait for before it alerts: a job failing more often in a
#: row than this is broken, not flaky.
MAX_AFTER_FAILURES = 10


def _renotify_range(v: int | None, _: JsonObject) -> Iterator[str]:
    if v is not None and not 900 <= v <= 7 * 86400:
        yield (f"renotify_after ({v}s) must be 15m to 7d: a reminder sooner is noise, later nobody is "
               "waiting for it")


def _alerts_when_blocked(v: Notify, checked: JsonObject) -> Iterator[str]:
    """A policy that blocks on failure stops the job's next fires at each failure: its failures
    always alert (platform/alert_streak.py), so waiting for a streak is a mistake to say."""
    from jobplane.contract import policies

    policy = checked.get("policy")
    if isinstance(v, Notify) and v.after_failures > 1 and policy is not None and policies.of(policy).skips_after_failure:
        yield (f"after_failures {v.after_failures}: the policy {policies.of(policy).name} blocks the job's next fires "
               "at each failure until someone acts, so every failure alerts; use SKIP_IF_RUNNING or ALWAYS_RUN to "
               "wait for failures in a row")


@dataclass(frozen=True, kw_only=True)
class Notify(Model):
    """Where and for which events the job's alerts go."""

    channels: list[str] = field(ListOf(Str()), factory=list, check=_channels,
                                description=("Alert addresses: Slack channels ('#name'), signed webhook targets "
                                             "('webhook:NAME', jp.webhook); no Slack channel: the team's default."))
    events: list[Event] = field(ListOf(Choice(Event)), factory=lambda: list(DEFAULT_EVENTS))
    after_failures: int = field(Int(ge=1, le=MAX_AFTER_FAILURES), 1, description=(
        "Alert a failure only when it is this many failed runs in a row (its RECOVERED note only when that failure "
        "was alerted); MISSED, DEADLINE and ABORTED always alert."))
    renotify_after: int | None = field(Nullable(Duration), None, check=_renotify_range, description=(
        "Announce a failure once more when it still stands this long after it (no run has succeeded since and, "
        "under a policy that blocks on failure, nobody acknowledged it): 15m to 7d; once, never more."))


@dataclass(frozen=True, kw_only=True)
class After(Model):
    """An upstream job whose run's end starts this job."""

    job: str = field(Str(), description="The upstream job, by name.")
    on: Literal["SUCCEEDED", "FAILED"] = field(Choice(("SUCCEEDED", "FAILED")), "SUCCEEDED", description=(
        "Start when the upstream run ends this way: SUCCEEDED, or FAILED (a step failed or timed out: for clean-up "
        "jobs). A skipped upstream run starts nothing."))


def _schedule_list(v: JsonValue) -> JsonValue:
    """A lone expression is a list of one; null is none (manual only)."""
    if v is None:
        return []
    return [v] if isinstance(v, str) else v


def _distinct_schedules(v: list[str], _: JsonObject) -> Iterator[str]:
    if len(set(v)) != len(v):
        yield "the same expression is listed twice"


def _timezone(v: str | None, _: JsonObject) -> Iterator[str]:
    if v is not None:
        try:
            validate_timezone(v)
        except ScheduleError as e:
            yield str(e)


def _unique_steps(steps: list[Step], _: JsonObject) -> Iterator[str]:
    if problem := duplicate_step_problem([(s.name, _member_names(s)) for s in steps]):
        yield problem


def _unique_upstreams(v: list[After], _: JsonObject) -> Iterator[str]:
    seen = [a.job for a in v]
    if twice := sorted({j for j in seen if seen.count(j) > 1}):
        yield f"{', '.join(quoted(j) for j in twice)} is listed twice: one entry per upstream job"


def _missed_after_range(v: int | None, _: JsonObject) -> Iterator[str]:
    if v is not None and not 60 <= v <= 86400:
        yield f"missed_after ({v}s) must be 1m to 24h: how late a fire may start before it counts as missed"


def _deadline(v: str | None, checked: JsonObject) -> Iterator[str]:
    """A deadline is per scheduled fire (contract/deadlines.py); a wall time is on the fire's
    day, so it must come after every time of day the job's schedules fire."""
    if v is None:
        return
    from jobplane.contract import deadlines

    try:
        spec = deadlines.parse(v)
    except deadlines.DeadlineError as e:
        yield str(e)
        return
    schedules = checked.get("schedule")
    if schedules is None:  # refused, and reported on its own
        return
    if not schedules:
        yield f"{quoted(v)}: a deadline is per scheduled fire, and this job has no schedule"
        return
    if spec.at is None:
        return
    for text in schedules if isinstance(schedules, list) else []:
        try:
            kind = kind_of(str(text))
            kind.parse(str(text))
        except ScheduleError:
            continue
        times = kind.times_of_day(str(text))  # a business-day rule's too: a fire moved keeps its time
        if times is None:
            yield (f"{quoted(v)}: {text} fires at every time of day, so a wall-time deadline has no "
                   "fire's day to mean; give a duration after the fire (e.g. '30m')")
        else:
            late = [t for t in times if t >= (spec.at.hour, spec.at.minute)]
            if late:
                yield (f"{quoted(v)} is not after the fire at {late[-1][0]:02d}:{late[-1][1]:02d} of {text}: "
                       "a wall-time deadline is on the fire's own day (the job's timezone), so it must come after "
                       "every fire's time of day; give a duration after the fire instead (e.g. '3h')")


def _spread_of(values: JsonObject) -> spread.Spread | None:
    """The job's schedule moved by its spread (None: no spread, or one that cannot move it)."""
    window, schedule = values.get("spread"), values.get("schedule")
    if not window or not isinstance(schedule, list) or not isinstance(window, int):
        return None
    seed = values.get("spread_seed") or values.get("name")
    try:
        return spread.spread_schedule([str(e) for e in schedule], spread.offset_minutes(window, str(seed)),
                                      values.get("calendar") is not None)
    except (spread.SpreadError, ScheduleError):
        return None


def _spread(v: int | None, checked: JsonObject) -> Iterator[str]:
    """A spread is whole minutes up to a day, and must move every fire as its rule allows
    (contract/spread.py): the fires stay on the days their rules name, before the deadline."""
    if v is None:
        return
    if not 60 <= v <= spread.MAX_SPREAD_S or v % 60:
        yield f"spread ({v}s) must be whole minutes, 1m to 24h: EventBridge fires on whole minutes"
        return
    schedule = checked.get("schedule")
    if schedule is None or not isinstance(checked.get("name"), str):  # refused, and reported on its own
        return
    if not schedule:
        yield "a spread moves scheduled fires, and this job has no schedule"
        return
    seed = checked.get("spread_seed") or checked["name"]
    try:
        moved = spread.spread_schedule([str(e) for e in schedule], spread.offset_minutes(v, str(seed)),
                                       checked.get("calendar") is not None)
    except spread.SpreadError as e:
        yield str(e)
        return
    except ScheduleError:  # a bad expression: refused, and reported on its own
        return
    zone = checked.get("timezone")
    if isinstance(zone, str):
        yield from spread.dst_problems(moved, zone)
    deadline = checked.get("deadline")
    if isinstance(deadline, str):
        from jobplane.contract import deadlines

        try:
            at = deadlines.parse(deadline).at
        except deadlines.DeadlineError:
            return
        yield from spread.deadline_problems(moved, (at.hour, at.minute) if at else None, deadline)


def _shorter_than_timeout(v: int | None, checked: JsonObject) -> Iterator[str]:
    timeout = checked.get("timeout")  # absent: refused, and reported on its own
    if v is not None and timeout is not None and v >= timeout:
        yield f"expected_duration ({v}s) must be shorter than timeout ({timeout}s)"


_SCHEDULE = {"type": "string", "description": "cron(...), rate(...) or at(...); with a calendar, business(...) rules"}


@dataclass(frozen=True, kw_only=True)
class Job(Model):
    """A job definition after defaults. Field docs become the JSON Schema shown in editors."""

    name: str = field(Str(), description="kebab-case, unique across the repository.",
                      check=_matches(NAME_RE, "{value} is not kebab-case (lower-case letters and digits separated by '-')"))
    team: str = field(Str(), description="Owning team, as declared in jobplane.toml.")
    description: str = field(Str(), "")
    runbook: Runbook | None = field(Nullable(Nested(lambda: Runbook)), None)
    schedule: list[str] = field(ListOf(Parsed(_schedule_expression, _SCHEDULE)), factory=list,
                                description="EventBridge cron()/rate()/at(); empty: manual only.",
                                before=_schedule_list, check=_distinct_schedules,
                                json_schema={"anyOf": [_SCHEDULE, {"type": "array", "items": _SCHEDULE}, {"type": "null"}]})
    timezone: str | None = field(Nullable(Str()), None, description="IANA name; default from jobplane.toml.",
                                 check=_timezone)
    enabled: bool = field(Bool(), True)
    policy: Policy = field(Choice(Policy), DEFAULT_POLICY)
    steps: list[Step] = field(ListOf(Nested(lambda: Step), min_length=1, too_short="a job needs at least one step"),
                              check=_unique_steps)
    timeout: int = field(Duration, 86400, description="Whole job; the execution ends TIMED_OUT after it.")
    expected_duration: int | None = field(Nullable(Duration), None, check=_shorter_than_timeout,
                                          description="A run still going after this raises SLOW.")
    missed_after: int | None = field(Nullable(Duration), None, check=_missed_after_range, description=(
        "A scheduled fire that has neither run nor been skipped this long after its time is MISSED "
        "(recorded and alerted); default 10m."))
    deadline: str | None = field(Nullable(Str()), None, check=_deadline, description=(
        "By when each scheduled fire's run must have SUCCEEDED: a wall time 'HH:MM' in the job's timezone on "
        "the fire's day, or a duration after the fire ('3h'). A fire not done by then raises DEADLINE."))
    notify: Notify = field(Nested(lambda: Notify), factory=Notify, check=_alerts_when_blocked)
    params: JsonObject = field(ParamsType(), factory=dict, description=(
        "Parameters a run may give: a plain value is its own default (any type); jp.param.* declares a typed one "
        "(docs/dsl.md#typed-parameters)."))
    after: list[After] = field(ListOf(Nested(lambda: After)), factory=list, check=_unique_upstreams, description=(
        "Start this job when another job's run ends: [{job, on}]. A schedule may be given too."))
    calendar: str | None = field(Nullable(Str()), None, description=(
        "A calendar of jobplane.toml's [calendars]: the job fires on its business days only (docs/dsl.md#calendars)."))
    on_closed_day: Literal["skip", "next", "previous"] = field(
        Choice(("skip", "next", "previous")), "skip", description=(
            "With a calendar, a cron()/at() fire on a closed day: skip it, or move it to the next or previous "
            "business day at the same time."))

    spread_seed: str | None = field(Nullable(Str()), None, description=(
        "What the spread's offset is derived from instead of the job's name: keep a renamed job's start times."))
    spread: int | None = field(Nullable(Duration), None, check=_spread, description=(
        "Move every fire later by a stable offset under this window ('30m': 0-29 minutes), derived from the job's "
        "name, so jobs written for the same minute do not all start in it (docs/dsl.md#spread-start-times)."))

    secret_scope: Literal["team", "job"] = field(Choice(("team", "job")), "team", description=(
        "Which roles read its steps' secrets: 'team' (default), the roles its team's jobs share, which read the "
        "secrets those jobs declare; 'job', roles of its own that read only its own secrets "
        "(docs/dsl.md#whose-secrets-a-job-may-read)."))
    pool: PoolUse | None = field(Nullable(Nested(lambda: PoolUse)), None, before=_pool_shorthand,
                                 json_schema=_POOL_SCHEMA, description=(
                                     "The pool every step of the job draws on unless it names its own (docs/pools.md)."))
    blackout: list[str] = field(ListOf(Str()), factory=list, description=(
        "Blackout windows of jobplane.toml's [blackouts] the job's scheduled fires are skipped or deferred in "
        "(docs/dsl.md#blackout-windows); its team's [teams.<t>] blackout are added."))

    @classmethod
    def construct(cls, values: JsonObject) -> Job:
        """A job's (or a group's) pool is the default of the steps in it that name none. A
        spread job's schedule is the moved one: every reader of fires sees where they are."""
        if (moved := _spread_of(values)) is not None:
            values["schedule"] = moved.expressions()
        job_pool = values.get("pool")
        values["steps"] = [_with_pool(s, job_pool) for s in values.get("steps", [])]
        return cls(**values)

    #: What resolving its calendar defaults at a fire needs (its timezone, its calendar's days):
    #: set by validate, which reads jobplane.toml's [calendars]; None: derived without a calendar.
    param_fire_defaults: FireDefaults | None = dataclasses.field(default=None)
    #: The days its expectations' ``when`` names, by its value (compiler/expect_days.py, set by validate).
    expect_days: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def fire_defaults(self) -> FireDefaults | None:
        """The step environment's JOBPLANE_PARAM_DEFAULTS, None when it declares no calendar default."""
        rules = self.param_set.calendar_defaults()
        if not rules:
            return None
        return self.param_fire_defaults or FireDefaults(tz=self.timezone or "UTC", rules=rules)

    @property
    def param_set(self) -> ParamSet:
        """The typed parameters ``params`` declares (contract/params.py); checked when built."""
        return declared_params(self.params)[0]

    @property
    def param_defaults(self) -> JsonObject:
        """What a run gets for the params it does not give (calendar defaults are resolved at the
        fire, not here): what every compiled default object and the catalog's ``params`` hold."""
        return self.param_set.defaults()

    def all_steps(self) -> list[Step]:
        """Every step including the members of parallel groups, in order."""
        out: list[Step] = []
        for s in self.steps:
            out.append(s)
            out.extend(s.parallel or [])
        return out

    def runnable_steps(self) -> list[Step]:
        return [s for s in self.all_steps() if s.parallel is None]

    def spread_offset(self) -> int | None:
        """Minutes every fire was moved by ``spread`` (its schedule holds the moved expressions)."""
        if self.spread is None:
            return None
        return spread.offset_minutes(self.spread, self.spread_seed or self.name)


def _with_pool(step: Step, default: PoolUse | None) -> Step:
    pool = step.pool or default
    members = step.parallel
    if isinstance(step.kind_, GroupKind) and members is not None:
        return dataclasses.replace(step.kind_.with_members(step, [_with_pool(m, pool) for m in members]), pool=pool)
    return step if pool is step.pool else dataclasses.replace(step, pool=pool)


def _member_names(step: Step) -> list[tuple[str, str]]:
    """A group's members, each with where it sits below the group (a map's: its items and each fields)."""
    kind = step.kind_
    return [(kind.member_path(j), m.name) for j, m in enumerate(kind.members(step))] if isinstance(kind, GroupKind) else []


def duplicate_step_problem(steps: list[tuple[str, list[tuple[str, str]]]]) -> str | None:
    """The first step name used twice, from (name, [(path below it, member name)]) per top-level
    step. Names must be unique across groups and maps too: resume_from and the records address
    steps by name. (Also checked on the raw definition, so it is reported even when a step has
    other errors.)"""
    seen: dict[str, tuple[str, str]] = {}
    for i, (name, members) in enumerate(steps):
        for where, member in [(f"steps[{i}]", name)] + [(f"steps[{i}].{below}", m) for below, m in members]:
            key = member.replace("-", "_")
            if key in seen:
                first_where, first_name = seen[key]
                same = "" if first_name == member else f" ({quoted(first_name)} and {quoted(member)} differ only by - and _)"
                return f"step name {quoted(member)} is used twice, at {first_where} and {where}{same}"
            seen[key] = (where, member)
    return None


