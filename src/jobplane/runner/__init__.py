"""The thin runner that executes a step's target inside the application's container.

Its command line and environment contract lives in :mod:`jobplane.contract.runner`, so
the compiler (which writes the ECS overrides) and the runner (which reads them) cannot drift.
A step's code raises :class:`PermanentFailure` (``from jobplane.runner import PermanentFailure``)
for a failure no retry can fix (runner/failures.py).
"""

from jobplane.runner.failures import PermanentFailure

__all__ = ["PermanentFailure"]
