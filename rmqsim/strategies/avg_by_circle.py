"""AVG_BY_CIRCLE: AllocateMessageQueueAveragelyByCircle, queues dealt round-robin.

Client i of c gets queues i, i + c, i + 2c, ... of mqAll: the same counts as AVG, but every client
touches every broker, and the remainder lands on the first n % c clients as well.
"""

from __future__ import annotations

import numpy as np

from rmqsim.strategies.batch import Allocation, Callers, GroupBatch

NAME = "AVG_BY_CIRCLE"


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    n = batch.queue_counts[callers.group]
    c = np.maximum(batch.client_counts[callers.group], 1)
    i = callers.index
    count = np.where((i >= 0) & (i < n), (n - i + c - 1) // c, 0)
    return Allocation.from_runs(batch.queue_offsets[callers.group] + i, count, step=c)
