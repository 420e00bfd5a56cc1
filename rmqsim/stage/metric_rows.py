"""Arrow out: what one strategy's allocation over a batch gives each output table (docs/CONTRACT.md,
section 4): a group_metrics row per (topic, group), a consumer_load row per (group, client) over
every topic of the group in the batch, and each client's queues as a list (schemas.CLIENT_ASSIGNMENTS,
which a sink explodes into assignment rows).

A client's load sums over the group's topics, so a batch must hold every topic of each group it
holds (stage.batches.whole_groups).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rmqsim import schemas
from rmqsim.arrays import take
from rmqsim.stage import capacity, skew
from rmqsim.stage.allocated import Allocated
from rmqsim.stage.alternatives import alternatives
from rmqsim.stage.batches import (
    balancing,
    broadcasting,
    client_capacities,
    client_designated_aware,
    has_offsets,
    has_traffic,
    phases_of,
    queue_inflow,
    row_codes,
    stranded_backlogs,
    stranded_inflow,
)
from rmqsim.stage.dispatch import BROKER_POP, PROXY
from rmqsim.strategies.batch import batch_client_codes, duplicate_client_counts, read_pairs

GROUP_METRICS_ARROW = schemas.arrow(schemas.GROUP_METRICS)
CONSUMER_LOAD_ARROW = schemas.arrow(schemas.CONSUMER_LOAD)
FALLING_BEHIND_ARROW = schemas.arrow(schemas.FALLING_BEHIND)
CLIENT_ASSIGNMENTS_ARROW = schemas.arrow(schemas.CLIENT_ASSIGNMENTS)
OWNED_ARROW = CLIENT_ASSIGNMENTS_ARROW.field("owned").type
PATHS_ARROW = pa.array(schemas.PATHS, type=pa.string())


@dataclass(frozen=True)
class MetricRows:
    """One strategy's rows of the three client tables, for the rows of a batch that run it."""

    group_metrics: pa.RecordBatch
    consumer_load: pa.RecordBatch
    assignments: pa.RecordBatch | None  # schemas.CLIENT_ASSIGNMENTS: a row per client that holds a queue
    falling_behind: pa.RecordBatch | None  # where asked for


def metric_rows(
    rows: pa.RecordBatch,
    allocated: list[Allocated],
    *,
    falling_behind: bool = False,
    assignments: bool = True,
) -> list[MetricRows]:
    """The rows of every strategy in ``allocated`` (stage.dispatch.allocate_rows(rows)); with
    ``falling_behind``, that table's rows too; without ``assignments``, not theirs (None). Every
    row of ``rows`` is written (stage.outputs cuts a batch to those)."""
    group_code = row_codes(rows, "scenario", "phase", "group")
    offsets_known = has_offsets(rows)
    traffic_known = has_traffic(rows)
    balanced = balancing(rows)
    on_client = ~balanced.by_broker & ~balanced.by_proxy & ~broadcasting(rows)
    phase = phases_of(rows)
    out = []
    inflow = queue_inflow(rows, allocated[0].batch) if allocated else None
    for a in allocated:
        load = Load.of(a, inflow)
        consumers = np.bincount(a.callers.group, minlength=a.batch.n_groups)
        clients = _clients(a, group_code)
        sums = ClientSums.of(load, clients, a.callers.group, offsets_known, traffic_known)
        keep = _keeping(rows, a, clients, sums)
        columns = _group_metric_columns(a, load, offsets_known, alternatives(a, phase, on_client, consumers))
        columns += _traffic_columns(rows, a, load, inflow, traffic_known, offsets_known)
        needed = _clients_needed(rows, a, clients, keep, inflow, group_code)
        columns += _capacity_columns(rows, a, load, clients, keep, needed)
        behind = None
        if falling_behind:
            behind = _falling_behind_rows(rows, a, clients, keep, sums, needed, group_code)
        out.append(
            MetricRows(
                group_metrics=_group_metric_rows(rows, a, columns),
                consumer_load=_consumer_load_rows(rows, a, load, clients, keep, sums),
                assignments=_assignment_lists(rows, a) if assignments else None,
                falling_behind=behind,
            )
        )
    return out


def _clients(a: Allocated, group_code: np.ndarray) -> capacity.Clients:
    """The allocation's callers by (scenario, phase, group, client id)."""
    g = a.callers.group
    client_code = batch_client_codes(a.batch)[a.callers.client]
    fleet_key = group_code[g] * (int(client_code.max(initial=0)) + 1) + client_code
    first, client_class, topics = skew.first_of_each(fleet_key)
    firsts = np.flatnonzero(first)
    order = np.argsort(client_class[firsts], kind="stable")
    return capacity.Clients(of_caller=client_class, first=firsts[order], topics=topics)


@dataclass(frozen=True)
class ClientSums:
    """Per client, its callers' messages per second and backlog summed over its topics, and
    whether any of its topics has traffic, or offsets: a backlog is known where any has."""

    msgs: np.ndarray
    backlog: np.ndarray
    msgs_known: np.ndarray
    backlog_known: np.ndarray

    @staticmethod
    def of(
        load: Load,
        clients: capacity.Clients,
        group: np.ndarray,
        offsets_known: np.ndarray,
        traffic_known: np.ndarray,
    ) -> ClientSums:
        """``group``: each caller's row; ``offsets_known``, ``traffic_known``: per row."""
        return ClientSums(
            msgs=clients.summed(load.msgs),
            backlog=clients.summed(load.backlog),
            msgs_known=clients.summed(traffic_known[group]) > 0,
            backlog_known=clients.summed(offsets_known[group]) > 0,
        )


def _keeping(
    rows: pa.RecordBatch, a: Allocated, clients: capacity.Clients, sums: ClientSums
) -> capacity.Keeping:
    caps = client_capacities(rows, a.batch.client_offsets)[a.callers.client[clients.first]]
    return capacity.keeping(
        sums.msgs, sums.backlog, caps, msgs_known=sums.msgs_known, backlog_known=sums.backlog_known
    )


def _clients_needed(
    rows: pa.RecordBatch,
    a: Allocated,
    clients: capacity.Clients,
    keep: capacity.Keeping,
    inflow: np.ndarray | None,
    group_code: np.ndarray,
) -> np.ndarray:
    """Per group of the batch, the clients its whole (scenario, phase, group) needs (NaN: unknown)."""
    batch = a.batch
    n = batch.n_groups
    rate = inflow if inflow is not None else np.zeros(len(batch.queue_id))
    row_inflow = np.bincount(batch.queue_group, weights=rate, minlength=n)
    row_backlog = np.bincount(batch.queue_group, weights=batch.params.queue_backlog, minlength=n)
    target = rows.column("drain_target_s").to_numpy(zero_copy_only=False)
    target = float(target[0]) if len(target) and target[0] is not None and np.isfinite(target[0]) else 3600.0
    return capacity.clients_needed(
        group_code[:n],
        row_inflow,
        row_backlog,
        group_code[a.callers.group[clients.first]],
        keep.capacity,
        target,
    )


def _capacity_columns(
    rows: pa.RecordBatch,
    a: Allocated,
    load: Load,
    clients: capacity.Clients,
    keep: capacity.Keeping,
    needed: np.ndarray,
) -> list[pa.Array]:
    """section 2d's group_metrics figures, one value per group of the batch; null without capacity
    or traffic; and the clients still on the stock strategy where the group is designated."""
    batch = a.batch
    n = batch.n_groups
    figures = capacity.per_topic(keep, clients, a.callers.group, load.msgs, n)
    unknown = ~figures.known
    designated = rows.column("designated_ips").is_valid().to_numpy(zero_copy_only=False)
    aware = client_designated_aware(rows, batch.client_offsets)[a.callers.client]
    unaware = np.bincount(a.callers.group, weights=~aware, minlength=n)
    return [
        _longs(figures.over, unknown),
        _doubles(figures.growth, unknown),
        _doubles(figures.max_ratio, unknown),
        _doubles(figures.drain, unknown),
        _longs(np.nan_to_num(needed), unknown | np.isnan(needed)),
        _longs(unaware, ~designated),
    ]


@dataclass(frozen=True)
class Load:
    """What each caller reads: queues, backlog, and its share of them; and each queue's readers.

    A queue outside today's mqAll (CONFIG may name one; a stale view or a kept answer may keep one
    of a broker that went down) stays in the client's list but is no load: no messages come from
    it. A ``(broker, -1)`` answer reads every queue of that broker (strategies.batch.read_pairs).
    A queue read by k clients gives each 1/k of its messages and of its backlog (``message_share``,
    ``backlog_share``, in queues); in messages per second (``msgs``), a queue read by k clients by
    design gives each 1/k of its inflow, one read twice against the design all of it to each."""

    queues: np.ndarray  # per caller
    backlog: np.ndarray
    message_share: np.ndarray
    backlog_share: np.ndarray
    msgs: np.ndarray  # messages per second
    readers: np.ndarray  # per flat queue
    shared: np.ndarray  # per flat queue: read by several clients by design (POP, the proxy)

    @staticmethod
    def of(a: Allocated, inflow: np.ndarray | None = None) -> Load:
        batch, n = a.batch, len(a.callers)
        caller, queue = read_pairs(a.allocation, batch, a.callers.group)
        readers = np.bincount(queue, minlength=len(batch.queue_id))
        by_design = np.isin(a.computed_by[caller], (BROKER_POP, PROXY))
        popping = np.bincount(queue, weights=by_design, minlength=len(batch.queue_id))
        backlog = batch.params.queue_backlog[queue]
        with np.errstate(divide="ignore"):
            part = 1.0 / readers[queue]
        shared = (readers > 1) & (popping > 0)
        msgs = np.zeros(n)
        if inflow is not None:
            msgs = np.bincount(
                caller, weights=inflow[queue] * np.where(shared[queue], part, 1.0), minlength=n
            )
        return Load(
            queues=np.bincount(caller, minlength=n).astype(np.int64),
            backlog=np.bincount(caller, weights=backlog, minlength=n),
            message_share=np.bincount(caller, weights=part, minlength=n),
            backlog_share=np.bincount(caller, weights=backlog * part, minlength=n),
            msgs=msgs,
            readers=readers,
            shared=shared,
        )


def _group_errors(a: Allocated) -> np.ndarray:
    """A group's error: its first caller's that threw. The registry's checks already give every
    caller a group-wide error (empty mqAll), and only for strategies that make them."""
    errors = np.full(a.batch.n_groups, None, dtype=object)
    threw = np.flatnonzero(np.not_equal(a.errors, None))
    first_thrower, at = np.unique(a.callers.group[threw], return_index=True)
    errors[first_thrower] = a.errors[threw[at]]
    return errors


def _group_metric_columns(a: Allocated, load: Load, offsets_known: np.ndarray, other) -> list[pa.Array]:
    """schemas.GROUP_METRIC_FIELDS, one value per group of the batch; ``other``: what the group
    would get another way (stage.alternatives)."""
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
    never = np.zeros(len(has_clients), dtype=bool)
    return [
        _longs(batch.queue_counts),
        _longs(stats.count),
        _longs(stats.active),
        _longs(stats.count - stats.active),
        _longs(stats.minimum, ~has_clients),
        _longs(stats.maximum, ~has_clients),
        _doubles(stats.mean, ~has_clients),
        _doubles(stats.stddev, ~has_clients),
        _doubles(stats.max_over_mean, never),
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
        _doubles(share.max_over_mean, never),
        _longs(np.nan_to_num(other.pop_idle_consumers), np.isnan(other.pop_idle_consumers)),
        _doubles(other.pop_max_message_share, np.isnan(other.pop_max_message_share)),
        _longs(np.nan_to_num(other.one_library_multi_owned), np.isnan(other.one_library_multi_owned)),
        _longs(np.nan_to_num(other.one_library_unassigned), np.isnan(other.one_library_unassigned)),
    ]


def _traffic_columns(
    rows: pa.RecordBatch,
    a: Allocated,
    load: Load,
    inflow: np.ndarray | None,
    traffic_known: np.ndarray,
    offsets_known: np.ndarray,
) -> list[pa.Array]:
    """The messages of schemas.GROUP_METRIC_FIELDS (section 2c), one value per group; null where
    the topic's inflow is unknown (stranded_backlog: without offsets)."""
    batch = a.batch
    n = batch.n_groups
    rate = inflow if inflow is not None else np.zeros(len(batch.queue_id))
    no_traffic = ~traffic_known

    def per_group(mask: np.ndarray) -> np.ndarray:
        return np.bincount(batch.queue_group, weights=rate * mask, minlength=n)

    stranded = stranded_inflow(rows)
    msgs = skew.segment_stats(load.msgs, a.callers.group, n)
    no_clients = msgs.count == 0
    return [
        _doubles(per_group(np.ones(len(rate), dtype=bool)) + stranded, no_traffic),
        _doubles(per_group(load.readers > 0), no_traffic),
        _doubles(per_group(load.readers == 0), no_traffic),
        _doubles(per_group((load.readers > 1) & ~load.shared), no_traffic),
        _doubles(stranded, no_traffic),
        _doubles(msgs.minimum, no_traffic | no_clients),
        _doubles(msgs.maximum, no_traffic | no_clients),
        _doubles(msgs.mean, no_traffic | no_clients),
        _doubles(msgs.max_over_mean, no_traffic | no_clients),
        _longs(stranded_backlogs(rows, batch), ~offsets_known),
    ]


def _longs(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    return pa.array(values.astype(np.int64), mask=mask, type=pa.int64())


def _doubles(values: np.ndarray, mask: np.ndarray) -> pa.Array:
    return pa.array(values, mask=mask | np.isnan(values), type=pa.float64())


def _group_metric_rows(rows: pa.RecordBatch, a: Allocated, columns: list[pa.Array]) -> pa.RecordBatch:
    """A row per batch row that runs the strategy, clientless ones included (a (topic, group)
    every client left keeps its metrics)."""
    row = a.rows
    at = pa.array(row, type=pa.int64())
    return pa.RecordBatch.from_arrays(
        [*_keys(rows, a.strategy, row), *(c.take(at) for c in columns)], schema=GROUP_METRICS_ARROW
    )


def _consumer_load_rows(
    rows: pa.RecordBatch,
    a: Allocated,
    load: Load,
    clients: capacity.Clients,
    keep: capacity.Keeping,
    sums: ClientSums,
) -> pa.RecordBatch:
    """A row per (scenario, phase, group, client): its load over every topic of the group it reads."""
    batch, callers = a.batch, a.callers
    firsts = clients.first
    summed = clients.summed
    # A client's load has a backlog where any of its topics has offsets, not only its first.
    no_offsets, no_traffic = ~sums.backlog_known, ~sums.msgs_known
    scenario, phase, strategy, _, group = _keys(rows, a.strategy, callers.group[firsts])
    unknown = ~keep.known
    columns = [
        scenario,
        phase,
        strategy,
        group,
        take(batch.client_ids, callers.client[firsts]),
        pa.array(clients.topics.astype(np.int64), type=pa.int64()),
        pa.array(summed(load.queues).astype(np.int64), type=pa.int64()),
        pa.array(sums.backlog.astype(np.int64), mask=no_offsets, type=pa.int64()),
        pa.array(summed(load.message_share), type=pa.float64()),
        pa.array(summed(load.backlog_share), mask=no_offsets, type=pa.float64()),
        pa.array(sums.msgs, mask=no_traffic, type=pa.float64()),
        _doubles(np.nan_to_num(keep.capacity), np.isnan(keep.capacity)),
        _doubles(keep.load_over_capacity, unknown),
        pa.array(keep.over, mask=unknown, type=pa.bool_()),
        _doubles(keep.growth, unknown),
        _doubles(keep.drain, unknown),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=CONSUMER_LOAD_ARROW)


def _falling_behind_rows(
    rows: pa.RecordBatch,
    a: Allocated,
    clients: capacity.Clients,
    keep: capacity.Keeping,
    sums: ClientSums,
    needed: np.ndarray,
    group_code: np.ndarray,
) -> pa.RecordBatch:
    """A row per (scenario, phase, group) that falls behind (schemas.FALLING_BEHIND): its clients'
    figures as consumer_load gives them, summed. The clients come sorted by group (_clients)."""
    row = a.callers.group[clients.first]  # each client's first (topic, group) row
    behind = capacity.falling_behind(group_code[row], keep, sums.msgs, sums.msgs_known)
    scenario, phase, strategy, _, group = _keys(rows, a.strategy, row[behind.client])
    need = needed[row[behind.client]]
    columns = [
        scenario,
        phase,
        strategy,
        group,
        pa.array(behind.consumers, type=pa.int64()),
        pa.array(behind.over, type=pa.int64()),
        pa.array(behind.never, type=pa.int64()),
        _doubles(behind.msgs, behind.msgs_known == 0),
        _doubles(behind.capacity, behind.capacity_known == 0),
        _doubles(behind.growth, np.zeros(len(behind.growth), dtype=bool)),
        _doubles(behind.max_ratio, np.zeros(len(behind.max_ratio), dtype=bool)),
        _longs(np.nan_to_num(need), np.isnan(need)),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=FALLING_BEHIND_ARROW)


def _assignment_lists(rows: pa.RecordBatch, a: Allocated) -> pa.RecordBatch:
    """Each caller that holds a queue, with its queues in the order the strategy returned them."""
    caller = a.allocation.caller
    held = np.bincount(caller, minlength=len(a.callers))
    holders = np.flatnonzero(held > 0)
    order = pa.array(np.argsort(caller, kind="stable"), type=pa.int64())
    offsets = np.zeros(len(holders) + 1, dtype=np.int32)
    np.cumsum(held[holders], out=offsets[1:])
    brokers = a.allocation.brokers(a.batch)
    brokers = brokers if isinstance(brokers, pa.Array) else pa.array(brokers, type=pa.string())
    queue_ids = pa.array(a.allocation.queue_ids(a.batch), type=pa.int32())
    queues = pa.StructArray.from_arrays(
        [brokers.take(order), queue_ids.take(order)], fields=list(OWNED_ARROW.value_type)
    )
    columns = [
        *_keys(rows, a.strategy, a.callers.group[holders]),
        take(a.batch.client_ids, a.callers.client[holders]),
        PATHS_ARROW.take(pa.array(a.computed_by[holders], type=pa.int64())),
        pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), queues, type=OWNED_ARROW),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=CLIENT_ASSIGNMENTS_ARROW)


def _keys(rows: pa.RecordBatch, strategy: str, row: np.ndarray) -> list[pa.Array]:
    """scenario, phase, strategy, topic, group of input row ``row`` for each output row."""
    at = pa.array(row, type=pa.int64())
    scenario, phase, topic, group = (rows.column(k).take(at) for k in ("scenario", "phase", "topic", "group"))
    constant = pa.array([strategy], type=pa.string()).take(pa.array(np.zeros(len(row), dtype=np.int64)))
    return [scenario, phase, constant, topic, group]
