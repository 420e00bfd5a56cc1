"""The shape every strategy works on: many (topic, group) allocation problems at once.

A batch holds G groups flattened into numpy arrays (CSR style). Group g's mqAll is
``queue_broker[queue_offsets[g]:queue_offsets[g + 1]]`` with ``queue_id`` alongside, and its cidAll
is ``client_ids[client_offsets[g]:client_offsets[g + 1]]``, both already in the order that
``AllocateMessageQueueStrategy.allocate`` receives them. Strategies compute, for every caller (a
client that calls allocate for its own share), the flat queue indices it gets, in the order the
Java method returns them, without a Python loop over groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

# The messages of AbstractAllocateMessageQueueStrategy.check, which every strategy but CONFIG runs.
EMPTY_CURRENT_CID = "currentCID is empty"
EMPTY_MQ_ALL = "mqAll is null or mqAll empty"
EMPTY_CID_ALL = "cidAll is null or cidAll empty"
# How an error of rmqsim's own making starts, so that it is never reported as the client's.
RMQSIM_REFUSES = "rmqsim does not simulate"

_I64 = np.int64

# Flat string columns: numpy object arrays, or Arrow arrays straight from a Spark batch (which
# stay in Arrow memory: AVG never needs a Python string).
Strings = np.ndarray | pa.Array


def _offsets(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=_I64)
    np.cumsum(lengths, out=out[1:])
    return out


@dataclass(frozen=True)
class GroupBatch:
    """G allocation problems and the strategy parameters they need, in ``params`` by name.

    A name starting ``queue_`` holds one value per flat queue, ``client_`` one per flat client,
    any other one value per group:

    - ``virtual_node_cnt`` (int64): CONSISTENT_HASH's virtual nodes per client;
    - ``consumer_idcs`` (object: list of str, or None): MACHINE_ROOM's rooms;
    - ``inner_strategy`` (object: "AVG" or "AVG_BY_CIRCLE"): MACHINE_ROOM_NEARBY's inner strategy;
    - ``queue_room``, ``client_room`` (Strings: str or None): MACHINE_ROOM_NEARBY's resolved rooms;
    - ``client_config`` (config.ConfigLists, or object: list of (broker, queue_id), or None):
      CONFIG's configured list.
    """

    topics: Strings
    queue_offsets: np.ndarray
    queue_broker: Strings
    queue_id: np.ndarray
    client_offsets: np.ndarray
    client_ids: Strings
    params: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_groups(self) -> int:
        return len(self.topics)

    @property
    def queue_counts(self) -> np.ndarray:
        return np.diff(self.queue_offsets)

    @property
    def client_counts(self) -> np.ndarray:
        return np.diff(self.client_offsets)

    @property
    def queue_group(self) -> np.ndarray:
        """The group of every flat queue."""
        return np.repeat(np.arange(self.n_groups, dtype=_I64), self.queue_counts)

    @staticmethod
    def from_lists(
        topics: Sequence[str],
        mq_alls: Sequence[Sequence[tuple[str, int]]],
        cid_alls: Sequence[Sequence[str]],
        params: Mapping[str, np.ndarray] | None = None,
    ) -> GroupBatch:
        """Build a batch from plain Python lists (tests, conformance records)."""
        queues = [q for mq_all in mq_alls for q in mq_all]
        return GroupBatch(
            topics=np.array(list(topics), dtype=object),
            queue_offsets=_offsets(np.array([len(m) for m in mq_alls], dtype=_I64)),
            queue_broker=np.array([b for b, _ in queues], dtype=object),
            queue_id=np.array([i for _, i in queues], dtype=_I64),
            client_offsets=_offsets(np.array([len(c) for c in cid_alls], dtype=_I64)),
            client_ids=np.array([c for cid_all in cid_alls for c in cid_all], dtype=object),
            params=dict(params or {}),
        )

    @staticmethod
    def from_routes(
        topics: Strings,
        broker_offsets: np.ndarray,
        broker_names: Strings,
        read_queue_nums: np.ndarray,
        client_offsets: np.ndarray,
        client_ids: Strings,
        params: Mapping[str, np.ndarray] | None = None,
    ) -> GroupBatch:
        """Expand compact routes (sorted brokers and their read queue counts) into mqAll.

        A topic's mqAll is every broker's queues 0..read_queue_nums-1, brokers in Java order; the
        route stays compact until here so that Spark never shuffles one row per queue.
        """
        nums = read_queue_nums.astype(_I64)
        cumulative = _offsets(nums)
        per_group = cumulative[broker_offsets[1:]] - cumulative[broker_offsets[:-1]]
        queue_broker = take(broker_names, np.repeat(np.arange(len(nums), dtype=_I64), nums))
        starts = np.repeat(cumulative[:-1], nums)
        queue_id = np.arange(len(queue_broker), dtype=_I64) - starts
        return GroupBatch(
            topics=topics,
            queue_offsets=_offsets(per_group),
            queue_broker=queue_broker,
            queue_id=queue_id,
            client_offsets=client_offsets.astype(_I64),
            client_ids=client_ids,
            params=params if params is not None else {},  # kept as given: it may build lazily
        )


@dataclass(frozen=True)
class Callers:
    """The clients that call allocate: their group, flat client index and index in cidAll.

    ``index`` is ``cidAll.indexOf(currentCID)``: the first occurrence, so duplicate client ids share
    the first copy's share (and -1 for a caller that is not in cidAll, which gets nothing).
    """

    group: np.ndarray
    client: np.ndarray
    index: np.ndarray

    def __len__(self) -> int:
        return len(self.group)

    def take(self, mask: np.ndarray) -> Callers:
        return Callers(self.group[mask], self.client[mask], self.index[mask])


def batch_client_codes(batch: GroupBatch) -> np.ndarray:
    """An integer per distinct client id of the batch (equal ids, equal codes)."""
    return factorize(batch.client_ids)


def distinct_callers(batch: GroupBatch) -> Callers:
    """One caller per distinct client id of every group, at its first occurrence in cidAll."""
    n = len(batch.client_ids)
    group = np.repeat(np.arange(batch.n_groups, dtype=_I64), batch.client_counts)
    if n == 0:
        return Callers(group, np.zeros(0, _I64), np.zeros(0, _I64))
    codes = factorize(batch.client_ids)
    key = group * (int(codes.max()) + 1) + codes
    _, first = np.unique(key, return_index=True)
    first = np.sort(first).astype(_I64)
    return Callers(group[first], first, first - batch.client_offsets[group[first]])


def factorize(values: Strings) -> np.ndarray:
    """Integer codes for strings, equal codes for equal strings (0 for null)."""
    if isinstance(values, pa.Array):
        indices = pc.dictionary_encode(values).indices
        return pc.fill_null(pc.add(indices.cast(pa.int64()), 1), 0).to_numpy()
    codes, _ = pd.factorize(values)  # hash-based: O(n), None gets -1
    return codes.astype(_I64) + 1


def blank(values: Strings) -> np.ndarray:
    """True where a string is null or empty."""
    if isinstance(values, pa.Array):
        return pc.fill_null(pc.equal(pc.utf8_length(values), 0), True).to_numpy(zero_copy_only=False)
    return pd.Series(values, dtype=object).fillna("").eq("").to_numpy()


def take(values: Strings, indices: np.ndarray) -> Strings:
    return (
        values.take(pa.array(indices, type=pa.int64())) if isinstance(values, pa.Array) else values[indices]
    )


def lookup_sorted(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each key sits in sorted_keys (0 where absent) and whether it is there."""
    at = np.searchsorted(sorted_keys, keys)
    found = at < len(sorted_keys)
    found[found] = sorted_keys[at[found]] == keys[found]
    return np.where(found, at, 0), found


def as_objects(values: Strings) -> np.ndarray:
    """Python strings, for the strategies that hash or parse names."""
    if isinstance(values, pa.Array):
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)
    return values


def duplicate_client_counts(batch: GroupBatch, callers: Callers) -> np.ndarray:
    """Per group, how many cidAll entries repeat an earlier client id."""
    distinct = np.bincount(callers.group, minlength=batch.n_groups)
    return batch.client_counts - distinct


def group_errors(batch: GroupBatch) -> np.ndarray:
    """The IllegalArgumentException message every caller of a group gets, or None."""
    errors = np.full(batch.n_groups, None, dtype=object)
    errors[batch.client_counts == 0] = EMPTY_CID_ALL
    errors[batch.queue_counts == 0] = EMPTY_MQ_ALL  # checked before cidAll in Java
    return errors


def caller_errors(batch: GroupBatch, callers: Callers) -> np.ndarray:
    """check()'s message for each caller, in Java's order: currentCID, then mqAll, then cidAll."""
    errors = group_errors(batch)[callers.group]
    errors[blank(take(batch.client_ids, callers.client))] = EMPTY_CURRENT_CID
    return errors


@dataclass(frozen=True)
class Allocation:
    """Flat (caller, queue) pairs: caller k of a Callers set owns flat queue q, in returned order.

    Most strategies pick from mqAll, so ``queue`` indexes the batch's flat queues. CONFIG returns
    whatever list it was configured with, which may name queues that are not in mqAll: such a
    strategy gives the queues explicitly in ``broker`` and ``queue_id`` and sets ``queue`` to the
    mqAll index where the queue is there, -1 where it is not. ``null_result`` marks callers whose
    allocate returned null rather than a list (RebalanceImpl then assigns them nothing).
    """

    caller: np.ndarray
    queue: np.ndarray
    broker: Strings | None = None
    queue_id: np.ndarray | None = None
    null_result: np.ndarray | None = None

    @staticmethod
    def from_runs(first: np.ndarray, count: np.ndarray, step: np.ndarray | int = 1) -> Allocation:
        """Caller k gets queues first[k], first[k] + step[k], ... (count[k] of them)."""
        count = np.maximum(count, 0).astype(_I64)
        total = int(count.sum())
        caller = np.repeat(np.arange(len(count), dtype=_I64), count)
        within = np.arange(total, dtype=_I64) - np.repeat(_offsets(count)[:-1], count)
        steps = np.repeat(np.broadcast_to(np.asarray(step, dtype=_I64), count.shape), count)
        return Allocation(caller, np.repeat(first.astype(_I64), count) + within * steps)

    @staticmethod
    def empty() -> Allocation:
        return Allocation(np.zeros(0, _I64), np.zeros(0, _I64))

    @staticmethod
    def from_positions(batch: GroupBatch, callers: Callers, owner: np.ndarray) -> Allocation:
        """From the cidAll position (flat client index, -1 for none) owning every flat queue: each
        caller gets its position's queues, in mqAll order (a duplicate id's later positions have
        no caller, so their queues go unowned, as under AVG)."""
        position_to_caller = np.full(len(batch.client_ids), -1, _I64)
        ok = callers.index >= 0
        position_to_caller[batch.client_offsets[callers.group[ok]] + callers.index[ok]] = np.flatnonzero(ok)
        caller = np.where(owner >= 0, position_to_caller[np.maximum(owner, 0)], -1) if len(owner) else owner
        queue = np.flatnonzero(caller >= 0)
        caller = caller[queue]
        order = np.lexsort((queue, caller))
        return Allocation(caller[order].astype(_I64), queue[order].astype(_I64))

    def brokers(self, batch: GroupBatch) -> Strings:
        """The broker name of every allocated queue."""
        return self.broker if self.broker is not None else take(batch.queue_broker, self.queue)

    def queue_ids(self, batch: GroupBatch) -> np.ndarray:
        return self.queue_id if self.queue_id is not None else batch.queue_id[self.queue]

    def select_callers(self, mapping: np.ndarray, n_callers: int) -> Allocation:
        """The same pairs with caller k renamed mapping[k]: a subset's callers back in a set of
        ``n_callers``."""
        null = None
        if self.null_result is not None:
            null = np.zeros(n_callers, dtype=bool)
            null[mapping] = self.null_result
        return Allocation(mapping[self.caller], self.queue, self.broker, self.queue_id, null)


def concat_allocations(parts: Sequence[Allocation], batch: GroupBatch, n_callers: int) -> Allocation:
    """Allocations over one set of ``n_callers`` callers (disjoint subsets of it), as one."""
    if not parts:
        return Allocation.empty()
    caller = np.concatenate([p.caller for p in parts])
    queue = np.concatenate([p.queue for p in parts])
    broker = queue_id = null = None
    if any(p.broker is not None for p in parts):
        broker = np.concatenate([as_objects(p.brokers(batch)) for p in parts])
        queue_id = np.concatenate([p.queue_ids(batch) for p in parts]).astype(_I64)
    if any(p.null_result is not None for p in parts):
        null = np.zeros(n_callers, dtype=bool)
        for p in parts:
            if p.null_result is not None:
                null |= p.null_result
    return Allocation(caller, queue, broker, queue_id, null)
