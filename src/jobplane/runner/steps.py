"""What runs a step of each runner kind, one function each with the same signature: the
functions contract/runner.py ``DISPATCH`` names, which runner/dispatch.py imports for the
step's kind alone."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:

    from jobplane.runner.context import RunContext
    from jobplane.runner.logs import RunLog

from jobplane.runner import targets
from jobplane.runner.errors import PermanentError


def python(ctx: RunContext, log: RunLog) -> None:
    value = targets.run_python(ctx)
    if ctx.items_uri:  # a map's items step (contract/map_items.py)
        from jobplane.runner import items_out, logs

        try:
            # the forms the log redacts: an item holding one is refused
            count = items_out.write(ctx.items_uri, value, secrets=logs.secret_values(os.environ))
        except items_out.ItemsError as e:
            raise PermanentError(str(e)) from None
        log.info("items written", extra={"items": count})


def celery(ctx: RunContext, log: RunLog) -> None:
    targets.run_celery(ctx)


def django(ctx: RunContext, log: RunLog) -> None:
    targets.run_django(ctx)


def shell(ctx: RunContext, log: RunLog) -> None:
    targets.run_shell(ctx, log)
