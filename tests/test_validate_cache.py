"""`jobplane validate`'s memory of unchanged files (compiler/validate_cache.py): a kept result is
used only where checking the file again could not differ, and is the same as a fresh one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import Repo, minimal_job

from jobplane.compiler.problems import DefinitionError
from jobplane.compiler.validate import check_definitions, load_jobs
from jobplane.compiler.validate_cache import ValidateCache, imports_of
from jobplane.contract.config import load_config

TEAM_LIB = """\
{ step(jp):: jp.python('run', 'examples.noop:run') }
"""

USES_LIB = """\
local jp = import 'jobplane.libsonnet';
local common = import 'common.libsonnet';
{
  name: 'with-lib',
  team: 'billing',
  schedule: jp.daily('03:00'),
  steps: [common.step(jp)],
}
"""

AFTER = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'downstream',
  team: 'billing',
  after: [jp.after('nightly')],
  steps: [jp.python('run', 'examples.noop:run')],
}
"""


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def jobs_repo(tmp_path: Path) -> Repo:
    (tmp_path / "repo").mkdir()
    repo = Repo(tmp_path / "repo")
    repo.write("jobs/billing/nightly.jsonnet", minimal_job("nightly"))
    repo.write("jobs/billing/common.libsonnet", TEAM_LIB)
    repo.write("jobs/billing/with-lib.jsonnet", USES_LIB)
    repo.write("jobs/billing/downstream.jsonnet", AFTER)
    repo.write("jobs/growth/weekly.jsonnet", minimal_job("weekly").replace("'billing'", "'growth'"))
    return repo


def run(repo: Repo, cache_dir: Path) -> tuple[ValidateCache, list[str], int]:
    """A validate with the cache: the cache, the problems as printed, the jobs' count."""
    cache = ValidateCache(load_config(repo.path), cache_dir)
    checked = check_definitions(load_config(repo.path), cache=cache)
    cache.save()
    return cache, sorted(map(str, checked.problems)), sum(len(f.jobs) for f in checked.files)


def fresh(repo: Repo) -> tuple[list[str], int]:
    checked = check_definitions(load_config(repo.path))
    return sorted(map(str, checked.problems)), sum(len(f.jobs) for f in checked.files)


def test_kept_results_are_those_of_a_fresh_check(jobs_repo: Repo, cache_dir: Path) -> None:
    first, problems, count = run(jobs_repo, cache_dir)
    assert (first.hits, first.misses) == (0, 4) and (problems, count) == ([], 4)
    again, problems, count = run(jobs_repo, cache_dir)
    assert (again.hits, again.misses) == (4, 0)
    assert (problems, count) == fresh(jobs_repo)
    # the kept jobs read back (a compile's load_jobs) are the very jobs a fresh load builds,
    # step kinds the registry's own objects
    kept = load_jobs(load_config(jobs_repo.path), cache=ValidateCache(load_config(jobs_repo.path), cache_dir))
    assert kept == load_jobs(load_config(jobs_repo.path))


def test_only_the_changed_file_is_checked_again(jobs_repo: Repo, cache_dir: Path) -> None:
    run(jobs_repo, cache_dir)
    jobs_repo.write("jobs/growth/weekly.jsonnet", minimal_job("weekly").replace("'billing'", "'growth'")
                    .replace("daily('02:00')", "daily('99:00')"))
    cache, problems, _ = run(jobs_repo, cache_dir)
    assert (cache.hits, cache.misses) == (3, 1)
    assert problems == fresh(jobs_repo)[0] and any("weekly.jsonnet" in p for p in problems)


def test_a_change_to_an_imported_libsonnet_checks_its_importers_again(jobs_repo: Repo, cache_dir: Path) -> None:
    run(jobs_repo, cache_dir)
    jobs_repo.write("jobs/billing/common.libsonnet", TEAM_LIB.replace("examples.noop:run", "not a callable"))
    cache, problems, _ = run(jobs_repo, cache_dir)
    assert (cache.hits, cache.misses) == (3, 1)  # with-lib.jsonnet alone imports it
    assert problems == fresh(jobs_repo)[0] and any("with-lib.jsonnet" in p for p in problems)


def test_a_change_to_the_dsl_library_checks_every_file_again(jobs_repo: Repo, cache_dir: Path) -> None:
    run(jobs_repo, cache_dir)
    lib = jobs_repo.path / "jobs" / "lib" / "jobplane.libsonnet"
    lib.write_text(lib.read_text() + "\n")
    cache, _, _ = run(jobs_repo, cache_dir)
    assert (cache.hits, cache.misses) == (0, 4)


def test_a_change_to_jobplane_toml_checks_every_file_again(jobs_repo: Repo, cache_dir: Path) -> None:
    run(jobs_repo, cache_dir)
    toml = jobs_repo.path / "jobplane.toml"
    toml.write_text(toml.read_text().replace("[teams.growth]\n", "").replace(
        'channel = "#growth-alerts"\nmembers = ["ben@example.com"]\n', ""))
    cache, problems, _ = run(jobs_repo, cache_dir)
    assert (cache.hits, cache.misses) == (0, 4)
    assert problems == fresh(jobs_repo)[0] and any("unknown team 'growth'" in p for p in problems)


def test_a_file_that_shadows_an_import_checks_its_importers_again(jobs_repo: Repo, cache_dir: Path) -> None:
    """An import is looked up beside the importing file before the library: a new file there
    changes what the billing definitions import, not what growth's do."""
    run(jobs_repo, cache_dir)
    jobs_repo.write("jobs/billing/jobplane.libsonnet", "{ python(name, fn, kwargs={}, opts={}):: error 'shadowed' }")
    cache, problems, _ = run(jobs_repo, cache_dir)
    assert (cache.hits, cache.misses) == (1, 3)
    assert problems == fresh(jobs_repo)[0] and any("billing/nightly.jsonnet" in p for p in problems)
    assert not any("growth" in p for p in problems)


def test_the_checks_across_files_run_over_kept_files(jobs_repo: Repo, cache_dir: Path) -> None:
    run(jobs_repo, cache_dir)
    jobs_repo.write("jobs/growth/copy.jsonnet", minimal_job("nightly").replace("'billing'", "'growth'"))
    (jobs_repo.path / "jobs" / "billing" / "nightly.jsonnet").unlink()
    jobs_repo.write("jobs/billing/nightly2.jsonnet", minimal_job("nightly"))
    cache, problems, _ = run(jobs_repo, cache_dir)
    assert cache.misses == 2
    assert problems == fresh(jobs_repo)[0] and any("already used" in p for p in problems)
    with pytest.raises(DefinitionError):
        load_jobs(load_config(jobs_repo.path), cache=ValidateCache(load_config(jobs_repo.path), cache_dir))


def test_a_cache_file_others_may_write_is_not_read(jobs_repo: Repo, cache_dir: Path) -> None:
    first, _, _ = run(jobs_repo, cache_dir)
    assert oct(first.path.stat().st_mode & 0o777) == "0o600" and oct(cache_dir.stat().st_mode & 0o777) == "0o700"
    os.chmod(first.path, 0o666)
    cache, _, _ = run(jobs_repo, cache_dir)
    assert cache.hits == 0


def test_imports_are_read_from_the_text() -> None:
    assert imports_of(b"local a = import 'a.libsonnet'; local b = importstr \"b.txt\"; importbin 'c'") == \
        ["a.libsonnet", "b.txt", "c"]
    assert imports_of(b"{ description: 'we import invoices nightly' }") == []  # prose: no import
    assert imports_of(b"// local jp = import 'x.libsonnet';") == ["x.libsonnet"]  # a comment: one more input
    for unread in (b"import /* c */ 'a'", b"import @'a'", b"import |||\n  a\n|||", b"import 'a\\u0062'"):
        assert imports_of(unread) is None, unread


def test_a_file_with_an_import_not_read_plainly_is_always_checked(jobs_repo: Repo, cache_dir: Path) -> None:
    jobs_repo.write("jobs/billing/odd.jsonnet", minimal_job("odd").replace(
        "import 'jobplane.libsonnet'", "import /* the DSL */ 'jobplane.libsonnet'"))
    run(jobs_repo, cache_dir)
    cache, problems, count = run(jobs_repo, cache_dir)
    assert (cache.hits, cache.misses, problems, count) == (4, 1, [], 5)


def test_jobplane_validate_uses_it(jobs_repo: Repo, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPLANE_CACHE_DIR", str(cache_dir))
    first = jobs_repo.cli("validate")
    assert first.exit_code == 0 and list(cache_dir.glob("validate-*.pickle"))
    assert jobs_repo.cli("validate").output == first.output == jobs_repo.cli("validate", "--no-cache").output
    jobs_repo.write("jobs/growth/weekly.jsonnet", "{ name: 'weekly' ")
    bad = jobs_repo.cli("validate")
    assert bad.exit_code == 2 and "weekly.jsonnet" in bad.output and "Jsonnet syntax error" in bad.output
