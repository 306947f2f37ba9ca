"""Where the example application keeps its files (one directory, so a reset is one `rm -rf`)."""

from __future__ import annotations

import json
import os
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any


def root() -> Path:
    path = Path(os.environ.get("EXAMPLES_DATA_DIR", "/tmp/jobplane-examples"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def area(*parts: str) -> Path:
    path = root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_date(days_back: int = 0) -> date:
    """The business date a run works on: from the scheduled time the platform passes, so a
    re-run of last night's run works on last night's date, not today's."""
    raw = os.environ.get("JOBPLANE_SCHEDULED_TIME")
    when = datetime.fromisoformat(raw.replace("Z", "+00:00")) if raw else datetime.now(timezone.utc)
    return when.date() - timedelta(days=days_back)


def write_json(path: Path, data: Any) -> Path:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    tmp.replace(path)  # readers never see half a file
    return path


class MissingInput(FileNotFoundError):
    """An input file an earlier step writes is not there: that step has not run for this date
    (a run started at a later step, `--from-step`, before any full run). Retrying cannot make
    it appear, so each step reports it as its kind's permanent failure (a Django command's
    CommandError, a script's exit code 78): the run fails at once, saying which step to run."""


def read_json(path: Path, written_by: str = "the previous step") -> Any:
    if not path.exists():
        raise MissingInput(f"{path} does not exist: {written_by} has not run for this date; run it first "
                           "(or the whole job), then start again from this step")
    return json.loads(path.read_text())
