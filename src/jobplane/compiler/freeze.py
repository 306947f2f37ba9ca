"""Freezes: `jobplane plan` refuses a change to a job during its own declared freeze window
(a ``[blackouts.NAME]`` with ``freeze = true`` that the job names, or its team does), unless
the change says ``--break-glass --reason "..."``, which is audited (cli/definitions.py).

A change is any difference between the compiled output compared with (the deployed one, or the
definitions at ``--against-ref``) and this compile for the job: its catalog entry or its
Terraform (added and removed jobs too). The windows are read from both sides' catalogs, so a
change that drops the window from a job, or the job itself, is refused during the freeze too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from jobplane.compiler.plan import _job_file, catalog_jobs
from jobplane.contract.blackouts import iso
from jobplane.contract.catalog import CatalogJob


@dataclass(frozen=True)
class Frozen:
    """A changed job inside one of its freeze windows now."""

    job: str
    change: str  # added, changed, removed
    window: str
    until: datetime

    def line(self) -> str:
        return (f"{self.job} ({self.change}) is frozen by {self.window} until {iso(self.until)}: a change during its "
                "freeze needs --break-glass --reason \"...\" (audited)")


def frozen_changes(old_files: dict[str, str], new_files: dict[str, str], now: datetime) -> list[Frozen]:
    """Each job this plan changes that is inside a freeze window of its own at ``now``."""
    old, new = catalog_jobs(old_files), catalog_jobs(new_files)
    out = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        if before is None:
            change = "added"
        elif after is None:
            change = "removed"
        elif before != after or old_files.get(_job_file(old_files, name) or "") != new_files.get(
                _job_file(new_files, name) or ""):
            change = "changed"
        else:
            continue
        windows = [w for entry in (before, after) if entry is not None for w in entry.windows if w.freeze]
        for w in windows:
            if (occurrence := w.containing(now)) is not None:
                out.append(Frozen(name, change, w.name, occurrence[1]))
                break
    return out


def horizon_lines(jobs: list[CatalogJob], now: datetime) -> list[str]:
    """A warning for each blackout window whose compiled occurrences end within YEARS_WARNING of
    ``now`` (or have ended) while a job still names it: past the horizon its fires are no longer
    refused. A plan runs on every pull request, so the warning comes months ahead."""
    from jobplane.compiler.calendar_plan import LISTED, YEARS_WARNING

    ending: dict[tuple[str, str], list[str]] = {}
    for job in jobs:
        for w in job.windows:
            last = w.intervals[-1][1] if w.intervals else None
            if last is None or last - now <= YEARS_WARNING:
                ending.setdefault((w.name, iso(last) if last else "none"), []).append(job.name)
    lines = []
    for (name, last_end), names in sorted(ending.items()):
        shown = ", ".join(sorted(names)[:LISTED]) + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")
        lines.append(f"WARNING: blackout window {name}'s compiled occurrences end {last_end}: extend [blackouts] years in "
                     f"jobplane.toml and recompile, or its jobs' fires are no longer refused after it: {shown}")
    return lines
