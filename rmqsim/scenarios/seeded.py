"""Seeded picks of clients (a ``consumers_leave`` by count, a ``stale_view`` by fraction): the same
clients every run, from a hash anyone can recompute.

A client's rank is BLAKE2b (RFC 7693; Python's ``hashlib.blake2b``) of the UTF-8 text
``"<seed>:<client_id>"`` with an 8-byte digest, read as an unsigned big-endian integer; ties, which
would need equal digests, go to the smaller id. The first clients in that order are picked.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa


def rank(seed: int, client_id: str) -> int:
    """A client's place in the order of ``seed``'s picks: the smaller, the earlier."""
    digest = hashlib.blake2b(f"{seed}:{client_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def seeded_order(seed: int, client_ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Indices of ``client_ids`` (a group's distinct ids: a handful to thousands) in the order of
    ``seed``'s picks; a null id last."""
    ids = client_ids.to_pylist()
    keys = [(1, 0, "") if c is None else (0, rank(seed, c), c) for c in ids]
    return np.array(sorted(range(len(ids)), key=keys.__getitem__), dtype=np.int64)
