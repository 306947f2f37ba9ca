"""The moto patch ``stop_is_final``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_stop_is_final`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def fix_stop_is_final() -> None:
    """A StopExecution that lands while the worker is inside a state closes the execution's
    frames under that state, which then raises ("IndexError(pop from empty list)", "'dict' object
    has no attribute 'region'", a half-bound DynamoDB request: seen stopping a run within
    milliseconds of its start), and moto 5.2.5 lets that error replace the stop: the execution
    ends FAILED with the garbage as its cause, and the reconciler alerts on a run an operator
    stopped. On AWS a stopped execution is ABORTED with the stop's error and cause. A stop stays
    final here: an error or timeout reported after it is ignored."""
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped

    def keeping_a_stop(original):
        def method(self, *args, **kwargs):
            with self._state_mutex:  # an RLock: the original takes it again
                if isinstance(self._program_state, ProgramStopped):
                    return None
                return original(self, *args, **kwargs)
        return method

    Environment.set_error = keeping_a_stop(Environment.set_error)
    Environment.set_timed_out = keeping_a_stop(Environment.set_timed_out)
