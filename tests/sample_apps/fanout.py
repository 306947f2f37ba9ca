"""Steps of the fan-out tests and bench (jp.map): list tenants, close one tenant's month.

Which tenants fail is the run's params, so a test says it in the run it starts:
``fail_once`` fail their first attempt only, ``fail_always`` every attempt; ``hold`` (with
``hold_dir``) makes that tenant's first attempt write its pid to hold_dir/<tenant>.pid and wait.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def list_tenants(count: int = 5, fanout_bad: str | None = None, stream: bool = False) -> Any:
    if fanout_bad == "not-a-list":
        return {"tenants": count}
    if stream:  # yielded one at a time: the runner writes each as it comes (runner/items_out.py)
        return (f"t-{i:04d}" for i in range(count))
    return [f"t-{i:04d}" for i in range(count)]


def close_month(item: str, context: Any, fail_once: list[str] | None = None,
                fail_always: list[str] | None = None, hold: str | None = None, hold_dir: str | None = None) -> None:
    if item in (fail_always or []):
        raise RuntimeError(f"ledger refused tenant {item}")
    if item in (fail_once or []) and context.attempt == 1:
        raise RuntimeError(f"ledger busy for tenant {item} (first attempt)")
    if item == hold and hold_dir and context.attempt == 1:
        (Path(hold_dir) / f"{item}.pid").write_text(str(os.getpid()))
        time.sleep(120)
