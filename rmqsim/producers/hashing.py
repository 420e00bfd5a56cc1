"""The hashes behind the hash queue selectors, vectorised over whole columns of keys.

Java, SelectMessageQueueByHash.java:26-33: ``index = |arg.hashCode() % n|`` with Java's remainder
(the dividend's sign), over the whole publish list. String.hashCode is ``h = 31*h + c`` over
UTF-16 code units with int32 wraparound (a character outside the BMP is two units); Integer hashes
to its value, Long to ``(int)(v ^ (v >>> 32))``.

Go, producer/selector.go:115-142: ``index = int(fnv32a(UTF-8 bytes of the sharding key)) % n``,
never negative on a 64-bit build.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from rmqsim.arrays import combined

FNV32_OFFSET = np.uint32(2166136261)
FNV32_PRIME = np.uint32(16777619)
LOW_32 = np.uint64(0xFFFFFFFF)

Keys = pa.Array | pa.ChunkedArray | np.ndarray | Sequence[str]


def _utf8(keys: Keys) -> tuple[np.ndarray, np.ndarray]:
    """(byte offsets from 0, the UTF-8 bytes) of a column of strings without nulls."""
    array = combined(keys) if isinstance(keys, pa.Array | pa.ChunkedArray) else pa.array(list(keys))
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        array = array.cast(pa.string())
    if array.null_count:
        raise ValueError(
            f"{array.null_count} null keys: hashing a null key throws in Java and has no key in Go"
        )
    large = pa.types.is_large_string(array.type)
    _, offsets, data = array.buffers()
    at = np.frombuffer(offsets, dtype=np.int64 if large else np.int32)[
        array.offset : array.offset + len(array) + 1
    ]
    at = at.astype(np.int64)
    raw = np.frombuffer(data, dtype=np.uint8)[at[0] : at[-1]] if data is not None else np.zeros(0, np.uint8)
    return at - at[0], raw


def _utf16_units(offsets: np.ndarray, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code unit offsets, UTF-16 code units) of the same strings. Every UTF-8 lead byte starts
    one unit, and a 4-byte lead (0xF0..0xF4) a surrogate pair, so the unit offsets follow from the
    bytes alone."""
    units_per_byte = ((raw & 0xC0) != 0x80).astype(np.int64) + (raw >= 0xF0)
    ends = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum(units_per_byte, out=ends[1:])
    units = np.frombuffer(raw.tobytes().decode("utf-8").encode("utf-16-le"), dtype="<u2")
    return ends[offsets], units


def java_string_hash(keys: Keys) -> np.ndarray:
    """int32 per key: java.lang.String.hashCode(). Keys: Arrow strings, or Python strings."""
    offsets, raw = _utf8(keys)
    unit_offsets, units = _utf16_units(offsets, raw)
    lengths = np.diff(unit_offsets)
    # h = sum of unit[i] * 31^(L-1-i) mod 2^32, and uint32 arithmetic wraps exactly mod 2^32.
    powers = np.ones(max(int(lengths.max(initial=0)), 1), dtype=np.uint32)
    np.cumprod(np.full(len(powers) - 1, 31, dtype=np.uint32), out=powers[1:])
    exponent = np.repeat(unit_offsets[1:] - 1, lengths) - np.arange(len(units), dtype=np.int64)
    running = np.zeros(len(units) + 1, dtype=np.uint32)
    np.cumsum(units.astype(np.uint32) * powers[exponent], out=running[1:])
    return (running[unit_offsets[1:]] - running[unit_offsets[:-1]]).view(np.int32)


def java_integer_hash(values: np.ndarray | Sequence[int]) -> np.ndarray:
    """int32 per value: Integer.hashCode(), the value itself."""
    return np.asarray(values, dtype=np.int64).astype(np.int32)


def java_long_hash(values: np.ndarray | Sequence[int]) -> np.ndarray:
    """int32 per value: Long.hashCode(), (int)(v ^ (v >>> 32))."""
    bits = np.asarray(values, dtype=np.int64).view(np.uint64)
    return ((bits ^ (bits >> np.uint64(32))) & LOW_32).astype(np.uint32).view(np.int32)


def java_hash_index(hash_code: np.ndarray, queue_count: np.ndarray | int) -> np.ndarray:
    """int64: SelectMessageQueueByHash's index, |hashCode % n| with Java's remainder."""
    queue_count = np.asarray(queue_count, dtype=np.int64)
    if (queue_count <= 0).any():
        raise ValueError("an empty publish list: Java's % throws ArithmeticException: / by zero")
    return np.abs(np.fmod(np.asarray(hash_code, dtype=np.int64), queue_count))


def fnv32a(keys: Keys) -> np.ndarray:
    """uint32 per key: Go's hash/fnv New32a over the key's UTF-8 bytes. FNV-1a has no closed
    form, so this steps through byte positions, each step over every key that long."""
    offsets, raw = _utf8(keys)
    lengths = np.diff(offsets)
    longest_first = np.argsort(-lengths, kind="stable")
    starts, lengths = offsets[:-1][longest_first], lengths[longest_first]
    hashes = np.full(len(starts), FNV32_OFFSET, dtype=np.uint32)
    for position in range(int(lengths.max(initial=0))):
        active = int(np.searchsorted(-lengths, -position, side="left"))  # keys longer than position
        hashes[:active] ^= raw[starts[:active] + position]
        hashes[:active] *= FNV32_PRIME
    out = np.empty_like(hashes)
    out[longest_first] = hashes
    return out


def go_hash_index(fnv: np.ndarray, queue_count: np.ndarray | int) -> np.ndarray:
    """int64: the Go hash selector's index, int(fnv32a) % n on a 64-bit build."""
    queue_count = np.asarray(queue_count, dtype=np.int64)
    if (queue_count <= 0).any():
        raise ValueError("an empty publish list: Go's % panics with integer divide by zero")
    return np.asarray(fnv, dtype=np.uint32).astype(np.int64) % queue_count
