"""An items step's list, written where its map reads it (contract/map_items.py).

The function returns a list or yields its items (a generator); either way the items are taken
one at a time, each checked and written as one JSON line to a temporary file, and the file is
then sent as one S3 PutObject (streamed from the file, with the count in the object's
metadata). So the runner holds one item at a time, whatever the count: a generator's list is
never in memory (bench/map_items_memory.py measures it). One PutObject, not a multipart upload:
the largest list (contract/map_items.py MAX_ITEMS lines of at most MAX_ITEM_BYTES) is ~105 MB,
far below PutObject's 5 GB, and the runner task role needs no more than ``s3:PutObject``.

A value that is not a list, an item that is not JSON or too large, or more than MAX_ITEMS items
is a permanent failure of the step, before its map starts, with the reason in the step's log;
nothing is written then (the file is dropped). An exception the generator itself raises is the
function's own: a retryable failure, as from any step. The PutObject is signed by the standard
library (runner/aws_requests.py): the application image needs no boto3, and the runner's
start-up stays the standard library's (bench/runner_start.py).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from urllib.parse import urlparse

from jobplane.contract import map_items


class ItemsError(Exception):
    """The returned value cannot be fanned out: a permanent failure."""


def spool(value: object, into: object, limit: int = map_items.MAX_ITEMS) -> int:
    """Write ``value``'s items as JSON lines to the binary file ``into``; return how many."""
    if (why := map_items.not_a_list(value)) is not None:
        raise ItemsError(why)
    assert isinstance(value, Iterable)
    write = into.write  # type: ignore[attr-defined]
    count = 0
    for item in value:  # a generator runs the function's code here: its own exceptions pass through
        if count >= limit:
            raise ItemsError(f"more than {limit} items: a map takes at most {limit}")
        try:
            write(map_items.line(count, item))
        except map_items.ItemProblem as e:
            raise ItemsError(str(e)) from None
        count += 1
    return count


def write(uri: str, value: object, limit: int = map_items.MAX_ITEMS) -> int:
    """Write ``value`` (the items) to ``uri`` (s3://bucket/key); return how many items."""
    where = urlparse(uri)
    if where.scheme != "s3" or not where.netloc or not where.path.lstrip("/"):
        raise ItemsError(f"{map_items.ENV_ITEMS_URI} is not an s3://bucket/key URI")
    with tempfile.TemporaryFile() as f:
        count = spool(value, f, limit)
        from jobplane.runner import aws_requests

        aws_requests.put_object(where.netloc, where.path.lstrip("/"), f, map_items.CONTENT_TYPE,
                                {map_items.COUNT_METADATA: str(count)})
    return count
