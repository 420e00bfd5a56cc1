"""How long a broker is avoided after a send: MQFaultStrategy's latency -> notAvailableDuration table.

``computeNotAvailableDuration(isolation ? isolation_latency : latency)``: the largest i with
``latency >= latencyMax[i]`` gives ``notAvailableDuration[i]``, none gives 0
(MQFaultStrategy.java:164-181 in 5.3.3; :93-107 at rocketmq-all-4.9.8). 5.1.4 and later use
LATENCY_5X, whose fault items only ever extend; before 5.1.4 LATENCY_4X, whose items are
overwritten, so a fast success makes a broker available again at once. The Go client and the
C++ core have no such table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rmqsim.producers.versions import is_before_v5_1_4


@dataclass(frozen=True)
class LatencyTable:
    latency_max: tuple[int, ...]  # ms, ascending
    not_available_duration: tuple[int, ...]  # ms, one per latency_max
    isolation_latency: int  # the latency an isolating failure counts as
    only_extends: bool  # an update can only push an item's end later (5.1.4+)


LATENCY_5X = LatencyTable(
    latency_max=(50, 100, 550, 1800, 3000, 5000, 15000),
    not_available_duration=(0, 0, 2000, 5000, 6000, 10000, 30000),
    isolation_latency=10000,
    only_extends=True,
)
LATENCY_4X = LatencyTable(
    latency_max=(50, 100, 550, 1000, 2000, 3000, 15000),
    not_available_duration=(0, 0, 30000, 60000, 120000, 180000, 600000),
    isolation_latency=30000,
    only_extends=False,
)


def latency_table(version: str | None) -> LatencyTable:
    """The table a producer of this version name uses (None: the current client)."""
    return LATENCY_4X if is_before_v5_1_4(version) else LATENCY_5X


def not_available_duration(
    latency: np.ndarray | int, isolation: np.ndarray | bool = False, table: LatencyTable = LATENCY_5X
) -> np.ndarray:
    """int64 ms per send: how long updateFaultItem makes the broker unavailable, whether or
    not sendLatencyFaultEnable lets the update happen. Latencies are Java longs (ms)."""
    latency = np.where(isolation, table.isolation_latency, np.asarray(latency, dtype=np.int64))
    step = np.searchsorted(np.asarray(table.latency_max, dtype=np.int64), latency, side="right") - 1
    durations = np.asarray(table.not_available_duration, dtype=np.int64)
    return np.where(step >= 0, durations[np.maximum(step, 0)], 0).astype(np.int64)
