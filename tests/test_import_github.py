"""GitHub Actions workflows through the import registry (issue 51, proof 7): real workflow files
from public repositories (tests/fixtures/import/github/, each naming its source), proved fire by
fire against GitHub's documented cron and DST rules; what GitHub's runner provides and a jobplane
step does not (actions, expressions, runner variables) refused with the reason."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from jobplane.compiler.validate import load_jobs
from jobplane.contract.config import load_config
from jobplane.importer import formats
from jobplane.importer.entries import SourceSchedule
from jobplane.importer.verify import verify


def _argv(step):  # type: ignore[no-untyped-def]
    """A shell step's argv (the kind's target), None for any other kind."""
    return step.target if step.kind.name == "shell" else None

GITHUB = Path(__file__).parent / "fixtures" / "import" / "github"
FROM = "2026-12-03T00:00:00Z"


def _import(repo, *args: str):
    return repo.cli("import", "--team", "billing", "--from", FROM, *args)


def _jobs(repo) -> dict[str, str]:
    team = repo.path / "jobs" / "billing"
    return {p.stem: p.read_text() for p in sorted(team.glob("*.jsonnet"))} if team.is_dir() else {}


def test_real_workflows_import_verify_or_say_why_not(repo, tmp_path) -> None:
    report = tmp_path / "report.json"
    result = _import(repo, *(str(GITHUB / f) for f in ("keep-alive.yml", "ping.yml", "supabase-keep-alive.yml",
                                                       "manual.yml")), "--report", str(report))
    assert result.exit_code == 1, result.output
    assert sorted(_jobs(repo)) == ["keep-hf-space-alive"]
    job = _jobs(repo)["keep-hf-space-alive"]
    assert "schedule: 'cron(*/5 * * * ? *)'" in job and "timezone: 'UTC'" in job  # GitHub's default zone
    assert "jp.shell('run', ['bash', '-e', '-c', 'curl -L -s https://nv1023-genre-classifier.hf.space/" in job
    assert "timeout: '6h'" in job  # GitHub's default timeout-minutes, 360
    data = json.loads(report.read_text())
    verified = {j["job"]: j["verified"] for j in data["jobs"] if j["imported"]}
    assert verified["keep-hf-space-alive"]["summary"] == "yes (105408 fires)"  # 288 a day, 366 days
    # */7 fires at :56 and then :00, 4 minutes apart: GitHub's 5-minute floor makes its fires unknown
    assert "'*/7 * * * *' asks for runs 4 minutes apart (at 00:56 and 01:00)" in result.output
    assert "uses the action 'actions/checkout@v4'" in result.output
    assert "uses the action 'actions/setup-node@v4'" in result.output
    skipped = [s["reason"] for s in data["skipped"]]  # nothing to schedule: reported, not counted
    assert any("workflow_dispatch only" in r and "not scheduled" in r for r in skipped)
    assert repo.cli("validate").exit_code == 0
    next_out = repo.cli("next", "keep-hf-space-alive", "-n", "2", "--after", FROM).output
    assert "2026-12-03 Thu 00:05 UTC" in next_out and "2026-12-03 Thu 00:10 UTC" in next_out


WORKFLOW = """\
name: Nightly report
on:
  schedule:
    - cron: '15 4 * * 1-5'
    - cron: '0 12 1 * *'
  push:
    branches: [main]
env:
  REPORT_BUCKET: acme-reports
jobs:
  report:
    runs-on: ubuntu-22.04
    timeout-minutes: 30
    env:
      API_TOKEN: ${{ secrets.REPORT_API_TOKEN }}
      GH_TOKEN: ${{ secrets.GITHUB_TOKEN }}
    defaults:
      run:
        shell: bash
    steps:
      - name: Build
        run: |
          mkdir -p out && cd out && echo built > step1.txt
      - name: Fail
        run: test -f step1.txt
      - name: Never
        run: echo never > never.txt
"""


def test_run_steps_secrets_and_every_schedule_of_a_workflow(repo, tmp_path) -> None:
    workflow = tmp_path / "report.yml"
    workflow.write_text(WORKFLOW)
    result = _import(repo, str(workflow))
    assert result.exit_code == 0, result.output
    job = _jobs(repo)["nightly-report"]
    assert "schedule: ['cron(15 4 ? * 2-6 *)', 'cron(0 12 1 * ? *)']" in job
    assert "API_TOKEN: jp.secret('billing/report-api-token')" in job
    assert "GH_TOKEN: jp.secret('billing/github-token')" in job
    assert "REPORT_BUCKET: 'acme-reports'" in job and "timeout: '30m'" in job
    assert "the GitHub secret REPORT_API_TOKEN" in result.output and "GITHUB_TOKEN" in result.output
    assert "also ran on push" in result.output
    assert "yes (" in result.output
    # the steps run in order, each in its own shell as GitHub runs them (step 2's `test` does not
    # see step 1's `cd`), and the first that fails ends the run
    shell = {lj.job.name: _argv(lj.job.steps[0]) for lj in load_jobs(load_config(repo.path))}["nightly-report"]
    assert shell[:2] == ["sh", "-c"]
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(shell, cwd=work, capture_output=True, text=True)
    assert done.returncode == 1 and not (work / "never.txt").exists()
    assert (work / "out" / "step1.txt").read_text() == "built\n"


def test_what_only_github_provides_is_refused_with_the_reason(repo, tmp_path) -> None:
    workflow = tmp_path / "wf.yml"
    workflow.write_text("""\
on:
  schedule: [{cron: '0 6 * * *'}]
concurrency: {group: nightly}
jobs:
  a:
    runs-on: ubuntu-latest
    if: github.repository == 'acme/app'
    steps:
      - run: echo "${{ github.sha }}"
      - run: echo "done=1" >> "$GITHUB_OUTPUT"
        shell: pwsh
  b:
    needs: a
    runs-on: ubuntu-latest
    steps: [{run: 'echo "$RUNNER_TEMP"'}]
""")
    result = _import(repo, str(workflow))
    assert result.exit_code == 1 and _jobs(repo) == {}
    for reason in ("runs only when a GitHub expression is true", "${{github.sha}}", "shell 'pwsh'",
                   "runs after other jobs of the workflow", "jobs 'b' run after this one",
                   "reads $RUNNER_TEMP", "concurrency: GitHub queues"):
        assert reason in result.output, reason


def test_cancel_in_progress_is_replace_and_takes_replace_as(repo, tmp_path) -> None:
    workflow = tmp_path / "wf.yml"
    workflow.write_text("on:\n  schedule: [{cron: '*/30 * * * *'}]\nconcurrency: {group: x, cancel-in-progress: true}\n"
                        "jobs:\n  sync:\n    steps: [{run: ./sync}]\n")
    result = _import(repo, str(workflow))
    assert result.exit_code == 0, result.output
    assert "policy: jp.policy.REPLACE" in _jobs(repo)["wf"]
    result = _import(repo, str(workflow), "--replace-as", "SKIP_IF_RUNNING", "--force")
    assert result.exit_code == 0, result.output
    assert "policy: jp.policy.SKIP_IF_RUNNING" in _jobs(repo)["wf"]


def test_schedules_whose_fires_github_does_not_document_are_refused(repo, tmp_path) -> None:
    workflow = tmp_path / "wf.yml"
    crons = ["0 0 */2 * 1", "0 9 * * 7", "0 9 ? * 1", "0 9 L * *"]
    workflow.write_text("on:\n  schedule:\n" + "".join(f"    - cron: '{c}'\n" for c in crons)
                        + "jobs:\n  j:\n    steps: [{run: ./x}]\n")
    result = _import(repo, str(workflow))
    assert result.exit_code == 1
    assert "GitHub's docs do not say which its scheduler does" in result.output  # POSIX ORs, Vixie ANDs
    assert "GitHub documents day-of-week 0-6" in result.output
    assert result.output.count("GitHub documents POSIX cron with * , - / only") == 2


def test_a_timezone_follows_githubs_documented_dst_rule(repo, tmp_path) -> None:
    """GitHub: "during DST spring-forward transitions, scheduled workflows in skipped hours
    advance to the next valid time" (02:30 runs at 03:00); EventBridge skips the time. The oracle
    says so, also for a wildcard hour, where cron's (and cronsim's) rule would not fire at 03:00."""
    start = datetime(2026, 12, 3, tzinfo=timezone.utc)
    fixed = verify((SourceSchedule("github-cron", "30 2 * * *"),), ["cron(30 2 * * ? *)"], "America/New_York", start)
    assert fixed.dst_only and [str(d) for d in fixed.differences] == [
        "2027-03-14 Sun 03:00 EDT (07:00 UTC): the source fires, the job does not"]
    hourly = verify((SourceSchedule("github-cron", "30 * * * *"),), ["cron(30 * * * ? *)"], "America/New_York",
                    start)
    assert [str(d) for d in hourly.differences][:1] == [
        "2027-03-14 Sun 03:00 EDT (07:00 UTC): the source fires, the job does not"]
    assert any("2027-11-07 Sun 01:30 EST" in str(d) for d in hourly.differences)  # the repeated hour
    utc = verify((SourceSchedule("github-cron", "30 * * * *"),), ["cron(30 * * * ? *)"], "UTC", start)
    assert utc.status == "same" and utc.fires == 366 * 24
    wrong = verify((SourceSchedule("github-cron", "0 9 * * 1"),), ["cron(0 9 ? * 1 *)"], "UTC", start)
    assert wrong.status == "differs"  # the proof can fail: GitHub's 1 is Monday, EventBridge's is Sunday
    workflow = tmp_path / "wf.yml"
    workflow.write_text("on:\n  schedule:\n    - cron: '30 2 * * *'\n      timezone: America/New_York\n"
                        "jobs:\n  j:\n    steps: [{run: ./x}]\n")
    result = _import(repo, str(workflow))
    assert result.exit_code == 1 and "2027-03-14 Sun 03:00 EDT" in result.output and "--accept-dst" in result.output
    result = _import(repo, str(workflow), "--accept-dst")
    assert result.exit_code == 0 and "timezone: 'America/New_York'" in _jobs(repo)["wf"]


def test_one_registry_names_formats_choices_detection_and_dialects(repo, tmp_path) -> None:
    names = formats.names()
    assert names == ["eventbridge", "celery", "ecschedule", "github-actions", "kubernetes", "system-crontab",
                     "crontab"]
    help_text = repo.cli("import", "--help").output
    assert "github-actions" in help_text and "[auto|eventbridge|celery|ecschedule|github-actions|" in help_text
    assert set(formats.DIALECTS) == {"unix-cron", "eventbridge", "celery-crontab", "interval", "github-cron"}
    # an explicit --format wins over detection: a workflow read as Kubernetes is not a CronJob
    result = _import(repo, str(GITHUB / "keep-alive.yml"), "--format", "kubernetes")
    assert "not a CronJob" in result.output and _jobs(repo) == {}
    result = _import(repo, str(GITHUB / "keep-alive.yml"), "--format", "github-actions")
    assert result.exit_code == 0, result.output
