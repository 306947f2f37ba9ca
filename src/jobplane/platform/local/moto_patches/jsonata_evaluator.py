"""The moto patch ``jsonata_evaluator``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_jsonata_evaluator`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

#: The evaluator the patch plugs in, checked as moto's own pin is: a JSONata implementation
#: decides what the compiled claim's expressions mean locally (docs/local-engine.md).
JSONATA_PYTHON_VERSION = "0.7.1"


def fix_jsonata_evaluator() -> None:
    """A JSONata state (``"QueryLanguage": "JSONata"``: its ``Arguments`` and ``Output`` are
    ``{% ... %}`` expressions) runs on AWS, which implements JSONata 2.0.6 ("Transforming data with
    JSONata in Step Functions", https://docs.aws.amazon.com/step-functions/latest/dg/transforming-data.html),
    and a failed evaluation (a JSONata error, ``$error()`` included) fails the state with
    ``States.QueryEvaluationError``, which a Catcher can name
    (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html). moto 5.2.5
    parses JSONata states and composes each expression (``$states`` and the variables as
    literal bindings), but its evaluator is ``None`` (LocalStack's is a JVM): every JSONata state
    fails with ``TypeError('NoneType' object is not callable)`` as ``States.Runtime``, which no
    Catcher can catch. The compiled claim is a JSONata state (compiler/asl.py, issue 66).

    The evaluator is jsonata-python (pure Python, a port of jsonata-java, the library LocalStack
    runs in its JVM), pinned; its errors become ``States.QueryEvaluationError`` with an
    ``EvaluationFailed`` event, as on AWS, in a service Task too (moto's DynamoDB Task renamed
    any failure of its own evaluation ``DynamoDB.AmazonDynamoDBException``)."""
    from importlib.metadata import version

    import jsonata
    from moto.stepfunctions.parser.api import EvaluationFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (FailureEvent,
                                                                                          FailureEventException)
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
    from moto.stepfunctions.parser.asl.component.common.string import string_expression
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata
    from moto.stepfunctions.parser.asl.jsonata import validations

    installed = version("jsonata-python")
    if installed != JSONATA_PYTHON_VERSION:
        raise RuntimeError(f"the local engine's JSONata evaluator is pinned to jsonata-python {JSONATA_PYTHON_VERSION}, "
                           f"{installed} is installed: re-run tests/test_moto_fixes.py before changing the pin")

    def eval_jsonata_expression(expression):
        try:
            return jsonata.Jsonata(expression).evaluate(None)
        except Exception as ex:  # jsonata.JException, and what a broken expression raises in the parser
            raise moto_jsonata.JSONataException("States.QueryEvaluationError", str(ex)) from None

    # moto's modules imported the function by name: each one's reference is replaced
    for module in (moto_jsonata, string_expression, validations):
        module.eval_jsonata_expression = eval_jsonata_expression

    import copy
    import functools
    import threading

    from moto.stepfunctions.parser.asl.component.intrinsic.jsonata import get_intrinsic_functions_declarations

    @functools.lru_cache(maxsize=1024)
    def parsed(expression):
        # moto writes each evaluation's $states and variables into the expression's text, so no
        # parse could be reused (~90 ms for the claim's arguments, ~20 ms to evaluate them):
        # a state's own expression is parsed once, its values bound as variables
        return jsonata.Jsonata(expression), threading.Lock()  # evaluate() keeps a timestamp on the object

    composed = string_expression.StringJSONata._eval_body

    def fast_eval_body(self, env):
        references = moto_jsonata.extract_jsonata_variable_references(self.expression)
        if get_intrinsic_functions_declarations(variable_references=references):
            return composed(self, env)  # Step Functions' own functions ($partition, ...): moto's text
        try:
            expression, lock = parsed(self.expression)
            store = env.variable_store
            bindings = {**copy.deepcopy(store._outer_scope), **copy.deepcopy(store._inner_scope),
                        "states": copy.deepcopy(dict(env.states._states_data))}
            with lock:
                result = expression.evaluate(None, bindings)
        except Exception as ex:
            raise moto_jsonata.JSONataException("States.QueryEvaluationError", str(ex)) from None
        if result is None:  # undefined or null: moto's own checks tell them apart
            return composed(self, env)
        env.stack.append(result)

    string_expression.StringJSONata._eval_body = fast_eval_body

    error = StatesErrorNameType.StatesQueryEvaluationError
    for cls in (string_expression.StringJSONata, string_expression.StringVariableSample):
        original = cls._eval_body

        def _eval_body(self, env, original=original):
            try:
                original(self, env)
            except moto_jsonata.JSONataException as ex:
                cause = f"The JSONata expression '{self.literal_value}' failed: {ex.details}"
                raise FailureEventException(failure_event=FailureEvent(
                    env=env, error_name=StatesErrorName(typ=error), event_type=HistoryEventType.EvaluationFailed,
                    event_details=EventDetails(evaluationFailedEventDetails=EvaluationFailedEventDetails(
                        error=error.to_name(), cause=cause)))) from None

        cls._eval_body = _eval_body

    # A service Task names the errors its call raised (its _from_error); the DynamoDB one names
    # every error that is not a ClientError DynamoDB.AmazonDynamoDBException, its Arguments'
    # failed evaluation too (then retried as a service fault). A failure already decided is
    # itself, as every other state's _from_error has it.
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_factory  # noqa: F401
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import StateTaskService

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    for cls in (StateTaskService, *subclasses(StateTaskService)):
        if "_from_error" in cls.__dict__:
            def _from_error(self, env, ex, original=cls.__dict__["_from_error"]):
                if isinstance(ex, FailureEventException):
                    return ex.failure_event
                return original(self, env, ex)

            cls._from_error = _from_error
