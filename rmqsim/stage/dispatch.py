"""The allocation stage: strategies run over Arrow batches of (topic, group) rows.

Each input row (schemas.GROUP_ROUTES) carries one group's compact route and sorted client list.
Spark hands the stage whole Arrow record batches (mapInArrow): list columns arrive as offsets plus
flat values, which is exactly the CSR layout strategies work on, and output columns are built with
Arrow `take`, so no string becomes a Python object on the hot path. (mapInPandas would turn every
list into a numpy array of Python strings and back; measured in bench/, that cost more than the
allocation itself.) The functions here are plain module-level functions over pyarrow batches, so
tests call them without Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema

from rmqsim import schemas, skew
from rmqsim import strategies as registry
from rmqsim.strategies import Allocation, Callers, GroupBatch, distinct_callers, lag_balanced, sticky
from rmqsim.strategies.batch import (
    _offsets,
    as_objects,
    batch_client_codes,
    concat_allocations,
    duplicate_client_counts,
    take,
)
from rmqsim.strategies.config import ConfigLists

CLIENT_QUEUES_ARROW = to_arrow_schema(schemas.CLIENT_QUEUES)
OWNED_ARROW = CLIENT_QUEUES_ARROW.field("owned").type


def _list_column(batch: pa.RecordBatch, name: str) -> tuple[np.ndarray, pa.Array]:
    """A list column as (offsets from 0, flat values); a null list counts as empty."""
    column = batch.column(name)
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy().astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, pc.list_flatten(column)


class LazyParams(dict):
    """Strategy parameters built on first use: most batches never need rooms or CONFIG lists."""

    def __init__(self, factories: dict[str, Callable[[], np.ndarray]]) -> None:
        super().__init__()
        self._factories = factories

    def __missing__(self, key: str) -> np.ndarray:
        value = self[key] = self._factories[key]()
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._factories or dict.__contains__(self, key)

    def get(self, key: str, default: object = None) -> object:
        return self[key] if key in self else default


def _objects(values: list) -> np.ndarray:
    # One element per value even when the values are equal-length lists (np.array would stack them).
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out


def _config_lists(rows: pa.RecordBatch, client_offsets: np.ndarray) -> ConfigLists:
    """Each flat client's CONFIG list, flat and in Arrow.

    A row whose ``client_configs`` is null (no queue_config table) gives all its clients null lists."""
    column = rows.column("client_configs")
    valid = np.repeat(pc.is_valid(column).to_numpy(zero_copy_only=False), np.diff(client_offsets))
    per_client = pc.list_flatten(column)  # one list per client of a row that has them
    if len(per_client) != valid.sum():
        raise ValueError("client_configs must hold one list per client id")
    lengths = np.zeros(len(valid), dtype=np.int64)
    lengths[valid] = pc.fill_null(pc.list_value_length(per_client), 0).to_numpy()
    null = np.ones(len(valid), dtype=bool)
    null[valid] = per_client.is_null().to_numpy(zero_copy_only=False)
    entries = pc.list_flatten(per_client)
    return ConfigLists(
        offsets=_offsets(lengths),
        broker=pc.struct_field(entries, "broker_name"),
        queue_id=pc.fill_null(pc.struct_field(entries, "queue_id"), -1).to_numpy().astype(np.int64),
        null=null,
    )


def to_batch(rows: pa.RecordBatch) -> GroupBatch:
    broker_offsets, broker_names = _list_column(rows, "broker_names")
    _, read_queue_nums = _list_column(rows, "read_queue_nums")
    _, broker_rooms = _list_column(rows, "broker_rooms")
    client_offsets, client_ids = _list_column(rows, "client_ids")
    nums = read_queue_nums.to_numpy(zero_copy_only=False).astype(np.int64)
    queue_broker_index = np.repeat(np.arange(len(nums), dtype=np.int64), nums)
    params = LazyParams(
        {
            "virtual_node_cnt": lambda: rows.column("virtual_node_cnt").to_numpy().astype(np.int64),
            "consumer_idcs": lambda: _objects(rows.column("consumer_idcs").to_pylist()),
            "inner_strategy": lambda: np.asarray(rows.column("inner_strategy").to_pylist(), dtype=object),
            # Left in Arrow: finding a blank room there is cheap, in Python objects it was not.
            "queue_room": lambda: take(broker_rooms, queue_broker_index),
            "client_room": lambda: _list_column(rows, "client_rooms")[1],
            "client_config": lambda: _config_lists(rows, client_offsets),
        }
    )
    return GroupBatch.from_routes(
        topics=rows.column("topic"),
        broker_offsets=broker_offsets,
        broker_names=broker_names,
        read_queue_nums=nums,
        client_offsets=client_offsets,
        client_ids=client_ids,
        params=params,
    )


@dataclass(frozen=True)
class Allocated:
    """One strategy over the rows of a batch that run it: callers (distinct clients of those
    rows), the queues they own, and each caller's error."""

    strategy: str
    batch: GroupBatch
    callers: Callers
    allocation: Allocation
    errors: np.ndarray
    rows: np.ndarray  # the batch rows that run it, client-less ones included
    stale: np.ndarray | None = None  # callers computing from a stale view (stale_view phases)


def rows_by_strategy(rows: pa.RecordBatch) -> dict[str, np.ndarray]:
    """Which rows run which strategy (each row lists its strategies)."""
    offsets, flat = _list_column(rows, "strategies")
    row_of_entry = np.repeat(np.arange(rows.num_rows, dtype=np.int64), np.diff(offsets))
    encoded = pc.dictionary_encode(flat)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    names = encoded.dictionary.to_pylist()
    return {name: np.unique(row_of_entry[codes == i]) for i, name in enumerate(names)}


def allocate_rows(rows: pa.RecordBatch) -> list[Allocated]:
    """Every strategy a row asks for, each run once over all the rows that ask for it.

    The route and client lists are expanded once per batch, whatever the number of strategies.
    """
    batch = to_batch(rows)
    everyone = distinct_callers(batch)
    runs = rows_by_strategy(rows)
    if lag_balanced.NAME in runs:
        batch.params[lag_balanced.BACKLOG] = queue_backlogs(rows, batch)[0]
    listens = broadcasting(rows)
    out = []
    for name, row_ids in runs.items():
        callers = everyone.take(np.isin(everyone.group, row_ids))
        listening = listens[callers.group]
        if name == sticky.NAME:
            allocation, errors = sticky_by_phase(rows, batch, callers)
        elif not listening.any():
            allocation, errors = registry.allocate(registry.get(name), batch, callers)
        else:
            # BROADCASTING groups do not balance: every client reads every queue.
            clustering = np.flatnonzero(~listening)
            allocated, sub_errors = registry.allocate(registry.get(name), batch, callers.take(clustering))
            everyone_reads = np.flatnonzero(listening)
            g = callers.group[everyone_reads]
            broadcast = Allocation.from_runs(batch.queue_offsets[g], batch.queue_counts[g])
            allocation = concat_allocations(
                [
                    allocated.select_callers(clustering, len(callers)),
                    broadcast.select_callers(everyone_reads, len(callers)),
                ],
                batch,
                len(callers),
            )
            errors = np.full(len(callers), None, dtype=object)
            errors[clustering] = sub_errors
        out.append(Allocated(name, batch, callers, allocation, errors, row_ids))
    return with_stale_views(rows, out)


def sticky_by_phase(
    rows: pa.RecordBatch, batch: GroupBatch, callers: Callers
) -> tuple[Allocation, np.ndarray]:
    """STICKY over a batch's phases in order: each phase starts from the assignment STICKY made in
    the phase before for the same (scenario, topic, group) (none in phase 0: AVG's blocks).

    BROADCASTING groups read everything under STICKY too."""
    strategy = registry.get(sticky.NAME)
    phase = rows.column("phase").to_numpy(zero_copy_only=False).astype(np.int64)
    entity = row_codes(rows, "scenario", "group", "topic")
    _, broker = np.unique(as_objects(batch.queue_broker), return_inverse=True)
    queue_key = pd.MultiIndex.from_arrays([entity[batch.queue_group], broker, batch.queue_id])
    client_code = batch_client_codes(batch)
    first_position = _first_positions(batch, client_code)
    listens = broadcasting(rows)
    previous = np.full(len(batch.queue_id), -1, np.int64)
    batch.params[sticky.PREVIOUS] = previous
    parts: list[Allocation] = []
    errors = np.full(len(callers), None, dtype=object)
    last_owner: pd.Series | None = None  # (entity, broker, queue id) -> client code, last phase
    for p in np.unique(phase):
        these = np.flatnonzero(phase[callers.group] == p)
        if not len(these):  # every client had left (phases.with_left_subscriptions): no owner to keep
            last_owner = None
            continue
        rows_now = np.unique(callers.group[these])
        flat = np.flatnonzero(np.isin(batch.queue_group, rows_now))
        previous[flat] = -1
        if last_owner is not None and len(flat):
            code = last_owner.reindex(queue_key[flat]).to_numpy()
            known = ~np.isnan(code)
            # The old owner's first position in today's cidAll, if it is still there.
            g = batch.queue_group[flat[known]]
            found = first_position.reindex(
                pd.MultiIndex.from_arrays([g, code[known].astype(np.int64)])
            ).to_numpy()
            previous[flat[known]] = np.where(np.isnan(found), -1, found).astype(np.int64)
        cluster = these[~listens[callers.group[these]]]
        allocated, sub_errors = registry.allocate(strategy, batch, callers.take(cluster))
        clustered = allocated.select_callers(cluster, len(callers))
        parts.append(clustered)
        errors[cluster] = sub_errors
        reading = these[listens[callers.group[these]]]
        if len(reading):
            g = callers.group[reading]
            everything = Allocation.from_runs(batch.queue_offsets[g], batch.queue_counts[g])
            parts.append(everything.select_callers(reading, len(callers)))
        last_owner = pd.Series(
            client_code[callers.client[clustered.caller]], index=queue_key[clustered.queue]
        )
        last_owner = last_owner[~last_owner.index.duplicated()]
    return concat_allocations(parts, batch, len(callers)), errors


def with_stale_views(rows: pa.RecordBatch, allocated: list[Allocated]) -> list[Allocated]:
    """In stale_view phases, the stale clients' shares replaced by what they got in the view
    phase (the same scenario, group and topic, phase ``view_phase``), whatever the others do.

    BROADCASTING groups are left as they are. A stale client absent from the view's cidAll, or
    whose topic had no route then, gets nothing;
    a queue of the old view that is gone from today's mqAll stays in its list (it still pulls from
    it) but outside mqAll, so it counts neither as owned twice nor as covering anyone's queue.
    """
    stale_offsets, stale_ids = _list_column(rows, "stale_clients")
    if not allocated or len(stale_ids) == 0:
        return allocated
    batch = allocated[0].batch
    n = rows.num_rows
    # A BROADCASTING client reads every queue in any view: no queue is read twice or by nobody.
    has_stale = (np.diff(stale_offsets) > 0) & ~broadcasting(rows)
    entity = row_codes(rows, "scenario", "group", "topic")
    phase = rows.column("phase").to_numpy(zero_copy_only=False).astype(np.int64)
    view_phase = pc.fill_null(rows.column("view_phase"), -1).to_numpy(zero_copy_only=False).astype(np.int64)
    row_at = pd.Series(np.arange(n, dtype=np.int64), index=pd.MultiIndex.from_arrays([entity, phase]))
    view_row = _found(row_at, [entity, view_phase])
    stale_row = np.repeat(np.arange(n, dtype=np.int64), np.diff(stale_offsets))
    stale_key = pd.MultiIndex.from_arrays([stale_row, as_objects(stale_ids)])
    fq = np.flatnonzero(has_stale[batch.queue_group])
    queue_at = pd.Series(
        fq,
        index=pd.MultiIndex.from_arrays(
            [batch.queue_group[fq], as_objects(take(batch.queue_broker, fq)), batch.queue_id[fq]]
        ),
    )
    return [_stale_view(a, has_stale, view_row, stale_key, queue_at) for a in allocated]


def _found(table: pd.Series, keys: list[np.ndarray]) -> np.ndarray:
    """table's values at ``keys`` (a MultiIndex's levels), -1 where absent."""
    if not len(keys[0]):
        return np.zeros(0, np.int64)
    values = table.reindex(pd.MultiIndex.from_arrays(keys)).to_numpy()
    return np.where(np.isnan(values), -1, values).astype(np.int64)


def _stale_view(
    a: Allocated, has_stale: np.ndarray, view_row: np.ndarray, stale_key: pd.MultiIndex, queue_at: pd.Series
) -> Allocated:
    batch, callers, alloc = a.batch, a.callers, a.allocation
    g = callers.group
    involved = np.flatnonzero(has_stale[g])
    ids = as_objects(take(batch.client_ids, callers.client[involved]))
    is_stale = pd.MultiIndex.from_arrays([g[involved], ids]).isin(stale_key)
    stale = np.zeros(len(callers), dtype=bool)
    stale[involved[is_stale]] = True
    k = involved[is_stale]
    if not len(k):
        return replace(a, stale=stale)
    # Each stale caller's caller in the view row (same client id), -1 where it was not there.
    in_view = np.flatnonzero(np.isin(g, view_row[g[k]]))
    view_ids = as_objects(take(batch.client_ids, callers.client[in_view]))
    view_caller = pd.Series(in_view, index=pd.MultiIndex.from_arrays([g[in_view], view_ids]))
    source = _found(view_caller, [view_row[g[k]], ids[is_stale]])
    k, source = k[source >= 0], source[source >= 0]
    # The view caller's entries, in the order the strategy returned them, renamed to the stale caller.
    order = np.argsort(alloc.caller, kind="stable")
    count = np.bincount(alloc.caller, minlength=len(callers))
    start = np.concatenate([[0], np.cumsum(count)])[source]
    taken = count[source]
    within = np.arange(taken.sum(), dtype=np.int64) - np.repeat(np.cumsum(taken) - taken, taken)
    entries = order[np.repeat(start, taken) + within]
    new_caller = np.repeat(k, taken)
    brokers = as_objects(alloc.brokers(batch))
    queue_ids = alloc.queue_ids(batch).astype(np.int64)
    queue = _found(queue_at, [g[new_caller], brokers[entries], queue_ids[entries]])
    keep = ~stale[alloc.caller]
    explicit = alloc.broker is not None or (queue < 0).any()
    errors = a.errors.copy()
    errors[involved[is_stale]] = None
    errors[k] = a.errors[source]
    allocation = Allocation(
        np.concatenate([alloc.caller[keep], new_caller]),
        np.concatenate([alloc.queue[keep], queue]),
        np.concatenate([brokers[keep], brokers[entries]]) if explicit else None,
        np.concatenate([queue_ids[keep], queue_ids[entries]]) if explicit else None,
        alloc.null_result,
    )
    return replace(a, allocation=allocation, errors=errors, stale=stale)


def _first_positions(batch: GroupBatch, client_code: np.ndarray) -> pd.Series:
    """(group, client code) -> the cidAll position of that client's first copy in the group."""
    position_group = np.repeat(np.arange(batch.n_groups, dtype=np.int64), batch.client_counts)
    within = np.arange(len(client_code)) - batch.client_offsets[position_group]
    table = pd.Series(within, index=pd.MultiIndex.from_arrays([position_group, client_code]))
    return table[~table.index.duplicated()]  # a duplicated id's first position


def _take(column: pa.Array, indices: np.ndarray) -> pa.Array:
    return column.take(pa.array(indices, type=pa.int64()))


def _constant(value: str, n: int) -> pa.Array:
    return pa.array([value], type=pa.string()).take(pa.array(np.zeros(n, dtype=np.int64)))


def _keys(rows: pa.RecordBatch, strategy: str, group: np.ndarray) -> list[pa.Array]:
    """scenario, phase, strategy, topic, group for each output row of input row ``group``."""
    scenario, phase = (_take(rows.column(k), group) for k in ("scenario", "phase"))
    topic, grp = (_take(rows.column(k), group) for k in ("topic", "group"))
    return [scenario, phase, _constant(strategy, len(group)), topic, grp]


def queue_backlogs(rows: pa.RecordBatch, batch: GroupBatch) -> tuple[np.ndarray, np.ndarray]:
    """(backlog of every flat queue, 0 where unknown; whether each row has offsets at all)."""
    column = rows.column("backlogs")
    has = pc.is_valid(column).to_numpy(zero_copy_only=False)
    out = np.zeros(len(batch.queue_id), dtype=np.int64)
    offsets, flat = _list_column(rows, "backlogs")
    if len(flat) == 0 or len(out) == 0:
        return out, has
    names = pd.Index(pd.unique(as_objects(batch.queue_broker)))
    n_b = len(names) + 1

    def key(row: np.ndarray, broker: np.ndarray, queue_id: np.ndarray) -> np.ndarray:
        return (row * n_b + broker) * (1 << 32) + queue_id

    flat_queues = key(batch.queue_group, names.get_indexer(as_objects(batch.queue_broker)), batch.queue_id)
    entry_row = np.repeat(np.arange(rows.num_rows, dtype=np.int64), np.diff(offsets))
    broker = names.get_indexer(as_objects(flat.field("broker_name")))
    queue_id = pc.fill_null(flat.field("queue_id"), -1).to_numpy().astype(np.int64)
    at = pd.Index(flat_queues).get_indexer(key(entry_row, broker, queue_id))
    found = (broker >= 0) & (queue_id >= 0) & (at >= 0)
    backlog = pc.fill_null(flat.field("backlog"), 0).to_numpy().astype(np.int64)
    # Reversed, so that the first row reported for a queue is the one that stays.
    out[at[found][::-1]] = backlog[found][::-1]
    return out, has


def _owned_lists(a: Allocated) -> pa.ListArray:
    """Each caller's queues as a list, in the order the strategy returned them."""
    caller = a.allocation.caller
    order = pa.array(np.argsort(caller, kind="stable"), type=pa.int64())
    offsets = np.zeros(len(a.callers) + 1, dtype=np.int32)
    np.cumsum(np.bincount(caller, minlength=len(a.callers)), out=offsets[1:])
    brokers = a.allocation.brokers(a.batch)
    brokers = brokers if isinstance(brokers, pa.Array) else pa.array(brokers, type=pa.string())
    queue_ids = pa.array(a.allocation.queue_ids(a.batch), type=pa.int32())
    queues = pa.StructArray.from_arrays(
        [brokers.take(order), queue_ids.take(order)], fields=list(OWNED_ARROW.value_type)
    )
    return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), queues, type=OWNED_ARROW)


def row_codes(rows: pa.RecordBatch, *columns: str) -> np.ndarray:
    """An integer per row, equal for rows with equal values in ``columns``."""
    key = pc.binary_join_element_wise(*[pc.cast(rows.column(c), pa.string()) for c in columns], "\x00")
    return pc.dictionary_encode(key).indices.to_numpy(zero_copy_only=False).astype(np.int64)


def broadcasting(rows: pa.RecordBatch) -> np.ndarray:
    """Rows of BROADCASTING groups: every client reads every queue, whatever the strategy."""
    return pc.equal(rows.column("message_model"), "BROADCASTING").to_numpy(zero_copy_only=False)


def _group_metric_columns(
    *,
    stats: skew.SegmentStats,
    lag: skew.SegmentStats,
    queue_counts: np.ndarray,
    unassigned: np.ndarray,
    multi_owned: np.ndarray,
    duplicates: np.ndarray,
    errors: np.ndarray,
    has_offsets: np.ndarray,
    backlog: np.ndarray,
    stale_clients: np.ndarray,
    multi_owned_backlog: np.ndarray,
    unassigned_backlog: np.ndarray,
) -> list[pa.Array]:
    """schemas.GROUP_METRIC_FIELDS, one value per group of the batch."""
    has_clients = stats.count > 0
    no_lag = ~has_offsets | (lag.count == 0)

    def longs(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
        return pa.array(values.astype(np.int64), mask=mask, type=pa.int64())

    def doubles(values: np.ndarray, mask: np.ndarray) -> pa.Array:
        return pa.array(values, mask=mask | np.isnan(values), type=pa.float64())

    return [
        longs(queue_counts),
        longs(stats.count),
        longs(stats.active),
        longs(stats.count - stats.active),
        longs(stats.minimum, ~has_clients),
        longs(stats.maximum, ~has_clients),
        doubles(stats.mean, ~has_clients),
        doubles(stats.stddev, ~has_clients),
        doubles(stats.max_over_mean, np.zeros(len(has_clients), dtype=bool)),
        longs(unassigned),
        longs(multi_owned),
        longs(duplicates),
        pa.array(errors, type=pa.string()),
        longs(backlog, ~has_offsets),
        longs(lag.minimum, no_lag),
        longs(lag.maximum, no_lag),
        doubles(lag.mean, no_lag),
        doubles(lag.stddev, no_lag),
        doubles(lag.max_over_mean, no_lag),
        longs(stale_clients),
        longs(multi_owned_backlog, ~has_offsets),
        longs(unassigned_backlog, ~has_offsets),
    ]


def client_queue_batches(rows: pa.RecordBatch) -> list[pa.RecordBatch]:
    """One row per (strategy, topic, group, distinct client): schemas.CLIENT_QUEUES.

    Each row carries the queues the client owns and the client's load over all of the group's
    topics in the batch; the first row of each (topic, group) also carries its metrics (null on
    the others). So the batch must hold every topic of each group it holds (see whole_groups).
    assignments, group_metrics and consumer_load are then an explode and two row filters of these
    rows, done by Spark.
    """
    out = []
    group_code = row_codes(rows, "scenario", "phase", "group")
    allocated = allocate_rows(rows)
    if allocated:
        queue_backlog, has_offsets = queue_backlogs(rows, allocated[0].batch)
        group_backlog = np.bincount(
            allocated[0].batch.queue_group, weights=queue_backlog, minlength=rows.num_rows
        )
    for a in allocated:
        batch, callers = a.batch, a.callers
        g = callers.group
        # A queue outside today's mqAll (CONFIG may name one; a stale view may keep one of a broker
        # that went down) stays in the client's list but is no load: no messages come from it.
        owned = a.allocation.queue >= 0
        queues = np.bincount(a.allocation.caller[owned], minlength=len(callers)).astype(np.int64)
        stats = skew.segment_stats(queues, g, batch.n_groups)
        in_mq_all = a.allocation.queue[owned]
        owners = np.bincount(in_mq_all, minlength=len(batch.queue_id))
        queue_group = batch.queue_group
        unassigned = np.bincount(queue_group, weights=owners == 0, minlength=batch.n_groups)
        multi_owned = np.bincount(queue_group, weights=owners > 1, minlength=batch.n_groups)
        unassigned_lag = np.bincount(
            queue_group, weights=(owners == 0) * queue_backlog, minlength=batch.n_groups
        )
        multi_owned_lag = np.bincount(
            queue_group, weights=(owners > 1) * queue_backlog, minlength=batch.n_groups
        )
        stale = a.stale if a.stale is not None else np.zeros(len(callers), dtype=bool)
        stale_clients = np.bincount(g, weights=stale, minlength=batch.n_groups)
        first_in_group, _, _ = skew.first_of_each(g)
        # A group's error: its first caller's that threw. The registry's checks already give every
        # caller a group-wide error (empty mqAll), and only for strategies that make them.
        errors = np.full(batch.n_groups, None, dtype=object)
        threw = np.flatnonzero(np.not_equal(a.errors, None))
        first_thrower, at = np.unique(g[threw], return_index=True)
        errors[first_thrower] = a.errors[threw[at]]
        client_code = batch_client_codes(batch)[callers.client]
        fleet_key = group_code[g] * (int(client_code.max(initial=0)) + 1) + client_code
        first_in_client, client_class, client_topics = skew.first_of_each(fleet_key)
        client_total = np.bincount(client_class, weights=queues).astype(np.int64)
        backlog = np.bincount(
            a.allocation.caller[owned],
            weights=queue_backlog[a.allocation.queue[owned]],
            minlength=len(callers),
        )
        lag = skew.segment_stats(backlog, g, batch.n_groups)
        client_lag = np.bincount(client_class, weights=backlog)
        # A client's load has a backlog where any of its topics has offsets, not only its first.
        client_has_offsets = np.bincount(client_class, weights=has_offsets[g]) > 0
        group_columns = _group_metric_columns(
            stats=stats,
            lag=lag,
            queue_counts=batch.queue_counts,
            unassigned=unassigned,
            multi_owned=multi_owned,
            duplicates=duplicate_client_counts(batch, callers),
            errors=errors,
            has_offsets=has_offsets,
            backlog=group_backlog,
            stale_clients=stale_clients,
            multi_owned_backlog=multi_owned_lag,
            unassigned_backlog=unassigned_lag,
        )
        # The group's 22 figures ride on its first row only: copied onto every client's row, they
        # made filling the cache of these rows slower (bench/README.md).
        first_row_of_group = pa.array(g, mask=~first_in_group, type=pa.int64())
        columns = _keys(rows, a.strategy, g)
        columns.append(_take(batch.client_ids, callers.client))
        columns.append(pa.array(queues, type=pa.int64()))
        columns += [c.take(first_row_of_group) for c in group_columns]
        columns += [
            pa.array(client_topics[client_class].astype(np.int64), type=pa.int64()),
            pa.array(client_total[client_class], type=pa.int64()),
            pa.array(
                client_lag[client_class].astype(np.int64),
                mask=~client_has_offsets[client_class],
                type=pa.int64(),
            ),
            pa.array(first_in_group, type=pa.bool_()),
            pa.array(first_in_client, type=pa.bool_()),
            _owned_lists(a),
        ]
        out.append(pa.RecordBatch.from_arrays(columns, schema=CLIENT_QUEUES_ARROW))
        clientless = a.rows[batch.client_counts[a.rows] == 0]
        if len(clientless):
            out.append(_clientless_rows(rows, a.strategy, clientless, group_columns))
    return out


def _clientless_rows(
    rows: pa.RecordBatch, strategy: str, groups: np.ndarray, group_columns: list[pa.Array]
) -> pa.RecordBatch:
    """A row for each (topic, group) of ``groups`` that has no client (every one left in a
    scenario): its metrics, and no client, load or queue."""
    n = len(groups)
    zeros = pa.array(np.zeros(n, dtype=np.int64), type=pa.int64())
    columns = _keys(rows, strategy, groups)
    columns += [pa.nulls(n, pa.string()), zeros]
    columns += [c.take(pa.array(groups, type=pa.int64())) for c in group_columns]
    columns += [
        zeros,
        zeros,
        pa.nulls(n, pa.int64()),
        pa.array(np.ones(n, dtype=bool), type=pa.bool_()),
        pa.array(np.zeros(n, dtype=bool), type=pa.bool_()),
        pa.ListArray.from_arrays(
            pa.array(np.zeros(n + 1, dtype=np.int32), type=pa.int32()),
            pa.array([], type=OWNED_ARROW.value_type),
            type=OWNED_ARROW,
        ),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=CLIENT_QUEUES_ARROW)


def whole_groups(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Re-cut batches whose groups are contiguous (sorted by (scenario, group) within a Spark
    partition) so that no group spans two of them.

    Spark cuts Arrow batches at a fixed row count; a group's rows (every topic of every phase)
    that straddle a cut are held back and prepended to the next batch (a partition never splits
    a group: see partition_by_group).
    """
    pending: list[pa.RecordBatch] = []
    for rb in batches:
        if rb.num_rows == 0:
            continue
        same = pc.and_(
            pc.equal(rb.column("scenario"), rb.column("scenario")[-1]),
            pc.equal(rb.column("group"), rb.column("group")[-1]),
        )
        cut = rb.num_rows - pc.sum(same).as_py()  # contiguous: the last group's rows come last
        if cut > 0:
            yield _concat([*pending, rb.slice(0, cut)])
            pending = [rb.slice(cut)]
        else:
            pending.append(rb)
    if pending:
        yield _concat(pending)


def _concat(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def map_client_queues(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for rows in whole_groups(batches):
        yield from client_queue_batches(with_absent_columns(rows))


# Route columns that only some runs fill: offsets, CONFIG lists, stale views. Where a run has
# none, the column is null on every row and is left out of the allocation stage's input: in
# bench/, converting four all-null columns to Arrow cost more than all the others together.
OPTIONAL = ("backlogs", "client_configs", "stale_clients", "view_phase")
GROUP_ROUTES_ARROW = to_arrow_schema(schemas.GROUP_ROUTES)


def with_absent_columns(rows: pa.RecordBatch) -> pa.RecordBatch:
    """``rows`` with every GROUP_ROUTES column it lacks (see partition_by_group) as nulls."""
    if rows.num_columns == len(GROUP_ROUTES_ARROW):
        return rows
    present = set(rows.schema.names)
    columns = [
        rows.column(f.name) if f.name in present else pa.nulls(rows.num_rows, f.type)
        for f in GROUP_ROUTES_ARROW
    ]
    return pa.RecordBatch.from_arrays(columns, schema=GROUP_ROUTES_ARROW)


GROUP_KEY = ("scenario", "group")


def partition_by_group(group_routes: DataFrame, *, partitions: int, absent: Sequence[str] = ()) -> DataFrame:
    """All topics and phases of a group in one partition, contiguous, over a fixed number of
    Python tasks: a client's load sums over its topics, and movement compares phases.

    A fixed count, because adaptive execution would coalesce the small route rows onto fewer
    tasks than there are cores; contiguous, so whole_groups can hand each group whole to Python.
    ``absent``: OPTIONAL columns null on every row of the run, dropped (with_absent_columns
    puts them back as nulls in Python).
    """
    if not set(absent) <= set(OPTIONAL):
        raise ValueError(f"only {OPTIONAL} may be left out, not {sorted(set(absent) - set(OPTIONAL))}")
    return (
        group_routes.drop(*absent)
        .repartition(partitions, *GROUP_KEY)
        .sortWithinPartitions(*GROUP_KEY, "phase", "topic")
    )


# Route rows per Python task below which a run uses fewer tasks than partition_by_group made.
ROUTES_PER_TASK = 4096


def python_tasks(route_rows: int, partitions: int) -> int:
    """Python tasks for ``route_rows`` routes: ``partitions``, or fewer for a small fleet.

    Every task writes a file into each (scenario, strategy) directory of every output table; on
    a sample-sized fleet those tiny files, not the allocation, are the cost of a run. Fewer tasks
    come from coalescing partition_by_group's partitions, which keeps each group's rows whole and
    contiguous, all whole_groups needs."""
    return max(1, min(partitions, -(-route_rows // ROUTES_PER_TASK)))


def client_queues(group_routes: DataFrame) -> DataFrame:
    return group_routes.mapInArrow(map_client_queues, schemas.CLIENT_QUEUES)
