"""The buttons' server side, in the platform table: each posted alert's random id and what it is
about, and the once-only claim of each action on it.

A button's ``value`` is the alert's id, 128 random bits, and nothing else: it names a record
here (the job, the execution, the actions offered, the channel and message to update), it grants
nothing (the clicking person is authorized afresh), and it is never a task token or any other
credential. Items (``pk`` / ``sk``):

- ``SLACKALERT#<id>`` / ``ALERT``: the alert (written by the notifier before it posts, then the
  channel and ``ts`` Slack answered); kept 30 days (``expires_at``, the table's TTL).
- ``SLACKALERT#<id>`` / ``DONE#<action>``: the claim of one action on the alert, put with
  ``attribute_not_exists(pk)``: a repeated or replayed submission, or two people at once, act
  once (DynamoDB conditional writes:
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html).
- ``SLACKRUN#<execution>`` / ``<when>#<id>``: which alerts a run has (``jobplane dev-slack-click``).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field

from jobplane.contract.types import Client, JsonObject

ALERT_PREFIX = "SLACKALERT#"
RUN_PREFIX = "SLACKRUN#"
ALERT_SK = "ALERT"
DONE_PREFIX = "DONE#"
KEEP_SECONDS = 30 * 86400


@dataclass(frozen=True)
class AlertRecord:
    id: str
    job: str
    team: str
    execution: str
    event: str
    actions: tuple[str, ...]
    #: the window a MISSED alert's backfill covers (its first missed fire, when it was sent)
    window: tuple[str, str] | None = None
    channel: str = ""
    ts: str = ""
    #: the message's blocks without the action buttons (what an update starts from)
    blocks: list[JsonObject] = field(default_factory=list)
    #: what was done from it, one line each, in order
    done: tuple[str, ...] = ()


@dataclass(frozen=True)
class Claim:
    actor: str
    result: str


class AlertButtons:
    def __init__(self, ddb: Client, table: str):
        self.ddb, self.table = ddb, table

    def mint(self, job: str, team: str, execution: str, event: str, actions: tuple[str, ...],
             window: tuple[str, str] | None, blocks: list[JsonObject]) -> str:
        """A new alert id, recorded before the message carrying it is posted."""
        alert = secrets.token_urlsafe(16)
        now = int(time.time())
        item: JsonObject = {"pk": {"S": ALERT_PREFIX + alert}, "sk": {"S": ALERT_SK}, "job": {"S": job},
                            "team": {"S": team}, "execution": {"S": execution}, "event": {"S": event},
                            "actions": {"S": json.dumps(list(actions))}, "blocks": {"S": json.dumps(blocks)},
                            "expires_at": {"N": str(now + KEEP_SECONDS)}}
        if window:
            item["window"] = {"S": json.dumps(list(window))}
        self.ddb.put_item(TableName=self.table, Item=item)
        self.ddb.put_item(TableName=self.table, Item={
            "pk": {"S": RUN_PREFIX + execution}, "sk": {"S": f"{now:012d}#{alert}"}, "alert": {"S": alert},
            "expires_at": {"N": str(now + KEEP_SECONDS)}})
        return alert

    def posted(self, alert: str, channel: str, ts: str) -> None:
        self.ddb.update_item(TableName=self.table, Key=_key(alert), UpdateExpression="SET channel = :c, ts = :t",
                             ExpressionAttributeValues={":c": {"S": channel}, ":t": {"S": ts}})

    def get(self, alert: str) -> AlertRecord | None:
        if not alert or len(alert) > 64:
            return None
        item = self.ddb.get_item(TableName=self.table, Key=_key(alert), ConsistentRead=True).get("Item")
        if not item:
            return None
        window = json.loads(item["window"]["S"]) if "window" in item else None
        return AlertRecord(alert, item["job"]["S"], item["team"]["S"], item["execution"]["S"], item["event"]["S"],
                           tuple(json.loads(item["actions"]["S"])), tuple(window) if window else None,
                           item.get("channel", {}).get("S", ""), item.get("ts", {}).get("S", ""),
                           json.loads(item["blocks"]["S"]), tuple(json.loads(item.get("done", {}).get("S", "[]"))))

    def of_execution(self, execution: str) -> list[str]:
        """The alert ids of a run's alerts, newest first."""
        out = self.ddb.query(TableName=self.table, KeyConditionExpression="pk = :p",
                             ExpressionAttributeValues={":p": {"S": RUN_PREFIX + execution}}, ScanIndexForward=False)
        return [i["alert"]["S"] for i in out.get("Items", [])]

    def claim(self, alert: str, action: str, actor: str) -> Claim | None:
        """Claim ``action`` on ``alert`` for ``actor``: None if claimed now, else the claim that
        was there (who, and what came of it)."""
        try:
            self.ddb.put_item(TableName=self.table,
                              Item={"pk": {"S": ALERT_PREFIX + alert}, "sk": {"S": DONE_PREFIX + action},
                                    "actor": {"S": actor}, "result": {"S": ""},
                                    "expires_at": {"N": str(int(time.time()) + KEEP_SECONDS)}},
                              ConditionExpression="attribute_not_exists(pk)")
            return None
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return self.claimed(alert, action) or Claim(actor, "")

    def claimed(self, alert: str, action: str) -> Claim | None:
        item = self.ddb.get_item(TableName=self.table, ConsistentRead=True,
                                 Key={"pk": {"S": ALERT_PREFIX + alert}, "sk": {"S": DONE_PREFIX + action}}).get("Item")
        return Claim(item["actor"]["S"], item.get("result", {}).get("S", "")) if item else None

    def release(self, alert: str, action: str) -> None:
        """The action failed: someone may try it again."""
        self.ddb.delete_item(TableName=self.table, Key={"pk": {"S": ALERT_PREFIX + alert}, "sk": {"S": DONE_PREFIX + action}})

    def done(self, alert: str, action: str, result: str, line: str) -> AlertRecord | None:
        """Record what the action did (on its claim, and as a line of the alert); the alert after."""
        self.ddb.update_item(TableName=self.table, Key={"pk": {"S": ALERT_PREFIX + alert}, "sk": {"S": DONE_PREFIX + action}},
                             UpdateExpression="SET #r = :r", ExpressionAttributeNames={"#r": "result"},
                             ExpressionAttributeValues={":r": {"S": result}})
        record = self.get(alert)
        if record is None:
            return None
        lines = [*record.done, line]
        self.ddb.update_item(TableName=self.table, Key=_key(alert), UpdateExpression="SET done = :d",
                             ExpressionAttributeValues={":d": {"S": json.dumps(lines)}})
        return AlertRecord(**{**record.__dict__, "done": tuple(lines)})


def _key(alert: str) -> JsonObject:
    return {"pk": {"S": ALERT_PREFIX + alert}, "sk": {"S": ALERT_SK}}
