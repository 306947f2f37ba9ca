"""The example application's Celery app. jobplane runs its tasks inline in the step's
container (the runner calls ``task.apply``), so the broker below is never contacted."""

from __future__ import annotations

import random
from datetime import timedelta

from celery import Celery

from examples import workspace

app = Celery("examples", broker="memory://", backend="cache+memory://")


@app.task(name="billing.tasks.freeze_invoices")
def freeze_invoices(period: str = "current") -> int:
    if period == "current":
        period = workspace.run_date().strftime("%Y-%m")
    close = workspace.area("billing", "close", period)
    rng = random.Random(period)
    invoices = [{"id": f"INV-{period}-{i:04d}", "amount_yen": rng.randint(1000, 90000)} for i in range(120)]
    workspace.write_json(close / "invoices.json", invoices)
    return len(invoices)


@app.task(name="growth.tasks.build_cohorts")
def build_cohorts(which: str = "last_week") -> str:
    monday = workspace.run_date() - timedelta(days=workspace.run_date().weekday() + (7 if which == "last_week" else 0))
    rng = random.Random(monday.isoformat())
    days = []
    for i in range(7):
        signups = rng.randint(80, 200)
        days.append({"day": (monday + timedelta(days=i)).isoformat(), "signups": signups,
                     "retained_7d": int(signups * rng.uniform(0.25, 0.45))})
    workspace.write_json(workspace.area("growth") / "cohorts.json", {"week": monday.isoformat(), "days": days})
    return monday.isoformat()
