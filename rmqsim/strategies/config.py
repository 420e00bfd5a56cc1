"""CONFIG: AllocateMessageQueueByConfig, each client's configured queue list, returned as is.

The Java class checks nothing and ignores mqAll, cidAll and the current id: whoever calls it gets
its messageQueueList, duplicates and order included, and null when the list is null. A fleet
therefore gets no partition of its queues: a queue configured for two clients is owned twice,
a queue configured for none has no owner, and a configured queue that is not in mqAll is still
returned (its ``queue`` index is -1).
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.strategies.batch import Allocation, Callers, GroupBatch

NAME = "CONFIG"

_I64 = np.int64


def allocate(batch: GroupBatch, callers: Callers) -> Allocation:
    try:
        config = batch.params["client_config"]
    except KeyError:
        # An absent parameter would otherwise look like every client returning null.
        raise KeyError("CONFIG needs batch.params['client_config'], one list per flat client") from None
    lists = config[callers.client]
    null = np.fromiter((c is None for c in lists), dtype=bool, count=len(lists))
    lengths = np.fromiter((0 if c is None else len(c) for c in lists), dtype=_I64, count=len(lists))
    pairs = np.array(list(chain.from_iterable(c for c in lists if c is not None)), dtype=object)
    pairs = pairs.reshape(-1, 2)  # also gives (0, 2) when nothing is configured
    broker = pairs[:, 0]
    queue_id = pairs[:, 1].astype(_I64)
    caller = np.repeat(np.arange(len(callers), dtype=_I64), lengths)
    group = np.repeat(callers.group.astype(_I64), lengths)
    queue = _mq_all_index(batch, group, broker, queue_id)
    return Allocation(caller, queue, broker, queue_id, null)


def _mq_all_index(
    batch: GroupBatch, group: np.ndarray, broker: np.ndarray, queue_id: np.ndarray
) -> np.ndarray:
    """The flat mqAll index of each (group, broker, queue_id), -1 where the group has no such queue."""
    out = np.full(len(group), -1, dtype=_I64)
    if len(group) == 0 or len(batch.queue_id) == 0:
        return out
    # Broker codes from the configured names only: an mqAll broker that no client configured can
    # match nothing, and Arrow names are coded without becoming Python strings.
    names = pd.Index(pd.unique(broker))
    if isinstance(batch.queue_broker, pa.Array):
        code = pc.fill_null(
            pc.index_in(batch.queue_broker, value_set=pa.array(names.to_numpy(), pa.string())), -1
        )
        mq_code = code.to_numpy(zero_copy_only=False).astype(_I64)
    else:
        mq_code = names.get_indexer(batch.queue_broker).astype(_I64)
    flat = np.flatnonzero(mq_code >= 0)
    mq_keys = pd.MultiIndex.from_arrays([batch.queue_group[flat], mq_code[flat], batch.queue_id[flat]])
    # Java never looks a configured queue up in mqAll (the simulator does, to count owners), so a
    # queue listed twice in mqAll simply maps to its first copy: get_indexer needs unique keys.
    first = ~mq_keys.duplicated(keep="first")
    mq_keys, flat = mq_keys[first], flat[first]
    position = mq_keys.get_indexer(pd.MultiIndex.from_arrays([group, names.get_indexer(broker), queue_id]))
    found = position >= 0
    out[found] = flat[position[found]]
    return out
