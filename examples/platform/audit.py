"""Moves old audit partitions to cold storage."""

from __future__ import annotations

import logging
import shutil
from datetime import date, timedelta

from examples import workspace

log = logging.getLogger(__name__)


def rotate(older_than_days: int = 90) -> int:
    hot, cold = workspace.area("audit", "hot"), workspace.area("audit", "cold")
    cutoff = workspace.run_date() - timedelta(days=older_than_days)
    moved = 0
    for partition in sorted(hot.iterdir()):
        try:
            day = date.fromisoformat(partition.name)
        except ValueError:
            continue
        if day < cutoff:
            shutil.move(str(partition), cold / partition.name)
            moved += 1
    log.info("moved %d audit partitions older than %s to cold storage", moved, cutoff)
    return moved
