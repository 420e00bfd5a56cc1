"""Java's String ordering, which RocketMQ clients use to sort mqAll and cidAll.

Java compares strings by UTF-16 code units; Python, Spark, Arrow and numpy compare by code point
(or UTF-8 bytes). The two orders differ only when a character outside the Basic Multilingual
Plane (an emoji, say) meets one in U+E000..U+FFFF: Java puts the surrogate pair (0xD800..0xDFFF)
first. Big-endian UTF-16 bytes compare exactly like the code units, so they are the sort key of
one string (java_key); a whole Arrow column gets a byte key of the same order (java_order).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import combined


def java_key(text: str) -> bytes:
    """Sort key that orders strings the way java.lang.String.compareTo does."""
    return text.encode("utf-16-be", "surrogatepass")


def java_sorted(items: Iterable[str]) -> list[str]:
    return sorted(items, key=java_key)


def java_order(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """java_key for a whole Arrow column: a key whose byte order is java.lang.String.compareTo's
    (UTF-16 code units); null stays null.

    UTF-8 bytes order strings by code point, and Java's order differs only where a character
    outside the BMP (a surrogate pair, 0xD800..0xDFFF in UTF-16) meets one in U+E000..U+FFFF:
    Java puts the pair first. UTF-8 starts those, and only those, with the bytes 0xEE and 0xEF
    (a continuation byte is 0x80..0xBF); moved to 0xF5 and 0xF6, which UTF-8 never uses, they
    sort after every 4-byte character (0xF0..0xF4) and keep their order among themselves. Without
    a 4-byte character a string is its own key."""
    array = combined(values)
    large = pa.types.is_large_string(array.type)
    _, offsets, data = array.buffers()
    if data is None:
        return array
    at = np.frombuffer(offsets, dtype=np.int64 if large else np.int32)[
        array.offset : array.offset + len(array) + 1
    ]
    raw = np.frombuffer(data, dtype=np.uint8)[at[0] : at[-1]]
    if not (raw >= 0xF0).any():
        return array
    raw = raw.copy()
    raw[raw == 0xEE] = 0xF5
    raw[raw == 0xEF] = 0xF6
    keys = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        len(array),
        [None, pa.py_buffer(at - at[0]), pa.py_buffer(raw)],
    )
    return pc.if_else(array.is_valid(), keys, pa.scalar(None, keys.type)) if array.null_count else keys
