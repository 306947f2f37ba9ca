"""botocore's endpoint data (``endpoints.json``), with each partition's services parsed when first
looked up.

A botocore session parses the whole file (1.2 MB: every service of every partition) before its
first client, though a client consults its own service's entry alone (``EndpointResolver``:
``partition['services']`` looked up by name; iterated only to list a service's endpoints or
every service). That parse was ~12 ms of each ``jobplane run`` before its run could start
(issue 54 item 5, bench/dev_e2e.py). Here the file is parsed without the partitions' service
tables, and a service's entry is parsed from the text on its first lookup; anything that
iterates a table parses the whole table, so every answer is botocore's.

It relies on the file's layout as botocore ships it (pretty-printed, two spaces a level: a
partition's keys at four spaces, its services' names at six). A file that is not laid out so
(another version, a user's AWS_DATA_PATH copy) is parsed whole, as botocore parses it.
tests/test_aws_clients.py holds every service's entry, each table and every endpoint resolved
equal to the whole parse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

#: a partition's service table: ``"services" : {`` at four spaces, to the ``}`` at four spaces
#: (JSON strings hold no raw newline, so a line starting with four spaces and ``}`` is no value's)
_OPEN, _CLOSE = '\n    "services" : {', "\n    }"
_DECODER = json.JSONDecoder()
_PLAIN = re.compile(r"[A-Za-z0-9._-]+")  # a service name as botocore's files spell them


class LazyServices(Mapping[str, Any]):
    """One partition's service table, from ``text[start:end]`` (its ``{`` to its ``}``)."""

    def __init__(self, text: str, start: int, end: int):
        self._text, self._start, self._end = text, start, end
        self._entries: dict[str, Any] = {}
        self._whole: dict[str, Any] | None = None

    def __getitem__(self, name: str) -> Any:
        if self._whole is not None:
            return self._whole[name]
        if name in self._entries:
            return self._entries[name]
        if not _PLAIN.fullmatch(name):  # a name the file might spell escaped: the whole table
            return self._table()[name]
        key = '\n      ' + json.dumps(name) + ' : '
        at = self._text.find(key, self._start, self._end)
        if at < 0:
            raise KeyError(name)
        entry, _ = _DECODER.raw_decode(self._text, at + len(key))
        self._entries[name] = entry
        return entry

    def _table(self) -> dict[str, Any]:
        if self._whole is None:
            self._whole, _ = _DECODER.raw_decode(self._text, self._start)
        return self._whole

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __eq__(self, other: object) -> bool:
        return self._table() == other if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a mapping, as a dict: unhashable


def parse(text: str) -> Any:
    """The endpoint data of ``text``: equal to ``json.loads(text)``, each partition's
    ``services`` a :class:`LazyServices` (a text not laid out as botocore ships it: the whole
    ``json.loads(text)``)."""
    try:
        lazy = _lazy(text)
    except ValueError:  # the skeleton cut where no table was
        lazy = None
    return json.loads(text) if lazy is None else lazy


def _lazy(text: str) -> dict[str, Any] | None:
    tables: list[tuple[int, int]] = []  # each table's "{" and "}" (str.find: a regex took as long as the parse)
    skeleton: list[str] = []
    at = 0
    while (found := text.find(_OPEN, at)) >= 0:
        start = found + len(_OPEN) - 1
        end = text.find(_CLOSE, start)
        if end < 0:
            return None
        end += len(_CLOSE) - 1
        tables.append((start, end))
        skeleton += [text[at:start], "{}"]
        at = end + 1
    skeleton.append(text[at:])
    data = json.loads("".join(skeleton))
    partitions = data.get("partitions") if isinstance(data, dict) else None
    if not tables or not isinstance(partitions, list) or len(partitions) != len(tables) \
            or any(not isinstance(p, dict) or p.get("services") != {} for p in partitions):
        return None  # not the layout looked for
    for partition, (start, end) in zip(partitions, tables):
        partition["services"] = LazyServices(text, start, end + 1)
    return dict(data)
