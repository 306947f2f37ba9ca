"""The moto patch ``map_s3_errors``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_map_s3_errors`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def fix_map_s3_errors() -> None:
    """A Distributed Map whose ItemReader cannot read its source fails with
    ``States.ItemReaderFailed``, and one whose ResultWriter cannot write its results with
    ``States.ResultWriterFailed``: both are error names of the Map state, which its Retry and
    Catch match like any other (Step Functions developer guide, "Error names",
    https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html).

    moto 5.2.5 lets the S3 client's exception (a ClientError: ``SlowDown``, ``NoSuchKey``,
    ``AccessDenied``) escape both: the Map fails with ``States.Runtime``, which AWS lets no Retry
    or Catch take, so a compiled Retry of the read (compiler/map_states.py) was never matched."""
    from moto.stepfunctions.parser.api import HistoryEventType, MapRunFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent, FailureEventException)
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader import item_reader_decl
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer import result_writer_decl
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    def named(cls, typ):
        original = cls._eval_body

        def _eval_body(self, env) -> None:
            try:
                original(self, env)
            except FailureEventException:
                raise
            except Exception as e:  # the S3 call's error, as the service reports it
                error_name = StatesErrorName(typ=typ)
                raise FailureEventException(failure_event=FailureEvent(
                    env=env, error_name=error_name, event_type=HistoryEventType.TaskFailed,
                    event_details=EventDetails(mapRunFailedEventDetails=MapRunFailedEventDetails(
                        error=error_name.error_name, cause=str(e)[:1000])))) from e

        cls._eval_body = _eval_body

    named(item_reader_decl.ItemReader, StatesErrorNameType.StatesItemReaderFailed)
    named(result_writer_decl.ResultWriter, StatesErrorNameType.StatesResultWriterFailed)
