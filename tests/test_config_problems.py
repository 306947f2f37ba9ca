"""jobplane.toml's problems (issue 65 item 7): one a line, each naming `jobplane.toml` as the
repository does (not the machine's absolute path) and the field, every section's together;
a country the holidays package does not know is told once, against jobplane.toml, whether a
job names its calendar or not."""

from __future__ import annotations

import pytest

from conftest import Repo, minimal_job

from jobplane.contract.config import ConfigError, load_config


def append(repo: Repo, text: str) -> None:
    with (repo.path / "jobplane.toml").open("a") as f:
        f.write("\n" + text + "\n")


def test_every_section_s_problems_come_together_one_a_line_repo_relative(repo: Repo) -> None:
    append(repo, """\
[pools.billing-db]
size = 0
teams = ["billing"]

[calendars.bad]
weekend = ["SATURDAY"]

[evaluation]
memory_mb = 100000

[quotas]
lambda_speed = 3
""")
    repo.write("jobs/billing/nightly.jsonnet", minimal_job())
    with pytest.raises(ConfigError) as e:
        load_config(repo.path)
    assert len(e.value.problems) == 4, e.value.problems
    result = repo.cli("validate")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    expected = ["jobplane.toml: [pools.billing-db] size = 0: a pool's size is a whole number of slots",
                "jobplane.toml: calendars.bad.weekend: a list of days among",
                "jobplane.toml: [evaluation] memory_mb: a whole number of MiB",
                "jobplane.toml: [quotas] 'lambda_speed' is no quota jobplane counts"]
    for fragment in expected:
        assert len([line for line in lines if line.startswith(fragment)]) == 1, (fragment, result.stderr)
    assert lines[-1] == "4 problems found in jobplane.toml; nothing was done.", result.stderr
    assert len(lines) == 5 and str(repo.path) not in result.stderr, result.stderr


def test_an_unknown_holidays_country_is_told_once_against_jobplane_toml(repo: Repo) -> None:
    append(repo, '[calendars.nowhere]\nholidays = "XX"\n')
    result = repo.cli("validate")  # no job names the calendar: it is still wrong
    assert result.exit_code == 2
    told = [line for line in result.stderr.splitlines() if "'XX'" in line]
    assert len(told) == 1 and told[0].startswith("jobplane.toml: calendars.nowhere.holidays: the holidays package"), \
        result.stderr
    for name in ("close-a", "close-b", "close-c"):  # three jobs naming it: still once, against jobplane.toml
        repo.write(f"jobs/billing/{name}.jsonnet", minimal_job(name).replace(
            "schedule: jp.daily('02:00'),", "calendar: 'nowhere', schedule: jp.businessDays('09:00'),"))
    result = repo.cli("validate")
    assert result.exit_code == 2
    told = [line for line in result.stderr.splitlines() if "'XX'" in line]
    assert len(told) == 1 and told[0].startswith("jobplane.toml: calendars.nowhere.holidays: "), result.stderr
    assert result.stderr.strip().splitlines()[-1] == "1 problem found; nothing was written.", result.stderr
