"""A definition's durations ('90s', '15m', '2h', '1h30m', '1d', or seconds): one grammar for the
job's and steps' fields (compiler/model.py) and a step kind's own (an approval's timeout). Here,
not in model.py, because the kinds cannot import the model (it imports the kinds' registry: no
import cycle, tests/test_layers.py). Why strings: '2h' reads better than 7200."""

from __future__ import annotations

import re

from jobplane.compiler.fields import Parsed
from jobplane.contract.quoting import quoted
from jobplane.contract.types import JsonValue

DURATION_RE = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(value: JsonValue) -> int:
    """Seconds from 90, '90s', '15m', '2h', '1h30m' or '1d'."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '15m'")
    if isinstance(value, (int, float)):
        if value <= 0 or int(value) != value:
            raise ValueError(f"{quoted(value)} is not a positive whole number of seconds")
        return int(value)
    if isinstance(value, str) and value and (m := DURATION_RE.match(value.strip())):
        d, h, mi, s = (int(x or 0) for x in m.groups())
        total = d * 86400 + h * 3600 + mi * 60 + s
        if total > 0:
            return total
    raise ValueError(f"{quoted(value)} is not a duration: use seconds or a string like '90s', '15m', '2h', '1h30m'")


#: Seconds, or a string such as '90s', '15m', '2h', '1h30m', '1d'.
Duration = Parsed(parse_duration, {"anyOf": [{"type": "integer", "exclusiveMinimum": 0},
                                             {"type": "string", "minLength": 1, "pattern": DURATION_RE.pattern}]})
