"""A schedule dialect: the language a source's schedule is written in, with the two things the
import needs of it, side by side so they cannot drift apart: its **translation** into EventBridge
expressions (or the reason there is none) and its **oracle**, how the proof computes the source's
own fires, independently of the translation and of ``jobplane next``.

An oracle is one of:

* :class:`CronOracle`: five Unix fields whose days and times of day cronsim computes (a
  well-kept evaluator written to match Debian cron); on a day the zone's clock changes the fires
  are walked one by one, by cronsim (Debian cron's DST rules) or by the dialect's own documented
  rule (``walker``);
* :class:`ExpressionOracle`: the source *is* EventBridge, so its fires are EventBridge's and the
  proof shows that what was written is what was read;
* :class:`IntervalOracle`: every N seconds from when the scheduler started, which no clock
  can check.

The dialects every reader shares are here; a format that brings its own (GitHub Actions) declares
it in its module, and :mod:`jobplane.importer.formats` collects them all by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from jobplane.importer.entries import SourceSchedule
from jobplane.importer.schedules import (Translation, translate_celery, translate_eventbridge, translate_interval,
                                         translate_unix, unix_equivalent)

#: The fire instants of one schedule after a time, in a zone, ascending.
Walker = Callable[[datetime, ZoneInfo], Iterator[datetime]]


@dataclass(frozen=True)
class CronOracle:
    fields: str  # minute hour day-of-month month day-of-week, as cronsim reads them
    walker: Walker | None = None  # clock-change days; None: cronsim's own iterator


@dataclass(frozen=True)
class ExpressionOracle:
    expression: str


@dataclass(frozen=True)
class IntervalOracle:
    seconds: int | None


Oracle = CronOracle | ExpressionOracle | IntervalOracle


@dataclass(frozen=True)
class Dialect:
    name: str
    translate: Callable[[SourceSchedule], Translation]
    oracle: Callable[[SourceSchedule], Oracle]


def _unix_oracle(schedule: SourceSchedule) -> Oracle:
    return CronOracle(unix_equivalent(schedule))


def _celery_oracle(schedule: SourceSchedule) -> Oracle:
    text = unix_equivalent(schedule)
    _, _, dom, _, dow = text.split()
    # Celery ANDs the day fields; the translation refused a crontab with both restricted, so at
    # most one is, and cronsim ANDs when the other is '*'
    if dom not in ("*", "?") and dow not in ("*", "?"):
        raise ValueError("a Celery crontab with both day fields restricted has no Unix form")
    return CronOracle(text)


#: 5 fields, Vixie/Debian cron's rules (crontab, Kubernetes, whose cron library follows them).
UNIX_CRON = Dialect("unix-cron", translate_unix, _unix_oracle)
#: cron()/rate()/at() as EventBridge evaluates them (EventBridge rules and schedules, ecschedule).
EVENTBRIDGE = Dialect("eventbridge", translate_eventbridge, lambda s: ExpressionOracle(s.text))
#: Celery's crontab(), whose day fields must *both* match.
CELERY_CRONTAB = Dialect("celery-crontab", translate_celery, _celery_oracle)
#: every N seconds from when the scheduler started (Celery's timedelta).
INTERVAL = Dialect("interval", translate_interval, lambda s: IntervalOracle(s.seconds))
