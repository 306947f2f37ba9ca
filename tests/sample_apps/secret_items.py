"""An items step whose list holds the value of one of the step's secrets (issue 64 item 4)."""

from __future__ import annotations

import os
from collections.abc import Iterator


def tenants_with(env_name: str, at: int = 1, shape: str = "plain") -> Iterator[object]:
    """Three items, item ``at`` carrying the variable's value: as itself, inside an object, or
    (``shape`` = "leaf") as the ``password`` field of a JSON secret."""
    value = os.environ[env_name]
    if shape == "leaf":
        import json

        value = json.loads(value)["password"]
    for i in range(3):
        yield ({"tenant": f"t-{i}", "dsn": value} if shape != "plain" else value) if i == at else f"t-{i}"
