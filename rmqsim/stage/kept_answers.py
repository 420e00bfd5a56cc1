"""The broker's null answer (and the proxy's failed one): the client keeps what it had.

QueryAssignmentProcessor answers null for a strategy it does not have (it knows AVG and
AVG_BY_CIRCLE) and where its allocation throws. The client then keeps its assignment: nothing in
phase 0, and in a later phase whatever it held in the phase before, computed by whichever code
held it then (a set_strategy step may have changed the strategy; an earlier null answer may have
been kept too). Phases are taken in order, so a chain of null answers carries the first queues on.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa

from rmqsim.stage.allocated import Allocated, carry_over, found, queues_at, same_client_in
from rmqsim.stage.batches import phases_of, row_codes


def with_kept_answers(
    rows: pa.RecordBatch, allocated: list[Allocated], *, answered_null: tuple[int, ...]
) -> list[Allocated]:
    """``answered_null``: the computed_by codes of the callers whose broker (or proxy) answered null.

    Where strategies are compared, a row's previous phase ran the same strategy; with each
    group's configured one, the previous phase's row runs one strategy, maybe another."""
    if not any(np.isin(a.computed_by, answered_null).any() for a in allocated):
        return allocated
    phase = phases_of(rows)
    entity = row_codes(rows, "scenario", "group", "topic")
    row_at = pd.Series(
        np.arange(rows.num_rows, dtype=np.int64), index=pd.MultiIndex.from_arrays([entity, phase])
    )
    previous_row = found(row_at, [entity, phase - 1])
    compare = rows.column("compare").to_numpy(zero_copy_only=False)
    out = list(allocated)
    for p in np.unique(phase[phase > 0]):
        for i, a in enumerate(out):
            takers = np.flatnonzero(np.isin(a.computed_by, answered_null) & (phase[a.callers.group] == p))
            if len(takers):
                holders = [a] if compare[a.callers.group[takers[0]]] else out
                out[i] = _kept(a, takers, holders, previous_row)
    return out


def _kept(a: Allocated, takers: np.ndarray, holders: list[Allocated], previous_row: np.ndarray) -> Allocated:
    """``a`` with each of ``takers`` holding what its client held in the previous phase's row,
    in whichever of ``holders`` has that row."""
    has_taker = np.zeros(a.batch.n_groups, dtype=bool)
    has_taker[a.callers.group[takers]] = True
    queue_at = queues_at(a.batch, has_taker)
    for held_by in holders:
        k, source = same_client_in(held_by, a, takers, previous_row)
        if len(k):
            a = replace(a, allocation=carry_over(a, k, k, source, queue_at, held_by=held_by))
    return a
