"""A step's progress and counts (issue 67 part 1): what a step's own code calls, what it may
report, and where the runner keeps it. docs/progress.md.

``jobplane.progress(done, total=None, unit=None, cursor=None)`` and ``jobplane.metric(name, value)``
(the package root's two functions, which call :func:`progress` and :func:`metric` here) hand the
values to the runner that runs the step in this process: the runner installs a *sink*
(:func:`install`) before the step's code runs (runner/progress.py). Without one (a test, a
developer's shell) both do nothing. A shell step's child has no runner in its process: it prints
one JSON line with a ``jobplane`` key (:func:`line`), which the runner reads from its output; the
same functions print that line themselves when the runner says so (``JOBPLANE_REPORT=stdout`` in
a shell step's environment), so a Python script run as a shell step uses the same API.

The record: one item per step of a run, ``pk`` ``PROGRESS#<job>#<execution>`` (:func:`pk`) /
``sk`` ``<step>``: a run's steps are one Query, and a runner role's policy holds it to its own
jobs' items alone (``dynamodb:LeadingKeys`` ``PROGRESS#<job>#*`` per job of the role), never a
run's or a job's record, nor another team's job's progress.

Kept to the standard library and light (no ``typing`` at run time): the runner imports it before
the step's code runs (tests/test_runner_start.py), and so does ``import jobplane`` in the step.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    from typing import Protocol

    class Sink(Protocol):
        def progress(self, done: object, total: object, unit: object, cursor: object) -> None: ...

        def metric(self, name: object, value: object) -> None: ...

        def line(self, report: dict[str, object]) -> None: ...

        def resume_from(self) -> str | None: ...

#: The table of the platform's records, in the runner task definition's environment.
ENV_TABLE = "JOBPLANE_RECORDS_TABLE"
#: In a shell step's environment: report by printing the line (:func:`line`) on stdout.
ENV_REPORT = "JOBPLANE_REPORT"
REPORT_STDOUT = "stdout"
#: The key of a shell step's report line: ``{"jobplane": {"progress": {...}}}`` or
#: ``{"jobplane": {"metric": {"name": ..., "value": ...}}}``.
LINE_KEY = "jobplane"
PK_PREFIX = "PROGRESS#"
#: At most one write per step this often (the last values are always written when the step ends).
INTERVAL_SECONDS = 10.0
MAX_METRICS = 50
MAX_NAME = 64
MAX_UNIT = 32
MAX_CURSOR = 1024

# The record's attributes.
ATTR_DONE, ATTR_TOTAL, ATTR_UNIT, ATTR_CURSOR = "done", "total", "unit", "cursor"
ATTR_METRICS = "metrics"  # a map: name -> number
ATTR_ATTEMPT = "attempt"  # the attempt that wrote it: a retry starts its progress again
ATTR_STARTED_AT = "started_at"  # when that attempt started (epoch seconds): the rate's start
ATTR_UPDATED_AT = "updated_at"  # when the values were reported (epoch seconds)
ATTR_ENDED = "ended"  # the step's last write (its end): True
ATTR_EXPIRES_AT = "expires_at"  # the table's TTL attribute (contract/datamodel.py)
#: Written by the stall check, never by the runner: the ``updated_at`` of the values a STALLED
#: alert was sent for (platform/stalls.py), so one stall is announced once.
ATTR_STALLED_FOR = "stalled_for"
#: Written by a re-run from a step, never by the runner: the run whose checkpoint it copied.
ATTR_RESUMED_FROM = "resumed_from"
ATTR_PARAMS = "params"  # a scheduled fire's calendar defaults, as the runner resolved them (contract/params.py)
#: The ``sk`` of the run's item of resolved params, beside its steps' (no step name starts with '#').
PARAMS_SK = "#params"
#: What a retry reads of the record (``jobplane.resume_from``): the IAM policy's read attributes.
READ_ATTRIBUTES = ("pk", "sk", ATTR_CURSOR, ATTR_ATTEMPT)
#: Every attribute the runner writes, keys included: the IAM policy's ``dynamodb:Attributes``.
ATTRIBUTES = ("pk", "sk", ATTR_DONE, ATTR_TOTAL, ATTR_UNIT, ATTR_CURSOR, ATTR_METRICS, ATTR_ATTEMPT,
              ATTR_STARTED_AT, ATTR_UPDATED_AT, ATTR_ENDED, ATTR_EXPIRES_AT)
#: What the runner writes of the run's ``#params`` item: the IAM policy ``runner_params``'s attributes.
PARAMS_ATTRIBUTES = ("pk", "sk", ATTR_PARAMS, ATTR_EXPIRES_AT)


class Refused(ValueError):
    """A reported value the record cannot take: the runner logs why, the step goes on."""


def pk(job: str, execution: str) -> str:
    """The partition of a run's progress records, ``PROGRESS#<job>#<execution>``: one item per
    step (``sk``: the step's name). Keyed by job so that IAM can hold a step's role to its own
    job's records (``dynamodb:LeadingKeys`` :func:`job_keys`): an execution's name is not known
    before it starts, a job's is. A job's name has no ``#`` (compiler/model.py ``NAME_RE``:
    lowercase letters, digits and ``-``), so ``PROGRESS#<job>#`` is never a prefix of another
    job's partition, and holds no IAM wildcard (``*``, ``?``)."""
    return f"{PK_PREFIX}{job}#{execution}"


def job_prefix(job: str) -> str:
    """What every partition of ``job``'s progress records starts with (the compiled judge's key)."""
    return f"{PK_PREFIX}{job}#"


def job_keys(job: str) -> str:
    """The ``dynamodb:LeadingKeys`` pattern (``StringLike``) of every progress record of ``job``'s
    runs, and of no other job's (:func:`pk`)."""
    return f"{job_prefix(job)}*"


def execution_of(partition: str, job: str) -> str:
    """The execution of a progress partition of ``job`` (:func:`pk` read back)."""
    return partition[len(job_prefix(job)):]


#: Between a map's each step and its item's index in the ``sk`` of that item's record (a step's
#: name never holds it: contract/states.py STEP_NAME_RE), so each item of a map keeps its own
#: values (its expectations judge them: compiler/expect_states.py) instead of all items writing one.
ITEM_SEPARATOR = "#"


def step_sk(step: str, item_index: str | None = None) -> str:
    """The ``sk`` of a step's record: its name, or for an item of a map ``<step>#<index>``."""
    return step if item_index is None else f"{step}{ITEM_SEPARATOR}{item_index}"


def number(what: str, value: object) -> int | float:
    """``value`` if it is a finite number (not a bool), else :class:`Refused` naming ``what``."""
    if type(value) is bool or not isinstance(value, (int, float)):
        raise Refused(f"{what} must be a number, not {type(value).__name__} {value!r:.40}")
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise Refused(f"{what} must be a finite number, not {value!r}")
    if isinstance(value, int) and abs(value) >= 10 ** 38:  # DynamoDB's number range
        raise Refused(f"{what} is out of range: {value:.3e}")
    return value


def metric_name(name: object) -> str:
    """A metric's name: a short identifier (a letter, then letters, digits or ``_``)."""
    ok = (isinstance(name, str) and 0 < len(name) <= MAX_NAME and name.isascii() and name[0].isalpha()
          and name.replace("_", "a").isalnum())
    if not ok:
        raise Refused(f"metric name {name!r:.80} must be a short identifier (a letter, then letters, digits or _; "
                      f"at most {MAX_NAME})")
    assert isinstance(name, str)
    return name


def text(what: str, value: object, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise Refused(f"{what} must be text of at most {limit} characters, not {type(value).__name__}")
    return value


_sink: Sink | None = None


def install(sink: Sink | None) -> None:
    """The runner's: where this process's reports go (None: nowhere)."""
    global _sink
    _sink = sink


def progress(done: object, total: object = None, unit: object = None, cursor: object = None) -> None:
    sink = _sink
    if sink is not None:
        sink.progress(done, total, unit, cursor)
    elif _printing():
        _print({"progress": {k: v for k, v in (("done", done), ("total", total), ("unit", unit), ("cursor", cursor))
                             if v is not None}})


def metric(name: object, value: object) -> None:
    sink = _sink
    if sink is not None:
        sink.metric(name, value)
    elif _printing():
        _print({"metric": {"name": name, "value": value}})


def resume_from() -> str | None:
    """The cursor an earlier attempt of this step in this run last reported (a retry resumes
    there), or None: the first attempt, none reported, outside a run, or a shell step's child."""
    sink = _sink
    return sink.resume_from() if sink is not None else None


def report_line(report: dict[str, object]) -> None:
    """A shell step's report line (:func:`parse_line`), to the runner's sink."""
    sink = _sink
    if sink is not None:
        sink.line(report)


def _printing() -> bool:
    import os

    return os.environ.get(ENV_REPORT) == REPORT_STDOUT


def line(report: dict[str, object]) -> str:
    """A shell step's report line (``report``: ``{"progress": {...}}`` or ``{"metric": {...}}``)."""
    import json

    return json.dumps({LINE_KEY: report}, default=repr)  # NaN passes as NaN: the runner refuses it


def _print(report: dict[str, object]) -> None:
    import sys

    print(line(report), file=sys.stdout, flush=True)


def parse_line(raw: str) -> dict[str, object] | None:
    """The report a shell step's output line holds, or None for any other line (cheap: a line not
    starting with ``{"jobplane"`` is not parsed)."""
    stripped = raw.strip()
    if not stripped.startswith('{"' + LINE_KEY + '"'):
        return None
    import json

    try:
        doc = json.loads(stripped)
    except ValueError:
        return None
    report = doc.get(LINE_KEY) if isinstance(doc, dict) and len(doc) == 1 else None
    return report if isinstance(report, dict) else None
