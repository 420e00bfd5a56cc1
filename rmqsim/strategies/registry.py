"""Strategies by RocketMQ name, and the one entry point that runs any of them with Java's checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rmqsim.arrays import as_objects
from rmqsim.strategies import (
    avg,
    avg_by_circle,
    by_config,
    consistent_hash,
    lag_balanced,
    machine_room,
    machine_room_nearby,
    rate_balanced,
    sticky,
)
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch, caller_errors
from rmqsim.strategies.params import Params

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
    """A strategy: ``allocate`` over callers that passed the checks, and the checks.

    ``check``, where a strategy has its own, returns each caller's error message (what the Java
    class throws: an illegal parameter, a machine room it cannot resolve) or None; it runs after
    the common argument checks, which every RocketMQ strategy but ByConfig makes.
    """

    name: str
    allocate: Callable[[GroupBatch, Callers], Allocation]
    checks_arguments: bool = True
    check: Callable[[GroupBatch, Callers], np.ndarray] | None = None


STRATEGIES: Mapping[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(avg.NAME, avg.allocate),
        Strategy(avg_by_circle.NAME, avg_by_circle.allocate),
        Strategy(by_config.NAME, by_config.allocate, checks_arguments=False),
        Strategy(consistent_hash.NAME, consistent_hash.allocate, check=consistent_hash.check),
        Strategy(machine_room.NAME, machine_room.allocate, check=machine_room.check),
        Strategy(machine_room_nearby.NAME, machine_room_nearby.allocate, check=machine_room_nearby.check),
        # rmqsim's own: what a client-side strategy that remembers the last assignment could do.
        Strategy(sticky.NAME, sticky.allocate),
        Strategy(lag_balanced.NAME, lag_balanced.allocate),
        Strategy(rate_balanced.NAME, rate_balanced.allocate),
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
    if strategy.check is not None:
        unchecked = np.flatnonzero(np.equal(errors, None))
        errors[unchecked] = strategy.check(batch, callers.take(unchecked))
    ok = np.flatnonzero(np.equal(errors, None))
    if len(ok) == len(callers):
        return strategy.allocate(batch, callers), errors
    return strategy.allocate(batch, callers.take(ok)).select_callers(ok, len(callers)), errors


def allocate_one(
    name: str,
    topic: str,
    mq_all: Sequence[tuple[str, int]] | None,
    cid_all: Sequence[str] | None,
    current_cid: str | None,
    params: Params | Mapping[str, object] | None = None,
) -> list[tuple[str, int]] | None:
    """One client's allocate() call, as the Java method makes it: raises AllocationError where it
    throws, returns None where it returns null. ``params``: as GroupBatch.from_lists takes them."""
    batch = GroupBatch.from_lists([topic], [list(mq_all or [])], [list(cid_all or [])], params)
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
    if strategy.check is not None:
        error = strategy.check(batch, callers)[0]
        if error is not None:
            raise AllocationError(error)
    result = strategy.allocate(batch, callers)
    if result.null_result is not None and result.null_result[0]:
        return None
    return list(zip(as_objects(result.brokers(batch)).tolist(), result.queue_ids(batch).tolist()))
