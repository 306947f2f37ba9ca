"""The resolved job model: what a Jsonnet definition means once defaults are applied.

pydantic does the per-field checking (types, unknown fields, enums); cross-field rules that a
person would state in one sentence live next to their field as validators. Cross-job rules
(unique names, derived AWS name lengths, known teams) live in :mod:`jobplane.compiler.validate`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt,
                      ValidationInfo, field_validator, model_validator)

from jobplane.contract import runner as rc
from jobplane.contract.quoting import quoted
from jobplane.contract.schedule import ScheduleError, parse, validate_timezone
from jobplane.contract.states import STEP_NAME_MAX, STEP_NAME_RE, step_key
from jobplane.contract.statuses import DEFAULT_EVENTS, DEFAULT_POLICY, Event, Policy

NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
PYTHON_TARGET_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
CELERY_TASK_RE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
DJANGO_COMMAND_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
# A secret is a Secrets Manager secret by name ('secretsmanager:NAME', jp.secret(NAME): the prefix
# says it is a name, so a password pasted here is still refused as a plain value), by full ARN
# (the name plus the 6-character suffix Secrets Manager adds), or an SSM parameter's ARN. IAM
# matches full ARNs only, so a partial ARN (no suffix) would be denied at run time: it is refused
# here, with what to write instead.
SECRET_NAME_PREFIX = "secretsmanager:"
SECRET_NAME_RE = re.compile(r"^secretsmanager:[A-Za-z0-9/_+=.@-]{1,512}$")
SECRET_FULL_ARN_RE = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$")
SECRET_ANY_ARN_RE = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:(?P<name>.+)$")
PARAMETER_ARN_RE = re.compile(r"^arn:aws[a-z-]*:ssm:[a-z0-9-]+:\d{12}:parameter/.+$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SECRETISH_RE = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|CREDENTIAL)", re.I)
_DURATION_RE = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")

MAX_ATTEMPTS = 10
#: Fargate CPU units -> allowed memory (MiB) as (low, high, step).
FARGATE_SIZES = {
    256: [(512, 512, 1), (1024, 2048, 1024)],
    512: [(1024, 4096, 1024)],
    1024: [(2048, 8192, 1024)],
    2048: [(4096, 16384, 1024)],
    4096: [(8192, 30720, 1024)],
    8192: [(16384, 61440, 4096)],
    16384: [(32768, 122880, 8192)],
}


def parse_duration(value: Any) -> int:
    """Seconds from 90, '90s', '15m', '2h', '1h30m' or '1d'. Why strings: '2h' reads better than 7200."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '15m'")
    if isinstance(value, (int, float)):
        if value <= 0 or int(value) != value:
            raise ValueError(f"{quoted(value)} is not a positive whole number of seconds")
        return int(value)
    if isinstance(value, str) and value and (m := _DURATION_RE.match(value.strip())):
        d, h, mi, s = (int(x or 0) for x in m.groups())
        total = d * 86400 + h * 3600 + mi * 60 + s
        if total > 0:
            return total
    raise ValueError(f"{quoted(value)} is not a duration: use seconds or a string like '90s', '15m', '2h', '1h30m'")


Duration = Annotated[int, BeforeValidator(parse_duration)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Retry(Strict):
    """How often a step's own retryable failures are retried (infrastructure errors are separate)."""

    attempts: StrictInt = Field(1, ge=1, le=MAX_ATTEMPTS, description="Total attempts, the first included.")
    interval: Duration = Field(30, description="Wait before the second attempt.")
    backoff: float = Field(2.0, ge=1.0, le=10.0, description="Each wait is the previous times this.")
    max_interval: Duration = Field(3600, description="Upper bound of any single wait.")

    def delays(self) -> list[int]:
        """Seconds to wait before attempts 2..n (static: EventBridge/Step Functions have no pow)."""
        return [min(int(round(self.interval * self.backoff ** i)), self.max_interval)
                for i in range(self.attempts - 1)]


def fargate_size_problem(cpu: int, memory: int) -> str | None:
    """What is wrong with a cpu/memory pair on Fargate, or None (also checked on the raw
    definition, so it is reported even when the step has other errors)."""
    sizes = FARGATE_SIZES.get(cpu)
    if sizes is None:
        return f"cpu {cpu} is not a Fargate size ({', '.join(map(str, FARGATE_SIZES))})"
    if not any(lo <= memory <= hi and (memory - lo) % step == 0 for lo, hi, step in sizes):
        allowed = "; ".join(f"{lo}-{hi} in steps of {step}" if lo != hi else str(lo) for lo, hi, step in sizes)
        return f"memory {memory} does not fit cpu {cpu} on Fargate (allowed: {allowed})"
    return None


def _schedule_expression(v: str) -> str:
    try:
        parse(v)
    except ScheduleError as e:
        raise ValueError(str(e)) from None
    return v


#: One schedule expression: checked on its own, so every bad one of a list is reported.
ScheduleExpression = Annotated[str, AfterValidator(_schedule_expression)]


class Step(Strict):
    """One unit of work: exactly one of python, celery, django, shell or parallel."""

    name: str = Field(description="Unique within the job; kebab-case or snake_case.")
    description: str = ""
    python: str | None = Field(None, description="'package.module:function', called with kwargs.")
    celery: str | None = Field(None, description="Registered Celery task name, executed inline.")
    django: str | None = Field(None, description="Django management command name, run with args.")
    shell: list[str] | None = Field(None, description="argv list, run as a child process.")
    parallel: list[Step] | None = Field(None, description="Steps run concurrently; fails if any fails.")
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    timeout: Duration = Field(3600, description="Per attempt.")
    retry: Retry = Field(default_factory=Retry)
    cpu: StrictInt = Field(256, description="Fargate CPU units.")
    memory: StrictInt = Field(512, description="MiB; must suit cpu on Fargate.")
    env: dict[str, str] = Field(default_factory=dict)
    secrets: dict[str, str] = Field(default_factory=dict, description="ENV_NAME -> jp.secret(NAME), a full Secrets Manager ARN or an SSM parameter ARN.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not STEP_NAME_RE.match(v) or len(v) > STEP_NAME_MAX:
            raise ValueError(f"{quoted(v)}: step names are 1-40 lower-case letters, digits, '-' or '_', starting with a letter")
        return v

    @field_validator("python")
    @classmethod
    def _python(cls, v: str | None) -> str | None:
        if v is not None and not PYTHON_TARGET_RE.match(v):
            raise ValueError(f"{quoted(v)} is not of the form 'package.module:function'")
        return v

    @field_validator("celery")
    @classmethod
    def _celery(cls, v: str | None) -> str | None:
        if v is not None and not CELERY_TASK_RE.match(v):
            raise ValueError(f"{quoted(v)} is not a Celery task name such as 'billing.tasks.close_month'")
        return v

    @field_validator("django")
    @classmethod
    def _django(cls, v: str | None) -> str | None:
        if v is not None and not DJANGO_COMMAND_RE.match(v):
            raise ValueError(f"{quoted(v)} is not a management command name such as 'clearsessions'")
        return v

    @field_validator("shell")
    @classmethod
    def _shell(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or not v[0]):
            raise ValueError("shell takes a non-empty argv list, e.g. ['bash', '-c', 'echo hi']")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            if not ENV_NAME_RE.match(key):
                raise ValueError(f"{quoted(key)} is not a valid environment variable name")
            if key.startswith("JOBPLANE_") or key == rc.ENV_TRACEPARENT:
                raise ValueError(f"{quoted(key)} is reserved for the platform")
            if SECRETISH_RE.search(key) and value:
                raise ValueError(
                    f"{quoted(key)} looks like a secret given as plain text; put its ARN under secrets instead")
        return v

    @field_validator("secrets")
    @classmethod
    def _secrets(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            if not ENV_NAME_RE.match(key):
                raise ValueError(f"{quoted(key)} is not a valid environment variable name")
            if SECRET_FULL_ARN_RE.match(value) or PARAMETER_ARN_RE.match(value):
                continue
            partial = SECRET_ANY_ARN_RE.match(value)
            if partial:
                raise ValueError(
                    f"{quoted(key)}: {quoted(value)} is a partial Secrets Manager ARN (no 6-character suffix), which "
                    f"IAM does not match; name the secret ({quoted(SECRET_NAME_PREFIX + partial['name'])}, "
                    "or jp.secret(NAME)) or give its full ARN (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf)")
            if not SECRET_NAME_RE.match(value):
                raise ValueError(
                    f"{quoted(key)} is given as a plain value; secrets take a Secrets Manager secret by name "
                    "('secretsmanager:billing/ledger-api-token', or jp.secret(NAME)) or full ARN, or an SSM "
                    "parameter's ARN, never the secret itself")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> Step:
        kinds = [k for k in ("python", "celery", "django", "shell", "parallel") if getattr(self, k) is not None]
        if len(kinds) != 1:
            found = ", ".join(kinds) if kinds else "none"
            raise ValueError(f"a step needs exactly one of python, celery, django, shell, parallel (found {found})")
        kind = kinds[0]
        if self.args and kind not in ("celery", "django"):
            raise ValueError(f"args apply to celery and django steps, not {kind}")
        if self.kwargs and kind not in ("python", "celery"):
            raise ValueError(f"kwargs apply to python and celery steps, not {kind}")
        if kind == "parallel":
            if len(self.parallel or []) < 2:
                raise ValueError("a parallel group needs at least two steps")
            if any(s.parallel is not None for s in self.parallel or []):
                raise ValueError("parallel groups cannot be nested")
        size_problem = fargate_size_problem(self.cpu, self.memory)
        if size_problem:
            raise ValueError(size_problem)
        return self

    @property
    def kind(self) -> Literal["python", "celery", "django", "shell", "parallel"]:
        for k in ("python", "celery", "django", "shell", "parallel"):
            if getattr(self, k) is not None:
                return k  # type: ignore[return-value]
        raise AssertionError("validated step has a kind")

    @property
    def key(self) -> str:
        """A JSONPath-safe identifier for the step (state data keys, DynamoDB JSON)."""
        return step_key(self.name)

    def target_spec(self) -> dict[str, Any]:
        """What the runner needs to find and call the target (the JOBPLANE_TARGET variable)."""
        spec: dict[str, Any] = {"kind": self.kind}
        if self.kind == "shell":
            spec["argv"] = self.shell
        else:
            spec["target"] = getattr(self, self.kind)
        if self.args:
            spec["args"] = self.args
        if self.kwargs:
            spec["kwargs"] = self.kwargs
        return spec


class Runbook(Strict):
    impact: str = Field(description="What breaks, for whom, if this job does not run.")
    workaround: str = ""
    recovery: str = Field(description="How to recover: is a re-run safe, from which step.")


class Notify(Strict):
    channels: list[str] = Field(default_factory=list, description="Slack channels; empty: the team's default.")
    events: list[Event] = Field(default_factory=lambda: list(DEFAULT_EVENTS))

    @field_validator("channels")
    @classmethod
    def _channels(cls, v: list[str]) -> list[str]:
        for ch in v:
            if not re.match(r"^#[a-z0-9][a-z0-9._-]{0,79}$", ch):
                raise ValueError(f"{quoted(ch)} is not a Slack channel name such as '#billing-alerts'")
        return v


class After(Strict):
    job: str = Field(description="The upstream job, by name.")
    on: Literal["SUCCEEDED", "FAILED"] = Field(
        "SUCCEEDED", description="Start when the upstream run ends this way: SUCCEEDED, or FAILED (a step failed or "
                                 "timed out: for clean-up jobs). A skipped upstream run starts nothing.")


class Job(Strict):
    """A job definition after defaults. Field docs become the JSON Schema shown in editors."""

    name: str = Field(description="kebab-case, unique across the repository.")
    team: str = Field(description="Owning team, as declared in jobplane.toml.")
    description: str = ""
    runbook: Runbook | None = None
    schedule: list[ScheduleExpression] = Field(default_factory=list,
                                               description="EventBridge cron()/rate()/at(); empty: manual only.")
    timezone: str | None = Field(None, description="IANA name; default from jobplane.toml.")
    enabled: StrictBool = True
    policy: Policy = DEFAULT_POLICY
    steps: list[Step] = Field(min_length=1)
    timeout: Duration = Field(86400, description="Whole job; the execution ends TIMED_OUT after it.")
    expected_duration: Duration | None = Field(None, description="A run still going after this raises SLOW.")
    notify: Notify = Field(default_factory=Notify)
    params: dict[str, Any] = Field(default_factory=dict, description="Defaults a manual run may override.")
    after: list[After] = Field(default_factory=list,
                               description="Start this job when another job's run ends: [{job, on}]. "
                                           "A schedule may be given too.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"{quoted(v)} is not kebab-case (lower-case letters and digits separated by '-')")
        return v

    @field_validator("schedule", mode="before")
    @classmethod
    def _schedule_list(cls, v: Any) -> Any:
        if v is None:
            return []
        return [v] if isinstance(v, str) else v

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("the same expression is listed twice")
        return v

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                validate_timezone(v)
            except ScheduleError as e:
                raise ValueError(str(e)) from None
        return v

    @field_validator("steps")
    @classmethod
    def _unique_steps(cls, steps: list[Step]) -> list[Step]:
        problem = duplicate_step_problem([(s.name, [m.name for m in s.parallel or []]) for s in steps])
        if problem:
            raise ValueError(problem)
        return steps

    @field_validator("after")
    @classmethod
    def _after(cls, v: list[After]) -> list[After]:
        seen = [a.job for a in v]
        twice = sorted({j for j in seen if seen.count(j) > 1})
        if twice:
            raise ValueError(f"{', '.join(quoted(j) for j in twice)} is listed twice: one entry per upstream job")
        return v

    @field_validator("expected_duration")
    @classmethod
    def _expected(cls, v: int | None, info: ValidationInfo) -> int | None:
        timeout = info.data.get("timeout")
        if v is not None and timeout is not None and v >= timeout:
            raise ValueError(f"expected_duration ({v}s) must be shorter than timeout ({timeout}s)")
        return v

    def all_steps(self) -> list[Step]:
        """Every step including the members of parallel groups, in order."""
        out: list[Step] = []
        for s in self.steps:
            out.append(s)
            out.extend(s.parallel or [])
        return out

    def runnable_steps(self) -> list[Step]:
        return [s for s in self.all_steps() if s.parallel is None]


def duplicate_step_problem(steps: list[tuple[str, list[str]]]) -> str | None:
    """The first step name used twice, from (name, [member names]) per top-level step. Names
    must be unique across groups too: resume_from and the records address steps by name. (Also
    checked on the raw definition, so it is reported even when a step has other errors.)"""
    seen: dict[str, tuple[str, str]] = {}
    for i, (name, members) in enumerate(steps):
        for where, member in [(f"steps[{i}]", name)] + [(f"steps[{i}].parallel[{j}]", m) for j, m in enumerate(members)]:
            key = member.replace("-", "_")
            if key in seen:
                first_where, first_name = seen[key]
                same = "" if first_name == member else f" ({quoted(first_name)} and {quoted(member)} differ only by - and _)"
                return f"step name {quoted(member)} is used twice, at {first_where} and {where}{same}"
            seen[key] = (where, member)
    return None


def did_you_mean(word: str, options: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean {quoted(close[0])}?)" if close else ""


def fields_at(loc: tuple[Any, ...]) -> list[str]:
    """Field names of the model that owns ``loc`` (for did-you-mean on unknown fields)."""
    model: type[BaseModel] = Job
    for part in loc:
        if isinstance(part, int):
            continue
        if part in ("steps", "parallel"):
            model = Step
        elif part == "retry":
            model = Retry
        elif part == "notify":
            model = Notify
        elif part == "runbook":
            model = Runbook
        else:
            break
    return list(model.model_fields)
