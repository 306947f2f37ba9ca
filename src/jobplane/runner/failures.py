"""What a step's own code raises to fail at once, without a retry.

Any exception from a step's code is a retryable failure (exit 75): the step's ``retry`` runs it
again after its back-off. Some failures no retry can fix: a run started without the params it
needs, an input file an operator must provide first, a period already closed. Retrying those
only spends the retries (hours, with a long back-off) before the same alert. Django steps have
``CommandError`` for it; Python functions and Celery tasks raise :class:`PermanentFailure`
(the same idea as Dagster's ``Failure(allow_retries=False)`` and Airflow's
``AirflowFailException``). Its module imports nothing, so importing it costs a step nothing.
"""

from __future__ import annotations


class PermanentFailure(Exception):
    """The step failed and retrying cannot help: exit 78, never retried (docs/runner.md). The
    message is the error line of the alert and the portal; say what to do, e.g. "needs params
    from and to (YYYY-MM-DD): re-run it with -p from=... -p to=..."."""
