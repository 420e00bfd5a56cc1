"""LAG_BALANCED: rmqsim's own strategy. Balances backlog (messages not yet consumed), not queue counts.

Every client computes it alone from what all clients share: mqAll, cidAll and each queue's
backlog (``queue_backlog``, from consumer offsets; all zero where unknown). Greedy least-loaded
assignment (strategies.least_loaded) with the backlog as weight, every client alike: no client
ends above total / clients + the largest single queue's backlog. With no backlog known it deals
queues out one per client in turn, as AVG_BY_CIRCLE does.

A client id listed twice takes its first position's share, as under AVG.
"""

from __future__ import annotations

from rmqsim.strategies import least_loaded
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch

NAME = "LAG_BALANCED"


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    return Allocation.from_positions(batch, callers, least_loaded.owners(batch, batch.params.queue_backlog))
