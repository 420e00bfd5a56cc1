"""Seeded picks of clients without Spark: Spark's ``xxhash64(seed, client_id)`` reproduced in numpy,
so that a ``count`` leave or a ``fraction`` stale view picks the same clients as when the picks
were Spark queries.

Spark's XxHash64 starts from the seed 42, hashes the int (or long) literal with it, then the
string's UTF-8 bytes with that hash as the seed (a null string leaves the hash as it is): the
standard XXH64 over little-endian words, read as a signed long. Vectorised over the strings: the
loops below run over 32-byte stripes and the few words and bytes of a tail, never over strings.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

P1 = np.uint64(11400714785074694791)
P2 = np.uint64(14029467366897019727)
P3 = np.uint64(1609587929392839161)
P4 = np.uint64(9650029242287828579)
P5 = np.uint64(2870177450012600261)
SPARK_SEED = 42  # XxHash64's default seed
_MASK = (1 << 64) - 1


def xxhash64(seed: int, strings: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``F.xxhash64(F.lit(seed), strings)`` for every string, as int64 (Spark's long)."""
    start = _literal_hash(seed)
    offsets, data, valid = _utf8(strings)
    with np.errstate(over="ignore"):
        hashed = _hash_bytes(offsets, data, np.uint64(start))
    hashed[~valid] = np.uint64(start)
    return hashed.view(np.int64)


def seeded_order(seed: int, client_ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Indices of ``client_ids`` in the order ``orderBy(xxhash64(lit(seed), client_id), client_id)``
    gives: the hash ascending as a signed long, then the id by its UTF-8 bytes, nulls first."""
    keys = pa.table({"hash": xxhash64(seed, client_ids), "client_id": client_ids})
    order = pc.sort_indices(
        keys, sort_keys=[("hash", "ascending", "at_start"), ("client_id", "ascending", "at_start")]
    )
    return order.to_numpy()


def _literal_hash(seed: int) -> int:
    """XXH64.hashInt or hashLong of the literal with seed 42: PySpark makes an int literal of a
    Python int in the int range and a long literal beyond it."""
    if not -(2**63) <= seed < 2**63:
        raise ValueError(f"seed {seed} does not fit a long")
    h = SPARK_SEED + int(P5)
    if -(2**31) <= seed < 2**31:
        h = (h + 4) ^ ((seed & 0xFFFFFFFF) * int(P1))
        h = _rotl_int(h & _MASK, 23) * int(P2) + int(P3)
    else:
        h = (h + 8) ^ (_rotl_int((seed * int(P2)) & _MASK, 31) * int(P1))
        h = _rotl_int(h & _MASK, 27) * int(P1) + int(P4)
    return _fmix_int(h & _MASK)


def _rotl_int(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _fmix_int(h: int) -> int:
    h ^= h >> 33
    h = (h * int(P2)) & _MASK
    h ^= h >> 29
    h = (h * int(P3)) & _MASK
    return h ^ (h >> 32)


def _utf8(strings: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, bytes, valid) of the strings in CSR form: string i is bytes[offsets[i]:offsets[i + 1]],
    the bytes padded with zeros so that a word read past a string's end stays inside them."""
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks() if strings.num_chunks else pa.array([], strings.type)
    strings = strings.cast(pa.large_binary())
    _, offsets_buffer, data_buffer = strings.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[
        strings.offset : strings.offset + len(strings) + 1
    ]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.empty(0, np.uint8)
    padded = np.zeros(int(offsets[-1]) + 32, dtype=np.uint8)
    padded[: offsets[-1] - offsets[0]] = data[offsets[0] : offsets[-1]]
    valid = strings.is_valid().to_numpy(zero_copy_only=False)
    return offsets - offsets[0], padded, valid


_WORD = np.arange(8)


def _word(data: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian uint64 starting at each byte position ``at``."""
    return np.ascontiguousarray(data[at[:, None] + _WORD]).view("<u8")[:, 0]


def _int(data: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian uint32 starting at each byte position ``at``, as uint64."""
    return np.ascontiguousarray(data[at[:, None] + _WORD[:4]]).view("<u4")[:, 0].astype(np.uint64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: np.ndarray, word: np.ndarray) -> np.ndarray:
    return _rotl(acc + word * P2, 31) * P1


def _hash_bytes(offsets: np.ndarray, data: np.ndarray, seed: np.uint64) -> np.ndarray:
    """XXH64 of every string with one seed (Spark's XXH64.hashUnsafeBytes)."""
    begin = offsets[:-1]
    length = np.diff(offsets)
    n = len(length)
    stripes = length // 32
    h = np.full(n, seed + P5, dtype=np.uint64)
    # Strings of 32 bytes or more: four lanes over 32-byte stripes, the longest strings first so
    # that those with a j-th stripe are a prefix.
    long_ones = np.flatnonzero(stripes > 0)
    if len(long_ones):
        long_ones = long_ones[np.argsort(-stripes[long_ones], kind="stable")]
        lanes = [
            np.full(len(long_ones), v, dtype=np.uint64) for v in (seed + P1 + P2, seed + P2, seed, seed - P1)
        ]
        descending = stripes[long_ones]
        for j in range(int(descending[0])):
            active = int(np.searchsorted(-descending, -j, side="left"))  # rows with more than j stripes
            at = begin[long_ones[:active]] + 32 * j
            for i, lane in enumerate(lanes):
                lane[:active] = _round(lane[:active], _word(data, at + 8 * i))
        v1, v2, v3, v4 = lanes
        acc = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for lane in lanes:
            acc = (acc ^ _round(np.zeros_like(lane), lane)) * P1 + P4
        h[long_ones] = acc
    h += length.astype(np.uint64)
    at = begin + 32 * stripes
    left = length - 32 * stripes
    for _ in range(3):  # up to three 8-byte words
        rows = np.flatnonzero(left >= 8)
        h[rows] = _rotl(h[rows] ^ _round(np.zeros(len(rows), np.uint64), _word(data, at[rows])), 27) * P1 + P4
        at[rows] += 8
        left[rows] -= 8
    rows = np.flatnonzero(left >= 4)  # a 4-byte word
    h[rows] = _rotl(h[rows] ^ (_int(data, at[rows]) * P1), 23) * P2 + P3
    at[rows] += 4
    left[rows] -= 4
    for b in range(3):  # the last bytes, one at a time
        rows = np.flatnonzero(left > b)
        h[rows] = _rotl(h[rows] ^ (data[at[rows] + b].astype(np.uint64) * P5), 11) * P1
    return _fmix(h)


def _fmix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h = h * P2
    h = h ^ (h >> np.uint64(29))
    h = h * P3
    return h ^ (h >> np.uint64(32))
