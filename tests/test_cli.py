"""`jobplane next` and `jobplane plan` as a developer reads them."""

from __future__ import annotations

import pytest

import subprocess
import sys
from pathlib import Path

from conftest import ROOT, Repo, minimal_job

NY_JOB = """\
local jp = import 'jobplane.libsonnet';
{ name: 'ny-report', team: 'growth', timezone: 'America/New_York', schedule: jp.daily('02:30'),
  steps: [jp.python('run', 'm:f')] }
"""


def test_next_shows_local_times_and_skips_the_dst_gap(repo: Repo) -> None:
    repo.write("jobs/growth/ny.jsonnet", NY_JOB)
    result = repo.cli("next", "ny-report", "-n", "3", "--after", "2026-03-07T00:00:00-05:00")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "ny-report (America/New_York)",
        "  cron(30 2 * * ? *)",
        "    2026-03-07 Sat 02:30 EST  (2026-03-07 07:30 UTC)",
        "    2026-03-09 Mon 02:30 EDT  (2026-03-09 06:30 UTC)",
        "    2026-03-10 Tue 02:30 EDT  (2026-03-10 06:30 UTC)",
    ]


def test_next_for_the_month_end_example(repo: Repo) -> None:
    repo.copy_examples()
    result = repo.cli("next", "month-end-close", "-n", "3", "--after", "2028-01-15T00:00:00+09:00")
    assert "    2028-01-31 Mon 23:30 JST  (2028-01-31 14:30 UTC)" in result.stdout
    assert "    2028-02-29 Tue 23:30 JST  (2028-02-29 14:30 UTC)" in result.stdout


@pytest.mark.parametrize("after", ["9999-12-31T23:00:00Z", "0001-01-01T00:00:00+05:00", "1969-12-31T23:59:59Z"])
def test_next_refuses_the_ends_of_the_calendar_clearly(repo: Repo, after: str) -> None:
    """Issue 40 item 11, for every date input: year 9999 overflowed the fire arithmetic (a traceback)."""
    repo.copy_examples()
    result = repo.cli("next", "month-end-close", "--after", after)
    assert result.exit_code == 2 and f"Invalid value for --after: {after!r} is outside 1970-9998" in result.output
    assert "Traceback" not in result.output


def test_next_explains_manual_and_paused_jobs_and_typos(repo: Repo) -> None:
    repo.copy_examples()
    assert "runs only when started by hand" in repo.cli("next", "backfill-search-index").stdout
    assert "schedule DISABLED" in repo.cli("next", "rotate-audit-archives").stdout
    typo = repo.cli("next", "month-end-closing")
    assert typo.exit_code == 1 and "did you mean 'month-end-close'" in typo.output


def test_plan_says_in_words_what_changes(repo: Repo) -> None:
    repo.copy_examples()
    assert repo.cli("compile").exit_code == 0
    assert repo.cli("plan", "--exit-code").stdout.startswith("No changes.")

    daily = repo.path / "jobs/billing/daily-sales-report.jsonnet"
    text = daily.read_text()
    text = text.replace("jp.daily('02:00')", "jp.daily('03:30')")
    text = text.replace("policy: jp.policy.SKIP_IF_RUNNING", "policy: jp.policy.SKIP_IF_RUNNING_OR_FAILED")
    text = text.replace("opts={ retry: jp.retry(3, '1m'), timeout: '30m' }",
                        "opts={ retry: jp.retry(5, '1m'), timeout: '30m', secrets: { "
                        "WAREHOUSE_PASSWORD: jp.secret('billing/warehouse') } }")
    text = text.replace("  ],\n  notify", "    jp.shell('archive', ['gzip', '-k', 'report.csv']),\n  ],\n  notify")
    daily.write_text(text)
    (repo.path / "jobs/growth/weekly-cohort-export.jsonnet").unlink()
    repo.write("jobs/growth/new.jsonnet", minimal_job("ad-spend-import").replace("'billing'", "'growth'"))

    result = repo.cli("plan", "--exit-code")
    assert result.exit_code == 2
    out = result.stdout
    assert out.splitlines()[0] == "Plan: 1 to add, 1 to change, 1 to remove."
    assert "+ ad-spend-import (new job of team growth, jobs/growth/new.jsonnet)" in out
    assert "- weekly-cohort-export (removed" in out
    assert "~ daily-sales-report" in out
    assert "    schedule: cron(0 2 * * ? *) (Asia/Tokyo) -> cron(30 3 * * ? *) (Asia/Tokyo)" in out
    next_line = next(line for line in out.splitlines() if line.strip().startswith("cron(30 3 * * ? *): next"))
    assert next_line.count("03:30 JST") == 3
    assert "    policy: SKIP_IF_RUNNING -> SKIP_IF_RUNNING_OR_FAILED" in out
    assert "    step added: archive (shell gzip -k report.csv)" in out
    assert "    step extract-orders: retry attempts 3 -> 5" in out
    assert "    step extract-orders: secrets added WAREHOUSE_PASSWORD" in out
    assert "    may now read Secrets Manager secret billing/warehouse" in out  # the grant, in words
    assert ("    IAM daily_sales_report_exec: + secretsmanager:GetSecretValue on arn:${data.aws_partition.current."
            "partition}:secretsmanager:${data.aws_region.current.region}:${data.aws_caller_identity.current."
            "account_id}:secret:billing/warehouse-??????") in out  # in the deployment's own account
    assert "    reads secrets: none" in out.split("+ ad-spend-import", 1)[1]
    # compiling makes the plan empty again
    assert repo.cli("compile").exit_code == 0
    assert repo.cli("plan", "--exit-code").exit_code == 0


def test_plan_against_a_git_ref(repo: Repo) -> None:
    repo.write("jobs/billing/nightly.jsonnet", minimal_job())
    git = ["git", "-C", str(repo.path), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "base"], check=True)
    repo.write("jobs/billing/nightly.jsonnet", minimal_job(policy="ALWAYS_RUN"))
    result = repo.cli("plan", "--against-ref", "HEAD")
    assert result.exit_code == 0, result.output
    assert "~ nightly" in result.stdout and "policy: SKIP_IF_RUNNING -> ALWAYS_RUN" in result.stdout
    bad = repo.cli("plan", "--against-ref", "no-such-ref")
    assert bad.exit_code == 1 and "git ref 'no-such-ref' does not name a commit" in bad.output
    # a ref that is an option of git: a name that does not exist, never an option (issue 10, item 14)
    target = repo.path / "written-by-git.tar"
    for ref in (f"--output={target}", f"--remote=file://{repo.path}", "-o/tmp/x"):
        attack = repo.cli("plan", f"--against-ref={ref}")
        assert attack.exit_code == 1 and "does not name a commit" in attack.output, attack.output
    assert not target.exists()


def test_console_script_help_lists_every_command() -> None:
    script = Path(sys.executable).parent / "jobplane"
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for command in ("validate", "compile", "plan", "next", "schema", "init"):
        assert f"  {command} " in out.stdout


def test_the_help_table_is_each_commands_own_help() -> None:
    """`jobplane --help` lists commands from cli/app.py's table without importing them: the table
    must say what each command's own help says, shortened the same way, and name every command."""
    import click

    from jobplane.cli.app import COMMANDS, main

    ctx = click.Context(main)
    for name, (module, attribute, first_paragraph) in COMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name and command.callback is not None
        assert " ".join((command.help or "").split("\n\n")[0].split()) == first_paragraph, name
        for limit in (30, 45, 60, 200):
            assert click.Command(name, help=first_paragraph).get_short_help_str(limit) == command.get_short_help_str(limit)
    assert main.get_command(ctx, "no-such-command") is None


def test_help_imports_no_command_module() -> None:
    import subprocess
    import sys

    code = ("import sys; from click.testing import CliRunner; from jobplane.cli import main; "
            "r = CliRunner().invoke(main, ['--help']); assert r.exit_code == 0, r.output; "
            "print(sorted(m for m in sys.modules if m.startswith(('jobplane.cli.', 'jobplane.compiler', "
            "'jobplane.contract.config', 'pydantic', 'boto3'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['jobplane.cli.app']"


def test_validate_imports_neither_pydantic_nor_the_asl_builder() -> None:
    """Issue 13's validate budget (10x `python -c pass`): pydantic's import alone took 7x, and
    the ASL builder and boto3 are not needed to check definitions (compiler/fields.py,
    compiler/overrides.py). A structural check, so no test asserts a wall-clock time; the
    figure itself is bench/cli_start.py's."""
    code = ("import sys; from click.testing import CliRunner; from jobplane.cli import main; "
            f"r = CliRunner().invoke(main, ['--root', {str(ROOT)!r}, 'validate']); assert r.exit_code == 0, r.output; "
            "print(r.output.strip()); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'boto3', 'botocore', 'moto'}) + "
            "sorted(m for m in sys.modules if m in ('jobplane.compiler.asl', 'jobplane.compiler.terraform')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    valid, imported = done.stdout.strip().splitlines()
    assert "jobs valid" in valid
    assert imported == "[]"


def test_plan_names_a_job_that_still_holds_the_init_templates_placeholders(repo: Repo) -> None:
    """`jobplane init` writes a valid file whose description, runbook and target are placeholders;
    validate passes it, so plan (run on every pull request) names each placeholder left, and
    stops once the job is written."""
    repo.copy_examples()
    assert repo.cli("compile").exit_code == 0
    assert repo.cli("init", "billing/invoice-reminders").exit_code == 0
    assert repo.cli("validate").exit_code == 0
    plan = repo.cli("plan").stdout
    (warning,) = [line for line in plan.splitlines() if line.startswith("WARNING: invoice-reminders")]
    assert "(jobs/billing/invoice-reminders.jsonnet) still has jobplane init's placeholder description, runbook " \
           "impact, runbook recovery, step target myapp.jobs:run" in warning
    assert "whoever is paged" in warning and "every run fails (exit 78)" in warning
    path = repo.path / "jobs" / "billing" / "invoice-reminders.jsonnet"
    text = path.read_text().replace("myapp.jobs:run", "billing.reminders:send")
    path.write_text(text)
    (warning,) = [line for line in repo.cli("plan").stdout.splitlines() if line.startswith("WARNING: invoice-reminders")]
    assert "step target" not in warning and "every run fails" not in warning and "whoever is paged" in warning
    from jobplane.compiler import job_template

    for placeholder in (job_template.DESCRIPTION, job_template.IMPACT, job_template.RECOVERY):
        text = text.replace(placeholder, "Sends the invoice reminders; finance needs them by 9:00.")
    path.write_text(text)
    assert "WARNING: invoice-reminders" not in repo.cli("plan").stdout
    assert not [line for line in plan.splitlines() if line.startswith("WARNING: ") and "invoice-reminders" not in line]


def test_next_says_when_a_schedule_never_fires(repo: Repo) -> None:
    """Issue 63 item 10: a schedule with no fire printed nothing. One that can never fire is a
    validation problem naming it; one whose fires are all before --after says so."""
    repo.write("jobs/growth/feb.jsonnet", """\
        { name: 'feb-31', team: 'growth', schedule: 'cron(59 23 31 2 ? *)', steps: [{ name: 'a', python: 'm:f' }] }
        """)
    result = repo.cli("next", "feb-31")
    assert result.exit_code != 0
    assert "jobs/growth/feb.jsonnet" in result.output and "job 'feb-31': schedule: 'cron(59 23 31 2 ? *)' never fires" \
        in result.output
    (repo.path / "jobs/growth/feb.jsonnet").unlink()
    repo.write("jobs/growth/once.jsonnet", """\
        { name: 'once', team: 'growth', timezone: 'UTC', schedule: ['at(2026-01-01T09:00:00)', 'cron(0 9 1 1 ? 2027)'],
          steps: [{ name: 'a', python: 'm:f' }] }
        """)
    result = repo.cli("next", "once", "--after", "2027-06-01T00:00:00Z")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["once (UTC)", "  at(2026-01-01T09:00:00)", "    never fires after 2027-06-01T00:00+00:00",
                                          "  cron(0 9 1 1 ? 2027)", "    never fires after 2027-06-01T00:00+00:00"]


def _console(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The console script in a process of its own, then the Click and command modules it imported."""
    code = ("import sys; sys.argv = ['jobplane'] + sys.argv[1:]; from jobplane.cli import console\n"
            "try:\n    console()\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
            "print(sorted({m.split('.')[0] if m.split('.')[0] in ('pydantic', 'holidays', '_gojsonnet') else m "
            "for m in sys.modules if m in ('click', 'jobplane.cli.app', 'jobplane.compiler.model', "
            "'jobplane.compiler.validate') or m.split('.')[0] in ('pydantic', 'holidays', '_gojsonnet')}), "
            "file=sys.stderr); sys.exit(code)")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_help_is_clicks_own_and_once_kept_is_printed_without_importing_click(tmp_path: Path) -> None:
    """`jobplane --help` (issue 66 item 1: <= 4x `python -c pass`; Click's import alone was 4x):
    the text Click renders, kept in the user's cache directory and printed from there while the
    command table, Click and the width are unchanged (cli/quick_help.py)."""
    import os

    env = os.environ | {"JOBPLANE_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "72"}
    clicks = subprocess.run([sys.executable, "-c", "from jobplane.cli.app import main; main(['--help'], "
                             "prog_name='jobplane')"], env=env, capture_output=True, text=True, timeout=120)
    first, second, short = _console(["--help"], env), _console(["--help"], env), _console(["-h"], env)
    assert clicks.returncode == first.returncode == second.returncode == short.returncode == 0, first.stderr
    assert "Commands:" in clicks.stdout and "-h, --help" in clicks.stdout
    assert first.stdout == second.stdout == short.stdout == clicks.stdout
    assert first.stderr.strip() == "['click', 'jobplane.cli.app']"  # rendered by Click, then kept
    assert second.stderr.strip() == short.stderr.strip() == "[]"
    # another width is rendered again, as Click renders it
    wide = env | {"COLUMNS": "120"}
    clicks_wide = subprocess.run([sys.executable, "-c", "from jobplane.cli.app import main; main(['--help'], "
                                  "prog_name='jobplane')"], env=wide, capture_output=True, text=True, timeout=120)
    again = _console(["--help"], wide)
    assert again.stdout == clicks_wide.stdout != first.stdout
    assert again.stderr.strip() == "['click', 'jobplane.cli.app']"


def test_validate_with_every_result_kept_loads_neither_the_model_nor_jsonnet_nor_holidays(tmp_path: Path) -> None:
    """A second `jobplane validate` of unchanged files (issue 66 item 1: <= 8x `python -c pass`)
    takes every file's result and jobplane.toml's calendar problems from its cache: the model,
    go-jsonnet and the holidays package (whose country list imported every country) are not
    imported, and it says what the first run said."""
    import os

    env = os.environ | {"JOBPLANE_CACHE_DIR": str(tmp_path / "cache")}
    first, second = _console(["validate"], env), _console(["validate"], env)
    assert first.returncode == second.returncode == 0, first.stderr
    assert "jobs valid" in first.stdout and second.stdout == first.stdout
    assert "holidays" in first.stderr and "jobplane.compiler.validate" in first.stderr  # the examples' JP calendar
    assert second.stderr.strip().splitlines()[-1] == "['click', 'jobplane.cli.app']"


def test_a_kept_jobplane_toml_problem_is_still_reported(repo: Repo, tmp_path: Path) -> None:
    """jobplane.toml's calendar problems are kept with the results (compiler/validate_cache.py):
    a run that takes them from the cache reports them as the run that found them."""
    import os

    with (repo.path / "jobplane.toml").open("a") as f:
        f.write('\n[calendars.nowhere]\nholidays = "XX"\n')
    repo.write("jobs/billing/a-good.jsonnet", minimal_job("a-good"))
    env = os.environ | {"JOBPLANE_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", "import sys; from jobplane.cli import main; main()",
                            "--root", str(repo.path), "validate"], env=env, capture_output=True, text=True,
                           timeout=120) for _ in range(2)]
    for run in runs:
        assert run.returncode == 2, run.stdout + run.stderr
        assert "calendars.nowhere.holidays" in run.stderr and "knows no country 'XX'" in run.stderr, run.stderr
    assert runs[0].stderr == runs[1].stderr
