"""Resolve a step's target and run it inline, in this process (a shell step as a child).

A failure to *find or call* the target (missing module, unknown task or command, arguments that
do not fit the signature, bad settings) is :class:`PermanentError`: retrying cannot fix it. An
exception raised by the user's own code is retryable.
"""

from __future__ import annotations

import importlib
import os
from types import FunctionType

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    import signal
    import subprocess
    import threading
    from typing import IO, Any, Callable
    from jobplane.contract.types import JsonObject, JsonValue
    from jobplane.runner.logs import RunLog
else:  # the C module: signal.py's enums are not worth their import (runner/main.py)
    import _signal as signal

from jobplane.contract import progress
from jobplane.runner import stop
from jobplane.runner.context import RunContext


# the runner's outcomes, caught by runner/main.py without importing this module
from jobplane.runner.errors import ExitCode as ExitCode, PermanentError as PermanentError  # noqa: E402


ENV_CELERY_APP = "JOBPLANE_CELERY_APP"  # "package.module:app", like `celery -A`


def import_object(spec: str) -> Any:
    module_name, _, attr_path = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise PermanentError(f"cannot import {module_name!r}: {e}") from e
    for attr in attr_path.split("."):
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            raise PermanentError(f"{module_name!r} has no attribute {attr_path!r}") from None
    return obj


def call_arguments(fn: Callable[..., object], kwargs: JsonObject, ctx: RunContext,
                   args: list[JsonValue] | None = None) -> tuple[list[JsonValue], JsonObject]:
    """The step's kwargs plus the run's params, for the parameters ``fn`` takes.

    Params are job-wide, so a step only receives those its function names (or all of them if it
    takes ``**kwargs``); a ``context`` parameter receives the RunContext. A step's own fixed
    kwargs always win: a run's params (chosen by whoever starts or re-runs it) never change
    what the definition fixed, such as a report's recipient. Arguments that cannot bind are a
    permanent error, raised before any user code runs.
    """
    plain = _plain_parameters(fn) if not args else None
    if plain is not None:
        names, required, accepts_any = plain
        merged = dict(kwargs)
        for name, value in ctx.params.items():
            if name not in kwargs and (accepts_any or name in names):
                merged[name] = value
        if "context" in names:
            merged["context"] = ctx
        if required <= merged.keys() and (accepts_any or merged.keys() <= names):
            return [], merged
    # anything else, or arguments that do not fit: inspect says how (its import is ~10 ms of the
    # runner's start-up, so the common case above reads the function's code object instead)
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return list(args or []), {**ctx.params, **kwargs}
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    merged = dict(kwargs)
    for name, value in ctx.params.items():
        if name not in kwargs and (accepts_any or name in sig.parameters):
            merged[name] = value
    if "context" in sig.parameters:
        merged["context"] = ctx
    try:
        sig.bind(*(args or []), **merged)
    except TypeError as e:
        raise PermanentError(f"arguments do not fit {getattr(fn, '__qualname__', fn)}{sig}: {e}") from None
    return list(args or []), merged


_CO_VARKEYWORDS = 0x08  # inspect.CO_VARKEYWORDS


def _plain_parameters(fn: Callable[..., object]) -> tuple[frozenset[str], frozenset[str], bool] | None:
    """For a plain function whose parameters all take keywords (no positional-only ones, no
    ``*args`` needed): the names it accepts, those without a default, and whether it takes
    ``**kwargs``. None for anything else (a class, a partial, a builtin, a method), which
    :func:`call_arguments` leaves to ``inspect.signature``; so do arguments that do not fit."""
    if type(fn) is not FunctionType or hasattr(fn, "__wrapped__") or hasattr(fn, "__signature__"):
        return None  # inspect reads a decorated function's own signature through these
    code = fn.__code__
    if code.co_posonlyargcount:
        return None
    positional = code.co_varnames[:code.co_argcount]
    keyword_only = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    defaulted = set(positional[len(positional) - len(fn.__defaults__ or ()):]) | set(fn.__kwdefaults__ or ())
    names = frozenset(positional + keyword_only)
    return names, names - defaulted, bool(code.co_flags & _CO_VARKEYWORDS)


def run_python(ctx: RunContext) -> object:
    fn = import_object(ctx.target["target"])
    if not callable(fn):
        raise PermanentError(f"{ctx.target['target']!r} is not callable")
    args, kwargs = call_arguments(fn, ctx.target.get("kwargs", {}), ctx)
    return fn(*args, **kwargs)


def run_celery(ctx: RunContext) -> object:
    app_spec = os.environ.get(ENV_CELERY_APP)
    if not app_spec:
        raise PermanentError(f"{ENV_CELERY_APP} must name the Celery app, e.g. 'myproject.celery:app'")
    app = import_object(app_spec if ":" in app_spec else f"{app_spec}:app")
    app.loader.import_default_modules()
    name = ctx.target["target"]
    try:
        task = app.tasks[name]
    except KeyError:
        known = sorted(t for t in app.tasks if not t.startswith("celery."))
        raise PermanentError(f"Celery task {name!r} is not registered (known: {', '.join(known) or 'none'})") from None
    args, kwargs = call_arguments(task.run, ctx.target.get("kwargs", {}), ctx, ctx.target.get("args", []))
    # Executed eagerly in this process, like Sidekiq's perform_inline: no broker, exceptions propagate.
    result = task.apply(args=args, kwargs=kwargs, throw=True)
    return result.get(disable_sync_subtasks=False) if result is not None else None


def run_django(ctx: RunContext) -> object:
    if not os.environ.get("DJANGO_SETTINGS_MODULE"):
        raise PermanentError("DJANGO_SETTINGS_MODULE must name the settings module")
    try:
        import django
        from django.core.exceptions import ImproperlyConfigured
    except ImportError as e:
        raise PermanentError(f"Django is not installed in this image: {e}") from e
    try:
        django.setup()
    except (ImproperlyConfigured, ImportError) as e:
        raise PermanentError(f"Django settings are invalid: {e}") from e
    from django.core.management import call_command, get_commands
    from django.core.management.base import CommandError

    name = ctx.target["target"]
    if name not in get_commands():
        raise PermanentError(f"unknown Django management command {name!r}")
    try:
        return call_command(name, *[str(a) for a in ctx.target.get("args", [])])
    except CommandError as e:
        # Django's way for a command to say its input is wrong: not fixed by retrying.
        raise PermanentError(f"{name}: {e}") from e


def run_shell(ctx: RunContext, log: RunLog) -> None:
    import subprocess  # only shell steps need it (the runner's start-up: bench/runner_start.py)
    import threading

    from jobplane.runner import logs

    argv = ctx.target["argv"]
    # its report lines (contract/progress.py): read from its stdout, printed by jobplane.progress in it
    env = dict(os.environ, TRACEPARENT=ctx.traceparent, **{progress.ENV_REPORT: progress.REPORT_STDOUT})
    child: subprocess.Popen[str] | None = None
    pumps: list[threading.Thread] = []
    stop.hold()  # a stop request until the child is in hand is raised once it is (runner/stop.py)
    try:  # from here on, a stop request (Terminated) must take the child down with us
        try:
            child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     start_new_session=True, text=True, bufsize=1)
        except (FileNotFoundError, PermissionError) as e:
            raise PermanentError(f"cannot start {argv[0]!r}: {e}") from e
        output = logs.RunLog(logs.OUTPUT_LOGGER)
        pumps = [threading.Thread(target=_pump, args=(pipe, output, level, stream), daemon=True)
                 for pipe, level, stream in ((child.stdout, logs.INFO, "stdout"), (child.stderr, logs.WARNING, "stderr"))]
        for p in pumps:
            p.start()
        stop.release()
        code = child.wait()
    except BaseException:
        stop.drop()
        if child is not None:
            _stop_child(child, log)
        raise
    finally:
        for p in pumps:
            if p.is_alive():
                p.join(timeout=5)
    if code != 0:
        raise ExitCode(128 - code if code < 0 else code)


def _pump(pipe: IO[str], logger: RunLog, level: int, stream: str) -> None:
    for line in pipe:
        logger.log(level, line.rstrip("\n"), extra={"stream": stream})
        if stream == "stdout" and (report := progress.parse_line(line)) is not None:
            progress.report_line(report)  # logged as printed too: the step's log shows what it said


def _stop_child(child: subprocess.Popen[str], log: RunLog) -> None:
    """SIGTERM the child's process group, then SIGKILL it after the grace period."""
    import subprocess

    if child.poll() is not None:
        return
    grace = stop.grace()
    try:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        log.warning("child did not stop within %.0fs of SIGTERM; killing it", grace)
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    except ProcessLookupError:
        pass
