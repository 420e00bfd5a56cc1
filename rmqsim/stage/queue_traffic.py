"""Each queue's traffic, every phase (docs/CONTRACT.md, section 2c): every queue a run writes or
reads numbered densely (QueueSpace), which ones producers write, the consumers' mqAll, each
queue's inflow against its topic's mqAll, the queue_traffic rows, and the queues each phase has
drained.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.arrays import combined, lookup_sorted, offsets, row_codes, runs, runs_of, sorted_unique
from rmqsim.stage.latency_folding import Targets
from rmqsim.stage.publish import ListRuns, Lists, Populations
from rmqsim.stage.route_keys import ROUTE_KEY, RouteKeys, joined_key, lookup

QUEUE_TRAFFIC = schemas.arrow(schemas.QUEUE_TRAFFIC)
# queue_traffic's names, dictionary-encoded: a gather of indices per queue instead of a copy of
# each name (a 10M-assignment fleet has 6M queues). Its readers see strings.
NAMES = ("scenario", "topic", "broker_name")
QUEUE_TRAFFIC_NAMES = pa.schema(
    [f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in NAMES else f for f in QUEUE_TRAFFIC]
)


@dataclass(frozen=True)
class QueueSpace:
    """Every queue the run writes or reads, numbered densely: each (route key, broker) pair,
    brokers numbered by name, holds as many slots as its highest queue id + 1, the pairs in
    (key, broker) order. Slot order is thus (key, broker, queue id) order, and queues are summed,
    matched and flagged by indexing arrays, not by sorting or searching. Per entry of the
    concatenated Java and Go lists, its slot; per queue of mqAll (MqAll's order), its slot."""

    brokers: pa.Array  # the names, by number (sorted)
    pair: np.ndarray  # per pair: route key * len(brokers) + broker number, ascending
    base: np.ndarray  # per pair, its first slot; then the number of slots
    entry_slot: np.ndarray
    mq_slot: np.ndarray

    @property
    def slots(self) -> int:
        return int(self.base[-1])

    @functools.cached_property
    def slot_pair(self) -> np.ndarray:
        """Per slot, its pair."""
        return np.repeat(np.arange(len(self.pair)), np.diff(self.base))

    def key_of(self, slot: np.ndarray) -> np.ndarray:
        return self.pair[self.slot_pair[slot]] // len(self.brokers)

    def broker_of(self, slot: np.ndarray) -> np.ndarray:
        """Each slot's broker, by number (``brokers``' index)."""
        return (self.pair[self.slot_pair[slot]] % len(self.brokers)).astype(np.int32)

    def queue_of(self, slot: np.ndarray) -> np.ndarray:
        return (slot - self.base[self.slot_pair[slot]]).astype(np.int32)


def queue_space_of(list_runs: ListRuns, mq_all: MqAll) -> QueueSpace:
    names = pa.concat_arrays([list_runs.broker, mq_all.broker]).unique()
    names = names.take(pc.sort_indices(names))
    n_b = len(names)

    def number(values: pa.Array) -> np.ndarray:
        return pc.index_in(values, value_set=names).to_numpy(zero_copy_only=False).astype(np.int64)

    # Pairs: every run's and every mqAll broker's, each as long as its longest run.
    segment_pair = np.concatenate(
        [list_runs.key * n_b + number(list_runs.broker), mq_all.key * n_b + number(mq_all.broker)]
    )
    segment_size = np.concatenate([list_runs.size, mq_all.size])
    order = np.argsort(segment_pair, kind="stable")
    pair, starts, count = runs_of(segment_pair[order])
    base = offsets(np.maximum.reduceat(segment_size[order], starts) if len(order) else count)
    segment_base = np.empty(len(order), dtype=np.int64)
    segment_base[order] = np.repeat(base[:-1], count)
    n_runs = len(list_runs.start)
    return QueueSpace(
        brokers=names,
        pair=pair,
        base=base,
        entry_slot=runs(segment_base[:n_runs], list_runs.size),
        mq_slot=runs(segment_base[n_runs:], mq_all.size),
    )


def written_queues(space: QueueSpace, targets: Targets, lists: Lists, pops: Populations) -> np.ndarray:
    """Per slot, whether a topic's producers write to it (their lists'), or a Java producer
    would where the topic has none."""
    n_keys = len(lists.java.offsets) - 1
    produced_go = np.zeros(n_keys, dtype=bool)
    produced_go[pops.key[pops.go]] = True
    produced_java = np.zeros(n_keys, dtype=bool)
    produced_java[pops.key[~pops.go]] = True
    use_java = produced_java | ~produced_go
    n_java = len(lists.java.queue_id)
    family = np.r_[use_java[targets.key[:n_java]], produced_go[targets.key[n_java:]]]
    written = np.zeros(space.slots, dtype=bool)
    written[space.entry_slot[family]] = True
    return written


@dataclass(frozen=True)
class MqAll:
    """Every route key's mqAll, per broker of it in mqAll order: its route key, name and
    read_queue_nums (its queues are ids 0 .. size-1)."""

    key: np.ndarray
    broker: pa.Array
    size: np.ndarray
    offsets: np.ndarray  # per topic_routes row, its first queue; then the number of queues
    route_key: np.ndarray  # per topic_routes row


def mq_all_of(topic_routes: pa.Table, keys: RouteKeys) -> MqAll:
    route_key = keys.code(topic_routes)
    if (route_key < 0).any():
        raise ValueError("topic_routes has a (scenario, phase, topic) that topic_queues has not")
    names = combined(topic_routes["broker_names"])
    nums = (
        pc.list_flatten(combined(topic_routes["read_queue_nums"]))
        .to_numpy(zero_copy_only=False)
        .astype(np.int64)
    )
    brokers_per_row = pc.list_value_length(names).to_numpy(zero_copy_only=False).astype(np.int64)
    broker_row = np.repeat(np.arange(len(brokers_per_row)), brokers_per_row)
    per_row = np.bincount(broker_row, weights=nums, minlength=len(brokers_per_row)).astype(np.int64)
    return MqAll(
        key=route_key[broker_row],
        broker=combined(pc.list_flatten(names)),
        size=nums,
        offsets=offsets(per_row),
        route_key=route_key,
    )


def against_mq_all(
    keys: RouteKeys,
    space: QueueSpace,
    inflow: np.ndarray,
    read: np.ndarray,
    mq_all: MqAll,
    topic_routes: pa.Table,
) -> pa.Table:
    """Per topic_routes row, its mqAll queues' inflow (list, mqAll order) and the inflow written
    outside its mqAll."""
    outside = np.flatnonzero(~read)
    stranded = np.bincount(space.key_of(outside), weights=inflow[outside], minlength=len(keys))
    lists = pa.ListArray.from_arrays(
        pa.array(mq_all.offsets.astype(np.int32)), pa.array(inflow[space.mq_slot], pa.float64())
    )
    return pa.table(
        {
            **{c: topic_routes[c] for c in ROUTE_KEY},
            "queue_inflow": lists,
            "stranded_inflow": pa.array(stranded[mq_all.route_key], pa.float64()),
        }
    )


def queue_rows(
    keys: RouteKeys,
    space: QueueSpace,
    inflow: np.ndarray,
    written: np.ndarray,
    read: np.ndarray,
    offsets: pa.Table | None,
) -> pa.Table:
    """A row per queue written or read, per (scenario, phase, topic): QUEUE_TRAFFIC_NAMES."""
    slot = np.flatnonzero(written | read)
    key = space.key_of(slot)

    def per_queue(column: str) -> pa.DictionaryArray:
        names = pc.dictionary_encode(combined(keys.table[column]))
        return pa.DictionaryArray.from_arrays(names.indices.take(pa.array(key)), names.dictionary)

    queues = pa.table(
        {
            "topic": per_queue("topic"),
            "broker_name": pa.DictionaryArray.from_arrays(space.broker_of(slot), combined(space.brokers)),
            "queue_id": pa.array(space.queue_of(slot), pa.int32()),
        }
    )
    out = pa.table(
        {
            "scenario": per_queue("scenario"),
            "phase": combined(keys.table["phase"]).take(pa.array(key)),
            **{c: queues[c] for c in queues.column_names},
            "in_msgs_per_s": pa.array(inflow[slot], pa.float64()),
            "written": pa.array(written[slot]),
            "read": pa.array(read[slot]),
            "backlog": _backlogs(queues, offsets),
        }
    )
    return out.cast(QUEUE_TRAFFIC_NAMES)


def drained(queue_traffic: pa.Table) -> pa.Table:
    """The queues each (scenario, phase, topic) has had a phase to drain: read (in mqAll) while
    no producer wrote them, and not written since. drained(0) is empty and
    drained(k) = not written(k-1) and (read(k-1) or drained(k-1)): the safe shrink's wait between
    lowering write_queue_nums and lowering read_queue_nums. One row per queue; only those outside
    the phase's mqAll, the ones whose backlog could otherwise be stranded."""
    qt = queue_traffic
    if not qt.num_rows or pc.max(qt["phase"]).as_py() == 0:
        return pa.table({"scenario": pa.array([], pa.string())})  # one phase: nothing to drain yet
    # Each (scenario, topic, broker) numbered densely, and a row that names it.
    _, named_at, place = np.unique(row_codes([qt[c] for c in NAMES]), return_index=True, return_inverse=True)
    queue = place.astype(np.int64) * (1 << 32) + combined(qt["queue_id"]).to_numpy(zero_copy_only=False)
    phase = combined(qt["phase"]).to_numpy(zero_copy_only=False)
    written = combined(qt["written"]).to_numpy(zero_copy_only=False)
    read = combined(qt["read"]).to_numpy(zero_copy_only=False)
    held = np.empty(0, dtype=np.int64)
    rows = []
    for k in range(1, int(phase.max(initial=0)) + 1):
        before = phase == k - 1
        kept = held[~lookup_sorted(sorted_unique(queue[before & written]), held)[1]]
        held = sorted_unique(np.concatenate([kept, queue[before & read & ~written]]))
        now_read = queue[(phase == k) & read]
        rows.append((k, held[~lookup_sorted(sorted_unique(now_read), held)[1]]))
    if not rows or not sum(len(q) for _, q in rows):
        return pa.table({"scenario": pa.array([], pa.string())})
    ks = np.concatenate([np.full(len(q), k, dtype=np.int32) for k, q in rows])
    qs = np.concatenate([q for _, q in rows])
    names = qt.select(NAMES).take(pa.array(named_at[qs >> 32]))
    names = names.cast(pa.schema([QUEUE_TRAFFIC.field(c) for c in NAMES]))
    return pa.table(
        {
            "scenario": names["scenario"],
            "phase": pa.array(ks, pa.int32()),
            "topic": names["topic"],
            "broker_name": names["broker_name"],
            "queue_id": pa.array((qs & ((1 << 32) - 1)).astype(np.int32), pa.int32()),
        }
    )


def with_drained(topic_inflow: pa.Table, queue_traffic: pa.Table | None) -> pa.Table:
    """topic_inflow with each (scenario, phase, topic)'s drained queues as a list (null: none);
    ``queue_traffic`` None: the run has one phase, and nothing has been drained."""
    target = schemas.GROUP_ROUTES_ARROW.field("drained_queues").type
    queues = drained(queue_traffic) if queue_traffic is not None else pa.table({})
    if "phase" not in queues.column_names:
        return topic_inflow.append_column("drained_queues", pa.nulls(topic_inflow.num_rows, target))
    queues = queues.sort_by([(c, "ascending") for c in (*ROUTE_KEY, "broker_name", "queue_id")])
    ref = pa.StructArray.from_arrays(
        [combined(queues["broker_name"]), combined(queues["queue_id"])], names=["broker_name", "queue_id"]
    )
    # Sorted by route key: each run of equal keys is one list.
    key = joined_key(queues, ROUTE_KEY).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    lists = queues.take(pa.array(starts)).select(ROUTE_KEY)
    refs = pa.ListArray.from_arrays(pa.array(np.r_[starts, len(key)].astype(np.int32)), ref)
    at = lookup(lists, topic_inflow, ROUTE_KEY)
    values = refs.take(pa.array(np.maximum(at, 0)))
    values = pc.if_else(pa.array(at >= 0), values, pa.scalar(None, values.type))
    return topic_inflow.append_column("drained_queues", values.cast(target))


def _backlogs(queues: pa.Table, offsets: pa.Table | None) -> pa.Array:
    """Per queue, the largest backlog any group's offsets give (null: none do)."""
    if offsets is None:
        return pa.nulls(queues.num_rows, pa.int64())
    behind = pc.max_element_wise(
        pc.subtract_checked(offsets["broker_offset"], offsets["consumer_offset"]), pa.scalar(0, pa.int64())
    )
    per_queue = (
        pa.table(
            {
                "topic": offsets["topic"],
                "broker_name": offsets["broker_name"],
                "queue_id": offsets["queue_id"],
                "b": behind,
            }
        )
        .group_by(["topic", "broker_name", "queue_id"], use_threads=False)
        .aggregate([("b", "max")])
    )
    at = lookup(per_queue, queues, ["topic", "broker_name", "queue_id"])
    values = per_queue["b_max"].take(pa.array(np.maximum(at, 0)))
    return pc.if_else(pa.array(at >= 0), values, pa.scalar(None, pa.int64()))


# ------------------------------------------------------------------ unroutable
