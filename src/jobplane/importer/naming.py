"""Job names for imported entries: kebab-case from what the source calls the job, short enough
for every AWS name derived from it, and unique, across the repository's jobs and among the
imported ones, in every derived name (a job ``nightly`` with two schedules names the schedule
``<prefix>-nightly-2``, so a job ``nightly-2`` would collide with it at apply). A collision takes
the first free ``-2``, ``-3`` ... in input order, so the same input always gives the same names.
"""

from __future__ import annotations

import re

from jobplane.compiler.model import NAME_RE
from jobplane.compiler.validate import derived_names
from jobplane.contract import names

#: Shortest a trimmed name may get before a suffix.
MIN_NAME = 3


def kebab(hint: str, fallback: str) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", hint).lower()).strip("-")
    name = re.sub(r"-+", "-", name)
    if not name:
        name = fallback
    if not name[0].isalpha():
        name = f"job-{name}"
    return name


def derived(prefix: str, job: str, schedules: int, secrets: bool) -> list[tuple[str, str]]:
    """Every AWS name an imported job derives (it has no ``after``), as validation computes them."""
    return derived_names(prefix, job, schedules, False, secrets)


class Namer:
    """Hands out names; ``taken`` holds every derived AWS name already in use."""

    def __init__(self, prefix: str, existing: dict[str, tuple[int, bool]], replaceable: frozenset[str] | set[str] = frozenset()):
        """``replaceable``: existing jobs an entry of the same name may take over (its file is the
        one the entry would be written to: an earlier import of it)."""
        self.prefix = prefix
        self.replaceable = set(replaceable)
        self.owned = {job: {n for _, n in derived(prefix, job, count, secrets)} for job, (count, secrets) in existing.items()}
        self.jobs: set[str] = set(existing)
        self.taken: set[str] = set().union(*self.owned.values()) | names.base_module_names(prefix)

    def _fits(self, job: str, schedules: int, secrets: bool) -> bool:
        return not names.too_long(derived(self.prefix, job, schedules, secrets))

    def _free(self, job: str, schedules: int, secrets: bool) -> bool:
        mine = {n for _, n in derived(self.prefix, job, schedules, secrets)}
        if job in self.replaceable:
            return not (mine & (self.taken - self.owned.get(job, set())))
        return job not in self.jobs and not (mine & self.taken)

    def name(self, hint: str, fallback: str, schedules: int, secrets: bool) -> str:
        base = kebab(hint, fallback)
        n = 1
        while True:
            suffix = "" if n == 1 else f"-{n}"
            stem = base
            while stem and not self._fits(stem + suffix, schedules, secrets) and len(stem) > MIN_NAME:
                stem = stem[:-1].rstrip("-")
            candidate = stem + suffix
            if NAME_RE.fullmatch(candidate) and self._fits(candidate, schedules, secrets) \
                    and self._free(candidate, schedules, secrets):
                self.claim(candidate, schedules, secrets)
                return candidate
            n += 1

    def claim(self, job: str, schedules: int, secrets: bool) -> None:
        self.replaceable.discard(job)  # taken over once: a second entry of that name is renamed
        self.jobs.add(job)
        self.taken |= {n for _, n in derived(self.prefix, job, schedules, secrets)}
