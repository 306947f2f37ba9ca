"""The base module (terraform/platform/*.tf) read with python-hcl2, for tests that check what it
says against what the code does: its Lambda roles' policies with every reference resolved to
the ARN AWS would give it (account 123456789012, us-east-1, prefix "jobplane" - the names the
embedded local AWS also uses), and its resources' settings."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import hcl2

MODULE = Path(__file__).resolve().parents[1] / "terraform" / "platform"
ACCOUNT, REGION, PREFIX = "123456789012", "us-east-1", "jobplane"
KMS_KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/0000aaaa-bbbb-cccc-dddd-eeeeffff0000"


def _clean(value: Any) -> Any:
    """python-hcl2 keeps string quotes and marks blocks: give plain values back."""
    if isinstance(value, str):
        return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items() if k not in ("__comments__", "__is_block__")}
    return value


@lru_cache(maxsize=1)
def module() -> dict[str, dict[str, dict[str, Any]]]:
    """{"resource": {type: {name: body}}, "data": {...}, "variable": {...}} over every .tf file."""
    out: dict[str, dict[str, dict[str, Any]]] = {"resource": {}, "data": {}, "variable": {}}
    for path in sorted(MODULE.glob("*.tf")):
        doc = _clean(hcl2.loads(path.read_text()))
        for kind in ("resource", "data"):
            for block in doc.get(kind, []):
                for rtype, named in block.items():
                    out[kind].setdefault(rtype, {}).update(named)
        for block in doc.get("variable", []):
            out["variable"].update(block)
    return out


def resource(rtype: str, name: str) -> dict[str, Any]:
    return module()["resource"][rtype][name]


def _name(rtype: str, name: str, vars: dict[str, str]) -> str:
    body = resource(rtype, name)
    if "bucket_prefix" in body:  # Terraform appends a unique suffix; this is the one tests use
        return resolve(body["bucket_prefix"], vars) + "0test"
    return resolve(body["name"], vars)


ARNS = {  # resource type -> its ARN, from the resource's name
    "aws_dynamodb_table": lambda n: f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{n}",
    "aws_sns_topic": lambda n: f"arn:aws:sns:{REGION}:{ACCOUNT}:{n}",
    "aws_sqs_queue": lambda n: f"arn:aws:sqs:{REGION}:{ACCOUNT}:{n}",
    "aws_cloudwatch_log_group": lambda n: f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{n}",
    "aws_lambda_function": lambda n: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{n}",
    "aws_s3_bucket": lambda n: f"arn:aws:s3:::{n}",
    "aws_scheduler_schedule_group": lambda n: f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule-group/{n}",
}


def _reference(ref: str, vars: dict[str, str]) -> str:
    ref = ref.replace("[0]", "")  # one instance of a counted resource
    if ref in vars or ref.removeprefix("var.") in vars:  # what only the test knows (a rule's ARN, a nested variable)
        return vars.get(ref) or vars[ref.removeprefix("var.")]
    parts = ref.split(".")
    if parts[0] == "var":
        return vars.get(parts[1], PREFIX if parts[1] == "name_prefix" else "")
    if parts[0] == "local":
        return {"account": ACCOUNT, "region": REGION, "partition": "aws"}[parts[1]]
    if parts[0] == "aws_kms_key" and parts[2] == "arn":
        return KMS_KEY_ARN
    if parts[0] in ARNS and parts[2] == "arn":
        return ARNS[parts[0]](_name(parts[0], parts[1], vars))
    if parts[0] in ARNS and parts[2] in ("name", "id"):  # an S3 bucket's id is its name
        return _name(parts[0], parts[1], vars)
    raise AssertionError(f"no value for ${{{ref}}} in this test's resolver")


def resolve(value: Any, vars: dict[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\$\{([a-z_][a-z0-9_.\[\]]*)\}", lambda m: _reference(m[1], vars), value)
    if isinstance(value, list):
        return [resolve(v, vars) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, vars) for k, v in value.items()}
    return value


def raw_statements(document: str) -> list[dict[str, Any]]:
    """A document's statements as written, its source documents' (at any depth) first."""
    doc = module()["data"]["aws_iam_policy_document"][document]
    out: list[dict[str, Any]] = []
    for source in doc.get("source_policy_documents", []):
        m = re.fullmatch(r"\$\{data\.aws_iam_policy_document\.(\w+)\.json\}", source)
        assert m, f"source_policy_documents entry {source!r} is not a form this reader knows"
        out += raw_statements(m[1])
    return out + list(doc.get("statement", []))


def policy_statements(document: str, vars: dict[str, str]) -> list[dict[str, Any]]:
    """An aws_iam_policy_document's statements, dynamic ones included when their for_each
    (a condition on a variable) holds for ``vars``."""
    doc = module()["data"]["aws_iam_policy_document"][document]
    statements = raw_statements(document)  # its source documents' merged first, as Terraform does
    for block in doc.get("dynamic", []):
        for _, dynamic in block.items():
            for_each = dynamic["for_each"]
            m = re.fullmatch(r'\$\{var\.(\w+) == "" \? \[\] : \[var\.\1\]\}', for_each)
            assert m, f"for_each {for_each!r} is not a form this reader knows"
            value = vars.get(m[1], "")
            if value:
                for content in dynamic["content"]:
                    statements.append({k: (v if v != ["${statement.value}"] else [value]) for k, v in content.items()})
    return [resolve(s, vars) for s in statements]
