"""What expectations cost a run (docs/expectations.md), measured on the local engine: the same
one-step job with no expectation, with a static one, with a baseline, and with a static one that
warns, each run with the real runner; the state transitions each run entered (its history's
``*StateEntered`` events, what Standard Workflows bill) and the difference from the plain job,
beside what ``jobplane plan`` says (contract/expectations.py), and the DynamoDB requests the
judge makes.

    .venv/bin/python bench/expectations.py

Not a test: it prints figures.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from jobplane.cli.local import engine_log_to_file
from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.contract import expectations as ce
from jobplane.contract.map_transitions import PRICE_PER_TRANSITION
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.timeline import history, state_transitions

TESTS = Path(__file__).resolve().parents[1] / "tests"
LOAD = "sample_apps.expect_steps:load"
CASES = {
    "no expectation": ([], 0),
    "static, passes": ([{"metric": "rows_loaded", "check": ">= 1"}], ce.PER_STEP_STATIC),
    "baseline, passes": ([{"metric": "rows_loaded", "check": ">= 1"},
                          {"metric": "invoices_sent", "check": ">= 0.5 * baseline", "on_fail": "warn"}],
                         ce.PER_STEP_BASELINE),
    "static, warns": ([{"metric": "rows_loaded", "check": ">= 100", "on_fail": "warn"}],
                      ce.PER_STEP_STATIC + ce.PER_WARNING),
}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        engine_log_to_file(Path(tmp))
        # served over HTTP (a free port): the runner subprocess writes its progress there, as under `jobplane dev`
        with LocalAWS(server_port=0, env={"PYTHONPATH": str(TESTS)}) as aws:
            counts: dict[str, int] = {}
            for i, (case, (expect, _)) in enumerate(CASES.items()):
                name = f"bench-expect-{i}"
                job = Job.from_definition({"name": name, "team": "billing", "policy": "ALWAYS_RUN",
                                           "params": {"rows": 12, "invoices": 40},
                                           "steps": [{"name": "load", "python": LOAD, "expect": expect}]})
                aws.deploy(name, asl.compile_job(job, aws.prefix))
                arn = aws.start(name, execution_input.manual("bench", defaults=job.param_defaults))
                ex = aws.wait(arn, timeout=600)
                assert ex.status == "SUCCEEDED", (case, ex)
                counts[case] = state_transitions(history(aws.client("stepfunctions"), arn))
    base = counts["no expectation"]
    print("expectations: state transitions per run of a one-step job (measured on the local engine)")
    for case, (_, planned) in CASES.items():
        extra = counts[case] - base
        print(f"  {case:18} {counts[case]:3} transitions, +{extra} (plan says +{planned}), "
              f"${extra * 1000 * PRICE_PER_TRANSITION:.3f} per 1,000 runs")
    print(f"  DynamoDB per judged step: {ce.READS_STATIC} consistent GetItem (static); "
          f"{ce.READS_BASELINE} GetItems and {ce.WRITES_BASELINE} UpdateItem (baseline)")
    print("  (progress, for comparison: the runner writes at most 1 + duration / 10 s + 1 UpdateItems per "
          "reporting step, docs/progress.md; not measured here)")


if __name__ == "__main__":
    main()
