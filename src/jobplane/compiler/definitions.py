"""Stamp each compiled job with the digest of its definition (contract/definition_digest.py).

A job's digest needs its rendered state machine and its catalog entry, so it is computed once
both exist (compiler/output.py, per root), then written where every start of the job reads it:
the catalog entry (``definition``: the CLI, the portal, the API and backfills send it) and the
inputs compiled into Terraform (each schedule's target input, each ``after`` rule's input
template). None of those is in the document the digest is taken over, so stamping them changes
no digest.
"""

from __future__ import annotations

from jobplane.compiler.terraform import schedule_target_input
from jobplane.contract import definition_digest, upstream
from jobplane.contract.asl_shape import ShapedAsl, ShapedTemplate
from jobplane.contract.bindings import has_directive, terraform_expressions, token, unbind_terraform
from jobplane.contract.catalog import Catalog, CatalogJob
from jobplane.contract.types import JsonObject


def job_digest(entry: CatalogJob, job_document: JsonObject, asls: dict[str, str] | None = None,
               documents: dict[str, JsonObject] | None = None) -> str:
    """The digest of a job's definition: its catalog entry with its Terraform file's ASL (set in
    ``asls`` under the job's name, when given, and the definition document in ``documents``)."""
    asl = asl_of_document(job_document)
    if asls is not None:
        asls[entry.name] = asl
    document = definition_digest.document(entry, asl)
    if documents is not None:
        documents[entry.name] = document
    return definition_digest.digest(document)


def asl_of_document(document: JsonObject) -> str:
    """bindings.asl_of_document, the same text (the digest covers the ASL with its tokens, and a
    built document holds only its Terraform template), in one split of the template instead of
    a regular expression's Python call per sequence (~40 a job; unbinding was ~0.3 ms a job of
    the roots' files).

    Where the template has no ``%{`` (so no ``%%{`` either), the only sequences Terraform
    reads are ``$${`` and ``${...}``; each ``${`` that is not preceded by ``$`` starts an
    interpolation exactly when a ``}`` follows before any ``{``, and nothing between two
    ``${`` is read. Each such interpolation of a bound expression becomes its token, the rest
    is copied. Any other case (a ``%{``, a ``$`` before ``${``: an escape; an unbound
    expression, which unbind_terraform refuses; a ``${`` it leaves) hands the template to
    unbind_terraform itself, so the answer, or the error, is always its."""
    resources = document["resource"]
    assert isinstance(resources, dict)
    ((tf_id, machine),) = resources["aws_sfn_state_machine"].items()
    template = machine["definition"]
    expressions = terraform_expressions(tf_id, own_task_definition="aws_ecs_task_definition" in resources)
    if has_directive(template):
        return unbind_terraform(template, expressions)
    names = {e: n for n, e in expressions.items()}  # as unbind_terraform reads them
    parts = template.split("${")
    out = [parts[0]]
    for before, after in zip(parts, parts[1:]):
        end = after.find("}")
        if before.endswith("$") or end < 0 or "{" in after[:end] or after[:end] not in names:
            return unbind_terraform(template, expressions)
        out += (token(names[after[:end]]), after[end + 1:])
    # the template of a ShapedAsl, read back here by the exact inverse of its binding (no
    # ``%{``, no ``$`` before ``${``: no escape was made, each ``${...}`` is a token's), so it is
    # that text, whose shape verdict it keeps (contract/asl_shape.py)
    return ShapedAsl("".join(out)) if type(template) is ShapedTemplate else "".join(out)


#: The runner image a compile is told of (the pipeline: the image its apply deploys, as
#: immutable a reference as it has): in each job's definition (contract/definition_digest.py).
RUNNER_IMAGE_ENV = "JOBPLANE_RUNNER_IMAGE"


def runner_image_from_environment() -> str | None:
    import os

    return os.environ.get(RUNNER_IMAGE_ENV) or None


def stamp(catalog: Catalog, documents: dict[str, JsonObject],
          image: str | None = None, known: dict[str, str] | None = None,
          asls: dict[str, str] | None = None,
          definition_documents: dict[str, JsonObject] | None = None) -> tuple[Catalog, dict[str, JsonObject]]:
    """The catalog with each job's ``definition`` set (and its ``runner_image``, ``image``, which
    the digest covers), and each job's Terraform document with its inputs carrying it (new
    objects: a document kept between compiles is not changed). ``known``: job -> its digest,
    where the caller knows it (compiler/root_memo.py: a job whose file, root, image, code and
    jobplane.toml are unchanged has the digest it had), so it is not computed again. ``asls``:
    filled in with job -> its ASL as taken out of its document for its digest (stamping leaves
    the state machine as it is: it is also ``asl_of_document`` of the stamped document), and
    ``definition_documents`` with job -> its definition document, for each digest computed now."""
    entries: list[CatalogJob] = []
    stamped: dict[str, JsonObject] = {}
    for entry in catalog.jobs:
        doc = documents[entry.name]
        digest = (known or {}).get(entry.name)
        if digest is None:
            # the digest reads the entry with its image (the document's "image"; a plain string
            # field, no validator): a copy with it set, not validated and dumped a second time
            digest = job_digest(entry.model_copy(update={"runner_image": image}) if image else entry, doc, asls,
                                definition_documents)
        # both fields set at once on a copy: the entry was validated when it was built, and the two
        # are plain strings (CatalogJob has no validator), which a copy marks as set as a
        # validation of its dump did; dumping and validating every entry again was ~60 us a job
        # of its root's files (CPU)
        entries.append(entry.model_copy(update={**({"runner_image": image} if image else {}), "definition": digest}))
        stamped[entry.name] = stamp_document(doc, entry.params, digest)
    for name, doc in documents.items():  # a document without an entry (none today) is kept as it is
        stamped.setdefault(name, doc)
    return catalog.model_copy(update={"jobs": entries}), stamped


def stamp_document(doc: JsonObject, params: JsonObject, digest: str) -> JsonObject:
    """``doc`` with its schedules' and rules' inputs carrying ``digest``."""
    resources = doc.get("resource")
    if not isinstance(resources, dict):
        return doc
    changed: JsonObject = {}
    schedules = resources.get("aws_scheduler_schedule")
    if isinstance(schedules, dict):
        changed["aws_scheduler_schedule"] = {
            key: {**s, "target": {**s["target"], "input": schedule_target_input(params, digest)}}
            for key, s in schedules.items() if isinstance(s, dict) and isinstance(s.get("target"), dict)}
    targets = resources.get("aws_cloudwatch_event_target")
    if isinstance(targets, dict):
        changed["aws_cloudwatch_event_target"] = {
            key: {**t, "input_transformer": {**t["input_transformer"],
                                             "input_template": upstream.input_template(digest)}}
            if isinstance(t, dict) and isinstance(t.get("input_transformer"), dict) else t
            for key, t in targets.items()}
    if not changed:
        return doc
    return {**doc, "resource": {**resources, **changed}}
