"""The runner's Lambda handler: runs one step attempt of a Lambda step with the very runner an
ECS task runs (``jobplane-runner run python``'s ``main``, in a child process), so exit classes, redaction,
trace context, fd capture and the JSON log lines are the runner's own, and answers Step Functions
as :mod:`jobplane.contract.lambda_step` says.

Why a child process and not an import: the runner owns its process (signal handlers, fds 1 and 2,
``sys.exit``, the step's imports and globals), and a warm Lambda execution environment serves
the next invocation with whatever the last one left behind; a child starts clean each time and
can be stopped before the function's own time runs out. The child is forked from the handler's
process, which never runs step code, rather than a second interpreter started (issue 66 item 2:
that start was most of a cold invocation's): :func:`run_runner`.

The handler itself needs nothing but the standard library (its secrets read by runner/aws_requests.py),
so the runtime interface client (``awslambdaric``, in the image only: runner/Dockerfile; the
function's image_config runs it, contract/lambda_step.py IMAGE_ENTRY_POINT) calls
``jobplane.runner.lambda_handler.handler``; the local AWS runs this module as a process that
stands in for the runtime interface client and calls the same ``handler`` (:func:`local_invoke`,
platform/local/lambda_agent.py).
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import re
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Callable, Mapping, NoReturn, Protocol

    from jobplane.contract.types import JsonObject

    class Context(Protocol):
        """What the handler reads of Lambda's context object
        (https://docs.aws.amazon.com/lambda/latest/dg/python-context.html)."""

        aws_request_id: str
        log_group_name: str
        log_stream_name: str

        def get_remaining_time_in_millis(self) -> int: ...
else:  # the C module, as the runner has it (runner/main.py): signal.py's enums are built on import
    import _signal as signal

from jobplane.contract import lambda_step as ls
from jobplane.contract import runner as rc
# the runner, imported with the handler (a function's init, once): every invocation's child has it
from jobplane.runner import main as runner_main

#: Seconds kept back from the function's remaining time: the step gets SIGTERM this long before
#: Lambda would end the function, then SIGKILL ``ANSWER_SECONDS`` before, so the handler still
#: answers (exit 143, terminated) and the log says why instead of Lambda's bare timeout.
STOP_SECONDS = 4.0
ANSWER_SECONDS = 1.0
#: The runner's grace between SIGTERM and SIGKILL for what the step started (its default, 10 s,
#: is longer than what is left here).
STOP_GRACE = "2"
#: Of the function's own environment, what the step never gets: the handler's settings, and the
#: Runtime API's address (through which a step could answer for the invocation itself). The
#: step's process is forked from the handler's (:func:`run_runner`): it holds none of the
#: client's descriptors, but a copy of its memory, where the address and the invocation's
#: request id are; what a step could do with them is answer for its own attempt, whose outcome
#: its exit code decides anyway (one invocation at a time in an execution environment).
HANDLER_ONLY = frozenset({ls.ENV_STEP_DIGESTS, ls.ENV_SECRET_SOURCES, "_HANDLER", "AWS_LAMBDA_RUNTIME_API"})
#: The runner's list of declared secrets, which it redacts from every line (runner/logs.py).
ENV_SECRET_NAMES = ls.ENV_STEP_SECRETS
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,255}")
#: Biggest payload environment accepted: Lambda takes 256 KB for an asynchronous and 6 MB for a
#: synchronous invocation; the Task sends what an ECS override of 8,192 characters would hold.
MAX_ENVIRONMENT_CHARS = 64 * 1024
#: What no step may set through the payload, whatever the digests say: the runner's own settings.
RESERVED_PREFIX = "JOBPLANE_"


class JobplaneStepFailed(Exception):
    """The step failed and may be retried (exit 75, or a shell step's own status)."""


class JobplaneStepFailedPermanently(Exception):
    """The step failed and must not be retried (exit 78: cannot run; 143: stopped)."""


ERRORS: dict[str, type[Exception]] = {ls.ERROR_RETRYABLE: JobplaneStepFailed,
                                      ls.ERROR_PERMANENT: JobplaneStepFailedPermanently}


class Refused(Exception):
    """The invocation is not one the compiled state machine sends: nothing runs."""


def handler(event: object, context: Context) -> JsonObject:
    """The function's entry point (the image's CMD): ``event`` is the Task's Payload."""
    return invoke(event, context, os.environ)


def invoke(event: object, context: Context, function_env: Mapping[str, str], *,
           read_secret: Callable[[str], str] | None = None, output: int | None = None,
           base_env: Mapping[str, str] | None = None) -> JsonObject:
    """Run the attempt ``event`` describes and answer: the Answer's fields on success; raise
    :class:`JobplaneStepFailed` / :class:`JobplaneStepFailedPermanently` with the Answer's JSON
    as message otherwise (``errorType`` and ``errorMessage`` of Lambda's function error).

    ``function_env``: the function's configuration (``os.environ`` on Lambda); ``base_env``: what
    the step's process inherits (default: ``function_env``; the local AWS gives it what ECS steps
    get there); ``output``: the file descriptor the step's output goes to (default: this process's
    stdout, which Lambda sends to CloudWatch Logs); ``read_secret``: how declared secrets are read
    (default: :func:`read_from_aws`, with the function's role)."""
    out = 1 if output is None else output
    answer = ls.Answer(exit_code=rc.EXIT_OK, log_group=str(getattr(context, "log_group_name", "") or ""),
                       log_stream=str(getattr(context, "log_stream_name", "") or ""),
                       request_id=str(getattr(context, "aws_request_id", "") or ""))
    try:
        step_env = payload_environment(event, function_env)
        secrets = declared_secrets(function_env, read_secret, step_secret_names(step_env))
    except Refused as e:
        _say(out, "error", f"invocation refused: {e}", step_env_of(event))
        return _answer(answer, rc.EXIT_PERMANENT)
    env = child_environment(base_env if base_env is not None else function_env, step_env, secrets)
    kind = json.loads(step_env[rc.ENV_TARGET])["kind"]
    remaining = context.get_remaining_time_in_millis() / 1000.0
    code = run_runner(kind, env, out, stop_after=max(0.0, remaining - STOP_SECONDS),
                      kill_after=max(0.0, remaining - ANSWER_SECONDS))
    return _answer(answer, code)


def _answer(answer: ls.Answer, code: int) -> JsonObject:
    result = ls.Answer(code, answer.log_group, answer.log_stream, answer.request_id)
    if code == rc.EXIT_OK:
        out: JsonObject = json.loads(result.to_json())
        return out
    raise ERRORS[ls.error_name(code)](result.to_json())


def step_env_of(event: object) -> Mapping[str, str]:
    """What of a (maybe refused) payload names the attempt, for the refusal's log line."""
    env = event.get(ls.PAYLOAD_ENVIRONMENT) if isinstance(event, dict) else None
    if not isinstance(env, dict):
        return {}
    names = (rc.ENV_JOB, rc.ENV_STEP, rc.ENV_EXECUTION_ID, rc.ENV_ATTEMPT)
    return {n: str(env[n])[:100] for n in names if isinstance(env.get(n), str)}


def payload_environment(event: object, function_env: Mapping[str, str]) -> dict[str, str]:
    """The step's environment from the payload, checked: string names and values, no runner
    setting the contract does not name, and its fixed part one the function was deployed for
    (:data:`jobplane.contract.lambda_step.ENV_STEP_DIGESTS`). Raises :class:`Refused`."""
    if not isinstance(event, dict) or set(event) != {ls.PAYLOAD_ENVIRONMENT}:
        raise Refused(f"the payload must be an object with the one key {ls.PAYLOAD_ENVIRONMENT!r}")
    env = event[ls.PAYLOAD_ENVIRONMENT]
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise Refused(f"{ls.PAYLOAD_ENVIRONMENT} must map names to strings")
    if sum(len(k) + len(v) for k, v in env.items()) > MAX_ENVIRONMENT_CHARS:
        raise Refused(f"{ls.PAYLOAD_ENVIRONMENT} is larger than {MAX_ENVIRONMENT_CHARS} characters")
    bad = sorted(k for k in env if not ENV_NAME_RE.fullmatch(k) or "\0" in env[k])
    if bad:
        raise Refused(f"not an environment variable (name or value): {', '.join(repr(b[:60]) for b in bad[:5])}")
    unknown = sorted(k for k in env if k.startswith(RESERVED_PREFIX) and k not in CONTRACT_NAMES)
    if unknown:
        raise Refused(f"runner settings the contract does not name: {', '.join(unknown[:5])}")
    missing = [n for n in (rc.ENV_JOB, rc.ENV_STEP, rc.ENV_TARGET) if not env.get(n)]
    if missing:
        raise Refused(f"missing {', '.join(missing)}")
    for name, limit in rc.RUN_TIME_VALUE_MAX.items():
        if len(env.get(name, "")) > limit:
            raise Refused(f"{name} is longer than {limit} characters")
    try:
        target = json.loads(env[rc.ENV_TARGET])
    except ValueError:
        target = None
    if not isinstance(target, dict) or target.get("kind") not in ls.KINDS:
        raise Refused(f"{rc.ENV_TARGET} is not a {'/'.join(ls.KINDS)} step's target")
    deployed = {d.strip() for d in function_env.get(ls.ENV_STEP_DIGESTS, "").split(",") if d.strip()}
    if ls.step_digest(env) not in deployed:
        raise Refused(f"step {env[rc.ENV_STEP][:80]!r} of job {env[rc.ENV_JOB][:80]!r} with this target and "
                      "environment is not a step this function was deployed for")
    return dict(env)


#: The runner settings a payload may carry (contract/runner.py ENV_*); any other JOBPLANE_ name
#: is refused (the compiler reserves the prefix: a step's own env cannot use it).
CONTRACT_NAMES = frozenset({rc.ENV_JOB, rc.ENV_TEAM, rc.ENV_STEP, rc.ENV_EXECUTION_ID, rc.ENV_SCHEDULED_TIME,
                            rc.ENV_TRIGGER, rc.ENV_PARAMS, rc.ENV_ATTEMPT, rc.ENV_TARGET, rc.ENV_TRACEPARENT,
                            rc.ENV_STEP_TIMEOUT, rc.ENV_PARAM_DEFAULTS, ls.ENV_STEP_SECRETS})


def step_secret_names(step_env: Mapping[str, str]) -> set[str]:
    """The step's own secrets, as its (digested) payload names them: the handler reads these of
    the function's secrets and no other, so a Lambda step never gets another step's."""
    return {n.strip() for n in step_env.get(ls.ENV_STEP_SECRETS, "").split(",") if n.strip()}


def declared_secrets(function_env: Mapping[str, str], read_secret: Callable[[str], str] | None,
                     wanted: set[str]) -> dict[str, str]:
    """The step's secrets (``wanted``: their names), read now (as ECS reads a task's before it
    starts): ENV_NAME -> value. One that cannot be read, or that the function was not deployed
    with, refuses the attempt, as ECS fails a task to start."""
    raw = function_env.get(ls.ENV_SECRET_SOURCES, "").strip()
    if not wanted or not raw:
        # no sources at all: a function the local AWS runs, where steps' secrets are unset as
        # on ECS (platform/local/lambda_agent.py); a compiled function whose steps have secrets
        # always has them (compiler/executors/lambda_.py function_environment)
        return {}
    try:
        spec = json.loads(raw)
    except ValueError:
        spec = None
    if not isinstance(spec, dict) or not all(isinstance(k, str) and ENV_NAME_RE.fullmatch(k) and isinstance(v, str)
                                             for k, v in spec.items()):
        raise Refused(f"the function's {ls.ENV_SECRET_SOURCES} is not a JSON object of names to ARNs")
    missing = sorted(wanted - set(spec))
    if missing:
        raise Refused(f"the step's secrets {', '.join(missing)} are not among the function's {ls.ENV_SECRET_SOURCES}")
    read = read_secret or read_from_aws
    values = {}
    for name, arn in sorted((n, a) for n, a in spec.items() if n in wanted):
        try:
            values[name] = read(arn)
        except Exception as e:  # noqa: BLE001 - whatever the SDK raises, the attempt cannot start
            raise Refused(f"secret {name} ({arn}) cannot be read: {type(e).__name__}: {str(e)[:200]}") from None
    return values


def read_from_aws(arn: str) -> str:
    """A Secrets Manager secret's string or an SSM parameter's decrypted value, by ARN, with the
    function's role: signed by the standard library (runner/aws_requests.py), so the image needs
    no boto3."""
    from jobplane.runner import aws_requests

    if ":ssm:" in arn:  # GetParameters: what the function's role may call (ssm:GetParameters)
        answer = aws_requests.json_call("ssm", "AmazonSSM.GetParameters", {"Names": [arn], "WithDecryption": True})
        found = answer.get("Parameters")
        if not isinstance(found, list) or not found:
            raise LookupError(f"no such parameter (InvalidParameters: {answer.get('InvalidParameters')})")
        return str(found[0]["Value"])
    secret = aws_requests.json_call("secretsmanager", "secretsmanager.GetSecretValue", {"SecretId": arn})
    if not isinstance(secret.get("SecretString"), str):
        raise LookupError("the secret has no SecretString (a binary secret cannot be an environment variable)")
    return str(secret["SecretString"])


def child_environment(base: Mapping[str, str], step_env: Mapping[str, str], secrets: Mapping[str, str]) -> dict[str, str]:
    """The runner's environment: the function's own (its role's credentials, region, PATH), less
    the handler's settings, with the step's environment and secrets over it; the secrets named
    in JOBPLANE_SECRET_NAMES so the runner redacts them, as an ECS step's task definition does."""
    env = {k: v for k, v in base.items() if k not in HANDLER_ONLY}
    env.update(step_env)
    env.update(secrets)
    names = {n for n in env.get(ENV_SECRET_NAMES, "").split(",") if n} | set(secrets)
    if names:
        env[ENV_SECRET_NAMES] = ",".join(sorted(names))
    env.setdefault("JOBPLANE_STOP_GRACE_SECONDS", STOP_GRACE)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def runner_command(kind: str) -> list[str]:
    """The container command (contract/runner.py) the runner is run as, with the runner next to
    this interpreter when it is there: its ``sys.argv`` in the child (:func:`run_runner`)."""
    command = rc.container_command(kind)
    beside = os.path.join(os.path.dirname(sys.executable), rc.RUNNER_EXECUTABLE)
    if os.path.isfile(beside):
        command[0] = beside
    return command


def run_runner(kind: str, env: Mapping[str, str], output: int, stop_after: float, kill_after: float) -> int:
    """Run the runner to its end in a child process: its exit code (128+N for signal N). SIGTERM
    at ``stop_after`` seconds, SIGKILL at ``kill_after``, to its whole process group (the step's
    children too).

    The child is forked from this process, not a fresh interpreter (issue 66 item 2: a second
    interpreter's start was most of a Lambda step's cold start): it runs the runner's ``main`` as
    ``jobplane-runner run KIND`` would (:func:`_child`), in a session of its own, with the step's
    environment as its ``os.environ``, stdin from /dev/null, fds 1 and 2 on ``output`` and no
    other descriptor of this process. What the child process gave (this module's docstring)
    holds: the step's signal handlers, fds, ``sys.exit`` and imports are the child's, and this
    process, which never runs step code, is what the next invocation forks again. A function may
    run processes of its own, 1,024 processes and threads and 1,024 descriptors at most
    (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html, "Execution
    processes/threads", "File descriptors"): the fork is one process, as the interpreter was."""
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here is written twice
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    ready_r, ready_w = os.pipe()
    # this process's objects are the child's too, unused: frozen, no collection in the child
    # closes a file of this process on a descriptor number the runner has reused
    # (https://docs.python.org/3/library/gc.html#gc.freeze)
    gc.freeze()
    try:
        pid = os.fork()
    except OSError as e:
        gc.unfreeze()
        os.close(ready_r)
        os.close(ready_w)
        _say(output, "error", f"the runner cannot start: {e}", env)
        return rc.EXIT_PERMANENT
    if pid == 0:  # pragma: no cover - the child; it never returns (os._exit)
        _child(kind, env, output, ready_r, ready_w)
    gc.unfreeze()
    os.close(ready_w)
    os.read(ready_r, 1)  # end of file once the child has its own session: a stop reaches its group
    os.close(ready_r)
    started = time.monotonic()
    code = _wait(pid, stop_after)
    if code is None:
        _say(output, "warning", f"stopping the step: the function has {STOP_SECONDS:g} seconds left", env)
        _signal_group(pid, signal.SIGTERM)
        code = _wait(pid, max(0.0, kill_after - (time.monotonic() - started)))
        if code is None:
            _signal_group(pid, signal.SIGKILL)
            code = _wait(pid, None)
    _signal_group(pid, signal.SIGKILL)  # what the step left running ends with it, as in a task
    assert code is not None
    return 128 - code if code < 0 else code


def _child(kind: str, env: Mapping[str, str], output: int, ready_r: int, ready_w: int) -> NoReturn:
    """The forked child: made what a fresh ``jobplane-runner run KIND`` process would be, then
    the runner's ``main``, then what the interpreter does at exit (non-daemon threads joined,
    ``atexit`` handlers run: the runner's capture registers one), then ``os._exit``: never back
    into the caller's frames (the runtime interface client's loop)."""
    code = 1
    try:
        os.setsid()
        os.close(ready_r)
        os.close(ready_w)  # the parent reads its end of file: the session exists
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.closerange(3, _max_fd())  # the client's connections and files are not the step's
        atexit._clear()  # this process's exit handlers are not the step's
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # until the runner's own (runner/main.py)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.environ.clear()
        os.environ.update(env)
        # the step's PYTHONPATH, as a fresh interpreter would put it, ahead of the rest
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
        sys.path[0:0] = extra
        sys.argv = runner_command(kind)
        try:
            runner_main.main(sys.argv[1:])
        except SystemExit as e:
            code = _exit_status(e.code)
        except KeyboardInterrupt:
            code = 128 + signal.SIGINT
        except BaseException:  # noqa: BLE001 - as the interpreter does for an uncaught exception
            import traceback

            traceback.print_exc()
            code = 1
        if "threading" in sys.modules:  # the interpreter's exit: non-daemon threads, then atexit
            sys.modules["threading"]._shutdown()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
    finally:
        os._exit(code)


def _exit_status(value: object) -> int:
    """``sys.exit(value)``'s status, as the interpreter makes it."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    try:
        print(value, file=sys.stderr)
    except Exception:  # noqa: BLE001
        pass
    return 1


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        return 65536


def _wait(pid: int, timeout: float | None) -> int | None:
    """The child's exit code (``-N`` for signal N) once it has ended, None if it still runs
    after ``timeout`` seconds (None: no limit). Waits on a pidfd (Linux 5.3+), else polls as
    ``subprocess.Popen.wait`` does."""
    if timeout is None:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    if pidfd >= 0:
        try:
            import select

            select.select([pidfd], [], [], timeout)
        finally:
            os.close(pidfd)
        done, status = os.waitpid(pid, os.WNOHANG)
        return os.waitstatus_to_exitcode(status) if done else None
    deadline, delay = time.monotonic() + timeout, 0.0005
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        delay = min(delay * 2, left, 0.05)
        time.sleep(delay)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _say(fd: int, level: str, message: str, env: Mapping[str, str]) -> None:
    """One JSON line of the handler's own, shaped like the runner's (runner/logs.py)."""
    line: JsonObject = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "level": level,
                        "logger": "jobplane.lambda", "job": env.get(rc.ENV_JOB, ""), "step": env.get(rc.ENV_STEP, ""),
                        "execution_id": env.get(rc.ENV_EXECUTION_ID, ""), "attempt": env.get(rc.ENV_ATTEMPT, ""),
                        "message": message}
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    except OSError:
        pass


class LocalContext:
    """Lambda's context object as the local AWS describes it (contract/lambda_step.py LOCAL_*)."""

    def __init__(self, env: Mapping[str, str]):
        self.aws_request_id = env.get(ls.ENV_LOCAL_REQUEST_ID, "")
        self.log_group_name = env.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = env.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.function_name = env.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self._deadline = float(env.get(ls.ENV_LOCAL_DEADLINE) or time.time() + 3)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.time()) * 1000))


def local_invoke(answer_path: str) -> int:
    """One invocation as the runtime interface client makes it: the event from stdin, then
    ``handler(event, context)``; the answer (or the error, as the client reports one) written
    to ``answer_path``."""
    try:
        event: object = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        event = None
    context = LocalContext(os.environ)
    for name in (ls.ENV_LOCAL_REQUEST_ID, ls.ENV_LOCAL_DEADLINE):
        os.environ.pop(name, None)
    answer: JsonObject
    try:
        answer = {"result": handler(event, context)}
    except Exception as e:  # noqa: BLE001 - what the runtime interface client reports
        import traceback  # only for an error: not on a step's way to its code

        stack = traceback.format_tb(e.__traceback__)
        answer = {"errorType": type(e).__name__, "errorMessage": str(e), "stackTrace": stack}
        # and logs, as one line whose lines are joined by carriage returns (its text log format)
        lines = [f"[ERROR] {type(e).__name__}: {e}", "Traceback (most recent call last):"]
        lines += [line for entry in stack for line in entry.splitlines()]
        sys.stdout.write("\r".join(lines) + "\n")
        sys.stdout.flush()
    with open(answer_path, "w", encoding="utf-8") as f:  # pathlib is not imported: the cold path
        f.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(local_invoke(sys.argv[1]))
