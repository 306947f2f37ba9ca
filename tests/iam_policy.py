"""A small IAM policy evaluator for the contract tests: identity-policy statements in Terraform's
``aws_iam_policy_document`` shape (``actions``, ``resources`` or ``not_resources``,
``condition`` blocks, ``effect``).

It implements what our policies use, as the IAM reference defines it
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html):
an explicit Deny wins over every Allow; an action or resource matches a pattern with ``*`` and ``?`` (actions case-insensitively); every
condition block of a statement must hold; ``StringEquals``/``ArnEquals`` compare exactly,
``StringLike``/``ArnLike`` with wildcards; a multivalued key (``dynamodb:LeadingKeys``) needs
``ForAllValues:`` (every value matches some pattern; an empty or missing set holds, as on AWS).
A condition on a key the request does not carry fails (single-valued operators), unless its
operator ends ``IfExists`` (it then holds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


def _like(pattern: str, value: str, case: bool = True) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, 0 if case else re.IGNORECASE) is not None


@dataclass(frozen=True)
class Call:
    """One API call a principal makes: action, resource ARN and request context keys."""

    action: str
    resource: str
    context: dict[str, Any] = field(default_factory=dict)
    why: str = ""

    def __str__(self) -> str:
        return f"{self.action} on {self.resource} {self.context or ''} ({self.why})"


def _condition_holds(block: dict[str, Any], context: dict[str, Any]) -> bool:
    test, key, patterns = block["test"], block["variable"], block["values"]
    if test.startswith("ForAllValues:"):
        values = context.get(key) or []
        op = test.split(":", 1)[1]
        return all(any(_single(op, p, v) for p in patterns) for v in values)
    if test == "Null":  # "true": the key is absent from the request; "false": present
        return any((key not in context) == (p == "true") for p in patterns)
    if test.endswith("IfExists"):  # a request without the key holds; with it, the operator decides
        if key not in context:
            return True
        test = test[:-len("IfExists")]
    if key not in context:
        return False
    value = context[key]
    if isinstance(value, list):
        raise AssertionError(f"{key} is multivalued: the policy must use ForAllValues/ForAnyValue")
    return any(_single(test, p, value) for p in patterns)


def _single(op: str, pattern: str, value: str) -> bool:
    if op in ("StringEquals", "ArnEquals"):
        return pattern == value
    if op in ("StringLike", "ArnLike"):
        return _like(pattern, value)
    raise AssertionError(f"condition operator {op} is not implemented by this evaluator")


def statement_matches(statement: dict[str, Any], call: Call) -> bool:
    """The statement applies to the call (whatever its effect): action, resource (or
    ``not_resources``: any other resource) and every condition."""
    if not any(_like(a, call.action, case=False) for a in statement.get("actions", [])):
        return False
    if "not_resources" in statement:
        if any(_like(r, call.resource) for r in statement["not_resources"]):
            return False
    elif not any(_like(r, call.resource) for r in statement.get("resources", [])):
        return False
    return all(_condition_holds(c, call.context) for c in statement.get("condition", []))


def statement_allows(statement: dict[str, Any], call: Call) -> bool:
    return statement.get("effect", "Allow") == "Allow" and statement_matches(statement, call)


def allowed(statements: list[dict[str, Any]], call: Call) -> bool:
    """An explicit Deny wins over any Allow; nothing allowed is denied."""
    if any(s.get("effect") == "Deny" and statement_matches(s, call) for s in statements):
        return False
    return any(statement_allows(s, call) for s in statements)


def denied_calls(statements: list[dict[str, Any]], calls: list[Call]) -> list[str]:
    return [str(c) for c in calls if not allowed(statements, c)]


__all__ = ["Call", "allowed", "denied_calls", "statement_allows"]
