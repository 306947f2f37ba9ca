"""How the compiler pickles what holds step kinds (the validate cache's kept results,
compiler/validate_cache.py; the checks' results from forked workers, compiler/check_pool.py):
each kind by its name, read back as the registry's own object, since kinds are compared by
identity."""

from __future__ import annotations

import io
import pickle
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobplane.compiler.kinds import StepKind


def step_kind(name: str) -> StepKind:
    """A pickled step kind read back: the registry's own object."""
    from jobplane.compiler import kinds

    return kinds.BY_NAME[name]


def _dispatch() -> dict[type, Callable[[Any], tuple[Callable[[str], StepKind], tuple[str]]]]:
    from jobplane.compiler import kinds

    return {type(k): (lambda k: (step_kind, (k.name,))) for k in kinds.REGISTRY}


def dumps(value: object) -> bytes:
    """``value`` pickled, its step kinds by name (only once the registry is imported: a run
    whose results are all kept never imports it, and then no kind exists to be pickled)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    if "jobplane.compiler.kinds" in sys.modules:
        pickler.dispatch_table = _dispatch()
    pickler.dump(value)
    return buffer.getvalue()
