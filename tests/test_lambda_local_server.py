"""A Lambda step on the local AWS's HTTP server, as ``jobplane dev`` runs it (its own module: the
server's moto backends are the process's, which an in-process engine of another module shares)."""

from __future__ import annotations

from pathlib import Path

from test_lambda_local import HERE, run_step

from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.logs import StepLogs


def test_the_server_jobplane_dev_runs_answers_a_lambda_step_the_same(tmp_path: Path) -> None:
    """Over HTTP (``jobplane dev``): the interpreter's Invoke reaches the agent through the front."""
    with LocalAWS(env={"PYTHONPATH": str(HERE)}, log_dir=tmp_path / "logs", server_port=0) as server:
        out = tmp_path / "g.json"
        execution, rows, _ = run_step(server, "sample_apps.functions:write_greeting", {"out": str(out)})
        assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
        (stream,) = StepLogs(server.client("logs"), server.log_group).streams(rows)
        assert '"message": "step succeeded"' in stream.read()
    # `jobplane dev` started again on the same data directory: the step's log is back in its
    # function's log group (made by the first invocation, so not there before it: the restart
    # once failed on the missing group)
    with LocalAWS(env={"PYTHONPATH": str(HERE)}, log_dir=tmp_path / "logs", server_port=0) as again:
        (stream,) = StepLogs(again.client("logs"), again.log_group).streams(rows)
        assert '"message": "step succeeded"' in stream.read()
    # and `jobplane logs` while jobplane dev is stopped: the data directory's cache
    from jobplane.platform.local.awslogs import LogCache

    (cached,) = LogCache(tmp_path / "logs").streams(execution.arn.rsplit(":", 1)[1])
    assert (cached.step, cached.task_id, cached.log_stream) == ("load", rows[0].task_id, rows[0].log_stream)
    text = cached.read()
    assert '"message": "step succeeded"' in text and "RequestId" not in text

