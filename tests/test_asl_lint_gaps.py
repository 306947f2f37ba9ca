"""scripts/asl_lint_gaps.py: tfcheck's ASL lint passes a definition only for the two Distributed
Map fields AWS documents that statelint and stock moto predate; anything else still fails (the
CI run that first linted a jp.map found a real one: the item's Fail state named as the run's)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "asl_lint_gaps.py"
KNOWN = """\
[asl] invoice_run: Field "InputType" not allowed in State Machine.States.invoice-all.ItemReader.ReaderConfig
[asl] invoice_run: Field "WriterConfig" not allowed in State Machine.States.invoice-all.ResultWriter
[asl] invoice_run: moto-parser ASLParserException: ASLParserException ['line 1:23702, at "WriterConfig", mismatched input '"WriterConfig"' expecting {'"Resource"', '"Parameters"'}'
asl_errors=1 tf_valid=True tf_errors=0 checkov_failed=0 checkov_parse_errors=0
"""


def _judge():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("asl_lint_gaps", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.judge


def test_the_documented_map_fields_pass_and_nothing_else_does() -> None:
    judge = _judge()
    assert judge(KNOWN) == []
    duplicate = ("[asl] invoice_run: State \"Fail\", defined at State Machine.States.invoice-all.ItemProcessor.States, "
                 "is also defined at State Machine.States")
    assert judge(duplicate + "\n" + KNOWN) == [duplicate]
    other_parse = "[asl] x: moto-parser ASLParserException: ['line 1:5, at \"Resorce\", mismatched input"
    assert judge(other_parse + "\n" + KNOWN) == [other_parse]
    invalid = KNOWN.replace("tf_valid=True tf_errors=0", "tf_valid=False tf_errors=1")
    assert judge(invalid) and "terraform validation" in judge(invalid)[0]
