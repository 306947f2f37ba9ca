"""The definitions runs ran, kept by digest, never overwritten (issue 69 part 1).

Each deploy records every deployed job's definition document (contract/definition_digest.py) as
one S3 object, ``definitions/<job>/<digest>.json`` in the catalog bucket (the base module's,
versioned and KMS-encrypted; locally the engine's ``<prefix>-catalog``). The object is written
with a conditional PutObject (``If-None-Match: *``): S3 refuses it with 412 Precondition Failed
when the key exists, so a definition once recorded is never replaced, even by two deploys racing
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html). Its key is the
digest of its content, checked before the write, so what a key holds is what the runs stamped
with that digest ran.

`jobplane dev` records at each deploy (platform/local/engine.py ``deploy_output``, straight into
the local AWS's S3 and kept across restarts: devserver/definition_archive.py); on AWS the
pipeline's step after the apply, ``jobplane record-definitions``, does (docs/deploy.md), the
new definitions written WRITERS at a time (one shared client: boto3 clients are thread-safe;
5,000 conditional PutObjects one after the other are 5,000 round trips). The portal's run page
and ``jobplane diff`` read them.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from jobplane.contract import definition_digest
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.types import Client, JsonObject

PREFIX = "definitions/"
CONTENT_TYPE = "application/json"
#: PutObjects in flight at once when a deploy records on AWS (S3 takes thousands a second per prefix)
WRITERS = 8


#: definition_digest.is_digest as one match (its character loop was ~0.3 s of a 5,000-job restart)
_DIGEST = re.compile(r"[0-9a-f]{64}")


def key(job: str, digest: str) -> str:
    if not _DIGEST.fullmatch(digest):
        raise ValueError(f"not a definition digest: {digest[:80]!r}")
    return f"{PREFIX}{job}/{digest}.json"


@dataclass(frozen=True)
class StoredDefinition:
    """One recorded definition: its document, and when, from which commit and with which runner
    image reference it was first deployed (what the deploy that recorded it knew; None: unknown);
    ``version``: the ARN of the Step Functions version published of it (platform/sfn_versions.py),
    which a re-run of one of its runs starts (None: deployed before versions were published)."""

    job: str
    digest: str
    document: JsonObject
    recorded_at: str
    commit: str | None = None
    image: str | None = None
    version: str | None = None

    def to_json(self) -> JsonObject:
        return {"job": self.job, "digest": self.digest, "document": self.document, "recorded_at": self.recorded_at,
                "commit": self.commit, "image": self.image, "version": self.version}

    def body(self) -> bytes:
        """The object's bytes, as the store writes them."""
        return encode_body(self.job, self.digest, definition_digest.canonical_text(self.document), self.recorded_at,
                           self.commit, self.image, self.version)

    @classmethod
    def from_json(cls, raw: JsonObject) -> StoredDefinition:
        doc = raw.get("document")
        def text(name: str) -> str | None:
            value = raw.get(name)
            return value if isinstance(value, str) else None
        return cls(job=str(raw.get("job")), digest=str(raw.get("digest")),
                   document=doc if isinstance(doc, dict) else {}, recorded_at=text("recorded_at") or "",
                   commit=text("commit"), image=text("image"), version=text("version"))


def encode_body(job: str, digest: str, document: str, recorded_at: str, commit: str | None, image: str | None,
                version: str | None) -> bytes:
    """A recorded definition's object: ``json.dumps`` of StoredDefinition.to_json with sorted keys,
    no spaces and no ASCII escapes, its document given as its canonical JSON (the same encoding,
    so the same bytes: tests/test_definition_body.py), which a compile may have made already
    (compiler/rendered_jobs.py) and is not encoded again."""
    def text(value: str | None) -> str:
        return "null" if value is None else _encode_string(value)

    return (f'{{"commit":{text(commit)},"digest":{text(digest)},"document":{document},"image":{text(image)},'
            f'"job":{text(job)},"recorded_at":{text(recorded_at)},"version":{text(version)}}}').encode()


#: json.dumps(value, ensure_ascii=False) of a string, its encoder made once (json.dumps makes one
#: per call when given an option)
_encode_string = json.JSONEncoder(ensure_ascii=False).encode


@dataclass(frozen=True)
class NewDefinition:
    """A definition a deploy records (:meth:`DefinitionStore.to_record`): what its object holds,
    the document as its canonical JSON (definition_digest.canonical_text)."""

    job: str
    digest: str
    document: str
    recorded_at: str
    commit: str | None = None
    image: str | None = None
    version: str | None = None

    def body(self) -> bytes:
        return encode_body(self.job, self.digest, self.document, self.recorded_at, self.commit, self.image, self.version)


class DefinitionMismatch(ValueError):
    """A catalog entry's digest is not the digest of the definition beside it (a catalog and a
    state machine of two compiles): nothing is recorded under a key its content does not match."""


class DefinitionStore:
    def __init__(self, s3: Client, bucket: str):
        self.s3, self.bucket = s3, bucket

    def recorded(self, job: str | None = None) -> set[str]:
        """The keys recorded (of ``job``, or of every job): one listing, so a deploy writes only
        what is new (a dev restart of 5,000 unchanged jobs writes nothing)."""
        prefix = PREFIX + (f"{job}/" if job else "")
        keys: set[str] = set()
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys.update(o["Key"] for o in page.get("Contents", []))
        return keys

    def record(self, jobs: Iterable[tuple[CatalogJob, str]], commit: str | None = None,
               image: str | None = None, now: datetime | None = None,
               versions: Mapping[str, str] | Callable[[CatalogJob, str], str | None] | None = None) -> list[str]:
        """Record each (entry, its ASL as compiled) whose digest is not recorded yet; the keys
        written. An entry without a digest (a catalog from before them) is passed over.
        ``versions``: job -> the ARN of the version the deploy published of it (a mapping, or a
        function of the entry and its ASL, asked only for the definitions recorded now). The new
        ones are written WRITERS at a time (a function's versions asked there too), each
        conditionally (a key another deploy wrote meanwhile is left as it is); the first write
        that fails raises once the others ended."""
        pairs = list(jobs)
        asked = versions if callable(versions) else None  # asked in the writers: ~3 calls to Step Functions each
        new = self.to_record(pairs, self.recorded(), commit, image, now, None if asked else versions)
        asls = {entry.name: (entry, asl) for entry, asl in pairs}

        def put(item: tuple[str, NewDefinition]) -> bool:
            where, stored = item
            if asked is not None:
                stored = replace(stored, version=asked(*asls[stored.job]))
            return self._put_new(where, stored)

        if len(new) < 2:
            return [item[0] for item in new if put(item)]
        with ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="record-definitions") as pool:
            done = list(pool.map(put, new))
        return [where for (where, _), wrote in zip(new, done) if wrote]

    def to_record(self, jobs: Iterable[tuple[CatalogJob, str]], have: set[str], commit: str | None = None,
                  image: str | None = None, now: datetime | None = None,
                  versions: Mapping[str, str] | Callable[[CatalogJob, str], str | None] | None = None,
                  documents: Callable[[CatalogJob], str | None] | None = None,
                  ) -> list[tuple[str, NewDefinition]]:
        """What :meth:`record` writes: each entry whose key is not in ``have`` (the keys recorded),
        with its key, checked against its digest (DefinitionMismatch), in the order given. Also
        for a deploy that writes them its own way (the local engine's, straight into its S3).
        ``documents``: an entry's definition document as canonical JSON where the compile that
        stamped the entry's digest made it from the very document it took that digest over
        (`jobplane dev`: compiler/rendered_jobs.py); that one is not built and checked again."""
        when = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
        new: list[tuple[str, NewDefinition]] = []
        for entry, asl in jobs:
            where = key(entry.name, entry.definition) if entry.definition is not None else None
            if where is None or entry.definition is None or where in have:
                continue
            text = documents(entry) if documents is not None else None
            if text is None:
                doc = definition_digest.document(entry, asl)
                if definition_digest.digest(doc) != entry.definition:
                    raise DefinitionMismatch(f"{entry.name}: the catalog says definition "
                                             f"{definition_digest.short(entry.definition)}, its state machine and entry "
                                             f"make {definition_digest.short(definition_digest.digest(doc))}: "
                                             "compile again (jobplane compile) before recording")
                text = definition_digest.canonical_text(doc)
            version = (versions.get(entry.name) if isinstance(versions, Mapping)
                       else versions(entry, asl) if versions is not None else None)
            new.append((where, NewDefinition(entry.name, entry.definition, text, when, commit, image, version)))
        return new

    def _put_new(self, where: str, stored: NewDefinition) -> bool:
        """Write unless the key exists (S3 conditional write); False when it did."""
        try:
            self.s3.put_object(Bucket=self.bucket, Key=where, IfNoneMatch="*", ContentType=CONTENT_TYPE,
                               Body=stored.body())
        except self.s3.exceptions.ClientError as e:
            if _code(e) in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                return False  # recorded by another deploy: the same digest, the same content
            raise
        return True

    def get(self, job: str, digest: str) -> StoredDefinition | None:
        """The recorded definition, None if it was never recorded (a run from before digests,
        or a deploy that did not record)."""
        if not definition_digest.is_digest(digest):
            return None
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=key(job, digest))["Body"].read()
        except self.s3.exceptions.NoSuchKey:
            return None
        raw = json.loads(body)
        return StoredDefinition.from_json(raw) if isinstance(raw, dict) else None


def _code(error: Any) -> str:
    response = getattr(error, "response", {}) or {}
    return str(response.get("Error", {}).get("Code", ""))
