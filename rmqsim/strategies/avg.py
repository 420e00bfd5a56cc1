"""AVG: AllocateMessageQueueAveragely, contiguous blocks with the extra queues up front.

With n queues and c clients, the first n % c clients get n // c + 1 queues and the rest n // c,
each a contiguous block of mqAll. When n <= c, client i < n gets queue i and the rest get nothing.
"""

from __future__ import annotations

import numpy as np

from rmqsim.strategies.batch import Allocation, Callers, GroupBatch

NAME = "AVG"


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    n = batch.queue_counts[callers.group]
    c = np.maximum(batch.client_counts[callers.group], 1)
    i = callers.index
    mod = n % c
    gets_extra = (mod > 0) & (i < mod)
    size = np.where(n <= c, 1, np.where(gets_extra, n // c + 1, n // c))
    start = np.where(gets_extra, i * size, i * size + mod)
    count = np.where(i >= 0, np.minimum(size, n - start), 0)
    return Allocation.from_runs(batch.queue_offsets[callers.group] + start, count)
