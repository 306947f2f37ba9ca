"""The one format both of `jobplane dev`'s kept stores use: a JSON index naming, beside it, a
file of bytes its entries point into (devserver/deploy_record.py: the deployed ASL texts;
devserver/definition_archive.py: the recorded definitions). Kept this way because parsing
hundreds of MB as JSON strings was a restart's largest cost; read here so that both refuse a
damaged index the same way (it is ignored whole: it only makes the next start slower)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class IndexedFile:
    index: dict[str, Any]  # the index's whole JSON object (its other fields: the caller's)
    entries: dict[str, dict[str, Any]]  # its entries that are objects, by name
    data: bytes  # the bytes file's content
    data_name: str  # the bytes file's name, beside the index


def read_index(path: Path, fmt: int, entries: str, data: str, prefix: str) -> IndexedFile | None:
    """The index at ``path`` of format ``fmt``, its ``entries`` field, and the bytes file its
    ``data`` field names (a plain name beside it starting ``prefix``); None when any of that
    is missing, of another format or does not parse."""
    try:
        index = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(index, dict) or index.get("format") != fmt or not isinstance(index.get(entries), dict):
        return None
    name = index.get(data)
    if not isinstance(name, str) or not name.startswith(prefix) or "/" in name:
        return None
    try:
        content = (path.parent / name).read_bytes()
    except OSError:
        return None
    return IndexedFile(index, {k: e for k, e in index[entries].items() if isinstance(e, dict)}, content, name)
