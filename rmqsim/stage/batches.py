"""Arrow in: route rows (schemas.GROUP_ROUTES) as Spark hands them to Python, turned into the
GroupBatch that strategies work on.

Spark hands the stage whole Arrow record batches (mapInArrow): list columns arrive as offsets plus
flat values, exactly the CSR layout strategies work on, so no string becomes a Python object on
the hot path. (mapInPandas would turn every list into a numpy array of Python strings and back;
measured in bench/, that cost more than the allocation itself.) Everything here is a plain
function over pyarrow batches, so tests call it without Spark.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.arrays import Strings, as_objects, list_column, lookup_sorted, object_array, offsets, take
from rmqsim.strategies import GroupBatch
from rmqsim.strategies.params import ConfigLists

GROUP_ROUTES_ARROW = schemas.GROUP_ROUTES_ARROW

# Route columns that only some runs fill: offsets, CONFIG lists, stale views. Where a run has
# none, the column is null on every row and is left out of the allocation stage's input: in
# bench/, converting four all-null columns to Arrow cost more than all the others together.
OPTIONAL = (
    "backlogs",
    "client_configs",
    "stale_clients",
    "view_phase",
    "client_languages",
    "balancing",
    "broker_masters",
    "queue_inflow",
    "stranded_inflow",
    "drained_queues",
    "client_capacities",
    "designated_ips",
    "client_designated_aware",
    "drain_target_s",
    "written",
    "handover_event",
)


@dataclass(frozen=True)
class RouteParams:
    """strategies.params.Params read from route rows, each converted on first use: most batches
    never need rooms or CONFIG lists. The backlog is given: metrics need it in every batch."""

    rows: pa.RecordBatch
    client_offsets: np.ndarray
    queue_broker_index: np.ndarray  # each flat queue's index into the rows' flat broker lists
    queue_backlog: np.ndarray
    queue_counts: np.ndarray  # per row: its mqAll's length
    queue_previous_owner: None = None  # STICKY's memory is per phase: stage.sticky_memory

    @cached_property
    def virtual_node_cnt(self) -> np.ndarray:
        return self.rows.column("virtual_node_cnt").to_numpy().astype(np.int64)

    @cached_property
    def consumer_idcs(self) -> np.ndarray:
        return object_array(self.rows.column("consumer_idcs").to_pylist())

    @cached_property
    def inner_strategy(self) -> np.ndarray:
        return np.asarray(self.rows.column("inner_strategy").to_pylist(), dtype=object)

    @cached_property
    def queue_room(self) -> Strings:
        # Left in Arrow: finding a blank room there is cheap, in Python objects it was not.
        return take(list_column(self.rows, "broker_rooms")[1], self.queue_broker_index)

    @cached_property
    def client_room(self) -> Strings:
        return list_column(self.rows, "client_rooms")[1]

    @cached_property
    def client_config(self) -> ConfigLists:
        return config_lists(self.rows, self.client_offsets)

    @cached_property
    def queue_inflow(self) -> np.ndarray | None:
        """RATE_BALANCED's weights: messages per second per flat queue (None without traffic)."""
        if not has_traffic(self.rows).any():
            return None
        return _flat_inflow(self.rows, self.queue_counts)

    @cached_property
    def client_capacity(self) -> np.ndarray | None:
        """RATE_BALANCED's capacities per flat client, NaN where unknown (None: none known)."""
        capacity = client_capacities(self.rows, self.client_offsets)
        return None if np.isnan(capacity).all() else capacity


def client_capacities(rows: pa.RecordBatch, client_offsets: np.ndarray) -> np.ndarray:
    """Each flat client's capacity in messages per second (section 2d), NaN where unknown."""
    out = np.full(int(client_offsets[-1]), np.nan)
    column = rows.column("client_capacities")
    if column.null_count == len(column):
        return out
    valid = np.repeat(pc.is_valid(column).to_numpy(zero_copy_only=False), np.diff(client_offsets))
    flat = pc.list_flatten(column)
    if len(flat) != valid.sum():
        raise ValueError("client_capacities must hold one capacity per client id")
    out[valid] = pc.fill_null(flat, np.nan).to_numpy(zero_copy_only=False)
    return out


def client_designated_aware(rows: pa.RecordBatch, client_offsets: np.ndarray) -> np.ndarray:
    """Whether each flat client runs the designated-machines code (section 2d; null: it does)."""
    out = np.ones(int(client_offsets[-1]), dtype=bool)
    column = rows.column("client_designated_aware")
    if column.null_count == len(column):
        return out
    valid = np.repeat(pc.is_valid(column).to_numpy(zero_copy_only=False), np.diff(client_offsets))
    out[valid] = pc.fill_null(pc.list_flatten(column), True).to_numpy(zero_copy_only=False)
    return out


def config_lists(rows: pa.RecordBatch, client_offsets: np.ndarray) -> ConfigLists:
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
        offsets=offsets(lengths),
        broker=pc.struct_field(entries, "broker_name"),
        queue_id=pc.fill_null(pc.struct_field(entries, "queue_id"), -1).to_numpy().astype(np.int64),
        null=null,
    )


def to_batch(rows: pa.RecordBatch) -> GroupBatch:
    """The rows' routes expanded into mqAll and cidAll, with their strategy parameters."""
    broker_offsets, broker_names = list_column(rows, "broker_names")
    _, read_queue_nums = list_column(rows, "read_queue_nums")
    client_offsets, client_ids = list_column(rows, "client_ids")
    nums = read_queue_nums.to_numpy(zero_copy_only=False).astype(np.int64)
    batch = GroupBatch.from_routes(
        topics=rows.column("topic"),
        broker_offsets=broker_offsets,
        broker_names=broker_names,
        read_queue_nums=nums,
        client_offsets=client_offsets,
        client_ids=client_ids,
    )
    params = RouteParams(
        rows=rows,
        client_offsets=client_offsets,
        queue_broker_index=np.repeat(np.arange(len(nums), dtype=np.int64), nums),
        queue_backlog=queue_backlogs(rows, batch),
        queue_counts=batch.queue_counts,
    )
    return replace(batch, params=params)


@dataclass(frozen=True)
class Libraries:
    """Each flat client's library: an index into schemas.LANGUAGES, -1 for one rmqsim does not
    simulate, whose name is then in ``unknown``."""

    code: np.ndarray
    unknown: dict[int, str]  # flat client -> its language, where code is -1


def client_libraries(rows: pa.RecordBatch, client_offsets: np.ndarray) -> Libraries:
    """From ``client_languages`` (null, for a client or a whole row: JAVA, the contract's default)."""
    column = rows.column("client_languages")
    code = np.zeros(int(client_offsets[-1]), dtype=np.int64)
    if column.null_count == len(column):
        return Libraries(code, {})
    valid = np.repeat(pc.is_valid(column).to_numpy(zero_copy_only=False), np.diff(client_offsets))
    flat = pc.list_flatten(column)
    if len(flat) != valid.sum():
        raise ValueError("client_languages must hold one language per client id")
    known = pc.index_in(flat, value_set=pa.array(schemas.LANGUAGES))
    given = np.where(flat.is_valid().to_numpy(zero_copy_only=False), pc.fill_null(known, -1).to_numpy(), 0)
    code[valid] = given
    clients = np.flatnonzero(valid)[given < 0]
    names = as_objects(take(flat, np.flatnonzero(given < 0)))
    return Libraries(code, dict(zip(clients.tolist(), names.tolist())))


@dataclass(frozen=True)
class Balancing:
    """Per row, who balances the group and how (schemas.BALANCING)."""

    by_broker: np.ndarray
    by_proxy: np.ndarray
    pop: np.ndarray
    pop_share_queue_num: np.ndarray
    orderly: np.ndarray


def balancing(rows: pa.RecordBatch) -> Balancing:
    """The broker balances a CLUSTERING group whose rebalance is BROKER, unless it consumes
    orderly (orderly groups still balance on the client); the proxy one whose rebalance is PROXY.
    BROADCASTING groups read everything, whoever would balance them."""
    column = rows.column("balancing")
    n = rows.num_rows
    if column.null_count == n:
        no = np.zeros(n, dtype=bool)
        return Balancing(no, no, no, np.full(n, -1, dtype=np.int64), no)

    def field(name: str, default: object) -> np.ndarray:
        return pc.fill_null(pc.struct_field(column, name), default).to_numpy(zero_copy_only=False)

    rebalance, orderly = field("rebalance", "CLIENT"), field("consume_orderly", False)
    clustering = ~broadcasting(rows)
    return Balancing(
        by_broker=(rebalance == "BROKER") & ~orderly & clustering,
        by_proxy=(rebalance == "PROXY") & clustering,
        pop=field("pop", False),
        pop_share_queue_num=field("pop_share_queue_num", -1).astype(np.int64),
        orderly=orderly,
    )


def queue_master_alive(rows: pa.RecordBatch, batch: GroupBatch) -> np.ndarray:
    """Per flat queue of ``batch``, whether its broker's master is alive (true without data)."""
    column = rows.column("broker_masters")
    if column.null_count == len(column):
        return np.ones(len(batch.queue_id), dtype=bool)
    _, flat = list_column(rows, "broker_masters")
    alive = pc.fill_null(flat, True).to_numpy(zero_copy_only=False)
    return alive[batch.params.queue_broker_index]


def has_traffic(rows: pa.RecordBatch) -> np.ndarray:
    """Rows whose topic's inflow is known (the run has producers or rates)."""
    return pc.is_valid(rows.column("queue_inflow")).to_numpy(zero_copy_only=False)


def queue_inflow(rows: pa.RecordBatch, batch: GroupBatch) -> np.ndarray:
    """Messages per second into every flat queue of ``batch`` (mqAll order), 0 where unknown."""
    return _flat_inflow(rows, batch.queue_counts)


def _flat_inflow(rows: pa.RecordBatch, queue_counts: np.ndarray) -> np.ndarray:
    out = np.zeros(int(queue_counts.sum()))
    column = rows.column("queue_inflow")
    if column.null_count == len(column) or not len(out):
        return out
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    known = pc.is_valid(column).to_numpy(zero_copy_only=False)
    if not (lengths[known] == queue_counts[known]).all():
        raise ValueError("queue_inflow must hold one rate per queue of mqAll")
    flat = pc.list_flatten(column).to_numpy(zero_copy_only=False)
    out[np.repeat(known, queue_counts)] = flat
    return out


def stranded_inflow(rows: pa.RecordBatch) -> np.ndarray:
    return pc.fill_null(rows.column("stranded_inflow"), 0.0).to_numpy(zero_copy_only=False)


def stranded_backlogs(rows: pa.RecordBatch, batch: GroupBatch) -> np.ndarray:
    """Per row, the backlog offsets give on queues of its topic's readable brokers above their
    read count: messages on a broker the group still reads from, in queues it no longer reads (a
    read_queue_nums lowered under queues that still hold some). A broker gone from the route is
    down, not shrunk: its queues are not counted; nor are the row's ``drained_queues``, which the
    group read after producers had stopped writing them (the safe order's wait)."""
    total = np.zeros(rows.num_rows, dtype=np.int64)
    offsets_, flat = list_column(rows, "backlogs")
    if len(flat) == 0 or not len(batch.queue_id):
        return total
    names = pd.Index(pd.unique(as_objects(batch.queue_broker)))
    n_b = len(names) + 1
    entry_row = np.repeat(np.arange(rows.num_rows, dtype=np.int64), np.diff(offsets_))
    broker = names.get_indexer(as_objects(flat.field("broker_name")))
    queue_id = pc.fill_null(flat.field("queue_id"), -1).to_numpy().astype(np.int64)
    backlog = pc.fill_null(flat.field("backlog"), 0).to_numpy().astype(np.int64)
    # Each (row, broker) of mqAll and its read count: queues 0 .. count-1 are read.
    queue_broker = names.get_indexer(as_objects(batch.queue_broker))
    pair, count = np.unique(batch.queue_group * n_b + queue_broker, return_counts=True)
    at, found = lookup_sorted(pair, entry_row * n_b + broker)
    above = found & (broker >= 0) & (queue_id >= count[at])
    if "drained_queues" in rows.schema.names:
        d_offsets, drained = list_column(rows, "drained_queues")
        if len(drained):
            d_row = np.repeat(np.arange(rows.num_rows, dtype=np.int64), np.diff(d_offsets))
            d_broker = names.get_indexer(as_objects(drained.field("broker_name")))
            d_queue = pc.fill_null(drained.field("queue_id"), -1).to_numpy().astype(np.int64)
            d_code = (d_row * n_b + d_broker) * (1 << 32) + d_queue
            above &= ~np.isin((entry_row * n_b + broker) * (1 << 32) + queue_id, d_code[d_broker >= 0])
    return np.bincount(entry_row[above], weights=backlog[above], minlength=rows.num_rows).astype(np.int64)


def has_offsets(rows: pa.RecordBatch) -> np.ndarray:
    """Rows whose (topic, group) has offsets: their backlog is known (0 where a queue has none)."""
    return pc.is_valid(rows.column("backlogs")).to_numpy(zero_copy_only=False)


def queue_backlogs(rows: pa.RecordBatch, batch: GroupBatch) -> np.ndarray:
    """The backlog of every flat queue of ``batch``, 0 where unknown."""
    out = np.zeros(len(batch.queue_id), dtype=np.int64)
    offsets_, flat = list_column(rows, "backlogs")
    if len(flat) == 0 or len(out) == 0:
        return out
    names = pd.Index(pd.unique(as_objects(batch.queue_broker)))
    n_b = len(names) + 1

    def key(row: np.ndarray, broker: np.ndarray, queue_id: np.ndarray) -> np.ndarray:
        return (row * n_b + broker) * (1 << 32) + queue_id

    flat_queues = key(batch.queue_group, names.get_indexer(as_objects(batch.queue_broker)), batch.queue_id)
    entry_row = np.repeat(np.arange(rows.num_rows, dtype=np.int64), np.diff(offsets_))
    broker = names.get_indexer(as_objects(flat.field("broker_name")))
    queue_id = pc.fill_null(flat.field("queue_id"), -1).to_numpy().astype(np.int64)
    at = pd.Index(flat_queues).get_indexer(key(entry_row, broker, queue_id))
    found = (broker >= 0) & (queue_id >= 0) & (at >= 0)
    backlog = pc.fill_null(flat.field("backlog"), 0).to_numpy().astype(np.int64)
    # Reversed, so that the first row reported for a queue is the one that stays.
    out[at[found][::-1]] = backlog[found][::-1]
    return out


def row_codes(rows: pa.RecordBatch, *columns: str) -> np.ndarray:
    """An integer per row, equal for rows with equal values in ``columns``."""
    key = pc.binary_join_element_wise(*[pc.cast(rows.column(c), pa.string()) for c in columns], "\x00")
    return pc.dictionary_encode(key).indices.to_numpy(zero_copy_only=False).astype(np.int64)


def phases_of(rows: pa.RecordBatch) -> np.ndarray:
    return rows.column("phase").to_numpy(zero_copy_only=False).astype(np.int64)


def broadcasting(rows: pa.RecordBatch) -> np.ndarray:
    """Rows of BROADCASTING groups: every client reads every queue, whatever the strategy."""
    return pc.equal(rows.column("message_model"), "BROADCASTING").to_numpy(zero_copy_only=False)


def rows_by_strategy(rows: pa.RecordBatch) -> dict[str, np.ndarray]:
    """Which rows run which strategy (each row lists its strategies)."""
    offsets_, flat = list_column(rows, "strategies")
    row_of_entry = np.repeat(np.arange(rows.num_rows, dtype=np.int64), np.diff(offsets_))
    encoded = pc.dictionary_encode(flat)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    names = encoded.dictionary.to_pylist()
    return {name: np.unique(row_of_entry[codes == i]) for i, name in enumerate(names)}


def whole_groups(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Re-cut batches whose groups are contiguous (sorted by (scenario, group) within a Spark
    partition) so that no group spans two of them.

    Spark cuts Arrow batches at a fixed row count; a group's rows (every topic of every phase)
    that straddle a cut are held back and prepended to the next batch (a partition never splits
    a group: see stage.tasks.partition_by_group).
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


def with_absent_columns(rows: pa.RecordBatch) -> pa.RecordBatch:
    """``rows`` with every GROUP_ROUTES column it lacks (OPTIONAL ones left out) as nulls."""
    if rows.num_columns == len(GROUP_ROUTES_ARROW):
        return rows
    present = set(rows.schema.names)
    columns = [
        rows.column(f.name) if f.name in present else pa.nulls(rows.num_rows, f.type)
        for f in GROUP_ROUTES_ARROW
    ]
    return pa.RecordBatch.from_arrays(columns, schema=GROUP_ROUTES_ARROW)
