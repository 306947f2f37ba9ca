"""A job's deadline: by when each scheduled fire's run must have SUCCEEDED (issue 53).

Two forms, both per scheduled fire (never per execution: a retry, a re-run, a backfill or
"run it as that fire" answers for the same fire and the same deadline):

* a wall time, ``'12:00'``: that time in the job's timezone on the fire's local day (a report
  due by noon Tokyo time, whatever time the fire ran). A wall time that does not exist that day
  (inside a spring-forward gap) is read with the offset before the gap, as ``zoneinfo`` does
  (02:30 on New York's spring-forward day is 03:30 daylight time); one that exists twice, at its
  first;
* a duration after the fire, ``'3h'``, ``'90m'`` (the DSL's durations): fire time plus it.

The compiler (compiler/model.py) validates the text with :func:`parse` and checks the wall
time against each schedule's times of day; the deadline checker (platform/deadlines.py) and
the reports compute each fire's due time with :meth:`Deadline.due`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

_WALL = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_DURATION = re.compile(r"^(\d+)\s*(s|m|h|d)$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}

#: A duration deadline is 1 minute to 24 hours after the fire: the checker looks back a day
#: and a half for fires whose deadline is still open.
MIN_AFTER = timedelta(minutes=1)
MAX_AFTER = timedelta(hours=24)


class DeadlineError(ValueError):
    """A deadline text the DSL does not accept."""


@dataclass(frozen=True)
class Deadline:
    """``at``: a wall time on the fire's local day; or ``after``: a duration after the fire."""

    text: str
    at: time | None = None
    after: timedelta | None = None

    def due(self, fire: datetime, zone: str) -> datetime:
        """When the run of ``fire`` (an aware instant) must have SUCCEEDED, in UTC."""
        if self.after is not None:
            return fire.astimezone(timezone.utc) + self.after
        assert self.at is not None
        tz = ZoneInfo(zone)
        local = fire.astimezone(tz)
        return datetime.combine(local.date(), self.at, tzinfo=tz).astimezone(timezone.utc)


def parse(text: object) -> Deadline:
    """``'HH:MM'`` (24-hour wall time) or a duration (``'90m'``, ``'3h'``, 1m to 24h)."""
    if not isinstance(text, str) or not text.strip():
        raise DeadlineError("a deadline is a wall time 'HH:MM' (e.g. '12:00') or a duration after the fire "
                            "(e.g. '3h')")
    value = text.strip()
    if m := _WALL.fullmatch(value):
        return Deadline(value, at=time(int(m.group(1)), int(m.group(2))))
    if m := _DURATION.fullmatch(value):
        after = timedelta(seconds=int(m.group(1)) * _UNIT[m.group(2)])
        if not MIN_AFTER <= after <= MAX_AFTER:
            raise DeadlineError(f"{value!r}: a duration after the fire must be 1m to 24h")
        return Deadline(value, after=after)
    raise DeadlineError(f"{value!r} is neither a wall time 'HH:MM' (e.g. '12:00', in the job's "
                        "timezone on the fire's day) nor a duration after the fire (e.g. '3h', '90m')")
