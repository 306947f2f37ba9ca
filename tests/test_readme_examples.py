"""The README's example commands on a fresh platform of the project's own jobs (issue 47, item
6): `jobplane run month-end-close --from-step post-ledger` before any full close fails at once
with a permanent error naming the missing input and the step that writes it (it was retried for
14 minutes as retryable); after a full close, the README's order, it succeeds. And `jobplane
run` says when the next attempt of a failed step starts."""

from __future__ import annotations

import shlex
from datetime import datetime, timezone
from pathlib import Path

from click.testing import CliRunner

from devkit import ROOT

from jobplane.cli import main
from jobplane.cli.operate import attempt_line
from jobplane.contract.attempts import Attempt
from jobplane.contract.catalog import StepRetry
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform


def _commands(text: str) -> list[list[str]]:
    """The `jobplane` commands of a console block that starts with `make dev`, as typed."""
    block = text.split("```console\n$ make dev", 1)[1] if "```console\n$ make dev" in text else \
        text.split("In another terminal:", 1)[1]
    block = block.split("```console\n", 1)[-1].split("```", 1)[0]
    out = []
    for line in block.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("$ .venv/bin/jobplane "):
            out.append(shlex.split(line.removeprefix("$ .venv/bin/jobplane ")))
    return out


def test_the_readme_and_dev_docs_commands_work_as_shown_on_a_fresh_platform(tmp_path: Path) -> None:
    """Each `jobplane` command the README (after `make dev`) and docs/dev.md show, in their
    order, on a fresh platform of the project's own jobs: each exits 0. Before them, the case
    that failed after 14 minutes: month-end-close from post-ledger before any close fails at
    once, a permanent error naming the missing input and the step that writes it."""
    data = tmp_path / "data"
    readme = _commands((ROOT / "README.md").read_text())
    dev_doc = _commands((ROOT / "docs" / "dev.md").read_text())
    assert ["run", "month-end-close"] in readme and ["run", "month-end-close", "--from-step", "post-ledger"] in readme
    assert len(readme) >= 6 and len(dev_doc) >= 4
    platform = DevPlatform(load_config(ROOT), data, 0, 0, run_scheduler=False, run_services=False,
                           snapshot_interval=3600).start()

    def cli(args: list[str]):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(main, ["--root", str(ROOT), *args, "--data-dir", str(data)])

    try:
        r = cli(["run", "month-end-close", "--from-step", "post-ledger"])
        assert r.exit_code == 1, r.output
        assert "post-ledger (attempt 1): failed (exit code 78); not retried (a permanent failure)" in r.output
        assert "(attempt 2)" not in r.output and "FAILED at post-ledger (exit code 78)" in r.output
        logs = cli(["logs", r.output.split("started month-end-close: ", 1)[1].split()[0]])
        assert "invoices.json does not exist: freeze-invoices has not run for this date" in logs.output
        runs: dict[str, str] = {}
        for args in readme + dev_doc:
            if "<execution>" in args:  # a run with a `publish` step: the README's first
                args = [runs["daily-sales-report"] if a == "<execution>" else a for a in args
                        if a not in ("[--step", "S]")]
            r = cli(args)
            assert r.exit_code == 0, (args, r.output)
            if args[0] == "run":
                runs[args[1]] = r.output.split(f"started {args[1]}: ", 1)[1].split()[0]
        assert "publish" in cli(["logs", runs["daily-sales-report"], "--step", "publish"]).output
    finally:
        platform.stop()


def test_a_failed_attempt_says_when_the_next_one_starts() -> None:
    retry = StepRetry(attempts=4, interval=120, backoff=2.0, max_interval=900)
    ended = datetime(2026, 12, 3, 12, 0, 0, tzinfo=timezone.utc).isoformat().replace("+00:00", "Z")

    def row(attempt: int, outcome: str = "failed", code: int | None = 75) -> Attempt:
        return Attempt(step="post-ledger", attempt=attempt, started_at=ended, finished_at=ended, outcome=outcome,
                       exit_code=code)

    assert attempt_line(row(1), retry) == ("  post-ledger (attempt 1): failed (exit code 75); retrying in 2 min "
                                           "(attempt 2 of 4 at 12:02:00 UTC)")
    assert attempt_line(row(2), retry).endswith("retrying in 4 min (attempt 3 of 4 at 12:04:00 UTC)")
    assert attempt_line(row(3), retry).endswith("retrying in 8 min (attempt 4 of 4 at 12:08:00 UTC)")
    assert attempt_line(row(4), retry).endswith("failed (exit code 75); no attempts left")
    assert attempt_line(row(1, code=78), retry).endswith("not retried (a permanent failure)")
    assert attempt_line(row(1, "succeeded", 0), retry) == "  post-ledger (attempt 1): succeeded"
    assert attempt_line(row(1), None) == "  post-ledger (attempt 1): failed (exit code 75)"
