"""``jobplane import`` on inputs shaped like the real-world files that wrote a wrong command or fire
behind a "yes" (issue 50): each test feeds the shape that failed and checks that what is written
is what the source ran, or that it is refused, naming why and what to do."""

from __future__ import annotations

from pathlib import Path

from jobplane.compiler.validate import load_jobs
from jobplane.contract.config import load_config


def _argv(step):  # type: ignore[no-untyped-def]
    """A shell step's argv (the kind's target), None for any other kind."""
    return step.target if step.kind.name == "shell" else None

FROM = "2026-12-03T00:00:00Z"


def _import(repo, *args: str):
    return repo.cli("import", "--team", "billing", "--from", FROM, *args)


def _jobs(repo) -> dict[str, str]:
    team = repo.path / "jobs" / "billing"
    return {p.stem: p.read_text() for p in sorted(team.glob("*.jsonnet"))} if team.is_dir() else {}


def _shells(repo) -> dict[str, list[str] | None]:
    return {lj.job.name: _argv(lj.job.steps[0]) for lj in load_jobs(load_config(repo.path))}


# -- item 2: a user crontab named `crontab` ------------------------------------------------------

def test_a_user_crontab_named_crontab_keeps_its_commands(repo, tmp_path) -> None:
    """`crontab -l > crontab` is how repositories keep one: the sixth field is the command."""
    tab = tmp_path / "crontab"
    tab.write_text("15 6 * * * source ~/.bash_profile && ./run.sh\n0 1 * * * python /srv/nightly.py\n")
    result = _import(repo, str(tab), "--timezone", "UTC")
    assert result.exit_code == 0, result.output
    shells = _shells(repo)
    assert ["/bin/sh", "-c", "source ~/.bash_profile && ./run.sh"] in shells.values()
    assert ["python", "/srv/nightly.py"] in shells.values()
    assert "ran as user" not in result.output


def test_a_bsd_root_crontab_without_user_fields_imports(repo, tmp_path) -> None:
    tab = tmp_path / "crontab"
    tab.write_text("#minute\thour\tmday\tmonth\twday\tcommand\n*/10\t*\t*\t*\t*\t/usr/libexec/atrun\n"
                   "0\t*\t*\t*\t*\t/usr/bin/newsyslog\n")
    result = _import(repo, str(tab), "--timezone", "UTC")
    assert result.exit_code == 0, result.output
    assert sorted(_shells(repo).values()) == [["/usr/bin/newsyslog"], ["/usr/libexec/atrun"]]


def test_an_ambiguous_crontab_is_refused_until_format_says_and_format_always_wins(repo, tmp_path) -> None:
    tab = tmp_path / "crontab"
    tab.write_text("0 1 * * * reports /srv/bin/weekly.sh\n")
    result = _import(repo, str(tab), "--timezone", "UTC")
    assert result.exit_code == 2 and _jobs(repo) == {}
    assert "'reports' may be a user" in result.output
    assert "--format crontab" in result.output and "--format system-crontab" in result.output
    result = _import(repo, str(tab), "--timezone", "UTC", "--format", "crontab")
    assert result.exit_code == 0 and ["reports", "/srv/bin/weekly.sh"] in _shells(repo).values()
    result = _import(repo, str(tab), "--timezone", "UTC", "--format", "system-crontab", "--force")
    assert result.exit_code == 0 and ["/srv/bin/weekly.sh"] in _shells(repo).values()
    assert "ran as user 'reports'" in result.output


def test_a_system_crontab_user_field_must_be_an_account(repo, tmp_path) -> None:
    tab = tmp_path / "etc-crontab"
    tab.write_text("0 1 * * * python /srv/nightly.py\n0 2 * * * root /srv/bin/ok.sh\n")
    result = _import(repo, str(tab), "--timezone", "UTC", "--format", "system-crontab")
    assert result.exit_code == 1
    assert "the user field 'python' is not a plausible account" in result.output
    assert list(_shells(repo).values()) == [["/srv/bin/ok.sh"]]
    bsd = tmp_path / "root"
    bsd.write_text("*/10\t*\t*\t*\t*\t/usr/libexec/atrun\n")
    result = _import(repo, str(bsd), "--timezone", "UTC", "--format", "system-crontab")
    assert result.exit_code == 2 and "pass --format crontab" in result.output


# -- items 3 and 4: what a Kubernetes pod gave the command ---------------------------------------

POD = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: %(name)s}
spec:
  schedule: "0 3 * * *"
  timeZone: UTC
  jobTemplate:
    spec:
      template:
        spec:
          serviceAccountName: reporter
          volumes:
          - name: config
            configMap: {name: report-config}
          containers:
          - name: app
            image: ghcr.io/acme/report:1.4
%(container)s
            volumeMounts:
            - {name: config, mountPath: /etc/report}
"""


def test_kubernetes_args_without_a_command_are_refused(repo, tmp_path) -> None:
    manifest = tmp_path / "cj.yaml"
    manifest.write_text(POD % {"name": "pinger", "container": '            args: ["-cmd", "ping"]'})
    result = _import(repo, str(manifest))
    assert result.exit_code == 1 and _jobs(repo) == {}
    assert "gives args (['-cmd', 'ping']) but no command" in result.output and "add command:" in result.output


def test_kubernetes_pod_context_is_reported_and_a_mounted_path_refuses(repo, tmp_path) -> None:
    manifest = tmp_path / "cj.yaml"
    manifest.write_text(POD % {"name": "reads-config",
                               "container": "            command: [/app/report, --config, /etc/report/report.yaml]"}
                        + "---\n" + POD % {"name": "plain", "container": "            command: [/app/report]"})
    result = _import(repo, str(manifest))
    assert result.exit_code == 1
    assert sorted(_jobs(repo)) == ["plain"]
    assert "the command reads /etc/report, where the pod mounted configMap {'name': 'report-config'}" in result.output
    for note in ("ran the image 'ghcr.io/acme/report:1.4'", "service account 'reporter'",
                 "mounted configMap {'name': 'report-config'} at /etc/report, which the step will not have"):
        assert note in result.output, note


# -- item 1: EventBridge bounds, retries and dead-letter queues ---------------------------------

def test_a_bounded_eventbridge_schedule_is_refused_and_delivery_settings_reported(repo, tmp_path) -> None:
    import json

    target = {"Arn": "arn:aws:scheduler:::aws-sdk:ecs:runTask", "RoleArn": "arn:aws:iam::123456789012:role/r",
              "Input": json.dumps({"Cluster": "c", "TaskDefinition": "t",
                                   "Overrides": {"ContainerOverrides": [{"Name": "app", "Command": ["bin/promo"]}]}}),
              "RetryPolicy": {"MaximumEventAgeInSeconds": 600, "MaximumRetryAttempts": 2},
              "DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:123456789012:promo-dlq"}}
    schedules = tmp_path / "schedules.json"
    schedules.write_text(json.dumps([
        {"Name": "promo-weekdays", "ScheduleExpression": "cron(0 9 ? * MON-FRI *)",
         "ScheduleExpressionTimezone": "UTC", "StartDate": "2027-01-04T00:00:00Z", "EndDate": "2027-01-24T23:59:00Z",
         "FlexibleTimeWindow": {"Mode": "OFF"}, "Target": target},
        {"Name": "promo-report", "ScheduleExpression": "cron(0 10 ? * MON *)", "FlexibleTimeWindow": {"Mode": "OFF"},
         "Target": target}]))
    result = _import(repo, str(schedules))
    assert result.exit_code == 1
    assert sorted(_jobs(repo)) == ["promo-report"]
    # three weeks of weekdays: 15 fires, not the 261 a year an unbounded job would make
    assert ("schedule 'promo-weekdays', [0]): the schedule fires only within StartDate 2027-01-04T00:00:00Z and "
            "EndDate 2027-01-24T23:59:00Z (it fires 15 times between them)") in result.output
    assert "RetryPolicy (MaximumRetryAttempts 2, MaximumEventAgeInSeconds 600) is not carried" in result.output
    assert "the dead-letter queue 'arn:aws:sqs:us-east-1:123456789012:promo-dlq' is not carried" in result.output


# -- item 5: hostile inputs end as named refusals, never a traceback or a hang -------------------

BOMB = "\n".join(["a: &a [x,x,x,x,x,x,x,x,x]"] + [f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]"
                                                  for p, c in zip("abcdefgh", "bcdefghi")]) + "\n"


def test_yaml_aliases_deep_nesting_and_huge_values_are_refused_by_name(repo, tmp_path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    assert len(BOMB) < 800  # the shape of the 701-byte bomb: 9**9 leaves when walked
    deep_json = tmp_path / "deep.json"
    deep_json.write_text("[" * 200_000 + "]" * 200_000)
    deep_yaml = tmp_path / "deep.yaml"
    deep_yaml.write_text("[" * 100_000 + "]" * 100_000)
    huge = tmp_path / "huge.crontab"
    huge.write_text("# " + "x" * (1024 * 1024) + "\n0 1 * * * /srv/x.sh\n")
    result = _import(repo, str(bomb), str(deep_json), str(deep_yaml), str(huge), "--timezone", "UTC")
    assert result.exit_code == 2 and _jobs(repo) == {}
    assert f"{bomb}:2: invalid YAML: an alias (*a) refers to another value: aliases are not read" in result.output
    assert f"{deep_json}: invalid JSON: nested too deep" in result.output
    assert f"{deep_yaml}:1: invalid YAML: nested too deep (more than 200 levels)" in result.output
    assert f"{huge}: larger than 1024 KiB" in result.output and "Traceback" not in result.output


def test_celery_overflows_are_named_and_oversized_commands_refused(repo, tmp_path) -> None:
    beat = tmp_path / "beat.py"
    beat.write_text("beat_schedule = {\n"
                    "    'forever': {'task': 'm.a', 'schedule': timedelta(days=9999999999)},\n"
                    "    'infinite': {'task': 'm.b', 'schedule': 1e308*10},\n}\n")
    result = _import(repo, str(beat))
    assert result.exit_code == 2
    assert f"{beat}:2: 'timedelta(days=9999999999)' is not a usable interval" in result.output
    assert f"{beat}:3: schedule inf: not an interval a scheduler can keep" in result.output
    tab = tmp_path / "tab"
    tab.write_text(f"0 1 * * * /srv/ok.sh\n0 2 * * * /srv/x.sh {'a' * 40_000}\n")
    result = _import(repo, str(tab), "--timezone", "UTC")
    assert result.exit_code == 1 and list(_jobs(repo)) == ["ok"]
    assert "longer than 32768 characters" in result.output


# -- item 6: the team is one directory under jobs/ ----------------------------------------------

def test_a_team_outside_the_jobs_directory_is_refused_even_without_declared_teams(repo, tmp_path) -> None:
    repo.write("jobplane.toml", "[platform]\nname_prefix = 'jobplane'\n")
    tab = tmp_path / "tab"
    tab.write_text("0 1 * * * /srv/x.sh\n")
    for team in ("../../x", "..", "a/b", "lib", "/tmp/x", "data_science"):
        result = repo.cli("import", "--team", team, "--timezone", "UTC", str(tab))
        assert result.exit_code == 2, (team, result.output)
        assert "a team is one directory under jobs/" in result.output
    assert not (repo.path.parent / "x").exists() and not list(repo.path.rglob("x.jsonnet"))
    result = repo.cli("import", "--team", "data-science", "--timezone", "UTC", str(tab))
    assert result.exit_code == 0, result.output
    assert (repo.path / "jobs" / "data-science" / "x.jsonnet").is_file()


# -- item 8: text from a source reaches the terminal inert ---------------------------------------

def test_terminal_controls_from_a_source_are_printed_inert(repo, tmp_path) -> None:
    manifest = tmp_path / "svc.yaml"
    manifest.write_text('apiVersion: v1\nkind: "Service\\e]52;c;aGVsbG8=\\a"\nmetadata: {name: "web\\u202e"}\n')
    tab = tmp_path / "tab"
    tab.write_text("0 1 * * * /srv/x.sh\n0 2 * *\x1b[2J * /srv/y.sh\n")
    for source in (manifest, tab):
        result = _import(repo, str(source), "--timezone", "UTC")
        assert result.exit_code in (0, 2)
        assert "\x1b" not in result.output and "\x07" not in result.output and "\u202e" not in result.output
    assert "\\x1b[2J" in result.output
    result = _import(repo, str(manifest))
    assert "Service\\x1b]52;c;aGVsbG8=\\x07" in result.output and "web\\u202e" in result.output


# -- item 11: formats jobplane does not read are named, with what to do --------------------------

def test_terraform_and_helm_files_are_named_with_what_to_do(repo, tmp_path) -> None:
    tf = tmp_path / "schedules.tf"
    tf.write_text('resource "aws_scheduler_schedule" "nightly" {\n  name = "nightly"\n'
                  '  schedule_expression = "cron(0 2 * * ? *)"\n}\n' * 5)
    chart = tmp_path / "templates"
    chart.mkdir()
    helm = chart / "cronjob.yaml"
    helm.write_text('apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: {{ include "app.fullname" . }}\n'
                    'spec:\n  schedule: {{ .Values.schedule | quote }}\n')
    result = _import(repo, str(tf), str(helm))
    assert result.exit_code == 2
    assert result.output.count("\n") < 8  # one problem a file, not one a line
    assert f"{tf}: a Terraform configuration" in result.output and "get-schedule" in result.output
    assert f"{helm}: a Helm template" in result.output and "helm template RELEASE CHART" in result.output


# -- item 12: a CronJob beside its Role and ServiceAccount -----------------------------------------

def test_a_cronjob_with_its_rbac_documents_imports_and_names_where_the_secret_is(repo, tmp_path) -> None:
    manifest = tmp_path / "cleanup.yaml"
    manifest.write_text("""\
apiVersion: v1
kind: ServiceAccount
metadata: {name: cleanup}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cleanup}
rules: [{apiGroups: [""], resources: [pods], verbs: [delete]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: cleanup}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cleanup}
subjects: [{kind: ServiceAccount, name: cleanup}]
---
apiVersion: v1
kind: Secret
metadata: {name: cleanup-token}
stringData: {token: s3cr3t-value-never-printed}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cleanup}
spec:
  schedule: "0 4 * * *"
  timeZone: UTC
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: app
            command: [/app/cleanup]
            env:
            - name: API_TOKEN
              valueFrom: {secretKeyRef: {name: cleanup-token, key: token}}
            - name: OTHER
              valueFrom: {secretKeyRef: {name: elsewhere, key: pw}}
""")
    result = _import(repo, str(manifest))
    assert result.exit_code == 0, result.output
    assert sorted(_jobs(repo)) == ["cleanup"]
    assert "Skipped (nothing to schedule):" in result.output and "a RoleBinding, not a CronJob" in result.output
    assert "Not imported:" not in result.output
    assert f"its value is in {manifest}:16, data.token" in result.output
    assert "kubectl get secret elsewhere -o jsonpath='{.data.pw}' | base64 -d" in result.output
    assert "s3cr3t-value-never-printed" not in result.output + "".join(_jobs(repo).values())


# -- item 9: names from what a line runs, and no header as a description ---------------------------

def test_names_come_from_what_runs_never_from_builtins_wrappers_or_arguments(repo, tmp_path) -> None:
    tab = tmp_path / "tab"
    tab.write_text("""\
# m h  dom mon dow   command
0 1 * * * cd /srv/app && python manage.py cron send_reminders
0 2 * * * cd /srv/app && python manage.py cron rebuild_index
10 2 * * * cd /home/deploy/app/bin; php artisan cache:prune >> /dev/null 2>&1
20 2 * * * command -v certbot >/dev/null && certbot renew -q
30 2 * * * PATH=/usr/local/bin:/usr/bin flock -n /tmp/sync.lock /srv/bin/sync-feeds.sh
40 2 * * * mysqldump -a shop | gzip > /backup/shop.sql.gz
50 2 * * * cd /srv/app && bundle exec rake reports:weekly
""")
    result = _import(repo, str(tab), "--timezone", "UTC")
    assert result.exit_code == 0, result.output
    assert sorted(_jobs(repo)) == ["cache-prune", "certbot", "mysqldump", "rebuild-index", "reports-weekly",
                                   "send-reminders", "sync-feeds"]
    assert not any("description" in text for text in _jobs(repo).values())  # the column header is not one


def test_debians_column_diagram_is_not_a_description(repo) -> None:
    fixture = Path(__file__).parent / "fixtures" / "import" / "etc" / "crontab"
    result = _import(repo, str(fixture), "--timezone", "UTC")
    assert result.exit_code == 0, result.output
    assert "description" not in _jobs(repo)["cron-hourly"]


# -- item 10: a multi-line script reads as one ------------------------------------------------------

def test_a_multi_line_script_is_a_text_block_that_says_exactly_the_script(repo, tmp_path) -> None:
    import shutil
    import subprocess

    script = 'set -u\nfor url in "$PRIMARY" "$MIRROR"; do\n  curl -fsS "$url/health"\n\n\tdone_tab=1\ndone\n'
    workflow = tmp_path / "health.yml"
    workflow.write_text("on:\n  schedule: [{cron: '*/15 * * * *'}]\njobs:\n  check:\n    env: {PRIMARY: a, MIRROR: b}\n"
                        "    steps:\n      - run: |\n" + "".join(f"          {line}\n" if line else "\n"
                                                                  for line in script.splitlines()))
    result = _import(repo, str(workflow))
    assert result.exit_code == 0, result.output
    job = _jobs(repo)["health"]
    assert "jp.shell('run', ['bash', '-e', '-c', |||\n      set -u\n      for url in" in job
    assert "\n\n      \tdone_tab=1\n      done\n    |||], opts=" in job
    assert _shells(repo)["health"] == ["bash", "-e", "-c", script]  # exactly the script, as validated
    assert shutil.which("jsonnetfmt")
    written = repo.path / "jobs" / "billing" / "health.jsonnet"
    assert subprocess.run(["jsonnetfmt", "--test", str(written)]).returncode == 0
