"""Which code computes each client's queues, for every (row, strategy) of a batch.

- a CLUSTERING group: its strategy (strategies.registry), every client computing its own share;
- a BROADCASTING group: no balancing, every client reads every queue, whatever the strategy;
- STICKY: the strategy, phase after phase, from the assignment it made before (stage.sticky_memory);
- a stale_view phase: the stale clients keep what they computed from their old view (stage.stale_views).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rmqsim.stage import sticky_memory
from rmqsim.stage.batches import broadcasting, rows_by_strategy, to_batch
from rmqsim.stage.stale_views import with_stale_views
from rmqsim.strategies import Allocation, Callers, GroupBatch, distinct_callers, registry, sticky
from rmqsim.strategies.batch import concat_allocations


@dataclass(frozen=True)
class Allocated:
    """One strategy over the rows of a batch that run it: callers (distinct clients of those
    rows), the queues they own, and each caller's error."""

    strategy: str
    batch: GroupBatch
    callers: Callers
    allocation: Allocation
    errors: np.ndarray
    rows: np.ndarray  # the batch rows that run it, client-less ones included
    stale: np.ndarray | None = None  # callers computing from a stale view (stale_view phases)


def allocate_rows(rows: pa.RecordBatch) -> list[Allocated]:
    """Every strategy a row asks for, each run once over all the rows that ask for it.

    The route and client lists are expanded once per batch, whatever the number of strategies.
    """
    batch = to_batch(rows)
    everyone = distinct_callers(batch)
    listens = broadcasting(rows)
    out = []
    for name, row_ids in rows_by_strategy(rows).items():
        callers = everyone.take(np.isin(everyone.group, row_ids))
        if name == sticky.NAME:
            allocation, errors = sticky_memory.sticky_by_phase(rows, batch, callers)
        else:
            allocation, errors = allocate_or_broadcast(name, batch, callers, listens[callers.group])
        out.append(Allocated(name, batch, callers, allocation, errors, row_ids))
    return with_stale_views(rows, out)


def allocate_or_broadcast(
    name: str, batch: GroupBatch, callers: Callers, listening: np.ndarray
) -> tuple[Allocation, np.ndarray]:
    """Strategy ``name`` for the callers of CLUSTERING groups; every queue of its group for each
    caller where ``listening`` (a BROADCASTING group). Returns the allocation and each caller's
    error or None."""
    strategy = registry.get(name)
    if not listening.any():
        return registry.allocate(strategy, batch, callers)
    clustering = np.flatnonzero(~listening)
    allocated, sub_errors = registry.allocate(strategy, batch, callers.take(clustering))
    everyone_reads = np.flatnonzero(listening)
    allocation = concat_allocations(
        [
            allocated.select_callers(clustering, len(callers)),
            Allocation.every_queue(batch, callers.group[everyone_reads]).select_callers(
                everyone_reads, len(callers)
            ),
        ],
        batch,
        len(callers),
    )
    errors = np.full(len(callers), None, dtype=object)
    errors[clustering] = sub_errors
    return allocation, errors
