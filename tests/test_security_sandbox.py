"""The Jsonnet sandbox's timeout bounds the whole run, once (issue 64, item 7).

A fork bomb with ``[evaluation] timeout_seconds = 10`` ran 20.7 s: the evaluation of all files at
once took the whole timeout, then the bomb's own evaluation took it again (and each file after a
stopped one had a fresh timeout of its own, so N slow files took N timeouts). Every child of a
run now stops at the run's one deadline; the file at fault is still named (a second child has
gone one by one since half the time), and files it did not reach are said to be not evaluated."""

from __future__ import annotations

from conftest import Repo, minimal_job
from jobplane.compiler import sandbox

BOMB = "local f(n) = if n == 0 then 1 else f(n - 1) + f(n - 1);\n{ name: 'x' + f(60) }\n"


def test_fork_bombs_are_named_within_one_timeout_and_what_they_kept_from_running_is_said(repo: Repo) -> None:
    with (repo.path / "jobplane.toml").open("a") as f:
        f.write("\n[evaluation]\ntimeout_seconds = 5\n")
    repo.write("jobs/billing/a-good.jsonnet", minimal_job("a-good"))
    bombs = [f"b{i}-bomb" for i in range(4)]
    for bomb in bombs:
        repo.write(f"jobs/billing/{bomb}.jsonnet", BOMB)
    repo.write("jobs/billing/d-late.jsonnet", minimal_job("d-late"))
    result = repo.cli("validate")
    assert result.exit_code == 2, result.output
    stopped = "Jsonnet evaluation took longer than 5 s and was stopped ([evaluation] timeout_seconds in jobplane.toml)"
    not_reached = ("not evaluated: the definitions' evaluation took longer than 5 s in all before this file was "
                   "reached ([evaluation] timeout_seconds in jobplane.toml)")
    # the first bomb is named; each is named or said not to have been reached in the run's time
    assert f"jobs/billing/{bombs[0]}.jsonnet: {stopped}" in result.stderr
    for bomb in bombs:
        assert (f"jobs/billing/{bomb}.jsonnet: {stopped}" in result.stderr
                or f"jobs/billing/{bomb}.jsonnet: {not_reached}" in result.stderr), result.stderr
    assert "a-good.jsonnet" not in result.stderr  # evaluated in time, and valid
    # before: each bomb had a whole timeout of its own (five in all, with the evaluation of all
    # at once) and the last file was evaluated after them; now the run's one timeout is spent
    # before it is reached, and that is said
    assert f"jobs/billing/d-late.jsonnet: {not_reached}" in result.stderr
    run = sandbox.LAST_RUN
    assert run is not None
    # every child of the run (all at once, then the one by one after half the time) stopped at
    # the run's one deadline
    assert [mode for mode, _ in run.children][0] == "together" and len(run.children) >= 2
    assert {mode for mode, _ in run.children[1:]} == {"one by one"}
    assert {deadline for _, deadline in run.children} == {run.deadline}


def test_a_run_that_finishes_in_time_starts_one_child(repo: Repo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # "in time": before the spare child's start, which is 1 s on a quiet machine; a loaded one
    # (load 25 on 2 cores) took longer than that for two small files and started the spare, so
    # the wait is set beyond any load here: what is tested is that a run that ends first starts none
    monkeypatch.setattr(sandbox, "SPARE_AFTER", 600.0)
    repo.write("jobs/billing/a-good.jsonnet", minimal_job("a-good"))
    repo.write("jobs/billing/b-good.jsonnet", minimal_job("b-good"))
    assert repo.cli("validate").exit_code == 0
    assert sandbox.LAST_RUN is not None and [m for m, _ in sandbox.LAST_RUN.children] == ["together"]


def test_a_python_module_in_the_repository_is_not_run_by_the_evaluating_child(repo: Repo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The child that evaluates a pull request's Jsonnet runs isolated (``python -I -S``, its path
    this package's and go-jsonnet's directories only: compiler/jsonnet_child.py). Before, it ran
    as ``python -m``, with the working directory (the repository under validation, in CI) first
    on its path: a ``json.py`` the pull request added ran on the CI machine."""
    marker = repo.path / "ran"
    repo.write("json.py", f"open({str(marker)!r}, 'w').write('ran')\nraise SystemExit(3)\n")
    repo.write("jobs/billing/a-good.jsonnet", minimal_job("a-good"))
    monkeypatch.chdir(repo.path)
    result = repo.cli("validate", "--no-cache")
    assert not marker.exists()
    assert result.exit_code == 0, result.output
