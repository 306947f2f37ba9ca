"""What `jobplane dev`'s deploy takes from each job file its compile rendered, made beside the
file, so the first start's deploy reads no job file back (issue 66 item 5).

The local deploy needs, per job, its ASL with its tokens (contract/bindings.py
``asl_of_document``) and the role its schedules pass (contract/schedule_role.py). Read back from
the files that was, per job, a read of its ~68 KB Terraform file, a JSON parse of it and the
un-templating of its ASL: ~40% of a 5,000-job first start's deploy, in the parent alone, while
the compile had rendered those very files moments before from documents it still held. A root's
compile (compiler/root_memo.py, in forked workers when many: root_pool.py) now takes both from the
document each file is rendered from, by the same functions the deploy would run on the file
(a rendered file parses back to that document: ``json.dumps`` of plain JSON data), with the
create's shape check (contract/asl_shape.py) run there too, and hands them up beside the file's
digest. devserver/deploy_record.py uses an entry only for the file it was made from (its
digest and its roles file's equal to those compiled).

The ASL comes back to the parent pickled beside the file that holds it: making the file from the
ASL in the parent instead (binding it for Terraform, escaping it into the document) would cost the
parent ten times what unpickling the ASL's ~38 KB costs (1,500 jobs, CPU: ~0.06 s to unpickle the
ASLs, ~0.7 s to bind and escape them).

So does the job's definition document as the deploy records it (platform/definitions.py: its
canonical JSON, the body of its object in the definitions store), where the root's compile took
its digest now (definitions.stamp): the deploy built and encoded each document again, ~0.45 ms a
job in the parent, ~2.3 s of a 5,000-job first start's ~5 s deploy (/work timeline, session 38).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from jobplane.compiler.shared_roles import ROLES_FILE
from jobplane.contract import definition_digest, layout, schedule_role
from jobplane.contract.asl_shape import shape_problem
from jobplane.contract.bindings import asl_of_document
from jobplane.contract.types import JsonObject


@dataclass(frozen=True)
class RenderedJob:
    """One job file a compile rendered, and what the local deploy would read back from it."""

    file: str  # its path in the output (the catalog entry's ``asl``)
    file_sha: str  # the SHA-256 of the file as rendered
    roles_sha: str | None  # of its root's roles file as rendered (None: the root has none)
    asl: str  # its ASL, tokens included: asl_of_document of the file
    asl_sha: str  # the SHA-256 of ``asl`` in UTF-8
    role: str | None  # the role its schedules pass (the name ScheduleRoles reads from the files)
    shape_checked: bool  # ``asl`` passed contract/asl_shape.py's check
    #: its definition document's canonical JSON (definition_digest.canonical_text), the document
    #: its digest was taken over in this compile (None: the digest was kept, not computed)
    definition: str | None = None


@dataclass
class Rendering:
    """What output.root_files tells of the job files it renders: the document each was rendered
    from, and the ASL already taken out of a document on the way (``asl_of_document``, for its
    definition's digest: compiler/definitions.py), not taken out again."""

    documents: dict[str, JsonObject] = field(default_factory=dict)
    asls: dict[str, str] = field(default_factory=dict)
    definitions: dict[str, JsonObject] = field(default_factory=dict)  # job -> its definition document (stamp's)


def rendered_jobs(name: str, rendering: Rendering, texts: Mapping[str, str],
                  digests: Mapping[str, str]) -> dict[str, RenderedJob]:
    """job -> its entry, for each job file of root ``name`` that ``rendering`` tells of;
    ``texts`` and ``digests``: the root's files rendered and every one's SHA-256."""
    roles_file = f"{layout.team_root(name)}/{ROLES_FILE}"
    roles_text = texts.get(roles_file)
    names = schedule_role.role_names(json.loads(roles_text)) if roles_text is not None else {}
    found: dict[str, RenderedJob] = {}
    for job, doc in rendering.documents.items():
        rel = layout.job_file(name, job)
        asl = rendering.asls.get(job)
        if asl is None:
            asl = asl_of_document(doc)
        definition = rendering.definitions.get(job)
        found[job] = RenderedJob(rel, digests[rel], digests.get(roles_file), asl, hashlib.sha256(asl.encode()).hexdigest(),
                                 schedule_role.role_name(doc, names), shape_problem(asl) is None,
                                 None if definition is None else definition_digest.canonical_text(definition))
    return found
