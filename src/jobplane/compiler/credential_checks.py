"""``jobplane validate``'s warning about a literal that looks like a credential in a step (issue 65
item 1): a password in a URL, a token with a known prefix, ``--password=...``, an
``Authorization`` header, a credential-named variable given a value, in a step's argv (a shell
step's, or a celery/django step's arguments) or its ``env``.

The same rule as ``jobplane import`` (contract/credentials.py), so a file written by hand gets the
protection an imported one has. A warning, not a problem: a literal can be a test fixture's fake
value, and the rule guesses; what it names (file, job, field, what was found: never the value)
is enough to move the value to ``secrets: { NAME: jp.secret(...) }``.
"""

from __future__ import annotations

from typing import Iterator

from jobplane.compiler.kinds import GroupKind
from jobplane.compiler.model import Job, Step
from jobplane.contract import credentials
from jobplane.contract.secret_names import is_secret_name


def credential_warnings(jobs: list[tuple[str, Job]]) -> list[str]:
    """One ``WARNING:`` line per credential-looking literal, for each (source file, job)."""
    lines = []
    for source, job in jobs:
        for field, what in _findings(job):
            lines.append(f"WARNING: {source}: job {job.name}: {field}: {what} is written in the file: "
                         "a credential belongs in secrets: { NAME: jp.secret('<team>/<name>') } (docs/dsl.md)")
    return lines


def _findings(job: Job) -> Iterator[tuple[str, str]]:
    for i, step in enumerate(job.steps):
        yield from _step(step, f"steps[{i}] ({step.name})")


def _step(step: Step, at: str) -> Iterator[tuple[str, str]]:
    for name, value in step.env.items():  # (a credential-named one is refused already: model.py _env)
        for f in credentials.in_shell(value):
            yield f"{at}.env.{name}", str(f)
    target = step.target
    if isinstance(step.kind_, GroupKind):
        for j, member in enumerate(step.kind_.members(step)):
            yield from _step(member, f"{at}.{step.kind_.member_path(j)} ({member.name})")
        return
    kind = step.kind_.name if step.kind_ is not None else "step"
    if isinstance(target, list) and all(isinstance(w, str) for w in target):  # a shell step's argv
        words = [str(w) for w in target]
        found = credentials.in_words(words)
        found += [f for w in words if any(c.isspace() for c in w) for f in credentials.in_shell(w)]  # `sh -c TEXT`
        seen: set[str] = set()
        for f in found:
            if f.value not in seen:
                seen.add(f.value)
                j = next((j for j, w in enumerate(words) if f.value in w), 0)
                yield f"{at}.{kind}[{j}]", str(f)
    for j, arg in enumerate(step.args):
        if isinstance(arg, str):
            for f in credentials.in_words([arg]):
                yield f"{at}.args[{j}]", str(f)
    for key, value in step.kwargs.items():
        if isinstance(value, str) and value and not credentials.is_reference(value):
            found = credentials.in_words([value]) or (
                [credentials.Finding(f"the argument {key}", value)] if is_secret_name(key) else [])
            for f in found:
                yield f"{at}.kwargs.{key}", str(f)
