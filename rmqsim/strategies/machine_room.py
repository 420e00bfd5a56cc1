"""MACHINE_ROOM: AllocateMessageQueueByMachineRoom, AVG-like blocks over the queues of chosen rooms.

A queue is kept when its brokerName, split on "@" the Java way (trailing empty strings dropped),
has exactly two parts and the first is one of the group's ``consumeridcs``; kept queues stay in
mqAll order (premqAll). With n kept queues and c clients (duplicates counted), client i gets the
block [mod*i, mod*i + mod) with mod = n // c, then premqAll[i + mod*c] if i < n % c. Unlike AVG the
remainder comes from the tail, so the first clients own a block and one far-off queue each.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import Strings, as_objects, offsets
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch
from rmqsim.strategies.params import required

NAME = "MACHINE_ROOM"

# What the JDK (helpful NullPointerException messages) says when consumeridcs was never set and a
# brokerName has a room to look up; as the Java exception message, like the checks' messages.
NULL_CONSUMER_IDCS = 'Cannot invoke "java.util.Set.contains(Object)" because "this.consumeridcs" is null'

_I64 = np.int64


def _idcs(batch: GroupBatch) -> np.ndarray:
    return required(batch.params.consumer_idcs, "consumer_idcs", NAME)


def _distinct(values: Strings) -> tuple[np.ndarray, pa.Array]:
    """Per flat value, its index into the distinct values (-1 for null), and those values.

    Brokers repeat once per queue, so names are parsed once per distinct broker, not per queue.
    """
    if isinstance(values, pa.Array):
        encoded = pc.dictionary_encode(values)
        codes = pc.fill_null(encoded.indices.cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
        return codes, encoded.dictionary
    codes, uniques = pd.factorize(values)
    return codes.astype(_I64), pa.array(uniques, type=pa.string())


def _split_rooms(names: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """For each brokerName: whether ``split("@")`` has exactly two parts, and the first part.

    Java drops trailing empty strings, so trailing "@"s do not count: after stripping them, two
    parts means exactly one "@" left ("a@b@" -> [a, b]; "a@" -> [a]; "@b" -> ["", b]; "@" -> []).
    """
    stripped = pc.utf8_rtrim(names, characters="@")
    two_parts = pc.fill_null(pc.equal(pc.count_substring(stripped, "@"), 1), False)
    room = pc.list_element(pc.split_pattern(stripped, "@", max_splits=1), 0)
    return two_parts.to_numpy(zero_copy_only=False), as_objects(room)


def _parse(batch: GroupBatch) -> tuple[np.ndarray, np.ndarray]:
    """Per flat queue: whether its name has two parts, and whether it is kept (room in the group's
    consumeridcs)."""
    codes, names = _distinct(batch.queue_broker)
    two_parts, rooms = _split_rooms(names)
    # One flat (group, room) list of every group's consumeridcs; None and empty sets add nothing.
    idcs = pd.Series(_idcs(batch), dtype=object).explode().dropna()
    idc_group = idcs.index.to_numpy().astype(_I64)
    # Room names of brokers and of consumeridcs factorised together, so that a (group, room) pair
    # is one integer and membership is a sorted-integer lookup, with no per-group Python set.
    room_codes, room_names = pd.factorize(np.concatenate([rooms, idcs.to_numpy(dtype=object)]))
    width = len(room_names) + 1
    broker_room, idc_room = room_codes[: len(rooms)], room_codes[len(rooms) :]

    valid = codes >= 0  # a null brokerName is never kept
    queue_two = np.zeros(len(codes), dtype=bool)
    queue_two[valid] = two_parts[codes[valid]]
    queue_room = np.full(len(codes), -1, dtype=_I64)
    queue_room[valid] = broker_room[codes[valid]]
    member = np.isin(batch.queue_group * width + queue_room, idc_group * width + idc_room)
    return queue_two, queue_two & member


def check(batch: GroupBatch, callers: Callers) -> np.ndarray:
    """The NullPointerException of a null consumeridcs, which Java only reaches for a caller in
    cidAll and only if some brokerName has two parts (``contains`` is never called otherwise)."""
    errors = np.full(len(callers), None, dtype=object)
    null_idcs = pd.isna(pd.Series(_idcs(batch), dtype=object)).to_numpy()
    if not null_idcs[callers.group].any():
        return errors  # the usual case: no name parsing needed
    queue_two, _ = _parse(batch)
    has_room = np.bincount(batch.queue_group[queue_two], minlength=batch.n_groups) > 0
    g = callers.group
    errors[null_idcs[g] & has_room[g] & (callers.index >= 0)] = NULL_CONSUMER_IDCS
    return errors


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    _, kept = _parse(batch)
    premq = np.flatnonzero(kept)  # flat queue indices, group by group, in mqAll order
    n_kept = np.bincount(batch.queue_group[premq], minlength=batch.n_groups)
    premq_offsets = offsets(n_kept)

    g = callers.group
    n = n_kept[g]
    c = np.maximum(batch.client_counts[g], 1)  # duplicates count: Java divides by cidAll.size()
    i = callers.index
    mod = n // c
    extra = (i >= 0) & (i < n % c)
    # Each caller's run over premqAll positions: its block, then one slot that gets redirected to
    # the extra queue, so that a caller's queues stay together and in Java's returned order.
    count = np.where(i >= 0, mod + extra, 0)
    runs = Allocation.from_runs(premq_offsets[g] + mod * i, count)
    position = runs.queue
    last = np.cumsum(count) - 1
    position[last[extra]] = (premq_offsets[g] + i + mod * c)[extra]
    return Allocation(runs.caller, premq[position])
