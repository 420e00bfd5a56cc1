"""Stale views: in a stale_view phase, the stale clients keep the share they computed from an
older view of the group (phase ``view_phase``), whatever the others now compute; the split brain
that follows (queues read twice or by nobody) is what group_metrics then counts.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import as_objects, list_column, offsets, runs, take
from rmqsim.stage.batches import broadcasting, phases_of, row_codes
from rmqsim.strategies import Allocation, GroupBatch

if TYPE_CHECKING:
    from rmqsim.stage.dispatch import Allocated


def with_stale_views(rows: pa.RecordBatch, allocated: list[Allocated]) -> list[Allocated]:
    """In stale_view phases, the stale clients' shares replaced by what they got in the view
    phase (the same scenario, group and topic, phase ``view_phase``), whatever the others do.

    BROADCASTING groups are left as they are. A stale client absent from the view's cidAll, or
    whose topic had no route then, gets nothing;
    a queue of the old view that is gone from today's mqAll stays in its list (it still pulls from
    it) but outside mqAll, so it counts neither as owned twice nor as covering anyone's queue.
    """
    stale_offsets, stale_ids = list_column(rows, "stale_clients")
    if not allocated or len(stale_ids) == 0:
        return allocated
    batch = allocated[0].batch
    n = rows.num_rows
    # A BROADCASTING client reads every queue in any view: no queue is read twice or by nobody.
    has_stale = (np.diff(stale_offsets) > 0) & ~broadcasting(rows)
    entity = row_codes(rows, "scenario", "group", "topic")
    phase = phases_of(rows)
    view_phase = pc.fill_null(rows.column("view_phase"), -1).to_numpy(zero_copy_only=False).astype(np.int64)
    row_at = pd.Series(np.arange(n, dtype=np.int64), index=pd.MultiIndex.from_arrays([entity, phase]))
    view_row = found(row_at, [entity, view_phase])
    stale_row = np.repeat(np.arange(n, dtype=np.int64), np.diff(stale_offsets))
    stale_key = pd.MultiIndex.from_arrays([stale_row, as_objects(stale_ids)])
    queue_at = queues_at(batch, has_stale)
    return [_stale_view(a, has_stale, view_row, stale_key, queue_at) for a in allocated]


def found(table: pd.Series, keys: list[np.ndarray]) -> np.ndarray:
    """table's values at ``keys`` (a MultiIndex's levels), -1 where absent."""
    if not len(keys[0]):
        return np.zeros(0, np.int64)
    values = table.reindex(pd.MultiIndex.from_arrays(keys)).to_numpy()
    return np.where(np.isnan(values), -1, values).astype(np.int64)


def _stale_view(
    a: Allocated, has_stale: np.ndarray, view_row: np.ndarray, stale_key: pd.MultiIndex, queue_at: pd.Series
) -> Allocated:
    batch, callers = a.batch, a.callers
    g = callers.group
    involved = np.flatnonzero(has_stale[g])
    ids = as_objects(take(batch.client_ids, callers.client[involved]))
    is_stale = pd.MultiIndex.from_arrays([g[involved], ids]).isin(stale_key)
    stale = np.zeros(len(callers), dtype=bool)
    stale[involved[is_stale]] = True
    replaced = involved[is_stale]
    if not len(replaced):
        return replace(a, stale=stale)
    k, source = same_client_in(a, a, replaced, view_row)
    errors = a.errors.copy()
    errors[replaced] = None
    errors[k] = a.errors[source]
    return replace(a, allocation=carry_over(a, replaced, k, source, queue_at), errors=errors, stale=stale)


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
