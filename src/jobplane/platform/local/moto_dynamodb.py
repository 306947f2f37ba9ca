"""moto fixes that make the local DynamoDB answer reads at the cost DynamoDB's own design
implies (issue 13: the portal's jobs page took 1-3 s with 1,000 jobs and 20,000 executions).

Each is registered in :data:`jobplane.platform.local.moto_fixes.FIXES`, pinned to its
``MOTO_VERSION``, and probed stock-vs-fixed by tests/test_moto_fixes.py: the answers must be the
same, only the work behind them differs.

Not type-checked (``[tool.mypy]`` in pyproject.toml: ``ignore_errors``): it reaches into moto's
untyped internals; its stock-vs-fixed probes in tests/moto_probe.py hold it instead.
"""

from __future__ import annotations

import inspect
import json
import threading
from typing import Any

from jobplane.contract.types import JsonObject

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
    order the candidates come in). The sort itself compares each key's cast value once per item
    instead of re-casting both sides of every comparison (the order is the same: moto's
    comparisons are those of the cast values). And the items it answers are not deep-copied:
    the query only reads them (a projection builds new items) and the answer is made of new
    dicts (``dynamo_to_dict``); the copies of the jobs page's 1,000 states outlived each request
    in reference cycles, so full garbage collections of ~300,000 objects paused the process for
    up to 0.9 s (bench/portal.py with gc callbacks)."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import Item
    from moto.dynamodb.models.table import Table

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
        hashes = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"] if index else []
        if len(hashes) != 1 or not hash_key_conditions or len(hash_key_conditions) != 1 \
                or hash_key_conditions[0][0] != hashes[0] or hash_key_conditions[0][1].type != "S":
            return query(self, *args, **kwargs)  # the table, a multi-attribute or non-string key: as moto does
        with LOCK:
            found = list(_buckets(self, index, hashes[0]).get(_bucket_key(hash_key_conditions[0][1]), {}).values())
        _scope.candidates, _scope.share_items = (self, found), True
        try:
            return query(self, *args, **kwargs)
        finally:
            _scope.candidates, _scope.share_items = None, False

    def sorted_items(self, hash_key_attrs, range_key_attrs, items):
        attrs = self._generate_attr_to_sort_by(hash_key_attrs, range_key_attrs)
        items.sort(key=lambda x: tuple([_sort_value(x.attrs[a]) for a in attrs]))
        return items

    item_deepcopy = Item.__deepcopy__

    def share_or_copy(self, memo):
        return self if getattr(_scope, "share_items", False) else item_deepcopy(self, memo)

    Item.__deepcopy__ = share_or_copy
    Table.all_items = candidates
    Table.query = indexed_query
    Table.sorted_items = sorted_items


def _sort_value(value: Any) -> Any:
    """What moto's ``cast_value`` gives, without its five type tests for a string key (index
    keys are strings, numbers or binaries; a string casts to itself)."""
    return value.value if value.type == "S" else value.cast_value


#: Keys of a read's answer that hold items (AttributeValue maps), passed through as they are.
_ITEM_KEYS = ("Items", "Item", "LastEvaluatedKey", "Responses")
_FAST_OPERATIONS = frozenset({"Query", "Scan", "GetItem", "BatchGetItem"})


def _wire_ready(value: Any) -> bool:
    """True when ``value`` (moto's item dicts) is already what DynamoDB's JSON protocol sends:
    strings, booleans, lists and maps only. Binary values (bytes, which the protocol sends as
    base64) and anything else are left to moto's serializer."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _wire_ready(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_wire_ready(v) for v in value)
    return isinstance(value, (str, bool))


def _flat_items(result: Any) -> JsonObject | None:
    """A Query, Scan or GetItem answer's ``Items`` / ``Item`` as DynamoDB's wire form, when every
    value of every item is a string, number, boolean or null (moto keeps these as ``str`` or
    ``bool``); None for anything else (a binary, a set, a list or map, another kind of answer),
    which moto converts as it does."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    if not isinstance(result, dict):
        return None
    out: JsonObject = {}
    for key in ("Items", "Item"):
        held = result.get(key)
        if held is None:
            continue
        items = held if key == "Items" else [held]
        if not isinstance(items, list):
            return None
        flat = []
        for item in items:
            if not isinstance(item, dict):
                return None
            wire = {}
            for name, value in item.items():
                if type(value) is not DynamoType or type(name) is not str or value.type == "B" \
                        or type(value.value) not in (str, bool):
                    return None
                wire[name] = {value.type: value.value}
            flat.append(wire)
        out[key] = flat if key == "Items" else flat[0]
    return out or None


def fix_dynamodb_fast_answers() -> None:
    """moto 5.2.5 serialises every answer by walking botocore's shape model value by value: for
    the 1,000 job states of the jobs page that took ~3 s of the request (cProfile; 270,000 shape
    lookups). A read's items are stored as DynamoDB's wire form already (``{"S": "..."}``,
    numbers as strings), so Query, Scan, GetItem and BatchGetItem answers made only of such
    values are written with ``json.dumps``; the rest of the answer (counts, consumed capacity)
    still goes through moto's serializer, and an answer holding a binary value entirely."""
    from moto.dynamodb.responses import DynamoResult

    original, init = DynamoResult.execute_result, DynamoResult.__init__

    def converted(self, result):
        """moto converts the answer's stored values to plain dicts value by value first
        (``dynamo_to_dict``); items of flat strings, numbers, booleans and nulls are converted
        in one step here and known to be wire-ready, so they are not checked again below."""
        flat = _flat_items(result)
        if flat is None:
            init(self, result)
            self._jobplane_ready = False
        else:
            init(self, {k: v for k, v in result.items() if k not in flat})
            self._result.update(flat)
            self._jobplane_ready = True

    def execute_result(self, context):
        result = self.result
        if context.operation_model.name not in _FAST_OPERATIONS or not isinstance(result, dict):
            return original(self, context)
        held = {k: result[k] for k in _ITEM_KEYS if result.get(k) is not None}
        if not getattr(self, "_jobplane_ready", False) and not _wire_ready(held):
            return original(self, context)
        rest = DynamoResult.__new__(DynamoResult)
        rest._result = {k: v for k, v in result.items() if k not in held}
        status, headers, body = original(rest, context)
        answer = json.loads(body) if body else {}
        answer.update(held)
        return status, headers, json.dumps(answer)

    DynamoResult.__init__ = converted
    DynamoResult.execute_result = execute_result


def fix_dynamodb_fast_projection() -> None:
    """moto 5.2.5 projects an item by converting the whole item to plain Python once per
    projected attribute (``Item.to_regular_json`` inside the loop), then serialising the result
    back into a new item whose every insert re-sizes all attributes before it: the jobs' state
    query (13 attributes of 1,000 items) took ~4x as long with a projection as without one. Fixed
    for the common form, a list of top-level attribute names: the new item takes those
    attributes as stored, in the expression's order (moto's own order), and a missing one is
    left out as before. Nested paths and list elements (``a.b``, ``a[1]``) still go through
    moto's code. The one difference is an improvement: a string, number or binary set keeps its
    stored order instead of a Python set's (DynamoDB sets have no order)."""
    from moto.dynamodb.models.dynamo_type import Item, LimitedSizeDict

    original = Item.project
    # A query projects each of its items with the same list: whether it is all top-level names
    # is decided once per list, not once per item (13 names x 1,000 items on the jobs page).
    # The list itself is held, so its identity cannot pass to another list; the pair is one
    # tuple, read and replaced whole, so threads never mix one list's answer with another's.
    last: list[tuple[Any, bool]] = [(None, False)]

    def top_level_names(projection_expressions):
        seen, simple = last[0]
        if seen is not projection_expressions:
            simple = all(len(path) == 1 and "[" not in path[0] for path in projection_expressions)
            last[0] = (projection_expressions, simple)
        return simple

    def project(self, projection_expressions):
        if not top_level_names(projection_expressions):
            return original(self, projection_expressions)
        result = Item.__new__(Item)
        result.hash_key, result.range_key = self.hash_key, self.range_key
        attrs = LimitedSizeDict.__new__(LimitedSizeDict)  # no larger than the stored item: no size check
        dict.__init__(attrs)
        for (name,) in projection_expressions:
            value = self.attrs.get(name)
            if value is not None:
                dict.__setitem__(attrs, name, value)  # read only: the answer is made of new dicts
        result.attrs = attrs
        return result

    Item.project = project


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


def fix_dynamodb_items_untracked() -> None:
    """moto 5.2.5 appends every model object it ever creates to its class's ``instances_tracked``
    list (``BaseModel.__new__``), for its ``/moto-api/`` dashboard, and never removes one: every
    item a query copies or projects for its answer stays in memory for the life of the process.
    The jobs page alone left 1,000 items behind per view; the heap grew by ~2 objects per item
    read, and each full garbage collection, walking them all, paused the local AWS for 100-150 ms
    (the page's p95). ``jobplane dev`` never serves ``/moto-api/`` (see front.py), so a DynamoDB
    item is simply not tracked: it lives as long as the table or the answer that holds it."""
    from moto.dynamodb.models.dynamo_type import Item

    untrack(Item)


def untrack(*classes: type) -> None:
    """New objects of these moto model classes are not added to ``instances_tracked`` (moto's
    ``BaseModel.__new__`` without the tracking), and those tracked so far are let go."""
    for cls in classes:
        cls.__new__ = _untracked_new
        cls.instances_tracked.clear()


def _untracked_new(cls, *args, **kwargs):
    return object.__new__(cls)


#: The lock every DynamoDB backend method that reads or writes items holds (moto_fixes'
#: ``dynamodb_atomic_writes``); a transaction's undo runs under it too, so no reader sees the
#: writes of a transaction that failed.
LOCK = threading.RLock()


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
