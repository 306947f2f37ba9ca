"""One team cannot starve another team's pool (issue 64, item 3).

Before, ``[pools]`` had no owner: a growth job that validated held every slot of billing's
``billing-db`` with ``timeout: '365d'``, and billing's pooled steps ended TIMED_OUT, from a pull
request that touched only jobs/growth/. A pool now says which teams may use it (``teams``; every
team only when it says ``["*"]``), validation refuses another team's job naming it, a change of
its teams is a security-relevant change of the plan, and ``max_hold`` caps how long one attempt
may hold a slot. The old form (``billing-db = 3``) is refused with the line to write instead."""

from __future__ import annotations

import subprocess

import pytest

from conftest import Repo
from jobplane.contract.config import ConfigError, load_config

BILLING_POOL = '\n[pools.billing-db]\nsize = 3\nteams = ["billing"]\n%s'

#: the attack: growth's job names billing's pool and holds it for a year
GREEDY = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'greedy',
  team: 'growth',
  schedule: jp.daily('02:00'),
  steps: [jp.python('hold', 'm:hold', opts={ pool: jp.pool('billing-db', 3), timeout: '365d' })],
}
"""

BILLING = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'month-end',
  team: 'billing',
  schedule: jp.daily('02:00'),
  pool: 'billing-db',
  steps: [
    jp.python('extract', 'm:extract', opts={ timeout: '%(timeout)s' }),
    jp.map('fan', jp.python('list', 'm:list'), jp.python('post', 'm:post', opts={ timeout: '%(timeout)s' })),
  ],
}
"""


def toml_with(repo: Repo, extra: str) -> None:
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text() + extra)


def test_another_teams_job_naming_the_pool_is_refused(repo: Repo) -> None:
    toml_with(repo, BILLING_POOL % "")
    repo.write("jobs/growth/greedy.jsonnet", GREEDY)
    result = repo.cli("validate")
    assert result.exit_code == 2, result.output
    assert ("jobs/growth/greedy.jsonnet: job 'greedy': steps[0].pool: pool 'billing-db' is for team billing "
            "(jobplane.toml [pools.billing-db] teams); this job's team 'growth' may not use it") in result.output
    assert repo.cli("compile").exit_code == 2 and not repo.out.exists()


def test_a_pool_open_to_every_team_says_so_and_the_owner_still_uses_its_own(repo: Repo) -> None:
    toml_with(repo, BILLING_POOL % "")
    repo.write("jobs/billing/month-end.jsonnet", BILLING % {"timeout": "1h"})
    assert repo.cli("validate").exit_code == 0
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text().replace('teams = ["billing"]', 'teams = ["*"]'))
    repo.write("jobs/growth/greedy.jsonnet", GREEDY.replace("'365d'", "'1h'"))
    result = repo.cli("validate")
    assert result.exit_code == 0, result.output


def test_the_form_of_before_is_refused_with_the_line_to_write(repo: Repo) -> None:
    toml_with(repo, "\n[pools]\nbilling-db = 3\n")
    with pytest.raises(ConfigError) as e:
        load_config(repo.path)
    assert ("[pools] billing-db = 3: a pool now says which teams may use it; write "
            '[pools.billing-db] size = 3, teams = ["<team>", ...] (or teams = ["*"] to keep it open to every team)'
            ) in str(e.value)


@pytest.mark.parametrize("table, message", [
    ('size = 3', '[pools.billing-db] teams = None: the teams whose jobs may use the pool'),
    ('size = 3\nteams = []', '[pools.billing-db] teams = []'),
    ('size = 3\nteams = ["billing", "finance"]', "[pools.billing-db] teams: 'finance' is no team of jobplane.toml"),
    ('size = 3\nteams = ["billing"]\nmax_hold = "forever"', "[pools.billing-db] max_hold = 'forever': a duration"),
    ('size = 3\nteams = ["billing"]\nowner = "billing"', "[pools.billing-db] owner: unknown"),
])
def test_a_pools_table_is_checked(repo: Repo, table: str, message: str) -> None:
    toml_with(repo, f"\n[pools.billing-db]\n{table}\n")
    with pytest.raises(ConfigError) as e:
        load_config(repo.path)
    assert message in str(e.value)


def test_max_hold_refuses_a_pooled_step_whose_timeout_exceeds_it(repo: Repo) -> None:
    toml_with(repo, BILLING_POOL % 'max_hold = "2h"\n')
    cfg = load_config(repo.path)
    assert cfg.pool_access["billing-db"].max_hold == 7200
    repo.write("jobs/billing/month-end.jsonnet", BILLING % {"timeout": "3h"})
    result = repo.cli("validate")
    assert result.exit_code == 2, result.output
    for field in ("steps[0].timeout", "steps[1].map.each.timeout"):
        assert (f"jobs/billing/month-end.jsonnet: job 'month-end': {field}: timeout 3h is longer than pool "
                "'billing-db' lets one attempt hold a slot (max_hold 2h, jobplane.toml [pools.billing-db])") in result.output
    # the items step keeps its default timeout (1h): within the cap, not named
    assert "map.items.timeout" not in result.output
    repo.write("jobs/billing/month-end.jsonnet", BILLING % {"timeout": "2h"})
    assert repo.cli("validate").exit_code == 0


def test_a_change_of_a_pools_teams_is_named_as_security_relevant(repo: Repo) -> None:
    toml_with(repo, BILLING_POOL % "")
    git = ["git", "-C", str(repo.path), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "base"], check=True)
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text().replace('teams = ["billing"]', 'teams = ["billing", "growth"]'))
    result = repo.cli("plan", "--against-ref", "HEAD", "--exit-code")
    assert result.exit_code == 2, result.output  # --exit-code: 2 when the plan has changes
    out = result.stdout
    assert "jobplane.toml: security-relevant settings changed" in out
    assert 'pools.billing-db.teams: ["billing"] -> ["billing", "growth"]' in out, out
