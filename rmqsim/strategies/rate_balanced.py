"""RATE_BALANCED: rmqsim's own strategy. Balances messages per second over each client's capacity,
not queue counts (docs/CONTRACT.md, section 2d).

Every client computes it alone from what all clients can read: mqAll, cidAll, each queue's inflow
(``queue_inflow``: the broker's put statistics) and each client's capacity (``client_capacity``:
what the clients publish of themselves). Greedy least-loaded assignment (strategies.least_loaded)
with the inflow as weight: no client ends above its fair part of the inflow (the group's total x
its capacity / the group's capacities) plus its busiest single queue. A client of unknown capacity
counts as the mean of the group's known ones, and a group with none known as clients alike.
Without rates it is AVG_BY_CIRCLE's deal.

A client id listed twice takes its first position's share, as under AVG.
"""

from __future__ import annotations

import numpy as np

from rmqsim.strategies import least_loaded
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch

NAME = "RATE_BALANCED"


def capacities(batch: GroupBatch) -> np.ndarray | None:
    """Each flat client's capacity as the strategy weighs it: its own; the group's known mean where
    unknown (or not above 0); 1 for a group with none known."""
    given = batch.params.client_capacity
    if given is None:
        return None
    given = np.asarray(given, dtype=np.float64)
    known = np.isfinite(given) & (given > 0)
    group = np.repeat(np.arange(batch.n_groups), batch.client_counts)
    total = np.bincount(group, weights=np.where(known, given, 0.0), minlength=batch.n_groups)
    counted = np.bincount(group, weights=known, minlength=batch.n_groups)
    mean = np.where(counted > 0, total / np.maximum(counted, 1), 1.0)
    return np.where(known, given, mean[group])


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    owner = least_loaded.owners(batch, batch.params.queue_inflow, capacities(batch))
    return Allocation.from_positions(batch, callers, owner)
