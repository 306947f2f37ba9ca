"""The moto patch ``map_tolerated_failures``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_map_tolerated_failures`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def fix_map_tolerated_failures() -> None:
    """A Distributed Map "fails if the number or percentage of failed items exceeds the
    threshold" with ``States.ExceedToleratedFailureThreshold`` (ToleratedFailureCount,
    ToleratedFailurePercentage; a failed or timed-out child counts; both absent means none is
    tolerated): https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html,
    "Setting failure thresholds for Distributed Map states". moto 5.2.5 parses both fields and
    ignores them ("currently have no effect"): its Map run succeeds whatever its children did.

    Checked when every item has ended (AWS stops starting children once the threshold is
    crossed; locally the remaining items still run, so a failed run's records hold every item:
    docs/local-engine.md)."""
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent, FailureEventException)
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
        distributed_iteration_component as dic)
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    original = dic.DistributedIterationComponent._map_run

    def _map_run(self, env, eval_input):
        original(self, env, eval_input)
        counter = eval_input.map_run_record.item_counter
        total, failed = counter.total.get(), counter.failed.get() + counter.timed_out.get()
        # moto reads an absent field as 0: a threshold of 0 is "not given" beside the other one
        count = eval_input.tolerated_failure_count or 0
        percentage = eval_input.tolerated_failure_percentage or 0
        if not count and not percentage:
            exceeded = failed > 0
        else:  # either threshold given and crossed
            exceeded = bool(count and failed > count) or bool(percentage and failed * 100 > percentage * total)
        if total and exceeded:
            name = StatesErrorNameType.StatesExceedToleratedFailureThreshold
            raise FailureEventException(failure_event=FailureEvent(
                env=env, error_name=StatesErrorName(typ=name), event_type=HistoryEventType.ExecutionFailed,
                event_details=EventDetails(executionFailedEventDetails=ExecutionFailedEventDetails(
                    error=name.to_name(),
                    cause=f"The specified tolerated failure threshold was exceeded: {failed} of {total} items failed"))))

    dic.DistributedIterationComponent._map_run = _map_run
