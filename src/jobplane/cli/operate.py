"""The ``jobplane`` commands an operator uses on a running platform: ``run``, ``rerun``,
``status``, ``logs``, ``stop``, ``pause``, ``resume`` and ``ack``. They talk to the running ``jobplane dev``
(found through its data directory's dev.json) or, with ``--deployment`` / JOBPLANE_DEPLOYMENT, to
a deployment on AWS, through the same control plane: same output, same exit codes."""

from __future__ import annotations

import json
import sys
import time
from datetime import timedelta, timezone
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import click

from jobplane.cli.common import (Context, aws_target, control_error, data_dir_option, deployment_option,
                                 resolve_data_dir, target, typed_params, undeployed)
from jobplane.contract import runner as rc
from jobplane.contract.clock import parse_iso
from jobplane.contract.states import step_key
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:  # the platform is imported by the commands that use it (the CLI's start-up)
    from datetime import datetime

    from jobplane.contract.catalog import CatalogJob
    from jobplane.contract.attempts import Attempt
    from jobplane.contract.catalog_brief import JobBrief, RetryBrief
    from jobplane.contract.records import ExecutionRecord
    from jobplane.platform.control import Actor, ControlPlane, JobSummary
    from jobplane.platform.deadline_report import JobDeadlines
    from jobplane.platform.logs import LogStream
    from jobplane.platform.map_records import MapProgress
    from jobplane.platform.step_progress import StepProgress


#: How often `run` asks about the execution it follows: first after FIRST_POLL seconds (a short
#: job has ended by then: its final record, watched for meanwhile, ends the wait and it is asked
#: about once), then less and less often, up to every LAST_POLL seconds. Each ask reads the
#: execution's history (GetExecutionHistory), whose throttling quota the account and Region share
#: with the portal and every other caller (Step Functions developer guide, "Service quotas", API
#: action throttling): a run followed for an hour asked 18,000 times at a steady 0.2 s. Asking at
#: once and every 50 ms at first cost a no-op run four asks (GetItem, DescribeExecution and
#: GetExecutionHistory each) before its end, on a machine that was running it (issue 54 item 5).
FIRST_POLL, LAST_POLL = 0.5, 2.0
#: How often `run` reads a running map's progress (its item records): a line when it changed.
MAP_POLL = 10.0
#: How often a followed run's step progress is read (the runner writes it at most every 10 s).
PROGRESS_POLL = 10.0
#: Between two asks, for the first WATCH_SECONDS, `run` looks for the run's final record this
#: often (one DynamoDB read, no Step Functions quota): the asks' growing pauses found a run
#: that had ended up to half a second late (issue 54 item 5: `jobplane run` of a no-op added
#: 0.84 s to the platform's own start-to-record, bench/dev_e2e.py). For the first
#: FIRST_RECORD_SECONDS after the start it looks every FIRST_RECORD_POLL (a short run's end is
#: seen ~15 ms sooner on average): at most 1 / 0.02 + 59 / 0.05 = 1,230 GetItems of one small
#: record in the watch, 30 more than at a steady 50 ms (a strongly consistent read of an item
#: up to 4 KB takes one read unit: DynamoDB developer guide, "DynamoDB read and write operations").
RECORD_POLL, WATCH_SECONDS = 0.05, 60.0
FIRST_RECORD_POLL, FIRST_RECORD_SECONDS = 0.02, 1.0


@click.command()
@click.argument("job")
@click.option("--param", "-p", "params", multiple=True, metavar="KEY=VALUE", help="A run param (repeatable).")
@click.option("--from-step", default=None, metavar="STEP",
              help="Start at this step (a re-run: the steps before it are not run).")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait for the execution to finish.")
@click.option("--timeout", default=3600.0, show_default=True, help="Seconds to wait with --wait.")
@click.option("--reason", default="jobplane run", show_default=True,
              help="Why (shown in the audit log and the portal), as the portal's run form takes it.")
@data_dir_option
@deployment_option
@click.pass_obj
def run(obj: Context, job: str, params: tuple[str, ...], from_step: str | None, wait: bool, timeout: float,
        reason: str, data_dir: Path | None, deployment: Path | None) -> None:
    """Start JOB now (on the running `jobplane dev`, or with --deployment on AWS), and follow it
    to the end.

    Exits 0 if it succeeded, 1 if it failed, timed out, was stopped or was skipped.
    """
    where = target(obj, data_dir, deployment)
    control = where.control
    try:
        name = control.run_now(job, where.actor, typed_params(control, job, params), reason or "jobplane run", from_step)
    except control_error() as e:
        unknown = e.code == "not_found" and e.details.get("job") == job and deployment is None
        raise click.ClickException(e.message + (undeployed(obj, job) if unknown else "")) from None
    click.echo(f"started {job}: {name}" + (f"\n  {where.link(name)}" if where.link(name) else ""))
    if not wait:
        return
    # what reading its history takes is loaded while it runs, not after it has ended
    import jobplane.platform.timeline  # noqa: F401
    deadline = time.monotonic() + timeout
    seen: set[tuple[str, int]] = set()
    pause = FIRST_POLL
    watch_until, eager_until = time.monotonic() + WATCH_SECONDS, time.monotonic() + FIRST_RECORD_SECONDS
    brief = _brief(control, job)
    retries = brief.retries if brief else {}
    from jobplane.contract.step_kinds import kind_info

    per_item = brief is not None and any(s.kind and kind_info(s.kind).per_item for s in brief.steps)
    maps = MapWatch(control, name) if per_item else None
    steps_progress = ProgressWatch(control, job, name)
    while True:
        ended = _pause(control, name, min(pause, max(deadline - time.monotonic(), 0.0)),
                       watching=time.monotonic() < watch_until, eager_until=eager_until)
        pause = min(pause * 1.5, LAST_POLL)
        view = control.execution(name, job, ended)
        for row in view.timeline:
            key = (row.step, row.attempt)
            if row.finished_at and key not in seen:
                seen.add(key)
                click.echo(attempt_line(row, retries.get(row.step)))
        if maps is not None and view.running:
            for line in maps.changed():
                click.echo(line)
        if view.running:
            for line in steps_progress.changed():
                click.echo(line)
        if not view.running and (view.record is not None or time.monotonic() > deadline):
            break
        if time.monotonic() > deadline:
            raise click.ClickException(f"{name} still {view.status} after {timeout:.0f}s")
    suffix = f" at {view.failed_step}" if view.failed_step else ""
    if view.failed_step and view.record:
        from jobplane.contract.attempts import attempt_rows

        # the step's last attempt's own code: one stopped before its container exited has none
        # (an earlier attempt's, a kill -9's 137, is not why this one ended: issue 65 item 3)
        rows = [r for r in attempt_rows(view.record.steps or {}, view.timeline) if r.step == view.failed_step]
        if rows and rows[-1].exit_code is not None:
            suffix += f" (exit code {rows[-1].exit_code})"
    skip = view.record.skip_reason if view.record else None
    if skip:  # the policy (or a duplicate) decided not to run it: say why, there are no logs
        click.echo(f"SKIPPED ({skip}): see {job}'s running or failed execution with `jobplane status`")
        sys.exit(1)
    ended_maps = maps.final() if maps is not None else []
    counts = "".join(f"; {p.map}: {p.succeeded} succeeded, {p.failed} failed"
                     + (f" of {p.total}" if p.total is not None else "") for p in ended_maps)
    click.echo(f"{view.status}{suffix}{counts}" + (f": {view.error}" if view.error else ""))
    for p in ended_maps:
        for line in p.error_lines():
            click.echo(f"  {p.map} {line}")
    for line in steps_progress.final():
        click.echo(line)
    click.echo(f"  logs: jobplane logs {name}")
    sys.exit(0 if view.status == ExecutionStatus.SUCCEEDED.value else 1)


def _pause(control: ControlPlane, name: str, seconds: float, watching: bool,
           eager_until: float = 0.0) -> ExecutionRecord | None:
    """Wait ``seconds`` before the next ask; while ``watching``, end the wait as soon as the
    run's final record is written (looked for every FIRST_RECORD_POLL until the monotonic time
    ``eager_until``, then every RECORD_POLL), and return it: the ask reads it no second time."""
    if not watching:
        time.sleep(seconds)
        return None
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(FIRST_RECORD_POLL if time.monotonic() < eager_until else RECORD_POLL, left))
        record = control.context.repo.execution(name)
        if record is not None:
            return record
    return None


def _brief(control: ControlPlane, job: str) -> JobBrief | None:
    """The job's catalog entry as a run needs it: each step's retry policy and kind (none known:
    the lines say only what happened)."""
    try:
        return control.brief(job)
    except control_error():
        return None


class ProgressWatch:
    """A followed run's steps' own progress (jobplane.progress: docs/progress.md): a line per
    step when what it reported changes, read at most every PROGRESS_POLL seconds (one Query of
    the run's progress records; the runner writes at most every 10 s anyway)."""

    def __init__(self, control: ControlPlane, job: str, execution: str):
        self.control, self.job, self.execution = control, job, execution
        self.last: dict[str, tuple[object, ...]] = {}
        self.asked = 0.0

    def _read(self) -> list[StepProgress]:
        try:
            return self.control.step_progress(self.job, self.execution)
        except control_error():
            return []

    def changed(self) -> list[str]:
        if time.monotonic() - self.asked < PROGRESS_POLL:
            return []
        self.asked = time.monotonic()
        lines = []
        for p in self._read():
            seen = (p.attempt, p.updated_at, p.ended)
            if self.last.get(p.step) == seen:
                continue
            self.last[p.step] = seen
            lines.append(f"  {p.step}: {p.words()}")
        return lines

    def final(self) -> list[str]:
        """Each step's last reported values, once the run has ended."""
        return [f"  {p.step}: {p.words()}" for p in self._read()]


class MapWatch:
    """A followed run's maps: a line per map when its counts change (done, failed, running,
    waiting of N), read at most every MAP_POLL seconds (one Query of the run's item records and
    one HeadObject of its list, platform/map_records.py), so a 1,000-item map is not minutes of
    silence between its items step and its end (issue 65 item 8)."""

    def __init__(self, control: ControlPlane, execution: str):
        self.control, self.execution = control, execution
        self.last: dict[str, tuple[int, int, int | None, int]] = {}
        self.asked = 0.0

    def changed(self) -> list[str]:
        if time.monotonic() - self.asked < MAP_POLL:
            return []
        self.asked = time.monotonic()
        try:
            now = self.control.map_progress(self.execution, own_errors=False)
        except control_error():
            return []
        lines = []
        for p in now:
            counts = (p.succeeded, p.failed, p.running, p.waiting)
            if p.total is None or self.last.get(p.map) == counts:
                continue  # no list yet (its items step still runs), or nothing new
            self.last[p.map] = counts
            waiting = f", {p.waiting} waiting for a pool's slot" if p.waiting else ""
            failed = f" ({p.failed} failed)" if p.failed else ""
            lines.append(f"  {p.map}: {p.done} of {p.total} done{failed}, {p.running} running{waiting}")
        return lines

    def final(self) -> list[MapProgress]:
        """Each map's counts once the run has ended, with the first failed items' own errors."""
        try:
            return self.control.map_progress(self.execution)
        except control_error():
            return []


def attempt_line(row: Attempt, retry: RetryBrief | None) -> str:
    """One ended attempt, and what comes next: the wait before the next attempt (as the compiled
    state machine waits: interval x backoff^(n-1), at most max_interval), or why there is none
    (a permanent exit code, no attempts left, a timeout: the state machine retries none of them)."""
    line = f"  {row.step} (attempt {row.attempt}): {row.outcome}"
    if row.exit_code is not None and row.outcome != "succeeded":
        line += f" (exit code {row.exit_code})"
    if row.outcome not in ("failed", "timed out"):
        return line
    if row.outcome == "timed out":
        # both executors catch States.Timeout before any retry and go to the job's timed-out
        # record (compiler/executors/ecs.py, lambda_.py): a step's timeout is never retried
        return line + "; not retried (a step that times out ends the run)"
    if row.exit_code is not None and not rc.is_retryable(row.exit_code):
        return line + "; not retried (a permanent failure)"
    if retry is None or row.attempt >= retry.attempts:
        return line + ("; no attempts left" if retry is not None and retry.attempts > 1 else "")
    wait = min(int(round(retry.interval * retry.backoff ** (row.attempt - 1))), retry.max_interval)
    at = ""
    if row.finished_at:
        at = f" at {(parse_iso(row.finished_at) + timedelta(seconds=wait)).strftime('%H:%M:%S')} UTC"
    return line + f"; retrying in {_span(wait)} (attempt {row.attempt + 1} of {retry.attempts}{at})"


def _span(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        m, s = divmod(seconds, 60)
        return f"{m} min" + (f" {s} s" if s else "")
    h, rest = divmod(seconds, 3600)
    return f"{h} h" + (f" {rest // 60} min" if rest // 60 else "")


@click.command()
@data_dir_option
@deployment_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def status(obj: Context, data_dir: Path | None, deployment: Path | None, as_json: bool) -> None:
    """Jobs: last status, running executions, next fire time (of `jobplane dev`, or with
    --deployment on AWS). While `jobplane dev` is not running, its last saved state, with the
    next fires of cron schedules and the open episodes of missed fires."""
    control = _reader(obj, data_dir, deployment, lambda where, why: _offline_status(where, why, as_json))
    if control is None:
        return
    jobs = control.jobs(fires=1)
    # schedules changed outside jobplane (GetSchedule each; not while the platform is stopped)
    problems = {j.name: list(control.schedule_problems(j.name).values()) for j in jobs
                if j.entry.schedule}
    maps = running_maps(control, jobs)
    reported = running_progress(control, jobs)
    pools = pool_status(control, jobs, obj.config.pools, maps)
    from jobplane.platform.deadline_report import team_deadlines

    deadlines = team_deadlines(control.context)  # the jobs with a deadline, by team (one Query each)
    by_job = {r.job: r for team in deadlines for r in team.jobs}
    waiting_approval = _waiting_approvals(control, jobs)
    if as_json:
        click.echo(json.dumps([{"job": j.name, "team": j.team, "last_status": j.state.last_status if j.state else None,
                                "last_finished_at": j.state.last_finished_at if j.state else None,
                                "running": j.running, "paused": j.paused,
                                "snoozed_until": _snoozed_until(j),
                                "next_fire": j.next_fires[0].isoformat() if j.next_fires else None,
                                "missed": _missed(j), "schedule_problems": problems.get(j.name, []),
                                **({"waiting": pools.waiting[j.name]} if j.name in pools.waiting else {}),
                                **({"maps": [{"execution": e, "maps": [p.to_json() for p in ps]}
                                             for e, ps in maps[j.name]]} if j.name in maps else {}),
                                **({"progress": [{"execution": e, "steps": [p.to_json() for p in ps]}
                                                 for e, ps in reported[j.name]]} if j.name in reported else {}),
                                "deadline": _deadline(by_job.get(j.name)),
                                **({"waiting_approval": [a.as_json() for a in waiting_approval[j.name]]}
                                   if j.name in waiting_approval else {}),
                                # the digest of the definition deployed (docs/operate.md, "Which definition")
                                "definition": j.entry.definition} for j in jobs],
                               indent=2))
        return
    width = max(len(j.name) for j in jobs) if jobs else 10
    click.echo(f"{'JOB':<{width}}  {'TEAM':<9} {'LAST':<10} {'FINISHED (UTC)':<20} {'RUNNING':<8} NEXT FIRE")
    for j in jobs:
        last = (j.state.last_status if j.state else None) or "-"
        finished = (j.state.last_finished_at or "")[:19].replace("T", " ") if j.state else ""
        if j.paused:
            nxt = "paused"
        elif j.next_fires:
            nxt = _fire_text(j.next_fires[0])
        else:
            nxt = j.entry.started_by if not j.entry.schedule else "disabled"
        click.echo(f"{j.name:<{width}}  {j.team:<9} {last:<10} {finished or '-':<20} {len(j.running) or '-':<8} {nxt}")
    snoozed = [(j, until) for j in jobs if (until := _snoozed_until(j)) is not None]
    if snoozed:
        click.echo("\nAlerts snoozed (held, then summarised when the snooze ends; `jobplane unsnooze JOB` ends it):")
        for j, until in snoozed:
            st = j.state
            click.echo(f"  {j.name}: until {until[:16].replace('T', ' ')} UTC by {st.snoozed_by if st else '?'}: "
                       f"{st.snooze_reason if st else ''} ({st.snooze_held_count if st else 0} held so far)")
    missed = [(j, m) for j in jobs if (m := _missed(j)) is not None]
    if missed:
        click.echo("\nMissed fires (neither ran nor skipped; run one with `jobplane backfill JOB --from FIRE --to FIRE`):")
        for j, m in missed:
            click.echo(f"  {j.name}: {m['count']} since {m['since']}: {m['cause']}")
    if maps:
        click.echo("\nMaps of running runs (items done, failed, running and waiting for a pool's slot, of N):")
        for job, runs in sorted(maps.items()):
            for execution, progress in runs:
                for mp in progress:
                    of = f" of {mp.total}" if mp.total is not None else " (list not written yet)"
                    running = f", {mp.running} running" if mp.running is not None else ""
                    click.echo(f"  {job}: {execution} {mp.map}: {mp.done} done{of} ({mp.succeeded} succeeded, "
                               f"{mp.failed} failed){running}, {mp.waiting} waiting")
    if reported:
        click.echo("\nProgress of running runs (as their steps report it; docs/progress.md):")
        for job, reports in sorted(reported.items()):
            for execution, steps in reports:
                for sp in steps:
                    click.echo(f"  {job}: {execution} {sp.step}: {sp.words()}")
    if waiting_approval:
        click.echo("\nWaiting for approval (`jobplane approve|reject EXECUTION --reason`; docs/operate.md):")
        for job, found in sorted(waiting_approval.items()):
            for a in found:
                who = ", ".join(a.approvers) or f"team {a.team}"
                click.echo(f"  {job}: {a.execution} {a.step}: WAITING_APPROVAL since {a.asked_at[:19]} for {who}; "
                           f"{a.on_timeout} at {a.timeout_at.isoformat()[:19]}" + (f": {a.shown_prompt()}" if a.prompt else ""))
    pools.echo()
    queue = control.events_dead_letters()
    undelivered = queue.count()  # alerts Slack refused, events nobody took
    if undelivered:
        click.echo(f"\nUndelivered: about {undelivered} in {queue.name} "
                   "(see `jobplane dead-letters`)")
    changed = [(name, p) for name, ps in problems.items() for p in ps]
    if changed:
        click.echo("\nSchedules not as compiled:")
        for name, p in changed:
            click.echo(f"  {name}: {p}")
    if deadlines:
        click.echo("\nDeadlines (fires whose run SUCCEEDED by the deadline):")
        for team in deadlines:
            click.echo(f"  team {team.team}: " + "; ".join(s.words() for s in team.shares))
            for r in team.jobs:
                click.echo(f"    {r.job} ({r.deadline}): " + "; ".join(s.words() for s in r.shares))
                for b in r.breaches[:5]:
                    late = f", SUCCEEDED {b.succeeded_at}" if b.succeeded_at else ""
                    click.echo(f"      breached {b.fire} (due {b.due}){late}: {b.reason}")


def _waiting_approvals(control: ControlPlane, jobs: list[JobSummary]) -> dict[str, list[Any]]:
    """The pending approvals of running runs (jp.approval; one Query of the pending partition,
    only when a run is running), by job."""
    if not any(j.running for j in jobs):
        return {}
    from jobplane.platform.approvals import Approvals

    out: dict[str, list[Any]] = {}
    for a in Approvals(control).pending():
        out.setdefault(a.job, []).append(a)
    return out


def _deadline(report: JobDeadlines | None) -> JsonObject | None:
    if report is None:
        return None
    return {"deadline": report.deadline,
            "shares": [{"days": s.days, "fires": s.fires, "met": s.met, "share": s.share} for s in report.shares],
            "breaches": [dict(b.__dict__) for b in report.breaches]}


def running_maps(control: ControlPlane, jobs: list[JobSummary]) -> dict[str, list[tuple[str, list[MapProgress]]]]:
    """Each running run's maps, for the jobs with a map step (their item records: one Query per
    running run, counts only), by job."""
    from jobplane.contract.step_kinds import per_item_steps

    out: dict[str, list[tuple[str, list[MapProgress]]]] = {}
    for j in jobs:
        if not j.running or not per_item_steps(j.entry.steps):
            continue
        for execution in j.running:
            try:
                progress = control.map_progress(execution, own_errors=False)
            except control_error():  # ended between the two reads
                continue
            if progress:
                out.setdefault(j.name, []).append((execution, progress))
    return out


def running_progress(control: ControlPlane, jobs: list[JobSummary]) -> dict[str, list[tuple[str, list[StepProgress]]]]:
    """Each running run's steps' reported progress (one Query per running run), by job."""
    out: dict[str, list[tuple[str, list[StepProgress]]]] = {}
    for j in jobs:
        for execution in sorted(j.running):
            steps = control.step_progress(j.name, execution)
            if steps:
                out.setdefault(j.name, []).append((execution, steps))
    return out


def pool_status(control: ControlPlane, jobs: list[JobSummary], sizes: dict[str, int],
                maps: dict[str, list[tuple[str, list[MapProgress]]]] | None = None) -> PoolStatus:
    """Each pool's holders (its counter and holder items) and, for jobs whose steps hold a pool, their runs whose
    steps are WAITING for a slot (each running run's history: only those jobs' runs are read),
    or whose map items are (their item records, platform/map_records.py)."""
    from jobplane.contract.step_kinds import per_item_steps
    from jobplane.platform.pool_slots import pools as pool_items

    # the pools jobplane.toml declares, and any other that still has holders (a pool removed
    # from jobplane.toml while runs held it): the counter says how full, the holder items who
    context = control.context
    items = {p.name: p for p in pool_items(context.ddb, context.deployment.table, tuple(sizes))}
    # a holder names its step by key (close_tenant, what state data and the ticket use): shown
    # by the name the definition gives it (close-tenant; issue 65 item 8)
    step_names = {(j.entry.name, step_key(s.name)): s.name for j in jobs for top in j.entry.steps
                  for s in (top, *(top.parallel or []))}
    lines = []
    for name in sorted(set(sizes) | {n for n, p in items.items() if p.everyone}):
        pool = items.get(name)
        who: dict[str, int] = {}
        for h in pool.everyone if pool else ():
            job = h.job(context.deployment.name_prefix) or "?"  # a map item's child: its parent's job
            step = step_names.get((job, h.step), h.step)
            who[f"{job}/{step}"] = who.get(f"{job}/{step}", 0) + h.weight
        held = ", ".join(f"{k}" + (f" x{n}" if n > 1 else "") for k, n in sorted(who.items()))
        lines.append(f"  {name}: {pool.used if pool else 0}/{sizes.get(name, '?')} held" + (f" by {held}" if held else ""))
    waiting: dict[str, list[JsonObject]] = {}
    for j in jobs:
        if not j.running or not any(s.pool for top in j.entry.steps for s in (top.parallel or [top])):
            continue
        has_map = bool(per_item_steps(j.entry.steps))  # a map's items wait in their child executions
        known = dict((maps or {}).get(j.name, []))  # the maps already read of this job's runs: once per job
        for view in control.running_executions(j.name):
            rows = [r for r in view.timeline if r.waiting]
            # a map's items wait in their child executions: their item records say WAITING
            progress = known[view.execution] if view.execution in known else \
                control.map_progress(view.execution, own_errors=False) if has_map else []
            maps_waiting = [p for p in progress if p.waiting]
            if rows or maps_waiting:
                since = [r.waiting_since or "" for r in rows] + [p.waiting_since or "" for p in maps_waiting]
                waiting.setdefault(j.name, []).append(
                    {"execution": view.execution, "status": view.status_word,
                     "steps": sorted({r.step for r in rows}), "since": min(since),
                     **({"items": {p.map: {"waiting": p.waiting, "total": p.total} for p in maps_waiting}}
                        if maps_waiting else {})})
    return PoolStatus(lines, waiting)


@dataclass(frozen=True)
class PoolStatus:
    lines: list[str]
    waiting: dict[str, list[JsonObject]]  # job -> its runs WAITING for a pool's slot

    def echo(self) -> None:
        if self.lines:
            click.echo("\nPools (slots held / size):")
            for line in self.lines:
                click.echo(line)
        if self.waiting:
            click.echo("\nWAITING for a pool's slot (not running yet; their steps' timeouts have not started):")
            for job, runs in sorted(self.waiting.items()):
                for r in runs:
                    items = [f"{m}: {n['waiting']}" + (f" of {n['total']}" if n["total"] is not None else "") + " items"
                             for m, n in sorted(r.get("items", {}).items())]
                    click.echo(f"  {job}: {r['execution']} {', '.join(r['steps'] + items)} since {r['since'][:19]}")


def _missed(job: JobSummary) -> JsonObject | None:
    s = job.state
    if not (s and s.missed_since):
        return None
    return {"since": s.missed_since, "count": s.missed_count, "cause": s.missed_cause}


@click.command()
@click.argument("execution")
@click.option("--step", default=None, help="Only this step's attempts.")
@data_dir_option
@deployment_option
@click.pass_obj
def logs(obj: Context, execution: str, step: str | None, data_dir: Path | None, deployment: Path | None) -> None:
    """Print the step logs of EXECUTION (every attempt, in the order they ran), read from
    CloudWatch Logs (of `jobplane dev`, or with --deployment on AWS); while `jobplane dev` is
    stopped, from its cache in the data directory."""
    control = _reader(obj, data_dir, deployment, lambda where, why: _offline_logs(where, execution, step, why))
    if control is None:
        return
    try:
        view = control.execution(execution)
    except control_error() as e:
        raise click.ClickException(e.message) from None
    streams = control.log_streams(view, step)
    if not streams:
        what = f"step {step!r} of {execution}" if step else execution
        raise click.ClickException(f"no logs for {what} ({view.status}; steps that ran: "
                                   f"{', '.join(sorted({r.step for r in view.timeline})) or 'none'})")
    _print_streams(streams)


def _reader(obj: Context, data_dir: Path | None, deployment: Path | None,
            offline: Callable[[Path, Exception], None]) -> ControlPlane | None:
    """The control plane a read-only command asks: the deployment on AWS with --deployment,
    else the running `jobplane dev`; while that is stopped, ``offline`` answers from its data
    directory instead, and None is returned."""
    from jobplane.cli.process import started
    from jobplane.devserver.runtime import DevError, control_for

    with started():  # as target(): the console script's own process collects none of it
        if deployment is not None:
            return aws_target(deployment, identify=False).control
        try:
            return control_for(resolve_data_dir(obj, data_dir))
        except DevError as e:
            error = e
    offline(resolve_data_dir(obj, data_dir), error)
    return None


def _print_streams(streams: list[LogStream]) -> None:
    for s in streams:
        click.echo(f"==> {s.step} (attempt {s.attempt}, task {s.task_id}) <==")
        click.echo(s.read(), nl=False)


def _offline_logs(data_dir: Path, execution: str, step: str | None, why: Exception) -> None:
    from jobplane.platform.local.awslogs import LogCache

    streams = LogCache(data_dir / "logs").streams(execution, step)
    if not streams:
        raise click.ClickException(f"no logs for {execution}{f' step {step}' if step else ''} in {data_dir / 'logs'}; {why}")
    click.echo(f"(jobplane dev is not running: logs read from {data_dir / 'logs'})", err=True)
    _print_streams(streams)


def _offline_status(data_dir: Path, why: Exception, as_json: bool) -> None:
    """The jobs' last state as the stopped platform saved it (state.json, and the catalog of its
    compiled/ output), with what can be computed without it: each job's next fire (cron
    schedules: a rate() counts from its schedule's creation, which only the platform knows), its
    open episode of missed fires, and the fires that fell due since its scheduler stopped (the
    ledger records them MISSED when it starts again)."""
    from datetime import datetime

    from jobplane.contract import datamodel as dm
    from jobplane.contract.catalog import Catalog
    from jobplane.contract.layout import catalog_parts
    from jobplane.devserver.runtime import SNAPSHOT_FILE
    from jobplane.devserver.snapshot import Snapshot
    from jobplane.contract.records import JobState

    snapshot = Snapshot.load(data_dir / SNAPSHOT_FILE)
    compiled = data_dir / "compiled"
    if snapshot is None or not catalog_parts(compiled):
        raise click.ClickException(str(why))
    states = {s.job: s for s in (JobState.from_item(i) for i in snapshot.items
                                 if i.get("sk", {}).get("S") == dm.STATE_SK and i.get("pk", {}).get("S", "").startswith(dm.JOB_PREFIX))}
    jobs = sorted(Catalog.load(compiled).jobs, key=lambda j: (j.team, j.name))  # as the running platform lists them
    now = datetime.now(timezone.utc)
    stopped_at = _scheduler_stopped_at(data_dir)
    rows: list[JsonObject] = []
    shown: dict[str, str] = {}  # each next fire as the running platform's status writes it
    from jobplane.contract.schedule_kinds import kind_of

    for j in jobs:
        state = states.get(j.name)
        paused = bool(state and state.paused)
        computable = j.scheduled and not paused and not any(kind_of(s).counts_from_deployment for s in j.schedule)
        next_fire = _offline_next_fire(j, now) if computable else None
        if next_fire is not None:
            shown[j.name] = _fire_text(next_fire)
        not_started = _fires_between(j, stopped_at, now) if computable and stopped_at else None
        rows.append({"job": j.name, "team": j.team, "last_status": state.last_status if state else None,
                     "last_finished_at": state.last_finished_at if state else None, "paused": paused,
                     "next_fire": next_fire.isoformat() if next_fire else None, "started_by": None if j.schedule else j.started_by,
                     "missed": {"since": state.missed_since, "count": state.missed_count, "cause": state.missed_cause}
                     if state and state.missed_since else None,
                     "not_started": not_started})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    saved = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime((data_dir / SNAPSHOT_FILE).stat().st_mtime))
    click.echo(f"jobplane dev is not running; its last saved state ({data_dir / SNAPSHOT_FILE}, {saved}):")
    width = max([len(str(r["job"])) for r in rows] + [3])
    click.echo(f"{'JOB':<{width}}  {'TEAM':<9} {'LAST':<10} {'FINISHED (UTC)':<20} NEXT FIRE (when it runs again)")
    for r in rows:
        finished = str(r["last_finished_at"] or "")[:19].replace("T", " ")
        if r["paused"]:
            nxt = "paused"
        elif r["next_fire"]:
            nxt = shown[str(r["job"])]
        else:
            nxt = str(r["started_by"] or "-")
        click.echo(f"{r['job']:<{width}}  {r['team']:<9} {r['last_status'] or '-':<10} {finished or '-':<20} {nxt}")
    missed = [r for r in rows if r["missed"]]
    if missed:
        click.echo("\nMissed fires (neither ran nor skipped; run one with `jobplane backfill JOB --from FIRE --to FIRE`):")
        for r in missed:
            m = r["missed"]
            assert isinstance(m, dict)
            click.echo(f"  {r['job']}: {m['count']} since {m['since']}: {m['cause']}")
    lagging = [r for r in rows if r["not_started"]]
    if lagging and stopped_at:
        click.echo(f"\nNot started since the scheduler stopped ({stopped_at.strftime('%Y-%m-%d %H:%M:%S UTC')}); "
                   "recorded MISSED when `jobplane dev` starts again:")
        for r in lagging:
            d = r["not_started"]
            assert isinstance(d, dict)
            click.echo(f"  {r['job']}: {d['count']} fire{'s' if d['count'] != 1 else ''} since {d['first']}")


def _scheduler_stopped_at(data_dir: Path) -> datetime | None:
    """How far the stopped platform's scheduler fired (its record, devserver SCHEDULER_RECORD)."""
    from jobplane.devserver.dev_platform import SCHEDULER_RECORD

    try:
        return parse_iso(json.loads((data_dir / SCHEDULER_RECORD).read_text())["running_until"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _fire_text(t: datetime) -> str:
    """A next fire in its job's timezone (its abbreviation), and in UTC where that differs
    ("09:38 UTC (09:38 UTC)" said nothing): the same whether `jobplane dev` runs or not."""
    text = t.strftime('%Y-%m-%d %H:%M %Z')
    if t.utcoffset():
        text += f" ({t.astimezone(timezone.utc).strftime('%H:%M UTC')})"
    return text


def _offline_next_fire(job: CatalogJob, now: datetime) -> datetime | None:
    from jobplane.platform.control.views import next_fires

    fires = next_fires(job, 1, after=now)
    return fires[0] if fires else None


def _fires_between(job: CatalogJob, start: datetime, end: datetime) -> JsonObject | None:
    from jobplane.platform.backfill_model import plan_fires

    try:
        fires = plan_fires(job.schedule, job.timezone, start + timedelta(milliseconds=1), end,
                           calendar=job.calendar_schedule)
    except ValueError:
        return {"count": "more than 1,000", "first": None}
    if not fires:
        return None
    return {"count": len(fires), "first": fires[0].strftime("%Y-%m-%dT%H:%M:%SZ")}


reason_option = click.option("--reason", required=True, help="Why (shown in the audit log and the portal).")


def _act(obj: Context, data_dir: Path | None, deployment: Path | None,
         action: Callable[[ControlPlane, Actor], object], done: str) -> None:
    where = target(obj, data_dir, deployment)
    try:
        action(where.control, where.actor)
    except control_error() as e:
        raise click.ClickException(e.message) from None
    click.echo(f"{done} ({where.where}, as {where.as_whom})")


@click.command()
@click.argument("execution")
@reason_option
@data_dir_option
@deployment_option
@click.pass_obj
def stop(obj: Context, execution: str, reason: str, data_dir: Path | None, deployment: Path | None) -> None:
    """Stop a running EXECUTION: its step's task is stopped, the run is recorded ABORTED and its
    claim released."""
    _act(obj, data_dir, deployment, lambda c, actor: c.stop(execution, actor, reason), f"stop requested for {execution}")


@click.command()
@click.argument("execution")
@click.option("--whole", is_flag=True, help="Re-run every step (default: from the failed step).")
@click.option("--param", "-p", "params", multiple=True, metavar="KEY=VALUE",
              help="Change a param of the original run (repeatable).")
@click.option("--reason", default="", help="Why (shown in the audit log and the portal).")
@click.option("--failed-items", is_flag=True, help="Only the map items that failed (jp.map), nothing else before the map.")
@click.option("--map", "map_name", default=None, help="With --failed-items: which map, when several had failures.")
@click.option("--current", is_flag=True,
              help="Run the definition deployed now (default: the one EXECUTION ran, as its published Step Functions "
                   "version; refused if it has none and its steps changed since).")
@click.option("--from-scratch", is_flag=True,
              help="Start the failed step from its beginning (default: from the checkpoint its attempt last reported, "
                   "jobplane.resume_from()).")
@data_dir_option
@deployment_option
@click.pass_obj
def rerun(obj: Context, execution: str, whole: bool, params: tuple[str, ...], reason: str, failed_items: bool,
          map_name: str | None, data_dir: Path | None, deployment: Path | None, current: bool = False,
          from_scratch: bool = False) -> None:
    """Re-run EXECUTION from its failed step (or --whole, or only its --failed-items) with its
    params, as the portal's re-run buttons do; prints the new execution's name and does not wait for it."""
    if failed_items and whole:
        raise click.UsageError("--failed-items and --whole are different re-runs: give one")
    where = target(obj, data_dir, deployment)
    try:
        given = typed_params(where.control, where.control.subject(execution).job, params) if params else {}
        if failed_items:
            name = where.control.rerun_failed_items(execution, where.actor, map_name, reason, given)
        else:
            name = where.control.rerun(execution, where.actor, not whole, given, reason, current=current,
                                       from_scratch=from_scratch)
    except control_error() as e:
        raise click.ClickException(e.message) from None
    click.echo(f"started {name}, a re-run of {execution} ({where.where}, as {where.as_whom})"
               + (f"\n  {where.link(name)}" if where.link(name) else ""))


def _job_action(name: str, method: str, done: str, doc: str) -> click.Command:
    """``jobplane NAME JOB --reason R``: one of the control plane's audited job actions."""
    def command(obj: Context, job: str, reason: str, data_dir: Path | None, deployment: Path | None) -> None:
        _act(obj, data_dir, deployment, lambda c, actor: getattr(c, method)(job, actor, reason), done.format(job=job))

    command.__doc__ = doc
    return click.command(name)(click.argument("job")(reason_option(data_dir_option(deployment_option(
        click.pass_obj(command))))))


pause = _job_action("pause", "pause", "{job} paused",
                    "Pause JOB's schedules: no scheduled run starts until `jobplane resume` (manual runs still can).")
resume = _job_action("resume", "resume", "{job} resumed", "Resume JOB's schedules after `jobplane pause`.")
ack = _job_action("ack", "acknowledge", "{job}'s failure acknowledged",
                  "Acknowledge JOB's last failure: a SKIP_IF_FAILED job's scheduled runs start again (the next "
                  "success still announces RECOVERED).")


@click.command()
@click.argument("job")
@click.option("--for", "for_", default=None, metavar="DURATION",
              help="How long: '2h', '1d', '90m' (at most 7 days).")
@click.option("--until", default=None, metavar="ISO-TIME", help="Until this time (with its offset), instead of --for.")
@reason_option
@data_dir_option
@deployment_option
@click.pass_obj
def snooze(obj: Context, job: str, for_: str | None, until: str | None, reason: str, data_dir: Path | None,
           deployment: Path | None) -> None:
    """Hold JOB's alerts until a time: its runs are recorded and shown as always, and one summary
    of the alerts held is sent when the snooze ends (by itself, or `jobplane unsnooze`)."""
    from datetime import datetime

    if (for_ is None) == (until is None):
        raise click.UsageError("give --for DURATION or --until ISO-TIME")
    if for_ is not None:
        from jobplane.compiler.durations import parse_duration

        try:
            end = datetime.now(timezone.utc) + timedelta(seconds=parse_duration(for_))
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--for") from None
    else:
        from jobplane.cli.common import aware_time

        end = aware_time(str(until), "--until")
    _act(obj, data_dir, deployment, lambda c, actor: c.snooze(job, actor, end, reason),
         f"{job}'s alerts snoozed until {end.astimezone(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")


unsnooze = _job_action("unsnooze", "unsnooze", "{job}'s snooze ended: the summary of what it held follows",
                       "End JOB's snooze now: its alerts are delivered again, and the summary of those held is sent.")


def _snoozed_until(job: JobSummary) -> str | None:
    from jobplane.contract.clock import now_iso

    snooze = job.state.snooze_at(now_iso()) if job.state else None
    return snooze.until if snooze else None


@click.command("repair-pauses")
@data_dir_option
@deployment_option
@click.pass_obj
def repair_pauses(obj: Context, data_dir: Path | None, deployment: Path | None) -> None:
    """Disable again every paused job's schedule found ENABLED (the pipeline runs it after each
    apply, which writes the compiled state).

    `terraform apply` of a team root writes each schedule's compiled state (ENABLED) and would
    undo a pause (docs/deploy.md). Prints each schedule it disabled."""
    where = target(obj, data_dir, deployment)
    try:
        repaired = where.control.repair_pauses()
    except control_error() as e:
        raise click.ClickException(e.message) from None
    for name in repaired:
        click.echo(f"{name}: ENABLED though its job is paused; disabled again")
    click.echo(f"{len(repaired)} paused job schedule(s) disabled again ({where.where})")


@click.command("index-statuses")
@data_dir_option
@deployment_option
@click.pass_obj
def index_statuses(obj: Context, data_dir: Path | None, deployment: Path | None) -> None:
    """File every job in the status index under its last status (once, after the upgrade that
    added the index: docs/deploy.md); safe to run again.

    A job whose run ends files itself; this files the jobs whose last run ended before the
    index existed, so the jobs page filtered by their status lists them. Prints each job filed."""
    where = target(obj, data_dir, deployment)
    try:
        filed = where.control.context.repo.index_job_statuses()
    except control_error() as e:
        raise click.ClickException(e.message) from None
    for job in filed:
        click.echo(f"{job}: filed under its last status")
    click.echo(f"{len(filed)} job(s) filed in the status index ({where.where})")
