"""An items step's list, written where its map reads it (contract/map_items.py).

The function's return value is checked (a list of JSON values, within the map's limits) and
written as one S3 object; anything else is a permanent failure of the step, before its map
starts, with the reason in the step's log. boto3 is imported only here, only for such a step
(the runner's start-up stays the standard library's: bench/runner_start.py).
"""

from __future__ import annotations

from urllib.parse import urlparse

from jobplane.contract import map_items


class ItemsError(Exception):
    """The returned value cannot be fanned out: a permanent failure."""


def write(uri: str, value: object) -> int:
    """Write ``value`` (the items) to ``uri`` (s3://bucket/key); return how many items."""
    if problems := map_items.problems(value):
        raise ItemsError("; ".join(problems))
    assert isinstance(value, (list, tuple))
    where = urlparse(uri)
    if where.scheme != "s3" or not where.netloc or not where.path.lstrip("/"):
        raise ItemsError(f"{map_items.ENV_ITEMS_URI} is not an s3://bucket/key URI")
    import boto3

    boto3.client("s3").put_object(Bucket=where.netloc, Key=where.path.lstrip("/"), Body=map_items.encode(list(value)),
                                  ContentType="application/json")
    return len(value)
