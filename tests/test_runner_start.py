"""What the runner imports before a step's code runs (issue 66 item 2): only what the step's kind
needs. Pinned by the modules a step sees (``sys.modules`` when its function is called) or that
the runner's process imports at all (``python -X importtime``), never by a time:
bench/runner_start.py prints the times. And what that may not change: a step that imports
``logging`` itself, one that never does, and a Lambda step's runner (forked from the handler,
not a second interpreter) log the same lines, redacted, as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from jobplane.contract import lambda_step as ls
from jobplane.contract import runner as rc
from jobplane.runner import lambda_handler as lh

RUNNER = str(Path(sys.executable).parent / "jobplane-runner")
#: What no step needs imported before its code runs: the logging module and its imports, what
#: only a shell step (subprocess, threading) or a usage error (argparse) needs, typing; and
#: ``signal``, whose enums the runner does without (the C module ``_signal`` sets its handlers).
NOT_BEFORE_A_FUNCTION = {"logging", "traceback", "weakref", "string", "threading", "subprocess", "argparse",
                         "inspect", "typing", "dataclasses", "datetime", "pathlib", "tempfile", "urllib.parse",
                         "signal"}
NOT_IN_A_SHELL_STEP = {"logging", "traceback", "argparse", "inspect", "typing", "dataclasses", "datetime"}
SECRET = "s3cr3t-value-for-the-runner-start"

STEP_MODULE = '''
import atexit
import os
import sys
import time


def seen(out):
    """What was imported when the step's code was called, and the descriptors it holds."""
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    with open(out, "w") as f:
        f.write(__import__("json").dumps({"modules": sorted(sys.modules), "fds": fds}))


def leak_without_logging(out):
    print("key is", os.environ["API_TOKEN"])
    os.system("echo child says $API_TOKEN")
    atexit.register(lambda: print("at exit", os.environ["API_TOKEN"]))
    with open(out, "w") as f:
        f.write(str("logging" in sys.modules))


def fail_without_logging(out):
    with open(out, "w") as f:
        f.write(str("logging" in sys.modules))
    raise RuntimeError("no logging here")


def warn_without_logging(out):
    import warnings

    warnings.warn("an old way", UserWarning)
    with open(out, "w") as f:
        f.write(str("logging" in sys.modules))


def log_with_logging(out, context):
    import logging

    logging.getLogger("mine").warning("counted %d rows with %s", 3, os.environ["API_TOKEN"])
    context.logger.info("from the context")
    with open(out, "w") as f:
        f.write(",".join(type(h).__name__ for h in logging.getLogger().handlers))
'''


def step_env(tmp_path: Path, kind: str, target: dict[str, Any], **extra: str) -> dict[str, str]:
    (tmp_path / "start_step.py").write_text(STEP_MODULE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBPLANE_")}
    env.update({"PYTHONPATH": str(tmp_path), rc.ENV_JOB: "nightly", rc.ENV_STEP: "load", rc.ENV_EXECUTION_ID: "exec-7",
                rc.ENV_TARGET: json.dumps({"kind": kind, **target}), "API_TOKEN": SECRET, **extra})
    return env


def run(tmp_path: Path, kind: str, target: dict[str, Any], *before: str,
        **extra: str) -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run([*before, RUNNER, "run", kind], env=step_env(tmp_path, kind, target, **extra),
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_a_function_step_is_called_before_logging_or_threads_are_imported(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    code, lines, err = run(tmp_path, "python", {"target": "start_step:seen", "kwargs": {"out": str(out)}})
    assert code == rc.EXIT_OK, (lines, err)
    modules = set(json.loads(out.read_text())["modules"])
    assert {"jobplane.runner.main", "start_step", "json"} <= modules  # what the step did need is there
    assert modules & NOT_BEFORE_A_FUNCTION == set()
    assert [(l["logger"], l["message"]) for l in lines] == [("jobplane.runner", "step started"),
                                                             ("jobplane.runner", "step succeeded")]
    assert all(l["job"] == "nightly" and l["execution_id"] == "exec-7" for l in lines)


def test_a_shell_step_never_imports_logging(tmp_path: Path) -> None:
    code, lines, err = run(tmp_path, "shell", {"argv": ["sh", "-c", "echo hello from $0"]},
                           sys.executable, "-X", "importtime")
    assert code == rc.EXIT_OK, (lines, err)
    # -X importtime writes to fd 2: the real stderr until the runner captures it, then its log lines
    reports = err.splitlines() + [l["message"] for l in lines if l["logger"] == "jobplane.output"]
    imported = {r.rsplit("|", 1)[1].strip() for r in reports if r.startswith("import time:") and "|" in r}
    assert {"subprocess", "jobplane.runner.targets"} <= imported  # the report is read: a shell step's own
    assert imported & NOT_IN_A_SHELL_STEP == set()
    assert [l["message"] for l in lines if l["logger"] == "jobplane.output" and l.get("stream") == "stdout"
            ] == ["hello from sh"]
    assert lines[-1]["message"] == "step succeeded"


def test_a_step_without_logging_has_its_output_redacted_its_at_exit_output_too(tmp_path: Path) -> None:
    out = tmp_path / "had_logging"
    code, lines, err = run(tmp_path, "python", {"target": "start_step:leak_without_logging",
                                                "kwargs": {"out": str(out)}})
    assert code == rc.EXIT_OK, (lines, err)
    assert out.read_text() == "False"  # the runner's own writer, not logging, wrote these lines
    text = json.dumps(lines) + err
    assert SECRET not in text
    output = [l["message"] for l in lines if l["logger"] == "jobplane.output"]
    assert {"key is [redacted]", "child says [redacted]", "at exit [redacted]"} <= set(output), output


def test_a_step_failing_without_logging_logs_its_traceback(tmp_path: Path) -> None:
    out = tmp_path / "had_logging"
    code, lines, err = run(tmp_path, "python", {"target": "start_step:fail_without_logging",
                                                "kwargs": {"out": str(out)}})
    assert code == rc.EXIT_RETRYABLE, (lines, err)
    assert out.read_text() == "False"
    failed = lines[-1]
    assert (failed["level"], failed["message"], failed["error_type"], failed["retryable"]) == (
        "error", "step failed", "RuntimeError", True)
    assert "RuntimeError: no logging here" in failed["traceback"] and "fail_without_logging" in failed["traceback"]


def test_the_log_level_holds_with_or_without_logging(tmp_path: Path) -> None:
    for target in ("fail_without_logging", "log_with_logging"):
        out = tmp_path / "out"
        code, lines, err = run(tmp_path, "python", {"target": f"start_step:{target}", "kwargs": {"out": str(out)}},
                               JOBPLANE_LOG_LEVEL="warning")
        assert code in (rc.EXIT_OK, rc.EXIT_RETRYABLE), (lines, err)
        assert lines and all(l["level"] in ("warning", "error") for l in lines), lines  # no "step started"
    assert [(l["logger"], l["message"]) for l in lines] == [("mine", "counted 3 rows with [redacted]")]


def test_a_warning_is_a_py_warnings_line_without_logging(tmp_path: Path) -> None:
    out = tmp_path / "had_logging"
    code, lines, err = run(tmp_path, "python", {"target": "start_step:warn_without_logging",
                                                "kwargs": {"out": str(out)}})
    assert code == rc.EXIT_OK, (lines, err)
    assert out.read_text() == "False"
    warned = [l for l in lines if l["logger"] == "py.warnings"]
    assert len(warned) == 1 and warned[0]["level"] == "warning" and "UserWarning: an old way" in warned[0]["message"]


def test_a_step_that_imports_logging_finds_the_runners_handler_alone(tmp_path: Path) -> None:
    out = tmp_path / "handlers"
    code, lines, err = run(tmp_path, "python", {"target": "start_step:log_with_logging",
                                                "kwargs": {"out": str(out)}})
    assert code == rc.EXIT_OK, (lines, err)
    assert len(out.read_text().split(",")) == 1  # the runner's handler alone on the root logger
    mine = [l for l in lines if l["logger"] == "mine"]
    assert [(l["level"], l["message"], l["job"]) for l in mine] == [
        ("warning", "counted 3 rows with [redacted]", "nightly")]
    assert ("jobplane.step", "from the context") in [(l["logger"], l["message"]) for l in lines]
    assert [l["message"] for l in lines if l["logger"] == "jobplane.runner"] == ["step started", "step succeeded"]


class Context:
    aws_request_id = "5f0e6a1c-0000-4000-8000-00000000abcd"
    log_group_name = "/aws/lambda/jobplane-nightly-runner"
    log_stream_name = "2026/12/06/[$LATEST]0123456789abcdef0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def test_a_lambda_steps_runner_is_the_handlers_process_forked_holding_none_of_its_files(tmp_path: Path) -> None:
    """No second interpreter: the step's process has the handler's modules already (a fresh
    ``jobplane-runner`` would not), and none of the handler's open files."""
    out = tmp_path / "seen.json"
    step = {rc.ENV_JOB: "nightly", rc.ENV_STEP: "load",
            rc.ENV_TARGET: json.dumps({"kind": "python", "target": "start_step:seen", "kwargs": {"out": str(out)}})}
    (tmp_path / "start_step.py").write_text(STEP_MODULE)
    function_env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    function_env.update({"PYTHONPATH": str(tmp_path), ls.ENV_STEP_DIGESTS: ls.step_digest(step)})
    held = tmp_path / "held-by-the-handler"
    with open(held, "w") as handler_file, open(tmp_path / "output", "wb") as output:
        assert handler_file.fileno() > 2
        answer = lh.invoke({ls.PAYLOAD_ENVIRONMENT: step}, Context(), function_env, output=output.fileno())
    assert answer["exit_code"] == rc.EXIT_OK
    seen = json.loads(out.read_text())
    assert {"jobplane.runner.lambda_handler", "jobplane.runner.main", "start_step"} <= set(seen["modules"])
    assert str(held) not in seen["fds"].values() and str(tmp_path / "output") in seen["fds"].values()
    lines = [json.loads(line) for line in (tmp_path / "output").read_text().splitlines()]
    assert [l["message"] for l in lines if l["logger"] == "jobplane.runner"] == ["step started", "step succeeded"]


def test_a_lambda_steps_exit_handlers_run_and_the_handler_keeps_none_of_the_steps(tmp_path: Path) -> None:
    import atexit

    out = tmp_path / "had_logging"
    step = {rc.ENV_JOB: "nightly", rc.ENV_STEP: "load", "API_TOKEN": SECRET, rc.ENV_TARGET: json.dumps(
        {"kind": "python", "target": "start_step:leak_without_logging", "kwargs": {"out": str(out)}})}
    (tmp_path / "start_step.py").write_text(STEP_MODULE)
    function_env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    function_env.update({"PYTHONPATH": str(tmp_path), ls.ENV_STEP_DIGESTS: ls.step_digest(step)})
    handlers_before = atexit._ncallbacks()
    with open(tmp_path / "output", "wb") as output:
        answer = lh.invoke({ls.PAYLOAD_ENVIRONMENT: step}, Context(), function_env, output=output.fileno())
    assert answer["exit_code"] == rc.EXIT_OK
    assert atexit._ncallbacks() == handlers_before and "start_step" not in sys.modules  # the child's, not ours
    text = (tmp_path / "output").read_text()
    assert SECRET not in text
    output_lines = [json.loads(line)["message"] for line in text.splitlines()
                    if json.loads(line)["logger"] == "jobplane.output"]
    assert {"key is [redacted]", "child says [redacted]", "at exit [redacted]"} <= set(output_lines), output_lines


def test_a_lambda_invocation_reaches_the_step_without_hashlib_or_traceback(tmp_path: Path) -> None:
    """The handler's process as the local AWS starts it, up to the step's code: its digest check
    by CPython's own SHA-256 (hashlib loads OpenSSL), traceback only for an error it reports."""
    out = tmp_path / "seen.json"
    step = {rc.ENV_JOB: "nightly", rc.ENV_STEP: "load",
            rc.ENV_TARGET: json.dumps({"kind": "python", "target": "start_step:seen", "kwargs": {"out": str(out)}})}
    (tmp_path / "start_step.py").write_text(STEP_MODULE)
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env.update({"PYTHONPATH": str(tmp_path), ls.ENV_STEP_DIGESTS: ls.step_digest(step),
                ls.ENV_LOCAL_DEADLINE: str(time.time() + 600)})
    proc = subprocess.run([sys.executable, "-P", "-m", ls.LOCAL_RUNTIME_MODULE, str(tmp_path / "answer.json")],
                          env=env, input=json.dumps({ls.PAYLOAD_ENVIRONMENT: step}), capture_output=True, text=True,
                          timeout=120)
    assert json.loads((tmp_path / "answer.json").read_text()) == {"result": {
        "exit_code": 0, "log_group": "", "log_stream": "", "request_id": ""}}, proc.stdout + proc.stderr
    modules = set(json.loads(out.read_text())["modules"])
    assert "runpy" in modules  # the handler's own process (run by -m), forked: a fresh runner has no runpy
    assert modules & (NOT_BEFORE_A_FUNCTION | {"hashlib", "_hashlib"}) == set()


def test_a_steps_digest_is_the_sha256_of_its_canonical_json() -> None:
    import hashlib

    step = {rc.ENV_JOB: "nightly", rc.ENV_STEP: "load", "CITY": "Zürich", rc.ENV_ATTEMPT: "3"}
    fixed = {k: v for k, v in step.items() if k != rc.ENV_ATTEMPT}
    canonical = json.dumps(fixed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert ls.step_digest(step) == hashlib.sha256(canonical.encode()).hexdigest()


#: What the runtime interface client has done when it imports the handler on Lambda (``python -m
#: awslambdaric``: its bootstrap.py imports json, logging and traceback and puts its handler on the
#: root logger, https://github.com/aws/aws-lambda-python-runtime-interface-client): the handler
#: imported by name and invoked once, in a process of its own.
CLIENT_STAND_IN = '''
import importlib, json, logging, os, sys, traceback

logging.getLogger().addHandler(logging.StreamHandler(sys.stdout))
module = importlib.import_module("jobplane.runner.lambda_handler")
result = module.handler(json.loads(sys.stdin.read()), module.LocalContext(os.environ))
with open(sys.argv[1], "w") as f:
    f.write(json.dumps(result))
'''


def test_a_lambda_step_under_the_runtime_interface_client_writes_through_logging_without_signal(
        tmp_path: Path) -> None:
    """The step's process as Lambda forks it: ``logging`` is there (the client's), so the runner's
    lines go through it, its handler alone on the root logger (no line in the client's format);
    ``signal.py`` is not (the runner sets its handlers through ``_signal``)."""
    out = tmp_path / "seen.json"
    step = {rc.ENV_JOB: "nightly", rc.ENV_STEP: "load",
            rc.ENV_TARGET: json.dumps({"kind": "python", "target": "start_step:seen", "kwargs": {"out": str(out)}})}
    (tmp_path / "start_step.py").write_text(STEP_MODULE)
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env.update({"PYTHONPATH": str(tmp_path), ls.ENV_STEP_DIGESTS: ls.step_digest(step),
                ls.ENV_LOCAL_DEADLINE: str(time.time() + 600)})
    proc = subprocess.run([sys.executable, "-c", CLIENT_STAND_IN, str(tmp_path / "answer.json")], env=env,
                          input=json.dumps({ls.PAYLOAD_ENVIRONMENT: step}), capture_output=True, text=True, timeout=120)
    assert json.loads((tmp_path / "answer.json").read_text())["exit_code"] == 0, proc.stdout + proc.stderr
    modules = set(json.loads(out.read_text())["modules"])
    assert {"logging", "jobplane.runner.log_bridge", "start_step"} <= modules  # the runner wrote through logging
    assert "signal" not in modules
    lines = [json.loads(line) for line in proc.stdout.splitlines()]  # every line the runner's JSON
    assert [l["message"] for l in lines if l["logger"] == "jobplane.runner"] == ["step started", "step succeeded"]
