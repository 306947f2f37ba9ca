"""What the last start of ``jobplane dev`` deployed, so a restart re-reads only what changed.

moto keeps every state machine and schedule in memory: each start of ``jobplane dev`` begins
with an empty local AWS and must create them all again. What made a restart's deploy slow was
not the creates but getting their input: per job, reading its ~60 KB Terraform file, parsing
it and taking the ASL out of its template (un-escaping every interpolation), ~60% of the deploy
at 5,000 jobs (cProfile of LocalAWS.deploy_output). That input is a function of two files of the
compiled output, the job's Terraform file and its team root's ``roles.tf.json`` (the name of the
role its schedules pass, platform/local/compiled_roles.py), so it is kept here per job, keyed by
the SHA-256 of both files' bytes, and handed to the deploy instead of reading them.

The keys come from the output manifest the start computes anyway (each compiled file's digest:
devserver/compiled_stamp.py), so nothing is read twice. Never trusted blindly:

- an entry is used only when both files' digests equal the ones it was made from (an edited
  job, a job whose team's roles changed, a file rewritten by hand: taken from this start's
  compile where it rendered the file, below, else read again);
- each entry holds the digest of its own ASL text, checked before use (a damaged record or
  texts file is read again from the files, never deployed as it is);
- a record of another format, or one that does not parse, is ignored whole;
- a job no longer in the catalog is simply not deployed (moto starts empty), and its entry is
  dropped at the next save.

Every entry's ASL passed the create's definition check (moto_patches/backends.py) when it was
deployed: the record is saved only after the whole deploy succeeded. So a kept entry's ASL is
not checked again (:meth:`DeployRecord.checked`; ~2.5 s of a 5,000-job restart, each definition
parsed), as long as the record was written by the same moto and jobplane (``checked_by``), whose
check it passed; a record of another one is still used for its ASL, and each of its definitions
is checked as it is deployed.

On a first start nothing is kept, nor for a job whose file changed; but this start's compile has
just rendered those files, from documents it held (compiler/rendered_jobs.py). Each one it
rendered comes with the same input taken from that document by the same functions (its ASL as
``asl_of_document`` gives it, its schedules' role as ``ScheduleRoles.name`` reads it) and with
both files' digests as rendered, and is used under the record's own rule: only when those
digests are the ones compiled (and the file is the job's), else the file is read. So a first
start reads no job file back (~40% of its deploy at 5,000 jobs), and the record then keeps what
the compile handed over. The compile also ran the create's shape check on that ASL
(contract/asl_shape.py), so the deploy does not run it again where it is the create's check
(:meth:`DeployRecord.shape_checked`, moto_patches/backends.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from jobplane.contract.catalog import CatalogJob
from jobplane.contract.output_files import OutputFiles
import jobplane
from jobplane.devserver.indexed_file import read_index
from jobplane.platform.local.compiled_roles import ROLES_FILE, ScheduleRoles
from jobplane.platform.local.engine import job_source
from jobplane.platform.local.moto_patches import MOTO_VERSION

if TYPE_CHECKING:  # the compile's (DevPlatform.compile imports the compiler when it runs)
    from jobplane.compiler.rendered_jobs import RenderedJob

log = logging.getLogger("jobplane.dev")

RECORD_FILE = "deployed.json"
TEXTS_PREFIX = "deployed-"  # the ASL texts, beside the record: deployed-<random>.asl
FORMAT = 2
#: whose definition check a record's entries passed
CHECKED_BY = f"jobplane {jobplane.__version__}, moto {MOTO_VERSION}"

Entry = dict[str, str | int | None]


def _sha(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


class DeployRecord:
    """``source`` for LocalAWS.deploy_output; ``save()`` once the deploy is done.

    Two files: ``deployed.json``, each job's key, role, and where its ASL is in the texts file
    it names, with that text's SHA-256; and that texts file, the ASL texts one after the other as
    UTF-8. The texts were JSON strings in the record (format 1): parsing their ~300 MB of
    escaped quotes at 5,000 jobs was ~1.5 s of a restart; read as bytes it is one read, and each
    text's digest is checked on the bytes themselves. A new texts file is written under a new
    name before the record naming it replaces the old record, so a record never names a texts
    file half written; a texts file no record names is removed at the next save."""

    def __init__(self, path: Path, digests: dict[str, str], rendered: Mapping[str, RenderedJob] | None = None):
        self.path = path
        self.digests = digests  # compiled file (relative path) -> SHA-256 of its bytes
        #: job -> what this start's compile took from the job file it rendered (each taken once)
        self._rendered = dict(rendered or {})
        self._checked_by: object = None
        self._texts: bytes = b""  # the kept texts file's bytes
        self._kept = self._read()
        self._entries: dict[str, Entry] = {}
        self._asl: dict[str, bytes | memoryview] = {}  # this deploy's ASL of each entry, as UTF-8
        self.kept: list[str] = []  # jobs deployed from the record
        self._kept_now: set[str] = set()  # the same, to look up
        self.handed: list[str] = []  # jobs deployed from what the compile rendered (no file read)
        self._shape_checked: set[str] = set()  # the same, whose ASL passed the shape check there
        #: the same, whose definition document the compile made (canonical JSON), until recorded
        self._documents: dict[str, str] = {}
        self.read: list[str] = []  # jobs whose files were read (new, changed, or no usable entry)

    def key(self, job: CatalogJob) -> str | None:
        """The digests of the files a job's deploy input comes from, or None when unknown."""
        own = self.digests.get(job.asl)
        if own is None:
            return None
        # its team root's roles file, beside it (string operations: a PurePosixPath per job was
        # ~0.4 s of a 5,000-job restart)
        head, slash, _ = job.asl.rpartition("/")
        roles = self.digests.get(f"{head}/{ROLES_FILE}" if slash else ROLES_FILE, "none")
        return f"{own} {roles}"

    def _kept_text(self, entry: Entry) -> memoryview | None:
        """The entry's ASL bytes in the texts file, if they are there and match their digest."""
        at, size = entry.get("at"), entry.get("size")
        if not isinstance(at, int) or not isinstance(size, int) or at < 0 or size < 0 or at + size > len(self._texts):
            return None
        data = memoryview(self._texts)[at:at + size]
        return data if entry.get("asl_sha") == _sha(data) else None

    def source(self, output: OutputFiles, job: CatalogJob, roles: ScheduleRoles) -> tuple[str, str | None]:
        key = self.key(job)
        entry = self._kept.get(job.name)
        rendered = self._rendered.pop(job.name, None)  # its ASL freed once deployed
        if key is not None and entry is not None and entry.get("key") == key:
            data, role = self._kept_text(entry), entry.get("role")
            if data is not None and (role is None or isinstance(role, str)):
                try:
                    asl = str(data, "utf-8")
                except UnicodeDecodeError:
                    asl = None
                if asl is not None:
                    self._entries[job.name], self._asl[job.name] = entry, data
                    self.kept.append(job.name)
                    self._kept_now.add(job.name)
                    return asl, role
            log.warning("deploy record of %s damaged: not used (%s)", job.name, job.asl)
        if (key is not None and rendered is not None and rendered.file == job.asl
                and key == f"{rendered.file_sha} {rendered.roles_sha or 'none'}"):
            self._asl[job.name] = rendered.asl.encode()
            self._entries[job.name] = {"key": key, "asl_sha": rendered.asl_sha, "role": rendered.role}
            if rendered.definition is not None:
                self._documents[job.name] = rendered.definition
            self.handed.append(job.name)
            if rendered.shape_checked:
                self._shape_checked.add(job.name)
            return rendered.asl, rendered.role
        asl, role = job_source(output, job, roles)
        if key is not None:
            encoded = self._asl[job.name] = asl.encode()
            self._entries[job.name] = {"key": key, "asl_sha": _sha(encoded), "role": role}
        self.read.append(job.name)
        return asl, role

    def checked(self, job: CatalogJob) -> bool:
        """Whether ``job``'s ASL, as :meth:`source` just gave it, passed the create's definition
        check at the start that wrote the record (kept from it, by this same moto and jobplane)."""
        return self._checked_by == CHECKED_BY and job.name in self._kept_now

    def shape_checked(self, job: CatalogJob) -> bool:
        """Whether ``job``'s ASL, as :meth:`source` just gave it, passed contract/asl_shape.py's
        check in this start's compile (compiler/rendered_jobs.py)."""
        return job.name in self._shape_checked

    def document(self, job: CatalogJob) -> str | None:
        """``job``'s definition document as its compile made it, when :meth:`source` just handed
        its ASL from that compile and the compile took its digest (compiler/rendered_jobs.py):
        the deploy's record of definitions encodes it no more (DefinitionStore.to_record).
        Given once, then freed."""
        return self._documents.pop(job.name, None)

    @property
    def changed(self) -> bool:
        """Whether this deploy's entries differ from the record's: a job read from its files or
        taken from the compile, one the record holds and this deploy did not (deleted), or a
        record another moto or jobplane checked."""
        return (bool(self.read) or bool(self.handed) or self._entries.keys() != self._kept.keys()
                or self._checked_by != CHECKED_BY)

    def save(self) -> None:
        """Keep this deploy's entries (the jobs deployed now only), atomically. Not rewritten
        when they are the record's own (every job kept, none gone): ~300 MB at 5,000 jobs,
        ~1.5 s of a restart."""
        if not self.changed:
            return
        directory = self.path.parent
        try:
            fd, texts = tempfile.mkstemp(prefix=TEXTS_PREFIX, suffix=".asl", dir=directory)  # 0600
            jobs: dict[str, Entry] = {}
            with os.fdopen(fd, "wb") as f:
                at = 0
                chunks = []
                for name, entry in self._entries.items():
                    data = self._asl[name]
                    chunks.append(data)
                    jobs[name] = {"key": entry.get("key"), "asl_sha": entry.get("asl_sha"), "role": entry.get("role"),
                                  "at": at, "size": len(data)}
                    at += len(data)
                f.write(b"".join(chunks))  # one write: a write per job gave the GIL up 5,000 times
            fd, tmp = tempfile.mkstemp(prefix=".deployed-", dir=directory)  # 0600
            with os.fdopen(fd, "w") as f:
                # one encode in C: json.dump's file path runs the encoder in Python
                f.write(json.dumps({"format": FORMAT, "checked_by": CHECKED_BY, "texts": Path(texts).name, "jobs": jobs}))
            os.replace(tmp, self.path)
        except OSError as e:  # only makes the next start slower
            log.warning("could not save %s: %s", self.path, e)
            return
        for old in directory.glob(f"{TEXTS_PREFIX}*.asl"):  # those no record names any more
            if old.name != Path(texts).name:
                old.unlink(missing_ok=True)

    def _read(self) -> dict[str, Entry]:
        found = read_index(self.path, FORMAT, "jobs", "texts", TEXTS_PREFIX)
        if found is None:
            return {}
        self._texts = found.data
        self._checked_by = found.index.get("checked_by")
        return found.entries
