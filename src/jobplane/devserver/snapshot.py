"""Local state that survives a restart of ``jobplane dev``.

moto keeps everything in memory, so the dev platform saves what the platform's own records live
in — every item of the DynamoDB table (job state, executions, skips, audit) — plus the
executions still running, to a JSON file under the data directory, and loads it into the fresh
table on the next start. Step Functions' own histories are not saved: every fact the portal and
CLI show after a restart comes from the table and the step log files.

Written atomically (temporary file + rename), so a crash mid-save leaves the previous snapshot.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from jobplane.contract.types import Client, JsonObject

SNAPSHOT_VERSION = 1


@dataclass
class Snapshot:
    items: list[JsonObject] = field(default_factory=list)
    running: list[JsonObject] = field(default_factory=list)  # executions RUNNING when saved
    # the events dead-letter queue's messages (alerts Slack refused: platform/dead_letters.py),
    # which moto keeps in memory only
    dead_letters: list[JsonObject] = field(default_factory=list)

    @classmethod
    def capture(cls, ddb: Client, table: str, sfn: Client, running_arns: list[str]) -> Snapshot:
        """The whole table, and how each of ``running_arns`` (executions RUNNING now) started."""
        items: list[JsonObject] = []
        kwargs: JsonObject = {"TableName": table}
        while True:  # a scan is fine here: local data, whole-table copy by design
            page = ddb.scan(**kwargs)
            items += page.get("Items", [])
            if not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        running = []
        for arn in running_arns:
            d = sfn.describe_execution(executionArn=arn)
            if d["status"] != "RUNNING":  # ended since it was listed: nothing to resume
                continue
            running.append({"execution_arn": d["executionArn"], "name": d["name"], "input": d.get("input") or "{}",
                            "started_at": d["startDate"].isoformat()})
        return cls(items, running)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            # one encode in C: json.dump's file path runs the encoder in Python, chunk by chunk
            f.write(json.dumps({"version": SNAPSHOT_VERSION, "items": self.items, "running": self.running,
                                "dead_letters": self.dead_letters}))
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Snapshot | None:
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        if data.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"{path}: snapshot version {data.get('version')} is not {SNAPSHOT_VERSION}; "
                             "start with --reset")
        return cls(data.get("items", []), data.get("running", []), data.get("dead_letters", []))

    def restore(self, ddb: Client, table: str) -> int:
        """Put every item back; a job state saved before the status index existed is filed in it
        as it goes (Repository.status_index_keys), so the jobs page's status filter finds it."""
        from jobplane.platform.repository import status_index_keys

        items = [item | (status_index_keys(item) or {}) for item in self.items]
        for i in range(0, len(items), 25):
            requests = [{"PutRequest": {"Item": item}} for item in items[i:i + 25]]
            pending: JsonObject = {table: requests}
            while pending:
                pending = ddb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
        return len(self.items)
