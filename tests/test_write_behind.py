"""`jobplane dev`'s start writes its compiled output in a forked child while its local AWS starts
and deploys (devserver/write_behind.py), and the deploy reads the compile's texts, not the
directory as the write has left it so far (contract/output_files.py). The start ends with the
output a compile from nothing writes, a write that fails fails the start with its own error and
leaves nothing running, and a removed team's catalog still on disk is never deployed."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from devkit import make_repo
from jobplane.compiler import fork_workers
from jobplane.compiler.output import compile_all, read_output
from jobplane.contract.catalog import Catalog
from jobplane.contract.config import load_config
from jobplane.contract.output_files import OutputFiles
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.devserver.runtime import DevError, read_runtime
from jobplane.devserver.write_behind import WriteBehind, WriteFailed
from jobplane.platform.local.runner_identity import local_runner_image


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork taken as in `jobplane dev`'s own process (a test worker has threads of its own)."""
    monkeypatch.setattr(fork_workers, "can_fork", lambda: True)


def test_the_write_runs_in_a_child_and_wait_waits_for_it(tmp_path: Path, forking: None) -> None:
    target = tmp_path / "written"

    def write() -> None:
        target.write_text(str(os.getpid()))

    behind = WriteBehind(write)
    behind.wait()
    behind.close()
    assert int(target.read_text()) != os.getpid()


def test_without_a_fork_the_write_is_done_before_it_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fork_workers, "can_fork", lambda: False)
    target, kept = tmp_path / "written", tmp_path / "kept"
    behind = WriteBehind(lambda: target.write_text(str(os.getpid())), lambda: kept.write_text("caches"))
    assert int(target.read_text()) == os.getpid() and kept.read_text() == "caches"
    behind.wait()
    behind.close()


def test_the_writes_error_is_raised_by_wait_as_it_was(tmp_path: Path, forking: None) -> None:
    def write() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))

    behind = WriteBehind(write)
    with pytest.raises(OSError) as raised:
        behind.wait()
    behind.close()
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(tmp_path / "x")


def test_wait_returns_once_the_write_is_done_and_close_once_the_caches_are(tmp_path: Path, forking: None) -> None:
    gate_out, gate_in = os.pipe()
    written, kept = tmp_path / "written", tmp_path / "kept"

    def keep() -> None:
        os.read(gate_out, 1)  # held until this process, past wait(), lets it go on
        kept.write_text("caches")

    behind = WriteBehind(lambda: written.write_text("output"), keep)
    behind.wait()
    assert written.read_text() == "output" and not kept.exists()
    os.write(gate_in, b"x")
    behind.close()
    assert kept.read_text() == "caches"


def test_caches_that_fail_are_logged_and_a_write_that_fails_keeps_nothing(
        tmp_path: Path, forking: None, caplog: pytest.LogCaptureFixture) -> None:
    def no_caches() -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    behind = WriteBehind(lambda: (tmp_path / "written").write_text("output"), no_caches)
    behind.wait()
    behind.close()  # only the next compile is slower: told, not raised
    assert "writing the compile's caches failed" in caplog.text

    def no_output() -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    failing = WriteBehind(no_output, lambda: (tmp_path / "kept").write_text("caches"))
    with pytest.raises(OSError):
        failing.wait()
    failing.close()
    assert not (tmp_path / "kept").exists()


def test_an_error_that_cannot_be_sent_whole_is_told_by_its_text(forking: None) -> None:
    class Local(Exception):  # a class defined here: pickle cannot name it
        pass

    def write() -> None:
        raise Local("the disk went away")

    behind = WriteBehind(write)
    with pytest.raises(WriteFailed, match="Local: the disk went away"):
        behind.wait()


def test_the_reader_sees_the_compiles_files_not_the_directorys(tmp_path: Path) -> None:
    out = tmp_path / "compiled"
    for rel, text in {"teams/gone/catalog.json": "old gone", "teams/kept/catalog.json": "old kept",
                      "teams/kept/roles.tf.json": "kept roles"}.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    every = {"teams/kept/catalog.json", "teams/kept/roles.tf.json", "teams/new/catalog.json",
             "teams/new-b/catalog.json", "teams/kept/a.job.tf.json"}
    being_written = OutputFiles(out, {"teams/kept/catalog.json": "new kept", "teams/new/catalog.json": "new",
                                      "teams/new-b/catalog.json": "new b"}, every)
    # in the directory's order (a path's parts), the removed team's catalog left out
    assert being_written.catalog_parts() == ["teams/kept/catalog.json", "teams/new/catalog.json",
                                             "teams/new-b/catalog.json"]
    assert being_written.read_text("teams/kept/catalog.json") == "new kept"
    assert being_written.read_text("teams/kept/roles.tf.json") == "kept roles"  # not rewritten: on disk
    assert not being_written.is_file("teams/gone/catalog.json") and being_written.is_file("teams/kept/a.job.tf.json")
    on_disk = OutputFiles(out)
    assert on_disk.catalog_parts() == ["teams/gone/catalog.json", "teams/kept/catalog.json"]
    assert on_disk.read_text("teams/kept/catalog.json") == "old kept" and on_disk.is_file("teams/gone/catalog.json")


def test_a_start_deploys_before_its_write_and_writes_what_a_compile_from_nothing_writes(
        tmp_path: Path, forking: None, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(tmp_path / "repo").path
    config = load_config(root)
    # the child writes nothing until the start has deployed: the deploy reads no file of the output
    gate_out, gate_in = os.pipe()
    on_disk_at_deploy: list[list[Path]] = []
    plain_init, plain_wait = WriteBehind.__init__, DevPlatform._output_written

    def held(self: WriteBehind, write: Callable[[], None], then: Callable[[], None] | None = None) -> None:
        def after_the_deploy() -> None:
            os.read(gate_out, 1)
            write()
        plain_init(self, after_the_deploy, then)

    def release(self: DevPlatform) -> None:
        if self._written is not None:
            on_disk_at_deploy.append(sorted(self.output_dir.rglob("*")))
            os.write(gate_in, b"x")
        plain_wait(self)

    monkeypatch.setattr(WriteBehind, "__init__", held)
    monkeypatch.setattr(DevPlatform, "_output_written", release)
    platform = DevPlatform(config, tmp_path / "data", 0, 0, run_scheduler=False, run_services=False,
                           snapshot_interval=3600).start()
    try:
        assert on_disk_at_deploy == [[]]
        assert platform.deploy_handed and not platform.deploy_read  # deployed from the compile's texts
        assert platform.aws is not None and platform.aws.catalog is not None
        assert platform.aws.catalog == Catalog.load(platform.output_dir)
        assert read_output(platform.output_dir) == compile_all(config, runner_image=local_runner_image()).files
    finally:
        platform.stop()
    again = DevPlatform(config, tmp_path / "data", 0, 0, run_scheduler=False, run_services=False,
                        snapshot_interval=3600).start()
    try:
        assert again.compile_reused  # the child wrote the stamp and the caches too
    finally:
        again.stop()


def test_a_start_whose_write_fails_fails_with_that_error_and_leaves_nothing_running(tmp_path: Path,
                                                                                    forking: None) -> None:
    root = make_repo(tmp_path / "repo").path
    data = tmp_path / "data"
    data.mkdir()
    (data / "compiled").write_text("a file where the output directory goes\n")
    platform = DevPlatform(load_config(root), data, 0, 0, run_scheduler=False, run_services=False,
                           snapshot_interval=3600)
    with pytest.raises(OSError) as raised:  # as when the start wrote before it went on
        platform.start()
    assert raised.value.errno in (errno.ENOTDIR, errno.EEXIST)
    with pytest.raises(DevError):
        read_runtime(data)  # never announced as running
    (data / "compiled").unlink()
    again = DevPlatform(load_config(root), data, 0, 0, run_scheduler=False, run_services=False,
                        snapshot_interval=3600).start()  # the failed start left no local AWS behind
    try:
        assert again.jobs and not again.compile_reused
    finally:
        again.stop()
