"""What the facade (the package's ``__init__``) and the patches share: the moto version they
are written against with the check each runs first, and what the local AWS answers instead of
moto (a fault, an AWS limit). A module of its own, importing no patch, so a patch module and
moto_patches/limits.py use them without importing the facade, which imports the patches
(tests/test_layers.py: no import cycle, through an ``__init__`` too)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.metadata import version
from typing import Callable, Optional

from jobplane.contract.types import JsonObject

MOTO_VERSION = "5.2.5"


@functools.cache  # reading the installed metadata costs ~3 ms; it cannot change in a process
def check_version() -> None:
    installed = version("moto")
    if installed != MOTO_VERSION:
        raise RuntimeError(
            f"jobplane's local engine patches moto {MOTO_VERSION} internals but moto {installed} is installed; "
            "re-check every patch in jobplane.platform.local.moto_patches (docs/local-engine.md: upgrading moto) "
            "before changing the pin")


@dataclass(frozen=True)
class FaultAnswer:
    """What the local AWS answers instead of moto for one call: an error (``code``, AWS's name
    for it, with its documented HTTP ``status`` and ``message``), or, with ``code`` None, a
    successful answer ``body`` (RunTask's ``failures``)."""

    status: int
    code: str | None
    message: str = ""
    body: JsonObject | None = None


#: ``hook(service, operation, params) -> answer | None``: asked before moto answers any call of
#: the services ``fault_injection`` wraps; ``params()`` parses the request's PascalCase parameters.
FaultHook = Callable[[str, str, Callable[[], JsonObject]], Optional[FaultAnswer]]
