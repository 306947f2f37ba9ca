"""Platform configuration (``jobplane.toml`` at the repository root).

Defaults a platform team picks once: the AWS name prefix, the default timezone, the teams that
may own jobs and their Slack channels, and where definitions and compiled output live.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jobplane.contract.blackouts import BlackoutSettings, parse_blackouts
from jobplane.contract.calendar_config import CalendarSettings, parse_calendars
from jobplane.contract.deploy_settings import DeploySettings
from jobplane.contract.root_shards import MAX_ROOTS
from jobplane.contract.slack_interactivity import SlackApp, parse_slack
from jobplane.contract.limits import FAULT_PROFILES
from jobplane.contract.pools import PoolAccess
from jobplane.contract.types import JsonObject

CONFIG_FILE = "jobplane.toml"


class ConfigError(ValueError):
    """jobplane.toml's problems, each a line naming the file and the field."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Team:
    name: str
    channel: str | None = None
    members: tuple[str, ...] = ()  # who may act on the team's jobs in the portal
    # secrets outside the team's own '<team>/' names that its jobs may read, each by exact name
    # (a Secrets Manager name, or an SSM parameter name starting with '/'): compiler/secret_scope.py
    secrets: tuple[str, ...] = ()
    # Slack channels its jobs' ``notify`` may name besides ``channel`` (issue 48 item 6: a job
    # could alert any channel, another team's included): compiler/validate.py
    notify_channels: tuple[str, ...] = ()
    # how many Terraform roots its jobs are split into (contract/root_shards.py): 1, its own root
    roots: int = 1
    # the customer managed KMS keys its secrets and SecureString parameters are encrypted with (key
    # ARNs): its jobs' roles may decrypt with them through Secrets Manager and SSM only
    secret_keys: tuple[str, ...] = ()
    # managed policy ARNs its jobs' application code needs (S3, SQS...): attached to the team's
    # ECS task roles (compiler/task_roles.py), which replaced the one base-module runner task role
    task_policies: tuple[str, ...] = ()
    # blackout windows of [blackouts] every job of the team is in besides its own `blackout`
    blackout: tuple[str, ...] = ()

    def may_notify(self, channel: str) -> bool:
        return channel == self.channel or channel in self.notify_channels


@dataclass(frozen=True)
class TerraformBackend:
    """Where the compiled roots keep their Terraform state: an S3 bucket, with S3's own lock file
    (``use_lockfile``, no DynamoDB table needed). Without it, state stays on the machine that
    ran ``terraform apply`` (a CI runner forgets it, and the next apply fails on every name).
    ``key`` is the base root's state; ``team_key`` each team root's, ``{team}`` filled in."""

    bucket: str
    key: str = "jobplane/base.tfstate"
    region: str = ""
    team_key: str = "jobplane/teams/{team}.tfstate"


TEAM_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
# an exact name the services allow (no '*' or '?', which IAM would read as wildcards)
SHARED_SECRET_RE = re.compile(r"^[A-Za-z0-9_+=.@-][A-Za-z0-9/_+=.@-]{0,511}$|^(/[A-Za-z0-9_.-]+)+$")
#: A KMS key by its ARN (a single- or multi-Region key id); IAM names a key in a policy by its
#: ARN, not an alias (https://docs.aws.amazon.com/kms/latest/developerguide/cmks-in-iam-policies.html).
KMS_KEY_ARN_RE = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/(mrk-[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
#: An IAM managed policy by its ARN: a customer managed one (a path allowed) or an AWS managed one
#: (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html).
POLICY_ARN_RE = re.compile(r"arn:aws[a-z-]*:iam::(\d{12}|aws):policy/([\w+=,.@-]+/)*[\w+=,.@-]{1,128}")
BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
PORT_PLACEHOLDER = re.compile(r"\{port:([A-Za-z0-9_-]+)\}")
#: A Slack channel as jobplane.toml names it: '#name' (Slack's own rule: lower-case letters,
#: digits, '-', '_', '.'; at most 80) or a channel's id (C0123ABCD; G/D for private and direct).
#: Issue 48 item 1: a channel is written into the base root's Terraform, where '${...}' would be
#: evaluated at plan; a value of this shape holds no '$', '%', '{' or quote.
CHANNEL_RE = re.compile(r"#[a-z0-9][a-z0-9._-]{0,79}|[CGD][A-Z0-9]{8,20}")
#: Shapes of the other jobplane.toml strings the compiler writes into Terraform or CI reads:
#: a repository-relative directory, an IANA time zone name, an S3 key, an AWS region, a person.
REL_DIR_RE = re.compile(r"[A-Za-z0-9._/-]{1,255}")
TIMEZONE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}")
S3_KEY_RE = re.compile(r"[A-Za-z0-9!_.*'()/-]{1,1024}")
TEAM_KEY_RE = re.compile(r"[A-Za-z0-9!_.*'()/-]*\{team\}[A-Za-z0-9!_.*'()/-]*")
REGION_RE = re.compile(r"[a-z]{2}(-[a-z]+)+-\d")
PERSON_RE = re.compile(r"[A-Za-z0-9._%+@-]{1,254}")


def expand_ports(text: str, ports: dict[str, int]) -> str:
    return PORT_PLACEHOLDER.sub(lambda m: str(ports[m.group(1)]), text)


@dataclass(frozen=True)
class DevConfig:
    """``[dev]``: how ``jobplane dev`` runs the platform on one machine.

    ``env`` is added to every step's environment and to the dev services (``{root}`` and
    ``{data}`` expand to the repository root and the data directory): it is how the local runner
    finds the application code that the ECS image would contain. ``services`` are processes the
    jobs need locally (a fake partner API, say), started before the scheduler and stopped after.
    ``{port:NAME}`` in a service's command or in ``env`` is a free port chosen for service NAME
    at each start, so two ``jobplane dev`` instances never fight over one.
    """

    def port_names(self) -> list[str]:
        """The services whose port is chosen at start (named by a {port:NAME} anywhere)."""
        texts = [*self.env.values(), *(arg for command in self.services.values() for arg in command)]
        return sorted({m for text in texts for m in PORT_PLACEHOLDER.findall(text)})

    data_dir: str = ".jobplane"
    aws_port: int = 4566
    portal_port: int = 8080
    env: dict[str, str] = field(default_factory=dict)
    services: dict[str, tuple[str, ...]] = field(default_factory=dict)
    dev_user: str = "dev@localhost"
    #: the local AWS's fault profile (contract/limits.py FAULT_PROFILES; `jobplane dev --faults`)
    faults: str = "none"


@dataclass(frozen=True)
class EvaluationLimits:
    """``[evaluation]``: what evaluating the definitions may take (issue 48 item 5). A pull
    request's Jsonnet runs on the CI machine: a 4-line definition reached 13 GB in 2 minutes,
    and exponential recursion ran past 60 s. Each evaluation runs in a child process with this
    much memory (MiB, its data segment) and this long (seconds, for all files at once, then for
    each file alone); exceeding either is a problem naming the file. The defaults hold 1,000 jobs
    on a 2-core runner with room (measured: docs/deploy.md); a pull request may lower them, and
    may not raise them past the maxima below."""

    memory_mb: int = 2048
    timeout_seconds: int = 120

    MAX_MEMORY_MB = 8192
    MAX_TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class PlatformConfig:
    root: Path
    name_prefix: str = "jobplane"
    default_timezone: str = "UTC"
    default_channel: str | None = None
    jobs_dir: str = "jobs"
    output_dir: str = "terraform/jobs"
    platform_module: str = "../platform"
    teams: dict[str, Team] = field(default_factory=dict)
    dev: DevConfig = field(default_factory=DevConfig)
    platform_admins: tuple[str, ...] = ()
    terraform: TerraformBackend | None = None  # [terraform]: the compiled root's S3 backend
    deploy: DeploySettings = field(default_factory=DeploySettings)  # [deploy]: the base root's settings
    #: [quotas]: AWS quotas this account has raised, by contract/quotas.py key (jobplane plan)
    quotas: dict[str, int] = field(default_factory=dict)
    evaluation: EvaluationLimits = field(default_factory=EvaluationLimits)  # [evaluation]: Jsonnet's limits
    #: [pools]: name -> size, slots shared by every job's steps that name the pool (docs/pools.md)
    pools: dict[str, int] = field(default_factory=dict)
    #: [pools.<name>] teams and max_hold: which teams' jobs may name each pool, how long one holder
    #: may keep a slot (compiler/pool_checks.py checks both at validate)
    pool_access: dict[str, PoolAccess] = field(default_factory=dict)
    calendars: CalendarSettings = field(default_factory=CalendarSettings)  # [calendars]: business days
    blackouts: BlackoutSettings = field(default_factory=BlackoutSettings)  # [blackouts]: contract/blackouts.py
    slack: SlackApp = field(default_factory=SlackApp)  # [slack]: Slack interactivity (contract/slack_interactivity.py)

    @property
    def jobs_path(self) -> Path:
        return self.root / self.jobs_dir

    @property
    def output_path(self) -> Path:
        return self.root / self.output_dir

    @property
    def data_path(self) -> Path:
        return self.root / self.dev.data_dir

    def dev_env(self, data_dir: Path | None = None, ports: dict[str, int] | None = None) -> dict[str, str]:
        data = str(data_dir or self.data_path)
        return {k: expand_ports(v.replace("{root}", str(self.root)).replace("{data}", data), ports or {})
                for k, v in self.dev.env.items()}

    def team_members(self, team: str) -> tuple[str, ...]:
        t = self.teams.get(team)
        return t.members if t else ()

    @property
    def library_path(self) -> Path:
        """Where ``import 'jobplane.libsonnet'`` resolves (the compiler sets it as a jpath)."""
        return self.jobs_path / "lib"


#: The prefix of every derived AWS name (issue 40 item 7: a prefix reached the Terraform JSON unchecked).
NAME_PREFIX_MAX = 21
NAME_PREFIX_RE = re.compile(r"[a-z][a-z0-9-]{0,%d}" % (NAME_PREFIX_MAX - 1))


def load_config(root: Path | str = ".") -> PlatformConfig:
    """jobplane.toml read and checked whole: :class:`ConfigError` lists every problem, one a
    line, each naming ``jobplane.toml`` (as the repository names it) and the field (issue 65
    item 7: they came on one line with the file's absolute path, [pools]'s and [calendars]'s
    never together)."""
    import tomllib  # here: the Jsonnet child (compiler/sandbox.py) imports this module, never reads TOML

    root = Path(root).resolve()
    path = root / CONFIG_FILE
    if not path.exists():
        return PlatformConfig(root=root)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError([f"{CONFIG_FILE}: {e}"]) from None
    problems: list[str] = []

    def bad(message: str) -> None:
        problems.append(f"{CONFIG_FILE}: {message}")

    plat = data.get("platform", {})
    if not isinstance(plat, dict):
        raise ConfigError([f"{CONFIG_FILE}: [platform] must be a table"])
    known = {"name_prefix", "default_timezone", "default_channel", "jobs_dir", "output_dir", "platform_module",
             "admins"}
    _check_keys(bad, "platform", plat, known)
    plat = {k: v for k, v in plat.items() if k in known}
    shapes = shape_problems(data)  # listed after the checks that say more (a path outside the repository)
    admins_raw = plat.pop("admins", [])
    admins = tuple(a for a in admins_raw if isinstance(a, str)) if isinstance(admins_raw, list) else ()
    teams = {}
    teams_raw = data.get("teams", {})
    for name, t in teams_raw.items() if isinstance(teams_raw, dict) else ():
        if not TEAM_RE.fullmatch(name):
            bad(f"team {name!r}: a team name is 1-40 lower-case letters, digits and '-' "
                "(it names the team's Terraform root directory and state)")
            continue
        if not isinstance(t, dict):
            continue  # shape_problems names it
        _check_keys(bad, f"teams.{name}", t, {"channel", "members", "secrets", "notify_channels", "roots",
                                               "secret_keys", "blackout", "task_policies"})
        roots = t.get("roots", 1)
        if type(roots) is not int or not 1 <= roots <= MAX_ROOTS:
            bad(f"teams.{name}.roots: how many Terraform roots the team's jobs are split "
                f"into, a whole number from 1 to {MAX_ROOTS}")
            roots = 1
        allowed = t.get("secrets", [])
        if not isinstance(allowed, list) or not all(isinstance(s, str) and SHARED_SECRET_RE.fullmatch(s)
                                                    for s in allowed):
            bad(f"teams.{name}.secrets: a list of exact secret names (Secrets Manager names, "
                "or SSM parameter names starting with '/'); no wildcards, no ARNs")
            allowed = []
        keys = t.get("secret_keys", [])
        if not isinstance(keys, list) or not all(isinstance(k, str) and KMS_KEY_ARN_RE.fullmatch(k) for k in keys):
            bad(f"teams.{name}.secret_keys: a list of KMS key ARNs "
                "(arn:aws:kms:REGION:ACCOUNT:key/KEY-ID): the customer managed keys the team's secrets "
                "and SecureString parameters are encrypted with; no aliases, no wildcards")
            keys = []
        task_policies = t.get("task_policies", [])
        if not isinstance(task_policies, list) or not all(
                isinstance(a, str) and POLICY_ARN_RE.fullmatch(a) for a in task_policies):
            bad(f"teams.{name}.task_policies: a list of IAM managed policy ARNs "
                "(arn:aws:iam::ACCOUNT:policy/NAME, or arn:aws:iam::aws:policy/NAME): what the team's "
                "ECS steps' own code may do, attached to the team's task roles")
            task_policies = []
        notify = t.get("notify_channels", [])
        if not isinstance(notify, list):
            bad(f"teams.{name}.notify_channels: a list of Slack channels ('#name' or an id)")
            notify = []
        members = t.get("members", ())
        teams[name] = Team(name=name, channel=t.get("channel"),
                           members=tuple(members) if isinstance(members, list) else (),
                           secrets=tuple(allowed), notify_channels=tuple(notify), roots=roots,
                           secret_keys=tuple(keys), blackout=_team_blackout(bad, name, t.get("blackout", [])),
                           task_policies=tuple(task_policies))
    dev_raw = dict(data.get("dev", {}))
    dev_known = {"data_dir", "aws_port", "portal_port", "env", "services", "dev_user", "faults"}
    _check_keys(bad, "dev", dev_raw, dev_known)
    dev_raw = {k: v for k, v in dev_raw.items() if k in dev_known}
    if dev_raw.get("faults", "none") not in FAULT_PROFILES:
        bad(f"[dev] faults: {dev_raw['faults']!r} is not a fault profile: one of "
            f"{', '.join(FAULT_PROFILES)} (docs/local-engine.md, Limits and faults)")
        dev_raw.pop("faults")
    services = {}
    for name, command in dev_raw.pop("services", {}).items():
        if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
            bad(f"[dev.services] {name} must be a command as a list of strings")
            continue
        services[name] = tuple(command)
    env = {str(k): str(v) for k, v in dev_raw.pop("env", {}).items()}
    for text in [*env.values(), *(a for c in services.values() for a in c)]:
        for name in PORT_PLACEHOLDER.findall(text):
            if name not in services:
                bad(f"[dev] {{port:{name}}} names no service; [dev.services] has "
                    f"{', '.join(sorted(services)) or 'none'}")
    backend = None
    if "terraform" in data:
        backend = _terraform_backend(bad, data["terraform"])
    for key in ("jobs_dir", "output_dir"):
        # read and written by CI on every pull request, whose jobplane.toml may be hostile too:
        # it may not point the compiler at the machine's files, or its output over them, nor at
        # the checkout itself or its hidden directories (`importstr '.git/config'` copied the
        # checkout's credentials into a catalog)
        value = plat.get(key)
        if value is None:
            continue
        target = (root / value).resolve() if isinstance(value, str) else None
        if target is None or not target.is_relative_to(root):
            bad(f"[platform] {key} {value!r} leads outside the repository; it names a directory inside it")
        elif target == root or any(part.startswith(".") for part in target.relative_to(root).parts):
            bad(f"[platform] {key} {value!r} is the repository itself or a hidden directory "
                "(.git, ...); it names a directory of its own, e.g. 'jobs'")
    module = plat.get("platform_module")
    if module is not None and (not isinstance(module, str) or not module.startswith(("./", "../"))
                               or not (root / str(plat.get("output_dir", "terraform/jobs")) / module).resolve()
                               .is_relative_to(root)):
        # the base root's module source, planned with the CI role's credentials: a git or registry
        # source named in a pull request would run someone else's module there
        bad(f"[platform] platform_module {module!r} must be a relative path to a directory "
            "inside the repository (relative to output_dir), e.g. '../platform'")
    prefix = plat.get("name_prefix")
    if prefix is not None and (not isinstance(prefix, str) or not NAME_PREFIX_RE.fullmatch(prefix)):
        # it starts every AWS name and is written into the Terraform JSON as it is
        bad(f"[platform] name_prefix {prefix!r} is not 1-21 lower-case letters, digits and "
            "'-', starting with a letter (it starts every AWS name the compiler derives)")
    evaluation = EvaluationLimits()
    if "evaluation" in data:
        ev = data["evaluation"]
        _check_keys(bad, "evaluation", ev, {"memory_mb", "timeout_seconds"})
        memory, timeout = ev.get("memory_mb", evaluation.memory_mb), ev.get("timeout_seconds", evaluation.timeout_seconds)
        if type(memory) is not int or not 256 <= memory <= EvaluationLimits.MAX_MEMORY_MB:
            bad(f"[evaluation] memory_mb: a whole number of MiB, 256-{EvaluationLimits.MAX_MEMORY_MB}")
            memory = evaluation.memory_mb
        if type(timeout) is not int or not 5 <= timeout <= EvaluationLimits.MAX_TIMEOUT_SECONDS:
            bad(f"[evaluation] timeout_seconds: a whole number of seconds, 5-{EvaluationLimits.MAX_TIMEOUT_SECONDS}")
            timeout = evaluation.timeout_seconds
        evaluation = EvaluationLimits(memory_mb=memory, timeout_seconds=timeout)
    quotas = data.get("quotas", {})
    if not isinstance(quotas, dict):
        bad("[quotas] must be a table of quota names and numbers")
        quotas = {}
    from jobplane.contract.quotas import BY_KEY as QUOTA_KEYS
    for key, value in quotas.items():
        if key not in QUOTA_KEYS:
            bad(f"[quotas] {key!r} is no quota jobplane counts; known: {', '.join(QUOTA_KEYS)}")
        elif type(value) is not int or value < 1:
            bad(f"[quotas] {key} = {value!r}: the account's raised quota, a whole number")
    from jobplane.contract.pools import parse_pools
    pool_problems, pools, pool_access = parse_pools(data.get("pools", {}), set(teams))
    for problem in pool_problems:
        bad(problem)
    unknown_top = set(data) - {"platform", "teams", "dev", "terraform", "deploy", "evaluation", "quotas", "pools", "calendars",
                          "blackouts", "slack"}
    if unknown_top:
        bad(f"unknown sections: {', '.join(sorted(unknown_top))}")
    for shape in shapes:  # every string the compiler may write into Terraform, checked for its own shape
        bad(shape)
    from jobplane.contract.deploy_settings import check_deploy
    deploy, deploy_problems = check_deploy(data.get("deploy", {}))
    for problem in deploy_problems:
        bad(problem)
    calendars, calendar_problems = parse_calendars(CONFIG_FILE, data.get("calendars"), set(teams))
    problems.extend(calendar_problems)  # each names the file and the field already
    blackouts, blackout_problems = parse_blackouts(CONFIG_FILE, data.get("blackouts"), set(teams),
                                                   set(calendars.calendars))
    problems.extend(blackout_problems)
    slack, slack_problems = parse_slack(CONFIG_FILE, data.get("slack"))
    problems.extend(slack_problems)
    if deploy is not None and deploy.slack_signing_secret_arn and not slack.configured and not slack_problems:
        bad("[deploy] slack_signing_secret_arn: Slack buttons need [slack] app_id and team_id (requests of another "
            "app or workspace are refused by them)")
    if blackouts.windows and blackouts.years[0] > blackouts.years[1]:
        if calendars.years[0] <= calendars.years[1]:
            blackouts = dataclasses.replace(blackouts, years=calendars.years)
        else:
            bad("blackouts.years: [first, last], the years whose windows are compiled (e.g. [2026, 2028]); "
                "without it, [calendars] years")
    for team in teams.values():
        for i, window in enumerate(team.blackout):
            if window not in blackouts.windows:
                bad(f"teams.{team.name}.blackout[{i}]: {window!r} is no window of [blackouts]")
    if problems:
        raise ConfigError(problems)
    return PlatformConfig(root=root, teams=teams, dev=DevConfig(env=env, services=services, **dev_raw),
                          platform_admins=admins, terraform=backend, deploy=deploy or DeploySettings(),
                          evaluation=evaluation, quotas=dict(quotas), pools=pools, pool_access=pool_access,
                          calendars=calendars, blackouts=blackouts, slack=slack, **plat)


def _team_blackout(bad: Callable[[str], None], team: str, raw: object) -> tuple[str, ...]:
    """``[teams.<t>] blackout``: the windows every job of the team is in (names checked by the caller)."""
    if not isinstance(raw, list) or not all(isinstance(w, str) for w in raw):
        bad(f"teams.{team}.blackout: a list of window names of [blackouts]")
        return ()
    return tuple(raw)


def _terraform_backend(bad: Callable[[str], None], tf: object) -> TerraformBackend | None:
    """``[terraform]``, or None after naming what is wrong with it."""
    if not isinstance(tf, dict):
        bad("[terraform] must be a table")
        return None
    bad_count = _Counter(bad)
    _check_keys(bad_count, "terraform", tf, {"bucket", "key", "region", "team_key"})
    if not isinstance(tf.get("bucket"), str) or not BUCKET_RE.fullmatch(tf["bucket"]):
        bad_count("[terraform] bucket must be the S3 bucket that keeps the state "
                  "(3-63 lower-case letters, digits, '.' or '-')")
    if not all(isinstance(tf.get(k, ""), str) for k in ("key", "region", "team_key")):
        bad_count("[terraform] key, team_key and region are strings")
        return None
    rest = tf.get("team_key", "{team}").replace("{team}", "", 1)
    if "{team}" not in tf.get("team_key", "{team}") or "{" in rest or "}" in rest:
        bad_count(f"[terraform] team_key must hold {{team}} once (each team root's own "
                  f"state), and no other braces: {tf['team_key']!r}")
    elif "team_key" in tf and tf["team_key"].replace("{team}", "x") == tf.get("key", TerraformBackend.key):
        bad_count("[terraform] team_key and key must differ (one state per root)")
    return None if bad_count.count else TerraformBackend(**tf)


class _Counter:
    """A ``bad`` that counts what it was told."""

    def __init__(self, bad: Callable[[str], None]):
        self.bad, self.count = bad, 0

    def __call__(self, message: str) -> None:
        self.count += 1
        self.bad(message)


def _shape(where: str, value: object, pattern: re.Pattern[str], what: str) -> list[str]:
    if value is None or (isinstance(value, str) and pattern.fullmatch(value)):
        return []
    shown = repr(value)[:80]
    return [f"{where} {shown} is not {what}"]


def _other_channel_address(address: str) -> bool:
    """An address of a notification channel other than Slack's, well formed by its own check
    (contract/channels.py; each such check admits no '$', '%', '{' or quote)."""
    from jobplane.contract.channels import SLACK, channel_of

    channel = channel_of(address)
    return channel is not SLACK and channel.valid(address)


def shape_problems(data: JsonObject) -> list[str]:
    """Each jobplane.toml string that is not of its own shape (issue 48 item 1). A pull request
    may edit jobplane.toml; the base root's module block, the backend and the tfvars carry these
    values, and a string Terraform reads as a template (``${file("/proc/self/environ")}`` in a
    channel) would run at plan with the CI role's credentials. Shapes, not escaping alone: a
    value of the shape is also right for Slack, S3 and the portal."""
    out: list[str] = []
    plat = data.get("platform", {})
    if not isinstance(plat, dict):
        return ["[platform] must be a table"]
    out += _shape("[platform] default_channel", plat.get("default_channel"), CHANNEL_RE,
                  "a Slack channel ('#name', lower-case, or a channel id such as C0123ABCD)")
    out += _shape("[platform] default_timezone", plat.get("default_timezone"), TIMEZONE_RE,
                  "an IANA time zone name such as 'Asia/Tokyo'")
    for key in ("jobs_dir", "output_dir"):
        out += _shape(f"[platform] {key}", plat.get(key), REL_DIR_RE,
                      "a relative directory of letters, digits, '.', '_', '-' and '/'")
    module = plat.get("platform_module")
    out += _shape("[platform] platform_module", module, REL_DIR_RE, "a relative path of letters, digits, '.', "
                  "'_', '-' and '/'")
    admins = plat.get("admins", [])
    if not isinstance(admins, list):
        out.append("[platform] admins must be a list of people (e-mail addresses)")
    else:
        for a in admins:
            out += _shape("[platform] admins:", a, PERSON_RE, "a person's e-mail address or user name")
    teams = data.get("teams", {})
    for name, t in teams.items() if isinstance(teams, dict) else ():
        if not isinstance(t, dict):
            out.append(f"[teams.{name}] must be a table")
            continue
        out += _shape(f"[teams.{name}] channel", t.get("channel"), CHANNEL_RE,
                      "a Slack channel ('#name', lower-case, or a channel id such as C0123ABCD)")
        for channel in t.get("notify_channels", []) if isinstance(t.get("notify_channels"), list) else ():
            if isinstance(channel, str) and _other_channel_address(channel):
                continue  # 'webhook:oncall': a channel of the registry's own shape (contract/channels.py)
            out += _shape(f"[teams.{name}] notify_channels:", channel, CHANNEL_RE,
                          "a Slack channel ('#name', lower-case, or a channel id such as C0123ABCD)")
        members = t.get("members", [])
        if not isinstance(members, list):
            out.append(f"[teams.{name}] members must be a list of people (e-mail addresses)")
        else:
            for m in members:
                out += _shape(f"[teams.{name}] members:", m, PERSON_RE, "a person's e-mail address or user name")
    tf = data.get("terraform")
    if isinstance(tf, dict):
        out += _shape("[terraform] key", tf.get("key"), S3_KEY_RE, "an S3 key (letters, digits, '/', '.', '_', '-')")
        out += _shape("[terraform] team_key", tf.get("team_key"), TEAM_KEY_RE,
                      "an S3 key holding {team} (letters, digits, '/', '.', '_', '-')")
        out += _shape("[terraform] region", tf.get("region") or None, REGION_RE, "an AWS region such as 'ap-northeast-1'")
    return out


def _check_keys(bad: Callable[[str], None], section: str, table: JsonObject, known: set[str]) -> None:
    unknown = set(table) - known
    if unknown:
        bad(f"[{section}] has unknown keys: {', '.join(sorted(unknown))}")
