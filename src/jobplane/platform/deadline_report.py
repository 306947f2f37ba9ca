"""How often each job's fires met their deadline (issue 53): per job and per team, the share of
decided fires that SUCCEEDED by their due time over the last 30 and 90 days, and the breaches.

Read from the outcomes the deadline checker records (platform/deadlines.py: one item per decided
fire, kept 100 days), one Query per job with a deadline; the portal's job page and API and
``jobplane status`` show it. A fire counts once it is decided (met, or breached and alerted): a
fire whose deadline is still ahead is not counted yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from jobplane.contract import execution_input
from jobplane.contract.catalog import CatalogJob
from jobplane.platform.context import PlatformContext
from jobplane.platform.deadlines import FireOutcome, outcomes

#: The windows reported, in days.
WINDOWS = (30, 90)


@dataclass(frozen=True)
class Share:
    """Of ``fires`` decided in the last ``days``, ``met`` SUCCEEDED by their deadline."""

    days: int
    fires: int
    met: int

    @property
    def share(self) -> float | None:
        return self.met / self.fires if self.fires else None

    def words(self) -> str:
        if not self.fires:
            return f"no fire decided in {self.days} days"
        return f"{self.met}/{self.fires} met ({100 * self.met / self.fires:.0f}%) over {self.days} days"


@dataclass(frozen=True)
class Breach:
    fire: str
    due: str
    reason: str
    early: bool  # alerted before its due time, the breach being certain
    succeeded_at: str | None  # when a run of it SUCCEEDED after all (None: not yet)
    execution: str | None


@dataclass(frozen=True)
class JobDeadlines:
    job: str
    team: str
    deadline: str
    shares: tuple[Share, ...]
    breaches: tuple[Breach, ...]  # newest first, over the longest window


@dataclass(frozen=True)
class TeamDeadlines:
    team: str
    shares: tuple[Share, ...]
    jobs: tuple[JobDeadlines, ...]


def _shares(decided: list[FireOutcome], now: datetime) -> tuple[Share, ...]:
    out = []
    for days in WINDOWS:
        since = execution_input.iso(now - timedelta(days=days))
        window = [o for o in decided if o.fire >= since]
        out.append(Share(days, len(window), sum(1 for o in window if o.met)))
    return tuple(out)


def job_deadlines(context: PlatformContext, entry: CatalogJob, now: datetime | None = None) -> JobDeadlines | None:
    """The job's report; None when it has no deadline."""
    if not entry.deadline:
        return None
    now = now or datetime.now(timezone.utc)
    decided = outcomes(context.ddb, context.deployment.table, entry.name,
                       execution_input.iso(now - timedelta(days=max(WINDOWS))))
    breaches = tuple(Breach(o.fire, o.due, o.reason, o.early, o.succeeded_at, o.execution)
                     for o in sorted(decided, key=lambda o: o.fire, reverse=True) if not o.met)
    return JobDeadlines(entry.name, entry.team, entry.deadline, _shares(decided, now), breaches)


def team_deadlines(context: PlatformContext, now: datetime | None = None, team: str | None = None) -> list[TeamDeadlines]:
    """Every team's report (``team``: that team's), with its jobs' that have a deadline."""
    now = now or datetime.now(timezone.utc)
    by_team: dict[str, list[JobDeadlines]] = {}
    for entry in sorted(context.entries.values(), key=lambda e: e.name):
        if team is not None and entry.team != team:
            continue
        report = job_deadlines(context, entry, now)
        if report is not None:
            by_team.setdefault(entry.team, []).append(report)
    out = []
    for name, jobs in sorted(by_team.items()):
        shares = tuple(Share(days, sum(j.shares[i].fires for j in jobs), sum(j.shares[i].met for j in jobs))
                       for i, days in enumerate(WINDOWS))
        out.append(TeamDeadlines(name, shares, tuple(jobs)))
    return out
