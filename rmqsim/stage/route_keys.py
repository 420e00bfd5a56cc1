"""Every (scenario, phase, topic) of a run's traffic, numbered once (RouteKeys), and the rows of
other tables found among keys by their columns' values (lookup): how stage.inflow's parts join
tables without sorting strings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import combined, lookup_sorted, row_codes
from rmqsim.schemas import PHASE

ROUTE_KEY = [*PHASE, "topic"]


@dataclass(frozen=True)
class RouteKeys:
    """Every (scenario, phase, topic) of the run, numbered; ``code(table)`` finds a table's rows'."""

    table: pa.Table  # scenario, phase, topic: one row per key
    topic_queues: np.ndarray  # each topic_queues row's key number
    producers: np.ndarray  # each producers row's

    def code(self, table: pa.Table) -> np.ndarray:
        """Each row's key number (-1 where the run has no such key)."""
        return lookup(self.table, table, ROUTE_KEY)

    def __len__(self) -> int:
        return self.table.num_rows


def joined_key(table: pa.Table, columns: list[str]) -> pa.Array:
    parts = [pc.cast(combined(table[c]), pa.string()) for c in columns]
    return pc.binary_join_element_wise(*parts, "\x00")


def lookup(keys: pa.Table, table: pa.Table, columns: list[str]) -> np.ndarray:
    """Each row of ``table``'s index in ``keys`` (whose rows are distinct) by ``columns``; -1 where
    none. A null matches a null."""
    n = keys.num_rows
    code = row_codes(
        [
            pa.concat_arrays([combined(keys[c]), combined(table[c]).cast(keys.schema.field(c).type)])
            for c in columns
        ]
    )
    order = np.argsort(code[:n], kind="stable")
    at, found = lookup_sorted(code[:n][order], code[n:])
    return np.where(found, order[at], -1).astype(np.int64)


def route_keys(topic_queues: pa.Table, producers: pa.Table) -> RouteKeys:
    """The keys of the topic_queues and producers rows, numbered as they first appear: the
    routes' are the topic_queues'."""
    every = pa.concat_tables(
        [t.select(ROUTE_KEY).cast(topic_queues.select(ROUTE_KEY).schema) for t in (topic_queues, producers)]
    )
    # Numbered by hashing: each key's number is how many distinct keys came before it.
    number = pc.dictionary_encode(pa.array(row_codes([every[c] for c in ROUTE_KEY]))).indices
    number = number.to_numpy(zero_copy_only=False).astype(np.int64)
    first = np.flatnonzero(number > np.maximum.accumulate(np.concatenate([[-1], number[:-1]])))
    n = topic_queues.num_rows
    return RouteKeys(every.take(pa.array(first)), topic_queues=number[:n], producers=number[n:])


# ------------------------------------------------------------------ brokers and lists
