"""Deployment values a compiled state machine refers to, and how each deployment binds them.

The ASL is compiled once, with a token such as ``<<jobplane:table_name>>`` where a deployment
value goes. Terraform binds the tokens to what the base module publishes (``local.platform``);
the local engine binds them to the resources it provisioned. Everything else in the definition
is the same bytes in both places.
"""

from __future__ import annotations

import re

from jobplane.contract.asl_shape import ShapedAsl, ShapedTemplate
from jobplane.contract.types import JsonObject

#: ``task_definition`` is a task definition family (the latest ACTIVE revision runs), so a new
#: runner image (a new revision, registered by the base root) needs no change to any state machine.
#: ``items_bucket``: where a map's items step writes its list (the base module's catalog bucket,
#: under map-items/: contract/map_items.py).
#: ``task_role_arn``: the ECS task role a job's tasks run with (RunTask's task override): its team's
#: role, named by a local of the job's file (compiler/task_roles.py).
NAMES = ("table_name", "topic_arn", "cluster_arn", "task_definition", "subnets", "security_groups", "items_bucket",
         "task_role_arn")
_TOKEN_RE = re.compile(r"<<jobplane:([a-z_]+)>>")


def token(name: str) -> str:
    assert name in NAMES, name
    return f"<<jobplane:{name}>>"


def bind(text: str, values: dict[str, str]) -> str:
    """Replace every token; an unknown or unbound token is an error, never left in place."""
    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in values:
            raise KeyError(f"no value bound for {name!r}")
        return values[name]

    return _TOKEN_RE.sub(sub, text)


def terraform_escape(text: str) -> str:
    """Escape Terraform template sequences so user text (kwargs, argv) is never interpolated."""
    text = text.replace("${", "$${")
    return text.replace("%{", "%%{") if has_directive(text) else text


def has_directive(text: str) -> bool:
    """Whether ``text`` holds ``%{`` (a Terraform template directive), told from its few ``%``
    (an ASL's are its JSONata's ``{% ... %}``), each found by memchr: looking for the pair
    itself stopped at each of a JSON text's many ``{`` (~50 us of a job's ~53 KB ASL, ~1 us
    this way, CPU), once where its ASL is bound and once where it is read back."""
    at = text.find("%")
    while at >= 0:
        if text.startswith("{", at + 1):
            return True
        at = text.find("%", at + 1)
    return False


def bind_for_terraform(asl_text: str, expressions: dict[str, str]) -> str:
    """The ASL as a Terraform template string: user text escaped, each token an interpolation of
    the Terraform expression given for it (``local.platform.table_name``)."""
    template = bind(terraform_escape(asl_text), {n: "${" + e + "}" for n, e in expressions.items()})
    # the ASL's shape verdict goes with it (asl_shape.py; compiler/definitions.py takes it back out)
    return ShapedTemplate(template) if type(asl_text) is ShapedAsl else template


_TEMPLATE_RE = re.compile(r"\$\$\{|%%\{|\$\{([^{}]*)\}|%\{")


def unbind_terraform(template: str, expressions: dict[str, str]) -> str:
    """The ASL with its tokens back, from the template :func:`bind_for_terraform` made: the exact
    inverse, read the way Terraform reads a template (``$${`` and ``%%{`` are the literal
    sequences, ``${expr}`` an interpolation). The job's Terraform file is then the one stored
    copy of its ASL, and the local engine deploys the bytes Terraform would."""
    names = {e: n for n, e in expressions.items()}

    def sub(m: re.Match[str]) -> str:
        text = m.group(0)
        if text == "$${":
            return "${"
        if text == "%%{":
            return "%{"
        if m.group(1) is not None and m.group(1) in names:
            return token(names[m.group(1)])
        raise ValueError(f"not a template the compiler writes: {text[:80]!r}")

    return _TEMPLATE_RE.sub(sub, template)


def terraform_expressions(tf_id: str, own_task_definition: bool) -> dict[str, str]:
    """What each token binds to in a job's Terraform file: what the base module publishes
    (``local.platform``, contract/published.py), and the job's own task definition family when
    its steps have secrets."""
    values = {n: f"local.platform.{n}" for n in NAMES if n not in ("task_definition", "items_bucket", "task_role_arn")}
    values["task_role_arn"] = f"local.{tf_id}_task_role_arn"  # compiler/task_roles.py local_name
    values["items_bucket"] = "local.platform.catalog_bucket"
    values["task_definition"] = (f"aws_ecs_task_definition.{tf_id}.family" if own_task_definition
                                 else "local.platform.runner_family")
    return values


def asl_of(job_terraform: str) -> str:
    """A job's ASL, tokens included, from its compiled Terraform file: the state machine's
    definition is the one stored copy, and this gives back the exact bytes the compiler rendered."""
    import json

    return asl_of_document(json.loads(job_terraform))


def asl_of_document(document: JsonObject) -> str:
    """:func:`asl_of` of the file already parsed (the local deploy reads it for its roles too)."""
    resources = document["resource"]
    assert isinstance(resources, dict)
    ((tf_id, machine),) = resources["aws_sfn_state_machine"].items()
    return unbind_terraform(machine["definition"],
                            terraform_expressions(tf_id, own_task_definition="aws_ecs_task_definition" in resources))
