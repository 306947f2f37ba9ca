"""The runner's Lambda handler called as Lambda calls it: ``handler(event, context)`` with a
context object of Lambda's shape, the runner a real child process (contract/lambda_step.py)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from jobplane.contract import lambda_step as ls
from jobplane.contract import runner as rc
from jobplane.runner import lambda_handler as lh

HERE = Path(__file__).resolve().parent
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class Context:
    """Lambda's context object: the fields the handler reads, and a clock of remaining time."""

    def __init__(self, seconds: float = 60.0, request_id: str = "5f0e6a1c-0000-4000-8000-00000000abcd"):
        self.aws_request_id = request_id
        self.log_group_name = "/aws/lambda/jobplane-nightly-runner"
        self.log_stream_name = "2026/12/03/[$LATEST]0123456789abcdef0123456789abcdef"
        self._deadline = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def step_environment(target: str, kwargs: dict[str, Any] | None = None, **extra: str) -> dict[str, str]:
    """What the compiled Task's Payload.environment holds (compiler/overrides.py container_env)."""
    spec: dict[str, Any] = {"kind": "python", "target": target}
    if kwargs:
        spec["kwargs"] = kwargs
    return {rc.ENV_JOB: "nightly", rc.ENV_TEAM: "billing", rc.ENV_STEP: "load", rc.ENV_ATTEMPT: "1",
            rc.ENV_STEP_TIMEOUT: "60", rc.ENV_TARGET: json.dumps(spec, sort_keys=True, separators=(",", ":")),
            rc.ENV_EXECUTION_ID: "exec-1", rc.ENV_SCHEDULED_TIME: "2026-12-03T02:00:00Z", rc.ENV_TRIGGER: "schedule",
            rc.ENV_PARAMS: "{}", rc.ENV_TRACEPARENT: TRACEPARENT, **extra}


def function_env(*steps: dict[str, str], **extra: str) -> dict[str, str]:
    """The function's own environment as deployed: the OS basics, the digests of its steps."""
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return {**base, "PYTHONPATH": str(HERE), ls.ENV_STEP_DIGESTS: ",".join(ls.step_digest(s) for s in steps), **extra}


def call(env: dict[str, str], fenv: dict[str, str], tmp_path: Path, context: Context | None = None,
         **kwargs: Any) -> tuple[dict[str, Any] | Exception, list[dict[str, Any]]]:
    out = tmp_path / "function-output"
    with open(out, "wb") as f:
        try:
            result: dict[str, Any] | Exception = lh.invoke({ls.PAYLOAD_ENVIRONMENT: env}, context or Context(), fenv,
                                                           output=f.fileno(), **kwargs)
        except (lh.JobplaneStepFailed, lh.JobplaneStepFailedPermanently) as e:
            result = e
    return result, [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def test_error_classes_are_named_as_the_contract_says() -> None:
    assert lh.JobplaneStepFailed.__name__ == ls.ERROR_RETRYABLE
    assert lh.JobplaneStepFailedPermanently.__name__ == ls.ERROR_PERMANENT


def test_a_step_that_succeeds_answers_its_exit_code_and_log_stream(tmp_path: Path) -> None:
    env = step_environment("sample_apps.functions:write_greeting", {"out": str(tmp_path / "g.json")})
    context = Context()
    result, lines = call(env, function_env(env), tmp_path, context)
    assert result == {"exit_code": 0, "log_group": context.log_group_name, "log_stream": context.log_stream_name,
                      "request_id": context.aws_request_id}
    assert json.loads((tmp_path / "g.json").read_text()) == {"text": "hello, world"}
    # the runner's own JSON lines, with the run's identity and the trace continued
    assert [(l["logger"], l["message"]) for l in lines if l["logger"] == "jobplane.output"] == [
        ("jobplane.output", "hello, world")]
    assert lines[-1]["message"] == "step succeeded"
    assert all(l["execution_id"] == "exec-1" and l["trace_id"] == TRACEPARENT.split("-")[1] for l in lines)


def test_an_exception_is_a_retryable_error_carrying_the_answer(tmp_path: Path) -> None:
    env = step_environment("sample_apps.functions:boom")
    result, lines = call(env, function_env(env), tmp_path)
    assert type(result).__name__ == ls.ERROR_RETRYABLE
    answer = ls.Answer.from_json(str(result))
    assert answer is not None and answer.exit_code == rc.EXIT_RETRYABLE
    assert answer.log_stream == Context().log_stream_name
    assert any(l.get("error_type") == "ConnectionError" for l in lines)


def test_a_target_that_cannot_run_is_a_permanent_error(tmp_path: Path) -> None:
    env = step_environment("sample_apps.functions:NOT_CALLABLE")
    result, _ = call(env, function_env(env), tmp_path)
    assert type(result).__name__ == ls.ERROR_PERMANENT
    assert json.loads(str(result))["exit_code"] == rc.EXIT_PERMANENT


def test_a_payload_the_function_was_not_deployed_for_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "called"
    deployed = step_environment("sample_apps.functions:write_greeting", {"out": str(tmp_path / "g.json")})
    fenv = function_env(deployed)
    # another callable of the image, as anyone allowed to invoke the function could send it
    attacks = [
        step_environment("sample_apps.functions:mark_called", {"out": str(marker)}),
        {**deployed, rc.ENV_TARGET: json.dumps({"kind": "python", "target": "sample_apps.functions:mark_called",
                                                "kwargs": {"out": str(marker)}})},
        {**deployed, "PYTHONSTARTUP": str(marker)},  # a name the step does not declare
        {**deployed, "JOBPLANE_TIMEOUT_MARGIN_SECONDS": "100000"},  # a runner setting outside the contract
        {**deployed, rc.ENV_TARGET: json.dumps({"kind": "shell", "argv": ["touch", str(marker)]})},
        {**deployed, rc.ENV_EXECUTION_ID: "x" * 81},
    ]
    for attack in attacks:
        result, lines = call(attack, fenv, tmp_path)
        assert type(result).__name__ == ls.ERROR_PERMANENT, attack
        assert json.loads(str(result))["exit_code"] == rc.EXIT_PERMANENT
        assert lines[-1]["logger"] == "jobplane.lambda" and lines[-1]["message"].startswith("invocation refused")
    for event in ([], {"environment": {"A": 1}}, {"environment": {}, "more": 1}, "x"):
        with pytest.raises(lh.JobplaneStepFailedPermanently):
            lh.invoke(event, Context(), fenv, output=os.open(os.devnull, os.O_WRONLY))
    # a function deployed without digests runs nothing at all
    result, _ = call(deployed, {k: v for k, v in fenv.items() if k != ls.ENV_STEP_DIGESTS}, tmp_path)
    assert type(result).__name__ == ls.ERROR_PERMANENT
    assert not marker.exists() and not (tmp_path / "g.json").exists()


def test_the_run_time_values_change_without_changing_the_digest() -> None:
    env = step_environment("a.b:c")
    later = {**env, rc.ENV_ATTEMPT: "3", rc.ENV_EXECUTION_ID: "exec-2", rc.ENV_PARAMS: '{"day":"2026-12-01"}'}
    assert ls.step_digest(env) == ls.step_digest(later)
    assert ls.step_digest(env) != ls.step_digest({**env, rc.ENV_STEP_TIMEOUT: "61"})


def test_declared_secrets_are_read_given_to_the_step_and_redacted(tmp_path: Path) -> None:
    env = step_environment("sample_apps.functions:leaky", **{ls.ENV_STEP_SECRETS: "DB_PASSWORD"})
    arns = {"DB_PASSWORD": "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf"}
    store = {arns["DB_PASSWORD"]: "hunter2-very-secret"}
    fenv = function_env(env, **{ls.ENV_SECRET_SOURCES: json.dumps(arns)})
    result, lines = call(env, fenv, tmp_path, read_secret=store.__getitem__)
    assert type(result).__name__ == ls.ERROR_RETRYABLE
    text = json.dumps(lines)
    assert "hunter2-very-secret" not in text and text.count("[redacted]") >= 3
    # a secret that cannot be read: the attempt does not start, as ECS fails a task to start
    result, lines = call(env, fenv, tmp_path, read_secret={}.__getitem__)
    assert type(result).__name__ == ls.ERROR_PERMANENT
    assert "secret DB_PASSWORD" in lines[-1]["message"]


def test_the_step_gets_the_functions_environment_less_the_handlers_own(tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    env = step_environment("sample_apps.functions:record_env", {"out": str(out)}, REPORT_DAY="monday")
    fenv = function_env(env, AWS_REGION="ap-northeast-1", AWS_LAMBDA_RUNTIME_API="127.0.0.1:9001",
                        _HANDLER="jobplane.runner.lambda_handler.handler")
    result, _ = call(env, fenv, tmp_path)
    assert isinstance(result, dict) and result["exit_code"] == 0
    seen = json.loads(out.read_text())
    assert seen["AWS_REGION"] == "ap-northeast-1" and seen["REPORT_DAY"] == "monday"
    assert seen["PYTHONPATH"] == str(HERE)
    assert not {"AWS_LAMBDA_RUNTIME_API", "_HANDLER", ls.ENV_STEP_DIGESTS} & set(seen)


def test_a_step_still_running_when_the_function_runs_out_of_time_is_stopped(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    env = step_environment("sample_apps.functions:slow", {"ready": str(ready), "seconds": 120})
    started = time.monotonic()
    result, lines = call(env, function_env(env), tmp_path, Context(seconds=lh.STOP_SECONDS + 1))
    assert time.monotonic() - started < 60  # a hang guard, not a budget
    assert ready.exists()  # it ran
    assert type(result).__name__ == ls.ERROR_PERMANENT
    assert json.loads(str(result))["exit_code"] == rc.EXIT_TERMINATED
    messages = [l["message"] for l in lines]
    assert any(m.startswith("stopping the step") for m in messages) and "stopped by SIGTERM" in messages
    assert not _alive(int(ready.read_text()))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_the_handler_module_needs_no_runtime_interface_client() -> None:
    import subprocess

    code = ("import sys; import jobplane.runner.lambda_handler as h; "
            "assert 'awslambdaric' not in sys.modules and 'boto3' not in sys.modules; print(h.handler.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "handler", out.stderr


def test_the_runner_image_is_also_the_lambda_image() -> None:
    """What only a build shows is not built here (no Docker): the Dockerfile is read. The
    function's image_config starts the runtime interface client with the handler (the compiled
    Terraform, contract/lambda_step.py); the image must hold both and stay the ECS image."""
    import re

    text = (HERE.parent / "src" / "jobplane" / "runner" / "Dockerfile").read_text()
    assert ls.IMAGE_ENTRY_POINT == ("python", "-m", "awslambdaric")
    # the client installed as locked, with hashes, aside, and reachable by `python -m awslambdaric`
    assert "--require-hashes --target /opt/jobplane-lambda -r /tmp/jobplane-lambda.txt" in text
    assert re.search(r"echo /opt/jobplane-lambda > .*purelib.*/jobplane-lambda\.pth", text)
    assert 'python -c "import awslambdaric, jobplane.runner.lambda_handler"' in text
    lock = (HERE.parent / "requirements" / "lambda.txt").read_text()
    assert re.search(r"^awslambdaric==\d+\.\d+\.\d+ \\$", lock, re.M) and "--hash=sha256:" in lock
    assert "requirements/lambda.in" in (HERE.parent / "Makefile").read_text()
    # one stage, no entrypoint: the state machine's ECS command runs as sent
    assert len(re.findall(r"^FROM ", text, re.M)) == 1 and "ENTRYPOINT []" in text
    module, _, function = ls.HANDLER.rpartition(".")
    assert module == ls.LOCAL_RUNTIME_MODULE == lh.__name__ and getattr(lh, function) is lh.handler


def test_a_directory_on_a_pth_line_comes_after_the_images_own_packages(tmp_path: Path) -> None:
    """Why a .pth and not PYTHONPATH: a site directory's .pth lines are appended to sys.path, so
    the client's own dependencies never shadow the application's."""
    import subprocess

    site_dir, aside, own = tmp_path / "site", tmp_path / "aside", tmp_path / "own"
    for d in (site_dir, aside, own):
        d.mkdir()
    (aside / "shared_dep.py").write_text("WHO = 'aside'\n")
    (aside / "only_aside.py").write_text("WHO = 'aside'\n")
    (own / "shared_dep.py").write_text("WHO = 'own'\n")
    (site_dir / "jobplane-lambda.pth").write_text(f"{aside}\n")
    code = (f"import site, sys; sys.path.insert(0, {str(own)!r}); site.addsitedir({str(site_dir)!r}); "
            "import shared_dep, only_aside; print(shared_dep.WHO, only_aside.WHO)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["own", "aside"], out.stderr
