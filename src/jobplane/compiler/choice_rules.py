"""Choice rules as small typed objects (the Step Functions Data Science SDK's ``ChoiceRule``
idea): a comparison of one variable, and And / Or / Not of rules; :class:`When` is a top-level
rule with the state it leads to. Each renders the ASL dict in the order the ASL reference
writes it (https://states-language.net/spec.html#choice-state), so a compiled definition is
the same bytes as when these were written by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobplane.contract.types import JsonObject


class Rule:
    def to_dict(self) -> JsonObject:
        raise NotImplementedError


@dataclass(frozen=True)
class Test(Rule):
    """``variable`` compared by ``operator`` (StringEquals, IsPresent, NumericLessThan, ...)."""

    variable: str
    operator: str
    value: str | int | float | bool = True

    def to_dict(self) -> JsonObject:
        return {"Variable": self.variable, self.operator: self.value}


@dataclass(frozen=True)
class And(Rule):
    rules: tuple[Rule, ...]

    def to_dict(self) -> JsonObject:
        return {"And": [r.to_dict() for r in self.rules]}


@dataclass(frozen=True)
class Or(Rule):
    rules: tuple[Rule, ...]

    def to_dict(self) -> JsonObject:
        return {"Or": [r.to_dict() for r in self.rules]}


@dataclass(frozen=True)
class Not(Rule):
    rule: Rule

    def to_dict(self) -> JsonObject:
        return {"Not": self.rule.to_dict()}


@dataclass(frozen=True)
class When:
    """A top-level rule: when ``rule`` holds, go to ``next``."""

    rule: Rule
    next: str

    def to_dict(self) -> JsonObject:
        return {**self.rule.to_dict(), "Next": self.next}


# the comparisons jobplane's state machines make, by name
def present(variable: str) -> Test:
    return Test(variable, "IsPresent")


def is_string(variable: str) -> Test:
    return Test(variable, "IsString")


def is_null(variable: str) -> Test:
    return Test(variable, "IsNull")


def equals(variable: str, value: str) -> Test:
    return Test(variable, "StringEquals", value)


def matches(variable: str, pattern: str) -> Test:
    return Test(variable, "StringMatches", pattern)


def number_equals(variable: str, value: int) -> Test:
    return Test(variable, "NumericEquals", value)


def all_of(*rules: Rule) -> And:
    return And(tuple(rules))


def any_of(*rules: Rule) -> Or:
    return Or(tuple(rules))
