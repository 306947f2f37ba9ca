"""The moto patches that make the local DynamoDB's item store behave as DynamoDB's under
concurrency and at scale: ``dynamodb_atomic_writes``, ``dynamodb_index_queries``,
``dynamodb_sizes_once`` and ``dynamodb_transaction_journal``, registered in
:data:`jobplane.platform.local.moto_patches.PATCHES`. One module because they share their
internals: one lock (``LOCK``: the atomic writes hold it, a transaction's undo and the index
maps' upkeep run under it), one generation counter (``_bump``: every change but a single-item
write starts a new generation, which drops the index maps of ``dynamodb_index_queries`` and the
sizes ``dynamodb_sizes_once`` remembers) and one per-thread scope (a query's candidates, a
transaction's journal). Issue 13: the portal's jobs page took 1-3 s with 1,000 jobs and 20,000
executions; the answers must be the same, only the work behind them differs.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import inspect
import json
import threading
from typing import Any


#: The lock every DynamoDB backend method that reads or writes items holds
#: (``dynamodb_atomic_writes``); a transaction's undo runs under it too, so no reader sees the
#: writes of a transaction that failed.
LOCK = threading.RLock()


#: DynamoDBBackend methods that never change a table's items. Every other public method (writes,
#: table changes, PartiQL, imports, restores, and any method a later moto adds) counts as a change.
_READS = frozenset({
    "default_vpc_endpoint_service", "describe_endpoints", "list_tags_of_resource", "list_tables", "describe_table",
    "get_table_keys_name", "get_keys_value", "get_schema", "get_table", "get_item", "query", "scan",
    "describe_time_to_live", "check_unicity", "describe_continuous_backups", "get_backup", "list_backups",
    "describe_backup", "batch_get_item", "transact_get_items", "describe_import", "describe_export", "list_exports",
    "get_resource_policy", "iter_tagged_resources",
})


_generation = [0]  # bumped before and after every change, so no bucket built meanwhile survives it
_generation_lock = threading.Lock()


def _bump() -> None:
    with _generation_lock:  # concurrent changes must never lose a bump
        _generation[0] += 1


_scope = threading.local()


def _serialise(cls: type, names: tuple[str, ...], lock: threading.RLock | None = None) -> None:
    """Wrap the named methods of a moto backend class in one lock shared by all of them."""
    lock = lock or threading.RLock()
    for name in names:
        original = getattr(cls, name)

        def locked(self, *args, __original=original, **kwargs):
            with lock:
                return __original(self, *args, **kwargs)

        locked.__name__ = "locked"
        setattr(cls, name, locked)


def fix_dynamodb_atomic_writes() -> None:
    """DynamoDB conditional writes are atomic on AWS. In moto 5.2.5 concurrent requests evaluate
    a condition and write without a lock: 50 threads racing one conditional update had several
    winners (docs/local-engine.md, the patches table). One process-wide lock around the write paths -- and
    the reads: transact_write_items deep-copies every table for its rollback, and a read running
    meanwhile ("dictionary changed size during iteration", a 500 from the server in 1 of 100
    concurrent runs, bench/dev_e2e.py) broke it."""
    from moto.dynamodb.models import DynamoDBBackend

    _serialise(DynamoDBBackend, ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item",
                                 "get_item", "query", "scan", "batch_get_item", "transact_get_items",
                                 "create_table", "update_table", "delete_table", "update_time_to_live"),
               lock=LOCK)  # shared with dynamodb_transaction_journal's undo


def _bucket_key(value: Any) -> tuple[str, str]:
    """A hashable form of an index key attribute (a DynamoType). Only string keys are looked up
    (numbers compare by value, "1" = "1.0", which a string key would not)."""
    raw = value.value
    return value.type, raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True, default=str)


def _primary(item: Any) -> tuple[tuple[str, str], tuple[str, str] | None]:
    return _bucket_key(item.hash_key), _bucket_key(item.range_key) if item.range_key is not None else None


def _buckets(table: Any, index: Any, hash_attr: str) -> dict[tuple[str, str], dict[Any, Any]]:
    """The table's items by their value of the index's hash key (each bucket: primary key ->
    item), built once per generation and kept up to date by the single-item writes
    (:func:`_reindexed`)."""
    cached = getattr(table, "_jobplane_buckets", None)
    if cached is None or cached[0] != _generation[0]:
        cached = table._jobplane_buckets = (_generation[0], {})
    by_index = cached[1]
    if index.name not in by_index:
        buckets: dict[tuple[str, str], dict[Any, Any]] = {}
        for entry in table.items.values():
            for item in entry.values() if table.range_key_attr else (entry,):
                value = item.attrs.get(hash_attr)
                if value is not None:
                    buckets.setdefault(_bucket_key(value), {})[_primary(item)] = item
        by_index[index.name] = (hash_attr, buckets)
    return by_index[index.name][1]


def _stored(table: Any, key: Any) -> Any:
    """The item a single-item write names (its key, or the whole item of a put), as stored now."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    try:
        hash_value = DynamoType(key[table.hash_key_attr])
        range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    except (KeyError, TypeError, AttributeError):
        return None  # moto refuses the write itself
    entry = table.items.get(hash_value)  # (.get: the items are a defaultdict)
    return entry if range_value is None or entry is None else entry.get(range_value)


def _reindexed(backend: Any, table_name: Any, key: Any, write: Any) -> Any:
    """Run one single-item write (``write()``) and move that item between the cached buckets of
    its table: where its index keys were before, where they are after (an update changes the
    stored item in place, a put replaces it, a delete removes it). Any other change starts a new
    generation instead."""
    with LOCK:
        table = backend.tables.get(table_name) if isinstance(table_name, str) else None
        cached = getattr(table, "_jobplane_buckets", None) if table is not None else None
        if table is not None:  # a single-item write: the index partitions kept in order are stale
            table._jobplane_edits = getattr(table, "_jobplane_edits", 0) + 1
        if cached is None or cached[0] != _generation[0] or not isinstance(key, dict):
            return write()
        before = _stored(table, key)
        values = {name: before.attrs.get(attr) if before is not None else None for name, (attr, _) in cached[1].items()}
        was = {name: _bucket_key(v) if v is not None else None for name, v in values.items()}
        try:
            return write()
        finally:
            after = _stored(table, key)
            for item in (before, after):
                if item is not None:
                    item.__dict__.pop("_jobplane_size", None)  # sized again (sizes_once)
            for name, (attr, buckets) in cached[1].items():
                if before is not None and was[name] is not None:
                    bucket = buckets.get(was[name])
                    if bucket is not None:
                        bucket.pop(_primary(before), None)
                value = after.attrs.get(attr) if after is not None else None
                if value is not None:
                    buckets.setdefault(_bucket_key(value), {})[_primary(after)] = after


def fix_dynamodb_index_queries() -> None:
    """moto 5.2.5 answers a query on an index by sorting every item of the table by its primary
    key (``Table.all_items``) and then comparing each one's index key with the query's: a
    query for one job's 20 newest runs read all 20,000 executions (~330 ms), the jobs' state
    query ~1 s. DynamoDB reads only the queried partition of the index. Fixed: the query is
    given only the items whose index hash key equals the query's (a map per index, built on the
    first query, kept up to date by single-item puts, updates and deletes, and built again after
    any other change to the tables: the fire ledger's pass, a query and a conditional update
    for each of 1,000 jobs, rebuilt the map 1,000 times); moto's own code still filters, sorts, pages and projects them, so
    the answer is the same (its order is fully set by the index and primary keys, never by the
    order the candidates come in). A query of the table itself is given its partition's items
    the same way (moto sorted the whole table for it too). The sort itself compares each key's cast value once per item
    instead of re-casting both sides of every comparison (the order is the same: moto's
    comparisons are those of the cast values). And the items it answers are not deep-copied:
    the query only reads them (a projection builds new items) and the answer is made of new
    dicts (``dynamo_to_dict``); the copies of the jobs page's 1,000 states outlived each request
    in reference cycles, so full garbage collections of ~300,000 objects paused the process for
    up to 0.9 s (bench/portal.py with gc callbacks). A page of a plain key condition (no range
    condition: a job's 20 newest runs; every 1 MB page of the jobs filed under SUCCEEDED) is
    given only its own items and the one that ends it, from the order moto sorted the partition
    in last, kept until the table changes in any way (a single-item write included): bisected to
    its ExclusiveStartKey, cut at its ``Limit`` + 1 and at the item that takes it past moto's
    1 MB (:func:`_page_slice`). moto still sorts, pages and filters those, and its answer and
    LastEvaluatedKey are the whole partition's (issue 54: the busy job's 10,000 of 100,000
    executions were checked and sorted on each view of its page; issue 66 item 3: each of the
    two 1 MB pages of SUCCEEDED's ~4,400 of 5,000 jobs checked and sorted all of them, and the
    second walked them from the first to its start key). Likewise a first
    page of one range condition on a string sort key (``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``:
    a run's previous run, the run page's definition comparison) is given its first ``Limit`` + 1
    items, bisected from the partition's order by that key, sorted once and kept until the
    table changes (:func:`_range_slice`; the run page took ~200 ms at 5,000 jobs without it).
    Each candidate's index hash key is still compared with the query's by moto
    (``DynamoType.__ne__``, which casts both sides through five type tests): two strings are
    compared as strings (what the cast gives them), and an answer of shared items is copied as
    a list, not walked by ``copy.deepcopy`` item by item (each item's copy is the item itself):
    at 5,000 jobs these were ~45% of counting SUCCEEDED's ~4,400 filed jobs (Select=COUNT, the
    jobs page's status filter: issue 66 item 3). And a page of such a count, once the
    partition's order is kept, is answered from that order and its running sizes alone
    (:func:`_count_page`: the same Count, ScannedCount and LastEvaluatedKey), not by moto's walk
    that projects, filters and collects every item of the page only for their number (the
    count's ~4,400 items: 23 -> 8 ms CPU, most of what is left being the request's own)."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models import table as table_module
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.dynamo_type import Item
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.responses import DynamoHandler

    for name, method in list(vars(DynamoDBBackend).items()):
        if name.startswith("_") or name in _READS or not inspect.isfunction(method):
            continue  # (static methods and properties are no plain functions)

        if name in ("put_item", "update_item", "delete_item"):
            def one_item(self, table_name, key, *args, __original=method, **kwargs):
                return _reindexed(self, table_name, key, lambda: __original(self, table_name, key, *args, **kwargs))

            one_item.__name__ = name
            setattr(DynamoDBBackend, name, one_item)
            continue

        def changes(self, *args, __original=method, **kwargs):
            _bump()
            try:
                return __original(self, *args, **kwargs)
            finally:
                _bump()

        changes.__name__ = name
        setattr(DynamoDBBackend, name, changes)

    all_items, query = Table.all_items, Table.query

    def candidates(self):
        given = getattr(_scope, "candidates", None)
        if given is not None and given[0] is self:
            return list(given[1])
        return all_items(self)

    def indexed_query(self, hash_key, range_comparison, range_objs, limit, exclusive_start_key,
                      scan_index_forward, projection_expressions, index_name=None, consistent_read=False,
                      filter_expression=None, hash_key_conditions=None, range_key_conditions=None, **filter_kwargs):
        args = (hash_key, range_comparison, range_objs, limit, exclusive_start_key, scan_index_forward,
                projection_expressions)
        kwargs = dict(index_name=index_name, consistent_read=consistent_read, filter_expression=filter_expression,
                      hash_key_conditions=hash_key_conditions, range_key_conditions=range_key_conditions,
                      **filter_kwargs)
        index = next((i for i in self.all_indexes() if i.name == index_name), None) if index_name else None
        if index is None and not index_name and hash_key is not None:
            # The table's own partition: moto sorts every item of the table to keep those of one
            # hash key (a run's progress records among 100,000 executions: ~1 s a view of the
            # execution page, bench/portal.py). DynamoDB reads the partition; so do we. moto's
            # code still filters, sorts, pages and projects them, so the answer is the same.
            with LOCK:
                part = self.items.get(hash_key)
                found = ([] if part is None else list(part.values()) if self.range_key_attr else [part])
            _scope.candidates = (self, found)
            try:
                return query(self, *args, **kwargs)
            finally:
                _scope.candidates = None
        hashes = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"] if index else []
        if len(hashes) != 1 or not hash_key_conditions or len(hash_key_conditions) != 1 \
                or hash_key_conditions[0][0] != hashes[0] or hash_key_conditions[0][1].type != "S":
            return query(self, *args, **kwargs)  # the table, a multi-attribute or non-string key: as moto does
        bucket = _bucket_key(hash_key_conditions[0][1])
        with LOCK:
            found = list(_buckets(self, index, hashes[0]).get(bucket, {}).values())
            version = (_generation[0], getattr(self, "_jobplane_edits", 0))
            kept = getattr(self, "_jobplane_sorted", None)
            ordered = kept[1].get((index.name, bucket)) if kept is not None and kept[0] == version else None
        # A page of a plain key condition (no range condition): its answer is the partition's
        # items in index order from the start key on (or, backward, before it), up to ``limit``
        # of them and DynamoDB's 1 MB, and whether more follow. So moto is given only those and
        # the one that stops the page, from the partition's order as moto sorted it since the
        # last change to the table, bisected to the start key (:func:`_page_slice`), instead of
        # the whole partition to check, sort and walk from its start again (a job's 20 newest of
        # its 10,000 runs: bench/portal.py's job page; every page of SUCCEEDED's ~4,400 jobs at
        # 5,000: the jobs page filtered by status, issue 66 item 3).
        plain = range_comparison is None and not filter_kwargs and not range_key_conditions
        if plain and getattr(_scope, "count_only", False) and not projection_expressions and not consistent_read:
            # (a consistent read of a global index is refused by moto's query: left to it)
            # Select=COUNT: only the page's length, ScannedCount and LastEvaluatedKey are answered
            counted = _count_page(self, index, hashes[0], ordered, limit, exclusive_start_key, scan_index_forward,
                                  filter_expression)
            if counted is not None:
                return counted
        sliced = _page_slice(self, index, hashes[0], ordered, limit, exclusive_start_key, scan_index_forward) \
            if plain and ordered is not None else None
        if sliced is None and plain and ordered is not None and limit is not None and exclusive_start_key is None:
            # (an index without one range key: a first page is the first ``limit`` + 1 all the same)
            sliced = ordered[:limit + 1] if scan_index_forward is not False else ordered[-(limit + 1):]
        trimmed = sliced is not None
        if trimmed:
            found = sliced
        elif (ranged := _range_slice(self, index, found, bucket, version, hashes[0], range_comparison, range_objs,
                                     limit, exclusive_start_key, scan_index_forward, filter_kwargs,
                                     range_key_conditions)) is not None:
            # A first page of a range condition on a string sort key (a run's previous run: the
            # job's runs started before it): the partition's kept order, bisected to the items
            # the condition keeps, of which moto is given the first ``limit`` + 1 (its own
            # comparison, sort and paging then run on those, so the answer is the same).
            found, trimmed = ranged, True
        _scope.candidates, _scope.share_items = (self, found), True
        _scope.sorted = [] if plain and not trimmed else None  # moto's order of the partition, kept below
        # a slice of the order moto sorted the partition in is in that order: not sorted again
        _scope.presorted = sliced is not None
        try:
            answer = query(self, *args, **kwargs)
        finally:
            _scope.candidates, _scope.share_items, _scope.presorted = None, False, False
            ordered, _scope.sorted = getattr(_scope, "sorted", None), None
        if ordered is not None and not trimmed:
            with LOCK:
                if (_generation[0], getattr(self, "_jobplane_edits", 0)) == version:  # nothing changed meanwhile
                    kept = getattr(self, "_jobplane_sorted", None)
                    if kept is None or kept[0] != version:
                        kept = self._jobplane_sorted = (version, {})  # the stale ones go
                    kept[1][(index.name, bucket)] = _Ordered(ordered)
        return answer

    def sorted_items(self, hash_key_attrs, range_key_attrs, items):
        if getattr(_scope, "presorted", False):
            return items  # a slice of moto's own sorted order of the partition (a stable sort keeps it)
        attrs = self._generate_attr_to_sort_by(hash_key_attrs, range_key_attrs)
        items.sort(key=lambda x: tuple([_sort_value(x.attrs[a]) for a in attrs]))
        if getattr(_scope, "sorted", None) == []:
            _scope.sorted = list(items)  # ascending (a backward query reverses ``items`` after this)
        return items

    item_deepcopy = Item.__deepcopy__

    def share_or_copy(self, memo):
        return self if getattr(_scope, "share_items", False) else item_deepcopy(self, memo)

    Item.__deepcopy__ = share_or_copy

    equal, unequal = DynamoType.__eq__, DynamoType.__ne__

    def string_eq(self, other):
        if self.type == "S" and getattr(other, "type", None) == "S":
            return self.value == other.value  # a string's cast value is the string
        return equal(self, other)

    def string_ne(self, other):
        if self.type == "S" and getattr(other, "type", None) == "S":
            return self.value != other.value
        return unequal(self, other)

    DynamoType.__eq__, DynamoType.__ne__ = string_eq, string_ne
    handler_query = DynamoHandler.query

    def counting_query(self):
        _scope.count_only = self.body.get("Select") == "COUNT"  # (an answer of the items' number alone)
        try:
            return handler_query(self)
        finally:
            _scope.count_only = False

    counting_query.__name__ = "query"
    DynamoHandler.query = counting_query
    table_module.copy = _SharingCopy(table_module.copy)
    Table.all_items = candidates
    Table.query = indexed_query
    Table.sorted_items = sorted_items


class _SharingCopy:
    """moto's table module's ``copy``, but for a query's answer of shared items (``share_items``,
    :func:`fix_dynamodb_index_queries`): ``deepcopy`` of that list is a new list of the same
    items, which is what ``copy.deepcopy`` made of it, item by item."""

    def __init__(self, module: Any):
        self._module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def deepcopy(self, value: Any, memo: Any = None) -> Any:
        if memo is None and type(value) is list and getattr(_scope, "share_items", False):
            return list(value)
        return self._module.deepcopy(value, memo)


class _Ordered(list):
    """A partition's items in index order, as moto sorted them (ascending), with what
    :func:`_page_slice` bisects by, worked out once per kept order: each item's sort key and the
    running total of their sizes."""

    keys: list[Any] | None = None
    sizes: list[int] | None = None


def _page_slice(table: Any, index: Any, hash_attr: str, ordered: Any, limit: int | None, start_key: Any,
                forward: Any) -> list[Any] | None:
    """For :func:`fix_dynamodb_index_queries`: the items of a page of a plain key condition on an
    index, from the partition's kept order (``ordered``, ascending): those after ``start_key``
    (moto's ExclusiveStartKey; backward, those before it), cut after the item that ends the page
    (the ``limit`` + 1st, or the one that would take the page past moto's 1 MB,
    ``RESULT_SIZE_LIMIT``: moto stops at it, so it must be there). moto then checks, sorts, pages,
    filters and projects those as it would the whole partition: its answer and LastEvaluatedKey
    are the same. None (moto is given the whole partition) for an index without exactly one
    range key, or a start key this cannot place."""
    bounds = _page_bounds(table, index, hash_attr, ordered, limit, start_key, forward)
    return None if bounds is None else list(ordered[bounds[0]:bounds[1]])


def _page_bounds(table: Any, index: Any, hash_attr: str, ordered: Any, limit: int | None, start_key: Any,
                 forward: Any) -> tuple[int, int] | None:
    """:func:`_page_slice`'s positions in ``ordered``: ``ordered[low:high]`` is the slice."""
    import bisect

    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import RESULT_SIZE_LIMIT

    if not isinstance(ordered, _Ordered) or index is None:
        return None
    ranges = [k["AttributeName"] for k in index.schema if k["KeyType"] == "RANGE"]
    if len(ranges) != 1:
        return None
    attrs = table._generate_attr_to_sort_by([hash_attr, table.hash_key_attr], [ranges[0], table.range_key_attr])
    if ordered.keys is None or ordered.sizes is None:
        totals = [0]
        for item in ordered:
            totals.append(totals[-1] + item.size())
        ordered.keys = [tuple(_sort_value(i.attrs[a]) for a in attrs) for i in ordered]
        ordered.sizes = totals
    keys, sizes = ordered.keys, ordered.sizes
    low, high = 0, len(ordered)
    if start_key is not None:
        try:
            start = tuple(_sort_value(DynamoType(start_key[a])) for a in attrs)
        except (KeyError, TypeError, AttributeError, IndexError):
            return None  # moto answers it (or refuses it) from the whole partition
        if forward is not False:
            low = bisect.bisect_right(keys, start)
        else:
            high = bisect.bisect_left(keys, start)
    if forward is not False:  # item j ends the page when sizes[j + 1] - sizes[low] > the limit
        high = min(high, bisect.bisect_right(sizes, sizes[low] + RESULT_SIZE_LIMIT),
                   low + limit + 1 if limit is not None else high)
    else:  # walked from high - 1 down: item j ends it when sizes[high] - sizes[j] > the limit
        low = max(low, bisect.bisect_left(sizes, sizes[high] - RESULT_SIZE_LIMIT) - 1,
                  high - limit - 1 if limit is not None else low)
    return low, max(low, high)


def _count_page(table: Any, index: Any, hash_attr: str, ordered: Any, limit: int | None, start_key: Any,
                forward: Any, filter_expression: Any) -> tuple[list[Any], int, Any] | None:
    """For :func:`fix_dynamodb_index_queries`: a page of a plain key condition on an index asked
    for with ``Select=COUNT``, answered from the partition's kept order without moto's walk of
    its items (the jobs page's status filter counts SUCCEEDED's ~4,400 of 5,000 jobs on each
    view: issue 66 item 3). DynamoDB: "ScannedCount — The number of items evaluated, before any
    QueryFilter is applied"; "Count — The number of items in the response" after the filter;
    the 1 MB a page reads is counted before the filter ("a filter expression is applied after a
    Query finishes, but before the results are returned ... the 1 MB limit applies before the
    filter expression is evaluated"), and LastEvaluatedKey is the key of the last item read when
    the page stops early. So, as moto's own loop does: the page takes the partition's items from
    the start key on while fewer than ``Limit`` are taken and their sizes stay within moto's 1 MB
    (``RESULT_SIZE_LIMIT``; the running totals :func:`_page_bounds` keeps), the item that stops it
    makes the last taken one's key the LastEvaluatedKey (moto's ``_get_last_evaluated_key``),
    ScannedCount is the number taken and Count those the filter keeps, evaluated on each as the
    index projects it (an ``attribute_exists`` / ``attribute_not_exists`` of a top-level name is
    a membership test of the item's attributes: what moto's ``get_type`` decides). The answer's
    items are the stored ones, not copied nor projected: a COUNT answer sends only their number.
    None (moto answers it) when the partition's order is not kept or a page would take nothing."""
    from moto.dynamodb.models.table import RESULT_SIZE_LIMIT

    bounds = _page_bounds(table, index, hash_attr, ordered, limit, start_key, forward)
    if bounds is None:
        return None
    low, high = bounds
    sizes = ordered.sizes
    positions = range(low, high) if forward is not False else range(high - 1, low - 1, -1)
    taken, size, last_key = 0, 0, None
    for j in positions:
        item_size = sizes[j + 1] - sizes[j]
        if taken == limit or size + item_size > RESULT_SIZE_LIMIT:
            if not taken:
                return None  # (moto's own loop fails on it: its answer, whatever it is)
            last = ordered[j - 1] if forward is not False else ordered[j + 1]
            last_key = table._get_last_evaluated_key(last, index.name)
            break
        taken += 1
        size += item_size
    first = low if forward is not False else high - taken
    page = ordered[first:first + taken]
    keep = _filter_test(filter_expression, index)
    return ([item for item in page if keep(item)] if keep is not None else list(page)), taken, last_key


def _filter_test(expression: Any, index: Any) -> Any:
    """What decides whether a FilterExpression keeps a stored item, as moto's query decides it
    (``expression.expr`` of the item as the index projects it); None for no filter."""
    from moto.dynamodb.comparisons import AttributePath, FuncAttrExists, OpDefault, OpNot

    if expression is None or type(expression) is OpDefault:  # (moto's "no filter": keeps every item)
        return None
    projection = (index.projection or {}).get("ProjectionType")
    if projection in ("KEYS_ONLY", "INCLUDE"):
        return lambda item: expression.expr(index.project(item))
    node, negated = (expression.lhs, True) if type(expression) is OpNot else (expression, False)
    if type(node) is FuncAttrExists and type(node.attr) is AttributePath and len(node.attr.path) == 1 \
            and isinstance(node.attr.path[0], str):
        name = node.attr.path[0]  # moto: exists when the item's attributes hold it (any type)
        return (lambda item: name not in item.attrs) if negated else (lambda item: name in item.attrs)
    return expression.expr


#: The range conditions a sorted partition answers by bisection (the key's value against one or two).
_BISECTABLE = frozenset({"<", "<=", ">", ">=", "BETWEEN"})


def _range_slice(table: Any, index: Any, found: list[Any], bucket: Any, version: Any, hash_attr: str,
                 comparison: str | None, values: list[Any], limit: int | None, start_key: Any, forward: Any,
                 filter_kwargs: Any, range_key_conditions: Any) -> list[Any] | None:
    """For :func:`fix_dynamodb_index_queries`: the partition's items a first page of a single
    range condition on a string index sort key can answer from (the first ``limit`` + 1 the
    condition keeps, in the query's direction), from its order sorted once (as moto sorts it)
    and kept until the table changes; None when the query is of another kind (then moto
    answers it all)."""
    import bisect

    if (index is None or limit is None or start_key is not None or filter_kwargs or comparison not in _BISECTABLE
            or (range_key_conditions and len(range_key_conditions) > 1) or any(v.type != "S" for v in values)):
        return None
    ranges = [k["AttributeName"] for k in index.schema if k["KeyType"] == "RANGE"]
    if len(ranges) != 1:
        return None
    attr, slot = ranges[0], (index.name, bucket, "by range")
    with LOCK:
        kept = getattr(table, "_jobplane_sorted", None)
        known = kept[1].get(slot) if kept is not None and kept[0] == version else None
    if known is None:
        members = [i for i in found if i.attrs.get(attr) is not None]  # an item without it is not in the index
        if any(i.attrs[attr].type != "S" for i in members):
            return None
        ordered = table.sorted_items([hash_attr, table.hash_key_attr], [attr, table.range_key_attr], members)
        known = (ordered, [i.attrs[attr].value for i in ordered])
        with LOCK:
            if (_generation[0], getattr(table, "_jobplane_edits", 0)) == version:  # nothing changed meanwhile
                kept = getattr(table, "_jobplane_sorted", None)
                if kept is None or kept[0] != version:
                    kept = table._jobplane_sorted = (version, {})
                kept[1][slot] = known
    ordered, keys = known
    low, high = 0, len(ordered)
    first = values[0].value
    if comparison == "<":
        high = bisect.bisect_left(keys, first)
    elif comparison == "<=":
        high = bisect.bisect_right(keys, first)
    elif comparison == ">":
        low = bisect.bisect_right(keys, first)
    elif comparison == ">=":
        low = bisect.bisect_left(keys, first)
    else:  # BETWEEN
        low, high = bisect.bisect_left(keys, first), bisect.bisect_right(keys, values[1].value)
    chosen = ordered[low:max(low, high)]
    return chosen[:limit + 1] if forward is not False else chosen[-(limit + 1):]


def _sort_value(value: Any) -> Any:
    """What moto's ``cast_value`` gives, without its five type tests for a string key (index
    keys are strings, numbers or binaries; a string casts to itself)."""
    return value.value if value.type == "S" else value.cast_value


def fix_dynamodb_sizes_once() -> None:
    """moto 5.2.5 sizes each item a query or scan reads twice (for the 1 MB page limit: once to
    test, once to add), walking every attribute value each time: ~1/4 of the local store's work
    for the jobs' state query. Fixed: an item's size is computed once per generation of the
    tables (any change starts a new one, see :func:`_bump`), so a page read again between changes
    costs no sizing at all. The pages and their ``LastEvaluatedKey`` are the same."""
    from moto.dynamodb.models.dynamo_type import Item

    size = Item.size

    def remembered(self):
        # Kept on the item itself, so it goes with the item: a table of sizes would keep every
        # item it ever sized alive (the answers' projected items too) until the next change.
        generation = _generation[0]
        known = getattr(self, "_jobplane_size", None)
        if known is not None and known[0] == generation:
            return known[1]
        value = size(self)
        self._jobplane_size = (generation, value)
        return value

    Item.size = remembered


def fix_dynamodb_transaction_journal() -> None:
    """moto 5.2.5 makes TransactWriteItems all-or-nothing by deep-copying each table the
    transaction names, once per action, before it starts, and putting the copies back if an
    action fails. The copy is of every item in the table: with 25,000 items (a few weeks of
    `jobplane dev`, or bench/portal.py's store) one transaction took 2.4 s, and every run ends in
    one (the record and the claim's release). Each copy was also kept for ever, as a tracked
    model (see ``dynamodb_items_untracked``): two full tables per transaction. Fixed: the
    transaction keeps an undo journal instead, the item each of its writes replaces (or that
    there was none), and a failed transaction puts those back, all under the one DynamoDB lock,
    so no reader sees its partial writes. moto still decides every outcome (conditions, the
    cancellation reasons, the same key twice); only what it copies changes. No stream is
    enabled on the local table (a rolled-back write's stream record would remain)."""
    import copy

    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    def table_deepcopy(self, memo):
        if getattr(_scope, "journal", None) is not None:
            return self  # moto's rollback copy: the journal stands in for it
        return copy._reconstruct(self, memo, *self.__reduce_ex__(4))  # as without __deepcopy__

    def remember(backend, table_name, key):
        journal = getattr(_scope, "journal", None)
        table = backend.tables.get(table_name) if journal is not None else None
        if table is None or not isinstance(key, dict):
            return
        try:
            hash_value = DynamoType(key[table.hash_key_attr])
            range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        except (KeyError, TypeError):
            return  # moto refuses the write itself, before it changes anything
        slot = (table_name, hash_value, range_value)
        if slot in journal:
            return
        bucket = table.items.get(hash_value)  # (.get: the items are a defaultdict)
        current = bucket if range_value is None else (bucket or {}).get(range_value)
        journal[slot] = (table, bucket is not None, copy.deepcopy(current))

    def undo(journal):
        for (_, hash_value, range_value), (table, bucket_existed, original) in journal.items():
            if range_value is None:
                if original is None:
                    table.items.pop(hash_value, None)
                else:
                    table.items[hash_value] = original
                continue
            bucket = table.items[hash_value]
            if original is not None:
                bucket[range_value] = original
                continue
            bucket.pop(range_value, None)
            if not bucket and not bucket_existed:
                del table.items[hash_value]

    put_item, update_item, delete_item = DynamoDBBackend.put_item, DynamoDBBackend.update_item, DynamoDBBackend.delete_item

    def journaled_put(self, table_name, item_attrs, *args, **kwargs):
        remember(self, table_name, item_attrs)
        return put_item(self, table_name, item_attrs, *args, **kwargs)

    def journaled_update(self, table_name, key, *args, **kwargs):
        remember(self, table_name, key)
        return update_item(self, table_name, key, *args, **kwargs)

    def journaled_delete(self, table_name, key, *args, **kwargs):
        remember(self, table_name, key)
        return delete_item(self, table_name, key, *args, **kwargs)

    transact_write_items = DynamoDBBackend.transact_write_items

    def transact(self, transact_items):
        with LOCK:
            _scope.journal = journal = {}
            try:
                return transact_write_items(self, transact_items)
            except BaseException:
                undo(journal)
                raise
            finally:
                _scope.journal = None
                _bump()

    Table.__deepcopy__ = table_deepcopy
    DynamoDBBackend.put_item, DynamoDBBackend.update_item = journaled_put, journaled_update
    DynamoDBBackend.delete_item, DynamoDBBackend.transact_write_items = journaled_delete, transact
