"""A scenario step's values (docs/CONTRACT.md, section 3): each key coerced from YAML to its type
(coerced), and the checks a step's type alone does not make (check_step), each an InputError that
names the step kind and key.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rmqsim.errors import InputError
from rmqsim.schemas import LANGUAGES, MAX_FACTOR, MAX_RATE, MESSAGE_MODELS, REBALANCES, REQUEST_MODES

if TYPE_CHECKING:
    from rmqsim.scenarios.parse import Designate, RollingRestart, SetRebalance, SetStrategy, SetTraffic, Step

ALL = "all"  # a step's topics or brokers, or a sweep's elements: every one

_LISTS = {"names", "client_ids", "consumer_idcs", "ips", "rooms"}
_ALL_OR_LIST = {"topics", "brokers"}
_INTS = {
    "read_queue_nums",
    "write_queue_nums",
    "perm",
    "count",
    "seed",
    "virtual_node_cnt",
    "pop_share_queue_num",
    "batch",
}
_FRACTIONS = {"fraction"}
_RATES = {"msgs_per_s", "factor", "send_latency_ms"}  # numbers, not negative
_SECONDS = {"after_s", "interval_s", "down_s"}  # numbers, not negative
_BOOLS = {"tcp_closed", "graceful", "new_ip"}  # YAML's true or false
_NULLABLE = {"send_latency_ms", "ips"}  # null means "clear it"


def coerced(key: str, value: object, where: str, kind: str) -> object:
    label = f"{kind}.{key}"
    if key in _ALL_OR_LIST:
        if value == ALL:
            return ALL
        return names_of(value, where, label)
    if key in _LISTS:
        return None if value is None and key in _NULLABLE else names_of(value, where, label)
    if key in _INTS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(where, label, f"expected an integer, got {value!r}")
        return value
    if key in _FRACTIONS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(where, label, f"expected a number, got {value!r}")
        return _double(value, where, label)
    if key in _BOOLS:
        if not isinstance(value, bool):
            raise InputError(where, label, f"expected true or false, got {value!r}")
        return value
    if key in _RATES or key in _SECONDS:
        return None if value is None and key in _NULLABLE else not_negative(value, where, label)
    if value is None or not isinstance(value, str) or not value.strip():
        raise InputError(where, label, f"expected a non-empty string, got {value!r}")
    return value.strip()


def not_negative(value: object, where: str, label: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise InputError(where, label, f"expected a number, 0 or more, got {value!r}")
    return _double(value, where, label)


def _double(value: int | float, where: str, label: str) -> float:
    """``value`` as a double: YAML's integers have no bound, and one past 1.8e308 has no double."""
    try:
        return float(value)
    except OverflowError:
        digits = len(str(abs(int(value))))
        problem = f"expected a number a double holds, got an integer of {digits} digits"
        raise InputError(where, label, problem) from None


def names_of(value: object, where: str, label: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputError(where, label, f"expected a non-empty list of names, got {value!r}")
    return tuple(dict.fromkeys(v.strip() for v in value))


def check_step(step: Step, where: str, kind: str) -> None:
    """Value checks that the step's types alone do not make; an InputError naming the key."""

    def bad(key: str, problem: str) -> InputError:
        return InputError(where, f"{kind}.{key}", problem)

    for key in ("read_queue_nums", "write_queue_nums"):
        value = getattr(step, key, None)
        if value is not None and not 0 <= value <= 65535:
            raise bad(key, f"must be between 0 and 65535, got {value}")
    if kind == "add_brokers" and not 0 <= step.perm <= 15:
        raise bad("perm", f"must be between 0 and 15, got {step.perm}")
    if kind == "set_queue_nums" and step.read_queue_nums is None and step.write_queue_nums is None:
        raise bad("read_queue_nums", "give read_queue_nums, write_queue_nums or both")
    if kind in ("consumers_join", "consumers_leave", "crash"):
        _check_who(step.client_ids, "count", step.count, step.count is not None and step.count < 1, bad)
    if kind == "stale_view":
        fraction = step.fraction
        _check_who(step.client_ids, "fraction", fraction, fraction is not None and not 0 < fraction <= 1, bad)
    check = _KIND_CHECKS.get(kind)
    if check is not None:
        check(step, bad)
    if kind == "consumers_join" and step.language is not None:
        _check_one_of(bad, "language", step.language, LANGUAGES)


def _check_set_traffic(step: SetTraffic, bad: Callable[[str, str], InputError]) -> None:
    if (step.msgs_per_s is None) == (step.factor is None):
        raise bad("msgs_per_s", "give either msgs_per_s or factor")
    for key, most in (("msgs_per_s", MAX_RATE), ("factor", MAX_FACTOR)):  # section 1's bounds
        value = getattr(step, key)
        if value is not None and value > most:
            raise bad(key, f"must be at most {most:g}, got {value!r}")


def _check_designate(step: Designate, bad: Callable[[str, str], InputError]) -> None:
    for ip in step.ips or ():
        if not is_ip(ip):
            raise bad("ips", f"{ip!r} is not an IP address")


def is_ip(text: str) -> bool:
    """An IPv4 or IPv6 address as a client id's part before '@' holds it."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _check_one_of(
    bad: Callable[[str, str], InputError], key: str, value: str, allowed: Sequence[str]
) -> None:
    if value.strip().upper() not in allowed:
        raise bad(key, f"unknown {key} {value!r}; expected one of {', '.join(allowed)}")


def _check_set_rebalance(step: SetRebalance, bad: Callable[[str, str], InputError]) -> None:
    _check_one_of(bad, "rebalance", step.rebalance, REBALANCES)
    if step.request_mode is not None:
        _check_one_of(bad, "request_mode", step.request_mode, REQUEST_MODES)


def _check_who(
    client_ids: object, key: str, value: object, out_of_range: bool, bad: Callable[[str, str], InputError]
) -> None:
    """Steps that name their clients either by ``client_ids`` or by ``key`` (a count or fraction)."""
    if (client_ids is None) == (value is None):
        raise bad("client_ids", f"give either client_ids or {key} (with seed)")
    if out_of_range:
        limit = "must be at least 1" if key == "count" else "must be above 0 and at most 1"
        raise bad(key, f"{limit}, got {value}")


def _check_rolling_restart(step: RollingRestart, bad: Callable[[str, str], InputError]) -> None:
    if step.batch < 1:
        raise bad("batch", f"must be at least 1, got {step.batch}")
    if step.interval_s <= 0:
        raise bad("interval_s", f"must be above 0, got {step.interval_s:g}")


def _check_set_strategy(step: SetStrategy, bad: Callable[[str, str], InputError]) -> None:
    from rmqsim.strategies import STRATEGIES

    if step.strategy.upper() not in STRATEGIES:
        raise bad("strategy", f"unknown strategy {step.strategy!r}; expected one of {', '.join(STRATEGIES)}")
    if step.virtual_node_cnt is not None and step.virtual_node_cnt < 1:
        raise bad("virtual_node_cnt", f"must be at least 1, got {step.virtual_node_cnt}")
    if step.message_model is not None and step.message_model.strip().upper() not in MESSAGE_MODELS:
        raise bad(
            "message_model",
            f"unknown message_model {step.message_model!r}; expected one of {', '.join(MESSAGE_MODELS)}",
        )


# Value checks of one step kind each (the others need none beyond check_step's).
_KIND_CHECKS: dict[str, Callable] = {
    "set_strategy": _check_set_strategy,
    "set_rebalance": _check_set_rebalance,
    "set_traffic": _check_set_traffic,
    "designate": _check_designate,
    "rolling_restart": _check_rolling_restart,
}
