"""Latency fault tolerance (docs/CONTRACT.md, section 2c): which entries of a publish list a
Java producer with sendLatencyFaultEnable avoids, by the 4.x client's latency table or by that of
5.1.4 and later, and the shares each then sends the rest (rmqsim.producers.shares). The Go client
and the C++ core have no latency fault tolerance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.producers import shares
from rmqsim.producers.latency import LATENCY_4X, LATENCY_5X, not_available_duration
from rmqsim.schemas import PHASE
from rmqsim.stage.publish import BrokerFacts, ListRuns, Populations
from rmqsim.stage.route_keys import RouteKeys, lookup

# (chosen: per population, whether it sends by the rule; avoided: per list entry, whether the
# rule's table avoids it; shares: (list offsets, entries) -> each entry's share of its list).
AvoidingRule = tuple[np.ndarray, np.ndarray, Callable[[np.ndarray, np.ndarray], np.ndarray]]


@dataclass(frozen=True)
class Targets:
    """Per entry of the concatenated lists: its route key, whether its broker's master takes
    sends, and whether its send latency makes a fault-tolerant producer avoid it (by the 4.x
    table and by the 5.x one)."""

    key: np.ndarray
    master: np.ndarray
    avoided_4x: np.ndarray
    avoided_5x: np.ndarray


def targets_of(keys: RouteKeys, list_runs: ListRuns, facts: BrokerFacts) -> Targets:
    """Broker facts by (scenario, phase) and broker, found per run, then spread over its entries."""
    run_phase = keys.table.select(list(PHASE)).take(pa.array(list_runs.key))
    at = lookup(
        facts.table, run_phase.append_column("broker_name", list_runs.broker), [*PHASE, "broker_name"]
    )
    hit, row = at >= 0, np.maximum(at, 0)
    master = hit & pc.fill_null(facts.table["has_master"], False).to_numpy(zero_copy_only=False)[row]
    # Per broker and phase first (a few rows), then per run, then per entry.
    latency = pc.fill_null(facts.table["send_latency_ms"], 0.0).to_numpy(zero_copy_only=False)
    avoided_4x = hit & (not_available_duration(latency, table=LATENCY_4X) > 0)[row]
    avoided_5x = hit & (not_available_duration(latency, table=LATENCY_5X) > 0)[row]
    return Targets(
        key=list_runs.entry_key,
        master=np.repeat(master, list_runs.size),
        avoided_4x=np.repeat(avoided_4x, list_runs.size),
        avoided_5x=np.repeat(avoided_5x, list_runs.size),
    )


def avoiding_rules(pops: Populations, targets: Targets) -> tuple[AvoidingRule, AvoidingRule]:
    """The 4.x rule (clients before 5.1.4: the avoided entries' sends folded onto the others)
    and the 5.x one, for the populations that avoid brokers; HASH never does."""
    avoids = pops.avoids & ~pops.hash
    return (
        (
            avoids & pops.before_5_1_4,
            targets.avoided_4x,
            lambda lists, e: shares.folded_latency_shares(lists, ~targets.avoided_4x[e]),
        ),
        (
            avoids & ~pops.before_5_1_4,
            targets.avoided_5x,
            lambda lists, e: shares.latency_avoiding_shares(lists, ~targets.avoided_5x[e]),
        ),
    )
