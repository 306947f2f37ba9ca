"""The moto patches ``parse_once`` and ``validate_on_first_run``, registered in
:data:`jobplane.platform.local.moto_patches.PATCHES`: one module because both decide how an execution
gets its parsed program (one ``_get_evaluation_entrypoint`` for whichever of the two is on, in
whatever order they were applied; they share the program cache and its flags).

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import json
import threading

from jobplane.contract.asl_shape import shape_problem


# How an execution gets its parsed program: parse_once caches it, validate_on_first_run turns a
# definition that does not parse into a run that fails. One function whichever of the two is on,
# in whatever order they were applied.
_PROGRAMS: dict[str, object] = {}  # definition -> parsed program (insertion order: oldest first)
_PROGRAMS_LOCK = threading.Lock()
#: A parsed program is large (month-end-close's: ~16 MB of Python objects, tracemalloc), so only
#: the most recently run definitions stay parsed; the rest re-parse on their next run.
_PROGRAMS_MAX = 256
_cache_programs = False
_fail_unparsable = False
#: The Error of an execution whose definition did not parse (validate_on_first_run).
INVALID_DEFINITION = "Jobplane.InvalidDefinition"


def _parse(definition: str) -> object:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    try:
        return AmazonStateLanguageParser.parse(definition)[0]
    except Exception as e:
        if not _fail_unparsable:
            raise
        cause = f"the definition does not parse: {type(e).__name__}: {e}"[:2000]
        failing = {"StartAt": "Invalid definition",
                   "States": {"Invalid definition": {"Type": "Fail", "Error": INVALID_DEFINITION, "Cause": cause}}}
        return AmazonStateLanguageParser.parse(json.dumps(failing))[0]


def _program_for(definition: str) -> object:
    if not _cache_programs:
        return _parse(definition)
    with _PROGRAMS_LOCK:  # parse each definition once, even when many executions start together
        program = _PROGRAMS.pop(definition, None)
        if program is None:
            program = _parse(definition)
        _PROGRAMS[definition] = program  # now the newest
        while len(_PROGRAMS) > _PROGRAMS_MAX:
            del _PROGRAMS[next(iter(_PROGRAMS))]
        return program


def _install_program_source() -> None:
    from moto.stepfunctions.parser.backend import execution_worker

    def _get_evaluation_entrypoint(self):
        return _program_for(self._evaluation_details.state_machine_details.definition)

    execution_worker.ExecutionWorker._get_evaluation_entrypoint = _get_evaluation_entrypoint


def fix_parse_once() -> None:
    """moto re-parses the ASL (a Python ANTLR parser) for every execution: with our definitions
    that was ~60% of the engine's time under load (py-spy, 50 concurrent starts). The parsed
    program keeps per-execution values in the execution's environment (components only hold a
    heap key), so one parse per definition can serve every execution."""
    global _cache_programs
    _cache_programs = True
    _install_program_source()


def fix_validate_on_first_run() -> None:
    """moto parses a definition with its ANTLR parser on CreateStateMachine and
    UpdateStateMachine (0.4-1.4 s for each of the example jobs), so `jobplane dev` with 1,000
    jobs needed ~16 minutes to be ready (issue 13). The definitions it deploys are the
    compiler's output, whose every shape the tests run on this parser and tfcheck lints, so the
    create checks what a mistake would break at once (a JSON object whose StartAt names one of
    its States, each with a known Type) and the full parse happens when the state machine first
    runs (cached by parse_once). A definition that does not parse then fails that execution
    with ``Jobplane.InvalidDefinition`` and the parser's message, instead of leaving it RUNNING
    with no interpreter (what moto's worker thread does when the parse raises)."""
    global _fail_unparsable
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    StepFunctionsParserBackend._validate_definition = staticmethod(validate_shape)
    _fail_unparsable = True
    _install_program_source()


def validate_shape(definition: str) -> None:
    """The create's check under ``validate_on_first_run``: contract/asl_shape.py's, the one the
    compile also runs on the ASL it renders (so the deploy can tell a definition that passed it:
    :func:`checks_shape_only`)."""
    from moto.stepfunctions.parser.api import InvalidDefinition

    problem = shape_problem(definition)
    if problem:
        raise InvalidDefinition(message=f"Invalid State Machine Definition: {problem}")


def checks_shape_only(backend) -> bool:
    """Whether ``backend``'s definition check at create is :func:`validate_shape` (the fix is on),
    not moto's own parse."""
    return getattr(backend, "_validate_definition", None) is validate_shape
