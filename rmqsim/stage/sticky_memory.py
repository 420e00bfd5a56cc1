"""STICKY's memory between phases: each phase starts from the assignment STICKY made in the phase
before for the same (scenario, topic, group) (none in phase 0, where it is AVG's blocks).

The strategy itself (strategies.sticky) is a pure function of mqAll, cidAll and the previous
owner of every queue; this module is what remembers that owner from one phase to the next.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa

from rmqsim.arrays import as_objects
from rmqsim.stage.batches import broadcasting, phases_of, row_codes
from rmqsim.strategies import Allocation, Callers, GroupBatch, registry, sticky
from rmqsim.strategies.batch import batch_client_codes, concat_allocations
from rmqsim.strategies.params import ParamValues


def sticky_by_phase(
    rows: pa.RecordBatch, batch: GroupBatch, callers: Callers
) -> tuple[Allocation, np.ndarray]:
    """STICKY over a batch's phases in order; BROADCASTING groups read everything under STICKY too.
    Returns the allocation and each caller's error or None."""
    strategy = registry.get(sticky.NAME)
    phase = phases_of(rows)
    entity = row_codes(rows, "scenario", "group", "topic")
    _, broker = np.unique(as_objects(batch.queue_broker), return_inverse=True)
    queue_key = pd.MultiIndex.from_arrays([entity[batch.queue_group], broker, batch.queue_id])
    client_code = batch_client_codes(batch)
    first_position = _first_positions(batch, client_code)
    listens = broadcasting(rows)
    parts: list[Allocation] = []
    errors = np.full(len(callers), None, dtype=object)
    last_owner: pd.Series | None = None  # (entity, broker, queue id) -> client code, last phase
    for p in np.unique(phase):
        these = np.flatnonzero(phase[callers.group] == p)
        if not len(these):  # every client had left (scenarios.apply.with_left_subscriptions)
            last_owner = None
            continue
        previous = _previous_owners(batch, callers.group[these], last_owner, queue_key, first_position)
        phase_batch = replace(batch, params=ParamValues(queue_previous_owner=previous))
        cluster = these[~listens[callers.group[these]]]
        allocated, sub_errors = registry.allocate(strategy, phase_batch, callers.take(cluster))
        clustered = allocated.select_callers(cluster, len(callers))
        parts.append(clustered)
        errors[cluster] = sub_errors
        reading = these[listens[callers.group[these]]]
        if len(reading):
            everything = Allocation.every_queue(batch, callers.group[reading])
            parts.append(everything.select_callers(reading, len(callers)))
        last_owner = pd.Series(
            client_code[callers.client[clustered.caller]], index=queue_key[clustered.queue]
        )
        last_owner = last_owner[~last_owner.index.duplicated()]
    return concat_allocations(parts, batch, len(callers)), errors


def _previous_owners(
    batch: GroupBatch,
    groups: np.ndarray,
    last_owner: pd.Series | None,
    queue_key: pd.MultiIndex,
    first_position: pd.Series,
) -> np.ndarray:
    """For every flat queue of ``groups``, the cidAll position in today's group of the client that
    owned it in the last phase, -1 where none (or where that client is gone)."""
    previous = np.full(len(batch.queue_id), -1, np.int64)
    flat = np.flatnonzero(np.isin(batch.queue_group, np.unique(groups)))
    if last_owner is None or not len(flat):
        return previous
    code = last_owner.reindex(queue_key[flat]).to_numpy()
    known = ~np.isnan(code)
    g = batch.queue_group[flat[known]]
    found = first_position.reindex(pd.MultiIndex.from_arrays([g, code[known].astype(np.int64)])).to_numpy()
    previous[flat[known]] = np.where(np.isnan(found), -1, found).astype(np.int64)
    return previous


def _first_positions(batch: GroupBatch, client_code: np.ndarray) -> pd.Series:
    """(group, client code) -> the cidAll position of that client's first copy in the group."""
    position_group = np.repeat(np.arange(batch.n_groups, dtype=np.int64), batch.client_counts)
    within = np.arange(len(client_code)) - batch.client_offsets[position_group]
    table = pd.Series(within, index=pd.MultiIndex.from_arrays([position_group, client_code]))
    return table[~table.index.duplicated()]  # a duplicated id's first position
