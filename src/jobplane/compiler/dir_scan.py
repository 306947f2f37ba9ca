"""The one walk over a directory tree that the compile's listings share (the definitions,
compiler/checked.py; every file a compile reads, compiler/inputs.py): one scandir a directory.
``rglob`` with a stat, ``is_file`` or ``resolve`` per file was ~0.9 s of a one-job edit and ~2 s
of a restart's input digest at 5,000 jobs (issue 66 item 5)."""

from __future__ import annotations

import os
from collections.abc import Iterator


def entries(top: str, skip: frozenset[str] = frozenset()) -> Iterator[tuple[tuple[str, ...], os.DirEntry[str]]]:
    """Every entry under ``top`` (directories too), with its path's parts under ``top``, in no
    particular order. It goes into each directory that is not a link and not named in ``skip``;
    a directory it cannot list, or an entry whose type it cannot read, is left out."""
    pending: list[tuple[str, tuple[str, ...]]] = [(top, ())]
    while pending:
        directory, parts = pending.pop()
        try:
            with os.scandir(directory) as it:
                listed = list(it)
        except OSError:
            continue
        for entry in listed:
            try:
                descend = entry.is_dir(follow_symlinks=False) and entry.name not in skip
            except OSError:
                continue
            if descend:
                pending.append((entry.path, (*parts, entry.name)))
            yield (*parts, entry.name), entry
