"""compiler/blob_pack.py: many kept blobs in one append-only pack; a blob whose bytes are not
those kept (damaged, cut short) is reported missing, never returned, and nothing is read from
files others could write."""

from __future__ import annotations

import os
from pathlib import Path

from jobplane.compiler.blob_pack import BlobPack

A, B, C = b"a" * 1000, b"b" * 2000, b"c" * 3000


def saved(directory: Path, blobs: dict[str, bytes], keep: set[str] | None = None) -> BlobPack:
    pack = BlobPack(directory, "built-x")
    for name, blob in blobs.items():
        pack.put(name, blob)
    pack.save(keep if keep is not None else pack.names())
    pack.close()
    return BlobPack(directory, "built-x")


def pack_file(directory: Path) -> Path:
    (found,) = directory.glob("built-x-*.pack")
    return found


def test_blobs_read_back_and_a_save_appends_only_what_was_put(tmp_path: Path) -> None:
    first = saved(tmp_path, {"a": A, "b": B})
    assert (first.get("a"), first.get("b"), first.get("c")) == (A, B, None)
    path = pack_file(tmp_path)
    assert oct(path.stat().st_mode & 0o777) == "0o600" and path.stat().st_size == len(A) + len(B)
    again = saved(tmp_path, {"c": C})
    assert pack_file(tmp_path) == path and path.stat().st_size == len(A) + len(B) + len(C)
    assert (again.get("a"), again.get("b"), again.get("c")) == (A, B, C)
    assert oct((tmp_path / "built-x.index").stat().st_mode & 0o777) == "0o600"


def test_a_damaged_or_torn_blob_is_missing_the_others_are_read(tmp_path: Path) -> None:
    saved(tmp_path, {"a": A, "b": B, "c": C})
    path = pack_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[len(A) + 5] ^= 1  # in b
    path.write_bytes(bytes(data[:-1]))  # and c cut short
    pack = BlobPack(tmp_path, "built-x")
    assert (pack.get("a"), pack.get("b"), pack.get("c")) == (A, None, None)
    # put again, they are read back; the damaged ones are not copied into a new pack
    pack.put("b", B)
    pack.save({"a", "b"})
    again = BlobPack(tmp_path, "built-x")
    assert (again.get("a"), again.get("b"), again.get("c")) == (A, B, None)


def test_a_damaged_index_or_files_others_may_write_are_not_read(tmp_path: Path) -> None:
    saved(tmp_path, {"a": A})
    index = tmp_path / "built-x.index"
    os.chmod(pack_file(tmp_path), 0o620)
    assert BlobPack(tmp_path, "built-x").get("a") is None
    os.chmod(pack_file(tmp_path), 0o600)
    os.chmod(index, 0o666)
    assert BlobPack(tmp_path, "built-x").get("a") is None
    os.chmod(index, 0o600)
    assert BlobPack(tmp_path, "built-x").get("a") == A
    text = index.read_text()
    index.write_text(text.replace(pack_file(tmp_path).name, "../" + pack_file(tmp_path).name))
    assert BlobPack(tmp_path, "built-x").get("a") is None
    index.write_text(text[:-1])
    assert BlobPack(tmp_path, "built-x").get("a") is None


def test_a_pack_mostly_of_dropped_blobs_is_written_anew(tmp_path: Path) -> None:
    saved(tmp_path, {"a": A, "b": B, "c": C})
    old = pack_file(tmp_path)
    kept = saved(tmp_path, {}, keep={"a", "c"})  # 2,000 of 6,000 bytes no longer named: kept
    assert pack_file(tmp_path) == old and (kept.get("a"), kept.get("b"), kept.get("c")) == (A, None, C)
    anew = saved(tmp_path, {}, keep={"a"})  # 5,000 of 6,000: a new pack of a alone, the old one gone
    assert pack_file(tmp_path) != old and not old.exists() and pack_file(tmp_path).stat().st_size == len(A)
    assert anew.get("a") == A and anew.get("c") is None
