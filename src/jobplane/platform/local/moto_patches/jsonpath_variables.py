"""The moto patch ``jsonpath_variables``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_jsonpath_variables`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def fix_jsonpath_variables() -> None:
    """A JSONPath state that reads a workflow variable (``"x.$": "$name"``, or ``$name`` as an
    intrinsic function's argument) fails in moto 5.2.5 with ``TypeError('NoneType' object is not
    callable)``: it samples every variable through its JSONata evaluator, which needs a library it
    does not ship. AWS reads variables in JSONPath states ("To reference a variable, prefix the
    name with a dollar sign", docs.aws.amazon.com/step-functions/latest/dg/workflow-variables.html);
    our state machines record a step's timeout through one state per job that reads the step from a
    variable. Read the variable from the store, then the rest of the path from its value."""
    import copy
    import re

    from moto.stepfunctions.parser.asl.component.common.query_language import QueryLanguageMode
    from moto.stepfunctions.parser.asl.component.common.string.string_expression import StringVariableSample
    from moto.stepfunctions.parser.asl.utils.json_path import extract_json

    original = StringVariableSample._eval_body
    reference = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)(.*)$", re.S)

    def _eval_body(self, env):
        match = reference.match(self.expression) if self.query_language_mode == QueryLanguageMode.JSONPath else None
        if match is None:
            return original(self, env)
        name, rest = match.groups()
        value = env.variable_store.get(name)
        if rest:
            value = extract_json("$" + rest, value)
        env.stack.append(copy.deepcopy(value))

    StringVariableSample._eval_body = _eval_body
