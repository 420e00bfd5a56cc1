"""Go MACHINE_ROOM: rocketmq-client-go's AllocateByMachineRoom, with the client's bug kept.

premqAll is mqAll (Go order) filtered to the queues whose brokerName splits on "@" into exactly
two parts (Go's strings.Split keeps empty parts: "hz@" is ["hz", ""], "a@b@" three parts) with the
first part in consumeridcs. A queue is appended once per matching consumeridcs entry, so a room
listed twice doubles its queues. With n = len(premqAll), c = len(cidAll), mod = n // c, client i
gets mqAll[mod*i : mod*i + mod] (the bug: the block comes from the unfiltered mqAll, so it may
hold queues of other rooms and leave kept ones unowned), then premqAll[i + mod*c] if i < n % c
(the leftover from the filtered list, as in Java). Users run this, so it is simulated as is.

A block reaching past mqAll (only possible when consumeridcs repeats a room) panics with index
out of range; the rebalance goroutine recovers and the client keeps what it had. A null
consumeridcs is Go's nil slice: nothing is kept, every client gets an empty list.

``allocate`` works on a Go-ordered batch (strategies.go_client.as_go_client).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rmqsim.arrays import lookup_sorted, offsets
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch
from rmqsim.strategies.go_client import distinct_go_bytes, go_bytes, go_client_order, go_index, returns_nil
from rmqsim.strategies.params import required

NAME = "MACHINE_ROOM"

_I64 = np.int64


def copies_kept(batch: GroupBatch) -> np.ndarray:
    """Per flat queue, how many times premqAll holds it: the number of consumeridcs entries of its
    group equal to its room, 0 where its brokerName does not split into exactly two parts."""
    codes, names = distinct_go_bytes(batch.queue_broker)
    parts = [name.split(b"@") for name in names]  # bytes, as Go splits them
    two_parts = np.array([len(p) == 2 for p in parts] + [False], dtype=bool)  # [-1]: a null name
    rooms = np.array([p[0] for p in parts] + [None], dtype=object)
    idcs = pd.Series(required(batch.params.consumer_idcs, "consumer_idcs", NAME), dtype=object)
    idcs = idcs.explode().dropna()  # a nil or empty list adds nothing
    if len(idcs) == 0:
        return np.zeros(len(codes), dtype=_I64)
    idc_group = idcs.index.to_numpy().astype(_I64)
    idc_rooms = np.array([go_bytes(room) for room in idcs.tolist()], dtype=object)
    # Broker rooms and consumeridcs factorised together: a (group, room) pair is one integer.
    room_codes, distinct = pd.factorize(np.concatenate([rooms, idc_rooms]))
    width = len(distinct) + 1
    broker_room, idc_room = room_codes[: len(rooms)], room_codes[len(rooms) :]
    pair_key, pair_count = np.unique(idc_group * width + idc_room, return_counts=True)
    queue_room = broker_room[codes]
    at, found = lookup_sorted(pair_key, batch.queue_group * width + queue_room)
    return np.where(found & two_parts[codes] & (queue_room >= 0), pair_count[at], 0).astype(_I64)


def check(batch: GroupBatch, callers: Callers) -> np.ndarray:
    """Go's index-out-of-range panic where a caller's block reaches past mqAll, or None."""
    errors = np.full(len(callers), None, dtype=object)
    n_kept = np.bincount(batch.queue_group, weights=copies_kept(batch), minlength=batch.n_groups)
    # mod * (i + 1) <= n: only a premqAll longer than mqAll (a room listed twice) can panic.
    risky = np.flatnonzero((n_kept > batch.queue_counts)[callers.group] & ~returns_nil(batch, callers))
    if len(risky) == 0:
        return errors
    sub = callers.take(risky)
    i = go_index(batch, sub, go_client_order(batch))
    g = sub.group
    mod = n_kept[g].astype(_I64) // batch.client_counts[g]
    length = batch.queue_counts[g]
    panics = (mod > 0) & (mod * (i + 1) > length)
    errors[risky[panics]] = [
        f"panic: runtime error: index out of range [{k}] with length {n}"
        for k, n in zip(np.maximum(mod * i, length)[panics].tolist(), length[panics].tolist(), strict=True)
    ]
    return errors


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    """Over a Go-ordered batch and callers in its cidAll (that passed ``check``)."""
    kept = copies_kept(batch)
    premq = np.repeat(np.arange(len(kept), dtype=_I64), kept)  # flat queues, group by group
    n_kept = np.bincount(batch.queue_group, weights=kept, minlength=batch.n_groups).astype(_I64)
    premq_offsets = offsets(n_kept)

    g, i = callers.group, callers.index
    c = np.maximum(batch.client_counts[g], 1)
    mod = n_kept[g] // c
    extra = (i >= 0) & (i < n_kept[g] % c)
    # Each caller's run: its block of mqAll, then one slot redirected to its premqAll leftover.
    count = np.where(i >= 0, mod + extra, 0)
    runs = Allocation.from_runs(batch.queue_offsets[g] + mod * i, count)
    queue = runs.queue
    last = np.cumsum(count) - 1
    queue[last[extra]] = premq[(premq_offsets[g] + i + mod * c)[extra]]
    return Allocation(runs.caller, queue)
