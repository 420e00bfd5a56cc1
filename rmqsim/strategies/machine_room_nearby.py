"""MACHINE_ROOM_NEARBY: AllocateMachineRoomNearby, an inner AVG or AVG_BY_CIRCLE per machine room.

A caller first gets the inner strategy's share of its own room: that room's queues (mqAll order)
over that room's consumers (cidAll order). Then, for every room that has queues but no consumer,
in Java String order of the room names (a TreeMap), it gets the inner strategy's share of that
room's queues over all of cidAll. Each orphan room restarts from the first client, so with many
orphan rooms the first clients carry most of them. Rooms arrive resolved, in ``queue_room`` and
``client_room``; a null or empty one makes every call in the group throw (see ``check``).

Every (group, room with queues) is one sub-problem of a derived batch, and the inner strategies
run on that batch unchanged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import Strings, as_objects, lookup_sorted, null_or_empty, offsets, take
from rmqsim.javaorder import java_key
from rmqsim.strategies import avg, avg_by_circle
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch
from rmqsim.strategies.params import required

NAME = "MACHINE_ROOM_NEARBY"

INNER = {avg.NAME: avg.allocate, avg_by_circle.NAME: avg_by_circle.allocate}

_I64 = np.int64


def _client_room(batch: GroupBatch) -> Strings:
    return required(batch.params.client_room, "client_room", NAME)


def _queue_room(batch: GroupBatch) -> Strings:
    return required(batch.params.queue_room, "queue_room", NAME)


def _inner(batch: GroupBatch) -> np.ndarray:
    return required(batch.params.inner_strategy, "inner_strategy", NAME)


def check(batch: GroupBatch, callers: Callers) -> np.ndarray:
    """The IllegalArgumentException of a room that resolves to null or "", or None per caller.

    Java groups every queue (in mqAll order) and then every client (in cidAll order) by room
    before it allocates anything, so the first unresolvable one fails every call of the group
    alike. A caller that is not in cidAll never gets there: check() already returned [].
    """
    n = batch.n_groups
    errors = np.full(n, None, dtype=object)
    bad_client = np.flatnonzero(null_or_empty(_client_room(batch)))
    groups, first = _first_per_group(np.repeat(np.arange(n, dtype=_I64), batch.client_counts)[bad_client])
    errors[groups] = "Machine room is null for consumer id " + _java_strings(
        take(batch.client_ids, bad_client[first])
    )
    # Queues are grouped first, so a bad queue's message wins over a bad client's.
    bad_queue = np.flatnonzero(null_or_empty(_queue_room(batch)))
    groups, first = _first_per_group(batch.queue_group[bad_queue])
    q = bad_queue[first]
    errors[groups] = (
        "Machine room is null for mq MessageQueue [topic="
        + _java_strings(take(batch.topics, groups))
        + ", brokerName="
        + _java_strings(take(batch.queue_broker, q))
        + ", queueId="
        + batch.queue_id[q].astype(str).astype(object)
        + "]"
    )
    # Not a Java exception (the strategy could not even be built), but a group with an unknown
    # inner strategy must be reported, not crash the run.
    inner = as_objects(_inner(batch))
    unknown = ~pd.Series(inner, dtype=object).isin(list(INNER)).to_numpy()
    errors[unknown] = "unknown inner strategy for MACHINE_ROOM_NEARBY: " + _java_strings(inner[unknown])
    out = errors[callers.group]
    out[callers.index < 0] = None
    return out


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    """The queues of callers that passed ``check`` (every room resolved, a known inner strategy)."""
    live = np.flatnonzero(callers.index >= 0)  # a caller not in cidAll gets nothing
    if len(live) == 0:
        return Allocation.empty()
    n_groups = batch.n_groups
    queue_room, client_room = _room_ranks(_queue_room(batch), _client_room(batch))
    # (group, room) keys; rooms are ranked in Java order, so sorting keys sorts rooms as TreeMap.
    width = int(max(queue_room.max(initial=0), client_room.max(initial=0))) + 1
    client_group = np.repeat(np.arange(n_groups, dtype=_I64), batch.client_counts)
    queue_key = batch.queue_group * width + queue_room
    client_key = client_group * width + client_room

    # One sub-problem per (group, room with queues): its queues, stably sorted, keep mqAll order.
    queue_order = np.argsort(queue_key, kind="stable")
    sub_key, sub_start = np.unique(queue_key[queue_order], return_index=True)
    sub_group = sub_key // width
    room_keys, room_clients = np.unique(client_key, return_counts=True)
    at, has_consumer = lookup_sorted(room_keys, sub_key)
    # A room's own consumers share it; an orphan room is shared by all of cidAll.
    sub_clients = np.where(has_consumer, room_clients[at], batch.client_counts[sub_group])

    # Each client's position among its room's clients, in cidAll order (room-list indexOf).
    client_order = np.argsort(client_key, kind="stable")
    room_rank = np.empty(len(client_key), dtype=_I64)
    room_rank[client_order] = np.arange(len(client_key), dtype=_I64) - np.repeat(
        np.cumsum(room_clients) - room_clients, room_clients
    )

    group = callers.group[live]
    # indexOf's position, not callers.client: a duplicate id takes the first copy's place.
    first = batch.client_offsets[group] + callers.index[live]

    # Part 1: the caller's own room, where that room has queues.
    own, found = lookup_sorted(sub_key, client_key[first])
    local = (live[found], own[found], room_rank[first[found]], np.zeros(int(found.sum()), dtype=_I64))

    # Part 2: every orphan room of the caller's group, in room order, index in all of cidAll.
    orphans = np.flatnonzero(~has_consumer)
    per_group = np.bincount(sub_group[orphans], minlength=n_groups)
    orphan_offsets = np.cumsum(per_group) - per_group
    reps = per_group[group]
    within = np.arange(int(reps.sum()), dtype=_I64) - np.repeat(np.cumsum(reps) - reps, reps)
    remote = (
        np.repeat(live, reps),
        orphans[np.repeat(orphan_offsets[group], reps) + within],
        np.repeat(callers.index[live], reps),
        within + 1,
    )

    caller, sub, index, part = (np.concatenate(pair) for pair in zip(local, remote))
    order = np.lexsort((part, caller))  # a caller's own room first, then orphan rooms in order
    caller, sub, index = caller[order], sub[order], index[order]

    # The sub-problems' mqAlls are batch queues in queue_order. The inner strategies read only
    # counts and offsets, so names and ids stay unfilled (blank placeholders of the right length).
    derived = GroupBatch(
        topics=np.empty(len(sub_key), dtype=object),
        queue_offsets=np.append(sub_start, len(queue_order)).astype(_I64),
        queue_broker=np.empty(len(queue_order), dtype=object),
        queue_id=np.zeros(len(queue_order), dtype=_I64),
        client_offsets=offsets(sub_clients),
        client_ids=np.empty(int(sub_clients.sum()), dtype=object),
    )
    inner = as_objects(_inner(batch))
    pair_parts, queue_parts = [], []
    for name, inner_allocate in INNER.items():
        pairs = np.flatnonzero((inner == name)[sub_group[sub]])  # compare per group, not per pair
        derived_callers = Callers(sub[pairs], derived.client_offsets[sub[pairs]] + index[pairs], index[pairs])
        result = inner_allocate(derived, derived_callers)
        pair_parts.append(pairs[result.caller])
        queue_parts.append(queue_order[result.queue])
    pair = np.concatenate(pair_parts)
    # Pairs are in returned order; a stable sort by pair keeps each inner call's own order.
    keep = np.argsort(pair, kind="stable")
    return Allocation(caller[pair[keep]], np.concatenate(queue_parts)[keep])


def _room_ranks(queue_room: Strings, client_room: Strings) -> tuple[np.ndarray, np.ndarray]:
    """Each room's rank in Java String order (a shared code space for queues and clients)."""
    if isinstance(queue_room, pa.Array) and isinstance(client_room, pa.Array):
        encoded = pc.dictionary_encode(pa.concat_arrays([queue_room, client_room]))
        codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(_I64)
        names = encoded.dictionary.to_pylist()
    else:
        codes, names = pd.factorize(np.concatenate([as_objects(queue_room), as_objects(client_room)]))
    # Python sorts only the distinct room names, a handful per batch.
    rank_of = np.zeros(len(names) + 1, dtype=_I64)  # code -1 (null) keeps rank 0
    rank_of[1:][sorted(range(len(names)), key=lambda k: java_key(names[k]))] = np.arange(1, len(names) + 1)
    ranks = rank_of[codes + 1]
    return ranks[: len(queue_room)], ranks[len(queue_room) :]


def _first_per_group(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct groups of ascending flat indices and where each first appears."""
    return np.unique(groups, return_index=True)


def _java_strings(values: Strings) -> np.ndarray:
    """Strings as Java's + renders them: null becomes "null"."""
    out = np.array(as_objects(values), dtype=object)  # a copy: the batch's array stays as it was
    out[pd.isna(out)] = "null"
    return out
