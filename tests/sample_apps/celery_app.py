"""A real Celery app; its broker is never contacted: the runner executes tasks inline."""

from __future__ import annotations

from pathlib import Path

from celery import Celery

app = Celery("sample_apps", broker="memory://", backend="cache+memory://")


@app.task(name="billing.tasks.close_month")
def close_month(out: str, period: str = "current") -> str:
    Path(out).write_text(f"closed {period}")
    return period


@app.task(name="billing.tasks.flaky", bind=True)
def flaky(self, attempts_file: str) -> None:  # noqa: ANN001 - celery's bound task
    raise TimeoutError("ledger API timed out")
