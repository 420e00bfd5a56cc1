"""Strategies by RocketMQ name, and the one entry point that runs any of them with Java's checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rmqsim.strategies import avg, avg_by_circle
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch, caller_errors

# RocketMQ's own names; strategies of rmqsim's own must not reuse them.
ROCKETMQ_STRATEGIES = (
    "AVG",
    "AVG_BY_CIRCLE",
    "CONFIG",
    "CONSISTENT_HASH",
    "MACHINE_ROOM",
    "MACHINE_ROOM_NEARBY",
)


@dataclass(frozen=True)
class Strategy:
    name: str
    allocate: Callable[[GroupBatch, Callers], Allocation]
    # AbstractAllocateMessageQueueStrategy.check: every RocketMQ strategy but ByConfig runs it.
    checks_arguments: bool = True


STRATEGIES: Mapping[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(avg.NAME, avg.allocate),
        Strategy(avg_by_circle.NAME, avg_by_circle.allocate),
    )
}


class AllocationError(Exception):
    """What the Java strategy would have thrown (IllegalArgumentException's message)."""


def get(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        known = ", ".join(STRATEGIES)
        if name in ROCKETMQ_STRATEGIES:
            raise KeyError(f"strategy {name} is not implemented yet (available: {known})") from None
        raise KeyError(f"unknown strategy {name!r} (available: {known})") from None


def allocate(strategy: Strategy, batch: GroupBatch, callers: Callers) -> tuple[Allocation, np.ndarray]:
    """Run ``strategy`` for every caller; returns the allocation and each caller's error or None.

    A caller whose call would throw gets nothing, as its rebalance would assign it nothing.
    """
    if strategy.checks_arguments:
        errors = caller_errors(batch, callers)
    else:
        errors = np.full(len(callers), None, dtype=object)
    ok = np.flatnonzero(np.equal(errors, None))
    if len(ok) == len(callers):
        return strategy.allocate(batch, callers), errors
    sub = strategy.allocate(batch, callers.take(ok))
    return Allocation(ok[sub.caller], sub.queue), errors


def allocate_one(
    name: str,
    topic: str,
    mq_all: Sequence[tuple[str, int]] | None,
    cid_all: Sequence[str] | None,
    current_cid: str | None,
    params: Mapping[str, object] | None = None,
) -> list[tuple[str, int]]:
    """One client's allocate() call, as the Java method makes it: raises AllocationError where it throws."""
    batch = GroupBatch.from_lists(
        [topic],
        [list(mq_all or [])],
        [list(cid_all or [])],
        {k: np.array([v], dtype=object) for k, v in (params or {}).items()},
    )
    cids = list(cid_all or [])
    index = cids.index(current_cid) if current_cid in cids else -1
    client = np.array([index if index >= 0 else 0], dtype=np.int64)
    callers = Callers(np.zeros(1, np.int64), client, np.array([index], dtype=np.int64))
    strategy = get(name)
    if strategy.checks_arguments:
        if not current_cid:
            raise AllocationError("currentCID is empty")
        if not mq_all:
            raise AllocationError("mqAll is null or mqAll empty")
        if not cid_all:
            raise AllocationError("cidAll is null or cidAll empty")
        if index < 0:
            return []  # check() logs and returns false: the caller gets an empty list
    result = strategy.allocate(batch, callers)
    return [(batch.queue_broker[q], int(batch.queue_id[q])) for q in result.queue]
