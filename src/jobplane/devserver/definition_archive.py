"""The definitions `jobplane dev` recorded, kept across its restarts (issue 66 item 5, session 36).

Each deploy records every deployed job's definition in the catalog bucket, never overwriting
one (platform/definitions.py): the portal's run page, ``jobplane diff`` and re-runs read them by
digest through GetObject. moto keeps S3 in memory, so every start began with an empty bucket and
wrote all of them again: at 5,000 jobs 5,000 PutObjects over HTTP, ~30 s of a restart otherwise
done in ~4 s, and the definitions of earlier compiles (a run from before an edit) were gone.

What was weighed:

- **kept and put back (chosen).** What the deploys recorded is kept here, and the next start puts
  it back into the local S3 before the deploy records (straight into moto's backend:
  moto_patches.Objects, as the deploy's creates are Terraform's, not our runtime's calls), so
  the deploy finds every unchanged definition recorded and writes only new ones. Every
  definition ever deployed on this data directory stays readable, as on AWS, where the bucket
  outlives any deploy; "when first deployed" stays the first start's, not the last one's.
- **written again, faster.** Cheaper per object, but still 5,000 writes a restart, a new "recorded
  at" every start, and the definitions of earlier compiles still lost.
- **built lazily on a read.** The current definitions could be made again from the deploy record
  (catalog entry + ASL) when first read; earlier compiles' could not, and a read path that
  writes is a second store.

Two files beside the deploy record: ``definitions.json``, each key's job, digest, version, and
where its object's bytes are in the bodies file it names, with their SHA-256; and that bodies
file (``definitions-<random>.bin``), the objects' bytes one after the other. As the store, it
only grows: a start's new objects are appended to the bodies file, then the index naming them
replaces the old one (temporary file + rename), so an index never names bytes not yet written.
Never trusted blindly: an object whose bytes do not match their digest, or lie outside the
bodies file, is dropped (logged) and the bodies file written anew without it; an index of another
format, or one that does not parse, is ignored whole (the deploy then records the deployed
definitions again; those of earlier compiles are lost, as they were before this existed).

A version ARN is the one fact an object holds that belongs to a start of the local AWS rather
than to the definition: moto's Step Functions starts empty, so each start publishes every job's
definition again as its version 1. An object put back whose version is not the one this start
published of that very definition (an earlier compile's, whose ARN now names the current one)
is put back without it, as a definition recorded before versions were, and is kept so: a re-run
of it is then refused with the definition's difference instead of starting the wrong one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from jobplane.devserver.indexed_file import read_index
from jobplane.platform.definitions import key as object_key

log = logging.getLogger("jobplane.dev")

ARCHIVE_FILE = "definitions.json"
BODIES_PREFIX = "definitions-"  # the objects' bytes, beside the index: definitions-<random>.bin
FORMAT = 1

Entry = dict[str, str | int | None]


def _sha(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


class DefinitionArchive:
    """``definitions`` for LocalAWS.deploy_output (:meth:`restore`, :meth:`add`); :meth:`save`
    once the deploy is done."""

    def __init__(self, path: Path):
        self.path = path
        self._bodies_name: str | None = None
        self._bodies = b""
        self._entries: dict[str, Entry] = self._read()  # key -> its entry (job, digest, version, at, size, sha)
        self._new: dict[str, tuple[Entry, bytes]] = {}  # objects to append at the save, by key
        self.damaged: list[str] = []  # keys whose kept bytes did not match their digest
        self.restored = 0  # objects put back by this start

    def restore(self, deployed: Mapping[str, tuple[str | None, str | None]]) -> list[tuple[str, bytes | memoryview]]:
        """Each kept object (key, bytes) whose bytes match their digest. ``deployed``: job -> (its
        definition's digest, the ARN of the version this start published of it); an object
        naming another version is given without it (see the module's docstring)."""
        out: list[tuple[str, bytes | memoryview]] = []  # views of the bodies file: moto copies them
        view = memoryview(self._bodies)
        for key, entry in list(self._entries.items()):
            at, size = entry.get("at"), entry.get("size")
            data = (view[at:at + size] if isinstance(at, int) and isinstance(size, int) and at >= 0 and size >= 0
                    and at + size <= len(self._bodies) else None)
            job, digest, version = entry.get("job"), entry.get("digest"), entry.get("version")
            body: bytes | memoryview | None = (data if data is not None and entry.get("sha") == _sha(data)
                                               and _names(key, job, digest) else None)
            if body is not None and version is not None and deployed.get(str(job)) != (digest, version):
                body = _without_version(bytes(body))
                if body is not None:
                    self._new[key] = ({"job": job, "digest": digest, "version": None}, body)
            if body is None:
                log.warning("kept definition %s damaged: not put back", key)
                self.damaged.append(key)
                del self._entries[key]
                continue
            out.append((key, body))
        self.restored = len(out)
        return out

    def add(self, key: str, job: str, digest: str, version: str | None, body: bytes) -> None:
        """An object this deploy recorded, kept at :meth:`save`."""
        self._new[key] = ({"job": job, "digest": digest, "version": version, "sha": _sha(body)}, body)

    def save(self) -> None:
        """Append what is new and write the index naming it; the bodies file is written anew
        when it is missing or held a damaged object. Nothing is written when nothing changed."""
        if not self._new and not self.damaged and self._bodies_name is not None:
            return
        directory = self.path.parent
        try:
            if self._bodies_name is None or self.damaged:
                fd, name = tempfile.mkstemp(prefix=BODIES_PREFIX, suffix=".bin", dir=directory)  # 0600
                kept = {key: (entry, bytes(self._slice(entry))) for key, entry in self._entries.items()
                        if key not in self._new}
                items, mode = {**kept, **self._new}, "wb"
                os.close(fd)
                bodies = directory / name
            else:
                bodies, items, mode = directory / self._bodies_name, self._new, "ab"
            with open(bodies, mode) as f:
                at = f.seek(0, os.SEEK_END)  # after any tail a crash left unnamed
                chunks = []
                for key, (entry, body) in items.items():
                    chunks.append(body)
                    sha = entry.get("sha")
                    self._entries[key] = {"job": entry.get("job"), "digest": entry.get("digest"),
                                          "version": entry.get("version"), "at": at, "size": len(body),
                                          "sha": sha if isinstance(sha, str) else _sha(body)}
                    at += len(body)
                f.write(b"".join(chunks))  # one write: a write per object gave the GIL up 5,000 times
                f.flush()
                os.fsync(f.fileno())
            fd, tmp = tempfile.mkstemp(prefix=".definitions-", dir=directory)  # 0600
            with os.fdopen(fd, "w") as f:
                # one encode in C: json.dump's file path runs the encoder in Python (~0.3 s a 5,000-job start)
                f.write(json.dumps({"format": FORMAT, "bodies": bodies.name, "objects": self._entries}))
            os.replace(tmp, self.path)
        except OSError as e:  # only makes the next start record them again
            log.warning("could not save %s: %s", self.path, e)
            return
        self._bodies_name, self._new, self.damaged = bodies.name, {}, []
        self._bodies = b""  # not read again by this start
        for old in directory.glob(f"{BODIES_PREFIX}*.bin"):  # those no index names any more
            if old.name != bodies.name:
                old.unlink(missing_ok=True)

    def _slice(self, entry: Entry) -> memoryview:
        at, size = int(entry["at"] or 0), int(entry["size"] or 0)
        return memoryview(self._bodies)[at:at + size]

    def _read(self) -> dict[str, Entry]:
        found = read_index(self.path, FORMAT, "objects", "bodies", BODIES_PREFIX)
        if found is None:
            return {}
        self._bodies, self._bodies_name = found.data, found.data_name
        return found.entries


def _names(key: str, job: object, digest: object) -> bool:
    """Whether ``key`` is the store's key of that job's definition ``digest``."""
    try:
        return isinstance(job, str) and isinstance(digest, str) and object_key(job, digest) == key
    except ValueError:  # not a digest
        return False


def _without_version(body: bytes) -> bytes | None:
    """The object with no version (what a definition recorded before versions holds); None when
    it is not a JSON object."""
    try:
        raw = json.loads(body)
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    raw["version"] = None
    return json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
