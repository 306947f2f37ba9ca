"""Steps of the storm proof (tests/storm_kit.py): a map item or a step that holds a pooled
resource, writing what it really held to a log from its own process, as
sample_apps.functions:hold does for whole steps."""

from __future__ import annotations

import os
import time


def hold_tenant(item: str, log: str, seconds: float = 0.2) -> None:
    with open(log, "a") as f:
        f.write(f"start {os.getpid()} {time.time()!r}\n")
    time.sleep(seconds)
    with open(log, "a") as f:
        f.write(f"end {os.getpid()} {time.time()!r}\n")
