"""Describe, in words, what a new compile changes compared with an earlier one.

Reviewers of a definition pull request should not have to read ASL or Terraform diffs: the plan
says which jobs are added, removed or changed, and for a changed job what changed (schedule with
its next fire times, policy, steps, IAM), from the two compiler outputs alone.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import tomllib
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from jobplane.compiler import expect_states
from jobplane.compiler.map_cost import map_lines
from jobplane.compiler.calendar_plan import calendar_change_lines, next_fire_lines, schedule_words, years_ending_lines
from jobplane.compiler.job_template import placeholder_lines
from jobplane.compiler.output import catalog_parts, changed_roots, compile_all, job_files
from jobplane.compiler.shared_roles import job_roles
from jobplane.compiler.terraform import iam_summary, secret_grants
from jobplane.contract import layout
from jobplane.contract.catalog import CATALOG_FILE, Catalog, CatalogJob, CatalogStep
from jobplane.contract.config import CONFIG_FILE, PlatformConfig, load_config
from jobplane.contract.quotas import ROLE_INLINE_POLICY_CHARS
from jobplane.contract.job_fires import JobSchedule, next_job_fires
from jobplane.contract.schedule import validate_timezone
from jobplane.contract.schedule_kinds import kind_of
from jobplane.contract.step_kinds import kind_info, per_item_steps
from jobplane.contract.types import JsonObject, JsonValue

if TYPE_CHECKING:
    from jobplane.compiler.model import Job

NEXT_FIRES = 3


def previous_from_ref(config: PlatformConfig, ref: str) -> dict[str, str]:
    """Compile the definitions as they were at a git ref (in a scratch directory).

    The ref comes from a command line that CI may fill from a pull request: it is resolved to a
    commit first, after ``--end-of-options``, so a ref such as ``--output=/tmp/x`` is a name
    that does not exist, never an option of git.
    """
    commit = _commit(config, ref)
    with tempfile.TemporaryDirectory() as tmp:
        rel_jobs = config.jobs_dir
        archive = subprocess.run(["git", "-C", str(config.root), "archive", commit, "--", rel_jobs, "jobplane.toml"],
                                 capture_output=True)
        if archive.returncode != 0:
            archive = subprocess.run(["git", "-C", str(config.root), "archive", commit, "--", rel_jobs],
                                     capture_output=True)
        if archive.returncode != 0:
            raise RuntimeError(f"git archive {ref} failed: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        old_config = load_config(tmp)
        return compile_all(old_config).files


def _commit(config: PlatformConfig, ref: str) -> str:
    resolved = subprocess.run(["git", "-C", str(config.root), "rev-parse", "--verify", "--quiet", "--end-of-options",
                               f"{ref}^{{commit}}"], capture_output=True, text=True)
    commit = resolved.stdout.strip()
    if resolved.returncode != 0 or not commit or commit.startswith("-"):
        raise RuntimeError(f"git ref {ref[:80]!r} does not name a commit in {config.root}")
    return commit


def config_text_at_ref(config: PlatformConfig, ref: str) -> str | None:
    """jobplane.toml as it was at ``ref`` (None: there was none)."""
    shown = subprocess.run(["git", "-C", str(config.root), "show", f"{_commit(config, ref)}:{CONFIG_FILE}"],
                           capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else None


#: jobplane.toml's sections that only ``jobplane dev`` reads: every other key decides who may act
#: (admins, members), what a team's jobs may read (secrets) or alert (channels), where state
#: lives and what CI runs ([terraform], [deploy], platform_module, the evaluation limits).
LOCAL_ONLY_SECTIONS = ("dev",)


def _flat(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def config_changes(old_text: str | None, new_text: str | None) -> list[str]:
    """Each security-relevant jobplane.toml key a change adds, removes or alters, old -> new
    (issue 48 item 2): its reviewers see a new member, a secret granted to a team, another
    state bucket, in the plan, not only in a diff of a file they may not be owners of."""
    def flat(text: str | None) -> dict[str, object]:
        try:
            data = tomllib.loads(text or "")
        except tomllib.TOMLDecodeError:
            return {"(unreadable jobplane.toml)": (text or "")[:80]}
        return {k: v for k, v in _flat(data).items() if k.split(".", 1)[0] not in LOCAL_ONLY_SECTIONS}

    before, after = flat(old_text), flat(new_text)
    return [f"{key}: {_setting(before.get(key))} -> {_setting(after.get(key))}".replace("(default)", "(unset)")
            for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]


def catalog_jobs(files: dict[str, str]) -> dict[str, CatalogJob]:
    """Every job of a compiler output: the teams' catalogs, or the one catalog of an output
    written before the per-team roots."""
    parts = catalog_parts(files)
    if not parts and CATALOG_FILE in files:
        parts = [Catalog.model_validate_json(files[CATALOG_FILE])]
    return {j.name: j for j in Catalog.merge(parts).jobs} if parts else {}


def _job_file(files: dict[str, str], job: str) -> str | None:
    """The job's Terraform file in either layout."""
    return job_files(files).get(job) or (f"{job}.tf.json" if f"{job}.tf.json" in files else None)


def _fires(expressions: list[str], tz: str, now: datetime) -> list[str]:
    lines = []
    for expr in expressions:
        zone = validate_timezone(tz)
        times = [f.at.astimezone(zone) for f in next_job_fires(JobSchedule((expr,), tz), now, NEXT_FIRES).fires]
        label = "from deployment, then " if kind_of(expr).counts_from_deployment else ""
        lines.append(f"{expr}: next {label}" + ", ".join(t.strftime("%Y-%m-%d %H:%M %Z") for t in times))
    return lines


def _step_line(step: CatalogStep) -> str:
    if step.parallel == []:  # a group without members (an approval): a person decides, nothing runs
        return f"{step.name} ({step.kind})"
    if step.parallel is not None:  # a group: a map's members say what they do
        joint = " lists, then per item " if per_item_steps([step]) else ", "
        return f"{step.name} ({step.kind}: {joint.join(s.name for s in step.parallel)})"
    target = step.target or {}
    what = " ".join(target.get("argv", [])) if target.get("kind") == "shell" else target.get("target", "")
    return f"{step.name} ({step.kind} {what})"


def _flat_steps(steps: list[CatalogStep]) -> dict[str, CatalogStep]:
    out = {}
    for s in steps:
        out[s.name] = s
        for m in s.parallel or []:
            out[m.name] = m
    return out


def _step_changes(old: CatalogStep, new: CatalogStep) -> list[str]:
    changes = []
    for key in ("kind", "target", "timeout", "retry", "cpu", "memory", "env", "secrets"):
        before, after = getattr(old, key), getattr(new, key)
        if before == after:
            continue
        if key == "retry":
            b, a = (before.model_dump() if before else {}), (after.model_dump() if after else {})
            changes.append("retry " + ", ".join(f"{k} {b.get(k)} -> {a.get(k)}" for k in a if b.get(k) != a.get(k)))
        elif key in ("target", "env"):
            changes.append(f"{key} {json.dumps(before, sort_keys=True)} -> {json.dumps(after, sort_keys=True)}")
        elif key == "secrets":
            added = sorted(set(after) - set(before))
            removed = sorted(set(before) - set(after))
            changes.append("secrets" + (f" added {', '.join(added)}" if added else "")
                           + (f" removed {', '.join(removed)}" if removed else ""))
        else:
            changes.append(f"{key} {before} -> {after}")
    return changes


def where_steps_run(steps: list[CatalogStep]) -> list[str]:
    """Where the job's steps run, as each executor tells it (compiler/executors/: which steps
    run on Lambda, and which short python steps could: docs/dsl.md "Lambda or ECS")."""
    from jobplane.compiler.executors import registry

    flat = list(_flat_steps(steps).values())
    return [line for executor in registry().values() for line in executor.plan_lines(flat)]


def _job_doc(files: dict[str, str], job: str) -> JsonObject:
    """The job's Terraform document, read once for both its IAM lines and its grants."""
    path = _job_file(files, job)
    return json.loads(files[path]) if path else {}


def _notify_words(job: CatalogJob) -> str:
    return f"{', '.join(job.notify.channels) or 'team default'} on {', '.join(e.value for e in job.notify.events)}"


def describe_job_change(old: CatalogJob, new: CatalogJob, old_files: dict[str, str],
                        new_files: dict[str, str], now: datetime) -> list[str]:
    lines: list[str] = []
    if (old.calendar or new.calendar) and (old.schedule != new.schedule or old.timezone != new.timezone
                                           or old.calendar != new.calendar):
        lines += calendar_change_lines(old, new, now)  # rules, and the fires a calendar change adds or removes
    elif old.schedule != new.schedule or old.timezone != new.timezone:
        lines.append(f"schedule: {' + '.join(old.schedule) or old.started_by} ({old.timezone}) -> "
                     f"{' + '.join(new.schedule) or new.started_by} ({new.timezone})")
        lines += ["  " + f for f in _fires(new.schedule, new.timezone, now)]
    if old.enabled != new.enabled:
        lines.append(f"schedule {'enabled' if new.enabled else 'DISABLED'}")
    for key in ("policy", "timeout", "expected_duration", "team", "deadline"):
        before, after = getattr(old, key), getattr(new, key)
        if before != after:
            lines.append(f"{key}: {getattr(before, 'value', before)} -> {getattr(after, 'value', after)}")
    if old.notify != new.notify:
        lines.append(f"notify: {_notify_words(old)} -> {_notify_words(new)}")
    if old.params != new.params:
        lines.append(f"params: {json.dumps(old.params, sort_keys=True)} -> {json.dumps(new.params, sort_keys=True)}")
    if old.params_schema != new.params_schema:  # a typed parameter's rules (contract/params.py)
        lines += [f"param {n}: {json.dumps(o, sort_keys=True)} -> {json.dumps(w, sort_keys=True)}"
                  for n, o, w in _param_changes(old.params_schema, new.params_schema)]
    old_order = [s.name for s in old.steps]
    new_order = [s.name for s in new.steps]
    if old_order != new_order:
        lines.append(f"steps: {' -> '.join(old_order)}  =>  {' -> '.join(new_order)}")
    old_steps, new_steps = _flat_steps(old.steps), _flat_steps(new.steps)
    for name in new_steps:
        if name not in old_steps:
            lines.append(f"step added: {_step_line(new_steps[name])}")
        else:
            for change in _step_changes(old_steps[name], new_steps[name]):
                lines.append(f"step {name}: {change}")
    for name in old_steps:
        if name not in new_steps:
            lines.append(f"step removed: {name}")
    old_doc, new_doc = _job_doc(old_files, old.name), _job_doc(new_files, new.name)
    old_grants, new_grants = secret_grants(old_doc), secret_grants(new_doc)
    lines += [f"may now read {g}" for g in new_grants if g not in old_grants]
    lines += [f"may no longer read {g}" for g in old_grants if g not in new_grants]
    lines += role_moves(old_files, new_files, old.name, old_doc, new_doc)
    old_iam, new_iam = iam_summary(old_doc), iam_summary(new_doc)
    for role in sorted(set(old_iam) | set(new_iam)):
        added = sorted(set(new_iam.get(role, [])) - set(old_iam.get(role, [])))
        removed = sorted(set(old_iam.get(role, [])) - set(new_iam.get(role, [])))
        lines += [f"IAM {role}: + {a}" for a in added] + [f"IAM {role}: - {r}" for r in removed]
    if where_steps_run(old.steps) != (where := where_steps_run(new.steps)):
        lines += where
    if map_lines(old.steps) != (maps := map_lines(new.steps)):
        lines += maps
    if old.states != new.states:
        lines.append(f"state machine: {old.states} -> {new.states} states")
    if not lines and old_files.get(old.asl) != new_files.get(new.asl):
        lines.append("Terraform changed (platform or compiler update)")
    return lines


def role_moves(old_files: dict[str, str], new_files: dict[str, str], job: str, old_doc: JsonObject,
               new_doc: JsonObject) -> list[str]:
    """Which of its team's shared roles a job leaves for another (compiler/shared_roles.py): a
    changed grant (a secret, a policy, a Lambda step) or a role that grew past IAM's size limit."""
    old_rel, new_rel = _job_file(old_files, job), _job_file(new_files, job)
    before = job_roles(old_files, old_rel, old_doc) if old_rel else {}
    after = job_roles(new_files, new_rel, new_doc) if new_rel else {}
    lines = []
    for kind in sorted(set(before) | set(after)):
        if before.get(kind) == after.get(kind):
            continue
        if kind in before and kind in after:
            lines.append(f"IAM role ({kind}): moves from {before[kind]} to {after[kind]}")
        elif kind in after:
            lines.append(f"IAM role ({kind}): now {after[kind]}")
        else:
            lines.append(f"IAM role ({kind}): no longer {before[kind]}")
    return lines


def _setting(value: object) -> str:
    """A [deploy] value as the plan prints it: unset is the module's default."""
    return "(default)" if value is None else json.dumps(value, sort_keys=True)[:300]


def describe_plan(old_files: dict[str, str], new_files: dict[str, str], now: datetime,
                  settings: list[str] | None = None) -> tuple[str, int]:
    """The plan as text, and the number of changes (0: nothing to apply); ``settings``: the
    changed jobplane.toml keys (:func:`config_changes`), each a change of its own."""
    old_jobs, new_jobs = catalog_jobs(old_files), catalog_jobs(new_files)
    out: list[str] = []
    added = sorted(set(new_jobs) - set(old_jobs))
    removed = sorted(set(old_jobs) - set(new_jobs))
    changed = []
    for name in sorted(set(old_jobs) & set(new_jobs)):
        lines = describe_job_change(old_jobs[name], new_jobs[name], old_files, new_files, now)
        old_tf, new_tf = _job_file(old_files, name), _job_file(new_files, name)
        if lines or old_files.get(old_tf or "") != new_files.get(new_tf or ""):
            changed.append((name, lines or ["Terraform changed (platform or compiler update)"]))
    for name in added:
        job = new_jobs[name]
        out.append(f"+ {name} (new job of team {job.team}, {job.source})")
        sched = job.started_by if not job.schedule else f"{schedule_words(job)} in {job.timezone}"
        out.append(f"    schedule: {sched}{'' if job.enabled else ' (DISABLED)'}")
        out += ["      " + f for f in (next_fire_lines(job, now, NEXT_FIRES) if job.calendar
                                       else _fires(job.schedule, job.timezone, now))]
        out.append(f"    policy: {job.policy.value}")
        out.append(f"    steps: {' -> '.join(_step_line(s) for s in job.steps)}")
        out += [f"    {line}" for line in where_steps_run(job.steps)]
        out += [f"    {line}" for line in map_lines(job.steps)]  # a jp.map's cost per item (compiler/map_cost.py)
        out += [f"    {line}" for line in expect_states.plan_lines(job.steps)]  # compiler/expect_states.py
        doc = _job_doc(new_files, name)
        out.append(f"    reads secrets: {', '.join(secret_grants(doc)) or 'none'}")
        roles = job_roles(new_files, _job_file(new_files, name) or "", doc)
        out.append(f"    state machine: {job.states} states; IAM roles (its team's, shared by identical grants): "
                   + ", ".join(f"{kind} {role}" for kind, role in roles.items()))
    for name, lines in changed:
        out.append(f"~ {name}")
        out += [f"    {line}" for line in lines]
    for name in removed:
        out.append(f"- {name} (removed: its state machine, schedules and roles will be destroyed; history is kept)")
    roots = changed_roots(old_files, new_files)
    base_changed = bool(old_files) and layout.BASE_ROOT in roots
    if base_changed:
        which = [rel for rel in (f"{layout.BASE_ROOT}/{layout.ROOT_FILE}", f"{layout.BASE_ROOT}/{layout.BASE_TFVARS}")
                 if old_files.get(rel) != new_files.get(rel)]
        out.append(f"~ base root changed ({', '.join(which) or layout.BASE_ROOT})")
        tfvars = f"{layout.BASE_ROOT}/{layout.BASE_TFVARS}"
        if old_files.get(tfvars) != new_files.get(tfvars):
            before, after = json.loads(old_files.get(tfvars) or "{}"), json.loads(new_files.get(tfvars) or "{}")
            for key in sorted(set(before) | set(after)):
                if before.get(key) != after.get(key):
                    out.append(f"    [deploy] {key}: {_setting(before.get(key))} -> {_setting(after.get(key))}")
    if settings:
        out.append("~ jobplane.toml: security-relevant settings changed (its code owners review them)")
        out += [f"    {line}" for line in settings]
    total = len(added) + len(changed) + len(removed) + int(base_changed) + len(settings or [])
    if roots and total:
        out += ["", "Terraform roots to plan and apply, in this order: " + ", ".join(roots)]
    if not old_files:
        header = f"No earlier compile to compare with: everything is new. Plan: {len(added)} to add."
    elif total == 0:
        header = "No changes. The compiled output is up to date."
    else:
        header = f"Plan: {len(added)} to add, {len(changed)} to change, {len(removed)} to remove."
    # not changes: named on every plan until fixed
    warnings = years_ending_lines(list(new_jobs.values()), now) + placeholder_lines(list(new_jobs.values()))
    out += ([""] if out and warnings else []) + warnings
    return "\n".join([header, *([""] if out else []), *out]), total


def role_lines(files: dict[str, str], show_all: bool) -> list[str]:
    """The team roots' IAM roles per job, those that the jobs of ``secret_scope: 'job'`` cost
    (issue 62 finding 5: each such job's secrets take roles of their own), and the number of jobs
    one deployment is measured to hold (shared_roles.JOBS_CEILING): shown with ``show_all``,
    whenever a job is of job scope, and as a warning past the ceiling."""
    from jobplane.compiler.shared_roles import JOBS_CEILING, count_roles

    count = count_roles(files, job_files(files))
    if not count.jobs or not (show_all or count.job_scoped_roles or count.jobs > JOBS_CEILING):
        return []
    line = (f"  IAM roles of the team roots: {count.roles:,} for {count.jobs:,} jobs ({count.roles / count.jobs:.2f} a job"
            f"; of them {count.job_scoped_roles:,} for the secrets of the {count.job_scoped_jobs:,} jobs of "
            f"secret_scope 'job'); one deployment is measured to hold up to {JOBS_CEILING:,} jobs in AWS's default "
            "quotas (docs/deploy.md#terraform-roots)")
    if count.jobs > JOBS_CEILING:
        line = (f"  WARNING: {count.jobs:,} jobs, over the {JOBS_CEILING:,} one deployment is measured to hold in AWS's "
                f"default quotas: split them across deployments (accounts), or raise the quotas above; " + line.strip())
    return [line]


def quota_lines(files: dict[str, str], config: PlatformConfig, show_all: bool,
                jobs: Sequence[Job] = ()) -> tuple[list[str], bool]:
    """What the compiled deployment uses of each AWS quota (contract/quotas.py): every quota with
    ``show_all``, else those at 80% or more, and every role whose inline policies outgrow IAM's
    limit; True when an apply would fail on one, or when one job alone runs more at once than
    a concurrent quota allows (``jobs``: what the deployment runs; compiler/quota_usage.py)."""
    from jobplane.compiler.quota_usage import oversized_roles, usage
    from jobplane.compiler.terraform import module_source

    module_dir = (config.output_path / "base" / module_source(config)).resolve()
    uses = usage(files, module_dir, config.quotas, jobs)
    shown = [u for u in uses if show_all or u.level != "ok"]
    lines = [f"  {u.level.upper() + ': ' if u.level != 'ok' else ''}{u.line()}" for u in shown]
    lines += role_lines(files, show_all)
    big = oversized_roles(files)
    lines += [f"  ERROR: IAM role {role} ({rel}): its inline policies take {n:,} characters, over IAM's "
              f"{ROLE_INLINE_POLICY_CHARS:,} (cannot be raised)" for rel, role, n in big]
    if lines:
        lines.insert(0, "AWS quotas (this deployment's resources in one account; the base module counted with "
                        "its optional parts):")
    return lines, any(u.level == "error" for u in uses) or bool(big)


def _param_changes(old: JsonObject | None, new: JsonObject | None) -> list[tuple[str, JsonValue, JsonValue]]:
    """Each typed parameter whose schema changed: (name, before, after); null where absent."""
    before = (old or {}).get("properties") or {}
    after = (new or {}).get("properties") or {}
    return [(n, before.get(n), after.get(n)) for n in sorted(set(before) | set(after)) if before.get(n) != after.get(n)]
