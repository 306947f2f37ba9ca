"""Schedule kinds as objects: each kind of schedule expression is one class that says, once,
everything the compiler, the runtime, the importer and the portal do differently for it.

A job's ``schedule`` holds expressions of four kinds: EventBridge's ``cron()``, ``rate()`` and
``at()`` (contract/schedule.py evaluates them) and the business-day rules ``business(...)``
(contract/business_fires.py, which needs the job's calendar). Which kind an expression is used
to be decided by ``is_rule()`` and ``isinstance(Rate/At/CronExpression)`` in a dozen files;
now each of them asks the expression's kind (:func:`kind_of`):

* how it is read and checked (:meth:`ScheduleKind.parse`, :meth:`ScheduleKind.problems`),
* its fires after an instant (:meth:`ScheduleKind.fires`; the one function that merges a job's
  schedules into its fires is :func:`jobplane.contract.job_fires.job_fires`),
* its words (:meth:`ScheduleKind.describe`), its times of day (:meth:`ScheduleKind.times_of_day`,
  for wall-time deadlines) and days (:meth:`ScheduleKind.days`, for the importer's proof of
  same fires), how often it may fire (:meth:`ScheduleKind.min_interval`,
  :meth:`ScheduleKind.most_per_day`),
* what is deployed for it (:attr:`ScheduleKind.deploys_as_written`: else the job's calendar
  compiles its fires into crons), whether it needs a calendar (:attr:`ScheduleKind.needs_calendar`)
  or may be filtered by one (:attr:`ScheduleKind.calendar_filters`), and whether its fires count
  from its deployment (:attr:`ScheduleKind.counts_from_deployment`: the anchors of rate()).

Adding a kind: one class here and its line in :data:`KINDS` (before any kind whose prefix it
shares); its evaluator in its own module; its helper in ``jobs/lib/jobplane.libsonnet`` and its
row in docs/dsl.md. ``tests/test_schedule_kinds.py`` holds every reader of fires to one answer
for every kind.

A job with no schedule (manual only) has no kind: it has no expression and no fire.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import ClassVar
from zoneinfo import ZoneInfo

from jobplane.contract import business_fires as bf
from jobplane.contract.quoting import quoted
from jobplane.contract.schedule import (AtExpression, CronExpression, RateExpression, ScheduleError,
                                        iter_fire_times, parse)

Parsed = CronExpression | RateExpression | AtExpression | bf.Rule


class ScheduleKind:
    """One kind of schedule expression. Subclasses set the class attributes and parse; the
    defaults are those of a plain EventBridge expression."""

    name: ClassVar[str]
    prefix: ClassVar[str]  # how its expressions start: what :func:`kind_of` reads
    #: Its fires are only known with the job's calendar (validate refuses it without one).
    needs_calendar: ClassVar[bool] = False
    #: A job's calendar filters its fires by day (a closed day's skipped or moved).
    calendar_filters: ClassVar[bool] = True
    #: Its fires count from the schedule's start in AWS (rate()): the runtime reads each one's
    #: anchor (platform/anchors.py); without one they count from the window's start.
    counts_from_deployment: ClassVar[bool] = False
    #: EventBridge is given the expression itself; otherwise the job's calendar compiles its
    #: fires into crons (business_fires.expand).
    deploys_as_written: ClassVar[bool] = True

    def matches(self, text: str) -> bool:
        return text.startswith(self.prefix)

    def parse(self, text: str) -> Parsed:
        """The expression read, or ScheduleError saying what to write instead."""
        return _parsed(text)

    def problems(self, text: str) -> Iterator[str]:
        """What validate refuses beyond the syntax (the expression parses)."""
        return iter(())

    def fires(self, text: str, tz: ZoneInfo, after: datetime, anchor: datetime | None = None) -> Iterator[datetime]:
        """Its fires strictly after ``after``, in order, in ``tz``, by EventBridge's rules."""
        expr = self.parse(text)
        assert not isinstance(expr, bf.Rule)
        return iter_fire_times(expr, tz, after, anchor)

    def times_of_day(self, text: str) -> list[tuple[int, int]] | None:
        """The (hour, minute)s it fires at; None: at any time of day (counted from its start)."""
        return None

    def days(self, text: str, first: date, count: int) -> frozenset[date] | None:
        """The days among ``count`` from ``first`` it fires on (by its own fields, in its zone's
        calendar); None: not decided by day (it counts from its start, or needs a calendar)."""
        return None

    def min_interval(self, text: str) -> timedelta | None:
        """The shortest time between two of its fires on one day; None: at most one a day."""
        times = self.times_of_day(text)
        if times is None or len(times) < 2:
            return None
        minutes = [h * 60 + m for h, m in times]
        return timedelta(minutes=min(b - a for a, b in zip(minutes, minutes[1:])))

    def most_per_day(self, text: str) -> float:
        """The most fires it has in a day."""
        times = self.times_of_day(text)
        return float(len(times)) if times is not None else 1.0

    def describe(self, text: str) -> str:
        """Its words, as the portal and the plan show them."""
        return text


class Cron(ScheduleKind):
    name = "cron"
    prefix = "cron("

    def problems(self, text: str) -> Iterator[str]:
        expr = self.parse(text)
        if isinstance(expr, CronExpression) and not expr.ever_fires():
            # refused, not warned: a schedule deployed to never fire is a mistake (a job run by
            # hand has no schedule), as a calendar job with no fire in its years is refused
            yield (f"{quoted(text)} never fires: no day matches its day-of-month, month, "
                   "day-of-week and year fields together (e.g. February 31st)")

    def times_of_day(self, text: str) -> list[tuple[int, int]] | None:
        expr = self.parse(text)
        assert isinstance(expr, CronExpression)
        return expr.times_of_day()

    def days(self, text: str, first: date, count: int) -> frozenset[date] | None:
        expr = self.parse(text)
        assert isinstance(expr, CronExpression)
        return _cron_days(expr, first, count)

    def describe(self, text: str) -> str:
        """'cron(30 23 L * ? *)' -> 'At 23:30, on the last day of the month'. cron-descriptor
        reads the six EventBridge fields (year last); day-of-week numbers are EventBridge's 1=SUN."""
        from cron_descriptor import Options, get_description  # the portal's and plan's, not the runtime's

        minute, hour, dom, month, dow, year = text[5:-1].split()
        options = Options()
        options.day_of_week_start_index_zero = False  # 1-7 = SUN-SAT, as EventBridge
        options.use_24hour_time_format = True
        unix_like = " ".join([minute, hour, dom, month, dow] + ([] if year == "*" else [year]))
        try:
            return str(get_description(unix_like, options))
        except Exception:  # a form the describer does not know: show the expression itself
            return text


class Rate(ScheduleKind):
    name = "rate"
    prefix = "rate("
    calendar_filters = False  # counts from its start, not by day
    counts_from_deployment = True

    def min_interval(self, text: str) -> timedelta | None:
        expr = self.parse(text)
        assert isinstance(expr, RateExpression)
        return expr.interval

    def most_per_day(self, text: str) -> float:
        interval = self.min_interval(text)
        assert interval is not None
        return timedelta(days=1) / interval

    def describe(self, text: str) -> str:
        return f"Every {text[5:-1]}"


class At(ScheduleKind):
    name = "at"
    prefix = "at("

    def times_of_day(self, text: str) -> list[tuple[int, int]] | None:
        expr = self.parse(text)
        assert isinstance(expr, AtExpression)
        return [(expr.when.hour, expr.when.minute)]

    def days(self, text: str, first: date, count: int) -> frozenset[date] | None:
        expr = self.parse(text)
        assert isinstance(expr, AtExpression)
        day = expr.when.date()
        return frozenset({day}) if first <= day < first + timedelta(days=count) else frozenset()

    def describe(self, text: str) -> str:
        return f"Once, at {text[3:-1]}"


class Business(ScheduleKind):
    """A business-day rule (``jp.businessDays``, ``jp.monthly(business_day=..)``): its fires
    are the calendar's (business_fires.calendar_fires), deployed as the crons it expands to."""

    name = "business"
    prefix = bf.RULE_PREFIX
    needs_calendar = True
    deploys_as_written = False

    def parse(self, text: str) -> Parsed:
        return bf.parse_rule(text)

    def fires(self, text: str, tz: ZoneInfo, after: datetime, anchor: datetime | None = None) -> Iterator[datetime]:
        raise ValueError(f"{text}: a business-day rule's fires are its calendar's (job_fires reads them)")

    def times_of_day(self, text: str) -> list[tuple[int, int]] | None:
        rule = self.parse(text)
        assert isinstance(rule, bf.Rule)
        return list(rule.times)

    def describe(self, text: str) -> str:
        return bf.describe(text)


#: Every kind, in the order :func:`kind_of` asks them.
KINDS: tuple[ScheduleKind, ...] = (Cron(), Rate(), At(), Business())


def kind_of(text: str) -> ScheduleKind:
    """The kind of an expression; ScheduleError (with what to write) when it is none of them."""
    for kind in KINDS:
        if isinstance(text, str) and kind.matches(text.strip()):
            return kind
    parse(text)  # says what is wrong (a Unix cron: its EventBridge equivalent)
    raise ScheduleError(f"{quoted(text)} is not a schedule expression")  # pragma: no cover (parse raised)


def by_name(name: str) -> ScheduleKind:
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise KeyError(f"unknown schedule kind {name!r} (known: {', '.join(k.name for k in KINDS)})")


@lru_cache(maxsize=4096)
def _cron_days(expr: CronExpression, first: date, count: int) -> frozenset[date]:
    return frozenset(d for d in (first + timedelta(days=i) for i in range(count)) if expr.matches_day(d))


@lru_cache(maxsize=8192)
def _parsed(text: str) -> Parsed:
    return parse(text)


__all__ = ["KINDS", "At", "Business", "Cron", "Rate", "ScheduleKind", "by_name", "kind_of"]
