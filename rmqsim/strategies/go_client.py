"""How rocketmq-client-go v2 calls a strategy: doBalance's sorting and the strategies' nil returns.

Before it allocates, doBalance (consumer/consumer.go at 2173d07) sorts cidAll with sort.Strings and
mqAll with a stable sort by topic, brokerName (strings.Compare) and queueId. Go compares strings
byte by byte, which is Unicode code point order; Java compares UTF-16 code units. The two differ
only where a character outside the Basic Multilingual Plane meets one in U+E000..U+FFFF (an emoji
against a full-width letter): Java puts the surrogate pair first, Go the other.

rmqsim's batches arrive in Java order (or any order), so a Go strategy runs on a view of the batch
sorted the Go way and its picks are mapped back to the batch's own flat queue indices.

Every Go strategy but CONFIG returns nil, not an error, for an empty currentCID, an empty mqAll or
cidAll, and a currentCID that is not in cidAll: the client then simply holds no queue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import Strings, null_or_empty, take
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch
from rmqsim.strategies.params import Params

_I64 = np.int64


def go_bytes(text: str) -> bytes:
    """A string as a Go client holds it: UTF-8. Go cannot hold an unpaired surrogate (its JSON
    decoders turn one into U+FFFD), so neither does this; valid text is plain UTF-8."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def distinct_go_bytes(values: Strings) -> tuple[np.ndarray, list[bytes]]:
    """Per value, its index into the distinct values (-1 for null), and those values' Go bytes.

    Names repeat across groups and queues, so the Python work is per distinct name."""
    if isinstance(values, pa.Array):
        encoded = pc.dictionary_encode(values)
        codes = pc.fill_null(encoded.indices.cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
        return codes.astype(_I64), encoded.dictionary.cast(pa.binary()).to_pylist()
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return codes.astype(_I64), [go_bytes(u) for u in uniques]


def utf8_ranks(values: Strings) -> np.ndarray:
    """Per value, its dense rank in byte order (Go's sort.Strings); nulls rank 0, before ""."""
    codes, distinct = distinct_go_bytes(values)
    rank = np.zeros(len(distinct) + 1, dtype=_I64)
    if distinct:
        ranked = pc.rank(pa.array(distinct, pa.binary()), sort_keys="ascending", tiebreaker="dense")
        rank[1:] = ranked.to_numpy()
    return rank[codes + 1]


def sorted_within_groups(group: np.ndarray, keys: list[np.ndarray]) -> np.ndarray:
    """Flat indices sorted by group, then by ``keys`` (most significant first), stably: equal
    entries keep the batch's order, as Go's stable sort keeps its input's. Usually the batch is in
    that order already (Java and Go agree on ASCII), and the answer is arange without a sort."""
    n = len(group)
    ordered = np.ones(max(n - 1, 0), dtype=bool)  # entry k + 1 sorts at or after entry k
    equal = group[1:] == group[:-1]
    ordered &= group[1:] >= group[:-1]
    for key in keys:
        ordered &= ~equal | (key[1:] >= key[:-1])
        equal &= key[1:] == key[:-1]
    if ordered.all():
        return np.arange(n, dtype=_I64)
    return np.lexsort((*reversed(keys), group)).astype(_I64)


def go_client_order(batch: GroupBatch) -> np.ndarray:
    """The batch's flat client indices, group by group, in Go's cidAll order."""
    client_group = np.repeat(np.arange(batch.n_groups, dtype=_I64), batch.client_counts)
    return sorted_within_groups(client_group, [utf8_ranks(batch.client_ids)])


def go_queue_order(batch: GroupBatch) -> np.ndarray:
    """The batch's flat queue indices, group by group, in Go's mqAll order (brokerName bytes, then
    queueId; a group's queues share one topic)."""
    return sorted_within_groups(batch.queue_group, [utf8_ranks(batch.queue_broker), batch.queue_id])


def go_index(batch: GroupBatch, callers: Callers, client_order: np.ndarray) -> np.ndarray:
    """Each caller's index in its group's Go-sorted cidAll (the first copy of its id: duplicates
    sort next to each other, in batch order), or -1 where it is not in cidAll."""
    found = np.flatnonzero(callers.index >= 0)
    position = np.empty(len(client_order), dtype=_I64)
    position[client_order] = np.arange(len(client_order), dtype=_I64)
    group = callers.group[found]
    index = np.full(len(callers), -1, dtype=_I64)
    first_copy = batch.client_offsets[group] + callers.index[found]
    index[found] = position[first_copy] - batch.client_offsets[group]
    return index


@dataclass(frozen=True)
class _GroupParams:
    """The batch's per-group parameters, which the Go-ordered view shares. Per-queue and
    per-client ones are in the batch's order, not the view's, so the view has none: no Go strategy
    reads them."""

    source: Params
    client_room: None = None
    queue_room: None = None
    client_config: None = None
    queue_backlog: None = None
    queue_previous_owner: None = None

    @property
    def virtual_node_cnt(self) -> np.ndarray | None:
        return self.source.virtual_node_cnt

    @property
    def consumer_idcs(self) -> np.ndarray | None:
        return self.source.consumer_idcs

    @property
    def inner_strategy(self) -> np.ndarray | None:
        return self.source.inner_strategy


@dataclass(frozen=True)
class GoView:
    """A batch with every group's mqAll and cidAll in Go's order, and the way back.

    ``batch`` has the same groups; ``queue[k]`` is the original flat index of its flat queue k;
    ``callers`` are the callers with ``index`` (and ``client``, the id's first copy) in Go's cidAll.
    """

    batch: GroupBatch
    queue: np.ndarray
    callers: Callers


def go_view(batch: GroupBatch, callers: Callers) -> GoView:
    """The batch as doBalance hands it to a Go strategy, for callers that are in cidAll."""
    queue_order = go_queue_order(batch)
    client_order = go_client_order(batch)
    index = go_index(batch, callers, client_order)
    view = GroupBatch(
        topics=batch.topics,
        queue_offsets=batch.queue_offsets,
        queue_broker=_permuted(batch.queue_broker, queue_order),
        queue_id=batch.queue_id[queue_order],
        client_offsets=batch.client_offsets,
        client_ids=_permuted(batch.client_ids, client_order),
        params=_GroupParams(batch.params),
    )
    client = np.where(index >= 0, batch.client_offsets[callers.group] + index, -1)
    return GoView(view, queue_order, Callers(callers.group, client, index))


def _permuted(values: Strings, order: np.ndarray) -> Strings:
    """``values`` in ``order``, without a copy where the order is the batch's own (the usual case)."""
    return values if bool((order == np.arange(len(order))).all()) else take(values, order)


def returns_nil(batch: GroupBatch, callers: Callers) -> np.ndarray:
    """Where a Go strategy returns nil: an empty currentCID, mqAll or cidAll, or a currentCID
    that is not in cidAll (an empty cidAll has none). Go has no null string: null counts as ""."""
    nil = (callers.index < 0) | (batch.queue_counts[callers.group] == 0)
    found = np.flatnonzero(~nil)
    nil[found] = null_or_empty(take(batch.client_ids, callers.client[found]))
    return nil


GoAllocate = Callable[[GroupBatch, Callers], Allocation]


def as_go_client(allocate: GoAllocate) -> GoAllocate:
    """A strategy over Go-ordered batches, called as the Go client calls it: nil (no queues,
    ``null_result``) where ``returns_nil``, else its picks in returned order, as the batch's flat
    queue indices."""

    def run(batch: GroupBatch, callers: Callers) -> Allocation:
        nil = returns_nil(batch, callers)
        live = np.flatnonzero(~nil)
        if len(live) == 0:
            return Allocation(np.zeros(0, _I64), np.zeros(0, _I64), null_result=nil)
        view = go_view(batch, callers.take(live))
        picked = allocate(view.batch, view.callers)
        return Allocation(live[picked.caller], view.queue[picked.queue], null_result=nil)

    return run
