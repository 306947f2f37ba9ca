"""The moto patch ``map_jsonl_reader``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_map_jsonl_reader`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import json


class _InputTypeJsonl:
    """``InputType: JSONL``, beside moto's own enum values (an enum cannot take another member)."""

    value = "JSONL"

    def __str__(self) -> str:
        return self.value


JSONL = _InputTypeJsonl()


def fix_map_jsonl_reader() -> None:
    """A Distributed Map's ``ItemReader`` reads a JSON Lines object from S3, each line one item:
    ``ReaderConfig.InputType`` "Accepts one of the following values: CSV, JSON, JSONL, PARQUET,
    MANIFEST" (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itemreader.html).
    moto 5.2.5 knows CSV and JSON only: ``InputType("JSONL")`` raises ValueError while the
    definition is parsed, so the run fails (``Jobplane.InvalidDefinition`` through
    ``validate_on_first_run``) before its Map reads anything.

    Each non-blank line is parsed as one item; a line that is not JSON fails the Map with
    ``States.ItemReaderFailed``, as a JSON file that is not a list does in moto's JSON reader;
    ``MaxItems`` bounds the items read, as there."""
    from moto.stepfunctions.parser.api import HistoryEventType, MapRunFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent, FailureEventException)
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader import item_reader_decl
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval.resource_output_transformer.transformer import (
        ResourceOutputTransformer)
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.reader_config import input_type
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    class ResourceOutputTransformerJsonl(ResourceOutputTransformer):
        def _eval_body(self, env) -> None:
            reader_config = env.stack.pop()
            resource_value: str = env.stack.pop()
            max_items = reader_config["MaxItemsValue"]
            items = []
            for number, line in enumerate(resource_value.splitlines(), 1):
                if len(items) >= max_items:
                    break
                if not line.strip():
                    continue
                try:
                    items.append(json.loads(line))
                except ValueError as e:
                    error_name = StatesErrorName(typ=StatesErrorNameType.StatesItemReaderFailed)
                    raise FailureEventException(failure_event=FailureEvent(
                        env=env, error_name=error_name, event_type=HistoryEventType.TaskFailed,
                        event_details=EventDetails(mapRunFailedEventDetails=MapRunFailedEventDetails(
                            error=error_name.error_name, cause=f"line {number} is not JSON: {e}"))))
            env.stack.append(items)

    original_init = input_type.InputType.__init__

    def __init__(self, input_type: str) -> None:
        if input_type == JSONL.value:
            self.input_type_value = JSONL
        else:
            original_init(self, input_type)

    input_type.InputType.__init__ = __init__

    original_for = item_reader_decl.resource_output_transformer_for

    def resource_output_transformer_for(input_type):
        if input_type.input_type_value is JSONL:
            return ResourceOutputTransformerJsonl()
        return original_for(input_type)

    item_reader_decl.resource_output_transformer_for = resource_output_transformer_for
