"""`rmqsim import-mqadmin`'s per-group flags (docs/CONTRACT.md, section 5): each a repeatable
``GROUP=VALUE`` (one group) or bare ``VALUE`` (every other group), read and checked; a bad one is
an InputError naming the flag (exit code 2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from rmqsim import schemas
from rmqsim.errors import InputError
from rmqsim.mqadmin.importer import PerGroup, RequestMode
from rmqsim.strategies import STRATEGIES

T = TypeVar("T")


def _per_group(values: Sequence[str], flag: str, form: str, read: Callable[[str, str], T]) -> PerGroup[T]:
    """A repeatable flag's ``GROUP=VALUE`` and ``VALUE`` arguments, each value read by ``read``
    (given the value and the whole argument, for messages); the last one for a group wins."""
    default, by_group = None, {}
    for value in values:
        group, sep, raw = value.rpartition("=")
        parsed = read(raw.strip(), value)
        if not sep:
            default = parsed
        elif not group.strip():
            raise InputError("arguments", flag, f"expected GROUP={form} or {form}, got {value!r}")
        else:
            by_group[group.strip()] = parsed
    return PerGroup(default, by_group)


def _choice(flag: str, what: str, name: str, value: str, allowed: Sequence[str]) -> str:
    """``name`` if it is one of ``allowed`` (compared as given), else exit code 2 naming the flag."""
    if name not in allowed:
        raise InputError(
            "arguments", flag, f"unknown {what} {name!r} in {value!r}; choose from {', '.join(allowed)}"
        )
    return name


def _strategy(name: str, value: str) -> str:
    return _choice("--strategy", "strategy", name.upper(), value, tuple(STRATEGIES))


def _rebalance(name: str, value: str) -> str:
    rebalances = tuple(r.lower() for r in schemas.REBALANCES)  # as the contract spells them
    return _choice("--rebalance", "rebalance", name.lower(), value, rebalances)


def _request_mode(text: str, value: str) -> RequestMode:
    mode, sep, number = text.partition(":")
    mode = mode.strip().upper()
    if mode not in schemas.REQUEST_MODES:
        raise InputError(
            "arguments",
            "--request-mode",
            f"unknown request mode {mode!r} in {value!r}; choose from PULL, POP or POP:N",
        )
    if not sep:
        return RequestMode(mode)
    if mode != "POP":
        raise InputError("arguments", "--request-mode", f"only POP takes a number (POP:N), got {value!r}")
    try:
        n = int(number.strip())
    except ValueError:
        n = None
    if n is None or not -(2**31) <= n < 2**31:
        raise InputError(
            "arguments",
            "--request-mode",
            f"POP:N takes a whole number N (pop_share_queue_num), got {number.strip()!r} in {value!r}",
        )
    return RequestMode(mode, n)


def _selector(name: str, value: str) -> str:
    return _choice("--selector", "selector", name.upper(), value, schemas.SELECTORS)


def _send_latency_fault(text: str, value: str) -> bool:
    flag = {"true": True, "false": False}.get(text.lower())
    if flag is None:
        raise InputError(
            "arguments", "--send-latency-fault", f"expected true or false, got {text!r} in {value!r}"
        )
    return flag


def parse_strategies(values: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    """``--strategy`` values: ``GROUP=NAME`` for one group, a bare ``NAME`` for every other group."""
    parsed = _per_group(values, "--strategy", "NAME", _strategy)
    return parsed.default, dict(parsed.by_group)


def parse_rebalances(values: Sequence[str]) -> PerGroup[str]:
    """``--rebalance`` values: ``GROUP=broker`` (client, broker or proxy, any case) for one group,
    a bare value for every other group; written in lower case, as the contract spells them."""
    return _per_group(values, "--rebalance", "client|broker|proxy", _rebalance)


def parse_request_modes(values: Sequence[str]) -> PerGroup[RequestMode]:
    """``--request-mode`` values: ``GROUP=POP:N``, ``GROUP=POP`` or ``GROUP=PULL`` for one group, a
    bare value for every other group."""
    return _per_group(values, "--request-mode", "PULL|POP[:N]", _request_mode)


def parse_selectors(values: Sequence[str]) -> PerGroup[str]:
    """``--selector`` values: ``PRODUCER_GROUP=HASH`` (HASH or ROUND_ROBIN, any case) for one producer
    group, a bare value for every other; written in upper case."""
    return _per_group(values, "--selector", "HASH|ROUND_ROBIN", _selector)


def parse_send_latency_faults(values: Sequence[str]) -> PerGroup[bool]:
    """``--send-latency-fault`` values: ``PRODUCER_GROUP=true`` (true or false, any case) for one
    producer group, a bare value for every other."""
    return _per_group(values, "--send-latency-fault", "true|false", _send_latency_fault)
