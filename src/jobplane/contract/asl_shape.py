"""The create's check of a state machine definition's shape: what makes it no state machine at all.

`jobplane dev`'s local AWS checks this on CreateStateMachine instead of moto's full ANTLR parse
(moto_patches/programs.py ``validate_on_first_run``: the parse happens when the machine first
runs). It is pure JSON and ours, so the compile can run the very same function on the ASL it has
just rendered, in its forked workers (compiler/rendered_jobs.py), and the deploy then skip it for
that ASL (moto_patches/backends.py ``Terraform.state_machine``): one JSON parse of ~38 KB a job,
~15% of a 5,000-job first start's deploy, done where a core was idle.

The compile checks the ASL with its tokens (``<<jobplane:table_name>>``), the create the ASL
bound to the local resources. The verdict is the same when every bound value is
:func:`plain`: a token outside a JSON string makes the unbound text no JSON (``<`` starts no
value), so an ASL that passes holds its tokens inside strings only; a plain value written there
leaves every string a string and every other byte as it was, so the parsed document has the same
structure, ``StartAt`` names the same state (both changed alike), and no ``Type`` holds a token
(a Type with one is no known Type, and the unbound ASL would have failed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

STATE_TYPES = frozenset({"Task", "Pass", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map"})

#: what a value may hold to be written inside a JSON string as it is (no quote, no backslash, no
#: control character: JSON's own rule for a string's characters)
_PLAIN = re.compile(r'[^"\\\x00-\x1f]*')


class ShapedAsl(str):
    """An ASL text :func:`dumps_shaped` rendered from a definition whose shape it checked there:
    :func:`shape_problem` of it is None, known without parsing it again (a str holds its text
    for good; any new text made from it, a slice or a replace, is a plain str).

    The compile's roots each ran the check on every job's ASL, parsing the ~44 KB the builder
    had rendered from the very object it could check: ~0.3 ms a job, a fifth of the roots'
    own CPU (5,000 jobs). The text now carries the verdict from where it was rendered, through
    the Terraform template it is bound into (:class:`ShapedTemplate`) and back out of it
    (compiler/definitions.py), pickled between the compile's processes as what it is."""

    __slots__ = ()


class ShapedTemplate(str):
    """The Terraform template (contract/bindings.py ``bind_for_terraform``) of a
    :class:`ShapedAsl`: the ASL taken back out of it is that text."""

    __slots__ = ()


def dumps_shaped(definition: dict[str, Any], **options: Any) -> str:
    """``json.dumps(definition, **options)``, a :class:`ShapedAsl` when its parse passes the check
    (the options change the spelling, never what the text parses to). Told from the definition
    itself only where the parse cannot differ from it: every key the check reads a str, the
    objects it reads dicts, so JSON gives them back as they are; else a plain str, checked when
    asked."""
    text = json.dumps(definition, **options)
    if type(definition) is not dict:
        return text
    states = definition.get("States")
    if type(states) is not dict or not states:
        return text
    if type(definition.get("StartAt")) is not str or definition["StartAt"] not in states:
        return text
    for name, state in states.items():
        if type(name) is not str or type(state) is not dict or type(state.get("Type")) is not str \
                or state["Type"] not in STATE_TYPES:
            return text
    return ShapedAsl(text)


def shape_problem(definition: str) -> str | None:
    """What makes ``definition`` no state machine at all, or None (the cheap part of validation)."""
    if type(definition) is ShapedAsl:  # checked where it was rendered
        return None
    try:
        doc = json.loads(definition)
    except ValueError as e:
        return f"not JSON: {e}"
    if not isinstance(doc, dict) or not isinstance(doc.get("States"), dict) or not doc["States"]:
        return "no States object"
    if doc.get("StartAt") not in doc["States"]:
        return f"StartAt {str(doc.get('StartAt'))[:100]!r} names no state"
    for name, state in doc["States"].items():
        if not isinstance(state, dict) or state.get("Type") not in STATE_TYPES:
            return f"state {name[:100]!r} has no known Type"
    return None


def plain(values: Mapping[str, str]) -> bool:
    """Whether binding ``values`` into an ASL keeps :func:`shape_problem`'s verdict (module
    docstring): each one writable inside a JSON string as it is."""
    return all(_PLAIN.fullmatch(v) is not None for v in values.values())
