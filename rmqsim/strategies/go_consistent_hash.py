"""Go CONSISTENT_HASH: rocketmq-client-go's AllocateByConsistentHash over stathat.com/c/consistent v1.0.0.

Not Java's ring. Every id of cidAll (Go order) adds virtualNodeCnt nodes keyed ``str(i) + clientId``
(the number first, no separator), hashed with CRC-32 (IEEE) of the UTF-8 bytes; a later node with
an equal hash replaces the earlier one. A queue goes to the first node whose hash is strictly
greater than the CRC-32 of ``MessageQueue [topic=T, brokerName=B, queueId=N]``, wrapping to the
smallest. A caller gets the queues routed to its id, in Go's mqAll order. Quirks kept:

- a duplicated id adds the same nodes again, which changes nothing (the ring maps hash to id);
- virtualNodeCnt < 0 leaves the ring empty, so nobody gets anything (an empty list, not nil);
- virtualNodeCnt 0 panics: the library divides by NumberOfReplicas * 4 after every Add. The
  rebalance goroutine recovers, and the client keeps what it had, as after a Java exception.

Functions here work on a Go-ordered batch (strategies.go_client.as_go_client); all groups share one
flat ring of keys ``g * 2**32 + hash``, so one sort and one searchsorted route every queue.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from rmqsim.arrays import take, within_runs
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch
from rmqsim.strategies.consistent_hash import MAX_RING_NODES, ring_too_large, virtual_node_counts
from rmqsim.strategies.go_client import distinct_go_bytes, returns_nil

NAME = "CONSISTENT_HASH"
ZERO_REPLICAS_PANIC = "panic: runtime error: integer divide by zero"

_I64 = np.int64
_SPAN = np.int64(1 << 32)  # one group's slice of the flat ring


def check(batch: GroupBatch, callers: Callers) -> np.ndarray:
    """The panic of virtualNodeCnt 0 for every caller that gets past the nil returns, and
    rmqsim's own limit on the ring's size (consistent_hash.MAX_RING_NODES)."""
    errors = np.full(len(callers), None, dtype=object)
    v = virtual_node_counts(batch)[callers.group]
    clients = batch.client_counts[callers.group]
    reached = ~returns_nil(batch, callers)  # a nil return comes first and builds no ring
    huge = np.flatnonzero((v * clients > MAX_RING_NODES) & (v > 0) & reached)
    errors[huge] = ring_too_large(v[huge], clients[huge])
    errors[(v == 0) & reached] = ZERO_REPLICAS_PANIC
    return errors


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    """Over a Go-ordered batch and callers in its cidAll: each caller's queues, in mqAll order."""
    if len(callers) == 0:
        return Allocation.empty()
    wanted = np.zeros(batch.n_groups, dtype=bool)
    wanted[callers.group] = True
    ring_key, ring_owner = _ring(batch, wanted)
    queue_group = batch.queue_group
    queues = np.flatnonzero(wanted[queue_group])
    owner = _route(ring_key, ring_owner, queue_group[queues], _queue_hashes(batch, queues))

    # Owners are first copies of ids, and so are the callers' clients (go_client.go_view).
    owned = owner >= 0
    by_owner = np.argsort(owner[owned], kind="stable")  # stable: each owner's queues in mqAll order
    owner_key = owner[owned][by_owner]
    owned_queues = queues[owned][by_owner]
    lo = np.searchsorted(owner_key, callers.client, side="left")
    hi = np.searchsorted(owner_key, callers.client, side="right")
    runs = Allocation.from_runs(lo, np.where(callers.index >= 0, hi - lo, 0))
    return Allocation(runs.caller, owned_queues[runs.queue])


def _ring(batch: GroupBatch, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The wanted groups' rings: sorted keys and, for each, the flat client (an id's first copy)
    that owns it. Nodes are laid out in Add order (cidAll, then replica), so on equal keys the
    largest index is the one the library kept."""
    client_group = np.repeat(np.arange(batch.n_groups, dtype=_I64), batch.client_counts)
    codes, names = distinct_go_bytes(batch.client_ids)
    # A repeated id (next to its copies in Go order) re-adds its own nodes: skip it.
    first = np.ones(len(codes), dtype=bool)
    first[1:] = (codes[1:] != codes[:-1]) | (client_group[1:] != client_group[:-1])
    members = np.flatnonzero(first & wanted[client_group])
    v = np.maximum(virtual_node_counts(batch), 0)[client_group[members]]
    node_client = np.repeat(members, v)
    replica = within_runs(v)
    node_hash = _node_hashes(codes[node_client], replica, names)
    key = client_group[node_client] * _SPAN + node_hash
    order = np.argsort(key, kind="stable")  # stable: equal keys stay in Add order
    key = key[order]
    last = np.ones(len(key), dtype=bool)
    last[:-1] = key[1:] != key[:-1]
    return key[last], node_client[order[last]]


def _route(ring_key: np.ndarray, ring_owner: np.ndarray, group: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """The owner of each queue: the first ring key strictly above its hash in its group's slice,
    wrapping to the slice's smallest; -1 where the group's ring is empty."""
    lo = np.searchsorted(ring_key, group * _SPAN, side="left")
    hi = np.searchsorted(ring_key, (group + 1) * _SPAN, side="left")
    at = np.searchsorted(ring_key, group * _SPAN + hashes, side="right")
    at = np.where(at < hi, at, lo)
    padded = np.append(ring_owner, -1)  # lo is len(ring_key) for an empty last ring
    return np.where(lo < hi, padded[at], -1)


def _node_hashes(code: np.ndarray, replica: np.ndarray, names: list[bytes]) -> np.ndarray:
    """CRC-32 of ``str(replica) + name`` per node, once per distinct (name, replica): zlib continues
    the replica's CRC over the name, so no key is ever built."""
    if len(code) == 0:
        return np.zeros(0, _I64)
    width = int(replica.max()) + 1
    pair, first = _distinct(code * width + replica)
    prefix = [zlib.crc32(b"%d" % i) for i in range(width)]
    names = [*names, b""]  # code -1, a null id: Go has no null string
    crc = zlib.crc32
    hashes = [crc(names[c], prefix[r]) for c, r in zip(code[first].tolist(), replica[first].tolist())]
    return np.array(hashes, dtype=_I64)[pair]


def _queue_hashes(batch: GroupBatch, queues: np.ndarray) -> np.ndarray:
    """CRC-32 of MessageQueue.String() for the given flat queues, once per distinct queue, the
    (topic, broker) part once per distinct pair."""
    if len(queues) == 0:
        return np.zeros(0, _I64)
    topic_code, topics = distinct_go_bytes(take(batch.topics, batch.queue_group[queues]))
    broker_code, brokers = distinct_go_bytes(take(batch.queue_broker, queues))
    topics, brokers = [*topics, b""], [*brokers, b""]  # code -1, null, indexes the b"" at the end
    head = zlib.crc32(b"MessageQueue [topic=")
    crc = zlib.crc32
    pair, first = _distinct(topic_code * (len(brokers) + 1) + broker_code)
    prefix = [
        crc(brokers[b], crc(b", brokerName=", crc(topics[t], head)))
        for t, b in zip(topic_code[first].tolist(), broker_code[first].tolist())
    ]
    queue_id = batch.queue_id[queues]
    triple, first = _distinct(
        pair * (int(queue_id.max()) - int(queue_id.min()) + 1) + queue_id - queue_id.min()
    )
    hashes = [
        crc(b", queueId=%d]" % q, prefix[p]) for p, q in zip(pair[first].tolist(), queue_id[first].tolist())
    ]
    return np.array(hashes, dtype=_I64)[triple]


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per key, the index of its distinct value, and where each distinct value first occurs."""
    code = pd.factorize(keys)[0].astype(_I64)
    # factorize numbers values in order of first occurrence: a first exceeds every earlier code.
    first = np.flatnonzero(code > np.append(-1, np.maximum.accumulate(code)[:-1]))
    return code, first
