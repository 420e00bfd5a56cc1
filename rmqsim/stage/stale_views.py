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
from rmqsim.strategies import Allocation

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
    view_row = _found(row_at, [entity, view_phase])
    stale_row = np.repeat(np.arange(n, dtype=np.int64), np.diff(stale_offsets))
    stale_key = pd.MultiIndex.from_arrays([stale_row, as_objects(stale_ids)])
    fq = np.flatnonzero(has_stale[batch.queue_group])
    queue_at = pd.Series(
        fq,
        index=pd.MultiIndex.from_arrays(
            [batch.queue_group[fq], as_objects(take(batch.queue_broker, fq)), batch.queue_id[fq]]
        ),
    )
    return [_stale_view(a, has_stale, view_row, stale_key, queue_at) for a in allocated]


def _found(table: pd.Series, keys: list[np.ndarray]) -> np.ndarray:
    """table's values at ``keys`` (a MultiIndex's levels), -1 where absent."""
    if not len(keys[0]):
        return np.zeros(0, np.int64)
    values = table.reindex(pd.MultiIndex.from_arrays(keys)).to_numpy()
    return np.where(np.isnan(values), -1, values).astype(np.int64)


def _stale_view(
    a: Allocated, has_stale: np.ndarray, view_row: np.ndarray, stale_key: pd.MultiIndex, queue_at: pd.Series
) -> Allocated:
    batch, callers, alloc = a.batch, a.callers, a.allocation
    g = callers.group
    involved = np.flatnonzero(has_stale[g])
    ids = as_objects(take(batch.client_ids, callers.client[involved]))
    is_stale = pd.MultiIndex.from_arrays([g[involved], ids]).isin(stale_key)
    stale = np.zeros(len(callers), dtype=bool)
    stale[involved[is_stale]] = True
    k = involved[is_stale]
    if not len(k):
        return replace(a, stale=stale)
    # Each stale caller's caller in the view row (same client id), -1 where it was not there.
    in_view = np.flatnonzero(np.isin(g, view_row[g[k]]))
    view_ids = as_objects(take(batch.client_ids, callers.client[in_view]))
    view_caller = pd.Series(in_view, index=pd.MultiIndex.from_arrays([g[in_view], view_ids]))
    source = _found(view_caller, [view_row[g[k]], ids[is_stale]])
    k, source = k[source >= 0], source[source >= 0]
    # The view caller's entries, in the order the strategy returned them, renamed to the stale caller.
    order = np.argsort(alloc.caller, kind="stable")
    count = np.bincount(alloc.caller, minlength=len(callers))
    start = offsets(count)[source]
    taken = count[source]
    entries = order[runs(start, taken)]
    new_caller = np.repeat(k, taken)
    brokers = as_objects(alloc.brokers(batch))
    queue_ids = alloc.queue_ids(batch).astype(np.int64)
    queue = _found(queue_at, [g[new_caller], brokers[entries], queue_ids[entries]])
    keep = ~stale[alloc.caller]
    explicit = alloc.broker is not None or (queue < 0).any()
    errors = a.errors.copy()
    errors[involved[is_stale]] = None
    errors[k] = a.errors[source]
    allocation = Allocation(
        np.concatenate([alloc.caller[keep], new_caller]),
        np.concatenate([alloc.queue[keep], queue]),
        np.concatenate([brokers[keep], brokers[entries]]) if explicit else None,
        np.concatenate([queue_ids[keep], queue_ids[entries]]) if explicit else None,
        alloc.null_result,
    )
    return replace(a, allocation=allocation, errors=errors, stale=stale)
