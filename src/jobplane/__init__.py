"""jobplane: scheduled workflows for Python teams on AWS.

Subpackages follow the design: ``compiler`` turns Jsonnet definitions into Step Functions ASL,
Terraform JSON and a catalog; ``platform`` holds the runtime contract every other part shares;
``runner`` and ``portal`` are the container entrypoint and the web console.
"""

__version__ = "0.1.0"


def progress(done: float, total: float | None = None, unit: str | None = None, cursor: str | None = None) -> None:
    """Report the step's progress (``done`` of ``total`` ``unit``, ``cursor``: where it is) to the
    jobplane run it is part of; outside a run, nothing happens (docs/progress.md). A value that is
    not a finite number, or ``done`` going back, is refused in the step's log, never raised."""
    from jobplane.contract import progress as _progress

    _progress.progress(done, total, unit, cursor)


def metric(name: str, value: float) -> None:
    """Report a count of the step (``name``: a short identifier; the last value of a name is
    kept) to the jobplane run it is part of; outside a run, nothing happens (docs/progress.md)."""
    from jobplane.contract import progress as _progress

    _progress.metric(name, value)


def resume_from() -> str | None:
    """Where an earlier attempt of this step, in this run, last said it was (its last
    ``cursor``): a retry resumes there. None on the first attempt, when none was reported, and
    outside a run. Call it before the attempt reports progress of its own (docs/progress.md)."""
    from jobplane.contract import progress as _progress

    return _progress.resume_from()
