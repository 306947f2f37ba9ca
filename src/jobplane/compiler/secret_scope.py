"""Which secrets a job may be granted: those of its own team, by name, in the deployment's own
account (issue 40, item 4: a growth job compiled `jp.secret('billing/...')` into a grant).

A team's jobs read Secrets Manager secrets named ``<team>/...`` and SSM parameters named
``/<team>/...``, plus the exact names its ``[teams.<team>] secrets`` list in jobplane.toml allows
(a shared secret, reviewed with the platform's own configuration). The ARNs are built from the
names in the deployment's account and region (compiler/terraform.py), so a definition cannot
reach another account, and a name has no wildcard characters (compiler/model.py).

Which roles read them is the job's ``secret_scope`` (issue 62 finding 5): 'team', the default,
the roles its team root's jobs share, each reading the secrets those jobs declare (never another
team's: this module's check holds for every one of them); 'job', roles reading its own only
(compiler/shared_roles.py, terraform_iam.SECRET_SCOPE_TAG).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobplane.contract.config import PlatformConfig

if TYPE_CHECKING:  # the model imports this module (the prefixes): it is only this module's argument type
    from jobplane.compiler.model import Job, Step

#: How a step's ``secrets`` name each service (compiler/model.py checks the names; jp.secret and
#: jp.parameter write them): here, where they are parsed, so the Terraform (compiler/terraform_iam.py)
#: reads a reference without importing the model.
SECRET_NAME_PREFIX = "secretsmanager:"
PARAMETER_NAME_PREFIX = "ssm:"


@dataclass(frozen=True)
class SecretRef:
    """One entry of a step's ``secrets``: what it names, in which service."""

    env: str
    service: str  # "secretsmanager" | "ssm"
    name: str

    @classmethod
    def parse(cls, env: str, value: str) -> SecretRef:
        if value.startswith(PARAMETER_NAME_PREFIX):
            return cls(env, "ssm", value[len(PARAMETER_NAME_PREFIX):])
        return cls(env, "secretsmanager", value.removeprefix(SECRET_NAME_PREFIX))

    def words(self) -> str:
        kind = "SSM parameter" if self.service == "ssm" else "Secrets Manager secret"
        return f"{kind} {self.name}"


def own_prefix(team: str, service: str) -> str:
    return f"/{team}/" if service == "ssm" else f"{team}/"


def allowed(ref: SecretRef, team: str, config: PlatformConfig) -> bool:
    shared = config.teams[team].secrets if team in config.teams else ()
    return ref.name.startswith(own_prefix(team, ref.service)) or ref.name in shared


def scope_problems(job: Job, config: PlatformConfig) -> list[tuple[str, str]]:
    """(field, message) for each secret the job's team may not read, and each name two of its
    steps give different secrets (:func:`conflict_problems`)."""
    out = conflict_problems(job)
    for where, step in _steps_with_paths(job):
        for env, value in sorted(step.secrets.items()):
            ref = SecretRef.parse(env, value)
            if allowed(ref, job.team, config):
                continue
            out.append((f"{where}.secrets.{env}",
                        f"team {job.team}'s jobs may read only {_own_words(job.team)} and the names listed in "
                        f"[teams.{job.team}] secrets in jobplane.toml; {ref.words()} is neither "
                        "(a platform owner adds a shared secret to that list)"))
    return out


def conflict_problems(job: Job) -> list[tuple[str, str]]:
    """(field, message) for each variable two of the job's steps on one executor give different
    secrets: its ECS steps share one task definition, its Lambda steps one function, each holding
    one source per variable, so one of the steps would have read the other's secret."""
    out = []
    first: dict[tuple[str, str], tuple[str, str]] = {}  # (executor, variable) -> (where, value)
    for where, step in _steps_with_paths(job):
        for env, value in sorted(step.secrets.items()):
            seen = first.setdefault((step.kind.executor.name, env), (where, value))
            if seen[1] != value:
                out.append((f"{where}.secrets.{env}",
                            f"{SecretRef.parse(env, value).words()} under the name {env}, which {seen[0]} gives "
                            f"{SecretRef.parse(env, seen[1]).words()}: a job's ECS steps share its task definition, its "
                            "Lambda steps its runner function, each with one secret per name; give one another name"))
    return out


def _own_words(team: str) -> str:
    return f"Secrets Manager secrets named '{team}/...', SSM parameters named '/{team}/...'"


def _steps_with_paths(job: Job) -> list[tuple[str, Step]]:
    out = []
    for i, step in enumerate(job.steps):
        if step.parallel is None:
            out.append((f"steps[{i}]", step))
        for j, member in enumerate(step.parallel or []):
            out.append((f"steps[{i}].parallel[{j}]", member))
    return out
