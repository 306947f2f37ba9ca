"""Missed fires: every expected fire of a scheduled job is accounted for, and one that neither
ran nor was skipped is recorded and alerted, once per episode.

The failure nobody sees is the job that stopped: a schedule disabled or deleted by hand, a
start EventBridge Scheduler could not make (it puts the fire into the scheduler dead-letter
queue, and nothing else happens), or the scheduler itself down (``jobplane dev`` stopped). The
platform knows every job's schedule (the catalog), so its periodic check (``jobplane dev``'s
thread; on AWS the periodic Lambda, :func:`jobplane.platform.slow.handler`) keeps a ledger:

* each job's fires after its watermark (``fires_checked_until`` on its state; at first the
  creation of its schedules, so fires before the job was deployed never count) up to ``now -
  grace`` are counted: the claim counts each scheduled fire it takes, in order, so a count that
  matches the schedule's fires means each was claimed, and no run is read (:meth:`_counted`);
  any other count, and a job without one, has them matched with the job's records exactly as a
  backfill matches them
  (:meth:`Backfills.preview`: a run or a recorded skip with that ``scheduled_time``, or a run in
  flight); a fire with neither is MISSED: a record (status MISSED, listed with the job's runs,
  in the ``MISSED`` feed, and in the API) naming the cause where AWS says it;
* causes: a dead letter of that fire (its ``ERROR_CODE`` / ``ERROR_MESSAGE`` attributes,
  https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html), else
  the scheduler not running then (``jobplane dev``'s local scheduler knows its own stops:
  ``outages``), else what the deployed schedule says (:func:`schedule_problems`: missing,
  DISABLED outside jobplane, expression or timezone changed), else "no start seen";
* one alert per episode: the first missed fire opens it (a conditional write: two checkers
  never both alert) and its alert counts what was found; later missed fires of the same episode
  only add to the count; the first fire after them that runs (its record, or a run in flight,
  also one claimed past the grace the pass looks to) closes it with one RECOVERED note, and so
  does running every missed fire of it (a backfill); the next missed fire opens a new episode,
  with its own alert. Fires are taken in order, so one pass can close an episode and open the
  next;
* a paused job, a job with ``enabled: false`` and a manual-only job miss nothing: their
  watermark just moves on. Nor does a fire inside any pause, however short and whenever the
  ledger looks: the job's pause history (its ``pause`` / ``resume`` audit entries) is part of
  what the ledger reads.

A missed fire is recovered by running it as that fire: ``jobplane backfill JOB --from F --to F``
(or the portal's button), whose fire lease starts it once, however often it is asked.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable, Sequence


from jobplane.contract import datamodel as dm
from jobplane.contract import execution_input, names
from jobplane.contract.blackouts import blackout_of, outside
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.notifications import NotificationMessage, Outcome, event_of, publish
from jobplane.contract.statuses import Event, ExecutionStatus, Trigger
from jobplane.platform.backfill import Backfills
from jobplane.platform.backfill_model import Mode
from jobplane.contract.clock import iso_millis, parse_iso
from jobplane.platform.control import Invalid
from jobplane.platform.control.runs import Runs
from jobplane.platform.pass_fires import PassFires
from jobplane.contract.attribute_values import item_of
from jobplane.contract.records import CLAIMS_SCHEDULE, FIRED_SCHEDULE, ExecutionRecord, JobState
from jobplane.platform.schedule_health import flexible_window, schedule_problems
from jobplane.platform.run_history import RunHistory
from jobplane.contract.types import Client, JsonObject

log = logging.getLogger(__name__)

#: A fire may start this late and still count as on time (EventBridge delivers within seconds;
#: a busy local engine within a minute); a job's ``missed_after`` overrides it.
GRACE = timedelta(minutes=10)
#: The ledger of a job that has none starts at most this far back (a platform just upgraded does
#: not alert on last month).
LOOK_BACK = timedelta(hours=24)
#: The longest window one job's pass accounts for (a backfill plans at most 1,000 fires; a
#: minutely job's day is 1,440): a longer gap is caught up over the next passes.
CHUNK = timedelta(hours=12)
#: Jobs accounted for at once in a pass on AWS.
WORKERS = 8
#: How many batches of dead letters one pass reads (10 messages each).
DEAD_LETTER_BATCHES = 10
#: A missed fire's record is kept as long as a run's (reconciler.DEFAULT_RETENTION_DAYS).
RETENTION = timedelta(days=400)
NO_START = "no start seen: the schedule is deployed and enabled, yet nothing started this fire"
#: A resume re-enables the schedules just after its audit entry is written: a fire this close
#: after it may not have been started either, and is not missed.
RESUME_SLACK = timedelta(seconds=5)

#: How far back a pass counts fires without reading runs (:meth:`MissedFires._counted`); past
#: it, the runs are read. A job's watermark moves on every REFRESH plus a spread by job of up to
#: another REFRESH: one conditional write a job every 4-8 hours, so a pass every 5 minutes at
#: 5,000 jobs moves ~70 watermarks (~105 while watermarks set at one instant, a first deploy,
#: spread out). Each write is a round trip (on the local AWS ~5-10 ms, the most of a pass's time,
#: bench/missed_fires.py): every 2-4 hours it was ~140-210 a pass (median pass 2.3 s at 5,000
#: jobs), every 30-60 minutes ~560-830 (11-16 s). The count stays right however long the
#: watermark waits; COUNT_SPAN covers the longest wait (2 x REFRESH) plus a pass's window,
#: and is the CHUNK a pass accounts for at most. Counting a longer window costs no more for jobs
#: that share a schedule (each schedule's fires are computed once a pass: platform/pass_fires.py;
#: a minutely schedule's 12 hours are 720 fires, under backfill_model.MAX_FIRES).
COUNT_SPAN = CHUNK
REFRESH = timedelta(hours=4)

Clock = Callable[[], datetime]
#: When the scheduler itself was not running (from, to): ``jobplane dev``'s local scheduler.
Outages = Callable[[], Sequence[tuple[datetime, datetime]]]


def _no_outages() -> Sequence[tuple[datetime, datetime]]:
    return ()


def down_cause(start: datetime, end: datetime) -> str:
    return (f"jobplane dev was not running from {iso_millis(start)} to {iso_millis(end)}: nothing could start "
            "this fire (a scheduler that was down does not replay fires, EventBridge Scheduler neither)")


@dataclass
class _Episode:
    """A run of missed fires in one pass's window: it continues the open episode (``since``
    given) or opens one at ``fires[0]``; ``closed_by``: the fire after them that ran."""
    since: str | None
    fires: list[str] = field(default_factory=list)
    closed_by: str | None = None


def _now() -> datetime:
    return datetime.now(timezone.utc)


#: The job state's attributes the ledger reads (the jobs page reads others: JobState.ATTRIBUTES).
LEDGER_ATTRIBUTES = ("job", dm.ATTR_PAUSED_AT, dm.ATTR_FIRES_CHECKED, dm.ATTR_MISSED_SINCE, dm.ATTR_MISSED_COUNT,
                     dm.ATTR_MISSED_CAUSE, dm.ATTR_MISSED_ALERT, dm.ATTR_FIRES_CLAIMS, FIRED_SCHEDULE, CLAIMS_SCHEDULE)


class MissedFires:
    """``runs``: the control plane's service of actions (a backfill plans over it: ``Backfills``);
    everything else is read from its platform context."""

    def __init__(self, runs: Runs, sns: Client, topic_arn: str, sqs: Client, clock: Clock = _now,
                 grace: timedelta = GRACE, workers: int = WORKERS, outages: Outages = _no_outages,
                 metrics: Callable[[str], None] | None = None):
        self.context = context = runs.context
        # where a missed fire's metric line goes (platform/run_metrics.py): the periodic
        # Lambda's stdout on AWS, `jobplane dev`'s metrics file; None: not written
        self.metrics = metrics
        self.sns = sns
        self.sqs = sqs
        self.topic_arn = topic_arn
        self.clock = clock
        self.grace = grace
        self.workers = workers
        self.outages = outages
        self.backfills = Backfills(runs)
        self.prefix = context.deployment.name_prefix
        self.table = context.deployment.table
        self.ddb = context.ddb
        self._queue_url: str | None = None

    # -- the pass --------------------------------------------------------------------------------
    def check(self, only: set[str] | None = None) -> list[str]:
        """One pass: read the dead letters, then every scheduled job's fires since its watermark
        (``only``: these jobs'); returns the jobs whose missed fires were alerted (an episode
        opened) in this pass."""
        now = self.clock()
        dead = self.dead_letters()
        states = {s.job: s for s in self.context.repo.job_states(LEDGER_ATTRIBUTES)}
        due = [e for e in sorted(self.context.entries.values(), key=lambda e: e.name)
               if e.schedule and (only is None or e.name in only)]
        # when a job's schedules were created matters only until its ledger has a watermark
        new = any(not (states.get(e.name) or JobState(e.name)).fires_checked_until for e in due)
        created = self._schedules_created() if new else {}
        fires = PassFires(now, COUNT_SPAN)  # each distinct schedule's fires, computed once this pass
        # each job's accounting is its own reads and conditional writes (none in the steady
        # state, where the claims are counted): on AWS the jobs whose runs are read run side by
        # side, as that is mostly waiting for DynamoDB; an in-process store (`jobplane dev`)
        # gains nothing from threads (bench/missed_fires.py: 200 jobs 4.2 s with 8, 2.6 s with 1),
        # and with one worker the jobs are taken in this thread: handing 5,000 jobs to a pool of
        # one cost ~0.15 s a pass in futures and thread switches, for nothing
        def one(e: CatalogJob) -> bool:
            return self._job(e, now, states.get(e.name) or JobState(e.name), created, dead, fires)
        if self.workers <= 1:
            done = [one(e) for e in due]
        else:
            with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="jobplane-ledger") as pool:
                done = list(pool.map(one, due))
        return [e.name for e, opened in zip(due, done) if opened]

    def _job(self, entry: CatalogJob, now: datetime, ledger: JobState, created: dict[str, datetime],
             dead: dict[tuple[str, str], str], fires: PassFires) -> bool:
        """Account for one job's fires since its watermark; True: it opened an episode (alerted)."""
        if ledger.missed_alert_pending:
            self._alert(entry, ledger)
        if ledger.missed_since and ledger.fires_checked_until and self._all_run(entry, ledger):
            ledger = dataclasses.replace(ledger, missed_since=None, missed_count=0, missed_cause=None)
        until = now - self._grace(entry)
        first_deploy = created.get(entry.name)
        since = parse_iso(ledger.fires_checked_until) if ledger.fires_checked_until else None
        if since is None:
            if first_deploy is None:
                return False  # not deployed yet: nothing was expected
            since = max(first_deploy, now - LOOK_BACK)
        if since >= until:
            return False
        until = min(until, since + CHUNK)
        if not entry.enabled or ledger.paused:  # nothing is expected while it does not fire
            self._advance(entry, ledger.fires_checked_until, until, None)
            return False
        if self._counted(entry, ledger, since, until, now, fires):
            return False
        return self._account(entry, ledger, since, until, dead, chunked=until < now - self._grace(entry))

    def _grace(self, entry: CatalogJob) -> timedelta:
        return timedelta(seconds=entry.missed_after) if entry.missed_after else self.grace

    def _counted(self, entry: CatalogJob, ledger: JobState, since: datetime, until: datetime, now: datetime,
                 planned: PassFires) -> bool:
        """The steady state, without reading a run: True when the claims counted since the
        watermark prove that every fire up to ``until`` was claimed.

        The claim counts each scheduled fire it takes (``claims_schedule``) and takes them
        strictly in order (a fire older than the newest claimed is a duplicate), so when the
        watermark's count is known (``fires_claims_checked``: every claim then was of a fire up to
        the watermark), ``claims - fires_claims_checked`` fires after the watermark were claimed,
        all of them up to the newest (``fired_schedule``). If that is how many fires the schedule
        has from the watermark to the newest, and that newest is one of them, each was claimed
        (a claim is of a fire the schedule makes; a schedule changed outside jobplane is read in
        the runs' pass, which any difference in the count leads to). A fire after the newest
        and before ``until`` was not claimed (and never will be): the runs are read. The
        watermark moves on only every REFRESH to 2 x REFRESH (one write a job every few hours,
        not per pass), as the count stays right until then."""
        if ledger.fires_claims_checked is None or ledger.missed_since or ledger.fires_checked_until is None:
            return False
        claimed = ledger.claims_schedule - ledger.fires_claims_checked
        newest = parse_iso(ledger.fired_schedule) if ledger.fired_schedule else None
        if claimed < 0 or (claimed and (newest is None or newest <= since)) \
                or (not claimed and newest is not None and newest > since):
            return False
        end = max(until, newest) if claimed and newest else until
        if end - since > COUNT_SPAN:
            return False
        try:
            fires = planned.fires(entry, since + timedelta(milliseconds=1), end, self.context.schedule_anchors(entry))
            fires = outside(entry.windows, fires)  # a blacked-out fire claims nothing (contract/blackouts.py)
        except ValueError:
            return False
        if claimed and newest is not None:  # a count without a newest claim returned above
            upto = [f for f in fires if f <= newest]
            if len(upto) != claimed or not upto or upto[-1] != newest or any(newest < f <= until for f in fires):
                return False
        elif any(f <= until for f in fires):
            return False
        if now - since >= REFRESH + timedelta(seconds=zlib.crc32(entry.name.encode()) % int(REFRESH.total_seconds())):
            self._advance(entry, ledger.fires_checked_until, end, ledger.claims_schedule)
        return True

    def _account(self, entry: CatalogJob, ledger: JobState, since: datetime, until: datetime,
                 dead: dict[tuple[str, str], str], chunked: bool = False) -> bool:
        """Read the runs of the window and record what none covers. The window is read on to the
        newest claimed fire: when every fire to it is covered, the watermark moves to it with
        the claim count (every claim then is of a fire up to it), so the next pass can count
        instead of reading (:meth:`_counted`)."""
        newest = parse_iso(ledger.fired_schedule) if ledger.fired_schedule else None
        extend = not chunked and newest is not None and until < newest <= since + CHUNK
        end = newest if extend and newest else until
        plan = self.backfills.plan_window(entry, since + timedelta(milliseconds=1), end, Mode.ONLY_MISSED,
                                          records_first=True)
        last = execution_input.iso(until)
        missed = [p.at for p in plan if p.covered_by is None and p.at <= last]
        ran = [p.at for p in plan if p.covered_by is not None and p.at <= last]
        later = [p for p in plan if p.at > last]
        newest_iso = execution_input.iso(newest) if newest else ""
        if extend and all(p.covered_by is not None for p in later):
            watermark, claims = end, ledger.claims_schedule  # every fire to the newest claimed is covered
        elif chunked or (newest is not None and newest > until) or any(p.at > newest_iso for p in plan):
            # counting resumes once every fire to the newest claimed is covered, and none after
            # it is due (one could still be claimed late, and counted as if after the watermark)
            watermark, claims = until, None
        else:
            watermark, claims = until, ledger.claims_schedule
        # the deployed schedules, read once, only when a fire is missing: their flexible window
        # (a fire may still start) and what is wrong with them (the cause)
        deployed = self.context.deployed_schedules.of(entry) if missed else {}
        window = flexible_window(deployed)
        if window:  # a window set outside jobplane: a fire may still start until its end
            cut = until - window
            missed = [f for f in missed if f <= execution_input.iso(cut)]
            ran = [f for f in ran if f <= execution_input.iso(cut)]
            watermark, claims = max(since, cut), None
        pauses = self._pauses(entry, since, end, ledger) if missed else []
        missed = [f for f in missed if not _inside(f, pauses)]
        if entry.blackouts:  # a fire inside a blackout window is never MISSED, nor closes an episode
            missed = [f for f in missed if blackout_of(entry.windows, parse_iso(f)) is None]
            ran = [f for f in ran if blackout_of(entry.windows, parse_iso(f)) is None]
        # every fire that ran closes an open episode, also one claimed after ``until`` (the
        # watermark moves on to the newest claimed fire: a fire after it is in the next window)
        if not window:
            ran = sorted(set(ran) | {p.at for p in later if p.covered_by is not None})
        general = NO_START
        if missed:
            problems = schedule_problems(self.context.scheduler, self.prefix, entry, False, deployed)
            general = "; ".join(problems.values()) or NO_START
        outages = list(self.outages()) if missed else []

        def cause(fire: str) -> str:
            at = parse_iso(fire)
            down = next((down_cause(a, b) for a, b in outages if a < at <= b), None)
            return dead.get((entry.name, fire)) or down or general

        new = {f for f in missed if self._record(entry, f, cause(f))}
        opened = False
        for episode in _episodes(ledger.missed_since, missed, ran):
            count = sum(1 for f in episode.fires if f in new)
            if episode.since is None:  # a new episode: its alert, once
                if self._open(entry, episode.fires[0], count, cause(episode.fires[0]), ledger):
                    opened = True
                    self._alert(entry, self.context.repo.job_state(entry.name) or JobState(entry.name))
            elif count:
                self._open(entry, episode.since, count, cause(episode.fires[0]), ledger)
            if episode.closed_by:
                state = self.context.repo.job_state(entry.name) or JobState(entry.name)
                if state.missed_since:
                    self._close(entry, state, episode.closed_by)
                ledger = dataclasses.replace(ledger, missed_since=None, missed_count=0, missed_cause=None)
        self._advance(entry, ledger.fires_checked_until, watermark, claims)
        return opened

    def _all_run(self, entry: CatalogJob, ledger: JobState) -> bool:
        """Close the open episode when every fire of it has run since (a backfill ran them):
        each fire from its first to the watermark that is not inside a pause has a record of a
        run. True: it closed."""
        assert ledger.missed_since and ledger.fires_checked_until
        first, end = parse_iso(ledger.missed_since), parse_iso(ledger.fires_checked_until)
        if end < first:
            return False
        try:
            plan = self.backfills.plan_window(entry, first, end, Mode.ONLY_MISSED, records_first=True)
        except Invalid:  # a window too wide to plan: a fire after it closes the episode instead
            return False
        pauses = self._pauses(entry, first, end, ledger)
        if any(p.covered_by is None and not _inside(p.at, pauses) for p in plan):
            return False
        state = self.context.repo.job_state(entry.name) or JobState(entry.name)
        if state.missed_since != ledger.missed_since:
            return False
        return self._close(entry, state, None)

    def _pauses(self, entry: CatalogJob, start: datetime, end: datetime,
                ledger: JobState) -> list[tuple[str, str]]:
        """The job's pauses that overlap ``start``..``end``: (from, to) as UTC ISO times, from
        its ``pause`` and ``resume`` audit entries (written as the action happens; an action that
        failed has none), newest first read back to the last one before ``start``; a pause
        still on ends at ``end``."""
        kwargs: JsonObject = {
            "TableName": self.table, "IndexName": dm.GSI_BY_KIND, "ScanIndexForward": False,
            "KeyConditionExpression": "gsi2pk = :p AND gsi2sk <= :end",
            "FilterExpression": "#action IN (:pause, :resume)",
            "ExpressionAttributeNames": {"#action": "action"},
            "ExpressionAttributeValues": {":p": {"S": dm.job_audit_partition(entry.name)},
                                          ":end": {"S": iso_millis(end + RESUME_SLACK)},
                                          ":pause": {"S": "pause"}, ":resume": {"S": "resume"}}}
        actions: list[tuple[datetime, str]] = []
        while True:
            page = self.ddb.query(**kwargs)
            for item in page.get("Items", []):
                actions.append((parse_iso(item["at"]["S"]), item["action"]["S"]))
            if (actions and actions[-1][0] < start) or not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        if ledger.paused_at and not any(a == "pause" for _, a in actions):  # paused before audits were kept
            actions.append((parse_iso(ledger.paused_at), "pause"))
        windows: list[tuple[str, str]] = []
        open_from: datetime | None = None
        for at, action in sorted(actions):
            if action == "pause":
                open_from = at if open_from is None else open_from
            elif open_from is not None:
                windows.append((execution_input.iso(open_from), iso_millis(at + RESUME_SLACK)))
                open_from = None
        if open_from is not None:
            windows.append((execution_input.iso(open_from), iso_millis(max(end, self.clock()) + RESUME_SLACK)))
        return windows

    # -- dead letters ----------------------------------------------------------------------------
    def queue_url(self) -> str | None:
        """The scheduler dead-letter queue (the base module's ``<prefix>-scheduler-dlq``)."""
        if self._queue_url is None:
            try:
                self._queue_url = self.sqs.get_queue_url(QueueName=f"{self.prefix}-scheduler-dlq")["QueueUrl"]
            except self.sqs.exceptions.QueueDoesNotExist:
                log.warning("no scheduler dead-letter queue %s-scheduler-dlq: failed starts cannot be told apart",
                            self.prefix)
        return self._queue_url

    def dead_letters(self) -> dict[tuple[str, str], str]:
        """Read the scheduler's dead letters: each is a fire EventBridge Scheduler could not start
        after its retries. Recorded as that fire's MISSED record (with AWS's error code and
        message), then deleted; one that names no job of the catalog is left for a person."""
        url = self.queue_url()
        if url is None:
            return {}
        jobs: dict[str, CatalogJob] = {}  # every deployed schedule's job, made only when a letter came
        found: dict[tuple[str, str], str] = {}
        for _ in range(DEAD_LETTER_BATCHES):
            batch = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                             VisibilityTimeout=60, WaitTimeSeconds=0).get("Messages", [])
            if not batch:
                break
            # (a calendar job deploys dozens of schedules: at 1,000 of them ~57,000 names, each pass)
            jobs = jobs or {names.schedule_name(self.prefix, e.name, i): e for e in self.context.entries.values()
                            for i in range(len(e.schedule))}
            for message in batch:
                attrs = {k: v.get("StringValue", "") for k, v in (message.get("MessageAttributes") or {}).items()}
                schedule = attrs.get("SCHEDULE_ARN", "").rsplit("/", 1)[-1]
                entry = jobs.get(schedule)
                try:
                    fire = _fire_key(json.loads(message.get("Body") or "{}").get("scheduled_time"))
                except (json.JSONDecodeError, AttributeError):
                    fire = None
                if entry is None or fire is None:
                    log.warning("scheduler dead letter for %s (%s) names no job's fire; left in the queue",
                                schedule or "an unknown schedule", attrs.get("ERROR_CODE"))
                    continue
                cause = (f"EventBridge Scheduler could not start it: {attrs.get('ERROR_CODE', 'unknown error')}: "
                         f"{attrs.get('ERROR_MESSAGE', '')}".rstrip(": "))
                self._record(entry, fire, cause)
                found[(entry.name, fire)] = cause
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return found

    # -- the table -------------------------------------------------------------------------------
    def _schedules_created(self) -> dict[str, datetime]:
        """When each job's schedules were first created (the earliest of them), from ListSchedules."""
        by_schedule = {}
        kwargs: JsonObject = {"GroupName": self.prefix}
        while True:
            page = self.context.scheduler.list_schedules(**kwargs)
            for s in page.get("Schedules", []):
                if s.get("CreationDate"):
                    by_schedule[s["Name"]] = s["CreationDate"].astimezone(timezone.utc)
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
        out = {}
        for e in self.context.entries.values():
            times = [by_schedule[n] for i in range(len(e.schedule))
                     if (n := names.schedule_name(self.prefix, e.name, i)) in by_schedule]
            if times:
                out[e.name] = min(times)
        return out

    def _state_update(self, entry: CatalogJob, values: JsonObject, *, set_: str = "", add: str = "",
                      remove: str = "", condition: str | None = None, in_jobs: bool = False) -> bool:
        """One conditional update of the job's state item; every write also keeps it in the JOBS
        partition (with its job and team), as the other writers of a state do, unless the
        condition itself proves the item is there already (``in_jobs``)."""
        keep = "" if in_jobs else ("team = if_not_exists(team, :team), job = if_not_exists(job, :job), "
                                   "gsi1pk = :jobs, gsi1sk = :job")
        sets = ", ".join(x for x in (set_, keep) if x)
        expression = (f"SET {sets}" if sets else "") + (f" ADD {add}" if add else "") + \
            (f" REMOVE {remove}" if remove else "")
        kwargs: JsonObject = {
            "TableName": self.table, "Key": {"pk": {"S": dm.job_partition(entry.name)}, "sk": {"S": dm.STATE_SK}},
            "UpdateExpression": expression.strip(),
            "ExpressionAttributeValues": item_of(values if in_jobs else values | {
                ":team": entry.team, ":job": entry.name, ":jobs": dm.JOBS_PARTITION})}
        if not kwargs["ExpressionAttributeValues"]:
            del kwargs["ExpressionAttributeValues"]
        if condition:
            kwargs["ConditionExpression"] = condition
        try:
            self.ddb.update_item(**kwargs)
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def _advance(self, entry: CatalogJob, old: str | None, until: datetime, claims: int | None) -> bool:
        """Move the watermark (with the claim count of the fires up to it, or without one: not
        known), unless another checker moved it first: the write's condition is the watermark
        this pass read, so of two passes that race (two Lambda invocations overlapping, a
        manual check beside the periodic one) one moves it and the other changes nothing. A
        watermark it read came from the JOBS partition (``job_states``), the condition holds only
        while the item still has it, and no writer removes a state's partition keys: that write
        leaves them alone (four of the update's six actions; parsing them was most of a local
        write's cost)."""
        condition = f"attribute_not_exists({dm.ATTR_FIRES_CHECKED})" if old is None else f"{dm.ATTR_FIRES_CHECKED} = :old"
        values: JsonObject = {":until": iso_millis(until)} | ({":old": old} if old else {})
        if claims is None:
            return self._state_update(entry, values, set_=f"{dm.ATTR_FIRES_CHECKED} = :until",
                                      remove=dm.ATTR_FIRES_CLAIMS, condition=condition, in_jobs=old is not None)
        return self._state_update(entry, values | {":claims": claims},
                                  set_=f"{dm.ATTR_FIRES_CHECKED} = :until, {dm.ATTR_FIRES_CLAIMS} = :claims",
                                  condition=condition, in_jobs=old is not None)

    def _record(self, entry: CatalogJob, fire: str, cause: str) -> bool:
        """The MISSED record of one fire (once: a second write of it changes nothing)."""
        now = self.clock()
        name = dm.missed_execution(entry.name, fire)
        record = ExecutionRecord(
            execution=name, job=entry.name, team=entry.team, status=ExecutionStatus.MISSED.value,
            scheduled_time=fire, started_at=iso_millis(parse_iso(fire)), finished_at=iso_millis(now), error=cause,
            # the input the fire would have had, for the pages; no `trigger` attribute, so a
            # backfill still sees the fire as uncovered and can run it
            given={"trigger": Trigger.SCHEDULE.value, "scheduled_time": fire,
                   "requested_by": "EventBridge Scheduler", "params": entry.params},
            transitions=0, expires_at=int((now + RETENTION).timestamp()))
        try:
            self.ddb.put_item(TableName=self.table, Item=record.to_item(), ConditionExpression="attribute_not_exists(pk)")
            RunHistory(self.ddb, self.table).note(record)  # the job's marks show the missed fire
            RunHistory(self.ddb, self.table).note_day(record)  # and the day's timeline
            self._metric(entry, iso_millis(now))
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def _metric(self, entry: CatalogJob, at: str) -> None:
        """A recorded missed fire's metric line (``RunMissed``): best effort, after the record."""
        from jobplane.platform import run_metrics

        run_metrics.write_best_effort(self.metrics, lambda: run_metrics.missed_line(entry.team, entry.name, at),
                                      f"the missed fire of {entry.name}")

    def _open(self, entry: CatalogJob, first: str, new: int, cause: str, ledger: JobState) -> bool:
        """Open the job's episode of missed fires (True: this pass opened it, so it alerts), or
        add to the open one's count."""
        if ledger.missed_since is None and self._state_update(
                entry, {":first": first, ":n": new, ":cause": cause, ":yes": True},
                set_=f"{dm.ATTR_MISSED_SINCE} = :first, {dm.ATTR_MISSED_COUNT} = :n, {dm.ATTR_MISSED_CAUSE} = :cause, "
                     f"{dm.ATTR_MISSED_ALERT} = :yes",
                condition=f"attribute_not_exists({dm.ATTR_MISSED_SINCE})"):
            return True
        if new:
            self._state_update(entry, {":n": new, ":cause": cause}, add=f"{dm.ATTR_MISSED_COUNT} :n",
                               set_=f"{dm.ATTR_MISSED_CAUSE} = :cause")
        return False

    def _close(self, entry: CatalogJob, ledger: JobState, resumed: str | None) -> bool:
        """Close the open episode (a conditional write: one checker closes it, one note):
        ``resumed``, the fire after it that ran, or None: every fire of it was run since."""
        assert ledger.missed_since
        count = ledger.missed_count
        missed = f"{count} missed fire{'s' if count != 1 else ''} since {ledger.missed_since}"
        if self._state_update(entry, {":since": ledger.missed_since},
                              remove=f"{dm.ATTR_MISSED_SINCE}, {dm.ATTR_MISSED_COUNT}, {dm.ATTR_MISSED_CAUSE}, "
                                     f"{dm.ATTR_MISSED_ALERT}",
                              condition=f"{dm.ATTR_MISSED_SINCE} = :since"):
            # the note's execution is the episode's first MISSED record (one that exists: the
            # fire that resumed has no MISSED record, and its link was a 404, issue 65 item 4);
            # its outcome names the episode (since, resumed) for the link to its missed fires
            self._publish(entry, ledger.missed_since, status="RECOVERED",
                          error=f"fires resumed at {resumed} after {missed}" if resumed else
                          f"every one of the {missed} has been run since (backfilled)",
                          episode={"since": ledger.missed_since, "until": resumed or iso_millis(self.clock())})
            return True
        return False

    # -- alerts ----------------------------------------------------------------------------------
    def _alert(self, entry: CatalogJob, ledger: JobState) -> None:
        """Publish the open episode's alert, then clear its outbox flag (a failure between the two
        publishes it again on the next pass: at least once, never lost)."""
        if not ledger.missed_since:
            return
        count = ledger.missed_count
        self._publish(entry, ledger.missed_since, status=ExecutionStatus.MISSED.value,
                      error=f"{count} scheduled fire{'s' if count != 1 else ''} missed since {ledger.missed_since}: "
                            f"{ledger.missed_cause or NO_START}. Run a missed fire with `jobplane backfill {entry.name} "
                            f"--from {ledger.missed_since} --to {ledger.missed_since}` (once per fire).")
        self._state_update(entry, {}, remove=dm.ATTR_MISSED_ALERT)

    def _publish(self, entry: CatalogJob, fire: str, status: str, error: str,
                 episode: dict[str, str] | None = None) -> None:
        publish(self.sns, self.topic_arn, NotificationMessage(
            version=1, event=Event.MISSED.value, job=entry.name, team=entry.team,
            execution=dm.missed_execution(entry.name, fire), execution_arn="", trigger=Trigger.SCHEDULE.value,
            scheduled_time=fire, requested_by="EventBridge Scheduler", finished_at=iso_millis(self.clock()),
            outcome=Outcome.model_validate({"status": status, **(episode or {})}), channels=entry.notify.channels,
            events=[event_of(getattr(e, "value", e)) for e in entry.notify.events] or None,
            runbook=entry.runbook.model_dump() if entry.runbook else None, error=error))
        # the alert feed shows it (the console or Slack): a warning here would say it twice
        log.debug("%s: %s", entry.name, error)


def _inside(fire: str, pauses: list[tuple[str, str]]) -> bool:
    return any(a <= fire <= b for a, b in pauses)


def _episodes(open_since: str | None, missed: list[str], ran: list[str]) -> list[_Episode]:
    """The window's missed fires in episodes, in order: one that runs after missed fires (or
    after the open episode, ``open_since``) closes the episode they make."""
    out: list[_Episode] = []
    current = _Episode(open_since) if open_since else None
    for at, did_run in sorted([(f, False) for f in missed] + [(f, True) for f in ran]):
        if did_run:
            if current is not None:
                current.closed_by = at
                out.append(current)
                current = None
        else:
            if current is None:
                current = _Episode(None)
            current.fires.append(at)
    if current is not None and (current.fires or current.since is None):
        out.append(current)
    return out


def _fire_key(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return execution_input.iso(parse_iso(value))
    except ValueError:
        return None
