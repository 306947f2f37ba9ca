"""jobplane-runner as a real subprocess through its console script, for every target kind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from jobplane.contract import runner as rc

HERE = Path(__file__).resolve().parent
RUNNER = str(Path(sys.executable).parent / "jobplane-runner")
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def env_for(kind: str, target: dict[str, Any], params: dict[str, Any] | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBPLANE_")}
    env.update({
        "PYTHONPATH": str(HERE),
        rc.ENV_JOB: "month-end-close", rc.ENV_TEAM: "billing", rc.ENV_STEP: "post-ledger",
        rc.ENV_EXECUTION_ID: "exec-123", rc.ENV_SCHEDULED_TIME: "2026-11-30T14:30:00Z", rc.ENV_TRIGGER: "schedule",
        rc.ENV_ATTEMPT: "2", rc.ENV_PARAMS: json.dumps(params or {}), rc.ENV_TRACEPARENT: TRACEPARENT,
        rc.ENV_TARGET: json.dumps({"kind": kind, **target}),
    })
    env.update(extra)
    return env


def run(kind: str, target: dict[str, Any], params: dict[str, Any] | None = None, **extra: str):
    proc = subprocess.run([RUNNER, "run", kind], env=env_for(kind, target, params, **extra),
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc


def test_python_success_with_json_logs(tmp_path: Path) -> None:
    import re
    from datetime import datetime, timedelta

    out = tmp_path / "out.json"
    before = datetime.now().astimezone()
    code, lines, proc = run("python", {"target": "sample_apps.functions:write_greeting", "kwargs": {"out": str(out)}})
    after = datetime.now().astimezone()
    assert code == 0, proc.stdout + proc.stderr
    assert json.loads(out.read_text()) == {"text": "hello, world"}
    for line in lines:  # every line is a JSON object carrying the run's identity
        assert line["job"] == "month-end-close" and line["step"] == "post-ledger"
        assert line["execution_id"] == "exec-123" and line["trace_id"] == TRACEPARENT.split("-")[1]
        assert {"time", "level", "message"} <= set(line)
        # ISO 8601 in UTC to the millisecond, the time of the line
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"]), line["time"]
        at = datetime.fromisoformat(line["time"].replace("Z", "+00:00"))
        assert before - timedelta(milliseconds=1) <= at <= after, (before, line["time"], after)
    messages = [(line["logger"], line["message"]) for line in lines]
    assert ("sample_apps.functions", "greeting world") in messages  # the user's own logging
    assert ("jobplane.output", "hello, world") in messages  # and its print()
    assert lines[-1]["message"] == "step succeeded" and lines[-1]["duration"] >= 0


def test_params_fill_arguments_but_never_override_fixed_kwargs(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    # the attack: a run's param named like the step's fixed argument (a report's recipient)
    code, _, proc = run("python", {"target": "sample_apps.functions:write_greeting",
                                   "kwargs": {"out": str(out), "name": "kwargs"}},
                        params={"name": "params", "out": str(tmp_path / "elsewhere.json"), "unrelated_param": 1})
    assert code == 0, proc.stdout
    assert json.loads(out.read_text()) == {"text": "hello, kwargs"} and not (tmp_path / "elsewhere.json").exists()
    # a param the function takes and the step does not fix is passed
    code, _, proc = run("python", {"target": "sample_apps.functions:write_greeting", "kwargs": {"out": str(out)}},
                        params={"name": "params", "unrelated_param": 1})
    assert code == 0, proc.stdout
    assert json.loads(out.read_text()) == {"text": "hello, params"}
    ctx_out = tmp_path / "ctx.json"
    code, _, proc = run("python", {"target": "sample_apps.functions:with_context", "kwargs": {"out": str(ctx_out)}},
                        params={"day": "2026-11-30"})
    assert code == 0, proc.stdout
    ctx = json.loads(ctx_out.read_text())
    assert ctx["job"] == "month-end-close" and ctx["attempt"] == 2 and ctx["params"] == {"day": "2026-11-30"}
    trace, parent = ctx["traceparent"].split("-")[1:3]
    assert trace == TRACEPARENT.split("-")[1] and parent != TRACEPARENT.split("-")[2]  # continued, new span


def test_user_exception_is_retryable_with_traceback(tmp_path: Path) -> None:
    code, lines, _ = run("python", {"target": "sample_apps.functions:boom"})
    assert code == rc.EXIT_RETRYABLE
    failure = lines[-1]
    assert failure["level"] == "error" and failure["message"] == "step failed"
    assert failure["error_type"] == "ConnectionError" and failure["retryable"] is True
    assert "upstream returned 503" in failure["traceback"] and "functions.py" in failure["traceback"]


def test_the_steps_own_code_can_fail_without_a_retry() -> None:
    """jobplane.runner.PermanentFailure: exit 78 (never retried), its message the error line the
    alert and the portal show (platform/logs.py error_excerpt reads error_type and message)."""
    from jobplane.platform.logs import error_excerpt

    code, lines, proc = run("python", {"target": "sample_apps.functions:needs_a_day"})
    assert code == rc.EXIT_PERMANENT, proc.stdout + proc.stderr
    failure = lines[-1]
    assert failure["level"] == "error" and failure["retryable"] is False
    assert failure["message"] == "step failed, not retried: needs the param day (YYYY-MM-DD): run it again with -p day=..."
    assert failure["error_type"] == "PermanentFailure"

    class Stream:  # the attempt's log as CloudWatch Logs hands it to error_excerpt
        def read(self, limit: int) -> str:
            return proc.stdout[-limit:]

    assert error_excerpt([Stream()]) == f"PermanentFailure: {failure['message']}"  # type: ignore[list-item]
    code, _, proc = run("python", {"target": "sample_apps.functions:needs_a_day"}, params={"day": "2026-11-30"})
    assert code == rc.EXIT_OK, proc.stdout + proc.stderr


@pytest.mark.parametrize("target,fragment", [
    ("sample_apps.nowhere:run", "cannot import 'sample_apps.nowhere'"),
    ("sample_apps.functions:missing", "has no attribute 'missing'"),
    ("sample_apps.functions:NOT_CALLABLE", "is not callable"),
])
def test_missing_target_is_permanent(target: str, fragment: str) -> None:
    code, lines, _ = run("python", {"target": target})
    assert code == rc.EXIT_PERMANENT
    assert fragment in lines[-1]["message"] and lines[-1]["retryable"] is False


def test_arguments_that_do_not_fit_are_permanent() -> None:
    code, lines, _ = run("python", {"target": "sample_apps.functions:write_greeting", "kwargs": {"colour": "red"}})
    assert code == rc.EXIT_PERMANENT
    assert "arguments do not fit" in lines[-1]["message"]


def test_secret_looking_values_never_reach_the_logs() -> None:
    code, _, proc = run("python", {"target": "sample_apps.functions:leaky"},
                        DB_PASSWORD="correct-horse-battery", STRIPE_API_KEY="sk_live_abcdef123456")
    assert code == rc.EXIT_RETRYABLE
    assert "correct-horse-battery" not in proc.stdout and "correct-horse-battery" not in proc.stderr
    assert "sk_live_abcdef123456" not in proc.stdout
    assert proc.stdout.count("[redacted]") >= 3  # the log call, the print and the traceback


def test_declared_secrets_keys_and_url_passwords_never_reach_the_logs() -> None:
    """Issue 10, item 8: values that redaction by name alone printed in clear."""
    script = ("echo url=$DATABASE_URL; echo stripe=$STRIPE_KEY; echo mysql=$MYSQL_PWD; echo hook=$SLACK_WEBHOOK; "
              "echo declared=$PAYMENT_CONFIG; echo built=redis://worker:built-pass-77@cache:6379/0; "
              "echo layout=$KEYBOARD_LAYOUT; echo cwd=$PWD")
    code, lines, proc = run("shell", {"argv": ["sh", "-c", script]},
                            DATABASE_URL="postgres://app:pg-pass-4711@db.internal/app", STRIPE_KEY="sk_live_51abcdef",
                            MYSQL_PWD="mysql-pass-0042", SLACK_WEBHOOK="https://hooks.slack.com/services/T1/B2/C3",
                            PAYMENT_CONFIG="opaque-value-9911", JOBPLANE_SECRET_NAMES="PAYMENT_CONFIG",
                            KEYBOARD_LAYOUT="us-intl")
    assert code == 0, proc.stdout + proc.stderr
    for secret in ("pg-pass-4711", "sk_live_51abcdef", "mysql-pass-0042", "hooks.slack.com/services/T1/B2/C3",
                   "opaque-value-9911", "built-pass-77"):
        assert secret not in proc.stdout and secret not in proc.stderr, secret
    printed = {line["message"].split("=", 1)[0]: line["message"].split("=", 1)[1]
               for line in lines if line.get("stream") == "stdout"}
    assert printed["url"] == "postgres://app:[redacted]@db.internal/app"  # the rest of the URL stays readable
    assert printed["built"] == "redis://worker:[redacted]@cache:6379/0"
    assert printed["layout"] == "us-intl" and printed["cwd"] == os.getcwd()  # ordinary values stay


def test_what_a_python_steps_children_and_c_code_print_is_redacted_and_logged() -> None:
    """Issue 40, item 6: os.system, subprocess and writes to fds 1 and 2 bypassed sys.stdout."""
    code, lines, proc = run("python", {"target": "sample_apps.functions:leaky_children"},
                            DB_PASSWORD="correct-horse-battery", STRIPE_KEY="sk_live_abcdef123456")
    assert code == 0, proc.stdout + proc.stderr
    for secret in ("correct-horse-battery", "sk_live_abcdef123456"):
        assert secret not in proc.stdout and secret not in proc.stderr, secret
    printed = {(line["stream"], line["message"]) for line in lines if line.get("stream")}
    assert printed == {("stdout", "system=[redacted]"), ("stderr", "child-err=[redacted]"),
                       ("stdout", "fd1=[redacted]"), ("stderr", "dunder=[redacted]")}
    for line in lines:  # each as a log line of the run, at the stream's level
        if line.get("stream"):
            assert line["job"] == "month-end-close" and line["logger"] == "jobplane.output"
            assert line["level"] == ("info" if line["stream"] == "stdout" else "warning")
    assert lines[-1]["message"] == "step succeeded"  # the children's lines are logged before the result
    assert proc.stderr == ""


def test_a_crash_of_the_interpreter_still_shows_where() -> None:
    """With fds 1 and 2 captured by a thread of the dying process, faulthandler writes to the real
    stderr: the crash's stack (names, no values) is not lost."""
    code, lines, proc = run("python", {"target": "sample_apps.functions:segfault"})
    assert code == -signal.SIGSEGV, proc.stdout + proc.stderr
    assert "about to crash" in [line["message"] for line in lines]
    assert "Fatal Python error: Segmentation fault" in proc.stderr and "segfault" in proc.stderr


def test_celery_task_runs_inline_without_a_broker(tmp_path: Path) -> None:
    out = tmp_path / "celery.txt"
    code, lines, proc = run("celery", {"target": "billing.tasks.close_month", "kwargs": {"out": str(out)}},
                            params={"period": "2026-11"}, JOBPLANE_CELERY_APP="sample_apps.celery_app:app")
    assert code == 0, proc.stdout + proc.stderr
    assert out.read_text() == "closed 2026-11"
    code, lines, _ = run("celery", {"target": "billing.tasks.flaky", "kwargs": {"attempts_file": "x"}},
                         JOBPLANE_CELERY_APP="sample_apps.celery_app:app")
    assert code == rc.EXIT_RETRYABLE and lines[-1]["error_type"] == "TimeoutError"
    code, lines, _ = run("celery", {"target": "billing.tasks.nope"}, JOBPLANE_CELERY_APP="sample_apps.celery_app:app")
    assert code == rc.EXIT_PERMANENT and "billing.tasks.close_month" in lines[-1]["message"]
    code, lines, _ = run("celery", {"target": "billing.tasks.close_month"})
    assert code == rc.EXIT_PERMANENT and "JOBPLANE_CELERY_APP" in lines[-1]["message"]


def test_django_command(tmp_path: Path) -> None:
    out = tmp_path / "ledger.txt"
    settings = {"DJANGO_SETTINGS_MODULE": "sample_apps.djproject.settings"}
    code, lines, proc = run("django", {"target": "post_ledger", "args": ["--period", "2026-11", "--out", str(out)]},
                            **settings)
    assert code == 0, proc.stdout + proc.stderr
    assert out.read_text() == "posted 2026-11"
    assert any(line["message"] == "posted 2026-11" for line in lines)  # the command's own output
    code, lines, _ = run("django", {"target": "post_ledger", "args": ["--period", "closed", "--out", str(out)]}, **settings)
    assert code == rc.EXIT_PERMANENT and "period is closed" in lines[-1]["message"]
    code, lines, _ = run("django", {"target": "post_ledger", "args": ["--bogus"]}, **settings)
    assert code == rc.EXIT_PERMANENT
    code, lines, _ = run("django", {"target": "no_such_command"}, **settings)
    assert code == rc.EXIT_PERMANENT and "unknown Django management command" in lines[-1]["message"]
    code, lines, _ = run("django", {"target": "post_ledger"}, DJANGO_SETTINGS_MODULE="sample_apps.nope")
    assert code == rc.EXIT_PERMANENT and "settings" in lines[-1]["message"].lower()


def test_shell_output_is_streamed_and_status_passed_through(tmp_path: Path) -> None:
    code, lines, _ = run("shell", {"argv": ["sh", "-c", "echo one; echo two >&2; echo \"$TRACEPARENT\"; exit 3"]})
    assert code == 3
    streamed = [(line.get("stream"), line["message"]) for line in lines if line["logger"] == "jobplane.output"]
    assert ("stdout", "one") in streamed and ("stderr", "two") in streamed
    child_traceparent = next(m for s, m in streamed if m.startswith("00-"))
    assert child_traceparent.split("-")[1] == TRACEPARENT.split("-")[1]
    assert lines[-1]["exit_code"] == 3 and lines[-1]["retryable"] is True
    code, lines, _ = run("shell", {"argv": ["/no/such/binary"]})
    assert code == rc.EXIT_PERMANENT


def wait_for(path: Path, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return path.read_text()


def test_sigterm_stops_python_work_promptly(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    proc = subprocess.Popen([RUNNER, "run", "python"], stdout=subprocess.PIPE, text=True,
                            env=env_for("python", {"target": "sample_apps.functions:slow", "kwargs": {"ready": str(ready)}}))
    wait_for(ready)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == rc.EXIT_TERMINATED
    assert time.monotonic() - sent < 20  # well before the 60 s of work, and before ECS would SIGKILL (30 s)
    assert json.loads(out.splitlines()[-1])["message"] == "stopped by SIGTERM"


def test_sigterm_stops_the_runner_even_if_its_parent_had_it_blocked(tmp_path: Path) -> None:
    """A child inherits its starting thread's signal mask through exec; the runner must still
    hear a stop (the cause of a test that timed out once in `make soak`)."""
    import threading

    ready = tmp_path / "ready"
    started: list[subprocess.Popen[str]] = []

    def start_with_sigterm_blocked() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # this thread only
        started.append(subprocess.Popen([RUNNER, "run", "python"], stdout=subprocess.PIPE, text=True, env=env_for(
            "python", {"target": "sample_apps.functions:slow", "kwargs": {"ready": str(ready)}})))

    launcher = threading.Thread(target=start_with_sigterm_blocked)
    launcher.start()
    launcher.join()
    [proc] = started
    wait_for(ready)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)  # the step itself sleeps 60 s: only a heard stop ends it sooner
    assert proc.returncode == rc.EXIT_TERMINATED
    assert json.loads(out.splitlines()[-1])["message"] == "stopped by SIGTERM"


def test_sigterm_stops_a_shell_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    proc = subprocess.Popen([RUNNER, "run", "shell"], stdout=subprocess.PIPE, text=True,
                            env=env_for("shell", {"argv": ["sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"]}))
    child = int(wait_for(pidfile).strip())
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == rc.EXIT_TERMINATED
    deadline = time.monotonic() + 60  # a bound that catches a hang
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"shell child {child} still alive after the runner stopped")


def test_a_step_past_its_timeout_stops_itself_a_margin_later(tmp_path: Path) -> None:
    """Step Functions' timeout stops no task: the runner ends the step itself, as a SIGTERM would."""
    ready = tmp_path / "ready"
    proc = subprocess.Popen([RUNNER, "run", "python"], stdout=subprocess.PIPE, text=True, env=env_for(
        "python", {"target": "sample_apps.functions:slow", "kwargs": {"ready": str(ready)}},
        **{rc.ENV_STEP_TIMEOUT: "1", "JOBPLANE_TIMEOUT_MARGIN_SECONDS": "0.5"}))
    wait_for(ready)
    out, _ = proc.communicate(timeout=50)  # the step sleeps 60 s: only its own stop ends it sooner
    assert proc.returncode == rc.EXIT_TERMINATED
    lines = [json.loads(line) for line in out.splitlines()]
    assert "0.5 s past the step's timeout (1 s): stopping" in lines[-2]["message"]
    assert lines[-1]["message"] == "stopped by SIGTERM"


@pytest.mark.parametrize("value", ["0", "-5", "soon"])
def test_a_step_timeout_that_is_not_a_positive_number_is_permanent(value: str) -> None:
    code, lines, _ = run("python", {"target": "sample_apps.functions:mark_called"}, **{rc.ENV_STEP_TIMEOUT: value})
    assert code == rc.EXIT_PERMANENT
    assert "JOBPLANE_STEP_TIMEOUT must be a positive whole number of seconds" in lines[-1]["message"]


@pytest.mark.parametrize("name", ["JOBPLANE_STOP_GRACE_SECONDS", "JOBPLANE_TIMEOUT_MARGIN_SECONDS"])
@pytest.mark.parametrize("value", ["-1", "ten", "nan", "inf"])
def test_a_stop_setting_that_is_not_seconds_is_refused_before_the_step(name: str, value: str, tmp_path: Path) -> None:
    """Read once at start: a bad value would otherwise crash the runner in its SIGTERM handler."""
    out = tmp_path / "called"
    code, lines, proc = run("python", {"target": "sample_apps.functions:mark_called", "kwargs": {"out": str(out)}},
                            **{rc.ENV_STEP_TIMEOUT: "60", name: value})
    assert code == rc.EXIT_PERMANENT, proc.stdout + proc.stderr
    assert lines[-1]["message"] == (f"bad runner environment: {name} must be a number of seconds, 0 or more "
                                    f"(got {value!r})")
    assert not out.exists() and "Traceback" not in proc.stderr  # the step never ran


def test_a_kind_the_runner_has_no_dispatch_for_fails_with_its_reason_and_is_not_retried(tmp_path: Path) -> None:
    """A step of a kind this runner does not know (a compiler newer than the image) fails at
    once, permanently, saying why; it used to run as a shell step (or, refused by argparse,
    exit 2: retried)."""
    out = tmp_path / "ran"
    code, lines, proc = run("approval", {"target": "sample_apps.functions:mark_called", "kwargs": {"out": str(out)},
                                         "argv": ["touch", str(out)]})
    assert code == rc.EXIT_PERMANENT, proc.stdout + proc.stderr
    assert lines[-1]["message"] == ("step cannot run: unknown step kind 'approval': this runner runs "
                                    f"{', '.join(rc.STEP_KINDS)} steps (a runner older than the compiler that wrote "
                                    "the step?)")
    assert lines[-1]["retryable"] is False and lines[-1]["job"] == "month-end-close"
    assert not out.exists()  # nothing ran


def test_bad_environment_is_permanent() -> None:
    env = env_for("python", {"target": "m:f"})
    env[rc.ENV_PARAMS] = "{not json"
    proc = subprocess.run([RUNNER, "run", "python"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == rc.EXIT_PERMANENT
    assert "JOBPLANE_PARAMS is not valid JSON" in proc.stdout


def test_runner_imports_only_what_an_application_image_has(tmp_path: Path) -> None:
    """The Dockerfile installs jobplane with --no-deps and nothing else: prove the standard
    library suffices."""
    probe = ("import sys, runpy\n"
             "sys.argv = ['jobplane-runner', 'run', 'python']\n"
             "try:\n    runpy.run_module('jobplane.runner.main', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'boto3', 'botocore', 'click', 'jinja2', '_gojsonnet', 'moto', 'pythonjsonlogger'})\n"
             # to a file: fds 1 and 2 stay captured until exit (issue 48 item 3)
             f"open({str(tmp_path / 'heavy')!r}, 'w').write('HEAVY=' + ','.join(heavy))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env=env_for("python", {"target": "sample_apps.functions:mark_called",
                                                 "kwargs": {"out": str(tmp_path / "t")}}))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "heavy").read_text() == "HEAVY="


# -- binding a python step's arguments without inspect (its import is ~10 ms of every start) ---
def _greet(out, name="world", greeting="hello"):  # noqa: ANN001, ANN202
    return out, name, greeting


def _keyword_only(*, day, mode="full"):  # noqa: ANN001, ANN202
    return day, mode


def _anything(out, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
    return out, args, kwargs


def _with_context(out, context):  # noqa: ANN001, ANN202
    return out, context


def _positional_only(out, /, name="x"):  # noqa: ANN001, ANN202
    return out, name


def _decorated(fn):  # noqa: ANN001, ANN202
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        return fn(*args, **kwargs)
    return wrapper


class _Job:
    def __init__(self, out, day=None):  # noqa: ANN001
        self.out = out


@pytest.mark.parametrize("fn", [_greet, _keyword_only, _anything, _with_context, _positional_only, _decorated(_greet),
                                _Job, print, __import__("functools").partial(_greet, name="fixed")],
                         ids=lambda f: getattr(f, "__name__", type(f).__name__))
@pytest.mark.parametrize("kwargs,params", [
    ({"out": "o"}, {}), ({"out": "o"}, {"name": "p", "day": "2026-11-30", "other": 1}),
    ({"out": "o", "name": "fixed"}, {"name": "param"}), ({}, {"day": "2026-11-30"}), ({"colour": "red"}, {}),
    ({"out": "o", "day": "d"}, {"mode": "m"}),
])
def test_arguments_bind_as_inspect_binds_them(fn: Any, kwargs: dict[str, Any], params: dict[str, Any],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's reading of a plain function's code object gives exactly what
    inspect.signature gives, or leaves the function to it: same arguments, same permanent error."""
    from jobplane.runner import targets
    from jobplane.runner.context import RunContext, TraceContext

    ctx = RunContext(job="j", team="t", step="s", execution_id="e", scheduled_time="2026-11-30T00:00:00Z",
                     trigger="manual", attempt=1, params=params, target={},
                     trace=TraceContext("0" * 32, "1" * 16, None))

    def outcome() -> Any:
        try:
            return targets.call_arguments(fn, kwargs, ctx)
        except targets.PermanentError as e:
            return f"PermanentError: {e}"

    fast = outcome()
    monkeypatch.setattr(targets, "_plain_parameters", lambda fn: None)  # inspect.signature for everything
    assert fast == outcome()
    if fn in (_greet, _keyword_only, _anything, _with_context):
        monkeypatch.undo()
        assert targets._plain_parameters(fn) is not None  # these are read without inspect
