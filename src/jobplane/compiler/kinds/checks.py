"""Field checks the kinds share."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from jobplane.contract.quoting import quoted
from jobplane.contract.types import JsonObject, JsonValue


def matches(pattern: re.Pattern[str], message: str) -> Callable[[JsonValue, JsonObject], Iterator[str]]:
    """A field check: the whole value (when given) matches ``pattern``, else ``message`` about it.
    (Whole: ``$`` alone also matches before a final line break, which let 'name\\n' through.)"""
    def check(v: JsonValue, _: JsonObject) -> Iterator[str]:
        if isinstance(v, str) and not pattern.fullmatch(v):
            yield message.format(value=quoted(v))
    return check
