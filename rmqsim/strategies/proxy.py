"""The 5.x proxy's answer to a gRPC client (rocketmq-clients PushConsumer, SimpleConsumer):
RouteActivity.queryAssignment.

No queue is exclusive: every client is handed, for every readable QueueData of a live broker
(exactly the brokers of mqAll), one ``(broker, -1)`` assignment, meaning it receives from all that
broker's queues, and the work is split per message. An orderly group is handed every read queue
of those brokers instead. The proxy builds each assignment with the broker's master (id 0): where a
broker is alive only through a slave, that fails and the whole answer with it: the proxy answers
nothing and the client keeps what it had (``null_result``). So it does where the topic has no
readable queue: the proxy answers FORBIDDEN.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rmqsim.arrays import as_objects, take
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch, concat_allocations
from rmqsim.strategies.broker import every_broker

NAME = "PROXY"
# How group_metrics.error reports a failed answer: the client keeps what it had.
ANSWERS_NULL = "the proxy's answer fails, so the client keeps what it had: "
NO_MASTER_BEFORE, NO_MASTER_AFTER = "broker '", "' is alive only through a slave"
FORBIDDEN = "the topic has no readable queue: the proxy answers FORBIDDEN"


def answer(
    batch: GroupBatch, callers: Callers, *, orderly: np.ndarray, master_alive: np.ndarray
) -> tuple[Allocation, np.ndarray]:
    """Per caller: its assignments, and why the answer failed (None where it did not).

    ``orderly``: per group; ``master_alive``: per flat queue, whether its broker's master is up."""
    g = callers.group
    dead = np.flatnonzero(~master_alive)
    failed = np.zeros(batch.n_groups, dtype=bool)
    failed[batch.queue_group[dead]] = True
    reason = np.full(len(callers), None, dtype=object)
    first_dead = np.full(batch.n_groups, -1, dtype=np.int64)
    first_dead[batch.queue_group[dead][::-1]] = dead[::-1]  # the first dead queue of each group
    k = np.flatnonzero(failed[g])
    brokers = pd.Series(as_objects(take(batch.queue_broker, first_dead[g[k]])), dtype=object)
    reason[k] = (NO_MASTER_BEFORE + brokers + NO_MASTER_AFTER).to_numpy()
    unreadable = batch.queue_counts == 0
    failed |= unreadable
    reason[unreadable[g]] = FORBIDDEN
    ok = np.flatnonzero(~failed[g])
    per_queue = np.flatnonzero(orderly[g[ok]])
    per_broker = np.flatnonzero(~orderly[g[ok]])
    parts = [
        Allocation.every_queue(batch, g[ok[per_queue]]).select_callers(ok[per_queue], len(callers)),
        every_broker(batch, callers.take(ok[per_broker])).select_callers(ok[per_broker], len(callers)),
    ]
    allocation = concat_allocations(parts, batch, len(callers))
    null = failed[g]
    return Allocation(
        allocation.caller, allocation.queue, allocation.broker, allocation.queue_id, null
    ), reason
