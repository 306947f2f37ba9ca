"""Execution statuses, execution policies and notification events.

These names are written into DynamoDB by the compiled state machines and read back by the
portal and the reconciler, so they are a wire format: add, never rename.
"""

from __future__ import annotations

from enum import Enum


class ExecutionStatus(str, Enum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    ABORTED = "ABORTED"
    SKIPPED = "SKIPPED"
    #: Not an execution: a scheduled fire that neither ran nor was skipped (platform/missed.py)
    MISSED = "MISSED"
    #: A scheduled fire inside one of the job's blackout windows (contract/blackouts.py): recorded,
    #: not run, not alerted; never MISSED, its deadline suspended. Its record names the window.
    BLACKED_OUT = "BLACKED_OUT"
    #: A run whose approval step (jp.approval) was rejected, or timed out to reject: recorded,
    #: no failure alert, no failure block (contract/approvals.py).
    REJECTED = "REJECTED"


#: Finished statuses that block a SKIP_IF_FAILED job until a run succeeds or someone acknowledges.
FAILED_STATUSES = frozenset({ExecutionStatus.FAILED, ExecutionStatus.TIMED_OUT, ExecutionStatus.ABORTED})


class Policy(str, Enum):
    """What a run does while another run of the job holds its claim, or after a failure
    (docs/dsl.md, Policies; each policy's behaviour is its class in contract/policies.py)."""

    ALWAYS_RUN = "ALWAYS_RUN"
    SKIP_IF_RUNNING = "SKIP_IF_RUNNING"
    SKIP_IF_FAILED = "SKIP_IF_FAILED"
    SKIP_IF_RUNNING_OR_FAILED = "SKIP_IF_RUNNING_OR_FAILED"
    REPLACE = "REPLACE"  # a new fire stops the running execution and runs (Kubernetes' Replace)


DEFAULT_POLICY = Policy.SKIP_IF_RUNNING


class SkipReason(str, Enum):
    """Why an execution was recorded as SKIPPED instead of running."""

    DUPLICATE = "DUPLICATE"  # the same scheduled time was delivered again (at-least-once delivery)
    RUNNING = "RUNNING"  # policy skips while a run is in progress
    LAST_FAILED = "LAST_FAILED"  # policy skips while the last finished run failed
    CLAIM_CONFLICT = "CLAIM_CONFLICT"  # lost the race for the claim to a concurrent start
    PAUSED = "PAUSED"  # a scheduled fire of a paused job (its schedule was enabled again outside a resume)


class AbortReason(str, Enum):
    """Why the platform itself stopped a run (recorded ABORTED, with no failure alert)."""

    REPLACED = "REPLACED"  # a newer run of a REPLACE job stopped it (contract/policies.py)


class Event(str, Enum):
    """Notification events a job can subscribe a channel to."""

    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    ABORTED = "ABORTED"
    SKIPPED = "SKIPPED"
    RECOVERED = "RECOVERED"
    SLOW = "SLOW"
    #: A scheduled fire neither ran nor was skipped (platform/missed.py); sent to every job
    #: subscribed to FAILED, since a job that silently stopped is a failure nobody saw.
    MISSED = "MISSED"
    #: A scheduled fire whose run has not SUCCEEDED by the job's deadline (platform/deadlines.py;
    #: ``outcome.status`` DEADLINE, then RECOVERED when it lands); sent wherever failures go.
    DEADLINE = "DEADLINE"
    #: A running step whose progress has not moved for its ``stall_after`` (platform/stalls.py;
    #: ``outcome.status`` RUNNING, ``outcome.step`` the step), once per stall; sent wherever
    #: failures go.
    STALLED = "STALLED"
    #: A run waits for a person's decision (jp.approval, platform/approvals.py): the request, then
    #: a reminder each ``remind`` while nobody decided (``reminder`` says which); ``outcome.status``
    #: WAITING_APPROVAL. Sent to the approval's channel (else the job's) whatever the job's events.
    APPROVAL = "APPROVAL"
    #: A step's expectation with on_fail 'warn' did not hold (compiler/expect_states.py;
    #: ``outcome.status`` RUNNING, ``outcome.step`` the step, ``outcome.checks`` what each found);
    #: the run goes on. Sent wherever failures go.
    EXPECTATION = "EXPECTATION"


DEFAULT_EVENTS = (Event.FAILED, Event.TIMED_OUT, Event.ABORTED)


class Trigger(str, Enum):
    SCHEDULE = "schedule"
    MANUAL = "manual"
    RERUN = "rerun"
    BACKFILL = "backfill"  # a past fire started by an operator's backfill (platform/backfill.py)
    UPSTREAM = "upstream"  # the end of another job's run (the job's ``after``; contract/upstream.py)


#: Triggers whose runs are never compared with scheduled fires for duplicate delivery (each has
#: its own guard: an execution name, a backfill's fire lease, the upstream run's mark).
UNCOMPARED_TRIGGERS = tuple(t for t in Trigger if t != Trigger.SCHEDULE)
#: Triggers nobody chose at the time: a SKIP_IF_FAILED job's failure blocks them (block_<trigger>)
#: until a success or an acknowledgement; manual runs, re-runs and backfills are how people recover.
AUTOMATIC_TRIGGERS = (Trigger.SCHEDULE, Trigger.UPSTREAM)

