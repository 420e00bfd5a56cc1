"""CONSISTENT_HASH: AllocateMessageQueueConsistentHash, queues routed around an MD5 hash ring.

Every entry of cidAll puts virtualNodeCnt virtual nodes ``clientId-i`` on a ring of 32-bit keys (the
first four MD5 bytes of the UTF-8 key, big-endian); a queue goes to the first ring key at or after
the hash of ``MessageQueue [topic=T, brokerName=B, queueId=N]``, wrapping to the smallest key. A
caller gets the queues routed to its id, in mqAll order. Two Java details decide edge cases: a
later put on an equal key replaces the earlier virtual node, and a client id that is already on the
ring numbers its new virtual nodes after the ones it still holds there, so a duplicated id gets
twice the nodes (ConsistentHashRouter.addNode). virtualNodeCnt 0 leaves the ring empty: nobody gets
anything.

All groups share one flat ring: group g's keys are ``g * 2**32 + hash``, so one sort and one
searchsorted route every queue of the batch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import Strings, factorize, offsets, take
from rmqsim.strategies.batch import RMQSIM_REFUSES, Allocation, Callers, GroupBatch, batch_client_codes

NAME = "CONSISTENT_HASH"
DEFAULT_VIRTUAL_NODES = 10

# rmqsim's own bound, not the client's: every node is an MD5 in a worker's memory, and a mistyped
# virtual_node_cnt (a billion, say) would exhaust the worker and fail the whole run.
MAX_RING_NODES = 10_000_000
_I64 = np.int64
_SPAN = np.int64(1 << 32)  # one group's slice of the flat ring: every 32-bit hash fits below it


def virtual_node_counts(batch: GroupBatch) -> np.ndarray:
    """virtualNodeCnt per group (the no-argument constructor's 10 where the batch has none)."""
    counts = batch.params.virtual_node_cnt
    if counts is None:
        return np.full(batch.n_groups, DEFAULT_VIRTUAL_NODES, dtype=_I64)
    return np.asarray(counts, dtype=_I64)


def ring_too_large(virtual_nodes: np.ndarray, clients: np.ndarray) -> list[str]:
    """rmqsim's refusal of rings over MAX_RING_NODES, one message per caller (either client's ring)."""
    return [
        f"{RMQSIM_REFUSES} a ring of more than {MAX_RING_NODES:,} nodes: "
        f"virtualNodeCnt {n} for {c} clients is {n * c:,}"
        for n, c in zip(virtual_nodes.tolist(), clients.tolist(), strict=True)
    ]


def check(batch: GroupBatch, callers: Callers) -> np.ndarray:
    """The constructor's IllegalArgumentException for virtualNodeCnt < 0, and the
    NullPointerException that ConsistentHashRouter hits when cidAll holds a null id before its last
    entry (getExistingReplicas calls equals on the null key of a node already on the ring); and,
    rmqsim's own, a ring larger than MAX_RING_NODES."""
    counts = virtual_node_counts(batch)
    errors = np.full(len(callers), None, dtype=object)
    # Later assignments win: the client's own exceptions over rmqsim's limit.
    v = counts[callers.group]
    clients = batch.client_counts[callers.group]
    huge = np.flatnonzero((v * clients > MAX_RING_NODES) & (v > 0))
    errors[huge] = ring_too_large(v[huge], clients[huge])

    group = np.repeat(np.arange(batch.n_groups, dtype=_I64), batch.client_counts)
    not_last = np.arange(len(group), dtype=_I64) < batch.client_offsets[group + 1] - 1
    null_early = (batch_client_codes(batch) == 0) & not_last  # code 0: null
    npe = np.bincount(group[null_early], minlength=batch.n_groups) > 0
    errors[(npe & (counts > 0))[callers.group]] = (
        "NullPointerException: cidAll holds a null client id before its last entry"
    )

    bad = np.flatnonzero(v < 0)
    errors[bad] = [f"illegal virtualNodeCnt :{n}" for n in v[bad].tolist()]
    return errors


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    if len(callers) == 0:
        return Allocation.empty()
    # Only the callers' groups: the hashing is the cost, and a group that failed a check has none.
    wanted = np.zeros(batch.n_groups, dtype=bool)
    wanted[callers.group] = True
    counts = np.maximum(virtual_node_counts(batch), 0)

    codes = batch_client_codes(batch)
    client_group = np.repeat(np.arange(batch.n_groups, dtype=_I64), batch.client_counts)
    first, rank = _first_copies(codes, client_group)
    clients = np.flatnonzero(wanted[client_group])
    ring_key, ring_owner = _ring(batch, codes, clients, client_group[clients], counts, first, rank)

    queue_group = batch.queue_group
    queues = np.flatnonzero(wanted[queue_group])
    owner = _route(ring_key, ring_owner, queue_group[queues], _queue_hashes(batch, queues, queue_group))

    # Java compares the routed node's id with currentCID, so every copy of an id is one owner: key
    # owners and callers by the flat index of the id's first copy, which also fixes the group.
    owned = owner >= 0
    owner_key = first[owner[owned]]
    by_owner = np.argsort(owner_key, kind="stable")  # stable: each owner's queues in mqAll order
    owner_key = owner_key[by_owner]
    owned_queues = queues[owned][by_owner]

    caller_key = batch.client_offsets[callers.group] + callers.index
    lo = np.searchsorted(owner_key, caller_key, side="left")
    hi = np.searchsorted(owner_key, caller_key, side="right")
    runs = Allocation.from_runs(lo, np.where(callers.index >= 0, hi - lo, 0))
    return Allocation(runs.caller, owned_queues[runs.queue])


def _first_copies(codes: np.ndarray, client_group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every flat client: the flat index of its id's first copy in its group, and how many
    copies of the id come before it."""
    n = len(client_group)
    if n == 0:
        return np.zeros(0, _I64), np.zeros(0, _I64)
    key = client_group * (int(codes.max()) + 1) + codes
    order = np.argsort(key, kind="stable")  # stable: copies of an id stay in cidAll order
    key = key[order]
    run_start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    run_length = np.diff(np.r_[run_start, n])
    first = np.empty(n, _I64)
    rank = np.empty(n, _I64)
    first[order] = np.repeat(order[run_start], run_length)
    rank[order] = np.arange(n, dtype=_I64) - np.repeat(run_start, run_length)
    return first, rank


def _ring(
    batch: GroupBatch,
    codes: np.ndarray,
    clients: np.ndarray,
    group: np.ndarray,
    counts: np.ndarray,
    first: np.ndarray,
    rank: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The flat ring of the given clients' groups: its sorted keys and the flat client of each.

    Virtual nodes are laid out in Java's insertion order (cidAll order, then replica), so a node's
    flat index is its insertion time and on equal keys the largest index wins.
    """
    v = counts[group]
    node_start = offsets(v)
    n_nodes = int(node_start[-1])
    node_pos = np.repeat(np.arange(len(clients), dtype=_I64), v)  # the node's client, in `clients`
    node_client = clients[node_pos]
    node_group = group[node_pos]
    node_within = np.arange(n_nodes, dtype=_I64) - node_start[:-1][node_pos]

    # addNode numbers a client's nodes from getExistingReplicas, the nodes its id still holds on the
    # ring: rank * v, unless a hash collision replaced some of them. Fewer means a different start
    # and so different keys for this copy, which can move later starts too. Iterate to the fixed
    # point: each pass fixes at least the earliest wrong start, and without both a duplicate id and
    # a collision in one batch the first pass is the answer.
    ideal = rank[clients] * v
    start = ideal
    replica = start[node_pos] + node_within
    node_hash = _node_hashes(batch, codes, node_client, replica)
    while True:
        key = node_group * _SPAN + node_hash
        order = np.argsort(key, kind="stable")  # stable: equal keys stay in insertion order
        key = key[order]
        replaced = key[1:] == key[:-1]  # order[i] replaced by the later order[i + 1]
        if not (replaced.any() and (ideal > 0).any()):
            break
        lost = _lost_before(first[clients], node_pos, node_start, order[:-1][replaced], order[1:][replaced])
        fixed = ideal - lost
        redo = np.flatnonzero((fixed != start)[node_pos])
        if len(redo) == 0:
            break
        start = fixed
        replica[redo] = start[node_pos[redo]] + node_within[redo]
        node_hash[redo] = _node_hashes(batch, codes, node_client[redo], replica[redo])

    last = np.r_[~replaced, True] if n_nodes else np.zeros(0, dtype=bool)
    return key[last], node_client[order[last]]


def _lost_before(
    identity: np.ndarray, node_pos: np.ndarray, node_start: np.ndarray, lost: np.ndarray, lost_at: np.ndarray
) -> np.ndarray:
    """Per client, how many nodes of its id were replaced before its own first node went in.

    ``identity`` names a client's id within its group (the flat index of the id's first copy);
    ``lost`` are replaced nodes and ``lost_at`` the insertion that replaced each.
    """
    width = np.int64(len(node_pos) + 1)
    lost_key = np.sort(identity[node_pos[lost]] * width + lost_at)
    mine = identity * width
    return np.searchsorted(lost_key, mine + node_start[:-1]) - np.searchsorted(lost_key, mine)


def _route(ring_key: np.ndarray, ring_owner: np.ndarray, group: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """The flat client owning each queue: the first ring key >= its hash in its group's slice,
    wrapping to the slice's smallest key; -1 where the group's ring is empty."""
    lo = np.searchsorted(ring_key, group * _SPAN)
    hi = np.searchsorted(ring_key, (group + 1) * _SPAN)
    at = np.searchsorted(ring_key, group * _SPAN + hashes)
    at = np.where(at < hi, at, lo)
    padded = np.r_[ring_owner, -1]  # lo may be len(ring_key) when the ring is empty
    return np.where(lo < hi, padded[at], -1)


def _node_hashes(batch: GroupBatch, codes: np.ndarray, client: np.ndarray, replica: np.ndarray) -> np.ndarray:
    """Hashes of the virtual node keys ``clientId-replica`` (Java prints a null id as "null")."""

    def keys(rows: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise(
            _java(take(batch.client_ids, client[rows])), _decimal(replica[rows]), b"-"
        )

    return _hash_distinct([codes[client], replica], keys)


def _queue_hashes(batch: GroupBatch, queues: np.ndarray, queue_group: np.ndarray) -> np.ndarray:
    """Hashes of MessageQueue.toString() for the given flat queues."""
    group = queue_group[queues]
    brokers = take(batch.queue_broker, queues)
    queue_id = batch.queue_id[queues]

    def keys(rows: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise(
            b"MessageQueue [topic=",
            _java(take(batch.topics, group[rows])),
            b", brokerName=",
            _java(take(brokers, rows)),
            b", queueId=",
            _decimal(queue_id[rows]),
            b"]",
            b"",
        )

    return _hash_distinct([factorize(batch.topics)[group], factorize(brokers), queue_id], keys)


def _hash_distinct(columns: list[np.ndarray], keys: Callable[[np.ndarray], pa.Array]) -> np.ndarray:
    """Hash each distinct row of ``columns`` once, from the key of its first occurrence: a client id
    recurs in every group it consumes in, and a topic's queues in every group subscribed to it."""
    if len(columns[0]) == 0:
        return np.zeros(0, _I64)
    # Hash-based factorising, one column at a time: both codes stay below the row count, so the
    # combined code cannot overflow (np.unique over rows sorts and is ~20x slower).
    code = pd.factorize(columns[0])[0]
    for column in columns[1:]:
        column_code, distinct = pd.factorize(column)
        code = pd.factorize(code * len(distinct) + column_code)[0]
    # factorize numbers codes in order of first occurrence: a row is a first exactly where its code
    # exceeds every earlier one.
    first = np.flatnonzero(code > np.r_[-1, np.maximum.accumulate(code)[:-1]])
    return _hashes(keys(first))[code]


def _java(values: Strings) -> pa.Array:
    """Java's String.getBytes(): UTF-8 with "?" for an unpaired surrogate, "null" for null.

    Arrow strings are UTF-8 already (Spark wrote them with getBytes); Python strings from the pure
    API are encoded here, where "replace" writes "?" as Java does."""
    if isinstance(values, pa.Array):
        utf8 = values.cast(pa.binary())
    else:
        utf8 = pa.array([None if v is None else v.encode("utf-8", "replace") for v in values], pa.binary())
    return pc.fill_null(utf8, b"null")


def _decimal(numbers: np.ndarray) -> pa.Array:
    """Integers as Java's Integer.toString prints them."""
    return pa.array(numbers, type=pa.int64()).cast(pa.string()).cast(pa.binary())


def _hashes(keys: pa.Array) -> np.ndarray:
    """MD5Hash.hash of each key: the first four digest bytes, big-endian, unsigned.

    Keys are built by Arrow and hashed by hashlib in one list comprehension: a numpy MD5 over
    whole blocks was five times slower than this, and f-strings per key doubled the cost."""
    md5 = hashlib.md5
    digests = b"".join([md5(k).digest() for k in keys.to_pylist()])
    return np.frombuffer(digests, dtype=">u4")[::4].astype(_I64)
