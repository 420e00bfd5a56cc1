"""Each client's clocks (docs/CONTRACT.md, section 2e): it rebalances every ``rebalance_s``, polls
routes every ``route_poll_s`` and commits offsets every ``commit_s``, each from an offset of its own
that anyone can recompute: ``period x U(salt, client)``, where

    U(salt, c) = int.from_bytes(blake2b(f"{seed}:{salt}:{c}".encode(), digest_size=8).digest(), "big") / 2**64

(``seed``: the scenario's ``timing.seed``). A clock is periodic: it ticked before the scenario
began too, so the last commit before an event early in a scenario is still one period back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from rmqsim.scenarios.parse import Timing

SALTS = ("rebalance", "route", "commit")
Seconds = np.ndarray | float  # per client, or one for all


def unit(seeds: Sequence[int] | np.ndarray, salt: str, client_ids: Sequence[str] | np.ndarray) -> np.ndarray:
    """U(salt, c) per client, each with its scenario's seed: a fraction in [0, 1)."""
    seeds, client_ids = np.asarray(seeds), np.asarray(client_ids, dtype=object)
    out = np.empty(len(client_ids))
    distinct = np.unique(seeds)
    for seed in distinct.tolist():
        where = slice(None) if len(distinct) == 1 else np.flatnonzero(seeds == seed)
        out[where] = _hashed(f"{seed}:{salt}:".encode(), client_ids[where])
    return out


def _hashed(prefix: bytes, client_ids: Iterable[str]) -> np.ndarray:
    """U of each client id after ``prefix`` ("seed:salt:")."""
    # hashlib has no vector form: one digest per client, each a copy of a hasher that has read the
    # prefix (a third of the cost of starting one); the digests read at once as big-endian
    # integers (numpy's uint64 to double rounds as Python's int / 2**64 does; the division is exact).
    started = hashlib.blake2b(prefix, digest_size=8)
    digests = []
    for client in client_ids:
        h = started.copy()
        h.update(client.encode())
        digests.append(h.digest())
    return np.frombuffer(b"".join(digests), dtype=">u8") / 2**64


def at_or_after(offset: np.ndarray, period: Seconds, t: np.ndarray) -> np.ndarray:
    """The first time ``offset + period x m`` (m = 0, 1, ...) at or after ``t``."""
    m = np.maximum(np.ceil((t - offset) / period), 0.0)
    return offset + period * m


def at_or_before(offset: np.ndarray, period: Seconds, t: np.ndarray) -> np.ndarray:
    """The last time ``offset + period x m`` (any integer m: the clock ran before) at or before ``t``."""
    return offset + period * np.floor((t - offset) / period)


@dataclass(frozen=True)
class Clocks:
    """The clocks of some clients, in seconds from the scenario's start (T_0 = 0), with their
    scenarios' periods and host-loss delay."""

    tick: np.ndarray  # first rebalance
    poll: np.ndarray  # first route poll
    commit: np.ndarray  # first offset commit
    rebalance_s: Seconds
    route_poll_s: Seconds
    commit_s: Seconds
    host_loss_s: Seconds

    @staticmethod
    def of(client_ids: Sequence[str], timing: Timing) -> Clocks:
        """Clients of one scenario."""
        seeds = [timing.seed] * len(client_ids)
        return Clocks.each(
            client_ids, seeds, timing.rebalance_s, timing.route_poll_s, timing.commit_s, timing.host_loss_s
        )

    @staticmethod
    def each(
        client_ids: Sequence[str],
        seeds: Sequence[int],
        rebalance_s: Seconds,
        route_poll_s: Seconds,
        commit_s: Seconds,
        host_loss_s: Seconds,
    ) -> Clocks:
        """Clients each with its scenario's seed and periods."""
        units = {salt: unit(seeds, salt, client_ids) for salt in SALTS}
        return Clocks.scaled(units, rebalance_s, route_poll_s, commit_s, host_loss_s)

    @staticmethod
    def scaled(
        units: dict[str, np.ndarray],
        rebalance_s: Seconds,
        route_poll_s: Seconds,
        commit_s: Seconds,
        host_loss_s: Seconds,
    ) -> Clocks:
        """From each client's U per salt (SALTS)."""
        return Clocks(
            rebalance_s * units["rebalance"],
            route_poll_s * units["route"],
            commit_s * units["commit"],
            rebalance_s,
            route_poll_s,
            commit_s,
            host_loss_s,
        )

    def next_tick(self, t: np.ndarray) -> np.ndarray:
        return at_or_after(self.tick, self.rebalance_s, t)

    def next_poll(self, t: np.ndarray) -> np.ndarray:
        return at_or_after(self.poll, self.route_poll_s, t)

    def last_commit(self, t: np.ndarray) -> np.ndarray:
        return at_or_before(self.commit, self.commit_s, t)
