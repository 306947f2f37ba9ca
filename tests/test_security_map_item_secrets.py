"""A map's items never carry a secret in clear (issue 64, item 4).

An items step that yielded the value of a declared secret put it in clear in the S3 list, the
item records, the execution page, ``/api/executions/<e>/items`` (readable by every team), the
failure alert and the re-run's audit entry, while the step's log redacted it. The runner now
refuses such an item (a permanent failure whose message names the item's index only), with the
forms the log redactor knows (runner/logs.py secret_values); what shows an item redacts again."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from jobplane.contract import map_items
from jobplane.contract import runner as rc
from jobplane.runner import items_out
from test_runner import env_for, RUNNER

DECLARED = "opaque-value-9911"
JSON_SECRET = json.dumps({"username": "app", "password": "pg-pass-4711-long", "port": "5432"})


def run_items(params: dict[str, object], **extra: str) -> tuple[int, str]:
    env = env_for("python", {"target": "sample_apps.secret_items:tenants_with"}, params,
                  PAYMENT_CONFIG=DECLARED, JOBPLANE_SECRET_NAMES="PAYMENT_CONFIG,DB_CONFIG", DB_CONFIG=JSON_SECRET,
                  # where the list would go: an endpoint nothing listens on (nothing may be sent)
                  **{rc.ENV_ITEMS_URI: "s3://acme-catalog/map-items/j/e/m/u.jsonl",
                     "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
                     "AWS_DEFAULT_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "1"}, **extra)
    proc = subprocess.run([RUNNER, "run", "python"], env=env, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("params, index", [
    ({"env_name": "PAYMENT_CONFIG", "at": 1}, 1),                       # the declared secret itself
    ({"env_name": "PAYMENT_CONFIG", "at": 2, "shape": "object"}, 2),    # inside an item's object
    ({"env_name": "DB_CONFIG", "at": 0, "shape": "leaf"}, 0),           # a JSON secret's field
])
def test_the_runner_refuses_an_item_holding_a_secret_naming_its_index_only(params: dict[str, object],
                                                                           index: int) -> None:
    code, out = run_items(params)
    assert code == rc.EXIT_PERMANENT, out
    assert f"item {index} holds the value of a secret of the step" in out
    assert DECLARED not in out and "pg-pass-4711-long" not in out


def test_a_secret_with_characters_json_escapes_is_found_in_the_line() -> None:
    secret = 'pa"ss\\word-7731'
    with pytest.raises(items_out.ItemsError, match="item 0 holds the value of a secret"):
        items_out.spool([{"dsn": secret}], io.BytesIO(), secrets=[secret])
    out = io.BytesIO()
    assert items_out.spool(["t-0", "t-1"], out, secrets=[secret]) == 2  # ordinary items still pass


def test_every_place_that_shows_an_item_redacts_a_url_password_again() -> None:
    """The second line: item records are read in one place (contract/map_items.py item_outcome),
    which the execution page, the API, `jobplane status`, the alert and a re-run's audit entry
    all show from; the re-run itself sends the item as it was."""
    item = {"tenant": "t-3", "dsn": "postgres://app:pg-pass-4711@db.internal/app"}
    o = map_items.item_outcome({"map": "close-all", "index": "3", "item": json.dumps(item), "status": "FAILED",
                                "detail": "{}"})
    shown = json.dumps(o.to_json())
    assert "pg-pass-4711" not in shown and "postgres://app:[redacted]@db.internal/app" in shown
    assert o.sent == item


def test_the_alert_and_the_progress_summary_show_the_redacted_item() -> None:
    from jobplane.platform.map_records import progress

    record = {"map": "close-all", "index": "0", "status": "FAILED", "detail": "{}",
              "item": json.dumps("redis://worker:built-pass-77@cache:6379/0")}
    [p] = progress([map_items.item_outcome(record)])
    assert "built-pass-77" not in p.summary() and "[redacted]" in p.summary()
