"""A backfill survives a restart of `jobplane dev`: it is kept with the table's records, and the
restarted platform's own driver finishes it with nobody following it. Its own module: moto's
backends are per process, so these platforms must not run beside test_backfill.py's."""

from __future__ import annotations

import time
from pathlib import Path

from devkit import backfill_repo
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.backfill_model import FireState, Status

ME = "aiko@example.com"


def test_a_backfill_survives_a_restart_of_jobplane_dev_and_its_driver_finishes_it(tmp_path: Path) -> None:
    config = load_config(backfill_repo(tmp_path / "repo"))

    def start() -> DevPlatform:
        return DevPlatform(config, tmp_path / "data", 0, 0, run_scheduler=False, run_services=False,
                           snapshot_interval=3600).start()

    first = start()
    try:
        held = first.control.run_now("serial", ME, {"mode": "wait", "release": str(tmp_path / "never"), "seconds": 600})
        deadline = time.monotonic() + 300  # hang guard
        while not (first.control.repo.job_state("serial") and first.control.repo.job_state("serial").running):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        bf = first.backfills.create("serial", ME, "2026-10-01T00:00:00Z", "2026-10-01T01:59:00Z",
                                    reason="across a restart")
        assert all(f.state == FireState.PENDING for f in first.backfills.tick(bf.id).fires)  # the claim is held
    finally:
        first.stop()  # the held run ends ABORTED; the backfill is saved with the table
    second = start()
    try:
        assert second.control.execution(held).status == "ABORTED"
        deadline = time.monotonic() + 600  # hang guard: nobody follows it, the platform's driver moves it on
        while second.backfills.get(bf.id).status != Status.COMPLETED:
            assert time.monotonic() < deadline, second.backfills.get(bf.id)
            time.sleep(0.2)
        done = second.backfills.get(bf.id)
        assert [(f.at, f.status) for f in done.fires] == [("2026-10-01T00:30:00Z", "SUCCEEDED"),
                                                          ("2026-10-01T01:30:00Z", "SUCCEEDED")]
    finally:
        second.stop()
