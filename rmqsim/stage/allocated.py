"""The value every pass of the allocation stage shares: one strategy's allocation over a batch
(``Allocated``), and how a client's queues are carried from one allocation to another, which both
a stale view (stage.stale_views) and a kept answer (stage.kept_answers) do."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rmqsim.arrays import as_objects, offsets, runs, take
from rmqsim.strategies import Allocation, Callers, GroupBatch


@dataclass(frozen=True)
class Allocated:
    """One strategy over the rows of a batch that run it: callers (distinct clients of those
    rows), the queues they own, each caller's error, and who computed them."""

    strategy: str
    batch: GroupBatch
    callers: Callers
    allocation: Allocation
    errors: np.ndarray
    rows: np.ndarray  # the batch rows that run it, client-less ones included
    computed_by: np.ndarray  # per caller, an index into schemas.PATHS (-1: nobody, it is refused)
    stale: np.ndarray | None = None  # callers computing from a stale view (stale_view phases)


def found(table: pd.Series, keys: list[np.ndarray]) -> np.ndarray:
    """table's values at ``keys`` (a MultiIndex's levels), -1 where absent."""
    if not len(keys[0]):
        return np.zeros(0, np.int64)
    values = table.reindex(pd.MultiIndex.from_arrays(keys)).to_numpy()
    return np.where(np.isnan(values), -1, values).astype(np.int64)


def same_client_in(
    source: Allocated, a: Allocated, callers_of: np.ndarray, source_row: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For callers ``callers_of`` of ``a``, the caller of ``source`` (an allocation of the same
    batch) with the same client id in row ``source_row[their row]``: (those callers of ``a`` that
    have one, that caller of ``source``)."""
    batch = a.batch
    g = a.callers.group
    ids = as_objects(take(batch.client_ids, a.callers.client[callers_of]))
    there = np.flatnonzero(np.isin(source.callers.group, source_row[g[callers_of]]))
    there_ids = as_objects(take(batch.client_ids, source.callers.client[there]))
    caller_at = pd.Series(there, index=pd.MultiIndex.from_arrays([source.callers.group[there], there_ids]))
    found_at = found(caller_at, [source_row[g[callers_of]], ids])
    return callers_of[found_at >= 0], found_at[found_at >= 0]


def queues_at(batch: GroupBatch, rows: np.ndarray) -> pd.Series:
    """(row, broker, queue id) -> flat queue index, for the flat queues of ``rows`` (a mask)."""
    fq = np.flatnonzero(rows[batch.queue_group])
    return pd.Series(
        fq,
        index=pd.MultiIndex.from_arrays(
            [batch.queue_group[fq], as_objects(take(batch.queue_broker, fq)), batch.queue_id[fq]]
        ),
    )


def carry_over(
    a: Allocated,
    replaced: np.ndarray,
    k: np.ndarray,
    source: np.ndarray,
    queue_at: pd.Series,
    held_by: Allocated | None = None,
) -> Allocation:
    """Callers ``replaced`` of ``a`` drop what they hold; callers ``k`` (among them) hold instead
    what callers ``source`` of ``held_by`` (default ``a``) hold, in the order those were returned.
    Each queue is looked up again in k's mqAll (``queue_at``: queues_at of k's rows): one no
    longer there stays in the list (the client still pulls from it) but outside mqAll."""
    held_by = held_by or a
    batch, alloc, src = a.batch, a.allocation, held_by.allocation
    g = a.callers.group
    order = np.argsort(src.caller, kind="stable")
    count = np.bincount(src.caller, minlength=len(held_by.callers))
    taken = count[source]
    entries = order[runs(offsets(count)[source], taken)]
    new_caller = np.repeat(k, taken)
    src_brokers = as_objects(src.brokers(batch))[entries]
    src_ids = src.queue_ids(batch).astype(np.int64)[entries]
    queue = found(queue_at, [g[new_caller], src_brokers, src_ids])
    drop = np.zeros(len(a.callers), dtype=bool)
    drop[replaced] = True
    keep = ~drop[alloc.caller]
    explicit = alloc.broker is not None or src.broker is not None or (queue < 0).any()
    return Allocation(
        np.concatenate([alloc.caller[keep], new_caller]),
        np.concatenate([alloc.queue[keep], queue]),
        np.concatenate([as_objects(alloc.brokers(batch))[keep], src_brokers]) if explicit else None,
        np.concatenate([alloc.queue_ids(batch).astype(np.int64)[keep], src_ids]) if explicit else None,
        alloc.null_result,
    )


def of_rows(a: Allocated, rows: np.ndarray, batch: GroupBatch) -> Allocated:
    """``a`` over some of its batch's rows: ``rows`` (sorted row indices), ``batch`` theirs alone
    (stage.batches.to_batch of those rows); their callers and the queues they hold, renumbered in
    the same order. A caller holds queues of its own row's mqAll (index -1: a queue outside it)."""
    old = a.batch
    new_row = np.full(old.n_groups, -1, np.int64)
    new_row[rows] = np.arange(len(rows))
    kept = np.flatnonzero(new_row[a.callers.group] >= 0)
    was = a.callers.group[kept]
    now = new_row[was]
    client = batch.client_offsets[now] + a.callers.client[kept] - old.client_offsets[was]
    callers = Callers(now, client, a.callers.index[kept])
    caller_of = np.full(len(a.callers), -1, np.int64)
    caller_of[kept] = np.arange(len(kept))
    alloc = a.allocation
    held = np.flatnonzero(caller_of[alloc.caller] >= 0)
    queue = alloc.queue[held]
    row = a.callers.group[alloc.caller[held]]
    queue = np.where(queue >= 0, batch.queue_offsets[new_row[row]] + queue - old.queue_offsets[row], queue)
    allocation = Allocation(
        caller_of[alloc.caller[held]],
        queue,
        None if alloc.broker is None else take(alloc.broker, held),
        None if alloc.queue_id is None else alloc.queue_id[held],
        None if alloc.null_result is None else alloc.null_result[kept],
    )
    runs_it = new_row[a.rows]
    return Allocated(
        a.strategy,
        batch,
        callers,
        allocation,
        a.errors[kept],
        runs_it[runs_it >= 0],
        a.computed_by[kept],
        None if a.stale is None else a.stale[kept],
    )
