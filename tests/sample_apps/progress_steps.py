"""Step targets that report their progress and counts (jobplane.progress, jobplane.metric:
docs/progress.md): three values in a row, then values the runner refuses."""

from __future__ import annotations

import jobplane


def close_tenants(tenants: int = 3) -> None:
    for i in range(1, tenants + 1):
        jobplane.progress(i, total=tenants, unit="tenants", cursor=f"t-{i:04d}")
    jobplane.metric("invoices_sent", 7 * tenants)
    # refused, each with a line in the step's log; the step goes on and succeeds
    jobplane.progress(float("nan"), total=tenants)
    jobplane.metric("rows", float("inf"))
    jobplane.metric("not an identifier", 1)
    jobplane.progress(1, total=tenants)  # back from 3: progress only moves forward
    print("done closing")


def read_until(release: str) -> None:
    """Reports 2 of 5 rows, then waits for the file ``release`` (the test's signal) to finish."""
    import os
    import time

    jobplane.progress(2, total=5, unit="rows", cursor="r-2")
    jobplane.metric("rows_read", 2)
    while not os.path.exists(release):
        time.sleep(0.05)
    jobplane.progress(5, total=5, unit="rows", cursor="r-5")


def resumable(out: str, context) -> None:  # noqa: ANN001 - RunContext
    """Fails its first attempt at tenant 2 of 5; a retry resumes where it said it was."""
    import json

    resumed = jobplane.resume_from()
    with open(out, "a") as f:
        f.write(json.dumps({"attempt": context.attempt, "resumed": resumed}) + "\n")
    if context.attempt == 1:
        jobplane.progress(2, total=5, unit="tenants", cursor="t-0002")
        raise RuntimeError("tenant t-0003 is locked")
    jobplane.progress(5, total=5, unit="tenants", cursor="t-0005")


def fails_unless_resumed(out: str) -> None:
    """Fails at tenant 3 of 5 unless it resumes from a checkpoint (a re-run from this step)."""
    import json

    resumed = jobplane.resume_from()
    with open(out, "a") as f:
        f.write(json.dumps({"resumed": resumed}) + "\n")
    if resumed is None:
        jobplane.progress(2, total=5, unit="tenants", cursor="t-0002")
        raise RuntimeError("tenant t-0003 is locked")
    jobplane.progress(5, total=5, unit="tenants", cursor="t-0005")
