"""orderTopicConf ("brokerA:4;brokerB:8"): the brokers and queue counts of an order topic's publish list.

Java (MQClientInstance.java:226-281): ``conf.split(";")``, each item ``.split(":")``, then
``Integer.parseInt(item[1])`` queues on ``item[0]``. String.split drops trailing empty strings, so
"a:2;" is fine while "a:2;;b:1", "a" and "a:" throw ArrayIndexOutOfBoundsException; parseInt takes
one optional sign and decimal digits, anything else throws NumberFormatException.

Go (internal/route.go:472-531): strings.Split keeps empty strings, so a trailing ";" or an item
without ":" panics (index out of range); ``nums, _ := strconv.Atoi(item[1])`` turns a bad number
into 0 queues.

Both keep items in conf order, repeats included; an item with n <= 0 adds nothing. Callers treat a
null or empty conf as "not an order topic" before coming here.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
GO_INT_MIN, GO_INT_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class OrderTopicConf:
    """An orderTopicConf as one client reads it: (broker, queue count > 0) items in list order,
    or the client's failure (then no items)."""

    brokers: tuple[str, ...] = ()
    queue_counts: tuple[int, ...] = ()
    error: str | None = None


def java_split(text: str, separator: str) -> list[str]:
    """Java's ``text.split(separator)`` for a one-character, non-regex separator: trailing empty
    strings removed (all of them when there are only separators)."""
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts if len(parts) > 1 or separator in text else [text]


def _java_digit(char: str) -> int:
    """Character.digit(c, 10) for one UTF-16 unit: any Unicode decimal digit, else -1."""
    return unicodedata.decimal(char, -1) if ord(char) <= 0xFFFF else -1  # a pair is two non-digits


def java_parse_int(text: str) -> int:
    """Integer.parseInt(text): raises ValueError carrying Java's NumberFormatException text."""
    failure = ValueError(f'java.lang.NumberFormatException: For input string: "{text}"')
    body = text[1:] if text[:1] in ("+", "-") else text
    digits = [_java_digit(c) for c in body]
    if not digits or min(digits) < 0:
        raise failure
    value = int("".join(map(str, digits)))
    value = -value if text[0] == "-" else value
    if not INT_MIN <= value <= INT_MAX:
        raise failure
    return value


def go_atoi(text: str) -> int:
    """``n, _ := strconv.Atoi(text)`` on a 64-bit build: 0 on a syntax error, the int64 limit
    on overflow (Atoi returns both with its error)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return 0
    value = -int(body) if text[0] == "-" else int(body)
    return min(max(value, GO_INT_MIN), GO_INT_MAX)


def _kept(items: list[tuple[str, int]]) -> OrderTopicConf:
    kept = [(broker, n) for broker, n in items if n > 0]
    return OrderTopicConf(tuple(b for b, _ in kept), tuple(n for _, n in kept))


def parse_java(conf: str) -> OrderTopicConf:
    items = []
    for text in java_split(conf, ";"):
        item = java_split(text, ":")
        if len(item) < 2:  # item[1] is read first
            failure = (
                f"java.lang.ArrayIndexOutOfBoundsException: Index 1 out of bounds for length {len(item)}"
            )
            return OrderTopicConf(error=failure)
        try:
            items.append((item[0], java_parse_int(item[1])))
        except ValueError as error:
            return OrderTopicConf(error=str(error))
    return _kept(items)


def parse_go(conf: str) -> OrderTopicConf:
    items = []
    for text in conf.split(";"):
        item = text.split(":")
        if len(item) < 2:
            failure = f"panic: runtime error: index out of range [1] with length {len(item)}"
            return OrderTopicConf(error=failure)
        items.append((item[0], go_atoi(item[1])))
    return _kept(items)
