"""LAG_BALANCED: rmqsim's own strategy. Balances backlog (messages not yet consumed), not queue counts.

Every client computes it alone from what all clients share: mqAll, cidAll and each queue's
backlog (``queue_backlog``, from consumer offsets; all zero where unknown). Queues are taken from
the largest backlog down (ties: mqAll order) and each goes to the cidAll position with the least
backlog so far, then the fewest queues, then the earliest position: greedy least-loaded
assignment, so no client ends above total / clients + the largest single queue's backlog. With
no backlog known it deals queues out one per client in turn, as AVG_BY_CIRCLE does.

A client id listed twice takes its first position's share, as under AVG.
"""

from __future__ import annotations

import numpy as np

from rmqsim.arrays import runs
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch

NAME = "LAG_BALANCED"

_I64 = np.int64


def owners(batch: GroupBatch) -> np.ndarray:
    """The cidAll position (flat client index) that owns every flat queue of the batch."""
    n_queues = len(batch.queue_id)
    backlog = batch.params.queue_backlog
    backlog = np.zeros(n_queues) if backlog is None else np.asarray(backlog, dtype=np.float64)
    group = batch.queue_group
    owner = np.full(n_queues, -1, _I64)
    c = batch.client_counts
    starts = batch.client_offsets[:-1]
    load = np.zeros(len(batch.client_ids))
    count = np.zeros(len(batch.client_ids))
    position = np.arange(len(batch.client_ids), dtype=np.float64)
    order = np.lexsort((np.arange(n_queues), -backlog, group))  # per group, biggest backlog first
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
        load[chosen] += backlog[queues]  # one queue per group per step: no index repeats
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


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    return Allocation.from_positions(batch, callers, owners(batch))
