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

import json
import re
import tempfile
from collections.abc import Iterable, Sequence
from urllib.parse import urlparse

from jobplane.contract import map_items


class ItemsError(Exception):
    """The returned value cannot be fanned out: a permanent failure."""


def secret_pattern(secrets: Sequence[str]) -> re.Pattern[str] | None:
    """A pattern of every secret form (runner/logs.py secret_values), as written and as JSON
    escapes it inside an item's line (a quote or a backslash in a secret)."""
    forms = {s for s in secrets if s} | {json.dumps(s, ensure_ascii=False)[1:-1] for s in secrets if s}
    return re.compile("|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))) if forms else None


def spool(value: object, into: object, limit: int = map_items.MAX_ITEMS, secrets: Sequence[str] = ()) -> int:
    """Write ``value``'s items as JSON lines to the binary file ``into``; return how many.
    ``secrets``: what the step's log redacts (runner/logs.py secret_values); an item holding one
    is refused, naming its index only: the list, the item records, the execution page, the API,
    the alert and a re-run's audit entry would all show it in clear (issue 64 item 4)."""
    if (why := map_items.not_a_list(value)) is not None:
        raise ItemsError(why)
    assert isinstance(value, Iterable)
    secret_re = secret_pattern(secrets)
    write = into.write  # type: ignore[attr-defined]
    count = 0
    for item in value:  # a generator runs the function's code here: its own exceptions pass through
        if count >= limit:
            raise ItemsError(f"more than {limit} items: a map takes at most {limit}")
        try:
            encoded = map_items.line(count, item)
        except map_items.ItemProblem as e:
            raise ItemsError(str(e)) from None
        if secret_re is not None and secret_re.search(encoded.decode()):
            raise ItemsError(f"item {count} holds the value of a secret of the step (one its log redacts): an item "
                             "is shown in clear wherever the run is (the list, the execution page, the alert); pass "
                             "an id and read the secret in the each step")
        write(encoded)
        count += 1
    return count


def write(uri: str, value: object, limit: int = map_items.MAX_ITEMS, secrets: Sequence[str] = ()) -> int:
    """Write ``value`` (the items) to ``uri`` (s3://bucket/key); return how many items. An item
    holding one of ``secrets`` is refused (:func:`spool`)."""
    where = urlparse(uri)
    if where.scheme != "s3" or not where.netloc or not where.path.lstrip("/"):
        raise ItemsError(f"{map_items.ENV_ITEMS_URI} is not an s3://bucket/key URI")
    with tempfile.TemporaryFile() as f:
        count = spool(value, f, limit, secrets)
        f.seek(0)
        from jobplane.runner import aws_requests

        aws_requests.put_object(where.netloc, where.path.lstrip("/"), f, map_items.CONTENT_TYPE,
                                {map_items.COUNT_METADATA: str(count)})
    return count
