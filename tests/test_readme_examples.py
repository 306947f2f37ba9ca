"""The README's example commands on a fresh platform of the project's own jobs (issue 47, item
6): `jobplane run month-end-close --from-step post-ledger` before any full close fails at once
with a permanent error naming the missing input and the step that writes it (it was retried for
14 minutes as retryable); after a full close, the README's order, it succeeds. And `jobplane
run` says when the next attempt of a failed step starts."""

from __future__ import annotations

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


def test_month_end_close_from_post_ledger_fails_at_once_on_a_fresh_platform_then_works_after_a_close(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    readme = (ROOT / "README.md").read_text()
    full, from_step = "jobplane run month-end-close  ", "jobplane run month-end-close --from-step post-ledger"
    assert full in readme and from_step in readme and readme.index(full) < readme.index(from_step)
    platform = DevPlatform(load_config(ROOT), data, 0, 0, run_scheduler=False, run_services=False,
                           snapshot_interval=3600).start()

    def cli(*args: str):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(main, ["--root", str(ROOT), *args, "--data-dir", str(data)])

    try:
        r = cli("run", "month-end-close", "--from-step", "post-ledger")
        assert r.exit_code == 1, r.output
        assert "post-ledger (attempt 1): failed (exit code 78); not retried (a permanent failure)" in r.output
        assert "(attempt 2)" not in r.output
        assert "FAILED at post-ledger (exit code 78)" in r.output
        logs = cli("logs", r.output.split("started month-end-close: ", 1)[1].split()[0])
        assert "invoices.json does not exist: freeze-invoices has not run for this date" in logs.output
        r = cli("run", "month-end-close")  # the README's order: a full close first
        assert r.exit_code == 0 and "SUCCEEDED" in r.output, r.output
        r = cli("run", "month-end-close", "--from-step", "post-ledger")
        assert r.exit_code == 0 and "post-ledger (attempt 1): succeeded" in r.output, r.output
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
