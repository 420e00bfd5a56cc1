"""Flat arrays in CSR layout: many variable-length lists as one values array plus offsets.

List i of a CSR pair is ``values[offsets[i]:offsets[i + 1]]``. Arrow list columns arrive this way
and every strategy works on it, so these helpers are shared by the strategies, the allocation
stage and movement. Strings stay Arrow arrays where they can (no Python object per value) and
become numpy object arrays only where a strategy hashes or parses them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

I64 = np.int64

# Flat string columns: numpy object arrays, or Arrow arrays straight from a Spark batch.
Strings = np.ndarray | pa.Array


def offsets(lengths: np.ndarray) -> np.ndarray:
    """CSR offsets of lists with these lengths: 0, then their running total."""
    out = np.zeros(len(lengths) + 1, dtype=I64)
    np.cumsum(lengths, out=out[1:])
    return out


def within_runs(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ... lengths[0]-1, then 0, 1, ... for every run: each element's place in its list."""
    lengths = np.asarray(lengths, dtype=I64)
    return np.arange(int(lengths.sum()), dtype=I64) - np.repeat(offsets(lengths)[:-1], lengths)


def runs(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """first[0], first[0]+1, ... (count[0] of them), then the same for every run."""
    count = np.asarray(count, dtype=I64)
    return np.repeat(np.asarray(first, dtype=I64), count) + within_runs(count)


def runs_of(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct keys, index of each one's first, its count) of an already sorted array: a sort
    and a diff, several times faster than numpy's hash-based unique."""
    if len(sorted_keys) == 0:
        return sorted_keys, np.zeros(0, I64), np.zeros(0, I64)
    starts = np.flatnonzero(np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]]))
    return sorted_keys[starts], starts, np.diff(np.append(starts, len(sorted_keys)))


def unique_counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys, sorted, and how often each occurs."""
    values, _, n = runs_of(np.sort(keys))
    return values, n


def union_sorted(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of two sorted arrays of distinct keys, sorted, and whether each of its keys is in
    ``a`` and in ``b``: a stable sort of the two runs is one merge (np.union1d and np.isin sort
    and hash them again)."""
    keys = np.concatenate([a, b])
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    # A key in both comes twice, a's copy first: the sort is stable.
    twice = np.zeros(len(keys), dtype=bool)
    twice[:-1] = ~first[1:]
    in_a = order[first] < len(a)
    return keys[first], in_a, ~in_a | twice[first]


def stacked(*tables: pa.Table) -> pa.Table:
    """The rows of every table (the first's columns, in its order), a column nullable where any
    table's is."""
    schema = pa.schema(
        [f.with_nullable(any(t.schema.field(f.name).nullable for t in tables)) for f in tables[0].schema]
    )
    return pa.concat_tables([t.select(schema.names).cast(schema) for t in tables])


def combined(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One Arrow array, whatever chunks a table column came in."""
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def list_lengths(lists: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each list's length; a null list counts as empty."""
    return pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False).astype(I64)


def list_column(batch: pa.RecordBatch, name: str) -> tuple[np.ndarray, pa.Array]:
    """An Arrow list column as (offsets from 0, flat values); a null list counts as empty."""
    column = batch.column(name)
    return offsets(list_lengths(column)), pc.list_flatten(column)


def object_array(values: list) -> np.ndarray:
    """One element per value, even when the values are equal-length lists (np.array would stack them)."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out


def factorize(values: Strings) -> np.ndarray:
    """Integer codes for strings, equal codes for equal strings (0 for null)."""
    if isinstance(values, pa.Array):
        indices = pc.dictionary_encode(values).indices
        return pc.fill_null(pc.add(indices.cast(pa.int64()), 1), 0).to_numpy()
    codes, _ = pd.factorize(values)  # hash-based: O(n), None gets -1
    return codes.astype(I64) + 1


def row_codes(columns: Sequence[pa.Array | pa.ChunkedArray]) -> np.ndarray:
    """One int64 per row, equal exactly where the rows' values of ``columns`` (of one length) are
    all equal; a null is a value like any other. Each column is numbered, then the numbers are
    combined: no strings are joined."""
    code = np.zeros(len(columns[0]) if columns else 0, I64)
    for column in columns:
        encoded = pc.dictionary_encode(combined(column), null_encoding="encode")
        size = max(len(encoded.dictionary), 1)
        if len(code) and int(code.max()) >= (1 << 62) // size:
            code = np.unique(code, return_inverse=True)[1].astype(I64)  # renumbered, not to overflow
        code = code * size + encoded.indices.to_numpy(zero_copy_only=False)
    return code


def null_or_empty(values: Strings) -> np.ndarray:
    """True where a string is null or empty (Java's StringUtils.isEmpty, which the strategies run)."""
    if isinstance(values, pa.Array):
        return pc.fill_null(pc.equal(pc.utf8_length(values), 0), True).to_numpy(zero_copy_only=False)
    return pd.Series(values, dtype=object).fillna("").eq("").to_numpy()


def take(values: Strings, indices: np.ndarray) -> Strings:
    return (
        values.take(pa.array(indices, type=pa.int64())) if isinstance(values, pa.Array) else values[indices]
    )


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting: numpy 2's hashing unique is several times slower on a million int64s."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


def lookup_sorted(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each key sits in sorted_keys (0 where absent) and whether it is there."""
    at = np.searchsorted(sorted_keys, keys)
    found = at < len(sorted_keys)
    found[found] = sorted_keys[at[found]] == keys[found]
    return np.where(found, at, 0), found


def as_objects(values: Strings) -> np.ndarray:
    """Python strings, for the strategies that hash or parse names."""
    if isinstance(values, pa.Array):
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)
    return values


def when(mask: pa.Array, values: pa.Array) -> pa.Array:
    """``values`` where ``mask`` holds, else null (SQL's ``when``: aggregates then skip them)."""
    return pc.if_else(mask, values, pa.scalar(None, values.type))
