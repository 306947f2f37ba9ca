"""A recorded definition's object is the same bytes whichever way its document arrives: encoded
by the deploy (StoredDefinition.body, DefinitionStore.to_record) or handed as the canonical JSON
its compile made (platform/definitions.py encode_body, compiler/rendered_jobs.py). Checked
against ``json.dumps`` of the whole object, the encoding the store has always written."""

from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from jobplane.contract import definition_digest
from jobplane.platform.definitions import NewDefinition, StoredDefinition, encode_body

texts = st.text(max_size=40)  # any code point: quotes, backslashes, controls, non-ASCII, surrogates excepted
maybe = st.none() | texts
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
                           max_leaves=20)
documents = st.dictionaries(texts, json_values, max_size=6)


def reference(job: str, digest: str, document: object, recorded_at: str, commit: str | None, image: str | None,
              version: str | None) -> bytes:
    return json.dumps({"job": job, "digest": digest, "document": document, "recorded_at": recorded_at,
                       "commit": commit, "image": image, "version": version},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@settings(max_examples=300, deadline=None)
@given(texts, texts, documents, texts, maybe, maybe, maybe)
def test_the_object_is_json_dumps_of_the_record_whichever_way_the_document_comes(
        job: str, digest: str, document: dict[str, object], recorded_at: str, commit: str | None,
        image: str | None, version: str | None) -> None:
    expected = reference(job, digest, document, recorded_at, commit, image, version)
    assert StoredDefinition(job, digest, document, recorded_at, commit, image, version).body() == expected  # type: ignore[arg-type]
    handed = definition_digest.canonical_text(document)  # type: ignore[arg-type]
    assert NewDefinition(job, digest, handed, recorded_at, commit, image, version).body() == expected
    assert encode_body(job, digest, handed, recorded_at, commit, image, version) == expected


def test_a_real_definition_document_with_its_asl_encodes_the_same() -> None:
    asl = json.dumps({"Comment": "tab\there \"quoted\" \\ back, ünïcödé ✓", "StartAt": "A",
                      "States": {"A": {"Type": "Pass", "End": True}}}, indent=2)
    document = {"format": definition_digest.FORMAT, "job": {"name": "nightly", "schedule": ["cron(0 3 * * ? *)"]},
                "asl": asl, "image": "jobplane-runner:local"}
    stored = StoredDefinition("nightly", definition_digest.digest(document), document, "2026-12-07T09:00:00Z",
                              None, "jobplane-runner:local", "arn:aws:states:us-east-1:123456789012:stateMachine:x:1")
    assert stored.body() == reference(stored.job, stored.digest, document, stored.recorded_at, None,
                                      stored.image, stored.version)
    assert json.loads(stored.body())["document"] == document
