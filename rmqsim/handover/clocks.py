"""Each client's clocks (docs/CONTRACT.md, section 2e): it rebalances every ``rebalance_s``, polls
routes every ``route_poll_s`` and commits offsets every ``commit_s``, each from an offset of its own
that anyone can recompute: ``period x U(salt, client)``, where

    U(salt, c) = int.from_bytes(blake2b(f"{seed}:{salt}:{c}".encode(), digest_size=8).digest(), "big") / 2**64

(``seed``: the scenario's ``timing.seed``). A clock is periodic: it ticked before the scenario
began too, so the last commit before an event early in a scenario is still one period back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rmqsim.scenarios.parse import Timing

SALTS = ("rebalance", "route", "commit")


def unit(seed: int, salt: str, client_ids: Sequence[str]) -> np.ndarray:
    """U(salt, c) per client: a fraction in [0, 1)."""
    out = np.empty(len(client_ids), dtype=np.float64)
    for i, c in enumerate(client_ids):  # hashlib has no vector form; a hand-over's clients only
        digest = hashlib.blake2b(f"{seed}:{salt}:{c}".encode(), digest_size=8).digest()
        out[i] = int.from_bytes(digest, "big") / 2**64
    return out


def at_or_after(offset: np.ndarray, period: float, t: np.ndarray) -> np.ndarray:
    """The first time ``offset + period x m`` (m = 0, 1, ...) at or after ``t``."""
    m = np.maximum(np.ceil((t - offset) / period), 0.0)
    return offset + period * m


def at_or_before(offset: np.ndarray, period: float, t: np.ndarray) -> np.ndarray:
    """The last time ``offset + period x m`` (any integer m: the clock ran before) at or before ``t``."""
    return offset + period * np.floor((t - offset) / period)


@dataclass(frozen=True)
class Clocks:
    """The clocks of some clients, in seconds from the scenario's start (T_0 = 0)."""

    tick: np.ndarray  # first rebalance
    poll: np.ndarray  # first route poll
    commit: np.ndarray  # first offset commit
    timing: Timing

    @staticmethod
    def of(client_ids: Sequence[str], timing: Timing) -> Clocks:
        seed = timing.seed
        return Clocks(
            timing.rebalance_s * unit(seed, "rebalance", client_ids),
            timing.route_poll_s * unit(seed, "route", client_ids),
            timing.commit_s * unit(seed, "commit", client_ids),
            timing,
        )

    def next_tick(self, t: np.ndarray) -> np.ndarray:
        return at_or_after(self.tick, self.timing.rebalance_s, t)

    def next_poll(self, t: np.ndarray) -> np.ndarray:
        return at_or_after(self.poll, self.timing.route_poll_s, t)

    def last_commit(self, t: np.ndarray) -> np.ndarray:
        return at_or_before(self.commit, self.timing.commit_s, t)
