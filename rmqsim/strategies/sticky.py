"""STICKY: rmqsim's own strategy. AVG's balance, and as few owner changes as that balance allows.

Every client computes it alone from what all clients share: mqAll, cidAll (both sorted as
RocketMQ sorts them) and the previous assignment (``queue_previous_owner``: for every queue, the
cidAll position of the client that owned it, -1 for none). A client could keep the previous
assignment as the one it last computed, since all clients computed the same one.

With n queues and c cidAll entries, every position gets floor(n/c) queues and n % c of them one
more, as under AVG. The extra ones go to the positions that owned the most queues before (ties: the
earlier position). Each position keeps its previous queues, in mqAll order, up to its share; the
queues left over go, in mqAll order, to the positions with room, in cidAll order. That keeps the
most queues any assignment balanced within one queue per client can keep, so its owner changes
are exactly movement's min_moves. With no previous assignment it is AVG, block for block.

A client id listed twice takes its first position's share, as under AVG.
"""

from __future__ import annotations

import numpy as np

from rmqsim.strategies.batch import Allocation, Callers, GroupBatch

NAME = "STICKY"

_I64 = np.int64


def _rank_within(keys_sorted_group: np.ndarray) -> np.ndarray:
    """0, 1, 2... within each run of equal values of an already sorted array."""
    n = len(keys_sorted_group)
    if n == 0:
        return np.zeros(0, _I64)
    starts = np.concatenate([[True], keys_sorted_group[1:] != keys_sorted_group[:-1]])
    start_index = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    return np.arange(n) - start_index


def owners(batch: GroupBatch) -> np.ndarray:
    """The cidAll position (flat client index) that owns every flat queue of the batch."""
    n_queues = len(batch.queue_id)
    previous = batch.params.queue_previous_owner
    previous = np.full(n_queues, -1, _I64) if previous is None else np.asarray(previous, dtype=_I64)
    group = batch.queue_group
    n = batch.queue_counts
    c = batch.client_counts
    floor = np.where(c > 0, n // np.maximum(c, 1), 0)
    extra = np.where(c > 0, n % np.maximum(c, 1), 0)
    position_group = np.repeat(np.arange(batch.n_groups, dtype=_I64), c)
    # previous: a position within the group's cidAll, or -1.
    had = previous >= 0
    flat_previous = np.where(had, batch.client_offsets[group] + np.where(had, previous, 0), -1)
    k = np.bincount(flat_previous[had], minlength=len(position_group))
    # The extra queues go to the positions that had the most, earlier positions first.
    order = np.lexsort((np.arange(len(position_group)), -k, position_group))
    rank = np.empty(len(order), _I64)
    rank[order] = _rank_within(position_group[order])
    cap = floor[position_group] + (rank < extra[position_group])
    # Each position keeps its previous queues in mqAll order, up to its share.
    mine = np.flatnonzero(had)
    within = _rank_within(flat_previous[mine][np.argsort(flat_previous[mine], kind="stable")])
    kept_rank = np.empty(len(mine), _I64)
    kept_rank[np.argsort(flat_previous[mine], kind="stable")] = within
    keep = np.zeros(n_queues, bool)
    keep[mine] = kept_rank < cap[flat_previous[mine]]
    owner = np.where(keep, flat_previous, -1)
    # The rest, in mqAll order, fill the room left, position by position.
    room = cap - np.bincount(owner[keep], minlength=len(position_group))
    slots = np.repeat(np.arange(len(position_group), dtype=_I64), np.maximum(room, 0))
    leftover = ~keep & (c[group] > 0)
    owner[leftover] = slots[: int(leftover.sum())]
    return owner


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    return Allocation.from_positions(batch, callers, owners(batch))
