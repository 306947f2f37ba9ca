"""Bad definitions: every problem reported in one run, one line each naming file, job and
field; exit status 2; and the compiler's output directory left exactly as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from conftest import Repo, minimal_job

from jobplane.contract.config import load_config


def snapshot(directory: Path) -> dict[str, str]:
    if not directory.exists():
        return {}
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture
def compiled_repo(repo: Repo) -> Repo:
    """A repo with a good job already compiled, so we can prove a failed compile changes nothing."""
    repo.write("jobs/billing/nightly.jsonnet", minimal_job())
    assert repo.cli("compile").exit_code == 0
    return repo


BAD = {
    "syntax": ("""\
        local jp = import 'jobplane.libsonnet';
        {
          name: 'broken',
          team: 'billing'
          steps: [],
        }
        """, [("jobs/billing/bad.jsonnet", "Jsonnet syntax error", "line 5")]),
    "unknown field": ("""\
        local jp = import 'jobplane.libsonnet';
        { name: 'typo', team: 'billing', shedule: jp.daily('02:00'),
          steps: [jp.python('run', 'm:f') + { retyr: jp.retry(2) }] }
        """, [("job 'typo'", "shedule: unknown field (did you mean 'schedule'?)"),
              ("job 'typo'", "steps[0].retyr: unknown field (did you mean 'retry'?)")]),
    "missing field": ("""\
        { name: 'no-team', steps: [{ name: 'run', python: 'm:f' }] }
        """, [("job 'no-team'", "team: required field is missing")]),
    "duplicate steps": ("""\
        local jp = import 'jobplane.libsonnet';
        { name: 'dup-steps', team: 'billing',
          steps: [jp.python('load', 'm:f'), jp.parallel('both', [jp.python('load', 'm:g'), jp.python('x', 'm:h')])] }
        """, [("job 'dup-steps'", "steps: ", "step name 'load' is used twice, at steps[0] and steps[1].parallel[0]")]),
    "bad cron": ("""\
        { name: 'bad-cron', team: 'billing', schedule: 'cron(0 25 * * ? *)', steps: [{ name: 'a', python: 'm:f' }] }
        """, [("job 'bad-cron'", "schedule: 'cron(0 25", "hours field: 25 is outside 0-23")]),
    "bad rate": ("""\
        { name: 'bad-rate', team: 'billing', schedule: 'rate(0 minutes)', steps: [{ name: 'a', python: 'm:f' }] }
        """, [("job 'bad-rate'", "schedule: 'rate(0 minutes)'", "at least 1")]),
    "day-of-week step": ("""\
        { name: 'every-other', team: 'billing', schedule: 'cron(0 0 ? * MON/2 *)', steps: [{ name: 'a', python: 'm:f' }] }
        """, [("jobs/billing/bad.jsonnet", "job 'every-other'", "schedule: 'cron(0 0 ? * MON/2 *)'",
               "day-of-week field: 'MON/2': EventBridge's day-of-week takes no '/' step")]),
    "never fires": ("""\
        { name: 'feb-31', team: 'billing', schedule: ['cron(0 2 * * ? *)', 'cron(59 23 31 2 ? *)'],
          steps: [{ name: 'a', python: 'm:f' }] }
        """, [("jobs/billing/bad.jsonnet", "job 'feb-31'", "schedule[1]: 'cron(59 23 31 2 ? *)' never fires")]),
    "deadline before a business-day fire": ("""\
        { name: 'late-rule', team: 'billing', schedule: 'business(days at=09:00)', deadline: '08:00',
          steps: [{ name: 'a', python: 'm:f' }] }
        """, [("job 'late-rule'", "deadline: '08:00' is not after the fire at 09:00 of business(days at=09:00)")]),
    "unix cron": ("""\
        { name: 'unix-cron', team: 'billing', schedule: '30 2 * * 1-5', steps: [{ name: 'a', python: 'm:f' }] }
        """, [("job 'unix-cron'", "schedule: '30 2 * * 1-5'", "cron(30 2 ? * 2-6 *)")]),
    "timezone": ("""\
        { name: 'bad-tz', team: 'billing', timezone: 'Asia/Tokio', steps: [{ name: 'a', python: 'm:f' }] }
        """, [("job 'bad-tz'", "timezone", "did you mean 'Asia/Tokyo'")]),
    "policy": ("""\
        { name: 'bad-policy', team: 'billing', policy: 'SKIP_IF_RUNING', steps: [{ name: 'a', python: 'm:f' }] }
        """, [("job 'bad-policy'", "policy", "did you mean 'SKIP_IF_RUNNING'")]),
    "empty steps": ("""\
        { name: 'no-steps', team: 'billing', steps: [] }
        """, [("job 'no-steps'", "steps", "at least one step")]),
    "name too long": ("""\
        { name: 'reconcile-every-payment-provider-settlement-file-for-all-regions', team: 'billing',
          schedule: 'rate(1 hour)', steps: [{ name: 'a', python: 'm:f' }] }
        """, [("name", "too long: the schedule name", "AWS allows 64"),
              # its roles are its team's (named by team and grant): the job name names no role
              ("name", "'jobplane-reconcile-every-payment-provider-settlement-file-for-all-regions' would be 73")]),
    "schedule not a string": ("""\
        { name: 'numbered', team: 'billing', schedule: ['cron(0 2 * * ? *)', 5], steps: [{ name: 'a', python: 'm:f' }] }
        """, [("schedule[1]", "must be a schedule expression string", "not the number 5")]),
    "python target": ("""\
        { name: 'bad-target', team: 'billing', steps: [{ name: 'a', python: 'billing.reports.daily' }] }
        """, [("job 'bad-target'", "steps[0].python", "not of the form 'package.module:function'")]),
    "plain secret": ("""\
        { name: 'leaky', team: 'billing',
          steps: [{ name: 'a', python: 'm:f', secrets: { DB_PASSWORD: 'hunter2' }, env: { API_TOKEN: 'abc' } }] }
        """, [("job 'leaky'", "steps[0].secrets", "'DB_PASSWORD' is given as a plain value"),
              ("job 'leaky'", "steps[0].env", "'API_TOKEN' looks like a secret")]),
    "unknown team": ("""\
        { name: 'orphan', team: 'biling', steps: [{ name: 'a', python: 'm:f' }] }
        """, [("job 'orphan'", "team", "did you mean 'billing'")]),
    "a time past 23:59": ("""\
        local jp = import 'jobplane.libsonnet';
        { name: 'late', team: 'billing', schedule: jp.daily('25:00'), steps: [{ name: 'a', python: 'm:f' }] }
        """, [("jobs/billing/bad.jsonnet", "job 'late': schedule: time 25:00 must be HH:MM, 00:00 to 23:59")]),
    "unknown team, nothing close": ("""\
        { name: 'stray', team: 'marketing', steps: [{ name: 'a', python: 'm:f' }] }
        """, [("job 'stray'", "team", "unknown team 'marketing'; teams are declared in jobplane.toml (it has ",
               "; a new team is a [teams.marketing] table there)")]),
    "two kinds": ("""\
        { name: 'two-kinds', team: 'billing', steps: [{ name: 'a', python: 'm:f', shell: ['true'] }] }
        """, [("job 'two-kinds'", "steps[0]", "exactly one of python, celery, django, shell, parallel, lambda, map, approval (found python, shell)")]),
    "deep params": ("""\
        local nest(n) = std.foldl(function(acc, i) [acc], std.range(1, n), []);
        { name: 'deep', team: 'billing', params: { p: nest(40) },
          steps: [{ name: 'a', python: 'm:f', kwargs: { k: { a: nest(40) } } }] }
        """, [("job 'deep'", "params.p: nested more than 32 lists or objects deep"),
              ("job 'deep'", "steps[0].kwargs.k: nested more than 32")]),
    "fargate size": ("""\
        { name: 'too-small', team: 'billing', steps: [{ name: 'a', python: 'm:f', cpu: 256, memory: 4096 }] }
        """, [("job 'too-small'", "steps[0]", "memory 4096 does not fit cpu 256")]),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_definition_is_reported_and_nothing_written(compiled_repo: Repo, case: str) -> None:
    text, expected = BAD[case]
    compiled_repo.write("jobs/billing/bad.jsonnet", text)
    before = snapshot(compiled_repo.out)
    result = compiled_repo.cli("compile")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    problems = lines[:-1]
    assert lines[-1].endswith("nothing was written.")
    for fragments in expected:
        matching = [line for line in problems if all(f in line for f in fragments)]
        assert matching, f"no line with {fragments} in:\n{result.stderr}"
    # (failed once in CI with a line from elsewhere; the message shows it if it recurs)
    assert all(line.startswith("jobs/billing/bad.jsonnet: ") for line in problems), result.stderr
    assert snapshot(compiled_repo.out) == before


def test_params_as_deep_as_allowed_compile(repo: Repo) -> None:
    """32 levels of nesting compile (the deep-params case above is refused before the catalog's
    serialiser, which gave up at ~250 levels with a traceback)."""
    repo.write("jobs/billing/deep.jsonnet", """\
        local nest(n) = std.foldl(function(acc, i) [acc], std.range(1, n), []);
        { name: 'deep', team: 'billing', params: { p: nest(31) }, steps: [{ name: 'a', python: 'm:f' }] }
        """)
    result = repo.cli("compile")
    assert result.exit_code == 0, result.stderr
    assert "Compiled 1 jobs" in result.stdout


def test_every_problem_in_every_file_in_one_run(compiled_repo: Repo) -> None:
    compiled_repo.write("jobs/billing/one.jsonnet", BAD["policy"][0])
    compiled_repo.write("jobs/growth/two.jsonnet", BAD["timezone"][0].replace("'billing'", "'growth'"))
    compiled_repo.write("jobs/growth/three.jsonnet", BAD["syntax"][0])
    compiled_repo.write("jobs/platform/copy.jsonnet",  # same name as billing/nightly
                        minimal_job("nightly").replace("'billing'", "'platform'"))
    result = compiled_repo.cli("validate")
    assert result.exit_code == 2
    err = result.stderr
    assert "jobs/billing/one.jsonnet: job 'bad-policy': policy:" in err
    assert "jobs/growth/two.jsonnet: job 'bad-tz': timezone:" in err
    assert "jobs/growth/three.jsonnet: Jsonnet syntax error" in err
    assert "jobs/platform/copy.jsonnet: job 'nightly': name: job name is already used in jobs/billing/nightly.jsonnet" in err
    assert err.strip().splitlines()[-1] == "4 problems found; nothing was written."


def test_a_list_of_jobs_in_one_file(repo: Repo) -> None:
    body = [minimal_job(n).split("\n", 1)[1] for n in ("first", "second")]  # drop the import line
    repo.write("jobs/billing/pair.jsonnet", "local jp = import 'jobplane.libsonnet';\n[%s, %s]" % tuple(body))
    result = repo.cli("validate")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("2 jobs valid")


def test_examples_are_valid(repo: Repo) -> None:
    repo.copy_examples()
    result = repo.cli("validate")
    assert result.exit_code == 0, result.stderr
    assert "jobs valid (billing, growth, platform)" in result.stdout


PLANTED = {  # file: (text, [fragments of each problem planted in it, one line each])
    "jobs/billing/f1.jsonnet": ("""\
        local jp = import 'jobplane.libsonnet';
        { name: 'f-one', team: 'billing', timezone: 'Mars/Base',
          steps: [jp.python('load', 'm:f') + { timeout: 'soon' }, jp.python('load', 'm:g') + { env: { 'bad-name': 'x' } }] }
        """, ["steps: step name 'load' is used twice", "steps[0].timeout: 'soon' is not a duration",
              "steps[1].env: 'bad-name' is not a valid environment variable name", "timezone: unknown timezone 'Mars/Base'"]),
    "jobs/billing/f2.jsonnet": ("""\
        { name: 'f-two', team: 'nobody', steps: [], policy: 'NEVER', timeout: '600' }
        """, ["team: unknown team 'nobody'", "steps: a job needs at least one step", "policy: 'NEVER' is not one of",
              "timeout: '600' is not a duration"]),
    "jobs/billing/f3.jsonnet": ("""\
        { name: 'shared-name', team: 'billing', description: 5, runbook: { impact: 'x' },
          steps: [{ name: 'a', python: 'm:f' }] }
        """, ["description: must be a string, not the number 5", "runbook.recovery: required field is missing"]),
    "jobs/growth/f4.jsonnet": ("""\
        { name: 'shared-name', team: 'growth', schedule: ['rate(0 minutes)', 'cron(0 2 1 * MON *)'],
          steps: [{ name: 'a', python: 'm:f' }] }
        """, ["name: job name is already used in jobs/billing/f3.jsonnet", "schedule[0]: 'rate(0 minutes)': the rate must be at least 1",
              "schedule[1]: 'cron(0 2 1 * MON *)': exactly one of day-of-month"]),
    "jobs/growth/f5.jsonnet": ("""\
        { name: 'f-five', team: 'growth', shedule: 'rate(1 hour)',
          steps: [{ name: 'a', python: 'm:f', cpu: 256, memory: 4096, env: { API_TOKEN: 'abc' } }] }
        """, ["steps[0]: memory 4096 does not fit cpu 256", "steps[0].env: 'API_TOKEN' looks like a secret",
              "shedule: unknown field (did you mean 'schedule'?)"]),
    "jobs/growth/f6.jsonnet": ("""\
        { name: 'reconcile-every-payment-provider-settlement-file-for-all-regions', team: 'growth',
          schedule: 'rate(1 hour)', steps: [{ name: 'a', python: 'billing.reports.daily', retry: { attempts: '3' } }] }
        """, ["name: too long: the schedule name", "steps[0].python: 'billing.reports.daily' is not of the form",
              "steps[0].retry.attempts: must be a whole number, not the string '3'"]),
    "jobs/platform/f7.jsonnet": ("""\
        [{ name: 'f-seven-a', team: 'platform', enabled: 'yes', steps: [{ name: 'a', python: 'm:f' }] },
         { name: 'f-seven-b', team: 'platform', enabled: 1, steps: [{ name: 'a', python: 'm:f', memory: '512' }] }]
        """, ["job 'f-seven-a': enabled: must be true or false, not the string 'yes'",
              "job 'f-seven-b': enabled: must be true or false, not the number 1",
              "job 'f-seven-b': steps[0].memory: must be a whole number, not the string '512'"]),
    "jobs/platform/f8.jsonnet": ("""\
        { name: 'f-eight', team: 'platform' steps: [] }
        """, ["Jsonnet syntax error"]),
    "jobs/platform/f9.jsonnet": ("""\
        { name: 'f-nine', enabled: 'no', timeout: '1h', expected_duration: '2h',
          notify: { channels: ['billing'] }, steps: [{ name: 'a', python: 'm:f' }] }
        """, ["team: required field is missing", "enabled: must be true or false, not the string 'no'",
              "expected_duration: expected_duration (7200s) must be shorter than timeout (3600s)",
              "notify.channels: 'billing' is not a Slack channel name"]),
    "jobs/platform/f10.jsonnet": ("""\
        { name: 'F-Ten', team: 'platform', description: ['a'], params: 'x',
          steps: [{ name: 'a', python: 'm:f', shell: ['true'] }] }
        """, ["name: 'F-Ten' is not kebab-case", "description: must be a string, not an array",
              "params: must be an object {...}, not the string 'x'", "steps[0]: a step needs exactly one of"]),
    # every key of env and secrets is checked, not only the first bad one; unknown fields and
    # choices say what was meant
    "jobs/platform/f11.jsonnet": ("""\
        { name: 'f-eleven', team: 'platform', after: [{ job: 'f-ten', on: 'DONE' }, { jobb: 'f-ten' }],
          steps: [{ name: 'a', python: 'm:f', env: { JOBPLANE_X: 'y', TRACEPARENT: 'z' },
                    secrets: { OK: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:db', 'bad key': 'x' } }] }
        """, ["after[0].on: 'DONE' is not one of SUCCEEDED, FAILED", "after[1].jobb: unknown field (did you mean 'job'?)",
              "after[1].job: required field is missing",
              "steps[0].env: 'JOBPLANE_X' is reserved", "steps[0].env: 'TRACEPARENT' is reserved",
              "steps[0].secrets: 'OK': 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:db' is an ARN; name the "
              "secret instead (jp.secret('db'))",
              "steps[0].secrets: 'bad key' is not a valid environment variable name"]),
    # a file whose items are not all jobs, beside a job with no usable name (this crashed while
    # sorting: a problem with no job was compared with one naming '#3')
    "jobs/platform/f12.jsonnet": ("""\
        [5, 'x', { name: 5, team: 'platform', steps: [{ name: 'a', python: 'm:f' }] }]
        """, ["jobs/platform/f12.jsonnet: item 0 is a number, expected a job object",
              "jobs/platform/f12.jsonnet: item 1 is a string, expected a job object",
              "job '#3': name: must be a string, not the number 5"]),
    # a pattern must match the whole value: `$` alone also matches before a final line break,
    # and these passed with one (into AWS names, file names and the runner's import)
    "jobs/platform/f13.jsonnet": ("""\
        { name: 'trail\\n', team: 'platform', schedule: 'rate(1 hour)\\n', notify: { channels: ['#ops\\n'] },
          steps: [{ name: 'a\\n', python: 'm:f\\n', env: { 'A\\n': 'x' } }, { name: 'b', django: 'cmd\\n' },
                  { name: 'c', celery: 'x.y\\n' }] }
        """, ["name: 'trail\\n' is not kebab-case", "schedule: 'rate(1 hour)\\n' has spaces or a line break around it",
              "notify.channels: '#ops\\n' is not a Slack channel name", "steps[0].name: 'a\\n': step names are",
              "steps[0].python: 'm:f\\n' is not of the form", "steps[0].env: 'A\\n' is not a valid environment variable",
              "steps[1].django: 'cmd\\n' is not a management command", "steps[2].celery: 'x.y\\n' is not a Celery task"]),
}


def test_every_planted_problem_is_reported_exactly_once(repo: Repo) -> None:
    """Issue 17: 31 problems planted in 10 files; before, 7 were hidden by others (duplicate
    step names, unknown teams, a name used twice, Fargate sizes, long names behind other
    errors; all but the first bad schedule), one was reported twice and two values coerced.
    f11 to f13 came with the DSL models' own checker (compiler/fields.py): under pydantic, the
    second bad key of env and of secrets was hidden, f12 raised TypeError, and f13's values,
    each ending in a line break, were all accepted."""
    for rel, (text, _) in PLANTED.items():
        repo.write(rel, text)
    result = repo.cli("validate")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    expected = sum(len(fragments) for _, fragments in PLANTED.values())
    assert expected >= 30 and lines[-1] == f"{expected} problems found; nothing was written.", result.stderr
    problems = lines[:-1]
    assert len(problems) == expected, result.stderr
    for rel, (_, fragments) in PLANTED.items():
        for fragment in fragments:
            matching = [line for line in problems if line.startswith(rel + ": ") and fragment in line]
            assert len(matching) == 1, f"{rel}: {fragment!r} reported {len(matching)} times in:\n{result.stderr}"


def test_definitions_evaluated_together_are_each_as_evaluated_alone(repo: Repo) -> None:
    """load_jobs evaluates every file in one Jsonnet run (the library parsed once) and falls back
    to one run per file when any fails: both give the same values, and the fallback names the
    failing file (test_every_problem_in_every_file_in_one_run)."""
    from jobplane.compiler.validate import definition_files, evaluate, evaluate_together
    from jobplane.contract.config import load_config

    repo.copy_examples()
    repo.write("jobs/billing/common.libsonnet", "{ owner: 'billing' }")
    repo.write("jobs/billing/shared.jsonnet", "local c = import 'common.libsonnet';\n"
               + minimal_job("shared").replace("team: 'billing',", "team: c.owner, description: std.thisFile,"))
    config = load_config(repo.path)
    paths = definition_files(config)
    together = evaluate_together(paths, config)
    assert together is not None and len(together) == len(paths) >= 8
    assert together == [evaluate(p, config) for p in paths]
    repo.write("jobs/billing/broken.jsonnet", "{ name: 'broken' ")
    assert evaluate_together(definition_files(config), config) is None


def test_two_jobs_deriving_one_aws_name_are_refused_naming_both(repo: Repo) -> None:
    """`nightly` with two schedules compiles the schedule `<prefix>-nightly-2`, as a job named
    `nightly-2` does: validation passed and the apply failed half way (issue 41 item 6)."""
    repo.write("jobs/billing/nightly.jsonnet", minimal_job("nightly").replace(
        "schedule: jp.daily('02:00'),", "schedule: [jp.daily('02:00'), jp.daily('14:00')],"))
    repo.write("jobs/billing/nightly-2.jsonnet", minimal_job("nightly-2"))
    result = repo.cli("validate")
    assert result.exit_code != 0
    prefix = load_config(repo.path).name_prefix
    assert (f"jobs/billing/nightly.jsonnet: job 'nightly': name: its schedule name '{prefix}-nightly-2' is also one "
            f"that job 'nightly-2' (jobs/billing/nightly-2.jsonnet) derives; rename one of them") in result.stderr \
        or (f"jobs/billing/nightly-2.jsonnet: job 'nightly-2': name: its schedule name '{prefix}-nightly-2' is also "
            f"one that job 'nightly' (jobs/billing/nightly.jsonnet) derives; rename one of them") in result.stderr, \
        result.stderr


def test_names_of_different_kinds_do_not_collide(repo: Repo) -> None:
    """AWS names are unique per kind of resource: `nightly`'s schedule `<prefix>-nightly` and a
    job `nightly-sfn`'s state machine never meet, and no job names a role any more (its roles
    are its team's), so `nightly` and `nightly-sfn` / `nightly-scheduler` validate together."""
    repo.write("jobs/billing/nightly.jsonnet", minimal_job("nightly"))
    repo.write("jobs/billing/nightly-sfn.jsonnet", minimal_job("nightly-sfn"))
    repo.write("jobs/billing/nightly-scheduler.jsonnet", minimal_job("nightly-scheduler"))
    result = repo.cli("validate")
    assert result.exit_code == 0, result.stderr
    assert result.output == "3 jobs valid (billing).\n", result.output


def test_a_team_reads_only_its_own_secrets_and_those_shared_with_it(repo: Repo) -> None:
    """Issue 40, item 4: a growth job compiled `jp.secret('billing/...')` (and an ARN of another
    account) into a grant. Now each is refused naming the file, job and field; the names a
    platform owner lists in `[teams.growth] secrets` are allowed, and the plan says each grant."""
    secrets = ("{ A: jp.secret('billing/stripe-key'), B: jp.parameter('/billing/db-password'), "
               "C: jp.secret('datadog-api-key'), D: jp.secret('growth/ads-token'), E: jp.parameter('/growth/x'), "
               "F: jp.secret('growthy/not-growth') }")
    repo.write("jobs/growth/ads.jsonnet", minimal_job("ads").replace("'billing'", "'growth'").replace(
        "steps: [jp.python('run', 'examples.noop:run')]",
        f"steps: [{{ name: 'p', parallel: [jp.python('run', 'm:f', opts={{ secrets: {secrets} }}), "
        "jp.python('other', 'm:g')] }]"))
    result = repo.cli("validate")
    assert result.exit_code != 0
    problems = [line for line in result.stderr.splitlines() if "secrets." in line]
    assert len(problems) == 4, result.stderr
    for env, what in (("A", "Secrets Manager secret billing/stripe-key"), ("B", "SSM parameter /billing/db-password"),
                      ("C", "Secrets Manager secret datadog-api-key"), ("F", "Secrets Manager secret growthy/not-growth")):
        assert any(line.startswith(f"jobs/growth/ads.jsonnet: job 'ads': steps[0].parallel[0].secrets.{env}: team growth's "
                                   "jobs may read only Secrets Manager secrets named 'growth/...', SSM parameters named "
                                   f"'/growth/...' and the names listed in [teams.growth] secrets in jobplane.toml; {what} "
                                   "is neither") for line in problems), (env, problems)
    # an ARN, of this account or another, is refused with the name to use (compiler/model.py)
    repo.write("jobs/growth/arn.jsonnet", minimal_job("arn-job").replace("'billing'", "'growth'").replace(
        "jp.python('run', 'examples.noop:run')", "jp.python('run', 'm:f', opts={ secrets: { K: "
        "'arn:aws:secretsmanager:us-east-1:999999999999:secret:growth/k-AbC123' } })"))
    stderr = repo.cli("validate").stderr
    assert "jobs/growth/arn.jsonnet: job 'arn-job': steps[0].secrets: 'K': " in stderr
    assert "is an ARN; name the secret instead (jp.secret('growth/k'))" in stderr
    (repo.path / "jobs/growth/arn.jsonnet").unlink()
    # shared by the platform's configuration, by exact name: the job compiles, and the plan says what it reads
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text().replace('[teams.growth]\n', '[teams.growth]\nsecrets = ["datadog-api-key", '
                                             '"billing/stripe-key", "/billing/db-password", "growthy/not-growth"]\n'))
    assert repo.cli("compile").exit_code == 0
    plan_out = repo.cli("plan", "--against", str(repo.path / "nothing")).stdout
    assert ("    reads secrets: SSM parameter /billing/db-password, SSM parameter /growth/x, Secrets Manager secret "
            "billing/stripe-key, Secrets Manager secret datadog-api-key, Secrets Manager secret growth/ads-token, "
            "Secrets Manager secret growthy/not-growth") in plan_out, plan_out
    # no wildcard, no ARN in the list
    for bad in ('"billing/*"', '"arn:aws:secretsmanager:us-east-1:999999999999:secret:x-AbC123"'):
        toml.write_text(toml.read_text().replace('secrets = ["datadog-api-key"', f'secrets = [{bad}, "datadog-api-key"'))
        out = repo.cli("validate")
        assert out.exit_code != 0 and "teams.growth.secrets: a list of exact secret names" in out.stderr + out.stdout
        toml.write_text(toml.read_text().replace(f'secrets = [{bad}, "datadog-api-key"', 'secrets = ["datadog-api-key"'))


@pytest.mark.parametrize("name", ["x```y.jsonnet", "a b.jsonnet", "-flag.jsonnet", "ok/we*rd.jsonnet", "é.jsonnet"])
def test_definition_files_are_plainly_named(repo: Repo, name: str) -> None:
    """Issue 40 item 9: a file name is quoted in the pull request's comment and the job log; one
    that closes a code fence (or holds a newline, a space, a glob) is refused before evaluation."""
    repo.write(f"jobs/billing/{name}", minimal_job("odd"))
    result = repo.cli("validate")
    assert result.exit_code != 0
    assert "file and directory names are letters, digits, '.', '_' and '-'" in result.stderr
    assert "```" not in result.stderr and "\n" not in result.stderr.strip().split("rename", 1)[0].split(": ", 1)[0]


def test_definition_files_are_those_rglob_lists_in_its_order(repo: Repo) -> None:
    """compiler/checked.py lists the definitions from one scan of each directory (issue 66 item
    5); the files and their order are rglob's, sorted as paths sort: "a/x" before "a-b/x" (by
    parts, not by text), links to files and dangling links listed, a link to a directory not
    followed, the library's files left out (also through a link)."""
    import os

    from jobplane.compiler.jsonnet_eval import resolved
    from jobplane.compiler.validate import definition_files

    for rel in ("a/x.jsonnet", "a-b/x.jsonnet", "a.jsonnet", "lib/team.jsonnet"):
        repo.write(f"jobs/{rel}", minimal_job("odd"))
    jobs = repo.path / "jobs"
    (jobs / "dir.jsonnet").mkdir()
    for link, target in (("link.jsonnet", "a/x.jsonnet"), ("loop1.jsonnet", "loop2.jsonnet"),
                         ("loop2.jsonnet", "loop1.jsonnet"), ("dangling.jsonnet", "missing.jsonnet"),
                         ("lib-link.jsonnet", "lib/team.jsonnet"), ("linked-dir", "a")):
        os.symlink(target, jobs / link)
    config = load_config(repo.path)
    inside = str(config.library_path.resolve()).rstrip("/") + "/"
    expected = [f for f in sorted(jobs.rglob("*.jsonnet")) if (real := resolved(f)) is None or not str(real).startswith(inside)]
    assert definition_files(config) == expected
    assert jobs / "a" / "x.jsonnet" in expected and jobs / "lib-link.jsonnet" not in expected


def test_type_and_range_problems_read_in_the_dsl_words_not_the_type_library_words() -> None:
    """Issue 47, item 8: "Input should be greater than or equal to 1" and "a valid dictionary"
    were the type library's words; each names what the DSL wants and what was given."""
    from jobplane.compiler.fields import Invalid as FieldsInvalid
    from jobplane.compiler.model import Job

    base = {"name": "x", "team": "billing", "timezone": "UTC", "schedule": "cron(0 2 * * ? *)"}
    cases = [({"steps": [{"name": "s", "python": "a.b:c", "retry": {"attempts": 0}}]},
              "steps[0].retry.attempts: must be at least 1, not 0"),
             ({"steps": [{"name": "s", "python": "a.b:c", "retry": {"attempts": 2, "backoff": 20}}]},
              "steps[0].retry.backoff: must be at most 10, not 20"),
             ({"steps": [{"name": "s", "python": "a.b:c", "env": ["A=1"]}]},
              "steps[0].env: must be an object {...}, not an array"),
             ({"steps": {"name": "s"}}, "steps: must be an array [...], not an object"),
             ({"steps": ["s"]}, "steps[0]: must be an object {...}, not the string 's'"),
             ({"steps": [{"name": "s", "python": "a.b:c"}], "enabled": None}, "enabled: must be true or false, not null")]
    for extra, expected in cases:
        with pytest.raises(FieldsInvalid) as e:
            Job.from_definition(base | extra)
        text = str(e.value)
        path, message = expected.split(": ", 1)
        assert f"{path.replace('[', '.').replace(']', '')}: {message}" in text, text  # its paths use dots
        assert "Input should" not in text and "valid dictionary" not in text


KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def test_secrets_under_a_teams_customer_managed_key_can_be_decrypted_through_the_services_only(repo: Repo) -> None:
    """A secret or SecureString parameter encrypted with a customer managed key is decrypted for
    the reader, who needs kms:Decrypt on that key: without it the task stopped at start
    (ResourceInitializationError). `[teams.<team>] secret_keys` grants it to the roles that read
    the team's secrets (the task execution role; a Lambda step's function role), through
    Secrets Manager and SSM only; a team without keys, or a job without secrets, gets none."""
    import json

    from iam_policy import Call, allowed

    repo.write("jobs/billing/keyed.jsonnet", minimal_job("keyed").replace(
        "jp.python('run', 'examples.noop:run')",
        "jp.python('run', 'm:f', opts={ secrets: { T: jp.secret('billing/token'), P: jp.parameter('/billing/p') } }), "
        "jp.lambda('quick', 'm:g', opts={ secrets: { T: jp.secret('billing/token') } })"))
    repo.write("jobs/billing/plain.jsonnet", minimal_job("plain"))
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text().replace("[teams.billing]\n", f'[teams.billing]\nsecret_keys = ["{KEY}"]\n', 1))
    result = repo.cli("compile")
    assert result.exit_code == 0, result.output + result.stderr
    docs = {}
    for path in repo.out.rglob("*.job.tf.json"):
        docs.update(json.loads(path.read_text()).get("data", {}).get("aws_iam_policy_document", {}))
    region = "${data.aws_region.current.region}"
    for role in ("keyed_exec", "keyed_lambda"):
        statements = docs[role]["statement"]
        for service in ("secretsmanager", "ssm"):
            assert allowed(statements, Call("kms:Decrypt", KEY, {"kms:ViaService": f"{service}.{region}.amazonaws.com"})), role
        assert not allowed(statements, Call("kms:Decrypt", KEY, {})), role  # never directly
        assert not allowed(statements, Call("kms:Decrypt", KEY, {"kms:ViaService": f"s3.{region}.amazonaws.com"}))
    assert not [d for name, d in docs.items() if name.startswith("plain")
                for s in d.get("statement", []) if KEY in s["resources"]]
    # an alias or a wildcard is refused, naming the field
    for bad in ('"alias/billing-secrets"', '"arn:aws:kms:us-east-1:123456789012:key/*"'):
        toml.write_text(toml.read_text().replace(f'secret_keys = ["{KEY}"]', f"secret_keys = [{bad}]"))
        refused = repo.cli("validate")
        assert refused.exit_code != 0 and "teams.billing.secret_keys: a list of KMS key ARNs" in refused.output + refused.stderr
        toml.write_text(toml.read_text().replace(f"secret_keys = [{bad}]", f'secret_keys = ["{KEY}"]'))


def test_the_raw_checks_walk_into_a_maps_items_and_each_steps(repo: Repo) -> None:
    """Issue 52: a bad field inside a map's each (or items) step is reported with the job's other
    problems, naming file, job and field: the Fargate size and a step name the map's members
    share with another step were hidden behind any other problem of the job (the model stops at
    the field errors), as they are not for top-level steps and parallel members."""
    repo.write("jobs/billing/fan.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'fan', team: 'billing', steps: [
          jp.map('close-all', items=jp.python('tenants', 'm:f', opts={ cpu: 1024, memory: 512 }),
                 each=jp.python('close-tenant', 'm:g', opts={ cpu: 256, memory: 4096, description: 5 })),
          jp.python('close-tenant', 'm:h'),
        ] }
        """)
    # and alone (the model valid but for the size): reported once, not by both checks
    repo.write("jobs/billing/fan-size.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'fan-size', team: 'billing', steps: [
          jp.map('close-all', items=jp.python('tenants', 'm:f'),
                 each=jp.python('close-tenant', 'm:g', opts={ cpu: 256, memory: 4096 })),
        ] }
        """)
    result = repo.cli("validate")
    assert result.exit_code == 2
    assert sorted(result.stderr.strip().splitlines()[:-1]) == sorted([
        "jobs/billing/fan-size.jsonnet: job 'fan-size': steps[0].map.each: memory 4096 does not fit cpu 256 on Fargate "
        "(allowed: 512; 1024-2048 in steps of 1024)",
        "jobs/billing/fan.jsonnet: job 'fan': steps: step name 'close-tenant' is used twice, at steps[0].map.each and "
        "steps[1]",
        "jobs/billing/fan.jsonnet: job 'fan': steps[0].map.each: memory 4096 does not fit cpu 256 on Fargate "
        "(allowed: 512; 1024-2048 in steps of 1024)",
        "jobs/billing/fan.jsonnet: job 'fan': steps[0].map.each.description: must be a string, not the number 5",
        "jobs/billing/fan.jsonnet: job 'fan': steps[0].map.items: memory 512 does not fit cpu 1024 on Fargate "
        "(allowed: 2048-8192 in steps of 1024)",
    ]), result.stderr


def test_a_misspelt_library_name_gets_the_closest_one_and_its_downstream_is_not_misled(compiled_repo: Repo) -> None:
    """To Jsonnet, ``jp.pyhton`` is a field that does not exist: no job, no hint (a newcomer QA
    pass). The line that failed names the library, so the closest library name is added, for
    ``jp.*`` and for ``jp.policy.*``; a missing field of the author's own object gets none. A job
    running after the unreadable file's job is told where that job probably is, not "did you mean"
    another job."""
    compiled_repo.write("jobs/billing/typo-kind.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'typo-kind', team: 'billing', steps: [jp.pyhton('a', 'billing.reports:daily')] }
        """)
    compiled_repo.write("jobs/billing/typo-policy.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'typo-policy', team: 'billing', policy: jp.policy.SKIP_IF_RUNING,
          steps: [jp.python('a', 'billing.reports:daily')] }
        """)
    compiled_repo.write("jobs/billing/own-field.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        local mine = { python: 'billing.reports:daily' };
        { name: 'own-field', team: 'billing', steps: [{ name: 'a', python: mine.pyhton }] }
        """)
    compiled_repo.write("jobs/billing/after-typo.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'after-typo', team: 'billing', after: [jp.after('typo-kind')],
          steps: [jp.python('a', 'billing.reports:daily')] }
        """)
    result = compiled_repo.cli("validate")
    assert result.exit_code == 2
    err = result.stderr
    assert ("jobs/billing/typo-kind.jsonnet: Jsonnet evaluation error: Field does not exist: pyhton (line 2"
            in err and "jp.pyhton is not in the library (did you mean jp.python?)" in err)
    assert "jp.policy.SKIP_IF_RUNING is not in the library (did you mean jp.policy.SKIP_IF_RUNNING?)" in err
    own = next(line for line in err.splitlines() if line.startswith("jobs/billing/own-field.jsonnet"))
    assert "Field does not exist: pyhton" in own and "did you mean" not in own
    # an error in a team's own library keeps that library's line (only jobplane's own library
    # sends the reader to the calling line)
    compiled_repo.write("jobs/lib/helpers.libsonnet", "{\n  broken(x):: x.nosuch,\n}\n")
    compiled_repo.write("jobs/billing/own-library.jsonnet", """\
        local h = import 'helpers.libsonnet';
        { name: 'own-library', team: 'billing', steps: [{ name: 'a', python: h.broken({}) }] }
        """)
    err = compiled_repo.cli("validate").stderr
    own_lib = next(line for line in err.splitlines() if line.startswith("jobs/billing/own-library.jsonnet"))
    assert "(line 2, column" in own_lib and "of helpers.libsonnet)" in own_lib and "did you mean" not in own_lib
    after = next(line for line in err.splitlines() if line.startswith("jobs/billing/after-typo.jsonnet"))
    assert "no job named 'typo-kind': jobs/billing/typo-kind.jsonnet may define it, but it could not be read" in after
    assert "did you mean" not in after


def _lambda_job(name: str, steps: int) -> str:
    """A billing job of ``steps`` Lambda steps, each reading a secret of its own."""
    body = ", ".join(f"jp.lambda('step-{i:02d}', 'm:f', opts={{ secrets: {{ LEDGER_EXPORT_TOKEN_{i:02d}: "
                     f"jp.secret('billing/ledger-export-credentials-{i:02d}') }} }})" for i in range(steps))
    return f"local jp = import 'jobplane.libsonnet';\n{{ name: '{name}', team: 'billing', steps: [{body}] }}\n"


def _function_environment_bytes(repo: Repo, name: str, steps: int) -> int:
    """The runner function's environment as the job's Terraform sets it, each secret's ARN at its
    longest (partition aws-us-gov, a 16-character region), as one compact JSON object: what
    Lambda measures against its 4 KB (github-aws-runners/terraform-aws-github-runner#3594 quotes
    Lambda's refusal, "String measured: {...}")."""
    import json
    import re

    from jobplane.compiler import asl, terraform
    from jobplane.compiler.validate import evaluate

    config = load_config(repo.path)
    path = repo.write(f"jobs/billing/{name}.jsonnet", _lambda_job(name, steps))
    from jobplane.compiler.model import Job

    job = Job.from_definition({**evaluate(path, config), "timezone": "UTC"})
    doc = terraform.job_module(job, asl.render(asl.build_definition(job, config.name_prefix)), config)
    path.unlink()
    (function,) = doc["resource"]["aws_lambda_function"].values()
    lookups = doc["data"]["aws_secretsmanager_secret"]
    text = json.dumps(function["environment"]["variables"], separators=(",", ":"))
    text = re.sub(r"\$\{data\.aws_secretsmanager_secret\.([a-z0-9_]+)\.arn\}",
                  lambda m: f"arn:aws-us-gov:secretsmanager:{'x' * 16}:123456789012:secret:{lookups[m[1]]['name']}-AbCdEf",
                  text)
    # the table's name is the name prefix (terraform/platform/dynamodb.tf), at its longest
    text = text.replace("${local.platform.table_name}", "x" * 21)
    assert "${" not in text
    return len(text.encode())


def test_a_runner_function_environment_over_lambdas_4_kb_is_refused(repo: Repo) -> None:
    """Issue 62 finding 6: the runner function's environment (each Lambda step's digest, each
    secret's ARN) grows with the job's Lambda steps, and Lambda refuses a function whose
    environment is over 4 KB (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html).
    validate measures it as Lambda does: the most steps that fit pass, one more is refused,
    naming the file, the job and its steps."""
    sizes = {n: _function_environment_bytes(repo, "wide", n) for n in range(15, 30)}
    fits = max(n for n, size in sizes.items() if size <= 4096)
    assert 15 < fits < 29 and sizes[fits + 1] > 4096
    repo.write("jobs/billing/fits.jsonnet", _lambda_job("fits", fits))
    assert repo.cli("validate").exit_code == 0
    repo.write("jobs/billing/too-wide.jsonnet", _lambda_job("too-wide", fits + 1))
    result = repo.cli("validate")
    assert result.exit_code != 0
    line = next(line for line in result.stderr.splitlines() if "too-wide" in line)
    assert line.startswith("jobs/billing/too-wide.jsonnet: job 'too-wide': steps: its runner function's environment "
                           f"would take {sizes[fits + 1]:,} bytes, over Lambda's 4,096"), line
    assert "fits.jsonnet" not in result.stderr


def test_two_steps_giving_one_name_two_secrets_are_refused(repo: Repo) -> None:
    """A job's ECS steps share its task definition (and its Lambda steps their function), one
    secret per name: a second step giving the name another secret would have read the first's."""
    repo.write("jobs/billing/clash.jsonnet", minimal_job("clash").replace(
        "steps: [jp.python('run', 'examples.noop:run')]",
        "steps: [jp.python('a', 'm:f', opts={ secrets: { TOKEN: jp.secret('billing/a') } }), "
        "jp.python('b', 'm:g', opts={ secrets: { TOKEN: jp.parameter('/billing/b') } }), "
        "jp.lambda('c', 'm:h', opts={ secrets: { TOKEN: jp.secret('billing/c') } })]"))
    result = repo.cli("validate")
    assert result.exit_code != 0
    lines = [line for line in result.stderr.splitlines() if "clash" in line]
    assert len(lines) == 1, lines  # the Lambda step's TOKEN is its function's, not the task definition's
    assert lines[0].startswith("jobs/billing/clash.jsonnet: job 'clash': steps[1].secrets.TOKEN: SSM parameter /billing/b "
                               "under the name TOKEN, which steps[0] gives Secrets Manager secret billing/a"), lines[0]


def test_a_refused_field_hides_no_rule_across_the_others(repo: Repo) -> None:
    """Issue 65 item 6: a refused field stopped every rule across its model's fields. A map's
    bad tolerated_failures hid its shell items step, its max_concurrency above the hard cap its
    retry; an unknown field hid the missing kind. A map in a group is refused in its own words,
    not as a nested group. Each problem is one line, and none is said twice."""
    repo.write("jobs/billing/hidden.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        [
          { name: 'lots', team: 'billing', steps: [jp.map('close', jp.shell('list', ['ls']), jp.python('one', 'm:f'),
                                                          { tolerated_failures: 'lots' })] },
          { name: 'wide', team: 'billing', steps: [jp.map('close', jp.python('list', 'm:f'), jp.python('one', 'm:f'),
                                                          { max_concurrency: 20000, retry: jp.retry(3) })] },
          { name: 'typo', team: 'billing', steps: [{ name: 'run', pyhton: 'm:f' }] },
          { name: 'grouped', team: 'billing', steps: [jp.parallel('both', [
              jp.python('a', 'm:f'), jp.map('close', jp.python('list', 'm:f'), jp.python('one', 'm:f'))])] },
        ]
        """)
    result = repo.cli("validate")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    expected = [
        "job 'lots': steps[0].map.tolerated_failures: 'lots' is neither a count of items",
        "job 'lots': steps[0]: a map's items step must be a python step (its function returns the items), not shell",
        "job 'wide': steps[0].map.max_concurrency: must be at most 10000, not 20000",
        "job 'wide': steps[0]: a map has no attempts of its own: give retry to its items or each step",
        "job 'typo': steps[0].pyhton: unknown field (did you mean 'python'?)",
        "job 'typo': steps[0]: a step needs exactly one of python, celery, django, shell, parallel, lambda, map, approval (found none)",
        "job 'grouped': steps[0]: parallel[1] is a map ('close'): a map cannot sit in a jp.parallel group",
    ]
    for fragment in expected:
        assert len([line for line in lines if fragment in line]) == 1, (fragment, result.stderr)
    assert not [line for line in lines if "cannot be nested" in line], result.stderr
    assert lines[-1] == f"{len(expected)} problems found; nothing was written.", result.stderr


def test_a_bad_library_call_is_one_problem_of_its_job_not_the_end_of_the_file(repo: Repo) -> None:
    """Issue 65 item 6: an `error` in jobs/lib/jobplane.libsonnet (jp.monthly(business_day=30,
    at='25:00')) stopped the file's evaluation: "1 problem" for 25 bad jobs. Each bad call is
    now its job's problem, named by job and field, and what else is wrong in the job (the
    business day past the month's end, a bad cron beside it) is reported too."""
    jobs = ",\n".join(
        f"{{ name: 'close-{i}', team: 'billing', calendar: 'jp-business', "
        f"schedule: jp.monthly(business_day=30, at='{24 + i}:00'), steps: [jp.python('run', 'm:f')] }}"
        for i in range(25))
    repo.write("jobs/billing/month.jsonnet", "local jp = import 'jobplane.libsonnet';\n[\n" + jobs + "\n]\n")
    repo.write("jobs/billing/more.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        [{ name: 'twice', team: 'billing', schedule: jp.daily(['07:00', '7am']) + [jp.everyMinutes(90), 'cron(0 25 * * ? *)'],
           steps: [jp.python('run', 'm:f')] },
         { name: 'fine', team: 'billing', schedule: jp.weekdays('09:30'), steps: [jp.python('run', 'm:f')] }]
        """)
    result = repo.cli("validate")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    for i in range(25):
        mine = [line for line in lines if line.startswith(f"jobs/billing/month.jsonnet: job 'close-{i}': schedule")]
        assert any(f"schedule: time {24 + i}:00 must be HH:MM, 00:00 to 23:59" in line for line in mine), result.stderr
        assert any("business_day" in line and "30" in line and "time" not in line for line in mine), result.stderr
    more = [line for line in lines if line.startswith("jobs/billing/more.jsonnet: job 'twice': ")]
    assert "jobs/billing/more.jsonnet: job 'twice': schedule[1]: time 7am must be HH:MM" in more, result.stderr
    assert "jobs/billing/more.jsonnet: job 'twice': schedule[2]: everyMinutes takes 1-59, not 90" in more, result.stderr
    assert any(line.startswith("jobs/billing/more.jsonnet: job 'twice': schedule[3]: 'cron(0 25") for line in more)
    assert len(more) == 3, result.stderr
    assert not [line for line in lines if "'fine'" in line or "Jsonnet" in line], result.stderr


def test_definitions_are_named_alike_one_by_one_and_all_at_once(tmp_path: Path) -> None:
    """problems.rels (each directory resolved once, for thousands of definitions) names every
    file as problems.rel does: through a linked directory, a linked file (named as the link),
    the root itself linked, a file outside the root."""
    from jobplane.compiler.problems import rel, rels

    real = tmp_path / "real"
    (real / "jobs" / "billing").mkdir(parents=True)
    (real / "jobs" / "billing" / "a.jsonnet").write_text("{}")
    (real / "jobs" / "linked").symlink_to(real / "jobs" / "billing")
    (real / "jobs" / "billing" / "b.jsonnet").symlink_to(tmp_path / "elsewhere.jsonnet")
    (tmp_path / "root").symlink_to(real)
    paths = [real / "jobs" / "billing" / "a.jsonnet", real / "jobs" / "linked" / "a.jsonnet",
             real / "jobs" / "billing" / "b.jsonnet", tmp_path / "root" / "jobs" / "billing" / "a.jsonnet",
             tmp_path / "elsewhere.jsonnet", real / "top.jsonnet"]
    for root in (real, tmp_path / "root"):
        expected = {p: rel(p, root) for p in paths}
        assert rels(paths, root) == expected
        assert expected[paths[1]] == "jobs/billing/a.jsonnet" and expected[paths[2]] == "jobs/billing/b.jsonnet"
        assert expected[paths[4]] == str(paths[4]) and expected[paths[5]] == "top.jsonnet"
