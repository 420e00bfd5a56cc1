"""Greedy least-loaded assignment, rmqsim's own strategies' common core (LAG_BALANCED,
RATE_BALANCED): every client computes it alone from what all clients can read.

Per group, queues are taken from the heaviest down (ties: mqAll order) and each goes to the cidAll
position with the least load over its capacity so far, then the fewest queues, then the earliest
position. When a client takes its last queue its load over capacity is at most the group's (no
client is below it then), so it ends with at most its fair part of the weight (total x its
capacity / all capacities) plus its heaviest queue. With every weight 0 it deals queues one per
client in turn, as AVG_BY_CIRCLE does.
"""

from __future__ import annotations

import numpy as np

from rmqsim.arrays import runs
from rmqsim.strategies.batch import GroupBatch

_I64 = np.int64


def owners(batch: GroupBatch, weight: np.ndarray | None, capacity: np.ndarray | None = None) -> np.ndarray:
    """The cidAll position (flat client index) that owns every flat queue of the batch.
    ``weight`` per flat queue (None: all 0), ``capacity`` per flat client (None: all 1)."""
    n_queues = len(batch.queue_id)
    weight = np.zeros(n_queues) if weight is None else np.asarray(weight, dtype=np.float64)
    n_clients = len(batch.client_ids)
    capacity = np.ones(n_clients) if capacity is None else np.asarray(capacity, dtype=np.float64)
    group = batch.queue_group
    owner = np.full(n_queues, -1, _I64)
    c = batch.client_counts
    starts = batch.client_offsets[:-1]
    load = np.zeros(n_clients)  # weight taken over capacity
    count = np.zeros(n_clients)
    position = np.arange(n_clients, dtype=np.float64)
    order = np.lexsort((np.arange(n_queues), -weight, group))  # per group, heaviest first
    rank = np.arange(n_queues) - batch.queue_offsets[group[order]]
    by_step = order[np.argsort(rank, kind="stable")]  # step j: every group's j-th queue, groups ascending
    bounds = np.concatenate([[0], np.cumsum(np.bincount(rank))]) if n_queues else np.zeros(1, _I64)
    for step in range(len(bounds) - 1):
        queues = by_step[bounds[step] : bounds[step + 1]]
        queues = queues[c[group[queues]] > 0]
        if not len(queues):
            continue
        g = group[queues]
        chosen = _argmin_per_segment(load, count, position, starts[g], c[g])
        owner[queues] = chosen
        load[chosen] += weight[queues] / capacity[chosen]  # one queue per group per step: no index repeats
        count[chosen] += 1
    return owner


def _argmin_per_segment(
    load: np.ndarray, count: np.ndarray, position: np.ndarray, start: np.ndarray, size: np.ndarray
) -> np.ndarray:
    """For each segment [start, start + size): the index with the least (load, count, position)."""
    index = runs(start, size)
    cuts = np.cumsum(size) - size
    seg_load = load[index]
    least = np.minimum.reduceat(seg_load, cuts)
    tied = seg_load == np.repeat(least, size)
    seg_count = np.where(tied, count[index], np.inf)
    fewest = np.minimum.reduceat(seg_count, cuts)
    tied &= seg_count == np.repeat(fewest, size)
    first = np.minimum.reduceat(np.where(tied, position[index], np.inf), cuts)
    return first.astype(_I64)
