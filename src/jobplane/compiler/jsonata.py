"""JSONata text for the one JSONata state of a compiled machine (the claim, compiler/asl.py), made
from the JSONPath ``Parameters`` the other claims use, so both kinds of claim write the same item.

Step Functions runs JSONata 2.0.6 in a state whose ``QueryLanguage`` is ``JSONata``; a string
field that starts with ``{%`` and ends with ``%}`` is an expression, and ``$states.input`` and
``$states.context`` are the state's input and the context object ("Transforming data with
JSONata in Step Functions", https://docs.aws.amazon.com/step-functions/latest/dg/transforming-data.html).
The claim's parameters use a handful of intrinsic functions
(https://docs.aws.amazon.com/step-functions/latest/dg/intrinsic-functions.html); each has a JSONata
equivalent from JSONata's own operators (https://docs.jsonata.org/other-operators: ``&`` joins
strings, ``in`` tests membership; https://docs.jsonata.org/string-functions: ``$string`` casts, a
string unchanged, ``true`` as "true", as ``States.Format`` writes them). Anything else is refused
when the compiler runs, never guessed.
"""

from __future__ import annotations

import functools
import json
import re

from jobplane.contract.types import JsonValue

#: How a JSONPath path into the state's input is read in the JSONata text (``$in``: the input
#: with its defaults merged in, bound by the expression that uses these).
INPUT = "$in"
_PATH = re.compile(r"\$\$?(\.[A-Za-z_][A-Za-z0-9_]*)*")


def expression(text: str) -> str:
    """A field's value as a JSONata expression: ``{% text %}``."""
    return "{% " + text + " %}"


def literal(value: JsonValue) -> str:
    """A JSON value as JSONata text (JSON's literals and strings are JSONata's)."""
    return _LITERAL.encode(value)  # json.dumps with these options, without an encoder made a call


#: json.dumps(value, ensure_ascii=False, separators=(",", ":")) is this encoder's ``encode``
#: (dumps makes one like it for each call with options: ~70 calls a compiled job here).
_LITERAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def template(parameters: JsonValue) -> str:
    """A JSONPath ``Parameters`` block as one JSONata object constructor: a ``<key>.$`` field's
    path or intrinsic becomes ``<key>``'s expression, every other value stays literal."""
    if isinstance(parameters, dict):
        fields = []
        for key, value in parameters.items():
            if key.endswith(".$"):
                if not isinstance(value, str):
                    raise ValueError(f"{key!r}: a path field holds a string")
                fields.append(f"{literal(key[:-2])}:{translate(value)}")
            else:
                fields.append(f"{literal(key)}:{template(value)}")
        return "{" + ",".join(fields) + "}"
    if isinstance(parameters, list):
        return "[" + ",".join(template(v) for v in parameters) + "]"
    return literal(parameters)


@functools.lru_cache(maxsize=1024)
def translate(intrinsic: str) -> str:
    """One JSONPath path or intrinsic function call as JSONata: ``$.x`` reads the input
    (:data:`INPUT`), ``$$.x`` the context object; States.Format, States.Array and
    States.ArrayContains of those and of string literals.

    Kept by its text, all it depends on: the claim's intrinsics are the same few for every job
    (the trigger's, the fire key's, the execution's name), and parsing them again for each job
    was ~60% of translating its claim. (A refused text raises each time: lru_cache keeps no
    exception.)"""
    parser = _Parser(intrinsic)
    out = parser.value()
    if parser.rest():
        raise ValueError(f"not a JSONata translation the claim knows: {intrinsic!r} (at {parser.rest()!r})")
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def rest(self) -> str:
        return self.text[self.at:].strip()

    def skip(self) -> None:
        while self.at < len(self.text) and self.text[self.at] == " ":
            self.at += 1

    def value(self) -> str:
        self.skip()
        text = self.text[self.at:]
        if text.startswith("'"):
            return literal(self.string())
        path = _PATH.match(text)
        if path and path.group(0):
            self.at += path.end()
            found = path.group(0)
            if found.startswith("$$"):
                return "$states.context" + found[2:]
            return INPUT + found[1:]
        name = re.match(r"States\.[A-Za-z]+", text)
        if name is None:
            raise ValueError(f"not a JSONata translation the claim knows: {self.text!r}")
        self.at += name.end()
        args = self.arguments()
        if name.group(0) == "States.Array":
            return "[" + ",".join(args) + "]"
        if name.group(0) == "States.ArrayContains" and len(args) == 2:
            return f"({args[1]} in {args[0]})"
        if name.group(0) == "States.Format" and args and args[0].startswith('"'):
            parts = json.loads(args[0]).split("{}")
            if len(parts) != len(args):
                raise ValueError(f"{self.text!r}: States.Format's placeholders and arguments differ")
            joined = [literal(parts[0])] if parts[0] else []
            for arg, part in zip(args[1:], parts[1:]):
                joined.append(f"$string({arg})")
                if part:
                    joined.append(literal(part))
            return "(" + " & ".join(joined) + ")"
        raise ValueError(f"not a JSONata translation the claim knows: {name.group(0)} in {self.text!r}")

    def arguments(self) -> list[str]:
        self.skip()
        if not self.text.startswith("(", self.at):
            raise ValueError(f"{self.text!r}: expected '(' at {self.at}")
        self.at += 1
        args = []
        while True:
            args.append(self.value())
            self.skip()
            if self.text.startswith(",", self.at):
                self.at += 1
                continue
            if self.text.startswith(")", self.at):
                self.at += 1
                return args
            raise ValueError(f"{self.text!r}: expected ',' or ')' at {self.at}")

    def string(self) -> str:
        """An intrinsic's string literal: '...' where a backslash makes the next character plain
        (\\', \\{, \\}, \\\\: the escapes the intrinsic functions page lists)."""
        self.at += 1
        out = []
        while self.at < len(self.text):
            c = self.text[self.at]
            if c == "\\" and self.at + 1 < len(self.text):
                if self.text[self.at + 1] in "{}":  # would read as a States.Format placeholder
                    raise ValueError(f"{self.text!r}: an escaped brace is not translated")
                out.append(self.text[self.at + 1])
                self.at += 2
                continue
            self.at += 1
            if c == "'":
                return "".join(out)
            out.append(c)
        raise ValueError(f"{self.text!r}: an unterminated string")
