"""Typed Amazon States Language states, one class per state type, and the graph that holds them.

The builder in :mod:`jobplane.compiler.asl` makes these objects instead of dicts, so a state
cannot carry a field its type does not have, a transition is a name the graph checks, and
``End`` is derived: a state without ``next`` ends its branch. ``to_dict`` writes the fields in
one fixed order (Type, Comment, Resource, Parameters, Branches, ResultSelector, ResultPath,
TimeoutSeconds, Retry, Catch, Next/End), which keeps the compiled bytes stable.
(After the AWS Step Functions Data Science SDK's ``steps/states.py``.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Iterator, Union

from jobplane.compiler.choice_rules import When
from jobplane.contract.types import JsonObject

#: ``ResultPath: null``: keep the state's input, discard its result (distinct from "no ResultPath").
class _Discard:
    """``ResultPath: null``: the state's result is dropped (None already means "the default")."""


DISCARD = _Discard()
#: Where a state puts its result: a path, DISCARD, or None for the default ($).
ResultPath = Union[str, _Discard, None]


@dataclass(frozen=True)
class Retry:
    """One Retry rule of a Task: the errors it matches, how many more tries, how far apart
    (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html). Only
    what is set is written, in the order the ASL reference lists the fields."""

    errors: tuple[str, ...]
    max_attempts: int
    interval: int | None = None
    backoff: float | None = None
    max_delay: int | None = None
    full_jitter: bool = False

    def to_dict(self) -> JsonObject:
        """Made once per rule object (frozen; mostly module constants, in nearly every Task of
        every job): the same dict each time, which the definitions render and never change.
        Kept on the object, not by its fields: 2 == 2.0 as a key, not as JSON."""
        made = self.__dict__.get("_asl")
        if made is None:
            made = self._dict()
            object.__setattr__(self, "_asl", made)
        return made

    def _dict(self) -> JsonObject:
        out: JsonObject = {"ErrorEquals": list(self.errors)}
        if self.interval is not None:
            out["IntervalSeconds"] = self.interval
        out["MaxAttempts"] = self.max_attempts
        if self.backoff is not None:
            out["BackoffRate"] = self.backoff
        if self.max_delay is not None:
            out["MaxDelaySeconds"] = self.max_delay
        if self.full_jitter:
            out["JitterStrategy"] = "FULL"
        return out


@dataclass
class Catch:
    errors: list[str]
    next: str
    result_path: str | None = None
    assign: JsonObject | None = None  # workflow variables set when this catcher matches
    output: str | None = None  # a JSONata state's catcher: its output, a {% %} expression

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"ErrorEquals": list(self.errors)}
        if self.result_path is not None:
            out["ResultPath"] = self.result_path
        if self.assign is not None:
            out["Assign"] = self.assign
        if self.output is not None:
            out["Output"] = self.output
        out["Next"] = self.next
        return out


@dataclass
class State:
    type: ClassVar[str]
    comment: str | None = field(default=None, kw_only=True)

    def fields(self) -> JsonObject:
        """The type's own fields, in order, between Comment and the transition."""
        return {}

    def targets(self) -> list[str]:
        """Every state this one can go to."""
        return []

    def transition(self) -> JsonObject:
        return {}

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"Type": self.type}
        if self.comment is not None:
            out["Comment"] = self.comment
        out |= self.fields()
        out |= self.transition()
        return out


@dataclass
class _Flowing(State):
    """A state that goes on to ``next`` (or, without one, ends its branch)."""

    next: str | None = field(default=None, kw_only=True)

    def targets(self) -> list[str]:
        return [self.next] if self.next else []

    def transition(self) -> JsonObject:
        return {"Next": self.next} if self.next else {"End": True}


def _result_fields(result_selector: JsonObject | None, result_path: ResultPath) -> JsonObject:
    out: JsonObject = {}
    if result_selector is not None:
        out["ResultSelector"] = result_selector
    if result_path is DISCARD:
        out["ResultPath"] = None
    elif result_path is not None:
        out["ResultPath"] = result_path
    return out


@dataclass
class _Catching(_Flowing):
    """A state whose errors can be caught (Task, Parallel)."""

    catch: list[Catch] = field(default_factory=list, kw_only=True)

    def targets(self) -> list[str]:
        return super().targets() + [c.next for c in self.catch]

    def catch_fields(self) -> JsonObject:
        return {"Catch": [c.to_dict() for c in self.catch]} if self.catch else {}


@dataclass
class Task(_Catching):
    """A JSONPath Task, or with ``arguments`` a JSONata one (``"QueryLanguage": "JSONata"`` on
    the state alone: a machine may mix the two state by state, "QueryLanguage" in
    https://docs.aws.amazon.com/step-functions/latest/dg/statemachine-structure.html), whose
    ``Arguments`` and ``Output`` take the place of the five JSONPath fields
    (https://docs.aws.amazon.com/step-functions/latest/dg/transforming-data.html)."""

    type: ClassVar[str] = "Task"
    resource: str
    parameters: JsonObject | None = None
    result_selector: JsonObject | None = None
    result_path: ResultPath = None
    timeout_seconds: int | None = None
    retry: list[Retry] = field(default_factory=list)
    arguments: str | None = None  # JSONata: a {% %} expression that evaluates to the call's arguments
    output: str | None = None  # JSONata: a {% %} expression, the state's output

    def fields(self) -> JsonObject:
        if self.arguments is not None:
            if self.parameters is not None or self.result_selector is not None or self.result_path is not None:
                raise ValueError("a JSONata Task takes Arguments and Output, no JSONPath fields")
            out: JsonObject = {"QueryLanguage": "JSONata", "Resource": self.resource, "Arguments": self.arguments}
            if self.output is not None:
                out["Output"] = self.output
        else:
            out = {"Resource": self.resource}
        if self.parameters is not None:
            out["Parameters"] = self.parameters
        out |= _result_fields(self.result_selector, self.result_path)
        if self.timeout_seconds is not None:
            out["TimeoutSeconds"] = self.timeout_seconds
        if self.retry:
            out["Retry"] = [r.to_dict() for r in self.retry]
        return out | self.catch_fields()


@dataclass
class Parallel(_Catching):
    type: ClassVar[str] = "Parallel"
    branches: list[Graph]
    parameters: JsonObject | None = None
    result_selector: JsonObject | None = None
    result_path: ResultPath = None

    def fields(self) -> JsonObject:
        out: JsonObject = {}
        if self.parameters is not None:
            out["Parameters"] = self.parameters
        out["Branches"] = [b.to_dict() for b in self.branches]
        return out | _result_fields(self.result_selector, self.result_path) | self.catch_fields()


@dataclass
class Pass(_Flowing):
    type: ClassVar[str] = "Pass"
    parameters: JsonObject | None = None
    result_path: ResultPath = None
    output_path: str | None = None

    def fields(self) -> JsonObject:
        out: JsonObject = {"Parameters": self.parameters} if self.parameters is not None else {}
        out |= _result_fields(None, self.result_path)
        if self.output_path is not None:
            out["OutputPath"] = self.output_path
        return out


@dataclass
class Wait(_Flowing):
    """Waits ``seconds``, or the number at ``seconds_path`` in the state data."""

    type: ClassVar[str] = "Wait"
    seconds: int | None = None
    seconds_path: str | None = None

    def fields(self) -> JsonObject:
        if (self.seconds is None) == (self.seconds_path is None):
            raise ValueError("a Wait takes Seconds or SecondsPath")
        return {"Seconds": self.seconds} if self.seconds is not None else {"SecondsPath": self.seconds_path}


@dataclass
class Choice(State):
    """Its rules in order (compiler/choice_rules.py), each naming the state it leads to."""

    type: ClassVar[str] = "Choice"
    choices: list[When]
    default: str

    def fields(self) -> JsonObject:
        return {"Choices": [c.to_dict() for c in self.choices], "Default": self.default}

    def targets(self) -> list[str]:
        return [c.next for c in self.choices] + [self.default]


@dataclass
class Fail(State):
    type: ClassVar[str] = "Fail"
    error_path: str | None = None
    cause_path: str | None = None

    def fields(self) -> JsonObject:
        out: JsonObject = {}
        if self.error_path is not None:
            out["ErrorPath"] = self.error_path
        if self.cause_path is not None:
            out["CausePath"] = self.cause_path
        return out


class Kept(State):
    """A state that many jobs hold the same, kept by its maker under everything it is made of,
    its dict made once: its transitions are the state's, its dict the same object in each
    definition that holds it (rendered, never changed; a state retargeted elsewhere is a new
    object: compiler/pools.py). (Writing its JSON once too was tried: the encoder made for
    each state's text cost what the text saved, at ~12% of a definition's bytes.)"""

    type: ClassVar[str] = "Kept"  # never written: to_dict is the kept state's
    __eq__ = object.__eq__  # not State's (its comment alone): two kept states are two states
    __hash__ = object.__hash__

    def __init__(self, state: State):
        super().__init__()
        self.state = state
        self.made = state.to_dict()

    def targets(self) -> list[str]:
        return self.state.targets()

    def to_dict(self) -> JsonObject:
        return self.made


class Graph:
    """Named states with a start: a whole machine, or one branch of a Parallel."""

    def __init__(self) -> None:
        self.states: dict[str, State] = {}
        self.start_at: str | None = None

    def add(self, name: str, state: State) -> str:
        if name in self.states:
            raise ValueError(f"state {name!r} added twice")
        if len(name) > 80:  # the ASL limit on a state's name
            raise ValueError(f"state name longer than 80 characters: {name!r}")
        self.states[name] = state
        return name

    def __contains__(self, name: str) -> bool:
        return name in self.states

    def __getitem__(self, name: str) -> State:
        return self.states[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.states)

    def check(self) -> None:
        """Every transition goes to a state of this graph, and every state is reachable."""
        if self.start_at not in self.states:
            raise ValueError(f"StartAt {self.start_at!r} is not a state")
        targets = {}  # each state's, made once (walked twice below: ~60 states a job)
        for name, state in self.states.items():
            targets[name] = state.targets()
            for target in targets[name]:
                if target not in self.states:
                    raise ValueError(f"{name!r} goes to {target!r}, which is not a state here")
            if isinstance(state, Parallel):
                for branch in state.branches:
                    branch.check()
        seen, todo = set(), [self.start_at]
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo += targets[name]
        unreachable = sorted(set(self.states) - seen)
        if unreachable:
            raise ValueError(f"unreachable states: {unreachable}")

    def to_dict(self, order: list[str] | None = None) -> JsonObject:
        self.check()
        names = order if order is not None else list(self.states)
        return {"StartAt": self.start_at, "States": {n: self.states[n].to_dict() for n in names}}
