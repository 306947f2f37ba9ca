"""The IAM role a job's schedules pass, named as its compiled Terraform names it.

A job's roles are its team's, shared by identical grants (compiler/shared_roles.py:
``<prefix>-<team>-scheduler-<digest>-<n>``), so the local engine cannot derive a schedule's role
from the job's name: it reads the job's Terraform file (the schedule's ``role_arn`` reference)
and the team root's ``roles.tf.json`` (that role's name), as contract/schedule_role.py reads them.
Its schedules then carry the role name they carry on AWS, which is what the IAM contract tests
check the operators' and the periodic check's ``iam:PassRole`` against (an UpdateSchedule passes
the schedule's role again): a local name of another shape once hid a policy that matched no
deployed role.
"""

from __future__ import annotations

import json
from jobplane.contract import schedule_role
from jobplane.contract.output_files import OutputFiles
from jobplane.contract.types import JsonObject

#: The team root's file of shared roles (compiler/shared_roles.py ROLES_FILE; the compiler is
#: not imported by the platform).
ROLES_FILE = "roles.tf.json"


class ScheduleRoles:
    """Each team root's role names read once (a 5,000-job start reads a roles file per root)."""

    def __init__(self) -> None:
        self._roots: dict[str, dict[str, str]] = {}

    def name(self, job_document: JsonObject, output: OutputFiles, root: str) -> str | None:
        """The name of the role the job's schedules pass; None when the document has no
        schedule or names no role of the roles file of ``root`` (the job file's directory in
        ``output``; a hand-made or older output has none)."""
        ref = schedule_role.role_ref(job_document)
        return None if ref is None else self._names(output, root).get(ref)

    def _names(self, output: OutputFiles, root: str) -> dict[str, str]:
        if root not in self._roots:
            rel = f"{root}/{ROLES_FILE}" if root else ROLES_FILE
            self._roots[root] = schedule_role.role_names(json.loads(output.read_text(rel)) if output.is_file(rel) else {})
        return self._roots[root]
