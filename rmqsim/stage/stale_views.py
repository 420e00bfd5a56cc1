"""Stale views: in a stale_view phase, the stale clients keep the share they computed from an
older view of the group (phase ``view_phase``), whatever the others now compute; the split brain
that follows (queues read twice or by nobody) is what group_metrics then counts.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import as_objects, list_column, take
from rmqsim.stage.allocated import Allocated, carry_over, found, queues_at, same_client_in
from rmqsim.stage.batches import broadcasting, phases_of, row_codes


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
