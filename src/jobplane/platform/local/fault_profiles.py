"""The fault profiles' rules: which calls of the local AWS fail, and how often, under each
profile (jobplane.platform.local.faults.PROFILES)."""

from __future__ import annotations

from typing import Any, Callable

from jobplane.contract.types import JsonObject


class Rules:
    """The ``none`` profile: no call fails unless a test scripts it."""

    def decide(self, service: str, operation: str, params: Callable[[], JsonObject]) -> str | None:
        return None


def rules_for(profile: str, *, seed: int | None = None, **overrides: Any) -> Rules:
    if profile != "none":
        raise NotImplementedError(f"fault profile {profile!r} is not implemented yet")
    return Rules()
