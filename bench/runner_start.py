"""Time from process start to the user's function being called, next to `python -c` as the floor:
the runner as an ECS task starts it (``jobplane-runner run python``), and a Lambda step's cold
path (the handler's process started, its module imported, the first invocation answered by
forking the runner: runner/lambda_handler.py), in one run. Then where each one's time goes
(its imports by package, from ``python -X importtime``).

    .venv/bin/python bench/runner_start.py [-n 20]

Target (issue 66 item 2): <= 2.5x the floor, both.

Both measure wall time from just before the process is spawned to the same statement writing
time.time() to a file: ``python -c`` runs it as its program, the runner as the body of a step's
function in a module that imports only ``time``, so the ratio is the runner's own cost (a real
step's module pays for its own imports either way). Medians of N runs and their ratio, in one run.

The ECS runner is started through its console script as pip writes it (which imports ``re``
itself). The Lambda handler runs as the local AWS runs it (``python -m
jobplane.runner.lambda_handler ANSWER``, the event on stdin: platform/local/lambda_agent.py),
which is the runtime interface client's start (an interpreter, ``runpy`` for ``-m``) plus the
handler's import and first invocation, whose runner is a child forked from the handler (no
second interpreter); on Lambda the client's own import comes on top.

The package's bytecode is compiled first, and the virtualenv's, as ``pip install`` does in the
runner's image: on a machine with PYTHONDONTWRITEBYTECODE set (this one), every module would
otherwise be compiled from source on every start and measured with it.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from jobplane.contract import lambda_step as ls

ROOT = Path(__file__).resolve().parents[1]


def once(argv: list[str], env: dict[str, str], out: Path, stdin: bytes | None = None) -> float:
    out.unlink(missing_ok=True)
    start = time.time()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, input=stdin)
    return float(out.read_text()) - start


def lambda_invocation(tmp: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str], bytes]:
    """The handler's command, its function's environment and the event of one attempt of the
    bench's step (the step's environment deployed for it: its digest among the function's)."""
    step = {"JOBPLANE_JOB": "bench", "JOBPLANE_STEP": "mark", "JOBPLANE_TARGET": env["JOBPLANE_TARGET"]}
    function_env = dict(env, **{ls.ENV_STEP_DIGESTS: ls.step_digest(step),
                                ls.ENV_LOCAL_DEADLINE: str(time.time() + 3600)})
    function_env.pop("JOBPLANE_TARGET")
    argv = [sys.executable, "-m", "jobplane.runner.lambda_handler", str(tmp / "answer.json")]
    return argv, function_env, json.dumps({ls.PAYLOAD_ENVIRONMENT: step}).encode()


def where_the_time_goes(argv: list[str], env: dict[str, str], stdin: bytes | None = None, top: int = 8) -> str:
    """A process's imports (``-X importtime``), self times summed by top-level package: the
    reports on its stderr, and on its stdout where a runner's capture turned them into log lines
    (or a forked runner writes them before it captures)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], env=env, capture_output=True, input=stdin)
    lines = done.stderr.decode(errors="replace").splitlines()
    for line in done.stdout.decode(errors="replace").splitlines():
        if line.startswith("{"):
            line = json.loads(line).get("message", "")
        lines.append(line)
    by_package: dict[str, int] = defaultdict(int)
    for line in lines:
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            self_us, _, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
            by_package[name.split(".")[0] if not name.startswith("jobplane") else ".".join(name.split(".")[:3])] += \
                int(self_us)
    shown = ", ".join(f"{name} {us / 1000:.1f}" for name, us in sorted(by_package.items(), key=lambda kv: -kv[1])[:top])
    return f"imports {sum(by_package.values()) / 1000:.0f} ms in {len(by_package)} packages; the largest (ms): {shown}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20)
    n = ap.parse_args().n
    runner = str(Path(sys.executable).parent / "jobplane-runner")
    compileall.compile_dir(ROOT / "src" / "jobplane", quiet=1)
    compileall.compile_dir(sysconfig.get_paths()["purelib"], quiet=2)  # skips what is compiled already
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "called"
        floor_code = f"import time; open({str(out)!r}, 'w').write(repr(time.time()))"
        (Path(tmp) / "bench_step.py").write_text(
            "import time\n\n\ndef mark_called(out):\n    open(out, 'w').write(repr(time.time()))\n")
        env = dict(os.environ, PYTHONPATH=tmp,
                   JOBPLANE_TARGET=json.dumps({"kind": "python", "target": "bench_step:mark_called",
                                               "kwargs": {"out": str(out)}}))
        handler, function_env, event = lambda_invocation(Path(tmp), env)
        once([sys.executable, "-c", floor_code], env, out)  # warm the page cache
        once([runner, "run", "python"], env, out)
        once(handler, function_env, out, event)
        floor, runner_times, lambda_times = [], [], []
        for _ in range(n):  # interleaved: a busy moment of the machine slows all alike
            floor.append(once([sys.executable, "-c", floor_code], env, out))
            runner_times.append(once([runner, "run", "python"], env, out))
            lambda_times.append(once(handler, function_env, out, event))
        where = where_the_time_goes([runner, "run", "python"], env)
        where_lambda = where_the_time_goes(handler[1:], function_env, event)
    f, r, la = statistics.median(floor), statistics.median(runner_times), statistics.median(lambda_times)
    print(f"python -c (floor):                    median {f * 1000:.1f} ms over {n} runs")
    print(f"jobplane-runner to function (ECS):    median {r * 1000:.1f} ms = {r / f:.2f}x the floor "
          f"(target <= 2.5: {'met' if r / f <= 2.5 else 'NOT met'})")
    print(f"Lambda handler, cold, to function:    median {la * 1000:.1f} ms = {la / f:.2f}x the floor "
          f"(target <= 2.5: {'met' if la / f <= 2.5 else 'NOT met'}; an interpreter for the handler, "
          "the runner forked from it)")
    print(f"where the ECS runner's time goes: {where}")
    print(f"where the Lambda path's time goes: {where_lambda}")


if __name__ == "__main__":
    main()
