"""Every Lambda function jobplane deploys (the base module's, and any a compiled root declares)
runs the one current runtime of jobplane.contract.lambda_runtimes, and no runtime in use is
within six months of the deprecation date AWS published for it (issue 49, item 2): after that
date Lambda blocks creating and then updating such functions, so an apply would fail
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html#runtime-support-policy)."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from typing import Any

import base_module as bm
from conftest import ROOT

from jobplane.contract.lambda_runtimes import CURRENT_RUNTIME, MARGIN_DAYS, RUNTIMES, too_close


def compiled_runtimes() -> dict[str, str]:
    """file -> runtime of every .zip aws_lambda_function in the compiled roots of this repository
    (every such function must name its runtime; an image function has none)."""
    from jobplane.compiler.output import compile_all
    from jobplane.contract.config import load_config

    found: dict[str, str] = {}
    for path, text in compile_all(load_config(ROOT)).files.items():
        if not path.endswith(".tf.json"):
            continue
        doc: dict[str, Any] = json.loads(text)
        for name, fn in doc.get("resource", {}).get("aws_lambda_function", {}).items():
            if fn.get("package_type") == "Image":
                continue  # a container image brings its own Python: no managed runtime to retire
            found[f"{path}:{name}"] = fn["runtime"]
    return found


def base_module_runtimes() -> dict[str, str]:
    return {f"terraform/platform:{name}": fn["runtime"]
            for name, fn in bm.module()["resource"]["aws_lambda_function"].items()}


def test_every_function_runs_the_current_runtime() -> None:
    used = base_module_runtimes() | compiled_runtimes()
    assert len(used) >= 4  # the base module's reconciler, notifier, periodic check and portal session
    assert {where: r for where, r in used.items() if r != CURRENT_RUNTIME} == {}


def test_no_runtime_in_use_is_within_six_months_of_its_deprecation() -> None:
    today = datetime.now(timezone.utc).date()
    used = base_module_runtimes() | compiled_runtimes() | {"CURRENT_RUNTIME": CURRENT_RUNTIME}
    assert {where: why for where, r in used.items() if (why := too_close(r, today))} == {}


def test_the_margin_refuses_a_runtime_near_its_end_and_an_unknown_one() -> None:
    # the published python3.11 row: deprecated 2027-06-30
    assert too_close("python3.11", date(2027, 1, 1)) is not None
    assert too_close("python3.11", date(2026, 12, 28)) is None  # 184 days before
    assert "not in" in (too_close("python3.9", date(2026, 1, 1)) or "")
    for r in RUNTIMES.values():  # each row as the AWS table orders its dates
        assert r.deprecation < r.block_create < r.block_update and r.identifier == f"python{r.python}"
    assert MARGIN_DAYS >= 182
