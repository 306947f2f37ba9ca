"""`jobplane dev --faults`: the profile the local AWS runs under, said by the banner, refused by
name when unknown; and our own readers outlast the throttles a profile injects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devkit import make_repo
from jobplane.contract.config import ConfigError, load_config
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.local import faults as local_faults
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.local.faults import Faults
from jobplane.platform.timeline import Patience, history


def test_dev_runs_under_the_profile_and_the_banner_says_which(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    platform = DevPlatform(load_config(tmp_path / "repo"), tmp_path / "data", 0, 0, run_scheduler=False,
                           run_services=False, snapshot_interval=3600, faults="storm", faults_seed=3).start()
    try:
        injector = local_faults.active()
        assert injector is not None and (injector.profile, injector.seed) == ("storm", 3)
        line = next(line for line in platform.banner().splitlines() if "AWS faults" in line)
        assert "storm (seed 3)" in line and "limits enforced" in line
    finally:
        platform.stop()
    assert local_faults.active() is None


def test_an_unknown_profile_in_jobplane_toml_is_refused_naming_the_profiles(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text().replace("[dev]\n", "[dev]\nfaults = \"stormy\"\n", 1))
    with pytest.raises(ConfigError, match="faults: 'stormy' is not a fault profile: one of none, aws-typical, storm"):
        load_config(repo.path)


def test_the_history_readers_outlast_throttles_past_botocores_retries(faults: Faults) -> None:
    """GetExecutionHistory throttled more times in a row than botocore retries (5 tries in its
    legacy mode): the reconciler's reader (timeline.history with Patience) and the engine's own
    wait still read the whole history."""
    with LocalAWS() as aws:
        job = "history"
        aws.deploy(job, json.dumps({"StartAt": "p", "States": {"p": {"Type": "Pass", "End": True}}}))
        arn = aws.start(job, {})
        faults.script("stepfunctions", "GetExecutionHistory", "ThrottlingException", times=7)
        ended = aws.wait(arn)
        assert ended.status == "SUCCEEDED" and ended.states_entered == ["p"]
        faults.script("stepfunctions", "GetExecutionHistory", "ThrottlingException", times=7)
        waited: list[float] = []
        events = history(aws.client("stepfunctions"), arn, Patience(sleep=waited.append))
        assert events[-1]["type"] == "ExecutionSucceeded"
        assert faults.count("stepfunctions", "GetExecutionHistory", "ThrottlingException") == 14
        assert len(waited) >= 1  # Patience waited at least once past botocore's own tries
