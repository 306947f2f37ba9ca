"""The names of a compiled state machine's states, and the one classifier that reads them back.

A state's name is all a Step Functions history says about it, so the runtime learns from the
name which step an event belongs to: the timeline lists step attempts, the reconciler finds the
step a stopped run was in, the portal marks the failed step. The compiler builds every name with
the constructors below and the runtime reads every name with :func:`classify`; nobody else
formats or parses them (the two regexes that once did disagreed about ``<step>: failed``).

A step's name matches :data:`STEP_NAME_RE` (lower case, digits, ``-``, ``_``), so it never
collides with a platform state (capitalised) and never contains the ``" #"`` and ``": "``
separators the suffixes use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from jobplane.contract.statuses import SkipReason

#: What a step may be called (the DSL validates it; the classifier relies on it).
STEP_NAME_RE = re.compile(r"^[a-z][a-z0-9]*([-_][a-z0-9]+)*$")
STEP_NAME_MAX = 40


class Role(str, Enum):
    """What a state does in the compiled machine."""

    START = "start"  # checks an input the claim did not take; fills in what a console start left out
    CLAIM = "claim"  # the conditional write that applies the policy and claims the job
    ROUTE = "route"  # honours resume_from
    UNKNOWN_RESUME = "unknown resume_from"  # records a re-run from a step that does not exist
    STEP = "step"  # a step's own state: its ecs:runTask.sync Task (entered once per attempt), or a parallel group
    CHECK = "check"  # after an attempt (or a group): did it succeed, retry or fail?
    RETRY = "retry"  # counts the next attempt and picks its back-off
    WAIT = "wait"  # the back-off before the next attempt
    INFRA_RETRY = "infra retry"  # counts a retry of the same attempt after an infrastructure failure
    INFRA_WAIT = "infra wait"  # the back-off before that retry
    STEP_FAILED = "failed"  # records the job's failure at this step (a Pass inside a branch)
    STEP_TIMED_OUT = "timed out"  # the same, for a step's own timeout (Finish (timed out) for the job)
    BRANCH_DONE = "done"  # a parallel branch's success
    FINISH = "finish"  # records success
    NOTIFY = "notify"  # publishes to SNS
    FAIL = "fail"  # ends a failed run
    SKIP = "skip"  # finds out why a claim was refused
    SKIP_RECORD = "skip record"  # records a skip (reason in StateName.reason)
    TAKE_OVER = "take over"  # replaces a stale claim
    REPLACE = "replace"  # a REPLACE job's fire stops the running execution that holds the claim
    UPSTREAM = "upstream"  # a run started by another job's end: reads and marks that run (contract/upstream.py)
    POOL = "pool"  # an attempt of a pooled step takes its ticket (contract/pools.py): WAITING from here
    POOL_CLAIM = "pool claim"  # tries to hold the attempt's slots (a transaction); its check after an error
    POOL_BACKOFF = "pool backoff"  # no room: picks how long to sleep before the next try
    POOL_WAIT = "pool wait"  # sleeps (not a back-off of the step's own: attempts are not counted by it)
    POOL_RELEASE = "pool release"  # gives the attempt's slots back, whatever the attempt ended with
    POOL_WAITING = "pool waiting"  # a map item found its pool full: its item record says WAITING
    POOL_RUNNING = "pool running"  # a map item that waited holds its slots: its item record says RUNNING
    ITEMS_KEY = "items key"  # a map draws where its list is written and read (contract/map_items.py)
    ITEM_FAILED = "item failed"  # a map item's end when it failed (the Map counts it against its tolerance)
    EXPECT = "expect"  # a step's expectations: read and judged, warned of, failed (compiler/expect_states.py)
    BLACKOUT = "blackout"  # a scheduled fire inside a blackout window: decided, recorded (contract/blackouts.py)
    APPROVAL_TIMEOUT = "approval timeout"  # an approval nobody decided in time: marked, then its on_timeout
    APPROVAL_REJECTED = "rejected"  # an approval rejected (or timed out to reject): the run recorded REJECTED


@dataclass(frozen=True)
class StateName:
    """A classified state name: its role and, for the step states, the step and attempt."""

    name: str
    role: Role
    step: str | None = None
    #: Role.STEP / CHECK / WAIT / INFRA_*: the attempt a state name carried. Machines compiled
    #: before the attempt loop (issue 19) had one state per attempt (``<step> #N``); a loop's
    #: states are all attempt 1 by name, and the timeline counts attempts from the history.
    attempt: int | None = None
    reason: SkipReason | None = None  # Role.SKIP_RECORD

    @property
    def is_platform(self) -> bool:
        """True for the states the platform adds around the steps (no step of their own)."""
        return self.step is None


# -- constructors (the compiler's only way to name a state) ---------------------------------------
START = "Start"
START_DEFAULTS = "Start: defaults"
START_MERGE = "Start: merge"
INVALID_INPUT = "Start: invalid input"
CLAIM = "Claim"
CLAIM_RERUN = "Claim (re-run)"
# The first state (a JSONata Task): the claim of every input it takes as given or with a console
# start's defaults; any other input goes on to Start, whose valid inputs reach Claim or Claim (re-run)
CLAIM_FIRST = "Claim (first)"
ROUTE = "Route"
UNKNOWN_RESUME_FROM = "Unknown resume_from"
FINISH = "Finish"
FINISH_RECOVERED = "Finish (recovered)"
FINISH_CANCELLED = "Finish (cancelled)"  # a RECOVERED job's Finish was cancelled: by its no-block condition?
FINISH_AGAIN = "Finish (again)"  # ... no: a transient cancellation; the same conditional Finish, retried
FINISH_TIMED_OUT = "Finish (timed out)"  # records a step's own timeout (the step: the $failed_step variable)
NOTIFY_RECOVERED = "Notify recovered"
NOTIFY_FAILURE = "Notify failure"
NOTIFY_SKIPPED = "Notify skipped"
NOTIFY_SKIPPED_LAST_FAILED = "Notify skipped (last failed)"
FAIL = "Fail"
SKIP_LOAD_STATE = "Skip: load state"
SKIP_WHY = "Skip: why"
SKIP_CHECK_HOLDER = "Skip: check holder"
SKIP_HOLDER_RUNNING = "Skip: holder running?"  # no longer compiled; read in histories before 0.6
TAKE_OVER = "Take over stale claim"
REPLACE_STOP_HOLDER = "Replace: stop holder"  # REPLACE: stop the running holder, then take over its claim
UPSTREAM_LOAD = "Upstream: load"
UPSTREAM_CHECK = "Upstream: check"
UPSTREAM_ONCE = "Upstream: once"
UPSTREAM_CARRY = "Upstream: carry"
UPSTREAM_NOTHING = "Upstream: nothing to do"
BLACKOUT = "Blackout"  # the StartAt of a job in blackout windows (compiler/blackout_states.py)
_BLACKOUT_RECORD = "Blackout: "


def blackout_record(window: str) -> str:
    """Records a fire inside ``window`` (a [blackouts] name: lower-case letters, digits, '-')."""
    return f"{_BLACKOUT_RECORD}{window}"

_FIXED: dict[str, Role] = {
    START: Role.START, START_DEFAULTS: Role.START, START_MERGE: Role.START, INVALID_INPUT: Role.START,
    CLAIM: Role.CLAIM, CLAIM_RERUN: Role.CLAIM, CLAIM_FIRST: Role.CLAIM, ROUTE: Role.ROUTE, UNKNOWN_RESUME_FROM: Role.UNKNOWN_RESUME,
    FINISH: Role.FINISH, FINISH_RECOVERED: Role.FINISH, FINISH_CANCELLED: Role.FINISH, FINISH_AGAIN: Role.FINISH,
    FINISH_TIMED_OUT: Role.STEP_TIMED_OUT,
    NOTIFY_RECOVERED: Role.NOTIFY, NOTIFY_FAILURE: Role.NOTIFY, NOTIFY_SKIPPED: Role.NOTIFY,
    NOTIFY_SKIPPED_LAST_FAILED: Role.NOTIFY, FAIL: Role.FAIL,
    SKIP_LOAD_STATE: Role.SKIP, SKIP_WHY: Role.SKIP, SKIP_CHECK_HOLDER: Role.SKIP, SKIP_HOLDER_RUNNING: Role.SKIP,
    TAKE_OVER: Role.TAKE_OVER, REPLACE_STOP_HOLDER: Role.REPLACE,
    **{n: Role.UPSTREAM for n in (UPSTREAM_LOAD, UPSTREAM_CHECK, UPSTREAM_ONCE, UPSTREAM_CARRY, UPSTREAM_NOTHING)},
}


def attempt(step: str) -> str:
    """The step's Task (a parallel group's Parallel), entered once per attempt. Machines compiled
    before the attempt loop also had ``<step> #N`` per attempt; histories of runs started before
    an upgrade still hold them, and :func:`classify` still reads them, but nothing makes them."""
    return step


def check(step: str) -> str:
    return f"{step}: check"


def retry(step: str) -> str:
    """After a failed attempt that may be retried: count the next attempt, pick its back-off."""
    return f"{step}: retry"


def wait(step: str) -> str:
    """The back-off before the step's next attempt."""
    return f"{step}: wait"


def infra_retry(step: str) -> str:
    """Before the same attempt runs again because its task never ran its step (not an attempt of
    the step's own: capacity, image pull, a Fargate maintenance stop)."""
    return f"{step}: infra retry"


def infra_wait(step: str) -> str:
    return f"{step}: infra wait"


def step_failed(step: str) -> str:
    return f"{step}: failed"


def item_failed(map_step: str) -> str:
    """A map item's Fail state (its child's end): named for the map, not ``Fail``, because a
    state machine's state names are one namespace, the Map's item processor included ("State
    names MUST be unique within the scope of the whole state machine",
    https://states-language.net/spec.html#states-fields)."""
    return f"{map_step}: item failed"


def step_timed_out(step: str) -> str:
    return f"{step}: timed out"


def pool(step: str) -> str:
    """An attempt of a pooled step takes its ticket here, before it waits for a slot."""
    return f"{step}: pool"


def pool_claim(step: str) -> str:
    return f"{step}: pool claim"


def pool_backoff(step: str) -> str:
    return f"{step}: pool backoff"


def pool_wait(step: str) -> str:
    return f"{step}: pool wait"


def pool_check(step: str) -> str:
    """A claim's try that ended in an error may have landed: its holder item is read here."""
    return f"{step}: pool check"


def pool_held(step: str) -> str:
    """The Choice after ``pool check``: held (the attempt runs) or not (it waits)."""
    return f"{step}: pool held"


def pool_retry_claim(step: str) -> str:
    """A map item's claim after a wait (its first is ``pool claim``): on success, its record
    says RUNNING first (compiler/pools.py)."""
    return f"{step}: pool claim again"


def pool_waiting(step: str) -> str:
    return f"{step}: pool waiting"


def pool_running(step: str) -> str:
    return f"{step}: pool running"


#: The outcomes a pooled attempt's release is followed by, each its own state (a Task state's
#: outcomes go to different states; each goes through a release first).
POOL_RELEASE_OUTCOMES = ("", "check", "failed", "timed out")


def pool_release(step: str, outcome: str = "") -> str:
    """Release before ``outcome`` ('' for the attempt's Task's own next state)."""
    return f"{step}: pool release" + (f" ({outcome})" if outcome else "")


def expect(step: str) -> str:
    """Reads the step's reported metrics and judges its expectations (compiler/expect_states.py)."""
    return f"{step}: expect"


def expect_check(step: str) -> str:
    return f"{step}: expect check"


def expect_warn(step: str) -> str:
    return f"{step}: expect warn"


def expect_failed(step: str) -> str:
    return f"{step}: expect failed"


def expect_retry(step: str) -> str:
    return f"{step}: expect retry"


def expect_baseline(step: str) -> str:
    return f"{step}: expect baseline"


def expect_keep(step: str) -> str:
    return f"{step}: expect keep"


def expect_warned(step: str) -> str:
    """A map item whose check warned counts itself (compiler/item_warnings.py); then whether it
    is among the first few, and if so its name for the map's one alert."""
    return f"{step}: expect warned"


def expect_warned_few(step: str) -> str:
    return f"{step}: expect warned few"


def expect_warned_name(step: str) -> str:
    return f"{step}: expect warned name"


def expect_warned_last(step: str) -> str:
    """After a map (``step``): the previous run's count of its warned items, this run's, the one
    alert, and this run's count kept (compiler/item_warnings.py)."""
    return f"{step}: expect warned last"


def expect_warned_read(step: str) -> str:
    return f"{step}: expect warned read"


def expect_warned_check(step: str) -> str:
    return f"{step}: expect warned check"


def expect_warned_alert(step: str) -> str:
    return f"{step}: expect warned alert"


def expect_warned_keep(step: str) -> str:
    return f"{step}: expect warned keep"


EXPECT_SUFFIXES = ("expect", "expect check", "expect warn", "expect failed", "expect retry", "expect baseline",
                   "expect keep", "expect warned", "expect warned few", "expect warned name", "expect warned last",
                   "expect warned read", "expect warned check", "expect warned alert", "expect warned keep")


def items_key(step: str) -> str:
    """A map (``step``) draws its list's key, with a UUID, before its items step runs."""
    return f"{step}: items key"


def rerun_items_key(step: str) -> str:
    """A re-run of a map's failed items: the key of the list the control plane wrote."""
    return f"{step}: rerun items key"


def approval_timeout(step: str) -> str:
    """An approval step's wait timed out (compiler/approval_states.py): its record is marked."""
    return f"{step}: approval timeout"


def approval_rejected(step: str) -> str:
    """An approval step was rejected: the run is recorded REJECTED."""
    return f"{step}: rejected"


def branch_done(step: str) -> str:
    return f"{step}: done"


def skip_record(reason: SkipReason) -> str:
    return f"Skip: {reason.value.lower().replace('_', ' ')}"


_SKIP_RECORDS = {skip_record(r): r for r in SkipReason}
_SUFFIXES = {"check": Role.CHECK, "retry": Role.RETRY, "wait": Role.WAIT, "failed": Role.STEP_FAILED, "timed out": Role.STEP_TIMED_OUT,
             "done": Role.BRANCH_DONE, "infra retry": Role.INFRA_RETRY, "infra wait": Role.INFRA_WAIT,
             "pool": Role.POOL, "pool claim": Role.POOL_CLAIM, "pool backoff": Role.POOL_BACKOFF,
             "pool wait": Role.POOL_WAIT, "pool claim again": Role.POOL_CLAIM, "pool waiting": Role.POOL_WAITING,
             "pool check": Role.POOL_CLAIM, "pool held": Role.POOL_CLAIM,
             **{x: Role.EXPECT for x in EXPECT_SUFFIXES},
             "pool running": Role.POOL_RUNNING, "approval timeout": Role.APPROVAL_TIMEOUT,
             "rejected": Role.APPROVAL_REJECTED, "items key": Role.ITEMS_KEY, "rerun items key": Role.ITEMS_KEY,
             "item failed": Role.ITEM_FAILED,
             **{pool_release("", o)[2:]: Role.POOL_RELEASE for o in POOL_RELEASE_OUTCOMES}}
_NUMBERED = ("check", "wait", "infra retry", "infra wait")
_STEP_STATE = re.compile(r"^(?P<step>[a-z][a-z0-9_-]*)(?: #(?P<n>[1-9]\d*))?"
                         r"(?:: (?P<suffix>check|retry|wait|failed|timed out|done|infra retry|infra wait"
                         r"|pool|pool claim|pool backoff|pool wait|pool claim again|pool check|pool held|pool waiting|pool running"
                         r"|items key|rerun items key|item failed|approval timeout|rejected"
                         r"|expect|expect check|expect warn|expect failed|expect retry|expect baseline|expect keep"
                         r"|expect warned|expect warned few|expect warned name|expect warned last|expect warned read"
                         r"|expect warned check|expect warned alert|expect warned keep"
                         r"|pool release(?: \((?:check|failed|timed out)\))?))?$")


def classify(name: str) -> StateName:
    """What the state called ``name`` is. Raises ValueError for a name the compiler never makes."""
    if name in _FIXED:
        return StateName(name, _FIXED[name])
    if name in _SKIP_RECORDS:
        return StateName(name, Role.SKIP_RECORD, reason=_SKIP_RECORDS[name])
    if name == BLACKOUT or (name.startswith(_BLACKOUT_RECORD)
                            and re.fullmatch(r"[a-z][a-z0-9-]{0,39}", name[len(_BLACKOUT_RECORD):])):
        return StateName(name, Role.BLACKOUT)
    m = _STEP_STATE.fullmatch(name)
    if m is None or not STEP_NAME_RE.fullmatch(m["step"]) or len(m["step"]) > STEP_NAME_MAX:
        raise ValueError(f"not a state name the compiler makes: {name[:100]!r}")
    suffix, n = m["suffix"], m["n"]
    if n is not None and (suffix not in (None, *_NUMBERED) or n == "1"):
        raise ValueError(f"not a state name the compiler makes: {name[:100]!r}")
    role = _SUFFIXES[suffix] if suffix else Role.STEP
    numbered = role in (Role.STEP, Role.CHECK, Role.WAIT, Role.INFRA_RETRY, Role.INFRA_WAIT)
    return StateName(name, role, step=m["step"], attempt=int(n or 1) if numbered else None)


def step_key(step: str) -> str:
    """Where a step's attempt counter and latest result live (``$.run.steps.<key>`` in the state
    data, the record's ``steps``): the name made JSONPath-safe."""
    return step.replace("-", "_")


def attempt_key(n: int) -> str:
    """Attempt ``n``'s result in the ``steps`` of records written before the attempt loop."""
    return f"a{n}"
