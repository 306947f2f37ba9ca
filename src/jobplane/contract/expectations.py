"""Expectations (issue 67 part 3): a step's reported metric compared with a number or with a
baseline, after the step succeeds. docs/expectations.md.

``jp.expect('rows_loaded', '>= 1')`` or ``jp.expect('invoices_sent', '>= 0.5 * baseline',
on_fail='warn')``: the check is ``<op> <number>``, ``<op> baseline`` or ``<op> <factor> * baseline``
(``op`` one of ``>= > <= < == !=``). What one check found is a :class:`Check` (its JSON is what the
state machine records in the step's slot of the run's ``steps`` and what the API serves).

Here: the grammar (the compiler, the portal and the tests read an expectation the same way), the
outcome words, and :func:`evaluate`, the Python statement of what the compiled states decide
(compiler/expect_states.py compiles the same rule into JSONata; tests hold the two together).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from jobplane.contract.progress import MAX_NAME

OPS = (">=", "<=", "==", "!=", ">", "<")
ON_FAIL = ("fail", "warn")
#: What a metric that was never reported does: as the expectation fails (``fail``/``warn``), or
#: ``pass`` (a step that may legitimately report nothing). Default: the expectation's ``on_fail``.
ON_MISSING = ("fail", "warn", "pass")
#: A baseline is the median of this many comparable earlier runs at least; fewer: skipped.
BASELINE_RUNS = 5
#: The most earlier runs a baseline reads.
BASELINE_MAX_RUNS = 20

Outcome = Literal["pass", "warn", "fail", "skipped"]
#: A step's verdict: ``fail`` if any check failed with on_fail fail, else ``warn`` if any warned.
VERDICTS = ("pass", "warn", "fail")
#: The error a failed expectation gives the attempt (its retries apply, then the step fails).
ERROR = "Jobplane.ExpectationFailed"

_CHECK = re.compile(r"^\s*(?P<op>>=|<=|==|!=|>|<)\s*(?:(?P<factor>\d+(?:\.\d+)?)\s*\*\s*)?"
                    r"(?P<rhs>baseline|-?\d+(?:\.\d+)?)\s*$")


#: State transitions a step's expectations add to a run whose attempt passes them (the judge and
#: its Choice; with a baseline the history's read and the values kept too), and what a warning
#: (its alert) and a failed attempt (its error, then the step's retry or failure path) add on
#: top. Standard workflows bill per state transition (https://aws.amazon.com/step-functions/pricing/).
PER_STEP_STATIC, PER_STEP_BASELINE, PER_WARNING, PER_FAILURE = 2, 4, 1, 2
#: DynamoDB requests per judged attempt: the judge's consistent GetItem of the step's progress
#: record (up to 4 KB: one read request unit), and with a baseline the history's (one more) and
#: its UpdateItem (one write unit per KB: the history of a few metrics is well under one)
#: (https://aws.amazon.com/dynamodb/pricing/on-demand/).
READS_STATIC, READS_BASELINE, WRITES_BASELINE = 1, 2, 1


def transitions(uses_baseline: bool) -> int:
    return PER_STEP_BASELINE if uses_baseline else PER_STEP_STATIC


def plan_line(step: str, expects: list[dict[str, object]], price_per_transition: float) -> str:
    """What ``jobplane plan`` says a step's expectations cost."""
    baseline = any(parse(str(e.get("check", ""))).uses_baseline for e in expects)
    n = transitions(baseline)
    reads, writes = (READS_BASELINE, WRITES_BASELINE) if baseline else (READS_STATIC, 0)
    checks = ", ".join(f"{e.get('metric')} {e.get('check')}" + (" (warn)" if e.get("on_fail") == "warn" else "")
                       for e in expects)
    return (f"expect {step}: {checks}; +{n} state transitions per run when they pass (+{PER_WARNING} a warning, "
            f"+{PER_FAILURE} a failed attempt), ${n * 1000 * price_per_transition:.3f} per 1,000 runs; "
            f"{reads} DynamoDB read{'s' if reads > 1 else ''}" + (f" and {writes} write" if writes else "")
            + " per run (docs/expectations.md)")


class BadExpectation(ValueError):
    """An expectation the grammar does not take: the message says what would be."""


@dataclass(frozen=True)
class Condition:
    """``op`` and either a number (``value``) or ``factor * baseline``."""

    op: str
    value: float | None = None
    factor: float | None = None

    @property
    def uses_baseline(self) -> bool:
        return self.factor is not None

    def threshold(self, baseline: float | None) -> float | None:
        """The number the metric is compared with (None: a baseline check without a baseline)."""
        if self.factor is None:
            return self.value
        return None if baseline is None else self.factor * baseline

    def holds(self, value: float, threshold: float) -> bool:
        return {">=": value >= threshold, "<=": value <= threshold, "==": value == threshold,
                "!=": value != threshold, ">": value > threshold, "<": value < threshold}[self.op]


def parse(check: str) -> Condition:
    """``'>= 1'``, ``'> 0.5 * baseline'``, ``'>= baseline'``; anything else is :class:`BadExpectation`."""
    m = _CHECK.fullmatch(check) if isinstance(check, str) else None
    if m is None:
        raise BadExpectation(f"{check!r} is not a check: write '<op> <number>', '<op> baseline' or "
                             f"'<op> <factor> * baseline' with op one of {' '.join(OPS)} (e.g. '>= 1', "
                             "'>= 0.5 * baseline')")
    if m["rhs"] == "baseline":
        factor = float(m["factor"]) if m["factor"] else 1.0
        if factor <= 0:
            raise BadExpectation(f"{check!r}: the baseline's factor must be more than 0")
        return Condition(m["op"], factor=factor)
    if m["factor"]:
        raise BadExpectation(f"{check!r}: a factor multiplies the baseline ('>= 0.5 * baseline'), not a number")
    return Condition(m["op"], value=float(m["rhs"]))


def metric_problem(name: object) -> str | None:
    """Why ``name`` cannot be a metric's name (the rule ``jobplane.metric`` holds a step to), or None."""
    ok = (isinstance(name, str) and 0 < len(name) <= MAX_NAME and name.isascii() and name[0].isalpha()
          and name.replace("_", "a").isalnum())
    return None if ok else (f"{name!r} is not a metric name: a letter, then letters, digits or _ "
                            f"(at most {MAX_NAME}), as jobplane.metric takes")


@dataclass(frozen=True)
class Check:
    """What one expectation found on one attempt: the JSON the run records and the API serves."""

    metric: str
    check: str
    outcome: Outcome
    value: float | None = None  # None: not reported
    threshold: float | None = None
    baseline: float | None = None
    note: str = ""

    @property
    def reported(self) -> bool:
        return self.value is not None

    def to_json(self) -> dict[str, object]:
        return {"metric": self.metric, "check": self.check, "outcome": self.outcome, "value": self.value,
                "threshold": self.threshold, "baseline": self.baseline, "reported": self.reported,
                "note": self.note}

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> Check:
        def num(k: str) -> float | None:
            v = doc.get(k)
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

        outcome = doc.get("outcome")
        return cls(metric=str(doc.get("metric", "")), check=str(doc.get("check", "")),
                   outcome=outcome if outcome in ("pass", "warn", "fail", "skipped") else "skipped",
                   value=num("value"), threshold=num("threshold"), baseline=num("baseline"),
                   note=str(doc.get("note") or ""))

    def words(self) -> str:
        """"rows_loaded = 0, expected >= 1: fail"."""
        value = "not reported" if self.value is None else f"= {_num(self.value)}"
        base = f" (baseline {_num(self.baseline)})" if self.baseline is not None else ""
        note = f" ({self.note})" if self.note else ""
        return f"{self.metric} {value}, expected {self.check}{base}: {self.outcome}{note}"


def evaluate(metric: str, check: str, on_fail: str, on_missing: str | None, value: float | None,
             baseline: float | None, comparable: int = 0) -> Check:
    """What the compiled states decide for one expectation (the rule in words: docs/expectations.md).
    ``comparable``: how many earlier runs the baseline is the median of."""
    cond = parse(check)
    if value is None:
        missing = on_missing or on_fail
        outcome: Outcome = "pass" if missing == "pass" else missing  # type: ignore[assignment]
        return Check(metric, check, outcome, None, cond.threshold(baseline), baseline, "not reported")
    if cond.uses_baseline and baseline is None:
        return Check(metric, check, "skipped", value, None, None,
                     f"{comparable} comparable earlier runs, a baseline needs {BASELINE_RUNS}")
    threshold = cond.threshold(baseline)
    assert threshold is not None
    outcome = "pass" if cond.holds(value, threshold) else on_fail  # type: ignore[assignment]
    return Check(metric, check, outcome, value, threshold, baseline)


def verdict(checks: list[Check]) -> str:
    if any(c.outcome == "fail" for c in checks):
        return "fail"
    return "warn" if any(c.outcome == "warn" for c in checks) else "pass"


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _num(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.2f}"
