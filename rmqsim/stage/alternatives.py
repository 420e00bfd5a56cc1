"""What a group would get another way, for the recommendation (docs/CONTRACT.md, section 2b):

- a group with idle clients (more clients than queues, balanced on the client) in POP mode with
  the smallest pop_share_queue_num that leaves no client idle: 1. With more clients than queues the
  broker then hands client i exactly mqAll[i % n] (with two clients and one queue, 1 >= 2 - 1: both
  read everything), so nobody sits idle and each queue is shared by about clients / queues;
- a group whose clients run different libraries, with every client on the Java client's code: the
  queues it would read twice or by nobody then.

Only phase 0 (the snapshot as it is) is looked at, and only the groups concerned are allocated
again, over the whole batch at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rmqsim.stage import skew
from rmqsim.stage.allocated import Allocated
from rmqsim.strategies import broker, registry
from rmqsim.strategies.batch import read_pairs

POP_SHARE_QUEUE_NUM = 1  # the smallest that leaves no client idle, when clients outnumber queues


@dataclass(frozen=True)
class Alternatives:
    """Per group of the batch; NaN (null) where the alternative does not apply."""

    pop_idle_consumers: np.ndarray
    pop_max_message_share: np.ndarray
    one_library_multi_owned: np.ndarray
    one_library_unassigned: np.ndarray


def alternatives(
    a: Allocated, phase: np.ndarray, on_client: np.ndarray, consumers: np.ndarray
) -> Alternatives:
    """``phase`` and ``on_client`` (balanced by its clients, CLUSTERING) per row; ``consumers``:
    distinct clients per group."""
    batch = a.batch
    n = batch.n_groups
    idle = (phase == 0) & on_client & (consumers > batch.queue_counts) & (batch.queue_counts > 0)
    codes = a.computed_by
    g = a.callers.group
    low = np.full(n, np.iinfo(np.int64).max)
    high = np.full(n, -1)
    np.minimum.at(low, g, codes)
    np.maximum.at(high, g, codes)
    mixed = (phase == 0) & on_client & (high > low) & (a.strategy in registry.ROCKETMQ_STRATEGIES)
    pop_idle, pop_share = _pop(a, idle)
    multi, unassigned = _one_library(a, mixed)
    return Alternatives(pop_idle, pop_share, multi, unassigned)


def _pop(a: Allocated, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    batch, n = a.batch, a.batch.n_groups
    idle, share = np.full(n, np.nan), np.full(n, np.nan)
    k = np.flatnonzero(groups[a.callers.group])
    if not len(k):
        return idle, share
    name = a.strategy if a.strategy in broker.INNER else "AVG"  # the broker has only these two
    callers = a.callers.take(k)
    answered, _, _ = broker.answer(
        batch,
        callers,
        strategy=np.full(n, name, dtype=object),
        pop=np.ones(n, dtype=bool),
        pop_share_queue_num=np.full(n, POP_SHARE_QUEUE_NUM, dtype=np.int64),
    )
    caller, queue = read_pairs(answered, batch, callers.group)
    readers = np.bincount(queue, minlength=len(batch.queue_id))
    reads = np.bincount(caller, minlength=len(k))
    parts = np.bincount(caller, weights=1.0 / readers[queue], minlength=len(k))
    stats = skew.segment_stats(parts, callers.group, n)
    concerned = np.flatnonzero(groups)
    idle[concerned] = np.bincount(callers.group, weights=reads == 0, minlength=n)[concerned]
    share[concerned] = stats.maximum[concerned]
    return idle, share


def _one_library(a: Allocated, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    batch, n = a.batch, a.batch.n_groups
    multi, unassigned = np.full(n, np.nan), np.full(n, np.nan)
    k = np.flatnonzero(groups[a.callers.group])
    if not len(k):
        return multi, unassigned
    callers = a.callers.take(k)
    answered, _ = registry.allocate(registry.get(a.strategy), batch, callers)
    _, queue = read_pairs(answered, batch, callers.group)
    readers = np.bincount(queue, minlength=len(batch.queue_id))
    concerned = np.flatnonzero(groups)
    per_group = lambda w: np.bincount(batch.queue_group, weights=w, minlength=n)[concerned]  # noqa: E731
    multi[concerned] = per_group(readers > 1)
    unassigned[concerned] = per_group(readers == 0)
    return multi, unassigned
