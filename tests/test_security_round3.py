"""Security review, round 3 (issue 48): each finding performed as the attack it describes, and
seen refused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import Repo, minimal_job
from jobplane.contract.config import ConfigError, load_config

# -- item 1: jobplane.toml's and a job file's strings never reach Terraform as templates -------

PAYLOAD = '${file("/etc/passwd")}%{ if true }x%{ endif }'
MARKERS = ("file(", "/etc/passwd", "if true", "endif")


def interpolations(text: str) -> list[str]:
    """Every template sequence Terraform would evaluate in ``text`` (``${...}`` and ``%{...}``),
    read as Terraform reads a string of a .tf.json: ``$${`` and ``%%{`` are literal text."""
    found, i = [], 0
    while i < len(text):
        if text.startswith(("$${", "%%{"), i):
            i += 3
        elif text.startswith(("${", "%{"), i):
            depth, j = 0, i + 1
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
                if depth == 0:
                    break
            found.append(text[i:j])
            i = j
        else:
            i += 1
    return found


def strings_of(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings_of(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings_of(v)]
    return []


def compiled_interpolations(out: Path) -> dict[str, set[str]]:
    return {str(f.relative_to(out)): {i for s in strings_of(json.loads(f.read_text())) for i in interpolations(s)}
            for f in sorted(out.rglob("*.tf.json"))}


def test_the_interpolation_reader_reads_as_terraform_does() -> None:
    assert interpolations('a${x}b$${y}%%{z}%{ if a }') == ["${x}", "%{ if a }"]
    assert interpolations('${f("${path.module}/c")}') == ['${f("${path.module}/c")}']


#: every string of jobplane.toml that the compiler writes into Terraform or CI reads, each
#: (section, key, value with the payload) and the words of its refusal
HOSTILE_SETTINGS = [
    ("platform", "default_timezone", f"'{PAYLOAD}'", "default_timezone"),
    ("platform", "default_channel", f"'#alerts{PAYLOAD}'", "default_channel"),
    ("platform", "jobs_dir", f"'jobs{PAYLOAD}'", "jobs_dir"),
    ("platform", "output_dir", f"'out{PAYLOAD}'", "output_dir"),
    ("platform", "platform_module", f"'../platform{PAYLOAD}'", "platform_module"),
    ("platform", "admins", f"['{PAYLOAD}']", "admins"),
    ("platform", "name_prefix", f"'jp{PAYLOAD}'", "name_prefix"),
    ("teams.billing", "channel", f"'#billing{PAYLOAD}'", "[teams.billing] channel"),
    ("teams.billing", "channel", "'C0123ABCD\"'", "[teams.billing] channel"),
    ("teams.billing", "members", f"['{PAYLOAD}']", "[teams.billing] members"),
    ("teams.billing", "secrets", f"['{PAYLOAD}']", "teams.billing.secrets"),
    ("terraform", "key", f"'base{PAYLOAD}'", "[terraform] key"),
    ("terraform", "team_key", f"'teams/{{team}}{PAYLOAD}'", "[terraform] team_key"),
    ("terraform", "region", f"'{PAYLOAD}'", "[terraform] region"),
]


def set_setting(repo: Repo, section: str, key: str, value: str) -> None:
    """jobplane.toml with ``key = value`` in ``[section]`` (replacing the key's line if any)."""
    path = repo.path / "jobplane.toml"
    text = path.read_text()
    start = text.index(f"[{section}]\n")
    end = text.find("\n[", start + 1)
    end = len(text) if end < 0 else end
    body = re.sub(rf"(?m)^{key} = .*\n", "", text[start:end])
    path.write_text(text[:start] + body.replace(f"[{section}]\n", f"[{section}]\n{key} = {value}\n", 1) + text[end:])


@pytest.mark.parametrize("section, key, value, words", HOSTILE_SETTINGS, ids=[f"{s}.{k}" for s, k, *_ in HOSTILE_SETTINGS])
def test_every_jobplane_toml_string_terraform_would_read_is_refused_unless_of_its_shape(
        repo: Repo, section: str, key: str, value: str, words: str) -> None:
    """Issue 48 item 1: a channel `#growth-${file("/proc/self/environ")}` put the CI runner's
    AWS key into the notifier's environment and the plan comment. Every string that reaches the
    base root, the backend or the tfvars is checked for its own shape; the refusal names it."""
    set_setting(repo, section, key, value)
    with pytest.raises(ConfigError, match=re.escape(words)):
        load_config(repo.path)
    repo.write("jobs/billing/x.jsonnet", "{}")
    result = repo.cli("compile")
    assert result.exit_code != 0 and words in result.output
    assert not repo.out.exists()


def test_a_channel_may_be_a_slack_channel_id(repo: Repo) -> None:
    set_setting(repo, "teams.billing", "channel", "'C0123ABCD'")
    assert load_config(repo.path).teams["billing"].channel == "C0123ABCD"


HOSTILE_JOB = """\
local jp = import 'jobplane.libsonnet';
local p = %(payload)s;
{
  name: 'hostile',
  team: 'billing',
  description: p,
  runbook: jp.runbook(p, p, p),
  schedule: jp.daily('02:00'),
  notify: jp.slack('#billing-alerts'),
  params: { [p]: p, list: [p, { nested: p }] },
  steps: [
    jp.python('py', 'examples.noop:run', { [p]: p }, { description: p, env: { NOTE: p } }),
    jp.shell('sh', ['echo', p], { env: { OTHER: p } }),
    jp.celery('cel', 'examples.tasks.noop', [p], { k: p }),
    jp.django('dj', 'noop', [p]),
    jp.parallel('both', [jp.shell('a', ['echo', p]), jp.shell('b', [p])]),
  ],
}
"""


def test_no_compiled_terraform_file_holds_an_interpolation_the_compiler_did_not_write(repo: Repo) -> None:
    """Issue 48 item 1's walk: a tree whose every free string (jobplane.toml's data-only fields
    and every text field of a job) carries `${file("/etc/passwd")}` and `%{ if true }` compiles,
    and every *.tf.json holds exactly the interpolations the same tree compiles to with plain
    text in their place: none of the payload's."""
    set_setting(repo, "dev", "dev_user", f"'{PAYLOAD}'")
    toml = (repo.path / "jobplane.toml").read_text()
    (repo.path / "jobplane.toml").write_text(toml + f"""
[deploy.portal]
image = "example/portal:1"
host_name = "jobs.example.com"
certificate_arn = "arn:aws:acm:ap-northeast-1:123456789012:certificate/0a1b"
vpc_id = "vpc-0123456789abcdef0"
alb_subnet_ids = ["subnet-0123456789abcdef0"]
allowed_cidrs = ["10.0.0.0/8"]
session_secret_arn = "arn:aws:secretsmanager:ap-northeast-1:123456789012:secret:s-AbCdEf"
[deploy.portal.oidc]
issuer = "https://idp.example.com"
authorization_endpoint = "https://idp.example.com/a"
token_endpoint = "https://idp.example.com/t"
user_info_endpoint = "https://idp.example.com/u"
client_id = '{PAYLOAD.split()[0]}'
client_secret_arn = "arn:aws:secretsmanager:ap-northeast-1:123456789012:secret:c-AbCdEf"
""")
    seen = {}
    for label, payload in (("plain", "'plain text'"), ("hostile", json.dumps(PAYLOAD))):
        repo.write("jobs/billing/hostile.jsonnet", HOSTILE_JOB % {"payload": payload})
        result = repo.cli("compile")
        assert result.exit_code == 0, result.output
        seen[label] = compiled_interpolations(repo.out)
        if label == "hostile":
            everything = "".join(f.read_text() for f in repo.out.rglob("*.json"))
            assert "/etc/passwd" in everything  # the payload is there, as text
    assert seen["hostile"] == seen["plain"]
    for name, found in seen["hostile"].items():
        for i in found:
            assert not any(m in i for m in MARKERS), (name, i)
    # tfvars: data Terraform never evaluates (a variable definitions file holds values, not
    # expressions); the payload is there verbatim
    tfvars = json.loads((repo.out / "base" / "jobplane.auto.tfvars.json").read_text())
    assert tfvars["portal"]["oidc"]["client_id"] == PAYLOAD.split()[0]


# -- item 2: a job's team is the directory its file sits in --------------------------------------

def test_a_job_in_another_teams_directory_is_refused_naming_both(repo: Repo) -> None:
    """Issue 48 item 2: a file in jobs/growth/ declaring team 'billing' compiled into billing's
    root with a grant on billing/ledger-api-token, reviewed only by growth's code owners."""
    repo.write("jobs/growth/steal.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'steal', team: 'billing', schedule: jp.daily('02:00'),
          steps: [jp.python('run', 'examples.noop:run', opts={ secrets: { T: jp.secret('billing/ledger-api-token') } })] }
        """)
    repo.write("jobs/loose.jsonnet", minimal_job("loose"))
    for command in ("validate", "compile"):
        result = repo.cli(command)
        assert result.exit_code == 2
        assert ("jobs/growth/steal.jsonnet: job 'steal': team: the job declares team 'billing' but its file is in "
                "jobs/growth/") in result.stderr
        assert "move it to jobs/billing/ or declare team 'growth'" in result.stderr
        assert "jobs/loose.jsonnet: job 'loose': team: the job declares team 'billing' but its file is in jobs/ itself" \
            in result.stderr
    assert not repo.out.exists()
    (repo.path / "jobs/loose.jsonnet").unlink()
    (repo.path / "jobs/billing").mkdir()
    (repo.path / "jobs/growth/steal.jsonnet").rename(repo.path / "jobs/billing/steal.jsonnet")
    assert repo.cli("validate").exit_code == 0  # in its team's directory it is billing's to review


def git_commit(repo: Repo, message: str) -> None:
    git = ["git", "-C", str(repo.path), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    if not (repo.path / ".git").exists():
        subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", message], check=True)


def test_plan_names_each_security_relevant_change_of_jobplane_toml(repo: Repo) -> None:
    """A pull request granting billing's secret to growth, adding an admin or moving the state
    bucket changes no job; the plan names each such key, old -> new, and counts it as a change."""
    repo.write("jobs/billing/nightly.jsonnet", minimal_job())
    git_commit(repo, "base")
    assert repo.cli("plan", "--against-ref", "HEAD", "--exit-code").exit_code == 0
    set_setting(repo, "teams.growth", "secrets", "['billing/ledger-api-token']")
    set_setting(repo, "platform", "admins", "['dev@localhost', 'mallory@example.com']")
    set_setting(repo, "terraform", "bucket", "'someone-elses-bucket'")
    set_setting(repo, "dev", "portal_port", "9090")  # local only: not named
    result = repo.cli("plan", "--against-ref", "HEAD", "--exit-code")
    assert result.exit_code == 2, result.output
    out = result.stdout
    assert "~ jobplane.toml: security-relevant settings changed" in out
    assert '    teams.growth.secrets: (unset) -> ["billing/ledger-api-token"]' in out
    assert '    platform.admins: ["dev@localhost"] -> ["dev@localhost", "mallory@example.com"]' in out
    assert '    terraform.bucket: "example-jobplane-terraform-state" -> "someone-elses-bucket"' in out
    assert "portal_port" not in out


# -- item 3: step-log redaction holds for the shapes real secrets take ---------------------------

def run_step(kind: str, target: dict[str, object], **env: str) -> tuple[int, list[dict[str, object]], str]:
    """The runner as a real subprocess (tests/test_runner.py's harness); its exit code, its log
    lines and everything it wrote to stdout and stderr."""
    from test_runner import run

    code, lines, proc = run(kind, target, **env)
    return code, lines, proc.stdout + proc.stderr


def messages(lines: list[dict[str, object]]) -> list[str]:
    return [str(line["message"]) for line in lines if line.get("stream")]


def test_a_secret_with_a_trailing_newline_is_redacted_stripped() -> None:
    """`--secret-string file://` keeps the file's newline; the step prints the value stripped."""
    code, lines, out = run_step("shell", {"argv": ["sh", "-c", "echo v=$DB_PASSWORD"]},
                                DB_PASSWORD="newline-pass-5521\n")
    assert code == 0 and "newline-pass-5521" not in out
    assert messages(lines) == ["v=[redacted]"]


def test_each_string_of_a_json_secret_is_redacted_after_the_step_parses_it() -> None:
    secret = json.dumps({"username": "app", "password": "json-pass-8812", "engine": "postgres", "port": 5432,
                         "extra": {"token": "nested-tok-771"}})
    script = ("import json, os; s = json.loads(os.environ['DB_SECRET']); "
              "print('pw=' + s['password']); print('tok=' + s['extra']['token']); print('user=' + s['username'])")
    code, lines, out = run_step("shell", {"argv": [sys.executable, "-c", script]}, DB_SECRET=secret)
    assert code == 0, out
    assert "json-pass-8812" not in out and "nested-tok-771" not in out
    assert messages(lines) == ["pw=[redacted]", "tok=[redacted]", "user=app"]  # 8+ characters only


@pytest.mark.parametrize("url, password", [
    ("redis://:cache-pass-31@cache:6379/0", "cache-pass-31"),              # no user name
    ("amqp://worker:p%40ss-word-9@mq/vhost", "p%40ss-word-9"),              # %40 in the password
    ("postgres://app:pg-pass-4711@db.internal/app", "pg-pass-4711"),        # user and password
])
def test_a_url_password_is_redacted_with_any_or_no_user(url: str, password: str) -> None:
    """`redis://:password@host` printed in clear: the user name may be empty. The same URL
    built by the step itself, and the decoded password, are redacted too."""
    script = f"echo env=$BROKER_URL; echo built={url.replace('://', '://x')}; printf 'decoded=%s\\n' '{password.replace('%40', '@')}'"
    code, lines, out = run_step("shell", {"argv": ["sh", "-c", script]}, BROKER_URL=url)
    assert code == 0, out
    assert password not in out and password.replace("%40", "@") not in out
    scheme, rest = url.split("://")
    user = rest.split(":")[0]
    assert messages(lines) == [f"env={scheme}://{user}:[redacted]@{rest.split('@')[1]}",
                               f"built={scheme}://x{user}:[redacted]@{rest.split('@')[1]}", "decoded=[redacted]"]


def test_a_line_over_64_kib_split_inside_a_secret_is_redacted() -> None:
    """A child's line longer than the capture's piece (64 KiB) was logged in pieces, cut inside
    the secret: neither half matched."""
    from jobplane.runner.capture import MAX_LINE

    script = f"import os, sys; sys.stdout.write('x' * {MAX_LINE - 6} + os.environ['API_TOKEN'] + 'y' * 10 + '\\n')"
    code, lines, out = run_step("shell", {"argv": [sys.executable, "-c", script]}, API_TOKEN="split-tok-90210")
    assert code == 0, out
    assert "split-tok-90210" not in out and "split-" not in out and "tok-90210" not in out
    assert "".join(messages(lines)) == "x" * (MAX_LINE - 6) + "[redacted]" + "y" * 10


def test_what_an_atexit_handler_prints_after_the_result_is_redacted(tmp_path: Path) -> None:
    """Output written after the runner handed fds 1/2 back (`atexit` running
    `os.system('echo $KEY')`) was printed in clear."""
    (tmp_path / "late_leak.py").write_text(
        "import atexit, os\n\ndef run():\n    atexit.register(lambda: os.system('echo late=$API_KEY'))\n")
    code, lines, out = run_step("python", {"target": "late_leak:run"}, API_KEY="late-key-6633",
                                PYTHONPATH=f"{tmp_path}{os.pathsep}{Path(__file__).parent}")
    assert code == 0, out
    assert "late-key-6633" not in out
    assert messages(lines) == ["late=[redacted]"]
    assert [line["message"] for line in lines][-2:] == ["step succeeded", "late=[redacted]"]


def test_a_secret_with_a_quote_and_a_non_ascii_character_is_redacted() -> None:
    secret = 'q"uote-é-3141'
    code, lines, out = run_step("shell", {"argv": [sys.executable, "-c", "import os; print('s=' + os.environ['X_SECRET'])"]},
                                X_SECRET=secret)
    assert code == 0, out
    assert secret not in out and json.dumps(secret, ensure_ascii=False)[1:-1] not in out
    assert json.dumps(secret)[1:-1] not in out
    assert messages(lines) == ["s=[redacted]"]


def test_import_writes_no_url_password_whatever_its_user(repo: Repo, tmp_path: Path) -> None:
    """Issue 50 item 7: `redis://:password@host` was written in clear into the job file. The
    importer asks the rule the runner redacts by (contract/secret_names.py); a URL without a
    password stays a value."""
    tab = tmp_path / "tab"
    tab.write_text("CACHE_URL=redis://:cache-pass-31@cache:6379/0\nBROKER=amqp://worker:p%40ss-word-9@mq/vhost\n"
                   "MIRROR=https://mirror@example.com/pub\nPLAIN=redis://cache:6379/0\n"
                   "0 1 * * * /srv/bin/charge.sh\n")
    result = repo.cli("import", "--team", "billing", "--from", "2026-12-03T00:00:00Z", "--format", "crontab",
                      str(tab), "--timezone", "UTC")
    assert result.exit_code == 0, result.output
    written = "".join(p.read_text() for p in (repo.path / "jobs" / "billing").glob("*.jsonnet")) + result.output
    assert "cache-pass-31" not in written and "p%40ss-word-9" not in written
    assert "CACHE_URL: jp.secret('billing/cache-url')" in written and "BROKER: jp.secret('billing/broker')" in written
    assert "MIRROR: 'https://mirror@example.com/pub'" in written and "PLAIN: 'redis://cache:6379/0'" in written


# -- item 5: Jsonnet from a pull request is evaluated within limits ----------------------------

def good_and_bad(repo: Repo, bad: str) -> None:
    repo.write("jobs/billing/good.jsonnet", minimal_job("good"))
    repo.write("jobs/billing/bomb.jsonnet", bad)


def test_a_definition_that_takes_too_much_memory_is_stopped_and_named(repo: Repo) -> None:
    """A 4-line definition reached 13 GB in 2 minutes, evaluated in the CI process."""
    with (repo.path / "jobplane.toml").open("a") as f:
        f.write("\n[evaluation]\nmemory_mb = 256\n")
    good_and_bad(repo, "local s = std.repeat('x', 1000000);\n"
                       "{ name: std.toString(std.length(std.join('', [s + i for i in std.range(1, 20000)]))) }\n")
    result = repo.cli("validate")
    assert result.exit_code == 2, result.output
    assert ("jobs/billing/bomb.jsonnet: Jsonnet evaluation needed more than 256 MiB and was stopped "
            "([evaluation] memory_mb in jobplane.toml)") in result.stderr
    assert "good.jsonnet" not in result.stderr  # the other file was evaluated and is valid
    assert result.stderr.strip().splitlines()[-1] == "1 problem found; nothing was written."


def test_a_definition_that_runs_too_long_is_stopped_and_named(repo: Repo) -> None:
    """Exponential recursion ran past 60 s with no bound but the workflow's 6 hours."""
    with (repo.path / "jobplane.toml").open("a") as f:
        f.write("\n[evaluation]\ntimeout_seconds = 5\n")
    good_and_bad(repo, "local f(n) = if n == 0 then 1 else f(n - 1) + f(n - 1);\n{ name: 'x' + f(60) }\n")
    result = repo.cli("validate")
    assert result.exit_code == 2, result.output
    assert ("jobs/billing/bomb.jsonnet: Jsonnet evaluation took longer than 5 s and was stopped "
            "([evaluation] timeout_seconds in jobplane.toml)") in result.stderr
    assert "good.jsonnet" not in result.stderr


@pytest.mark.parametrize("setting, words", [("memory_mb = 100000", "memory_mb: a whole number of MiB, 256-8192"),
                                            ("timeout_seconds = 86400", "timeout_seconds: a whole number of seconds, 5-900"),
                                            ("timeout_seconds = '60'", "timeout_seconds"), ("cpu = 2", "unknown keys: cpu")])
def test_a_pull_request_cannot_lift_the_limits(repo: Repo, setting: str, words: str) -> None:
    with (repo.path / "jobplane.toml").open("a") as f:
        f.write(f"\n[evaluation]\n{setting}\n")
    with pytest.raises(ConfigError, match=re.escape(words)):
        load_config(repo.path)


def test_every_pipeline_job_has_a_timeout() -> None:
    """GitHub's default is 6 hours of the runner, for anything a pull request makes it do."""
    import yaml

    from conftest import ROOT

    workflow = yaml.safe_load((ROOT / "deploy" / "github-actions" / "jobplane.yml").read_text())
    for name, job in workflow["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int) and 0 < job["timeout-minutes"] <= 120, name


# -- item 6: a job alerts its team's channels only ---------------------------------------------

def test_a_job_may_not_alert_another_teams_channel(repo: Repo) -> None:
    """Issue 48 item 6: a job could send its alerts to any Slack channel, another team's too."""
    repo.write("jobs/growth/noisy.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'noisy', team: 'growth', schedule: jp.daily('02:00'),
          notify: jp.slack(['#growth-alerts', '#billing-alerts', '#exec-team']),
          steps: [jp.python('run', 'examples.noop:run')] }
        """)
    result = repo.cli("validate")
    assert result.exit_code == 2
    assert [line for line in result.stderr.splitlines() if "noisy" in line] == [
        f"jobs/growth/noisy.jsonnet: job 'noisy': notify.channels[{i}]: team 'growth' may not alert '{channel}': "
        "its jobs alert '#growth-alerts'; another channel is added to [teams.growth] notify_channels in jobplane.toml "
        "(its code owners review that)" for i, channel in ((1, "#billing-alerts"), (2, "#exec-team"))]
    # the team's allow-list admits the channels it names
    set_setting(repo, "teams.growth", "notify_channels", "['#exec-team', '#billing-alerts']")
    assert repo.cli("validate").exit_code == 0


# -- item 8: symbolic link loops are refused by name; the API schema is public, data is not ----

def test_a_symbolic_link_loop_under_jobs_is_refused_by_name(repo: Repo) -> None:
    """A link loop under jobs/ crashed `jobplane validate` and the pipeline's staging with a
    traceback."""
    jobs = repo.path / "jobs" / "billing"
    jobs.mkdir(parents=True)
    (jobs / "self.jsonnet").symlink_to("self.jsonnet")
    (jobs / "a.jsonnet").symlink_to("b.jsonnet")
    (jobs / "b.jsonnet").symlink_to("a.jsonnet")
    repo.write("jobs/billing/uses.jsonnet", "local x = import 'self.jsonnet';\n"
               "{ name: 'uses', team: 'billing', steps: [{ name: 'a', python: 'm:f' }], description: std.toString(x) }\n")
    result = repo.cli("validate")
    assert result.exit_code == 2 and "Traceback" not in result.output
    loop = "refused: a symbolic link loop (it never leads to a file)"
    assert result.stderr.splitlines() == [
        f"jobs/billing/a.jsonnet: {loop}", f"jobs/billing/b.jsonnet: {loop}", f"jobs/billing/self.jsonnet: {loop}",
        f"jobs/billing/uses.jsonnet: import 'self.jsonnet' from jobs/billing/ {loop}",
        "4 problems found; nothing was written."]
    from conftest import ROOT

    staged = subprocess.run([sys.executable, str(ROOT / "scripts" / "stage_pull_request.py"), str(ROOT), str(repo.path)],
                            capture_output=True, text=True, timeout=60)
    assert staged.returncode == 1 and "Traceback" not in staged.stderr, staged.stderr
    assert "refused: jobs/billing/self.jsonnet is a symbolic link loop" in staged.stderr.splitlines()


def test_the_api_schema_is_public_and_holds_no_data() -> None:
    """Decided (docs/portal.md): /api/openapi.json is served without sign-in. It is the API's
    shape only, generated from the code with no store behind it: the same document an app with
    no control plane at all serves; every data route still answers an anonymous request 401."""
    from fastapi.testclient import TestClient

    from jobplane.platform.control import Deployment
    from jobplane.portal.app import create_app
    from jobplane.portal.settings import AuthSettings, PortalSettings

    app = create_app(PortalSettings(Deployment(table="t", topic_arn="t"), AuthSettings(mode="dev", dev_login="x" * 32)),
                     control=object())  # type: ignore[arg-type]
    client = TestClient(app, base_url="http://127.0.0.1")
    served = client.get("/api/openapi.json")
    assert served.status_code == 200 and served.json() == app.openapi()
    for path, operations in served.json()["paths"].items():
        if "get" in operations and "{" not in path and path != "/healthz":
            assert client.get(path).status_code == 401, path


# -- item 7: the dev sign-in link is good once, the session is bound to the portal and expires --

SECRET_OF_START = "s" * 43


def dev_app():  # type: ignore[no-untyped-def]
    from jobplane.platform.control import Deployment
    from jobplane.portal.app import create_app
    from jobplane.portal.settings import AuthSettings, PortalSettings

    return create_app(PortalSettings(Deployment(table="t", topic_arn="t"),
                                     AuthSettings(mode="dev", dev_login=SECRET_OF_START)), control=object())  # type: ignore[arg-type]


def browser(app, port: int):  # type: ignore[no-untyped-def]
    """A fresh browser of the portal at 127.0.0.1:``port`` (the connection's own port)."""
    from fastapi.testclient import TestClient

    return TestClient(app, base_url=f"http://127.0.0.1:{port}", follow_redirects=False)


def test_a_sign_in_link_is_good_once_and_a_fresh_one_is_minted() -> None:
    """Issue 48 item 7: the link worked for the whole start, from any scrollback or history."""
    from jobplane.portal.auth import dev_logins

    app = dev_app()
    logins = dev_logins(SECRET_OF_START)
    link = logins.current()
    first, second = browser(app, 8123), browser(app, 8123)
    assert first.get(f"/login?token={link}").status_code == 303
    assert first.get("/api/docs").status_code == 200  # signed in
    taken = second.get(f"/login?token={link}")
    assert taken.status_code == 401 and "used already" in taken.text
    assert second.get("/api/docs").status_code == 401
    fresh = logins.current()  # what `jobplane dev` hands the next browser
    assert fresh != link and second.get(f"/login?token={fresh}").status_code == 303
    assert second.get("/api/docs").status_code == 200


def test_an_expired_or_forged_link_signs_in_to_nothing() -> None:
    from jobplane.portal.auth import LINK_SECONDS, mint_login_token

    app = dev_app()
    old = mint_login_token(SECRET_OF_START, now=time.time() - LINK_SECONDS - 5)
    other_start = mint_login_token("o" * 43)
    nonce, expires, mac = mint_login_token(SECRET_OF_START).split(".")
    longer = f"{nonce}.{int(expires) + 86400}.{mac}"  # the expiry is signed too
    for token in (old, other_start, longer, "A" * 43, ""):
        assert browser(app, 8123).get(f"/login?token={token}").status_code == 401, token


def test_the_session_opens_only_its_own_portal_and_expires() -> None:
    """The cookie reached every loopback port (cookies ignore the port): it is now signed for
    the portal's own port and an expiry, both checked by the server; a session cookie carried to
    another port's portal (another start, or whoever listens there replaying it under that
    port's name) opens nothing."""
    from jobplane.portal.auth import SESSION_SECONDS, dev_cookie_name, dev_logins, dev_session
    from jobplane.portal.settings import AuthSettings

    app = dev_app()
    here = browser(app, 8123)
    signed = here.get(f"/login?token={dev_logins(SECRET_OF_START).current()}")
    assert signed.status_code == 303
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and f"Max-Age={SESSION_SECONDS}" in cookie and "SameSite=lax" in cookie
    name, value = cookie.split(";")[0].split("=", 1)
    assert name == dev_cookie_name(AuthSettings(dev_login=SECRET_OF_START), 8123)
    elsewhere = browser(app, 9999)
    elsewhere.cookies.set(name, value)
    assert elsewhere.get("/api/docs").status_code == 401
    elsewhere.cookies.set(dev_cookie_name(AuthSettings(dev_login=SECRET_OF_START), 9999), value)
    assert elsewhere.get("/api/docs").status_code == 401  # renamed for that port: its signature says 8123
    auth = AuthSettings(dev_login=SECRET_OF_START)
    stale = browser(app, 8123)
    stale.cookies.set(*dev_session(auth, 8123, now=time.time() - SESSION_SECONDS - 5))
    assert stale.get("/api/docs").status_code == 401
    fine = browser(app, 8123)
    fine.cookies.set(*dev_session(auth, 8123))
    assert fine.get("/api/docs").status_code == 200


def test_dev_login_mints_a_link_from_dev_json(repo: Repo, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "dev.json").write_text(json.dumps({"pid": os.getpid(), "portal_url": "http://127.0.0.1:8123",
                                               "portal_login_secret": SECRET_OF_START}))
    result = repo.cli("dev-login", "--data-dir", str(data))
    assert result.exit_code == 0, result.output
    link = result.stdout.strip()
    assert link.startswith("http://127.0.0.1:8123/login?token=")
    app = dev_app()
    token = link.split("token=")[1]
    assert browser(app, 8123).get(f"/login?token={token}").status_code == 303
    assert browser(app, 8123).get(f"/login?token={token}").status_code == 401  # once


# -- item 4: the pull-request plan role reads what a plan reads, no data -------------------------

ACCT, REG = "123456789012", "us-east-1"


def _arn(service: str, rest: str) -> str:
    return f"arn:aws:{service}:{REG}:{ACCT}:{rest}"


ROLE, POLICY = f"arn:aws:iam::{ACCT}:role/jobplane-daily-sales-report-sfn", f"arn:aws:iam::{ACCT}:policy/jobplane-operator"
FUNCTION = _arn("lambda", "function:jobplane-notifier")
TOPIC = _arn("sns", "jobplane-events")
QUEUE = _arn("sqs", "jobplane-scheduler-dlq")
TABLE = _arn("dynamodb", "table/jobplane")
RULE = _arn("events", "rule/jobplane-month-end-close-after-daily-sales-report")
CATALOG = "arn:aws:s3:::jobplane-catalog-20261203000000000000000001"
KEY = _arn("kms", "key/0000aaaa-bbbb-cccc-dddd-eeeeffff0000")
PARAMETER = _arn("ssm", "parameter/jobplane/platform/table_name")
VIEW = "view"  # a Describe/List on "*" that ViewOnlyAccess grants

#: What `terraform plan` reads for each resource type (its refresh) and data source type (its
#: read) the compiled roots hold, as (action, resource) of the example deployment (prefix
#: "jobplane"); a resource by VIEW is read by ViewOnlyAccess's describes.
PLAN_READS: dict[str, list[tuple[str, str]]] = {
    "aws_iam_role": [("iam:GetRole", ROLE), ("iam:ListRolePolicies", ROLE), ("iam:ListAttachedRolePolicies", ROLE)],
    "aws_iam_role_policy": [("iam:GetRolePolicy", ROLE)],
    "aws_iam_role_policy_attachment": [("iam:ListAttachedRolePolicies", ROLE)],
    "aws_iam_policy": [("iam:GetPolicy", POLICY), ("iam:GetPolicyVersion", POLICY), ("iam:ListPolicyVersions", POLICY)],
    "aws_sfn_state_machine": [("states:DescribeStateMachine", _arn("states", "stateMachine:jobplane-month-end-close")),
                              ("states:ListTagsForResource", _arn("states", "stateMachine:jobplane-month-end-close")),
                              # the provider's read lists its versions (state_machine_version_arn;
                              # hashicorp/terraform-provider-aws internal/service/sfn/state_machine.go)
                              ("states:ListStateMachineVersions", _arn("states", "stateMachine:jobplane-month-end-close"))],
    "aws_scheduler_schedule": [("scheduler:GetSchedule", _arn("scheduler", "schedule/jobplane/jobplane-month-end-close"))],
    "aws_scheduler_schedule_group": [("scheduler:GetScheduleGroup", _arn("scheduler", "schedule-group/jobplane")),
                                     ("scheduler:ListTagsForResource", _arn("scheduler", "schedule-group/jobplane"))],
    "aws_cloudwatch_event_rule": [("events:DescribeRule", RULE), ("events:ListTagsForResource", RULE)],
    "aws_cloudwatch_event_target": [("events:ListTargetsByRule", RULE)],
    "aws_ecs_task_definition": [("ecs:DescribeTaskDefinition", "*")],
    "aws_ecs_cluster": [("ecs:DescribeClusters", _arn("ecs", "cluster/jobplane"))],
    "aws_ecs_service": [("ecs:DescribeServices", _arn("ecs", "service/jobplane/jobplane-portal"))],
    "aws_ecr_repository": [("ecr:DescribeRepositories", _arn("ecr", "repository/jobplane-runner")),
                           ("ecr:ListTagsForResource", _arn("ecr", "repository/jobplane-runner"))],
    "aws_ecr_lifecycle_policy": [("ecr:GetLifecyclePolicy", _arn("ecr", "repository/jobplane-runner"))],
    "aws_dynamodb_table": [("dynamodb:DescribeTable", TABLE), ("dynamodb:DescribeContinuousBackups", TABLE),
                           ("dynamodb:DescribeTimeToLive", TABLE), ("dynamodb:ListTagsOfResource", TABLE)],
    "aws_sqs_queue": [("sqs:GetQueueAttributes", QUEUE), ("sqs:ListQueueTags", QUEUE)],
    "aws_sqs_queue_policy": [("sqs:GetQueueAttributes", QUEUE)],
    "aws_sns_topic": [("sns:GetTopicAttributes", TOPIC), ("sns:ListTagsForResource", TOPIC)],
    "aws_sns_topic_subscription": [("sns:GetSubscriptionAttributes", TOPIC + ":0b1c2d3e")],
    "aws_kms_key": [("kms:DescribeKey", KEY), ("kms:GetKeyPolicy", KEY), ("kms:GetKeyRotationStatus", KEY),
                    ("kms:ListResourceTags", KEY)],
    "aws_kms_alias": [("kms:ListAliases", "*")],
    "aws_lambda_function": [("lambda:GetFunction", FUNCTION), ("lambda:GetFunctionCodeSigningConfig", FUNCTION),
                            ("lambda:ListVersionsByFunction", FUNCTION)],
    "aws_lambda_permission": [("lambda:GetPolicy", FUNCTION)],
    "aws_lambda_function_url": [("lambda:GetFunctionUrlConfig", FUNCTION)],
    "aws_lambda_event_source_mapping": [("lambda:GetEventSourceMapping", _arn("lambda", "event-source-mapping:0a1b2c3d")),
                                        ("lambda:ListTags", _arn("lambda", "event-source-mapping:0a1b2c3d"))],
    "aws_lambda_invocation": [],  # its result lives in the state
    "aws_cloudwatch_log_group": [("logs:DescribeLogGroups", VIEW),
                                 ("logs:ListTagsForResource", _arn("logs", "log-group:/jobplane/runner"))],
    "aws_s3_bucket": [("s3:ListBucket", CATALOG), ("s3:GetBucketPolicy", CATALOG), ("s3:GetBucketAcl", CATALOG),
                      ("s3:GetBucketTagging", CATALOG), ("s3:GetBucketVersioning", CATALOG), ("s3:GetBucketCORS", CATALOG),
                      ("s3:GetBucketWebsite", CATALOG), ("s3:GetBucketLogging", CATALOG),
                      ("s3:GetAccelerateConfiguration", CATALOG), ("s3:GetBucketRequestPayment", CATALOG),
                      ("s3:GetReplicationConfiguration", CATALOG), ("s3:GetBucketObjectLockConfiguration", CATALOG),
                      ("s3:GetEncryptionConfiguration", CATALOG), ("s3:GetLifecycleConfiguration", CATALOG)],
    "aws_s3_bucket_lifecycle_configuration": [("s3:GetLifecycleConfiguration", CATALOG)],
    "aws_s3_bucket_ownership_controls": [("s3:GetBucketOwnershipControls", CATALOG)],
    "aws_s3_bucket_public_access_block": [("s3:GetBucketPublicAccessBlock", CATALOG)],
    "aws_s3_bucket_server_side_encryption_configuration": [("s3:GetEncryptionConfiguration", CATALOG)],
    "aws_s3_bucket_versioning": [("s3:GetBucketVersioning", CATALOG)],
    "aws_s3_object": [("s3:GetObject", CATALOG + "/catalog/billing.json"),
                      ("s3:GetObjectTagging", CATALOG + "/catalog/billing.json")],
    "aws_ssm_parameter": [("ssm:GetParameter", PARAMETER), ("ssm:ListTagsForResource", PARAMETER),
                          ("ssm:DescribeParameters", VIEW)],
    "aws_lb": [("elasticloadbalancing:DescribeLoadBalancers", VIEW),
               ("elasticloadbalancing:DescribeLoadBalancerAttributes", VIEW), ("elasticloadbalancing:DescribeTags", VIEW)],
    "aws_lb_listener": [("elasticloadbalancing:DescribeListeners", VIEW)],
    "aws_lb_listener_rule": [("elasticloadbalancing:DescribeRules", VIEW)],
    "aws_lb_target_group": [("elasticloadbalancing:DescribeTargetGroups", VIEW),
                            ("elasticloadbalancing:DescribeTargetGroupAttributes", VIEW)],
    "aws_security_group": [("ec2:DescribeSecurityGroups", VIEW)],
    "aws_vpc_security_group_egress_rule": [("ec2:DescribeSecurityGroupRules", VIEW)],
    "aws_vpc_security_group_ingress_rule": [("ec2:DescribeSecurityGroupRules", VIEW)],
    "aws_vpc_endpoint": [("ec2:DescribeVpcEndpoints", VIEW), ("ec2:DescribePrefixLists", VIEW)],
    # data sources
    "aws_caller_identity": [], "aws_region": [], "aws_partition": [], "aws_iam_policy_document": [],
    "aws_subnet": [("ec2:DescribeSubnets", VIEW)],  # the endpoints' one subnet per zone (issue 49.7)
    "aws_secretsmanager_secret": [("secretsmanager:DescribeSecret", _arn("secretsmanager", "secret:billing/ledger-api-token-AbC123"))],
    "aws_secretsmanager_secret_versions": [
        ("secretsmanager:ListSecretVersionIds", _arn("secretsmanager", "secret:jobplane/portal-oidc-AbC123"))],
}

#: Data a plan never reads: each must be refused whatever ViewOnlyAccess holds.
DATA_READS = [
    ("s3:GetObject", "arn:aws:s3:::acme-payroll/exports/2026-11.csv", "another bucket's object"),
    ("s3:GetObject", CATALOG + "/elsewhere/notes.txt", "the catalog bucket outside catalog/"),
    ("s3:GetObjectVersion", "arn:aws:s3:::acme-payroll/exports/2026-10.csv", "an old version of another object"),
    ("s3:GetObject", "arn:aws:s3:::acme-jobplane-state/other-app/terraform.tfstate", "another state in the bucket"),
    ("dynamodb:GetItem", TABLE, "a run record"), ("dynamodb:Query", TABLE, "a job's runs and params"),
    ("dynamodb:Scan", TABLE, "the audit"), ("dynamodb:BatchGetItem", _arn("dynamodb", "table/payroll"), "another table"),
    ("dynamodb:PartiQLSelect", TABLE, "the table by PartiQL"),
    ("logs:GetLogEvents", _arn("logs", "log-group:/jobplane/runner:log-stream:runner/x"), "a step's output"),
    ("logs:FilterLogEvents", _arn("logs", "log-group:/aws/lambda/payroll"), "another app's log"),
    ("logs:StartQuery", _arn("logs", "log-group:/jobplane/runner"), "Logs Insights"),
    ("states:GetExecutionHistory", _arn("states", "execution:jobplane-month-end-close:abc"), "a run's input and output"),
    ("states:DescribeExecution", _arn("states", "execution:jobplane-month-end-close:abc"), "a run's params"),
    ("sqs:ReceiveMessage", QUEUE, "a dead letter"),
    ("lambda:GetFunctionConfiguration", _arn("lambda", "function:payroll-api"), "another function's environment"),
    ("lambda:GetFunction", _arn("lambda", "function:payroll-api"), "another function's code and environment"),
    ("lambda:ListFunctions", "*", "every function's environment"),
    ("secretsmanager:GetSecretValue", _arn("secretsmanager", "secret:billing/ledger-api-token-AbC123"), "a secret"),
    ("ssm:GetParameter", _arn("ssm", "parameter/billing/db-password"), "a team's parameter"),
]

#: ViewOnlyAccess as the checks model it. What a plan needs is checked against its describes and
#: lists only (all it surely grants); what must be refused, against every Get/List/Describe of
#: every service (more than it grants): the role's own denies must hold whatever AWS puts in it.
VIEW_ONLY_SURE = {"sid": "ViewOnlyAccess", "actions": ["*:List*", "*:Describe*"], "resources": ["*"]}
VIEW_ONLY_AT_MOST = {"sid": "ViewOnlyAccess", "actions": ["*:List*", "*:Describe*", "*:Get*", "*:BatchGet*"],
                     "resources": ["*"]}


def compiled_types(repo: Repo) -> set[str]:
    """The resource and data types of every compiled root: the team roots and job files as
    compiled from the examples, and the base module the base root instantiates."""
    from base_module import module

    repo.copy_examples()
    assert repo.cli("compile").exit_code == 0
    types = set()
    for path in repo.out.rglob("*.tf.json"):
        doc = json.loads(path.read_text())
        types |= set(doc.get("resource", {})) | set(doc.get("data", {}))
    base = module()
    return types | set(base["resource"]) | set(base["data"])


def test_the_plan_role_reads_what_a_plan_of_the_compiled_roots_reads(repo: Repo) -> None:
    """Issue 48 item 4: ReadOnlyAccess gave anyone who can open a pull request the account's
    S3 objects, DynamoDB items, logs and Lambda configurations. The role now has ViewOnlyAccess
    and the reads a plan makes, derived here from the compiled roots' types."""
    from iam_policy import Call, allowed
    from test_ci_roles import document, statements

    types = compiled_types(repo)
    assert types - set(PLAN_READS) == set(), "a type the roots hold whose plan reads are not known"
    limits = statements("plan_limits")
    missing = [f"{t}: {a} on {r}" for t in sorted(types) for a, r in PLAN_READS[t]
               if not allowed([VIEW_ONLY_SURE, *limits], Call(a, "*" if r == VIEW else r))]
    assert missing == []
    attached = [b for block in document()["resource"] for t, named in block.items()
                if t == "aws_iam_role_policy_attachment" for n, b in named.items() if n == "plan_read"]
    assert [a["policy_arn"] for a in attached] == ["arn:${local.partition}:iam::aws:policy/job-function/ViewOnlyAccess"]


def test_the_plan_role_reads_no_data() -> None:
    from iam_policy import Call, allowed
    from test_ci_roles import statements

    limits = statements("plan_limits")
    leaks = [f"{a} on {r} ({why})" for a, r, why in DATA_READS if allowed([VIEW_ONLY_AT_MOST, *limits], Call(a, r))]
    assert leaks == []
    # the data a plan does read: the states and the catalog
    for action, resource in (("s3:GetObject", "arn:aws:s3:::acme-jobplane-state/jobplane/base.tfstate"),
                             ("s3:GetObject", CATALOG + "/catalog/billing.json")):
        assert allowed([VIEW_ONLY_AT_MOST, *limits], Call(action, resource))
