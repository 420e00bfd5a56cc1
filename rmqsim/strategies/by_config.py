"""CONFIG: AllocateMessageQueueByConfig, each client's configured queue list, returned as is.

The Java class checks nothing and ignores mqAll, cidAll and the current id: whoever calls it gets
its messageQueueList, duplicates and order included, and null when the list is null. A fleet
therefore gets no partition of its queues: a queue configured for two clients is owned twice,
a queue configured for none has no owner, and a configured queue that is not in mqAll is still
returned (its ``queue`` index is -1).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import Strings, lookup_sorted, take
from rmqsim.strategies.batch import Allocation, Callers, GroupBatch
from rmqsim.strategies.params import ConfigLists, required

NAME = "CONFIG"

_I64 = np.int64


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    config = required(batch.params.client_config, "client_config", NAME)
    lists = config if isinstance(config, ConfigLists) else ConfigLists.from_lists(config)
    null = lists.null[callers.client]
    lengths = np.where(null, 0, np.diff(lists.offsets)[callers.client])
    # Caller k's entries are the run of its list in the flat arrays: from_runs' arithmetic.
    runs = Allocation.from_runs(lists.offsets[callers.client], lengths)
    caller, entry = runs.caller, runs.queue
    broker = take(lists.broker, entry)
    queue_id = lists.queue_id[entry]
    queue = _mq_all_index(batch, callers.group[caller], broker, queue_id)
    return Allocation(caller, queue, broker, queue_id, null)


def _mq_all_index(batch: GroupBatch, group: np.ndarray, broker: Strings, queue_id: np.ndarray) -> np.ndarray:
    """The flat mqAll index of each (group, broker, queue_id), -1 where the group has no such queue."""
    out = np.full(len(group), -1, dtype=_I64)
    if len(group) == 0 or len(batch.queue_id) == 0:
        return out
    # Broker codes from the configured names only: an mqAll broker that no client configured can
    # match nothing, and Arrow names are coded without becoming Python strings.
    if isinstance(broker, pa.Array):
        encoded = pc.dictionary_encode(broker)
        names = pd.Index(encoded.dictionary.to_numpy(zero_copy_only=False))
        broker_code = pc.fill_null(encoded.indices, -1).to_numpy().astype(_I64)
    else:
        names = pd.Index(pd.unique(broker))
        broker_code = names.get_indexer(broker)
    if isinstance(batch.queue_broker, pa.Array):
        code = pc.fill_null(
            pc.index_in(batch.queue_broker, value_set=pa.array(names.to_numpy(), pa.string())), -1
        )
        mq_code = code.to_numpy(zero_copy_only=False).astype(_I64)
    else:
        mq_code = names.get_indexer(batch.queue_broker).astype(_I64)
    flat = np.flatnonzero(mq_code >= 0)
    # Java never looks a configured queue up in mqAll (the simulator does, to count owners), so a
    # queue listed twice in mqAll simply maps to its first copy.
    position = first_match(
        (batch.queue_group[flat], mq_code[flat], batch.queue_id[flat]), (group, broker_code, queue_id)
    )
    found = position >= 0
    out[found] = flat[position[found]]
    return out


def first_match(keys: tuple[np.ndarray, ...], queries: tuple[np.ndarray, ...]) -> np.ndarray:
    """Per query (a tuple of non-negative integer columns, -1 for none), the position of the first
    equal key, -1 where none: one int64 code per tuple, a stable sort and a binary search."""
    out = np.full(len(queries[0]), -1, dtype=_I64)
    if len(keys[0]) == 0:
        return out
    spans = [int(k.max()) + 1 for k in keys]
    if np.prod(np.array(spans, dtype=float)) >= 2.0**62:  # codes would overflow: compare as tuples
        index = pd.MultiIndex.from_arrays(keys)
        first = ~index.duplicated(keep="first")
        at = index[first].get_indexer(pd.MultiIndex.from_arrays(queries))
        return np.where(at >= 0, np.flatnonzero(first)[np.maximum(at, 0)], -1)
    code, query, valid = np.zeros(len(keys[0]), _I64), np.zeros(len(out), _I64), np.ones(len(out), bool)
    for k, q, span in zip(keys, queries, spans):
        code = code * span + k
        valid &= (q >= 0) & (q < span)
        query = query * span + np.where(valid, q, 0)
    order = np.argsort(code, kind="stable")  # equal codes keep their order: the first comes first
    sorted_code = code[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = sorted_code[1:] != sorted_code[:-1]
    sorted_code, order = sorted_code[first], order[first]
    at, found = lookup_sorted(sorted_code, query)
    hit = valid & found
    out[hit] = order[at[hit]]
    return out
