"""Which role a compiled job's schedules pass, read from its Terraform document and its team
root's roles document: one reading for the local deploy, which reads both files
(platform/local/compiled_roles.py), and for `jobplane dev`'s compile, which has both documents in
memory as it renders them (compiler/rendered_jobs.py) and hands the name to that deploy.

A job's roles are its team's, shared by identical grants (compiler/shared_roles.py:
``<prefix>-<team>-scheduler-<digest>-<n>``): the schedule's ``role_arn`` refers to one of the
roles file's resources, whose ``name`` is the role's.
"""

from __future__ import annotations

import re

from jobplane.contract.types import JsonObject

ROLE_REF = re.compile(r"^\$\{aws_iam_role\.([A-Za-z0-9_]+)\.arn\}$")


def role_ref(job_document: JsonObject) -> str | None:
    """The roles file's resource id the job's schedules pass, from its first schedule (by id, as
    the compiler writes them: keys sorted) that names one; None when it has no schedule or names
    none."""
    schedules = (job_document.get("resource") or {}).get("aws_scheduler_schedule") or {}
    if not isinstance(schedules, dict):
        return None
    for key in sorted(schedules):
        schedule = schedules[key]
        target = schedule.get("target") if isinstance(schedule, dict) else None
        found = ROLE_REF.match(str(target.get("role_arn", ""))) if isinstance(target, dict) else None
        if found:
            return found.group(1)
    return None


def role_names(roles_document: JsonObject) -> dict[str, str]:
    """resource id -> role name, of a team root's roles file."""
    roles = (roles_document.get("resource") or {}).get("aws_iam_role") or {}
    return {rid: r["name"] for rid, r in roles.items() if isinstance(r.get("name"), str)}


def role_name(job_document: JsonObject, names: dict[str, str]) -> str | None:
    """The name of the role the job's schedules pass (``names``: :func:`role_names` of its root's
    roles file); None when it passes none of them."""
    ref = role_ref(job_document)
    return names.get(ref) if ref is not None else None
