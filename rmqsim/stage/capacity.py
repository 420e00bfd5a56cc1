"""Whether each client keeps up (docs/CONTRACT.md, section 2d): its messages per second against its
capacity, over all its topics in the group, and what that means per (topic, group).

A client process consumes at most its capacity c over its topics. With m messages per second
reaching it and a backlog b: its lag grows by max(0, m - c) per second, and its backlog drains in
b / (c - m) seconds where c > m (0 where b is 0; never where m >= c and b > 0). A group needs
ceil((its inflow + its backlog / the drain target) / its clients' mean capacity) clients to keep
up and drain within the target. Pure numpy over one allocation's callers, no loop over groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rmqsim.arrays import runs_of


@dataclass(frozen=True)
class Clients:
    """One allocation's callers by client: a caller per (topic row, client), a client per (scenario,
    phase, group, client id). ``first``: the caller that speaks for each client."""

    of_caller: np.ndarray  # the client of each caller
    first: np.ndarray  # per client: a caller of it
    topics: np.ndarray  # per client: its topics (callers)

    @property
    def n(self) -> int:
        return len(self.first)

    def summed(self, per_caller: np.ndarray) -> np.ndarray:
        return np.bincount(self.of_caller, weights=per_caller, minlength=self.n)


@dataclass(frozen=True)
class Keeping:
    """Per client: capacity (NaN: unknown), load over capacity, whether above it, lag growth, drain
    seconds (NaN: never, or unknown), and whether it never drains."""

    capacity: np.ndarray
    load_over_capacity: np.ndarray
    over: np.ndarray
    growth: np.ndarray
    drain: np.ndarray
    never: np.ndarray
    known: np.ndarray  # capacity and messages known: the figures mean something


def keeping(
    msgs: np.ndarray,
    backlog: np.ndarray,
    capacity: np.ndarray,
    *,
    msgs_known: np.ndarray,
    backlog_known: np.ndarray,
) -> Keeping:
    """The figures of section 2d per client, from its messages per second, backlog and capacity."""
    known = np.isfinite(capacity) & msgs_known
    c = np.where(known, capacity, 0.0)
    m = np.where(known, msgs, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(known & (c > 0), m / np.where(c > 0, c, 1.0), np.nan)
        spare = c - m
        drains = known & backlog_known & ((backlog == 0) | (spare > 0))
        drain = np.where(
            drains, np.where(backlog == 0, 0.0, backlog / np.where(spare > 0, spare, 1.0)), np.nan
        )
    return Keeping(
        capacity=np.where(np.isfinite(capacity), capacity, np.nan),
        load_over_capacity=ratio,
        over=known & (m > c),
        growth=np.where(known, np.maximum(m - c, 0.0), np.nan),
        drain=drain,
        never=known & backlog_known & (backlog > 0) & (spare <= 0),
        known=known,
    )


@dataclass(frozen=True)
class TopicFigures:
    """Per (topic, group) row of a batch: section 2d's group_metrics figures (NaN / -1: null)."""

    over: np.ndarray
    growth: np.ndarray
    max_ratio: np.ndarray
    drain: np.ndarray
    known: np.ndarray


def per_topic(
    keep: Keeping, clients: Clients, caller_row: np.ndarray, caller_msgs: np.ndarray, n_rows: int
) -> TopicFigures:
    """Each row's clients as section 2d counts them: those over capacity, the lag growth this topic
    causes (each client's growth shared over its topics in proportion to their messages), the
    highest load over capacity, and the longest drain (NaN where one never drains)."""
    cls = clients.of_caller
    total = clients.summed(caller_msgs)[cls]
    with np.errstate(divide="ignore", invalid="ignore"):
        part = np.where(total > 0, caller_msgs / np.where(total > 0, total, 1.0), 0.0)
    known = np.bincount(caller_row, weights=keep.known[cls], minlength=n_rows) > 0
    ratio = np.where(np.isnan(keep.load_over_capacity[cls]), -np.inf, keep.load_over_capacity[cls])
    drain = np.where(np.isnan(keep.drain[cls]), -np.inf, keep.drain[cls])
    max_ratio, max_drain = np.full(n_rows, -np.inf), np.full(n_rows, -np.inf)
    np.maximum.at(max_ratio, caller_row, ratio)
    np.maximum.at(max_drain, caller_row, drain)
    unknown_drain = np.bincount(caller_row, weights=np.isnan(keep.drain[cls]), minlength=n_rows) > 0
    return TopicFigures(
        over=np.bincount(caller_row, weights=keep.over[cls], minlength=n_rows),
        growth=np.bincount(caller_row, weights=np.nan_to_num(keep.growth[cls]) * part, minlength=n_rows),
        max_ratio=np.where(np.isfinite(max_ratio), max_ratio, np.nan),
        drain=np.where(unknown_drain | ~np.isfinite(max_drain), np.nan, max_drain),
        known=known,
    )


def clients_needed(
    group_of_row: np.ndarray,
    row_inflow: np.ndarray,
    row_backlog: np.ndarray,
    group_of_client: np.ndarray,
    capacity: np.ndarray,
    drain_target_s: float,
) -> np.ndarray:
    """Per row, its whole group's clients needed (NaN where no capacity is known):
    ceil((inflow + backlog / target) / mean capacity), over the group's rows and distinct clients."""
    n = int(max(group_of_row.max(initial=-1), group_of_client.max(initial=-1))) + 1
    inflow = np.bincount(group_of_row, weights=row_inflow, minlength=n)
    backlog = np.bincount(group_of_row, weights=row_backlog, minlength=n)
    known = np.isfinite(capacity)
    total = np.bincount(group_of_client, weights=np.where(known, capacity, 0.0), minlength=n)
    counted = np.bincount(group_of_client, weights=known, minlength=n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean = total / counted
        need = np.ceil((inflow + backlog / drain_target_s) / mean)
    # A count past what a long holds (a tiny capacity against a huge inflow) is no count: null.
    need = np.where((counted > 0) & (mean > 0) & (need < 2.0**63), need, np.nan)
    return need[group_of_row]


# Rates are summed per group in millionths as integers: the sum does not depend on the rows' order.
# Where an int64 sum could overflow (the largest row times the rows at 2^62 or more: no real fleet),
# each row's millionths are split into three 32-bit limbs, each summed as int64, so a sum of fewer
# than 2^31 rows cannot overflow (each row below 2^96 millionths, 7.9e22 msgs/s, where section 1's
# bounds keep every figure). The total is then rounded once to a double: exact below 2^53
# millionths (9.0e9 msgs/s), the same bits an int64 sum cast to a double gives.
EXACT = 1_000_000
LIMB = 1 << 32


def millionths(values: np.ndarray) -> np.ndarray:
    """Rates (finite, not negative) in millionths, rounded half to even (Arrow's default, which the
    driver's sums use), as integer-valued doubles."""
    return np.round(np.asarray(values, dtype=np.float64) * float(EXACT))


def limbs(whole: np.ndarray) -> np.ndarray:
    """Millionths (integer-valued doubles below 2^96) as int64 limbs of shape (3, n): high * 2^64 +
    middle * 2^32 + low, each below 2^32."""
    high = np.floor(whole / float(LIMB) ** 2)
    rest = whole - high * float(LIMB) ** 2  # exact: whole's low bits, within its 53 significant bits
    middle = np.floor(rest / LIMB)
    return np.stack([high, middle, rest - middle * LIMB]).astype(np.int64)


def from_limbs(sums: np.ndarray) -> np.ndarray:
    """Summed limbs (shape (3, n); or plain int64 sums as the low limb, high and middle 0) as
    msgs/s: each exact total of millionths rounded once to a double, then divided by EXACT."""
    high, middle, low = (np.asarray(s, dtype=np.int64) for s in sums)
    middle = middle + (low >> 32)
    high = high + (middle >> 32)
    below = ((middle & (LIMB - 1)).astype(np.uint64) << np.uint64(32)) | (low & (LIMB - 1)).astype(np.uint64)
    total = below.astype(np.float64)
    # Past 2^64 millionths (1.8e13 msgs/s) Python's integers round the total: no real fleet's.
    for i in np.flatnonzero(high):
        total[i] = float((int(high[i]) << 64) + int(below[i]))
    return total / EXACT


def summable(whole: np.ndarray) -> np.ndarray:
    """Millionths (millionths') as int64 columns to sum, shape (k, n): the values themselves where
    no sum of them can reach 2^63 (the largest times the rows below 2^62: every real fleet), else
    their three limbs."""
    if whole.max(initial=0.0) * len(whole) < 2.0**62:
        return whole.astype(np.int64)[None]
    return limbs(whole)


def from_sums(sums: np.ndarray) -> np.ndarray:
    """summable's columns summed (shape (k, m)), as msgs/s."""
    if len(sums) == 1:
        return sums[0].astype(np.float64) / EXACT
    return from_limbs(sums)


def exact_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per run of ``values`` (runs begin at ``starts``), its sum in msgs/s, taken in millionths."""
    if not len(starts):
        return np.zeros(0)
    return from_sums(np.add.reduceat(summable(millionths(values)), starts, axis=1))


@dataclass(frozen=True)
class Behind:
    """Per group that falls behind (section 2d: a client over capacity, or one whose backlog never
    drains), over its clients: a client of it (the first), how many, those over capacity and those
    that never drain; the sums of their messages, capacities and lag growth (msgs/s, summed in
    millionths) with how many of each are known, and the highest load over capacity (NaN: none
    known)."""

    client: np.ndarray
    consumers: np.ndarray
    over: np.ndarray
    never: np.ndarray
    msgs: np.ndarray
    msgs_known: np.ndarray
    capacity: np.ndarray
    capacity_known: np.ndarray
    growth: np.ndarray
    max_ratio: np.ndarray


def falling_behind(group: np.ndarray, keep: Keeping, msgs: np.ndarray, msgs_known: np.ndarray) -> Behind:
    """The groups whose clients fall behind. ``group``: each client's group, non-decreasing (a
    group's clients side by side); ``msgs``: each client's messages per second (meaningless where
    not ``msgs_known``)."""
    if (np.diff(group) < 0).any():
        raise ValueError("falling_behind needs each group's clients side by side")
    _, starts, consumers = runs_of(group)

    def summed(values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values.astype(np.int64), starts) if len(starts) else np.zeros(0, np.int64)

    known = np.isfinite(keep.capacity)
    ratio = np.where(keep.known & ~np.isnan(keep.load_over_capacity), keep.load_over_capacity, -np.inf)
    highest = np.maximum.reduceat(ratio, starts) if len(starts) else np.zeros(0)
    over, never = summed(keep.over), summed(keep.never)
    behind = (summed(keep.known) > 0) & ((over > 0) | (never > 0))
    at = np.flatnonzero(behind)
    return Behind(
        client=starts[at],
        consumers=consumers[at],
        over=over[at],
        never=never[at],
        msgs=exact_sums(np.where(msgs_known, msgs, 0.0), starts)[at],
        msgs_known=summed(msgs_known)[at],
        capacity=exact_sums(np.where(known, np.nan_to_num(keep.capacity), 0.0), starts)[at],
        capacity_known=summed(known)[at],
        growth=exact_sums(np.where(keep.known, np.nan_to_num(keep.growth), 0.0), starts)[at],
        max_ratio=np.where(np.isfinite(highest[at]), highest[at], np.nan),
    )
