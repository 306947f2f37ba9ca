"""The definition a run ran: one digest of what decides what a job's run does, and a readable
difference between two such definitions (issue 69 part 1).

"Which version of the job ran last night?" A job's *definition document* is its compiled state
machine (the ASL text as the compiler rendered it, Terraform tokens included: ``bindings.asl_of``)
and the fields of its catalog entry that decide what runs and when (steps with their targets,
resources, retries, env and secret names; schedule, timezone, policy, timeout, params, after,
deadline, notify). Its *digest* is the SHA-256 of the canonical JSON of those fields (sorted
keys, no spaces, UTF-8), a newline, and the ASL text. The compiler writes the digest into the catalog entry (``CatalogJob.definition``) and into
the input every starter sends (``ExecutionInput.definition``: the compiled schedules' and
``after`` rules' inputs, the CLI's, the portal's, a backfill's), so each run's record carries it
from its start; the document itself is kept by digest, never overwritten
(platform/definitions.py).

The digest is defined over the document, which holds neither the digest nor the inputs that
carry it (a schedule's target input is Terraform beside the state machine, not in it), so it
never has to contain itself. Descriptive fields (description, runbook, source file) are left
out: editing a runbook does not make a new version of what runs. Fields are dumped without
their defaults, so a catalog field added later with a default does not change every digest.

The runner image is in it when the compile knows it (``image``: the entry's ``runner_image``,
from JOBPLANE_RUNNER_IMAGE at compile time; `jobplane dev` gives its runner's identity, its
version and a hash of the runner's code): what a step does is its target's code as much as the
JSON that names it, so, as a Kubernetes pod template's image makes a new revision, a new image
is a new definition, and the run page's difference says "image: A -> B". The reference should
be immutable (``repo@sha256:...``, or a tag the pipeline never moves: docs/deploy.md): a moved
tag changes what runs without changing the digest. A compile not told any (the key is then
absent, so a deployment that does not set it keeps its digests) leaves the image to the store's
record of what each deploy published (platform/definitions.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobplane.contract.types import JsonObject, JsonValue

if TYPE_CHECKING:
    from jobplane.contract.catalog import CatalogJob

#: The version of the document's shape (a later shape gets a new number, never the same digests).
FORMAT = 1
#: How many hex digits a person is shown (``definition a1b2c3d4e5f6``).
SHORT = 12
#: Catalog fields that describe a job without changing what its runs do, or are derived from the
#: compile (where its file is, how many states), or are the digest itself.
DESCRIPTIVE = frozenset({"description", "runbook", "source", "asl", "states", "params_budget", "state_machine",
                         "definition", "calendar", "runner_image"})  # the image: the document's own "image"


def job_fields(entry: CatalogJob) -> JsonObject:
    """The entry's fields that decide what runs (its calendar's crons are in ``schedule``)."""
    dumped: JsonObject = entry.model_dump(mode="json", exclude_defaults=True, exclude=set(DESCRIPTIVE))
    return dumped


def document(entry: CatalogJob, asl: str) -> JsonObject:
    """The definition document of a job: its run-relevant catalog fields and its ASL, as the
    text the compiler rendered (one rendering per definition: the same compile gives the same
    bytes, so the text is hashed as it is, not parsed and dumped again, ~4 of ~6 ms a job)."""
    doc: JsonObject = {"format": FORMAT, "job": job_fields(entry), "asl": asl}
    if entry.runner_image:
        doc["image"] = entry.runner_image
    return doc


def canonical(doc: JsonValue) -> bytes:
    return canonical_text(doc).encode()


def canonical_text(doc: JsonValue) -> str:
    """The canonical JSON (sorted keys, no spaces, not ASCII-escaped), as text."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(doc: JsonObject) -> str:
    """The SHA-256 (64 hex digits) of the document: the canonical JSON of its format and job
    fields, a newline, then its ASL text (UTF-8)."""
    asl = doc.get("asl")
    body = asl.encode() if isinstance(asl, str) else canonical(asl)  # a document is written with its text
    return hashlib.sha256(canonical({k: v for k, v in doc.items() if k != "asl"}) + b"\n" + body).hexdigest()


def short(value: str | None) -> str:
    """What a person is shown of a digest ("unknown" for a run started before digests)."""
    return value[:SHORT] if value else "unknown"


def is_digest(value: str) -> bool:
    """A full digest as the compiler writes it (so a stored key is never built from other text)."""
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


# -- the difference between two definitions -----------------------------------------------------

@dataclass(frozen=True)
class Change:
    """One difference: what changed (``step load: timeout``, ``schedule``), before and after
    (None: absent on that side)."""

    what: str
    before: str | None
    after: str | None

    def line(self) -> str:
        if self.before is None:
            return f"{self.what}: added {self.after}"
        if self.after is None:
            return f"{self.what}: removed (was {self.before})"
        return f"{self.what}: {self.before} -> {self.after}"


#: The job-level fields shown, in this order (steps are compared one by one after them).
JOB_FIELDS = ("schedule", "rules", "timezone", "enabled", "policy", "timeout", "params", "after", "deadline",
              "missed_after", "on_closed_day", "expected_duration", "notify")
#: A step's fields shown, in this order ("secrets" are names: the catalog never holds a value).
STEP_FIELDS = ("kind", "target", "timeout", "retry", "cpu", "memory", "env", "secrets", "pool")
_SHOWN = 160


def _text(value: JsonValue) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


def _steps(job: JsonObject) -> dict[str, JsonObject]:
    """name -> step, a group's members named ``group/member``."""
    out: dict[str, JsonObject] = {}
    raw = job.get("steps")
    for step in raw if isinstance(raw, list) else []:
        if not isinstance(step, dict):
            continue
        name = str(step.get("name"))
        out[name] = step
        members = step.get("parallel")
        for m in members if isinstance(members, list) else []:
            if isinstance(m, dict):
                out[f"{name}/{m.get('name')}"] = m
    return out


def _compare(what: str, before: JsonValue, after: JsonValue, changes: list[Change]) -> None:
    if before != after:
        changes.append(Change(what, None if before is None else _text(before), None if after is None else _text(after)))


def diff(before: JsonObject, after: JsonObject) -> list[Change]:
    """What differs from definition document ``before`` to ``after``: the job's fields, the runner
    image, each step added, removed or changed (field by field), the step order; and, when nothing of that differs
    but the state machine does (a jobplane upgrade compiles it differently), that."""
    changes: list[Change] = []
    old_job, new_job = before.get("job"), after.get("job")
    old = old_job if isinstance(old_job, dict) else {}
    new = new_job if isinstance(new_job, dict) else {}
    for field in JOB_FIELDS:
        _compare(field, old.get(field), new.get(field), changes)
    _compare("image", before.get("image"), after.get("image"), changes)  # the runner image its steps run in
    old_steps, new_steps = _steps(old), _steps(new)
    for name in [*old_steps, *(n for n in new_steps if n not in old_steps)]:
        a, b = old_steps.get(name), new_steps.get(name)
        if a is None or b is None:
            present = b if a is None else a
            assert present is not None
            summary = _text(present.get("target") or {"kind": present.get("kind")})  # a target names its kind
            changes.append(Change(f"step {name}", None if a is None else summary, None if b is None else summary))
            continue
        for field in STEP_FIELDS:
            _compare(f"step {name}: {field}", a.get(field), b.get(field), changes)
    kept_old = [n for n in old_steps if n in new_steps]
    kept_new = [n for n in new_steps if n in old_steps]
    if kept_old != kept_new:
        changes.append(Change("step order", ", ".join(kept_old), ", ".join(kept_new)))
    if not changes and before.get("asl") != after.get("asl"):
        changes.append(Change("state machine", "compiled before", "compiled differently (another jobplane version)"))
    if not changes and before.get("format") != after.get("format"):
        changes.append(Change("definition format", str(before.get("format")), str(after.get("format"))))
    return changes


def steps_differ(before: JsonObject, after: JsonObject) -> bool:
    """True if a run of ``after`` would run other steps, or the same steps otherwise, than one of
    ``before`` (what a re-run must not do silently)."""
    return any(c.what.startswith("step") or c.what == "state machine" for c in diff(before, after))
