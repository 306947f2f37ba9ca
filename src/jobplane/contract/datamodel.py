"""The DynamoDB single-table data model: key shapes and attribute names.

The compiled state machines write these items directly (no Lambda in the hot path), and the
platform repository, reconciler and portal read them. Key design (docs/data-model.md) serves the
portal's queries without scans:

====================  =====================  ==========  ================================  ==============
item                  pk                     sk          gsi1 (pk / sk)                    gsi2 (pk / sk)
====================  =====================  ==========  ================================  ==============
job state             ``JOB#<job>``          ``STATE``   ``JOBS`` / ``<job>``              ``PAUSED`` / ``<job>`` (paused)
execution             ``EXEC#<execution>``   ``EXEC``    ``JOB#<job>`` / ``<started_at>``  ``FAILURES`` or ``SKIPS`` / ``<finished_at>``
audit entry           ``AUDIT#<id>``         ``AUDIT``   ``AUDIT`` / ``<at>``              ``JOB#<job>#AUDIT`` / ``<at>``
slow-run marker       ``SLOW#<execution>``   ``SLOW``    -                                 -
backfill              ``BACKFILL#<id>``      ``BACKFILL`` ``BACKFILLS`` / ``<created>#<id>`` ``JOB#<job>#BACKFILL`` / ``<created>``
fire lease            ``FIRE#<job>#<time>``  ``FIRE``    ``FIRES#<job>`` / ``<time>``      -
====================  =====================  ==========  ================================  ==============

A job state a run claimed is also in gsi3, the status the jobs page shows: ``STATUS#RUNNING``
/ ``<job>`` from its claim, ``STATUS#<last status>`` / ``<job>`` once the run ended (sparse: a
job no run ever claimed is in none of its partitions). A paused job's state is in gsi2:
``PAUSED`` / ``<job>``, from its pause to its resume.

* jobs with their last status: Query gsi1 ``JOBS``; the jobs whose last run ended with one
  status: Query gsi3 ``STATUS#<status>``, written by the same update that sets its
  ``last_status`` (contract/items.py ``release_job``); the running jobs: Query gsi3
  ``STATUS#RUNNING``, written by the claim (compiler/asl.py ``claim_update``); the paused jobs:
  Query gsi2 ``PAUSED``; the jobs never run: the catalog's others (:func:`status_filed`);
* a job's executions newest first: Query gsi1 ``JOB#<job>`` descending;
* recent failures (or skips) across jobs: Query gsi2 ``FAILURES`` (``SKIPS``) descending;
* one execution: GetItem ``EXEC#<execution>``;
* backfills being driven: Query gsi1 ``BACKFILLS`` (only while RUNNING: a backfill leaves the
  partition when it ends, so the drivers' poll stays small); a job's backfills: gsi2;
* which past fires a backfill already started: Query gsi1 ``FIRES#<job>`` between two times.
"""

from __future__ import annotations

GSI_BY_OWNER = "gsi1"
GSI_BY_KIND = "gsi2"
#: The jobs by their last run's status (sparse): the jobs page's status filter reads the jobs of
#: one status, not every job's state (issue 66 item 3: ~200 ms at 5,000 jobs, bench/portal.py).
GSI_BY_STATUS = "gsi3"
ATTR_STATUS_PK, ATTR_STATUS_SK = "gsi3pk", "gsi3sk"
STATUS_PREFIX = "STATUS#"
#: gsi3 partition of the jobs a run holds the claim of (``running`` not empty).
RUNNING_STATUS = "RUNNING"
#: gsi2 partition of the paused jobs' states (Repository.set_paused / clear_paused).
PAUSED_PARTITION = "PAUSED"

JOB_PREFIX = "JOB#"
EXEC_PREFIX = "EXEC#"
AUDIT_PREFIX = "AUDIT#"
SLOW_PREFIX = "SLOW#"
JOBS_PARTITION = "JOBS"
AUDIT_PARTITION = "AUDIT"
FAILURES_PARTITION = "FAILURES"
SKIPS_PARTITION = "SKIPS"
STATE_SK = "STATE"
EXEC_SK = "EXEC"
AUDIT_SK = "AUDIT"
SLOW_SK = "SLOW"
BACKFILL_PREFIX = "BACKFILL#"
BACKFILL_SK = "BACKFILL"
BACKFILLS_PARTITION = "BACKFILLS"
FIRE_PREFIX = "FIRE#"
FIRE_SK = "FIRE"

# Job state attributes.
ATTR_RUNNING = "running"  # string set of execution names currently holding a claim
ATTR_HOLDER = "holder"  # execution ARN of the latest exclusive claim (stale-claim check)
ATTR_BLOCKED_BY = "blocked_by"  # execution whose failure blocks SKIP_IF_FAILED policies
# block_<trigger>: set to the failed execution; the claim of a SKIP_IF_FAILED job requires
# block_<its trigger> to be absent, so only block_schedule and block_upstream exist (manual runs,
# re-runs and backfills are never blocked).
ATTR_BLOCK_PREFIX = "block_"
ATTR_BLOCK_SCHEDULE = "block_schedule"
ATTR_BLOCK_UPSTREAM = "block_upstream"
#: Every block_<trigger> a failure sets (statuses.AUTOMATIC_TRIGGERS).
ATTR_BLOCKS = (ATTR_BLOCK_SCHEDULE, ATTR_BLOCK_UPSTREAM)
# Who acknowledged that failure: scheduled runs go ahead (block_schedule is removed) while
# blocked_by stays, so the next success still announces RECOVERED and clears both.
ATTR_ACKNOWLEDGED_BY = "acknowledged_by"
ATTR_LAST_STATUS = "last_status"
ATTR_LAST_EXECUTION = "last_execution"
ATTR_LAST_FINISHED_AT = "last_finished_at"
ATTR_LAST_STARTED_AT = "last_started_at"  # with last_finished_at: how long the last run took
ATTR_FIRE_PREFIX = "fire_"  # fire_schedule: duplicate-detection key of the newest scheduled fire claimed
ATTR_FIRED_PREFIX = "fired_"  # fired_<trigger>: the newest claimed scheduled_time per trigger
ATTR_CLAIMS_PREFIX = "claims_"  # claims_<trigger>: how many claims of that trigger ever succeeded (a count)

# The fire ledger (platform/missed.py): every scheduled fire up to this time is accounted for
# (ran, skipped or recorded MISSED); an open episode of missed fires (the first missed fire, how
# many, why) and whether its alert is still to be published (an outbox, as alert_pending).
ATTR_FIRES_CHECKED = "fires_checked_until"
ATTR_FIRES_CLAIMS = "fires_claims_checked"  # claims_schedule counted for the fires up to fires_checked_until
ATTR_MISSED_SINCE = "missed_since"
ATTR_MISSED_COUNT = "missed_count"
ATTR_MISSED_CAUSE = "missed_cause"
ATTR_MISSED_ALERT = "missed_alert_pending"
#: gsi2 partition of MISSED records across jobs, newest first.
MISSED_PARTITION = "MISSED"

ATTR_PAUSED_BY = "paused_by"
ATTR_PAUSED_REASON = "paused_reason"
ATTR_PAUSED_AT = "paused_at"
# A snooze of the job's alerts (platform/snooze.py): until when, who, why, how many alerts it held
# of each kind and the first of them by name (a few: the item is read by every refused claim,
# whose state data Step Functions caps at 256 KiB), and when a checker took its summary on.
# meanwhile ("<EVENT> <execution>", appended by the notifier) for the summary at its end.
ATTR_REMINDED = "reminded"  # the failed run whose standing failure was announced again (platform/renotify.py)
ATTR_SNOOZED_UNTIL = "snoozed_until"
ATTR_SNOOZED_BY = "snoozed_by"
ATTR_SNOOZE_REASON = "snooze_reason"
ATTR_SNOOZE_HELD = "snooze_held"  # string set: "<EVENT>[ recovered] <execution>", at most SNOOZE_NAMED
ATTR_SNOOZE_COUNTS = "snooze_counts"  # map: "<EVENT>[ recovered]" -> how many held
ATTR_SNOOZE_FINISHING = "snooze_finishing"  # when a checker claimed the summary (it then removes the snooze)
#: How many held alerts a snooze keeps by name (the rest are counted).
SNOOZE_NAMED = 20
#: pause_<trigger>: set with a pause for the triggers the claim then refuses (schedule): a pause
#: holds even when something enables the job's schedule again (a Terraform apply of its root).
ATTR_PAUSE_PREFIX = "pause_"

# Execution attributes.
ATTR_EXECUTION = "execution"
ATTR_EXECUTION_ARN = "execution_arn"
ATTR_STEPS = "steps"  # JSON string: {step_key: {a1: result, a2: result, ...}}
ATTR_EXPIRES_AT = "expires_at"  # TTL (epoch seconds), set by the reconciler once final
# Set with a record the reconciler writes, removed once its alert is published: a failure
# between the two is retried from the record, so the alert is never lost (an outbox).
ATTR_ALERT_PENDING = "alert_pending"
# On an upstream run's record: the downstream jobs its end started (string set; also the mark that
# makes a status event delivered twice start a downstream job once) and their executions.
ATTR_AFTER_JOBS = "after_jobs"
#: An ABORTED record the platform stopped on purpose: why (statuses.AbortReason; REPLACED).
ATTR_ABORT_REASON = "abort_reason"
ATTR_AFTER_RUNS = "after_runs"


def feed_of(status: str) -> str | None:
    """The gsi2 feed an execution record of ``status`` joins: failures, skips, missed fires;
    a success joins none."""
    return {"SUCCEEDED": None, "SKIPPED": SKIPS_PARTITION, "MISSED": MISSED_PARTITION,
            "BLACKED_OUT": SKIPS_PARTITION,
            "REJECTED": None}.get(status, FAILURES_PARTITION)


def status_partition(status: str) -> str:
    """gsi3 partition of the jobs whose last run ended ``status``."""
    return f"{STATUS_PREFIX}{status}"


def status_filed(running: bool, last_status: str | None) -> str | None:
    """The gsi3 partition a job state belongs in: ``STATUS#RUNNING`` while a run holds its claim,
    else its last run's status; None (no partition) for a job that neither runs nor ever ended a
    run. The claim and the release write it as they change ``running`` and ``last_status``; a
    write that cannot know (a run ending while another still holds the claim: the policies that
    let runs overlap, or a REPLACE run replaced) is followed by Repository.refile_status."""
    if running:
        return status_partition(RUNNING_STATUS)
    return status_partition(last_status) if last_status else None


def job_partition(job: str) -> str:
    """A job's state item pk, and the gsi1 partition of its executions."""
    return f"{JOB_PREFIX}{job}"


def execution_pk(execution: str) -> str:
    return f"{EXEC_PREFIX}{execution}"


def audit_pk(entry_id: str) -> str:
    return f"{AUDIT_PREFIX}{entry_id}"


def job_audit_partition(job: str) -> str:
    """gsi2 partition of a job's audit entries."""
    return f"{JOB_PREFIX}{job}#AUDIT"


def slow_pk(execution: str) -> str:
    """The marker item that says a slow run was announced (once)."""
    return f"{SLOW_PREFIX}{execution}"


def backfill_pk(backfill_id: str) -> str:
    return f"{BACKFILL_PREFIX}{backfill_id}"


def job_backfill_partition(job: str) -> str:
    """gsi2 partition of a job's backfills."""
    return f"{JOB_PREFIX}{job}#BACKFILL"


def fire_pk(job: str, fire: str) -> str:
    """The lease of one past fire of a job (``fire``: its UTC time, execution_input.iso)."""
    return f"{FIRE_PREFIX}{job}#{fire}"


def job_fires_partition(job: str) -> str:
    """gsi1 partition of a job's fire leases, sorted by fire time."""
    return f"FIRES#{job}"


def missed_execution(job: str, fire: str) -> str:
    """The record name of a missed fire (``fire``: its UTC time, execution_input.iso): one per
    job and fire, so recording it twice is one record."""
    return f"missed-{job}-{fire.replace('-', '').replace(':', '')}"
