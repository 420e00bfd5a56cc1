"""Arrow out: one row per (strategy, topic, group, distinct client), schemas.CLIENT_QUEUES.

Each row carries the queues the client owns and the client's load over all of the group's topics
in the batch; the first row of each (topic, group) also carries its metrics (null on the others).
So a batch must hold every topic of each group it holds (stage.batches.whole_groups).
assignments, group_metrics and consumer_load are then an explode and two row filters of these
rows, done by Spark (rmqsim.metrics).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from rmqsim import schemas
from rmqsim.arrays import take
from rmqsim.stage import skew
from rmqsim.stage.alternatives import alternatives
from rmqsim.stage.batches import balancing, broadcasting, has_offsets, phases_of, row_codes
from rmqsim.stage.dispatch import BROKER_POP, PROXY, Allocated, allocate_rows
from rmqsim.strategies.batch import batch_client_codes, duplicate_client_counts, read_pairs

CLIENT_QUEUES_ARROW = to_arrow_schema(schemas.CLIENT_QUEUES)
OWNED_ARROW = CLIENT_QUEUES_ARROW.field("owned").type
PATHS_ARROW = pa.array(schemas.PATHS, type=pa.string())


def client_queue_batches(
    rows: pa.RecordBatch, allocated: list[Allocated] | None = None
) -> list[pa.RecordBatch]:
    """schemas.CLIENT_QUEUES rows for every strategy each of ``rows`` runs. ``allocated``:
    allocate_rows(rows), where the caller has it already."""
    out = []
    if allocated is None:
        allocated = allocate_rows(rows)
    group_code = row_codes(rows, "scenario", "phase", "group")
    offsets_known = has_offsets(rows)
    balanced = balancing(rows)
    on_client = ~balanced.by_broker & ~balanced.by_proxy & ~broadcasting(rows)
    phase = phases_of(rows)
    for a in allocated:
        load = Load.of(a)
        group_columns = _group_metric_columns(a, load, offsets_known)
        consumers = np.bincount(a.callers.group, minlength=a.batch.n_groups)
        other = alternatives(a, phase, on_client, consumers)
        group_columns += [
            _longs(np.nan_to_num(other.pop_idle_consumers), np.isnan(other.pop_idle_consumers)),
            _doubles(other.pop_max_message_share, np.isnan(other.pop_max_message_share)),
            _longs(np.nan_to_num(other.one_library_multi_owned), np.isnan(other.one_library_multi_owned)),
            _longs(np.nan_to_num(other.one_library_unassigned), np.isnan(other.one_library_unassigned)),
        ]
        out.append(_client_rows(rows, a, load, group_columns, group_code, offsets_known))
        clientless = a.rows[a.batch.client_counts[a.rows] == 0]
        if len(clientless):
            out.append(_clientless_rows(rows, a.strategy, clientless, group_columns))
    return out


@dataclass(frozen=True)
class Load:
    """What each caller reads: queues, backlog, and its share of them; and each queue's readers.

    A queue outside today's mqAll (CONFIG may name one; a stale view or a kept answer may keep one
    of a broker that went down) stays in the client's list but is no load: no messages come from
    it. A ``(broker, -1)`` answer reads every queue of that broker (strategies.batch.read_pairs).
    A queue read by k clients gives each 1/k of its messages and of its backlog."""

    queues: np.ndarray  # per caller
    backlog: np.ndarray
    message_share: np.ndarray
    backlog_share: np.ndarray
    readers: np.ndarray  # per flat queue
    shared: np.ndarray  # per flat queue: read by several clients by design (POP, the proxy)

    @staticmethod
    def of(a: Allocated) -> Load:
        batch, n = a.batch, len(a.callers)
        caller, queue = read_pairs(a.allocation, batch, a.callers.group)
        readers = np.bincount(queue, minlength=len(batch.queue_id))
        by_design = np.isin(a.computed_by[caller], (BROKER_POP, PROXY))
        popping = np.bincount(queue, weights=by_design, minlength=len(batch.queue_id))
        backlog = batch.params.queue_backlog[queue]
        with np.errstate(divide="ignore"):
            part = 1.0 / readers[queue]
        return Load(
            queues=np.bincount(caller, minlength=n).astype(np.int64),
            backlog=np.bincount(caller, weights=backlog, minlength=n),
            message_share=np.bincount(caller, weights=part, minlength=n),
            backlog_share=np.bincount(caller, weights=backlog * part, minlength=n),
            readers=readers,
            shared=(readers > 1) & (popping > 0),
        )


def _group_errors(a: Allocated) -> np.ndarray:
    """A group's error: its first caller's that threw. The registry's checks already give every
    caller a group-wide error (empty mqAll), and only for strategies that make them."""
    errors = np.full(a.batch.n_groups, None, dtype=object)
    threw = np.flatnonzero(np.not_equal(a.errors, None))
    first_thrower, at = np.unique(a.callers.group[threw], return_index=True)
    errors[first_thrower] = a.errors[threw[at]]
    return errors


def _group_metric_columns(a: Allocated, load: Load, offsets_known: np.ndarray) -> list[pa.Array]:
    """schemas.GROUP_METRIC_FIELDS, one value per group of the batch."""
    batch, g = a.batch, a.callers.group
    stats = skew.segment_stats(load.queues, g, batch.n_groups)
    lag = skew.segment_stats(load.backlog, g, batch.n_groups)
    share = skew.segment_stats(load.message_share, g, batch.n_groups)
    queue_backlog = batch.params.queue_backlog
    multi_owned = (load.readers > 1) & ~load.shared

    def per_group(weights: np.ndarray) -> np.ndarray:
        return np.bincount(batch.queue_group, weights=weights, minlength=batch.n_groups)

    stale = a.stale if a.stale is not None else np.zeros(len(a.callers), dtype=bool)
    has_clients = stats.count > 0
    no_lag = ~offsets_known | (lag.count == 0)
    return [
        _longs(batch.queue_counts),
        _longs(stats.count),
        _longs(stats.active),
        _longs(stats.count - stats.active),
        _longs(stats.minimum, ~has_clients),
        _longs(stats.maximum, ~has_clients),
        _doubles(stats.mean, ~has_clients),
        _doubles(stats.stddev, ~has_clients),
        _doubles(stats.max_over_mean, np.zeros(len(has_clients), dtype=bool)),
        _longs(per_group(load.readers == 0)),
        _longs(per_group(multi_owned)),
        _longs(duplicate_client_counts(batch, a.callers)),
        pa.array(_group_errors(a), type=pa.string()),
        _longs(per_group(queue_backlog), ~offsets_known),
        _longs(lag.minimum, no_lag),
        _longs(lag.maximum, no_lag),
        _doubles(lag.mean, no_lag),
        _doubles(lag.stddev, no_lag),
        _doubles(lag.max_over_mean, no_lag),
        _longs(np.bincount(g, weights=stale, minlength=batch.n_groups)),
        _longs(per_group(multi_owned * queue_backlog), ~offsets_known),
        _longs(per_group((load.readers == 0) * queue_backlog), ~offsets_known),
        _longs(per_group(load.shared)),
        _doubles(share.minimum, ~has_clients),
        _doubles(share.maximum, ~has_clients),
        _doubles(share.mean, ~has_clients),
        _doubles(share.max_over_mean, np.zeros(len(has_clients), dtype=bool)),
    ]


def _longs(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    return pa.array(values.astype(np.int64), mask=mask, type=pa.int64())


def _doubles(values: np.ndarray, mask: np.ndarray) -> pa.Array:
    return pa.array(values, mask=mask | np.isnan(values), type=pa.float64())


def _client_rows(
    rows: pa.RecordBatch,
    a: Allocated,
    load: Load,
    group_columns: list[pa.Array],
    group_code: np.ndarray,
    offsets_known: np.ndarray,
) -> pa.RecordBatch:
    """A row per caller: its queues, its group's metrics on the group's first row, and its load
    over every topic it reads in its group (consumer_load)."""
    batch, callers = a.batch, a.callers
    g = callers.group
    first_in_group, _, _ = skew.first_of_each(g)
    client_code = batch_client_codes(batch)[callers.client]
    fleet_key = group_code[g] * (int(client_code.max(initial=0)) + 1) + client_code
    first_in_client, client_class, client_topics = skew.first_of_each(fleet_key)
    client_total = np.bincount(client_class, weights=load.queues).astype(np.int64)
    client_lag = np.bincount(client_class, weights=load.backlog)
    client_share = np.bincount(client_class, weights=load.message_share)
    client_lag_share = np.bincount(client_class, weights=load.backlog_share)
    # A client's load has a backlog where any of its topics has offsets, not only its first.
    client_has_offsets = np.bincount(client_class, weights=offsets_known[g]) > 0
    # The group's 22 figures ride on its first row only: copied onto every client's row, they
    # made filling the cache of these rows slower (bench/README.md).
    first_row_of_group = pa.array(g, mask=~first_in_group, type=pa.int64())
    columns = [
        *_keys(rows, a.strategy, g),
        take(batch.client_ids, callers.client),
        pa.array(load.queues, type=pa.int64()),
        *[c.take(first_row_of_group) for c in group_columns],
        pa.array(client_topics[client_class].astype(np.int64), type=pa.int64()),
        pa.array(client_total[client_class], type=pa.int64()),
        pa.array(
            client_lag[client_class].astype(np.int64),
            mask=~client_has_offsets[client_class],
            type=pa.int64(),
        ),
        pa.array(client_share[client_class], type=pa.float64()),
        pa.array(client_lag_share[client_class], mask=~client_has_offsets[client_class], type=pa.float64()),
        pa.array(first_in_group, type=pa.bool_()),
        pa.array(first_in_client, type=pa.bool_()),
        _owned_lists(a),
        PATHS_ARROW.take(pa.array(a.computed_by, mask=a.computed_by < 0, type=pa.int64())),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=CLIENT_QUEUES_ARROW)


def _clientless_rows(
    rows: pa.RecordBatch, strategy: str, groups: np.ndarray, group_columns: list[pa.Array]
) -> pa.RecordBatch:
    """A row for each (topic, group) of ``groups`` that has no client (every one left in a
    scenario): its metrics, and no client, load or queue."""
    n = len(groups)
    zeros = pa.array(np.zeros(n, dtype=np.int64), type=pa.int64())
    columns = [
        *_keys(rows, strategy, groups),
        pa.nulls(n, pa.string()),
        zeros,
        *[c.take(pa.array(groups, type=pa.int64())) for c in group_columns],
        zeros,
        zeros,
        pa.nulls(n, pa.int64()),
        pa.array(np.zeros(n), type=pa.float64()),
        pa.nulls(n, pa.float64()),
        pa.array(np.ones(n, dtype=bool), type=pa.bool_()),
        pa.array(np.zeros(n, dtype=bool), type=pa.bool_()),
        pa.ListArray.from_arrays(
            pa.array(np.zeros(n + 1, dtype=np.int32), type=pa.int32()),
            pa.array([], type=OWNED_ARROW.value_type),
            type=OWNED_ARROW,
        ),
        pa.nulls(n, pa.string()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=CLIENT_QUEUES_ARROW)


def _keys(rows: pa.RecordBatch, strategy: str, group: np.ndarray) -> list[pa.Array]:
    """scenario, phase, strategy, topic, group for each output row of input row ``group``."""
    scenario, phase, topic, grp = (
        take(rows.column(k), group) for k in ("scenario", "phase", "topic", "group")
    )
    constant = pa.array([strategy], type=pa.string()).take(pa.array(np.zeros(len(group), dtype=np.int64)))
    return [scenario, phase, constant, topic, grp]


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
