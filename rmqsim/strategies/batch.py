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
from functools import cached_property

import numpy as np
import pandas as pd

from rmqsim.arrays import (
    Strings,
    as_objects,
    factorize,
    lookup_sorted,
    null_or_empty,
    offsets,
    runs,
    take,
    within_runs,
)
from rmqsim.strategies.params import Params, ParamValues

# The messages of AbstractAllocateMessageQueueStrategy.check, which every strategy but CONFIG runs.
EMPTY_CURRENT_CID = "currentCID is empty"
EMPTY_MQ_ALL = "mqAll is null or mqAll empty"
EMPTY_CID_ALL = "cidAll is null or cidAll empty"
# How an error of rmqsim's own making starts, so that it is never reported as the client's.
RMQSIM_REFUSES = "rmqsim does not simulate"

_I64 = np.int64


@dataclass(frozen=True)
class GroupBatch:
    """G allocation problems and the strategy parameters they need (``params``: strategies.params)."""

    topics: Strings
    queue_offsets: np.ndarray
    queue_broker: Strings
    queue_id: np.ndarray
    client_offsets: np.ndarray
    client_ids: Strings
    params: Params = field(default_factory=ParamValues)

    @property
    def n_groups(self) -> int:
        return len(self.topics)

    @property
    def queue_counts(self) -> np.ndarray:
        return np.diff(self.queue_offsets)

    @property
    def client_counts(self) -> np.ndarray:
        return np.diff(self.client_offsets)

    # Codes and callers several passes of the stage key a batch by, computed once per batch (the
    # batch is never changed; the arrays are read-only).
    @cached_property
    def client_codes(self) -> np.ndarray:
        """An integer per distinct client id (equal ids, equal codes; 0: null)."""
        return _read_only(factorize(self.client_ids))

    @cached_property
    def broker_codes(self) -> np.ndarray:
        """An integer per distinct broker name of the flat queues (0: null)."""
        return _read_only(factorize(self.queue_broker))

    @cached_property
    def distinct_callers(self) -> Callers:
        """One caller per distinct client id of every group, at its first occurrence in cidAll."""
        n = len(self.client_ids)
        group = np.repeat(np.arange(self.n_groups, dtype=_I64), self.client_counts)
        if n == 0:
            return Callers(group, np.zeros(0, _I64), np.zeros(0, _I64))
        codes = self.client_codes
        key = group * (int(codes.max()) + 1) + codes
        first = np.sort(np.unique(key, return_index=True)[1]).astype(_I64)
        return Callers(group[first], first, first - self.client_offsets[group[first]])

    @property
    def queue_group(self) -> np.ndarray:
        """The group of every flat queue."""
        return np.repeat(np.arange(self.n_groups, dtype=_I64), self.queue_counts)

    @staticmethod
    def from_lists(
        topics: Sequence[str],
        mq_alls: Sequence[Sequence[tuple[str, int]]],
        cid_alls: Sequence[Sequence[str]],
        params: Params | Mapping[str, object] | None = None,
    ) -> GroupBatch:
        """Build a batch from plain Python lists (tests, conformance records); ``params`` may be
        given as ParamValues' keyword arguments."""
        queues = [q for mq_all in mq_alls for q in mq_all]
        return GroupBatch(
            topics=np.array(list(topics), dtype=object),
            queue_offsets=offsets(np.array([len(m) for m in mq_alls], dtype=_I64)),
            queue_broker=np.array([b for b, _ in queues], dtype=object),
            queue_id=np.array([i for _, i in queues], dtype=_I64),
            client_offsets=offsets(np.array([len(c) for c in cid_alls], dtype=_I64)),
            client_ids=np.array([c for cid_all in cid_alls for c in cid_all], dtype=object),
            params=ParamValues(**params) if isinstance(params, Mapping) else params or ParamValues(),
        )

    @staticmethod
    def from_routes(
        topics: Strings,
        broker_offsets: np.ndarray,
        broker_names: Strings,
        read_queue_nums: np.ndarray,
        client_offsets: np.ndarray,
        client_ids: Strings,
        params: Params | None = None,
    ) -> GroupBatch:
        """Expand compact routes (sorted brokers and their read queue counts) into mqAll.

        A topic's mqAll is every broker's queues 0..read_queue_nums-1, brokers in Java order; the
        route stays compact until here so that Spark never shuffles one row per queue.
        """
        nums = read_queue_nums.astype(_I64)
        cumulative = offsets(nums)
        per_group = cumulative[broker_offsets[1:]] - cumulative[broker_offsets[:-1]]
        queue_broker = take(broker_names, np.repeat(np.arange(len(nums), dtype=_I64), nums))
        queue_id = within_runs(nums)
        return GroupBatch(
            topics=topics,
            queue_offsets=offsets(per_group),
            queue_broker=queue_broker,
            queue_id=queue_id,
            client_offsets=client_offsets.astype(_I64),
            client_ids=client_ids,
            params=params if params is not None else ParamValues(),
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
    return batch.client_codes


def distinct_callers(batch: GroupBatch) -> Callers:
    """One caller per distinct client id of every group, at its first occurrence in cidAll."""
    return batch.distinct_callers


def _read_only(values: np.ndarray) -> np.ndarray:
    values.flags.writeable = False
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
    errors[null_or_empty(take(batch.client_ids, callers.client))] = EMPTY_CURRENT_CID
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
        caller = np.repeat(np.arange(len(count), dtype=_I64), count)
        within = within_runs(count)
        steps = np.repeat(np.broadcast_to(np.asarray(step, dtype=_I64), count.shape), count)
        return Allocation(caller, np.repeat(first.astype(_I64), count) + within * steps)

    @staticmethod
    def every_queue(batch: GroupBatch, groups: np.ndarray) -> Allocation:
        """Caller k reads every queue of group ``groups[k]``, in mqAll order."""
        return Allocation.from_runs(batch.queue_offsets[groups], batch.queue_counts[groups])

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

    def select_entries(self, keep: np.ndarray) -> Allocation:
        """The pairs where ``keep``, for the same callers."""
        broker = None if self.broker is None else take(self.broker, np.flatnonzero(keep))
        queue_id = None if self.queue_id is None else self.queue_id[keep]
        return Allocation(self.caller[keep], self.queue[keep], broker, queue_id, self.null_result)

    def select_callers(self, mapping: np.ndarray, n_callers: int) -> Allocation:
        """The same pairs with caller k renamed mapping[k]: a subset's callers back in a set of
        ``n_callers``."""
        null = None
        if self.null_result is not None:
            null = np.zeros(n_callers, dtype=bool)
            null[mapping] = self.null_result
        return Allocation(mapping[self.caller], self.queue, self.broker, self.queue_id, null)


def read_pairs(
    allocation: Allocation, batch: GroupBatch, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(caller, flat queue) for every mqAll queue each caller reads: its queues that are in mqAll,
    and for a ``(broker, -1)`` entry every queue of that broker in its group's mqAll (a POP client
    pops from all of them). ``groups``: each caller's group."""
    caller, queue = allocation.caller, allocation.queue
    inside = queue >= 0
    whole = ~inside & (allocation.queue_ids(batch) == -1) if allocation.queue_id is not None else None
    if whole is None or not whole.any():
        return caller[inside], queue[inside]
    at = np.flatnonzero(whole)
    brokers = as_objects(take(allocation.brokers(batch), at))
    queue_brokers = as_objects(batch.queue_broker)
    names = pd.Index(pd.unique(np.concatenate([queue_brokers, brokers])))
    # Each broker's queues are one contiguous run of its group's mqAll (sorted by broker name).
    key = batch.queue_group * len(names) + names.get_indexer(queue_brokers)
    runs_key, first, count = np.unique(key, return_index=True, return_counts=True)
    wanted = groups[caller[at]] * len(names) + names.get_indexer(brokers)
    where, hit = lookup_sorted(runs_key, wanted)
    n = np.where(hit, count[where], 0)
    return (
        np.concatenate([caller[inside], np.repeat(caller[at], n)]),
        np.concatenate([queue[inside], runs(first[where], n)]),
    )


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
