"""A pull request's job file is hostile input evaluated on the CI machine (issue 10, item 2):
Jsonnet imports are confined to jobs/ and the DSL library, and a rejected value is quoted only
in part, so neither the compiled output nor an error message can carry a file of the machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import Repo

SECRET = "ci-secret-value-7d1f0c"

JOB = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'leaky',
  team: 'billing',
  schedule: jp.daily('02:00'),
  steps: [jp.python('run', 'examples.noop:run')],
  %s
}
"""


@pytest.fixture(autouse=True)
def ci_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_DEPLOY_TOKEN", SECRET)  # what /proc/self/environ would give away


@pytest.mark.parametrize("prefix, field", [
    ("", "description: importstr '/etc/passwd',"),
    ("", "timezone: std.split(importstr '/proc/self/environ', '\\u0000')[0],"),
    ("", "description: importstr '../../../../../../../../etc/passwd',"),
    ("", "description: std.toString(importbin '/etc/hostname'),"),
    ("local x = import '/etc/jobplane.libsonnet';\n", "description: x,"),
])
def test_a_job_file_cannot_read_files_outside_jobs(repo: Repo, prefix: str, field: str) -> None:
    repo.write("jobs/billing/leaky.jsonnet", prefix + JOB % field)
    for command in ("validate", "compile"):
        result = repo.cli(command)
        assert result.exit_code == 2, result.output
        assert "jobs/billing/leaky.jsonnet: import '" in result.output and "refused" in result.output
        assert "root:" not in result.output and SECRET not in result.output
    assert not (repo.path / "terraform").exists()


def test_a_symlink_out_of_jobs_is_refused(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    (repo.path / "jobs" / "billing").mkdir(parents=True)
    os.symlink(outside, repo.path / "jobs" / "billing" / "notes.txt")
    repo.write("jobs/billing/leaky.jsonnet", JOB % "description: importstr 'notes.txt',")
    result = repo.cli("compile")
    assert result.exit_code == 2
    assert "import 'notes.txt' from jobs/billing/ refused: it leads outside jobs/" in result.output
    assert SECRET not in result.output and not (repo.path / "terraform" / "jobs").exists()


def test_a_definition_that_is_a_symlink_out_of_jobs_is_not_read(repo: Repo, tmp_path: Path) -> None:
    """The definition file itself, not only what it imports: a link named like a job to a file
    of the CI machine was read, and the problems quoted its text (a JSON file of secrets whose
    "name" is not kebab-case, here). A link to /dev/zero would have read for ever."""
    outside = tmp_path / "deploy-config.json"
    outside.write_text('{"name": "%s", "team": "billing"}' % SECRET)
    (repo.path / "jobs" / "billing").mkdir(parents=True)
    os.symlink(outside, repo.path / "jobs" / "billing" / "config.jsonnet")
    os.symlink("/dev/zero", repo.path / "jobs" / "billing" / "zero.jsonnet")
    repo.write("jobs/billing/real.jsonnet", JOB.replace("leaky", "real") % "")
    os.symlink("real.jsonnet", repo.path / "jobs" / "billing" / "alias.jsonnet")  # inside jobs/: read
    for command in ("validate", "compile"):
        result = repo.cli(command)
        assert result.exit_code == 2, result.output
        problems = result.stderr.strip().splitlines()[:-1]
        assert sorted(problems) == [
            "jobs/billing/config.jsonnet: refused: it leads outside jobs/ (a symbolic link?); a definition is a file under it",
            "jobs/billing/real.jsonnet: job 'real': name: job name is already used in jobs/billing/alias.jsonnet",
            "jobs/billing/zero.jsonnet: refused: it leads outside jobs/ (a symbolic link?); a definition is a file under it",
        ], result.stderr
        assert SECRET not in result.output
    assert not (repo.path / "terraform").exists()


def test_imports_inside_jobs_still_work(repo: Repo) -> None:
    repo.write("jobs/billing/common.libsonnet", "{ description: 'shared by billing jobs' }")
    repo.write("jobs/billing/notes.txt", "Runbook text kept beside the job.")
    repo.write("jobs/billing/leaky.jsonnet", "local common = import 'common.libsonnet';\n"
               + JOB % "description: common.description + ' / ' + importstr 'notes.txt',")
    result = repo.cli("compile")
    assert result.exit_code == 0, result.output
    catalog = (repo.out / "teams" / "billing" / "catalog.json").read_text()
    assert "shared by billing jobs / Runbook text kept beside the job." in catalog


def test_an_error_quotes_at_most_80_characters_of_a_value(repo: Repo) -> None:
    long_value = "Z" * 5000
    repo.write("jobs/billing/leaky.jsonnet", JOB % f"timezone: '{long_value}', runbook: {{ impact: 1 }},")
    repo.write("jobs/billing/other.jsonnet", (JOB % "description: 'x',").replace("leaky", "other").replace(
        "jp.daily('02:00')", f"'cron({'9' * 3000} * * * ? *)'"))
    result = repo.cli("validate")
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if "jobs/billing" in line]
    assert any("timezone" in line for line in lines) and any("schedule" in line for line in lines)
    for line in lines:
        assert "Z" * 81 not in line and "9" * 81 not in line, line
        assert len(line) < 600, line
    assert "(5000 characters)" in result.output


def set_platform(repo: Repo, setting: str) -> None:
    """jobplane.toml's [platform] with ``setting`` (``key = value``, TOML) in place of its key's line."""
    import re

    config = repo.path / "jobplane.toml"
    key, text = setting.split(" = ")[0], config.read_text()
    config.write_text(re.sub(rf"(?m)^{key} = .*$", lambda _: setting, text, count=1) if re.search(rf"(?m)^{key} = ", text)
                      else text.replace("[platform]\n", f"[platform]\n{setting}\n", 1))
    assert setting in config.read_text()


@pytest.mark.parametrize("setting", ['jobs_dir = "/etc"', 'jobs_dir = "../elsewhere"', 'output_dir = "/tmp/jobplane-out"',
                                     'output_dir = "terraform/../../elsewhere"'])
def test_jobplane_toml_cannot_point_the_compiler_outside_the_repository(repo: Repo, setting: str) -> None:
    """jobplane.toml comes in the same pull request as the jobs: its jobs_dir may not make the
    compiler read the machine's files, nor its output_dir write over them."""
    set_platform(repo, setting)
    repo.write("jobs/billing/leaky.jsonnet", JOB % "")
    for command in ("validate", "compile"):
        result = repo.cli(command)
        assert result.exit_code != 0
        assert f"{setting.split(' = ')[0]} {setting.split(' = ')[1][1:-1]!r} leads outside the repository" in result.output
    assert not Path("/tmp/jobplane-out").exists()


@pytest.mark.parametrize("setting", ['jobs_dir = "."', 'jobs_dir = ".git"', 'jobs_dir = "jobs/.hidden"',
                                     'output_dir = "."', 'output_dir = ".git/hooks"'])
def test_jobplane_toml_cannot_point_the_compiler_at_the_checkout_or_its_hidden_directories(repo: Repo,
                                                                                             setting: str) -> None:
    """Issue 40 item 8: `jobs_dir = "."` let a definition `importstr '.git/config'` (the
    checkout's auth header) into a catalog; an output_dir there would write over the checkout."""
    key, value = setting.split(" = ")
    set_platform(repo, setting)
    repo.write("jobs/billing/leaky.jsonnet", JOB % "")
    for command in ("validate", "compile"):
        result = repo.cli(command)
        assert result.exit_code != 0
        assert f"{key} {value[1:-1]!r} is the repository itself or a hidden directory" in result.output


@pytest.mark.parametrize("prefix", ['jp${file(\"/etc/hostname\")}', "JP", "1jp", "a" * 22, ""])
def test_a_name_prefix_that_is_not_a_plain_name_is_refused(repo: Repo, prefix: str) -> None:
    """Issue 40 item 7: name_prefix starts every AWS name and reached the Terraform JSON as it
    was (`jp${file("/etc/hostname")}` would read the runner's files at plan)."""
    set_platform(repo, f"name_prefix = '{prefix}'")  # a TOML literal string: the prefix as it is
    for command in ("validate", "compile"):
        result = repo.cli(command)
        assert result.exit_code != 0 and "name_prefix" in result.output and "is not 1-21 lower-case" in result.output
    assert not (repo.path / "terraform").exists() or "hostname" not in "".join(
        f.read_text() for f in (repo.path / "terraform").rglob("*.json"))


@pytest.mark.parametrize("module", ["git::https://evil.example/module.git", "hashicorp/consul/aws", "/etc",
                                    "../../../elsewhere"])
def test_the_base_module_source_is_a_directory_of_the_repository(repo: Repo, module: str) -> None:
    """platform_module becomes the base root's module source, which CI plans with its role: a
    pull request naming a git or registry module (or a path out of the checkout) is refused."""
    set_platform(repo, f"platform_module = '{module}'")
    for command in ("validate", "compile"):
        result = repo.cli(command)
        assert result.exit_code != 0 and "platform_module" in result.output and "inside the repository" in result.output


def test_a_library_linked_out_of_the_repository_is_refused(repo: Repo, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The DSL library is one of the two places imports may read: a pull request that turns
    jobs/lib into a link to another directory would widen what they may read to it."""
    elsewhere = tmp_path_factory.mktemp("outside-the-repository") / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "jobplane.libsonnet").write_text((repo.path / "jobs" / "lib" / "jobplane.libsonnet").read_text())
    (elsewhere / "secret.txt").write_text(SECRET)
    import shutil

    shutil.rmtree(repo.path / "jobs" / "lib")
    os.symlink(elsewhere, repo.path / "jobs" / "lib")
    repo.write("jobs/billing/leaky.jsonnet", JOB % "description: importstr 'secret.txt',")
    result = repo.cli("compile")
    assert result.exit_code == 2
    assert result.stderr.startswith("jobs/lib/: refused: it leads outside the repository (a symbolic link?)"), result.stderr
    assert SECRET not in result.output and not (repo.path / "terraform" / "jobs").exists()
