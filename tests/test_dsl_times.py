"""The DSL library's time helpers (jobs/lib/jobplane.libsonnet) against the readers that take
their output, over every time of day: the library builds its expressions with ``+`` and
std.toString rather than Jsonnet's ``%`` (go-jsonnet runs std.format as Jsonnet, ~0.7 ms a call:
two thirds of a typical job file's evaluation), so each expression must still read back, through
the compiler's own parsers, as exactly the hour and minute it was given."""

from __future__ import annotations

import json
from pathlib import Path

import _gojsonnet

from jobplane.contract.business_fires import parse_rule
from jobplane.contract.schedule import CronExpression, parse

LIBRARY = Path(__file__).resolve().parents[1] / "jobs" / "lib"
TIMES = [(h, m) for h in range(24) for m in range(60)]
CRON_HELPERS = {"daily": "jp.daily(%s)", "weekdays": "jp.weekdays(%s)", "weekly": "jp.weekly('TUE', %s)",
                "monthly": "jp.monthly(day=3, at=%s)", "monthly last": "jp.monthly(day='L', at=%s)"}
RULE_HELPERS = {"businessDays": "jp.businessDays(%s)", "business_day": "jp.monthly(business_day=-1, at=%s)",
                "shift": "jp.monthly(day=15, shift='previous', at=%s)"}


def _evaluate(calls: list[str]) -> list[object]:
    text = _gojsonnet.evaluate_snippet("helpers", "local jp = import 'jobplane.libsonnet'; [" + ",".join(calls) + "]",
                                       jpathdir=[str(LIBRARY)])
    result = json.loads(text)
    assert isinstance(result, list) and len(result) == len(calls)
    return result


def _spellings(h: int, m: int) -> list[str]:
    """'HH:MM', and the one-digit forms the helpers also take ('7:05', '07:5', '7:5')."""
    return sorted({f"'{h:02d}:{m:02d}'", f"'{h}:{m:02d}'", f"'{h:02d}:{m}'", f"'{h}:{m}'"})


def test_every_time_of_day_reads_back_from_each_cron_helper_as_itself() -> None:
    cases = [(name, h, m, helper % spelled) for name, helper in CRON_HELPERS.items()
             for h, m in TIMES for spelled in _spellings(h, m)]
    for (name, h, m, call), value in zip(cases, _evaluate([c for *_, c in cases])):
        assert isinstance(value, str), (call, value)
        expression = parse(value)
        assert isinstance(expression, CronExpression), (call, value)
        assert expression.times_of_day() == [(h, m)], (name, call, value)


def test_a_list_of_times_reads_back_in_order_and_a_bad_one_is_refused_not_stood_in() -> None:
    daily, refused = _evaluate(["jp.daily(['00:00', '9:05', '23:59'])", "jp.daily('24:00')"])
    assert isinstance(daily, list)
    assert [parse(v).times_of_day() for v in daily] == [[(0, 0)], [(9, 5)], [(23, 59)]]  # type: ignore[union-attr]
    assert isinstance(refused, dict) and "00:00 to 23:59" in refused["jobplane:refused"]


def test_every_time_of_day_reads_back_from_each_business_rule_helper_as_itself() -> None:
    # several times in one rule: the rule's text joins them, each padded to HH:MM
    batches = [TIMES[i:i + 7] for i in range(0, len(TIMES), 7)]
    cases = [(name, batch, helper % ("[" + ",".join(f"'{h}:{m}'" for h, m in batch) + "]"))
             for name, helper in RULE_HELPERS.items() for batch in batches]
    for (name, batch, call), value in zip(cases, _evaluate([c for *_, c in cases])):
        assert isinstance(value, str), (call, value)
        assert parse_rule(value).times == tuple(sorted(batch)), (name, call, value)
