"""Who may act on a job: one rule for every way in (the portal's forms and API, the CLI on
``jobplane dev`` and with ``--deployment``), applied by the control plane itself before an
action reads more than the job's name.

* A **person** (the portal's signed-in user, the CLI's ``[dev] dev_user`` on ``jobplane dev``)
  may act on a job if they are in its team's ``members`` or in ``[platform] admins``
  (jobplane.toml; the portal's JOBPLANE_TEAM_MEMBERS and JOBPLANE_ADMINS on AWS).
* An **operator** is an AWS identity using the CLI with ``--deployment``: what it may do is
  what IAM lets it call (the base module's ``<prefix>-operator`` policy, docs/operate.md), for
  every team, so the control plane does not judge it by team; its audit entries say
  ``operator`` and name the identity's ARN.
* The **platform** itself (the catch-up of a lost ``after`` event, a backfill's driver) acts
  under its own name.

Each audit entry records which of these let the action through (``AuditEntry.authority``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from jobplane.contract.config import PlatformConfig
from jobplane.platform.control.errors import Forbidden

PERSON, OPERATOR, PLATFORM = "person", "operator", "platform"


@dataclass(frozen=True)
class Actor:
    """Who asks for an action, and what the rule needs to know of them."""

    name: str
    teams: frozenset[str] = frozenset()
    admin: bool = False
    kind: str = PERSON

    def can_act(self, team: str) -> bool:
        return self.kind in (OPERATOR, PLATFORM) or self.admin or team in self.teams

    def authority(self, team: str) -> str:
        """By which right the actor acts on ``team``'s job (what the audit entry says);
        Forbidden if by none."""
        if self.kind in (OPERATOR, PLATFORM):
            return self.kind
        if team in self.teams:
            return f"team {team}"
        if self.admin:
            return "admin"
        raise Forbidden(f"{self.name} may read but not act on team {team}'s jobs (ask to be added to the team's "
                        "members in jobplane.toml, or to [platform] admins)", {"actor": self.name, "team": team})

    @classmethod
    def operator(cls, name: str) -> Actor:
        return cls(name, kind=OPERATOR)

    @classmethod
    def platform(cls, name: str) -> Actor:
        return cls(name, kind=PLATFORM)


def as_actor(actor: Actor | str) -> Actor:
    """A name alone is the platform itself acting in-process (the catch-up, a backfill's driver, a
    test); every operator's way in (portal, API, CLI) passes an :class:`Actor`."""
    return actor if isinstance(actor, Actor) else Actor.platform(actor)


@dataclass(frozen=True)
class Access:
    """The teams' members and the admins: who, as a person, may act on which team's jobs."""

    admins: frozenset[str] = frozenset()
    team_members: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def person(self, name: str) -> Actor:
        teams = frozenset(t for t, members in self.team_members.items() if name in members)
        return Actor(name, teams, name in self.admins)

    @classmethod
    def from_config(cls, config: PlatformConfig) -> Access:
        return cls(frozenset(config.platform_admins), {n: frozenset(t.members) for n, t in config.teams.items()})
