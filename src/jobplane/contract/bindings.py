"""Deployment values a compiled state machine refers to, and how each deployment binds them.

The ASL is compiled once, with a token such as ``<<jobplane:table_name>>`` where a deployment
value goes. Terraform binds the tokens to the base module's outputs (``${local.jobplane.X}``);
the local engine binds them to the resources it provisioned. Everything else in the definition
is the same bytes in both places.
"""

from __future__ import annotations

import re

NAMES = ("table_name", "topic_arn", "cluster_arn", "task_definition_arn", "subnets", "security_groups")
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
    return text.replace("${", "$${").replace("%{", "%%{")


def bind_for_terraform(asl_text: str, job_task_definition: str | None = None) -> str:
    values = {n: "${local.jobplane." + n + "}" for n in NAMES}
    if job_task_definition:
        values["task_definition_arn"] = job_task_definition
    return bind(terraform_escape(asl_text), values)
