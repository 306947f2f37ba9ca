"""A map's items, as the runner writes them, the state machine reads them and the records keep
them (compiler/kinds/map_.py compiles ``jp.map``).

* **The list**: the items step's function returns a list or yields its items (a generator: a
  list too large to hold is never held); the runner writes them, one at a time as they come, to
  the platform's bucket under :func:`items_key` as JSON Lines, one ``{"i": index, "v": item}``
  a line (the index survives a re-run of only the failed items, which gets a list of its own
  under the re-run's execution name), with the count in the object's metadata
  (:data:`COUNT_METADATA`, what the portal's "of N" reads without reading the list). A
  Distributed Map reads it with ``ItemReader`` ``InputType: JSONL``: "Accepts one of the
  following values: CSV, JSON, JSONL, PARQUET, MANIFEST"
  (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itemreader.html; JSON
  Lines in Distributed Map: https://aws.amazon.com/blogs/compute/introducing-jsonl-support-with-step-functions-distributed-map).
* **Per item**: the state machine writes one record per item when the item ends
  (``EXEC#<execution>`` / ``ITEM#<map>#<index>``): SUCCEEDED or FAILED, the item, and the item's
  last state data (``detail``: its attempt counter and the last attempt's error) from which
  :func:`item_outcome` reads the attempts and an error excerpt, and the child execution that ran
  it (``child``: its history holds each try of the item's step, the Task's own retries too). A pooled item that finds its
  pool full writes the same record WAITING (with ``waiting_since``) first, and RUNNING (with
  ``started_at``) once it holds its slot (compiler/pools.py): the open statuses, which the
  item's end overwrites.

Limits. One item: a child execution's input, like any state's, is at most 256 KiB (Step
Functions quotas, https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html,
"Maximum input or output size for a task, state, or execution"), and an item reaches its ECS
task in the container overrides, which ECS caps at 8,192 characters with the run's params
(compiler/overrides.py), so one item is refused beyond :data:`MAX_ITEM_BYTES` of compact JSON
(pass an id; read the rest in the each step). Concurrency: a Distributed Map runs at most
10,000 child executions at once
(https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html), the bound of
``max_concurrency``. The count: Step Functions reads a JSONL object line by line (InputType JSONL,
https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itemreader.html "ReaderConfig";
its own ceiling on a reader's items is not what binds here, so it is not relied on); the list
object is one PutObject of at most 5 GB
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/upload-objects.html), which
:data:`MAX_ITEMS` lines of at most :data:`MAX_ITEM_BYTES` stay far below (~105 MB). Ours,
:data:`MAX_ITEMS`, is lower than either: every item gets a record, and the portal's progress,
the alert and a re-run of the failed items each Query the run's records (~400 bytes an item:
100,000 items are ~40 pages of 1 MB; a million would be ~400 per page view). The runner's
memory does not depend on the count (bench/map_items_memory.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from jobplane.contract import runner as rc
from jobplane.contract.secret_names import URL_PASSWORD
from jobplane.contract.types import JsonObject, JsonValue

ITEMS_PREFIX = "map-items/"
#: where a Distributed Map's ResultWriter exports its children's results (compiler/map_states.py):
#: nothing reads them (each item's record is its outcome); the base module's lifecycle rule
#: expires them (terraform/platform/slow.tf)
RESULTS_PREFIX = "map-results/"
ITEM_SK_PREFIX = "ITEM#"
MAX_CONCURRENCY = 10_000
MAX_ITEMS = 100_000
#: the list object's user metadata (x-amz-meta-items): how many items it holds
COUNT_METADATA = "items"
CONTENT_TYPE = "application/jsonl"
#: one item's JSON: it travels in the each step's ECS container overrides (8,192 characters in all, with the run's params)
MAX_ITEM_BYTES = 1024
ERROR_EXCERPT = 300
#: an item record's open statuses (a pooled item waiting for its slot, then holding it); every
#: other status is the item's end (SUCCEEDED, FAILED, TIMED_OUT)
WAITING, RUNNING = "WAITING", "RUNNING"
OPEN_STATUSES = (WAITING, RUNNING)

#: the runner environment (contract/runner.py, which the runner reads without this module)
ENV_ITEMS_URI, ENV_ITEM, ENV_ITEM_INDEX, ITEM_PARAM = rc.ENV_ITEMS_URI, rc.ENV_ITEM, rc.ENV_ITEM_INDEX, rc.ITEM_PARAM


#: Where a re-run of failed items finds the list the control plane wrote for it: a prefix no
#: runner task role may write (only ``map-items/*``), so no step can replace it (issue 64 item 2).
RERUN_PREFIX = "map-reruns/"
#: The state data field that holds the run's list key of the map running now (``{"key": ...}``),
#: set by the map's ``items key`` state; the items step's runner and the ItemReader read it.
KEY_PATH = "$.items_key"


def results_prefix(job: str) -> str:
    """The ResultWriter's ``Prefix`` for a job's maps: Step Functions writes each Map Run's
    results and manifest under ``<prefix>/<map run id>/``, so one prefix per job serves every run
    and map of it, and the state machine role's grant stays scoped to the job."""
    return f"{RESULTS_PREFIX}{job}"


def items_prefix(job: str, execution: str, map_name: str) -> str:
    """What the keys of a run's lists for one map start with (then a UUID and ``.jsonl``)."""
    return f"{ITEMS_PREFIX}{job}/{execution}/{map_name}/"


def items_key(job: str, execution: str, map_name: str, token: str) -> str:
    """Where a run's list for one map lives in the platform's bucket. ``token`` is a UUID the
    state machine draws before the items step (:func:`items_key_expr`): every ECS step's task
    role may write under ``map-items/``, so a key derived from what a reader can list (job,
    execution name, map) would let any team's step replace another job's list and choose the
    items its each step runs, with that job's secrets (issue 64 item 2)."""
    return f"{items_prefix(job, execution, map_name)}{token}.jsonl"


def items_key_expr(job: str, map_name: str) -> str:
    """:func:`items_key` as the intrinsic the ``items key`` state evaluates: the execution name
    and a fresh ``States.UUID()`` (https://docs.aws.amazon.com/step-functions/latest/dg/intrinsic-functions.html#asl-intrsc-func-uuid-generate)."""
    return f"States.Format('{items_prefix(job, '{}', map_name)}{{}}.jsonl', $$.Execution.Name, States.UUID())"


def rerun_key(job: str, execution: str, map_name: str) -> str:
    """Where ``jobplane rerun --failed-items`` writes the re-run's list (under :data:`RERUN_PREFIX`)."""
    return f"{RERUN_PREFIX}{job}/{execution}/{map_name}.jsonl"


def rerun_key_expr(job: str, map_name: str) -> str:
    return f"States.Format('{rerun_key(job, '{}', map_name)}', $$.Execution.Name)"


def item_sk(map_name: str, index: int | str) -> str:
    return f"{ITEM_SK_PREFIX}{map_name}#{index}"


#: The run's item counting a map's warned items (compiler/item_warnings.py): ``sk`` this prefix and
#: the map's name, in the run's partition (not ``ITEM#``: the item records' Query never reads it).
WARNED_SK_PREFIX = "WARNED#"
ATTR_WARNED = "warned"  # how many items warned (an atomic counter)
ATTR_WARNED_FIRST = "first"  # the first few: [{index, item, words}]
#: How many warned items the one alert names (the count says how many more).
WARNED_NAMED = 5
#: The job's ``EXPECT#<job>`` item keeping a map's last warned count: ``sk`` the map's name and this.
WARNED_SUFFIX = "#warned"


def warned_sk(map_name: str) -> str:
    return f"{WARNED_SK_PREFIX}{map_name}"


class ItemProblem(ValueError):
    """One item cannot be fanned out (not JSON, or too large)."""


def line(index: int, item: object) -> bytes:
    """Item ``index``'s line of the list (JSON Lines: ``{"i": index, "v": item}`` and a newline),
    or :class:`ItemProblem`. The item is serialised once: its size is checked on that text."""
    try:
        value = json.dumps(item, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ItemProblem(f"item {index} is not JSON: {e}") from None
    encoded = value.encode()
    if len(encoded) > MAX_ITEM_BYTES:
        raise ItemProblem(f"item {index} is {len(encoded)} bytes of JSON: at most {MAX_ITEM_BYTES} (it travels in "
                          "the ECS task's overrides); pass an id and read the rest in the each step")
    return b'{"i":%d,"v":%s}\n' % (index, encoded)


def not_a_list(value: object) -> str | None:
    """Why ``value`` is not something the runner can take items from one at a time (None: it is):
    a list or tuple, or an iterator (a generator). A dict, a string or a set is refused: their
    iteration is keys, characters, or an order that is not the function's."""
    if isinstance(value, (list, tuple, Iterator)):
        return None
    return (f"the items step must return a list of items or yield them (a generator), "
            f"not {type(value).__name__}")


def encode(items: list[JsonValue], indexes: list[int] | None = None) -> bytes:
    """A whole (small) list as the Map reads it. ``indexes``: the items' own indexes (a re-run of failed items)."""
    idx = indexes if indexes is not None else list(range(len(items)))
    return b"".join(line(i, v) for i, v in zip(idx, items))


def decode(body: bytes) -> list[tuple[int, JsonValue]]:
    """(index, item) of each line of a list (tests, tools): the inverse of :func:`encode`."""
    out = []
    for raw in body.splitlines():
        if raw.strip():
            entry = json.loads(raw)
            out.append((int(entry["i"]), entry["v"]))
    return out


def problems(items: object) -> list[str]:
    """Why a whole list an items step returned cannot be fanned out (empty: it can); the runner
    checks a streamed list the same way, item by item (runner/items_out.py)."""
    if (why := not_a_list(items)) is not None or not isinstance(items, (list, tuple)):
        return [why or "the list must be whole to be checked at once"]
    out = []
    if len(items) > MAX_ITEMS:
        out.append(f"{len(items)} items: a map takes at most {MAX_ITEMS}")
    for i, item in enumerate(items):
        try:
            line(i, item)
        except ItemProblem as e:
            out.append(str(e))
            break
    return out


#: what a redacted part of an item reads as (runner/logs.py REDACTED)
REDACTED = "[redacted]"


def redacted(value: JsonValue) -> JsonValue:
    """An item as it is shown (the execution page, the API, ``jobplane status``, the alert, a
    re-run's audit entry): every password of a URL in its strings replaced. The runner refuses
    an item holding a value of the step's secrets (runner/items_out.py); what is shown is
    redacted again as a second line, with the one secret form that is known without the
    secrets' values (issue 64 item 4)."""
    if isinstance(value, str):
        return URL_PASSWORD.sub(lambda m: m.group(0).replace(m.group(2), REDACTED), value)
    if isinstance(value, list):
        return [redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class ItemOutcome:
    """One item of a map as its record tells it: ``item`` as it is shown (:func:`redacted`),
    ``sent`` as the each step got it (what a re-run of the failed items sends again)."""

    map: str
    index: int
    item: JsonValue
    status: str
    attempts: int
    error: str | None
    finished_at: str | None
    waiting_since: str | None = None
    sent: JsonValue = None
    #: the ECS task of a failed item's last attempt (its Cause names it) and its container's exit
    #: code: the task's log stream holds the each step's own error line, which the state machine
    #: cannot read (platform/map_records.py with_own_errors puts it in ``error``)
    task_id: str | None = None
    exit_code: int | None = None
    #: the child execution that ran the item (its ``$$.Execution.Id``), whose history holds every
    #: try of the item's step, its Task's own retries included (platform/map_records.py
    #: ``item_attempts``); None in a record written before it was kept
    child: str | None = None

    @property
    def retried(self) -> bool:
        return self.attempts > 1

    @property
    def ended(self) -> bool:
        return self.status not in OPEN_STATUSES

    @property
    def failed(self) -> bool:
        """Ended, not SUCCEEDED (an item its run's end caught WAITING or RUNNING did not fail: it
        was stopped, as one that never started)."""
        return self.ended and self.status != "SUCCEEDED"

    def to_json(self) -> JsonObject:
        return {"map": self.map, "index": self.index, "item": self.item, "status": self.status,
                "attempts": self.attempts, "retried": self.retried, "error": self.error,
                "finished_at": self.finished_at, "waiting_since": self.waiting_since}


@dataclass(frozen=True)
class LastError:
    """A failed item's last attempt as its state data keeps it: a person's line (the ECS task's
    exit code or stop reason when its Cause is the task's JSON, else the error name and the
    cause's start), and the task and exit code when it ran on ECS."""

    text: str | None
    task_id: str | None = None
    exit_code: int | None = None


def last_error(error: JsonValue) -> LastError:
    if not isinstance(error, dict):
        return LastError(None)
    name, cause = str(error.get("Error") or ""), error.get("Cause")
    try:
        task = json.loads(cause) if isinstance(cause, str) else None
    except ValueError:
        task = None
    if isinstance(task, dict):
        containers = task.get("Containers") or [{}]
        code = containers[0].get("ExitCode") if isinstance(containers[0], dict) else None
        reason = task.get("StoppedReason") or ""
        arn = task.get("TaskArn")
        return LastError((f"{name}: exit code {code}" + (f" ({reason})" if reason else ""))[:ERROR_EXCERPT],
                         str(arn).rsplit("/", 1)[-1] if isinstance(arn, str) and arn else None,
                         code if isinstance(code, int) else None)
    return LastError((f"{name}: {cause}" if cause else name)[:ERROR_EXCERPT])


def item_outcome(record: JsonObject) -> ItemOutcome:
    """An item record (plain attribute values) as an :class:`ItemOutcome`."""
    try:
        detail = json.loads(str(record.get("detail") or "{}"))
    except ValueError:
        detail = {}
    try:
        item = json.loads(str(record.get("item") or "null"))
    except ValueError:
        item = record.get("item")
    slot: JsonValue = next(iter((detail.get("steps") or {}).values()), {}) if isinstance(detail, dict) else {}
    attempts = slot.get("n", 1) if isinstance(slot, dict) else 1
    status = str(record.get("status") or "")
    last = last_error(detail.get("error")) if status not in ("SUCCEEDED", *OPEN_STATUSES) and isinstance(detail, dict) \
        else LastError(None)
    return ItemOutcome(map=str(record.get("map") or ""), index=int(str(record.get("index") or 0)), item=redacted(item),
                       sent=item,
                       status=status, attempts=int(attempts) if isinstance(attempts, int) else 1,
                       error=last.text, task_id=last.task_id, exit_code=last.exit_code,
                       finished_at=str(record["finished_at"]) if record.get("finished_at") else None,
                       waiting_since=str(record["waiting_since"]) if record.get("waiting_since") else None,
                       child=str(record["child"]) if record.get("child") else None)
