"""A calendar job on its page: the rules in words, and its next fires with the calendar's notes
(moved off a closed day, closed days skipped among them), from the one computation of fires
(contract/business_fires.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from jobplane.contract.job_fires import next_job_fires
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.schedule_kinds import kind_of

#: How many fires the job page lists.
SHOWN = 10


@dataclass(frozen=True)
class FireLine:
    at: datetime
    note: str | None
    skipped: bool = False


def rule_words(expression: str) -> str:
    kind = kind_of(expression)  # a business-day rule in words; a cron or at() as written
    return kind.describe(expression) if kind.needs_calendar else expression


def calendar_fire_lines(entry: CatalogJob, count: int = SHOWN) -> list[FireLine]:
    """The next ``count`` fires, and the days among them closed for other than the weekend."""
    cs = entry.calendar_schedule
    if cs is None or not entry.enabled:
        return []
    window = next_job_fires(entry, datetime.now(timezone.utc), count)
    weekend = {"Saturday", "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}
    lines = [FireLine(f.at, f.note) for f in window.fires]
    lines += [FireLine(s.at, f"skipped: closed ({s.reason})", True) for s in window.skipped if s.reason not in weekend]
    return sorted(lines, key=lambda line: line.at.astimezone(timezone.utc))
