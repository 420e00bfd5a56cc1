"""Java's String ordering, which RocketMQ clients use to sort mqAll and cidAll.

Java compares strings by UTF-16 code units; Python, Spark, Arrow and numpy compare by code point
(or UTF-8 bytes). The two orders differ only when a character outside the Basic Multilingual
Plane (an emoji, say) meets one in U+E000..U+FFFF: Java puts the surrogate pair (0xD800..0xDFFF)
first. Big-endian UTF-16 bytes compare exactly like the code units, so they are the sort key.
"""

from __future__ import annotations

from collections.abc import Iterable


def java_key(text: str) -> bytes:
    """Sort key that orders strings the way java.lang.String.compareTo does."""
    return text.encode("utf-16-be", "surrogatepass")


def java_sorted(items: Iterable[str]) -> list[str]:
    return sorted(items, key=java_key)
