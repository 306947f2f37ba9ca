"""Issue 65 item 1: a credential given inline in what a crontab line runs is never written into a
job file, on real crontab idioms (tests/fixtures/import/inline-secrets.crontab, each line's
source named there): an assignment in front of the command becomes a `jp.secret` reference
and a to-do, any other credential refuses the line naming what it is (never its value); and
`jobplane validate` warns about a credential written by hand into a step's argv or env."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from jobplane.compiler.validate import load_jobs
from jobplane.contract.config import load_config

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "import" / "inline-secrets.crontab"
VALUES = ("hunter2pw", "depcheck_admin_2025", "password123", "my-token", "Bearer abc")


def test_inline_credentials_become_secrets_or_refuse_the_line(repo, tmp_path) -> None:
    tab = tmp_path / "crontab"
    shutil.copy(FIXTURE, tab)
    report = tmp_path / "report.json"
    result = repo.cli("import", "--team", "billing", "--from", "2026-12-03T00:00:00Z", str(tab),
                      "--timezone", "UTC", "--report", str(report))
    assert result.exit_code == 1, result.output  # some lines are refused, each named
    files = {p.stem: p.read_text() for p in sorted((repo.path / "jobs" / "billing").glob("*.jsonnet"))}
    written = "".join(files.values()) + report.read_text() + result.output
    for value in VALUES:
        assert value not in written, value
    jobs = {lj.job.name: lj.job for lj in load_jobs(load_config(repo.path))}
    # issue 65's line: the assignment is the step's secret, the command what it ran
    vacuum = jobs["vacuum"].steps[0]
    assert vacuum.target == ["/opt/app/bin/vacuum"]
    assert vacuum.secrets == {"DATABASE_URL": "secretsmanager:billing/database-url"}
    assert "TODO: create the Secrets Manager secret 'billing/database-url' with the value of DATABASE_URL, set in " \
           "the command of" in files["vacuum"]
    dump = jobs["pg-dump"].steps[0]
    assert dump.secrets == {"PGPASSWORD": "secretsmanager:billing/pgpassword"}
    assert dump.target[:2] == ["/bin/sh", "-c"] and dump.target[2].startswith("pg_dump -h 127.0.0.1 -U depcheck_admin")
    # a variable reference is no credential: kept as cron ran it
    kept = next(j for j in jobs.values() if "mataroa" in str(j.steps[0].target))
    assert "env PGPASSWORD=$PASSWORD pg_dump" in kept.steps[0].target[2] and kept.steps[0].secrets == {}
    # the others are refused, naming what was found and where
    outcomes = {o["source"]["line"]: o for o in json.loads(report.read_text())["jobs"]}
    refused = {line: " ".join(o["refused"]) for line, o in outcomes.items() if o["refused"]}
    assert sorted(refused) == [9, 11, 13, 15], refused
    assert "a password given to -u in the command" in refused[9]
    assert "a URL with a password in the command" in refused[11]
    assert "the URL parameter token in the command" in refused[13]
    assert "the Authorization header in the command" in refused[15]
    assert "NAME=value on a line above the entry" in refused[9]
    assert "crontab:9" in result.output and "a password given to -u" in result.output


def test_a_comment_holding_a_credential_is_not_written_as_the_description(repo, tmp_path) -> None:
    tab = tmp_path / "crontab"
    tab.write_text("# nightly dump; the admin URL is https://admin:hunter2pw@db.example.com/\n"
                   "0 2 * * * /srv/bin/dump.sh\n")
    result = repo.cli("import", "--team", "billing", "--from", "2026-12-03T00:00:00Z", str(tab), "--timezone", "UTC")
    assert result.exit_code == 0, result.output
    written = (repo.path / "jobs" / "billing" / "dump.jsonnet").read_text()
    assert "hunter2pw" not in written + result.output
    assert "the comment above the entry holds a URL with a password" in result.output


def test_what_only_looks_like_a_credential_is_imported_as_it_ran(repo, tmp_path) -> None:
    """A user and group for docker, an option that says there is no password or reads it from
    standard input, a header or assignment read from a variable: kept, with no secret."""
    tab = tmp_path / "crontab"
    tab.write_text("* * * * * docker exec -u www-data:www-data app php artisan schedule:run\n"
                   '0 2 * * * pg_dump --no-password "petshop" -f /srv/petshop.dump\n'
                   "0 3 * * * docker login --password-stdin -u ci registry.example.com < /run/token\n"
                   '0 4 * * * curl -H "Authorization: Bearer ${CRON_SECRET}" https://example.com/api/cron\n'
                   "0 5 * * * PGPASSWORD=$DB_PASSWORD psql -c 'VACUUM ANALYZE;'\n")
    result = repo.cli("import", "--team", "billing", "--from", "2026-12-03T00:00:00Z", str(tab), "--timezone", "UTC")
    assert result.exit_code == 0, result.output
    jobs = [lj.job for lj in load_jobs(load_config(repo.path))]
    assert len(jobs) == 5 and all(not j.steps[0].secrets for j in jobs)
    assert "TODO" not in "".join(p.read_text() for p in (repo.path / "jobs" / "billing").glob("*.jsonnet"))


def test_validate_warns_about_a_credential_written_in_a_step(repo) -> None:
    repo.write("jobs/billing/by-hand.jsonnet", """\
local jp = import 'jobplane.libsonnet';
{
  name: 'by-hand', team: 'billing', schedule: jp.daily('04:00'),
  steps: [
    jp.shell('dump', ['pg_dump', 'postgres://app:hunter2pw@db/app'],
             opts={ env: { SLACK: 'xoxb-123456789012-abcdefghijkl', SAFE: '$HOME', LEVEL: 'info',
                           DSN_HOST: 'db', LOADER: 'loader --password=depcheck_admin_2025' } }),
    jp.shell('call', ['/bin/sh', '-c', "curl -H 'Authorization: Bearer abcdef123456' https://x"]),
  ],
}
""")
    result = repo.cli("validate")
    assert result.exit_code == 0, result.output  # a warning, not a problem
    warnings = sorted(line for line in result.output.splitlines() if line.startswith("WARNING:"))
    assert warnings == sorted([
        f"WARNING: jobs/billing/by-hand.jsonnet: job by-hand: {field}: {what} is written in the file: a credential "
        "belongs in secrets: { NAME: jp.secret('<team>/<name>') } (docs/dsl.md)"
        for field, what in [("steps[0] (dump).shell[1]", "a URL with a password"),
                            ("steps[0] (dump).env.SLACK", "a Slack token (xoxb-...)"),
                            ("steps[0] (dump).env.LOADER", "the option --password"),
                            ("steps[1] (call).shell[2]", "the Authorization header")]]), result.output
    for value in VALUES[:2] + ("xoxb-123456789012", "abcdef123456"):
        assert value not in result.output
    # an unchanged file's result is kept (compiler/validate_cache.py): its warnings with it
    again = repo.cli("validate")
    assert sorted(line for line in again.output.splitlines() if line.startswith("WARNING:")) == warnings
    # the same job with its credentials as secrets: no warning
    repo.write("jobs/billing/by-hand.jsonnet", """\
local jp = import 'jobplane.libsonnet';
{
  name: 'by-hand', team: 'billing', schedule: jp.daily('04:00'),
  steps: [jp.shell('dump', ['/bin/sh', '-c', 'pg_dump "$DATABASE_URL"'],
                   opts={ secrets: { DATABASE_URL: jp.secret('billing/database-url') } })],
}
""")
    result = repo.cli("validate")
    assert result.exit_code == 0 and "WARNING" not in result.output, result.output
