"""The table of stats a compile takes each input file's digest from (compiler/file_table.py): an
unchanged file is not read again, and every edit is seen, also one that keeps the file's size
and sets its modification time back, or one made in the same clock tick as the file was read."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from jobplane.compiler import file_table
from jobplane.compiler.file_table import FileTable


def later() -> int:
    """A clock past the racy margin: the files written just now count as old enough to record
    (rather than waiting for them to be)."""
    return time.time_ns() + 10 * file_table.RACY_NS


def looked(table_path: Path, file: Path, clock=later) -> tuple[str | None, list[str]]:  # type: ignore[no-untyped-def]
    """A run: the file's digest, and what the run read; then the table saved."""
    table = FileTable(table_path, clock=clock)
    digest = table.digest(str(file))
    table.save()
    return digest, table.read


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_unchanged_file_is_not_read_again(tmp_path: Path) -> None:
    table, job = tmp_path / "cache" / "files.json", tmp_path / "job.jsonnet"
    job.write_text("{ name: 'a' }\n")
    assert looked(table, job) == (sha(job), [str(job)])
    assert looked(table, job) == (sha(job), [])  # its stat as recorded: its digest without a read
    imports = FileTable(table, clock=later)
    assert imports.derived(str(job), "size", len) == len(job.read_bytes()) and imports.read == []
    imports.save()
    assert FileTable(table, clock=later).derived(str(job), "size", lambda text: 0) == len(job.read_bytes())
    job.write_text("{ name: 'b' }\n")
    assert looked(table, job) == (sha(job), [str(job)])


def test_an_edit_keeping_the_size_and_the_modification_time_is_seen(tmp_path: Path) -> None:
    """``touch -r`` (or a tool restoring times) after a same-size edit: the change time moved,
    which no call can set back, so the file is read again."""
    table, job = tmp_path / "cache" / "files.json", tmp_path / "job.jsonnet"
    job.write_text("{ name: 'a' }\n")
    looked(table, job)
    before = os.stat(job)
    time.sleep(0.02)  # the change time is kept in the file system's clock ticks (a few ms)
    with open(job, "r+") as f:  # in place: the same inode
        f.write("{ name: 'b' }\n")
    os.utime(job, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(job)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert looked(table, job) == (sha(job), [str(job)])
    assert "'b'" in job.read_text()


def test_a_file_replaced_by_another_of_the_same_size_and_times_is_seen(tmp_path: Path) -> None:
    table, job, other = tmp_path / "cache" / "files.json", tmp_path / "job.jsonnet", tmp_path / "other"
    job.write_text("{ name: 'a' }\n")
    looked(table, job)
    before = os.stat(job)
    other.write_text("{ name: 'b' }\n")
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, job)  # an editor's save: a new file renamed over the old one
    assert looked(table, job) == (sha(job), [str(job)])


def test_a_file_changed_within_the_racy_margin_is_not_trusted(tmp_path: Path) -> None:
    """A file whose change time is less than RACY_NS older than the run that read it could be
    written again in the same clock tick, keeping every time: its record is not kept, so the
    next run reads it (and keeps it then, once it is old enough)."""
    table, job = tmp_path / "cache" / "files.json", tmp_path / "job.jsonnet"
    job.write_text("{ name: 'a' }\n")
    changed = os.stat(job).st_ctime_ns
    assert looked(table, job, clock=lambda: changed + file_table.RACY_NS // 2)[1] == [str(job)]
    assert looked(table, job)[1] == [str(job)]  # not recorded: read again
    assert looked(table, job)[1] == []  # recorded by the run before, whose clock said it was old


def test_a_table_others_may_write_is_not_read(tmp_path: Path) -> None:
    """A planted record would make a file's result be taken for another content's."""
    table, job = tmp_path / "cache" / "files.json", tmp_path / "job.jsonnet"
    job.write_text("{ name: 'a' }\n")
    looked(table, job)
    os.chmod(table, 0o666)
    assert looked(table, job)[1] == [str(job)]


def test_what_is_not_a_regular_file_has_no_digest(tmp_path: Path) -> None:
    table = FileTable(tmp_path / "files.json")
    (tmp_path / "dir").mkdir()
    assert table.digest(str(tmp_path / "dir")) is None and table.digest(str(tmp_path / "missing")) is None
