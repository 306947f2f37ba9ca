"""Every format ``jobplane import`` reads, in one tuple: ``--format``'s choices, auto-detection
and the dialects the proof knows are all read from :data:`FORMATS`.

Adding a format is one module that declares its ``FORMAT`` (name, ``looks_like``, ``read``, the
dialects its schedules speak, each with its translation and its oracle) and one line here
(docs/import.md, "Adding a format").

Auto-detection asks each format in this order and takes the first that says yes; the crontab
comes last since it claims whatever is left.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from jobplane.importer import celery_beat, crontab, ecschedule, eventbridge, github_actions, kubernetes
from jobplane.importer.dialects import Dialect
from jobplane.importer.entries import SourceSchedule
from jobplane.importer.schedules import Translation
from jobplane.importer.sources import Source, SourceFormat

FORMATS: tuple[SourceFormat, ...] = (
    eventbridge.FORMAT,
    celery_beat.FORMAT,
    ecschedule.FORMAT,
    github_actions.FORMAT,
    kubernetes.FORMAT,
    crontab.SYSTEM,
    crontab.USER,
)

#: What ``--format`` takes besides a format's name: detect it per file.
AUTO = "auto"


def names() -> list[str]:
    return [f.name for f in FORMATS]


def by_name(name: str) -> SourceFormat:
    for f in FORMATS:
        if f.name == name:
            return f
    raise KeyError(f"unknown format {name!r} (known: {', '.join(names())})")


def detect(source: Source) -> SourceFormat:
    return next(f for f in FORMATS if f.looks_like(source))


_HELM = re.compile(r"\{\{-?\s*(?:\.Values|\.Release|\.Chart|\.Capabilities|include\s|toYaml|template\s|if\s|range\s)|-\}\}")

#: Files people hand to ``jobplane import`` that hold schedules in a form it does not read, each
#: with what to give it instead (checked before detection: a .tf file would otherwise be read as
#: a crontab and fail on every line).
UNSUPPORTED: tuple[tuple[Callable[[Source], bool], str], ...] = (
    (lambda s: s.suffix in (".tf", ".hcl") or s.path.name.endswith(".tf.json"),
     "a Terraform configuration, which jobplane does not read: after `terraform apply`, save `aws scheduler "
     "get-schedule --name NAME` for each schedule (or `aws events list-rules` and each rule's "
     "`list-targets-by-rule`) and import those"),
    (lambda s: s.is_yaml and _HELM.search(s.text) is not None,
     "a Helm template, which is not YAML until rendered: run `helm template RELEASE CHART > rendered.yaml` "
     "and import rendered.yaml"),
)


def unsupported(source: Source) -> str | None:
    return next((why for test, why in UNSUPPORTED if test(source)), None)


def _dialects() -> dict[str, Dialect]:
    found: dict[str, Dialect] = {}
    for f in FORMATS:
        for d in f.dialects:
            if found.setdefault(d.name, d) is not d:
                raise AssertionError(f"two dialects are named {d.name!r}")
    return found


DIALECTS = _dialects()


def dialect_named(name: str) -> Dialect:
    try:
        return DIALECTS[name]
    except KeyError:
        raise KeyError(f"no registered format speaks the schedule dialect {name!r}") from None


def translate(schedule: SourceSchedule) -> Translation:
    """A source schedule in EventBridge terms, by its dialect's rules."""
    return dialect_named(schedule.dialect).translate(schedule)


def detection_help() -> str:
    return "; ".join(f"{f.detection}: {f.name}" for f in FORMATS)
