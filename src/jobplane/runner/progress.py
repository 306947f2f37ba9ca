"""The runner's side of a step's progress and counts (contract/progress.py, docs/progress.md):
checks what the step reports, keeps the last values, and writes them to the step's record at
most once per ``INTERVAL_SECONDS`` (the first report at once, the last when the step ends).

A refused value (not a finite number, ``done`` going back, a name that is not an identifier) is
one warning line in the step's log and nothing else: the step goes on. A write that fails (the
network, a throttle after the retries) is one warning too, and the values stay pending for the
step's end, which tries once more: progress is worth showing, never worth failing (or holding)
a step for.

The write is one DynamoDB UpdateItem signed by the standard library (runner/aws_requests.py,
imported at the first write, after the step's code started: the runner's start-up stays the
standard library's and the image needs no boto3). Its condition keeps progress moving forward
across writers: a late write of an earlier attempt never overwrites a later one's, and ``done``
never goes back within an attempt
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html).
"""

from __future__ import annotations

import _thread
import os
import time

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    from typing import Callable, Mapping

    from jobplane.contract.types import JsonObject
    from jobplane.runner.context import RunContext
    from jobplane.runner.logs import RunLog

from jobplane.contract import progress as cp

#: DynamoDB's JSON protocol (awsJson1_0): the target prefix of its operations
#: (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.LowLevelAPI.html).
UPDATE_ITEM = "DynamoDB_20120810.UpdateItem"
GET_ITEM = "DynamoDB_20120810.GetItem"
JSON_1_0 = "application/x-amz-json-1.0"
RETENTION_SECONDS = 400 * 86400  # contract/environment.py DEFAULT_RETENTION_DAYS: the records' TTL


class Reporter:
    """The sink of one step attempt's reports (contract/progress.py ``install``)."""

    def __init__(self, ctx: RunContext, log: RunLog, table: str, env: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic, interval: float = cp.INTERVAL_SECONDS) -> None:
        self.ctx, self.log, self.table = ctx, log, table
        # a map's item keeps its own record (its expectations judge its own counts)
        from jobplane.contract.runner import ENV_ITEM_INDEX

        self.sk = cp.step_sk(ctx.step, (os.environ if env is None else env).get(ENV_ITEM_INDEX))
        self.env = env
        self.clock, self.interval = clock, interval
        self.started_at = round(time.time(), 3)
        self.lock = _thread.allocate_lock()
        self.done: int | float | None = None
        self.total: int | float | None = None
        self.unit: str | None = None
        self.cursor: str | None = None
        self.updated_at: float | None = None
        self.metrics: dict[str, int | float] = {}
        self.pending = False
        self.last_write: float | None = None
        self.writes = 0
        self.failed = False
        self.resumed: tuple[str | None] | None = None  # resume_from's answer, read once

    # -- what the step reports ---------------------------------------------------------------
    def progress(self, done: object, total: object = None, unit: object = None, cursor: object = None) -> None:
        try:
            checked = cp.number("progress done", done)
            checked_total = None if total is None else cp.number("progress total", total)
            checked_unit = cp.text("progress unit", unit, cp.MAX_UNIT)
            checked_cursor = cp.text("progress cursor", cursor, cp.MAX_CURSOR)
            if checked < 0 or (checked_total is not None and checked_total < 0):
                raise cp.Refused(f"progress must not be negative: done {checked!r}, total {checked_total!r}")
        except cp.Refused as e:
            self.log.warning("progress refused: %s", e)
            return
        with self.lock:
            if self.done is not None and checked < self.done:
                self.log.warning("progress refused: done went back from %s to %s (progress only moves forward)",
                                 self.done, checked)
                return
            self.done, self.total = checked, checked_total if checked_total is not None else self.total
            self.unit = checked_unit or self.unit
            self.cursor = checked_cursor if checked_cursor is not None else self.cursor
            self._changed()

    def metric(self, name: object, value: object) -> None:
        try:
            checked_name = cp.metric_name(name)
            checked = cp.number(f"metric {checked_name}", value)
        except cp.Refused as e:
            self.log.warning("metric refused: %s", e)
            return
        with self.lock:
            if checked_name not in self.metrics and len(self.metrics) >= cp.MAX_METRICS:
                self.log.warning("metric refused: %s would be the step's %dth metric (at most %d)", checked_name,
                                 cp.MAX_METRICS + 1, cp.MAX_METRICS)
                return
            self.metrics[checked_name] = checked
            self._changed()

    def line(self, report: Mapping[str, object]) -> None:
        """A shell step's report line (contract/progress.py ``parse_line``)."""
        given = report.get("progress")
        if isinstance(given, dict):
            self.progress(given.get("done"), given.get("total"), given.get("unit"), given.get("cursor"))
        given = report.get("metric")
        if isinstance(given, dict):
            self.metric(given.get("name"), given.get("value"))
        if not isinstance(report.get("progress"), dict) and not isinstance(report.get("metric"), dict):
            self.log.warning("report line refused: it holds neither \"progress\" nor \"metric\" (docs/progress.md)")

    def resume_from(self) -> str | None:
        """The cursor an earlier attempt of this step left on its record, or that a re-run from
        this step copied there (one GetItem, the first time it is asked); None if there is none
        or it cannot be read (a warning: the step starts from the beginning, as without a
        checkpoint)."""
        with self.lock:
            if self.resumed is None:
                self.resumed = (self._read_cursor(),)
            return self.resumed[0]

    def _read_cursor(self) -> str | None:
        """A retry's checkpoint is its earlier attempt's cursor; a re-run's first attempt finds
        the one the re-run copied from the run it re-runs (attempt 0: platform/control/runs.py)."""
        request: JsonObject = {
            "TableName": self.table, "ConsistentRead": True,
            "Key": {"pk": {"S": cp.pk(self.ctx.job, self.ctx.execution_id)}, "sk": {"S": self.sk}},
            "ProjectionExpression": "#cursor, #attempt",
            "ExpressionAttributeNames": {"#cursor": cp.ATTR_CURSOR, "#attempt": cp.ATTR_ATTEMPT}}
        try:
            from jobplane.runner import aws_requests

            item = aws_requests.json_call("dynamodb", GET_ITEM, request, self.env, content_type=JSON_1_0).get("Item")
        except Exception as e:  # noqa: BLE001 - a checkpoint never fails the step
            self.log.warning("checkpoint not read (the step starts from the beginning): %s", e)
            return None
        if not isinstance(item, dict):
            return None
        attempt, cursor = item.get(cp.ATTR_ATTEMPT), item.get(cp.ATTR_CURSOR)
        earlier = isinstance(attempt, dict) and int(str(attempt.get("N", "0"))) < self.ctx.attempt
        value = cursor.get("S") if isinstance(cursor, dict) else None
        return str(value) if earlier and value is not None else None

    # -- writing ---------------------------------------------------------------------------------
    def _changed(self) -> None:
        """With the lock held: the values changed; written now if the last write is old enough."""
        self.updated_at = round(time.time(), 3)
        self.pending = True
        now = self.clock()
        # after a failed write, only the end tries again: an unreachable endpoint costs the
        # step's code its retries once, not every interval
        if not self.failed and (self.last_write is None or now - self.last_write >= self.interval):
            self._write(ended=False)

    def finish(self) -> None:
        """The step ended: its last values written, whatever the interval, marked ended (also
        when they were written already: the pages then show no ETA). Nothing if it reported nothing."""
        with self.lock:
            if self.pending or self.last_write is not None:
                self._write(ended=True)

    def _write(self, ended: bool) -> None:
        self.last_write = self.clock()
        request = self.request(ended)
        try:
            from jobplane.runner import aws_requests

            try:
                aws_requests.json_call("dynamodb", UPDATE_ITEM, request, self.env, content_type=JSON_1_0)
            except aws_requests.AwsError as e:
                if e.code != "ConditionalCheckFailedException":
                    raise
                # a later attempt (or a higher done) is already there: this one's values are older
            self.pending = False
            self.writes += 1
        except Exception as e:  # noqa: BLE001 - a report never fails the step
            if not self.failed:
                self.log.warning("progress not recorded (kept for the next write): %s", e)
            self.failed = True

    def request(self, ended: bool) -> JsonObject:
        """The UpdateItem of the step's record with the values held now. Every attribute goes
        by a ``#name`` placeholder: several are DynamoDB reserved words (``metrics``)
        (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ReservedWords.html)."""
        given: dict[str, JsonObject] = {
            cp.ATTR_ATTEMPT: {"N": str(self.ctx.attempt)}, cp.ATTR_STARTED_AT: {"N": repr(self.started_at)},
            cp.ATTR_UPDATED_AT: {"N": repr(self.updated_at or self.started_at)},
            cp.ATTR_EXPIRES_AT: {"N": str(int(time.time()) + RETENTION_SECONDS)}}
        for attr, value in ((cp.ATTR_DONE, self.done), (cp.ATTR_TOTAL, self.total)):
            if value is not None:
                given[attr] = {"N": repr(value)}
        for attr, text in ((cp.ATTR_UNIT, self.unit), (cp.ATTR_CURSOR, self.cursor)):
            if text is not None:
                given[attr] = {"S": text}
        if self.metrics:
            given[cp.ATTR_METRICS] = {"M": {k: {"N": repr(v)} for k, v in self.metrics.items()}}
        if ended:
            given[cp.ATTR_ENDED] = {"BOOL": True}
        names = {f"#{a}": a for a in given} | {f"#{cp.ATTR_DONE}": cp.ATTR_DONE}
        values = {f":{a}": v for a, v in given.items()}
        # forward only: a newer attempt's record, or a higher done of this attempt, is kept
        done = f"#{cp.ATTR_DONE} <= :{cp.ATTR_DONE}" if self.done is not None else "attribute_not_exists(#done)"
        condition = (f"attribute_not_exists(#attempt) OR #attempt < :attempt OR "
                     f"(#attempt = :attempt AND (attribute_not_exists(#done) OR {done}))")
        # a retry's writes follow its earlier attempt's last one, which marked the record ended
        remove = "" if ended else f" REMOVE #{cp.ATTR_ENDED}"
        if not ended:
            names[f"#{cp.ATTR_ENDED}"] = cp.ATTR_ENDED
        return {
            "TableName": self.table,
            "Key": {"pk": {"S": cp.pk(self.ctx.job, self.ctx.execution_id)}, "sk": {"S": self.sk}},
            "UpdateExpression": "SET " + ", ".join(f"#{a} = :{a}" for a in given) + remove,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }


def record_resolved(ctx: RunContext, log: RunLog, resolved: Mapping[str, object],
                    env: Mapping[str, str] | None = None) -> bool:
    """The run's calendar defaults the runner resolved at a scheduled fire (contract/params.py),
    on the run's ``#params`` item beside its steps' progress: what the run page shows as the
    values the fire resolved. Every step resolves the same values, so each writes the same item;
    best effort (a warning), as progress: the step's log has them too."""
    env = os.environ if env is None else env
    table = env.get(cp.ENV_TABLE)
    if not table or not ctx.job or not ctx.execution_id or not resolved:
        return False
    import json

    request = {
        "TableName": table, "Key": {"pk": {"S": cp.pk(ctx.job, ctx.execution_id)}, "sk": {"S": cp.PARAMS_SK}},
        "UpdateExpression": "SET #params = :params, #expires_at = :expires_at",
        "ExpressionAttributeNames": {"#params": cp.ATTR_PARAMS, "#expires_at": cp.ATTR_EXPIRES_AT},
        "ExpressionAttributeValues": {":params": {"S": json.dumps(dict(resolved), sort_keys=True)},
                                      ":expires_at": {"N": str(int(time.time()) + RETENTION_SECONDS)}}}
    try:
        from jobplane.runner import aws_requests

        aws_requests.json_call("dynamodb", UPDATE_ITEM, request, env, content_type=JSON_1_0)
    except Exception as e:  # noqa: BLE001 - a record never fails the step
        log.warning("resolved params not recorded (the step's log has them): %s", e)
        return False
    return True


def start(ctx: RunContext, log: RunLog, env: Mapping[str, str] | None = None) -> Reporter | None:
    """The reporter of this step attempt, installed as the process's sink; None when the runner
    has no table to write to (a runner started by hand: reports are no-ops then)."""
    table = (os.environ if env is None else env).get(cp.ENV_TABLE)
    if not table or not ctx.job or not ctx.execution_id or not ctx.step:
        return None
    reporter = Reporter(ctx, log, table, env)
    cp.install(reporter)
    return reporter


def stop(reporter: Reporter | None) -> None:
    """The step ended: its last values written, the sink removed."""
    if reporter is None:
        return
    cp.install(None)
    reporter.finish()
