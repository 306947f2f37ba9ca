"""A job's blackout windows resolved against jobplane.toml: the names it gives (and its team's
``[teams.<t>] blackout``) checked, each window's occurrences over the horizon computed once per
compile (contract/blackouts.py ``occurrences``; a calendar window's closed days from
compiler/calendars.py, which reads the holidays package)."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from jobplane.compiler.model import Job
from jobplane.compiler.problems import Problem
from jobplane.contract.blackouts import MAX_OCCURRENCES, JobWindow, WindowDef, blackout_of, occurrences
from jobplane.contract.config import PlatformConfig
from jobplane.contract.quoting import did_you_mean, quoted

#: Windows resolved in this process, by the settings object they came from (kept alive with it).
_CACHE: dict[tuple[int, str, str], tuple[object, JobWindow]] = {}


def names_of(job: Job, config: PlatformConfig) -> list[str]:
    """The windows ``job`` is in: its own, then its team's defaults, each once."""
    team = config.teams.get(job.team)
    out: list[str] = []
    for name in [*job.blackout, *(team.blackout if team else ())]:
        if name not in out:
            out.append(name)
    return out


def job_windows(job: Job, config: PlatformConfig) -> list[JobWindow]:
    """The resolved windows of ``job`` (names jobplane.toml does not declare are left out: the
    validation names them)."""
    settings = config.blackouts
    zone = job.timezone or config.default_timezone
    out = []
    for name in names_of(job, config):
        window = settings.windows.get(name)
        if window is None:
            continue
        key = (id(settings), name, zone)
        found = _CACHE.get(key)
        if found is None or found[0] is not settings:
            found = (settings, JobWindow(name, window.action, window.freeze,
                                         tuple(occurrences(window, zone, settings.years, _closed(window, config)))))
            _CACHE[key] = found
        out.append(found[1])
    return out


def _closed(window: WindowDef, config: PlatformConfig) -> list[date]:
    if window.calendar is None or window.calendar not in config.calendars.calendars:
        return []
    from jobplane.compiler.calendars import _resolved

    return [date.fromisoformat(d) for d in _resolved(config.calendars, window.calendar).closed]


def blackout_problems(source: str, job: Job, config: PlatformConfig) -> list[Problem]:
    """Each window the job names is declared in jobplane.toml's [blackouts] and open to its team;
    a blackout applies to scheduled fires, so a job without a schedule names none; its windows'
    occurrences fit the state machine."""
    problems = []
    declared = config.blackouts.windows
    for i, name in enumerate(job.blackout):
        window = declared.get(name)
        if window is None:
            problems.append(Problem(source, job.name, f"blackout[{i}]", f"no window {quoted(name)} in jobplane.toml's "
                                    "[blackouts]" + did_you_mean(name, sorted(declared))))
        elif window.team is not None and window.team != job.team:
            problems.append(Problem(source, job.name, f"blackout[{i}]", f"window {quoted(name)} belongs to team "
                                    f"{quoted(window.team)}"))
    if job.blackout and not job.schedule:
        problems.append(Problem(source, job.name, "blackout", "a blackout window skips or defers scheduled fires, "
                                "and this job has no schedule"))
    if not problems:
        total = sum(len(w.intervals) for w in job_windows(job, config))
        if total > MAX_OCCURRENCES:
            problems.append(Problem(source, job.name, "blackout", f"its windows occur {total:,} times in "
                                    f"{config.blackouts.years[0]}-{config.blackouts.years[1]}; at most "
                                    f"{MAX_OCCURRENCES} fit its state machine: fewer years or a rarer window"))
    return problems


def mark(windows: list[JobWindow], t: datetime, zone: str) -> str:
    """What `jobplane next` (and `plan`) says beside a fire at ``t`` inside one of ``windows``:
    '' outside them."""
    found = blackout_of(windows, t)
    if found is None:
        return ""
    tz = ZoneInfo(zone)
    what = "skipped" if found.action == "skip" else "deferred: runs once when the window ends"
    return (f"  BLACKED OUT by {found.window} ({what}; window "
            f"{found.start.astimezone(tz).strftime('%Y-%m-%d %H:%M')}-{found.end.astimezone(tz).strftime('%Y-%m-%d %H:%M %Z')})")
