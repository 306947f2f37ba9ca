"""The compiler's passes run with Python's cyclic garbage collector paused.

Profiled (issue 54 item 4, bench/compile.py): a compile builds and keeps millions of small
acyclic objects (each job's ASL as dicts, its rendered text, the models), and every one of them
made the collector's generation counters fire; each full collection then walked everything
still alive, so a compile did quadratic work: at 1,000 jobs the ASL builder spent more than half
its time in the collector, at 5,000 jobs most of the compile. Reference counting frees all of it
as before; what the pause holds back is only cyclic garbage, measured at a few hundred objects
per 1,000 jobs, which the next collection after the pause takes.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def gc_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` with the cyclic collector off while it runs (and as it was after, also when it
    raises; a nested call leaves it off for the outer one)."""
    @functools.wraps(fn)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()
    return paused
