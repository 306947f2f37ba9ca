"""What an expectation's judge needs to tell a business day and a business day of the month in
JSONata (docs/expectations.md ``when``, comparable runs): the days and the zone's offsets
(:class:`ExpectDays`, resolved at validation by compiler/expect_days.py) and the expressions
built from them. No import of the model or the calendars: the judge's states import this."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

BUSINESS_DAYS = "business_days"
#: The key of a calendar job's own calendar in ``Job.expect_days``, for its baselines: the same
#: business day of earlier months (:func:`business_day_expression`).
JOB_CALENDAR = "#job-calendar"


@dataclass(frozen=True)
class ExpectDays:
    """What the judge needs to tell a business day: closed and open dates ('YYYY-MM-DD'), the
    weekend (Python weekdays, Monday 0), and [from epoch ms, offset minutes] of the job's zone."""

    calendar: str | None
    closed: tuple[tuple[str, str], ...]  # (date, why)
    opened: tuple[str, ...]
    weekend: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]


def offsets(tz: str, first_year: int, last_year: int) -> tuple[tuple[int, int], ...]:
    """The zone's UTC offset (minutes) from each change over the years, found half hour by half hour
    (a zone changes its offset on the hour or half hour in every year the calendars cover)."""
    zone = ZoneInfo(tz)
    at = datetime(first_year - 1, 12, 31, tzinfo=timezone.utc)
    end = datetime(last_year + 1, 1, 2, tzinfo=timezone.utc)
    out: list[tuple[int, int]] = []
    while at < end:
        off = at.astimezone(zone).utcoffset()
        minutes = int(off.total_seconds() // 60) if off is not None else 0
        if not out or out[-1][1] != minutes:
            out.append((int(at.timestamp() * 1000) if out else 0, minutes))
        at += timedelta(minutes=30)
    return tuple(out)


_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def business_day_expression(days: ExpectDays) -> str:
    """JSONata: the scheduled time's business day of its (local) month, as a key: ``bd3`` for the
    third open day of the month (``bd0`` on a closed day before the first). The days from the 1st
    are judged as :func:`closed_reason_expression` judges one."""
    import json

    closed = json.dumps(dict(days.closed), separators=(",", ":"), ensure_ascii=False)
    offsets = json.dumps([{"f": f, "o": o} for f, o in days.offsets], separators=(",", ":"))
    return ("($t := $toMillis($substring($states.input.scheduled_time, 0, 19) & \"Z\"); "
            f"$off := $reduce({offsets}, function($a, $e) {{ $e.f <= $t ? $e.o : $a }}, 0); "
            "$day := $floor(($t + $off * 60000) / 86400000); "
            "$dom := $number($substring($fromMillis($day * 86400000), 8, 2)); "
            "\"bd\" & $string($count($filter([($day - $dom + 1)..$day], function($d) { "
            "($date := $substring($fromMillis($d * 86400000), 0, 10); "
            f"$date in {json.dumps(list(days.opened))} or (($not($exists($lookup({closed}, $date)))) and "
            f"$not((($d + 3) % 7) in {json.dumps(list(days.weekend))}))) }}))))")


def closed_reason_expression(days: ExpectDays) -> str:
    """JSONata: why the run's scheduled time falls on a closed day in the job's zone ('' when open):
    its local date by the offset in force then, a one-off open date, a closed date (its reason),
    else the weekend by the day's number (1970-01-01 was a Thursday). The scheduled time is read
    to the second (a manual run's has microseconds)."""
    import json

    offsets = json.dumps([{"f": f, "o": o} for f, o in days.offsets], separators=(",", ":"))
    closed = json.dumps(dict(days.closed), separators=(",", ":"), ensure_ascii=False)
    return ("($t := $toMillis($substring($states.input.scheduled_time, 0, 19) & \"Z\"); "
            f"$off := $reduce({offsets}, function($a, $e) {{ $e.f <= $t ? $e.o : $a }}, 0); "
            "$day := $floor(($t + $off * 60000) / 86400000); $wd := ($day + 3) % 7; "
            "$date := $substring($fromMillis($day * 86400000), 0, 10); "
            f"$date in {json.dumps(list(days.opened))} ? \"\" : "
            f"($exists($lookup({closed}, $date)) ? $lookup({closed}, $date) : "
            f"($wd in {json.dumps(list(days.weekend))} ? {json.dumps(list(_DAY_NAMES))}[$wd] : \"\")))")
