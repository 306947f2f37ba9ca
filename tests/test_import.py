"""``jobplane import`` on real files (tests/fixtures/import/README.md says where each came from):
what it writes validates, is formatted as jsonnetfmt would, and fires when the source did, by an
oracle the importer does not use for the job side (cronsim against ``jobplane next``); what it
cannot import exactly it refuses, naming why; unreadable input writes nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from cronsim import CronSim

from jobplane.compiler.validate import load_jobs
from jobplane.contract.config import load_config
from jobplane.contract.schedule import next_fire_times
from jobplane.importer.entries import SourceSchedule
from jobplane.importer.verify import verify


def _argv(step):  # type: ignore[no-untyped-def]
    """A shell step's argv (the kind's target), None for any other kind."""
    return step.target if step.kind.name == "shell" else None

FIXTURES = Path(__file__).parent / "fixtures" / "import"
FROM = "2026-12-03T00:00:00Z"


def _import(repo, *args: str):
    return repo.cli("import", "--team", "billing", "--from", FROM, *args)


def _jobs(repo) -> dict[str, str]:
    team = repo.path / "jobs" / "billing"
    return {p.stem: p.read_text() for p in sorted(team.glob("*.jsonnet"))} if team.is_dir() else {}


def _report(path: Path) -> dict:
    return json.loads(path.read_text())


def test_the_crontab5_example_imports_with_every_fire_kept_and_the_files_validate(repo, tmp_path) -> None:
    report = tmp_path / "report.json"
    result = _import(repo, str(FIXTURES / "user.crontab"), "--timezone", "Europe/London", "--report", str(report))
    assert result.exit_code == 0, result.output
    jobs = _jobs(repo)
    assert sorted(jobs) == ["daily-job", "mail", "monthly", "run", "run-2"]
    data = _report(report)
    assert [j["verified"]["summary"].split(" (")[0] for j in data["jobs"]] == ["yes"] * 5
    # cron's weekday 1-5 is EventBridge's 2-6; sun stays SUN
    assert {j["job"]: j["schedule"] for j in data["jobs"]}["mail"] == ["cron(0 22 ? * 2-6 *)"]
    # the % rule: the text after the first % is the command's standard input, % as line breaks
    shell = {lj.job.name: _argv(lj.job.steps[0]) for lj in load_jobs(load_config(repo.path))}
    assert shell["mail"] == ["/bin/bash", "-c",
                             "printf '%s' 'Joe,\n\nWhere are your kids?\n' | (\nmail -s \"It's 10pm\" joe\n)"]
    assert "SHELL" not in jobs["mail"] and "'/bin/bash', '-c'" in jobs["mail"]  # SHELL runs the command
    assert any("MAILTO='paul'" in n for n in data["jobs"][0]["notes"])
    assert "// run at 2:15pm" not in jobs["monthly"] and "run at 2:15pm on the first" in jobs["monthly"]
    assert repo.cli("validate").exit_code == 0
    # the written job fires when cron does, by cronsim against `jobplane next`'s function
    zone = ZoneInfo("Europe/London")
    start = datetime(2026, 12, 3, tzinfo=timezone.utc)
    cron = CronSim("15 14 1 * *", start.astimezone(zone))
    assert next_fire_times("cron(15 14 1 * ? *)", zone, start, 6) == [next(cron) for _ in range(6)]
    next_out = repo.cli("next", "monthly", "-n", "2", "--after", FROM).output
    assert "2027-01-01 Fri 14:15 GMT" in next_out and "2027-02-01 Mon 14:15 GMT" in next_out


def test_written_files_are_as_jsonnetfmt_formats_them(repo) -> None:
    assert shutil.which("jsonnetfmt"), "jsonnetfmt is Debian's package jsonnet (.ci/run installs it)"
    for source, extra in [("user.crontab", ["--timezone", "UTC"]), ("get-schedule.json", []),
                          ("celeryconfig.py", []), ("etc/crontab", ["--timezone", "UTC"])]:
        _import(repo, str(FIXTURES / source), *extra)
    files = sorted((repo.path / "jobs" / "billing").glob("*.jsonnet"))
    assert len(files) >= 10
    for f in files:
        check = subprocess.run(["jsonnetfmt", "--test", str(f)], capture_output=True, text=True)
        assert check.returncode == 0, (f.name, subprocess.run(["jsonnetfmt", str(f)], capture_output=True,
                                                              text=True).stdout)


def test_a_system_crontab_drops_the_user_field_and_keeps_shell_commands(repo) -> None:
    result = _import(repo, str(FIXTURES / "etc" / "crontab"), "--timezone", "UTC")
    assert result.exit_code == 0, result.output
    jobs = _jobs(repo)
    assert sorted(jobs) == ["cron-daily", "cron-hourly", "cron-monthly", "cron-weekly"]
    assert "'/bin/sh', '-c', 'test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.weekly; }'" \
        in jobs["cron-weekly"]
    assert "'root'" not in jobs["cron-weekly"]
    assert "schedule: 'cron(47 6 ? * 1 *)'" in jobs["cron-weekly"]  # Unix 7 is Sunday, EventBridge 1


def test_a_source_without_a_timezone_is_refused_until_one_is_given(repo) -> None:
    result = _import(repo, str(FIXTURES / "cronjob.yaml"))
    assert result.exit_code == 1
    assert "does not say its timezone" in result.output and "--timezone" in result.output
    assert _jobs(repo) == {}
    result = _import(repo, str(FIXTURES / "cronjob.yaml"), "--timezone", "UTC")
    assert result.exit_code == 0, result.output
    hello = _jobs(repo)["hello"]
    assert "schedule: 'cron(* * * * ? *)'" in hello and "policy: jp.policy.ALWAYS_RUN" in hello
    assert "retry: jp.retry(7, '10s', 2, '6m')" in hello  # Kubernetes' default backoffLimit 6: 7 attempts
    assert "consider SKIP_IF_RUNNING" in result.output


MANIFESTS = """\
apiVersion: v1
kind: List
items:
- apiVersion: batch/v1
  kind: CronJob
  metadata: {name: ledger-close, annotations: {description: Closes the day's ledger}}
  spec:
    schedule: "30 23 * * *"
    timeZone: Asia/Tokyo
    concurrencyPolicy: Forbid
    suspend: true
    jobTemplate:
      spec:
        activeDeadlineSeconds: 7200
        backoffLimit: 2
        template:
          spec:
            containers:
            - name: app
              command: [python, manage.py, close_ledger]
              args: ["--day", "yesterday"]
              env:
              - {name: LEDGER_MODE, value: strict}
              - name: DB_PASSWORD
                valueFrom: {secretKeyRef: {name: ledger-db, key: password}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cache-warm}
spec:
  schedule: "*/10 * * * *"
  timeZone: UTC
  concurrencyPolicy: Replace
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: app
            command: [celery, -A, proj, call, cache.warm, --kwargs, '{"full": true}']
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: from-configmap}
spec:
  schedule: "0 5 * * *"
  timeZone: UTC
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: app
            command: [./report]
            env:
            - name: REGION
              valueFrom: {configMapKeyRef: {name: settings, key: region}}
"""


def test_kubernetes_policies_secrets_and_what_a_manifest_does_not_hold(repo, tmp_path) -> None:
    manifest = tmp_path / "cronjobs.yaml"
    manifest.write_text(MANIFESTS)
    result = _import(repo, str(manifest))
    assert result.exit_code == 1
    jobs = _jobs(repo)
    assert sorted(jobs) == ["cache-warm", "ledger-close"]  # Replace is imported (REPLACE), no longer refused
    close = jobs["ledger-close"]
    assert "jp.django('close_ledger', 'close_ledger', ['--day', 'yesterday']" in close
    assert "policy: jp.policy.SKIP_IF_RUNNING" in close and "enabled: false" in close
    assert "timeout: '2h'" in close and "retry: jp.retry(3," in close
    assert "DB_PASSWORD: jp.secret('billing/ledger-db-password')" in close and "strict" in close
    assert "timezone: 'Asia/Tokyo'" in close and "description: \"Closes the day's ledger\"" in close
    assert "create the Secrets Manager secret 'billing/ledger-db-password'" in result.output
    assert "configMapKeyRef" in result.output
    # concurrencyPolicy Replace is the REPLACE policy (issue 51.6); --replace-as still chooses another
    assert "policy: jp.policy.REPLACE" in _jobs(repo)["cache-warm"]
    result = _import(repo, str(manifest), "--replace-as", "SKIP_IF_RUNNING", "--force")
    assert "imported as SKIP_IF_RUNNING, as --replace-as says" in result.output
    warm = _jobs(repo)["cache-warm"]
    assert "jp.celery('warm', 'cache.warm', [], { full: true }" in warm
    assert "policy: jp.policy.SKIP_IF_RUNNING" in warm
    assert repo.cli("validate").exit_code == 0


def test_ecschedule_rules_are_utc_and_a_template_value_is_refused(repo) -> None:
    result = _import(repo, str(FIXTURES / "ecschedule.yaml"))
    assert result.exit_code == 1
    assert sorted(_jobs(repo)) == ["task-name2"]
    assert "jp.shell('run', ['subcommand2', 'arg']" in _jobs(repo)["task-name2"]
    assert "timezone: 'UTC'" in _jobs(repo)["task-name2"]
    assert "FUGA" in result.output and "ecschedule template" in result.output


def test_eventbridge_schedules_rules_and_targets(repo, tmp_path) -> None:
    result = _import(repo, str(FIXTURES / "get-schedule.json"))
    assert result.exit_code == 0, result.output
    ledger = _jobs(repo)["nightly-ledger-export"]
    assert "jp.django('export_ledger', 'export_ledger', ['--days', '1']" in ledger
    assert "enabled: false" in ledger and "timezone: 'Asia/Tokyo'" in ledger and "acme-lake" in ledger
    listing = tmp_path / "list.json"
    listing.write_text(json.dumps({"Schedules": [{"Name": "x", "GroupName": "default", "State": "ENABLED"}]}))
    result = _import(repo, str(listing))
    assert result.exit_code == 2 and "get-schedule" in result.output
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"Rules": [
        {"Name": "weekly-digest", "ScheduleExpression": "cron(0 8 ? * MON *)", "State": "ENABLED"},
        {"Name": "on-upload", "EventPattern": "{}", "State": "ENABLED"},
        {"Name": "lambda-thing", "ScheduleExpression": "rate(1 hour)", "State": "ENABLED"}]}))
    (tmp_path / "weekly-digest.targets.json").write_text(json.dumps({"Targets": [
        {"Id": "1", "Arn": "arn:aws:ecs:us-east-1:123456789012:cluster/c", "EcsParameters": {"TaskCount": 1},
         "Input": json.dumps({"containerOverrides": [{"name": "app", "command": ["bin/digest", "--weekly"]}]})}]}))
    (tmp_path / "lambda-thing.targets.json").write_text(json.dumps({"Targets": [
        {"Id": "1", "Arn": "arn:aws:lambda:us-east-1:123456789012:function:thing"}]}))
    result = _import(repo, str(rules), str(tmp_path / "weekly-digest.targets.json"),
                     str(tmp_path / "lambda-thing.targets.json"))
    assert result.exit_code == 1
    assert "schedule: 'cron(0 8 ? * MON *)'" in _jobs(repo)["weekly-digest"]
    assert "timezone: 'UTC'" in _jobs(repo)["weekly-digest"]
    assert "not an ECS task" in result.output and "event-pattern rule" in result.output


def test_celery_beat_read_statically(repo, tmp_path) -> None:
    result = _import(repo, str(FIXTURES / "celeryconfig.py"))
    assert result.exit_code == 1
    job = _jobs(repo)["add-every-monday-morning"]
    assert "jp.celery('add', 'tasks.add', [16, 16], {}" in job
    assert "schedule: 'cron(30 7 ? * 2 *)'" in job and "timezone: 'UTC'" in job
    assert "every 30 s" in result.output and "at most once a minute" in result.output
    both = tmp_path / "beat.py"
    both.write_text("from celery.schedules import crontab\nbeat_schedule = {\n"
                    "    'first-monday': {'task': 'm.t', 'schedule': crontab(0, 9, day_of_week='mon', day_of_month='1-7')},\n"
                    "    'hourly': {'task': 'm.h', 'schedule': timedelta(hours=1)},\n"
                    "    'computed': {'task': 'm.c', 'schedule': EVERY},\n}\n")
    result = _import(repo, str(both))
    assert result.exit_code == 2 and f"{both}:5" in result.output and "not a literal" in result.output
    both.write_text(both.read_text().replace("    'computed': {'task': 'm.c', 'schedule': EVERY},\n", ""))
    result = _import(repo, str(both))
    assert result.exit_code == 1
    assert "both day_of_month and day_of_week" in result.output and "cron(0 9 ? * MON#1 *)" in result.output
    assert "schedule: 'rate(1 hour)'" in _jobs(repo)["hourly"]


def test_day_fields_or_becomes_two_schedules_and_and_is_refused(repo, tmp_path) -> None:
    tab = tmp_path / "tab"
    tab.write_text("0 9 1 * MON /srv/bin/first-or-monday.sh\n0 9 */2 * MON /srv/bin/odd-mondays.sh\n")
    result = _import(repo, str(tab), "--timezone", "UTC")
    assert result.exit_code == 1
    assert "schedule: ['cron(0 9 1 * ? *)', 'cron(0 9 ? * MON *)']," in _jobs(repo)["first-or-monday"]
    assert "odd-mondays" not in _jobs(repo)
    assert "match both day-of-month '*/2' and day-of-week 'MON'" in result.output


def test_a_fire_that_daylight_saving_moves_is_refused_unless_accepted(repo, tmp_path) -> None:
    tab = tmp_path / "tab"
    tab.write_text("30 2 * * * /srv/bin/backup.sh\n")
    result = _import(repo, str(tab), "--timezone", "America/New_York")
    assert result.exit_code == 1 and _jobs(repo) == {}
    assert "2027-03-14 Sun 03:00 EDT (07:00 UTC): the source fires, the job does not" in result.output
    assert "--accept-dst" in result.output
    result = _import(repo, str(tab), "--timezone", "America/New_York", "--accept-dst")
    assert result.exit_code == 0 and "backup" in _jobs(repo)
    result = _import(repo, str(tab), "--timezone", "Asia/Tokyo", "--force")  # no DST: the same fires
    assert result.exit_code == 0 and "yes (366 fires)" in result.output


def test_the_verifier_finds_a_wrong_translation() -> None:
    """The proof can fail: Unix weekday 1 is Monday, EventBridge's 1 is Sunday."""
    start = datetime(2026, 12, 3, tzinfo=timezone.utc)
    wrong = verify((SourceSchedule("unix-cron", "0 9 * * 1"),), ["cron(0 9 ? * 1 *)"], "UTC", start)
    assert wrong.status == "differs" and not wrong.dst_only
    assert str(wrong.first) == "2026-12-06 Sun 09:00 UTC (09:00 UTC): the job fires, the source does not"
    right = verify((SourceSchedule("unix-cron", "0 9 * * 1"),), ["cron(0 9 ? * MON *)"], "UTC", start)
    assert right.status == "same" and right.fires == 52
    hourly = verify((SourceSchedule("unix-cron", "0 * * * *"),), ["cron(0 * * * ? *)"], "America/New_York", start)
    # cron runs a wildcard-hour job in both repeated hours of the fall-back; EventBridge once
    assert hourly.dst_only and [str(d) for d in hourly.differences] == [
        "2027-11-07 Sun 01:00 EST (06:00 UTC): the source fires, the job does not"]
    assert hourly.fires == sum(1 for _ in _hours(start, 366, "America/New_York"))


def test_a_window_without_a_fire_is_widened_to_the_first_fire_or_not_proven() -> None:
    """Issue 63 item 11: '0 0 29 2 *' from 2026 has no fire in 366 days, and 'same fires: yes
    (0 fires)' proved nothing. The window now reaches the first fire (2028-02-29), where a wrong
    translation shows; with no fire in 8 years it says it is not proven."""
    start = datetime(2026, 3, 1, tzinfo=timezone.utc)
    leap = verify((SourceSchedule("unix-cron", "0 0 29 2 *"),), ["cron(0 0 29 2 ? *)"], "UTC", start)
    assert leap.status == "same" and leap.fires == 1
    assert leap.summary() == "yes (1 fire in 730 days, widened to the first fire)"
    wrong = verify((SourceSchedule("unix-cron", "0 0 29 2 *"),), ["cron(0 0 29 2 ? 2032)"], "UTC", start)
    assert wrong.status == "differs"
    assert str(wrong.first) == "2028-02-29 Tue 00:00 UTC (00:00 UTC): the source fires, the job does not"
    gone = verify((SourceSchedule("eventbridge", "at(2025-01-01T00:00:00)"),), ["at(2025-01-01T00:00:00)"], "UTC", start)
    assert gone.status == "unproven" and gone.summary().startswith("not proven: neither the source nor the job fires")
    usual = verify((SourceSchedule("unix-cron", "0 9 * * 1"),), ["cron(0 9 ? * MON *)"], "UTC", start)
    assert usual.summary() == "yes (53 fires)" and usual.days == 366  # 2026-03-02 to 2027-03-02: 53 Mondays


def test_import_says_how_far_it_looked_for_a_leap_day_job(repo, tmp_path) -> None:
    tab = tmp_path / "tab"
    tab.write_text("0 0 29 2 * /srv/bin/leap.sh\n")
    result = _import(repo, str(tab), "--timezone", "UTC")  # from 2026-12-03: the first fire is 2028-02-29
    assert result.exit_code == 0, result.output
    assert "yes (1 fire in 453 days, widened to the first fire)" in result.output
    assert "(0 fires)" not in result.output


def _hours(start: datetime, days: int, zone: str):
    z = ZoneInfo(zone)
    first = (start.astimezone(z) + timedelta(days=1)).replace(hour=0, minute=0, second=0)
    it = CronSim("0 * * * *", first - timedelta(seconds=1))
    end = (first.replace(tzinfo=None) + timedelta(days=days)).replace(tzinfo=z)
    for t in it:
        if t >= end:
            return
        yield t


def test_secret_values_are_never_written(repo, tmp_path) -> None:
    tab = tmp_path / "tab"
    tab.write_text("STRIPE_KEY=sk_live_51Habc\nDATABASE_URL=postgres://app:hunter2pw@db/app\nLOG_LEVEL=info\n"
                   "0 1 * * * /srv/bin/charge.sh\n0 2 * * * /srv/bin/refund.sh\n")
    report = tmp_path / "r.json"
    result = _import(repo, str(tab), "--timezone", "UTC", "--report", str(report))
    assert result.exit_code == 0, result.output
    written = "".join(_jobs(repo).values()) + report.read_text() + result.output
    assert "sk_live_51Habc" not in written and "hunter2pw" not in written
    assert "STRIPE_KEY: jp.secret('billing/stripe-key')" in _jobs(repo)["charge"]
    assert "DATABASE_URL: jp.secret('billing/database-url')" in _jobs(repo)["charge"]
    assert "LOG_LEVEL: 'info'" in _jobs(repo)["charge"]
    assert "(used by charge, refund)" in result.output


def test_names_avoid_every_derived_name_and_files_are_never_overwritten_unasked(repo, tmp_path) -> None:
    repo.write("jobs/billing/nightly.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'nightly', team: 'billing', schedule: [jp.daily('01:00'), jp.daily('02:00')],
          steps: [jp.shell('run', ['true'])] }
        """)
    rules = tmp_path / "ecs.yaml"
    rules.write_text("rules:\n- name: nightly-2\n  scheduleExpression: cron(0 3 * * ? *)\n"
                     "  containerOverrides:\n  - name: app\n    command: [bin/x]\n")
    result = _import(repo, str(rules))
    assert result.exit_code == 0, result.output
    assert "nightly-2" not in _jobs(repo) and "nightly-2-2" in _jobs(repo)  # jobplane-nightly-2 is a schedule
    assert "named 'nightly-2-2' (from 'nightly-2')" in result.output
    assert repo.cli("validate").exit_code == 0
    before = _jobs(repo)["nightly-2-2"]
    (repo.path / "jobs/billing/nightly-2-2.jsonnet").write_text(before.replace("cron(0 3", "cron(0 4"))
    result = _import(repo, str(rules))
    assert result.exit_code == 1 and "--force" in result.output
    result = _import(repo, str(rules), "--force")
    assert result.exit_code == 0 and _jobs(repo)["nightly-2-2"] == before


def test_unreadable_input_names_every_problem_and_writes_nothing(repo, tmp_path) -> None:
    tab = tmp_path / "tab"
    tab.write_text("0 2 * * * /srv/bin/fine.sh\n61 2 * * * /srv/bin/bad-minute.sh\n0 2 * *\n@fortnightly x\n")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("apiVersion: batch/v1\nkind: CronJob\nspec: [unclosed\n")
    result = _import(repo, str(tab), str(bad_yaml), "--timezone", "UTC")
    assert result.exit_code == 2
    for where in (f"{tab}:2:", f"{tab}:3:", f"{tab}:4:", f"{bad_yaml}:"):
        assert where in result.output
    assert "Nothing was written." in result.output and _jobs(repo) == {}
    result = _import(repo, str(tab), "--timezone", "Mars/Olympus")
    assert result.exit_code == 2 and "unknown timezone" in result.output
