"""Time from process start to the user's function being called, next to `python -c` as the floor:
the runner as an ECS task starts it (``jobplane-runner run python``), and a Lambda step's cold
path (the handler's process started, its module imported, the first invocation answered by
forking the runner: runner/lambda_handler.py), in one run. Then where each one's time goes
(its imports by package, from ``python -X importtime``).

    .venv/bin/python bench/runner_start.py [-n 20] [--against /tmp/main/src]

(``--against``: another tree's code measured in the same runs, interleaved, for a before and after
on one machine state: ``mkdir /tmp/main && git archive main src | tar -x -C /tmp/main``.)

Target (issue 66 item 2): <= 2.5x the floor, both.

Both measure wall time from just before the process is spawned to the same statement writing
time.time() to a file: ``python -c`` runs it as its program, the runner as the body of a step's
function in a module that imports only ``time``, so the ratio is the runner's own cost (a real
step's module pays for its own imports either way). Medians of N runs and their ratio, in one run.

The ECS runner is started through its console script as pip writes it (which imports ``re``
itself). The Lambda handler runs as the local AWS runs it (``python -P -m
jobplane.runner.lambda_handler ANSWER``, the event on stdin: platform/local/lambda_agent.py;
without ``-P`` the bench's working directory was searched before every import of the handler's),
which is the runtime interface client's start (an interpreter, ``runpy`` for ``-m``) plus the
handler's import and first invocation, whose runner is a child forked from the handler (no
second interpreter).

On Lambda the handler is imported by the runtime interface client (``python -m awslambdaric``:
contract/lambda_step.py IMAGE_ENTRY_POINT), which has imported ``json`` (with ``re`` and
``enum``), ``logging`` (its root logger holding the client's handler), ``traceback``,
``decimal`` and ``concurrent.futures`` before it imports the handler
(https://github.com/aws/aws-lambda-python-runtime-interface-client, awslambdaric/bootstrap.py,
lambda_runtime_client.py, lambda_runtime_marshaller.py). So the local process above charges the
handler for imports that on Lambda are the client's, and it never takes the path a step takes
on Lambda, where its forked runner finds ``logging`` imported and writes through it
(runner/logs.py). The third figure is that cold start: a stand-in for the client (those
standard-library imports, its root handler, then the handler imported by name and invoked;
not its C extension, simplejson or HTTP), and the handler's share of it, from the client's
import of the handler to the step's function: what jobplane adds to any Python function's cold
start, put over the floor as the ECS runner's whole start is (floor + share).

The package's bytecode is compiled first, and the virtualenv's, as ``pip install`` does in the
runner's image, and the step's module's: on a machine with PYTHONDONTWRITEBYTECODE set (this
one), every module would otherwise be compiled from source on every start and measured with it
(the step's module was, until issue 66 item 2's second pass: a cost of the step's, not the runner's).
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
    argv = [sys.executable, "-P", "-m", ls.LOCAL_RUNTIME_MODULE, str(tmp / "answer.json")]  # as lambda_agent.py runs it
    return argv, function_env, json.dumps({ls.PAYLOAD_ENVIRONMENT: step}).encode()


#: What the stand-in writes on stderr before it imports the handler.
SHARE_STARTS = "client stand-in: the handler's import starts"
#: The stand-in for ``python -m awslambdaric jobplane.runner.lambda_handler.handler`` (module
#: docstring): argv MARK ANSWER HANDLER; the time the handler's import starts goes to MARK.
CLIENT_STAND_IN = """
import decimal, importlib, json, logging, math, os, sys, time, traceback
from concurrent.futures import ThreadPoolExecutor

mark, answer, handler_name = sys.argv[1:4]
SHARE_STARTS = {share_starts}
logging.Formatter.converter = time.gmtime  # bootstrap.py _setup_logging: the root logger's handler
root_handler = logging.StreamHandler(sys.stdout)
root_handler.setFormatter(logging.Formatter("[%(levelname)s]\\t%(asctime)s.%(msecs)03dZ\\t%(message)s\\n",
                                            "%Y-%m-%dT%H:%M:%S"))
logging.getLogger().addHandler(root_handler)
if "importtime" in sys._xoptions:  # where_the_time_goes: the reports after this line are the handler's share
    sys.stderr.write(SHARE_STARTS + "\\n")
with open(mark, "w") as f:
    f.write(repr(time.time()))
module_name, function_name = handler_name.rsplit(".", 1)
module = importlib.import_module(module_name)  # bootstrap.py _get_handler
handler = getattr(module, function_name)
event = json.loads(sys.stdin.read())
result = handler(event, module.LocalContext(os.environ))
with open(answer, "w") as f:
    f.write(json.dumps(result))
"""


def client_invocation(tmp: Path, function_env: dict[str, str]) -> tuple[list[str], dict[str, str], Path]:
    """The stand-in client's command (run with ``-m``, as the image's entry point runs the
    client), its environment and the file it marks the handler's import in."""
    (tmp / "client_stand_in.py").write_text(CLIENT_STAND_IN.replace("{share_starts}", repr(SHARE_STARTS)))
    mark = tmp / "handler_import"
    argv = [sys.executable, "-m", "client_stand_in", str(mark), str(tmp / "answer.json"), ls.HANDLER]
    return argv, dict(function_env), mark


def where_the_time_goes(argv: list[str], env: dict[str, str], stdin: bytes | None = None, top: int = 8,
                        after: str | None = None) -> str:
    """A process's imports (``-X importtime``), self times summed by top-level package: the
    reports on its stderr (from the line ``after`` on, if given), and on its stdout where a
    runner's capture turned them into log lines (or a forked runner writes them before it captures)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], env=env, capture_output=True, input=stdin)
    lines = done.stderr.decode(errors="replace").splitlines()
    if after is not None:
        lines = lines[lines.index(after):]
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
    ap.add_argument("--against", type=Path, metavar="SRC",
                    help="another tree's src/ directory (e.g. `git archive main src | tar -x -C /tmp/main`, then "
                         "/tmp/main/src), measured interleaved with this one's: its jobplane first on PYTHONPATH")
    args = ap.parse_args()
    n = args.n
    runner = str(Path(sys.executable).parent / "jobplane-runner")
    compileall.compile_dir(ROOT / "src" / "jobplane", quiet=1)
    compileall.compile_dir(sysconfig.get_paths()["purelib"], quiet=2)  # skips what is compiled already
    if args.against:
        compileall.compile_dir(args.against / "jobplane", quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "called"
        floor_code = f"import time; open({str(out)!r}, 'w').write(repr(time.time()))"
        (Path(tmp) / "bench_step.py").write_text(
            "import time\n\n\ndef mark_called(out):\n    open(out, 'w').write(repr(time.time()))\n")
        env = dict(os.environ, PYTHONPATH=tmp,
                   JOBPLANE_TARGET=json.dumps({"kind": "python", "target": "bench_step:mark_called",
                                               "kwargs": {"out": str(out)}}))
        handler, function_env, event = lambda_invocation(Path(tmp), env)
        client, client_env, mark = client_invocation(Path(tmp), function_env)
        compileall.compile_dir(tmp, quiet=1)  # the step's module (its own cost either way), the client's
        trees = {"": (env, function_env, client_env)}
        if args.against:
            first = {"PYTHONPATH": f"{args.against.resolve()}{os.pathsep}{tmp}"}
            trees[f" [{args.against}]"] = (dict(env, **first), dict(function_env, **first), dict(client_env, **first))
        once([sys.executable, "-c", floor_code], env, out)  # warm the page cache
        for e, fe, ce in trees.values():
            once([runner, "run", "python"], e, out)
            once(handler, fe, out, event)
            once(client, ce, out, event)
        floor: list[float] = []
        times: dict[tuple[str, str], list[float]] = defaultdict(list)
        for _ in range(n):  # interleaved: a busy moment of the machine slows all alike
            floor.append(once([sys.executable, "-c", floor_code], env, out))
            for tree, (e, fe, ce) in trees.items():
                times[tree, "ecs"].append(once([runner, "run", "python"], e, out))
                times[tree, "lambda"].append(once(handler, fe, out, event))
                times[tree, "client"].append(once(client, ce, out, event))
                times[tree, "share"].append(float(out.read_text()) - float(mark.read_text()))
        where = where_the_time_goes([runner, "run", "python"], env)
        where_lambda = where_the_time_goes(handler[1:], function_env, event)
        where_share = where_the_time_goes(client[1:], client_env, event, after=SHARE_STARTS)
    f = statistics.median(floor)
    print(f"python -c (floor):                    median {f * 1000:.1f} ms over {n} runs")
    for tree in trees:
        r, la, c, share = (statistics.median(times[tree, k]) for k in ("ecs", "lambda", "client", "share"))
        print(f"jobplane-runner to function (ECS):    median {r * 1000:.1f} ms = {r / f:.2f}x the floor "
              f"(target <= 2.5: {'met' if r / f <= 2.5 else 'NOT met'}){tree}")
        print(f"Lambda, the local engine's process:   median {la * 1000:.1f} ms = {la / f:.2f}x the floor "
              f"(an interpreter for the handler, runpy and json ours here, the runner forked from it){tree}")
        print(f"Lambda cold start, client stand-in:   median {c * 1000:.1f} ms = {c / f:.2f}x the floor "
              f"(the runtime interface client's imports included){tree}")
        print(f"  the handler's share of it:          median {share * 1000:.1f} ms; floor + share = "
              f"{(f + share) / f:.2f}x the floor (target <= 2.5: {'met' if (f + share) / f <= 2.5 else 'NOT met'}; "
              f"its import, the invocation, the runner forked, to the function){tree}")
    print(f"where the ECS runner's time goes: {where}")
    print(f"where the Lambda path's time goes: {where_lambda}")
    print(f"where the handler's share goes: {where_share}")


if __name__ == "__main__":
    main()
