"""The driver's tables over every phase of every scenario (rmqsim.rollups), from what the stage
wrote: where later phases hold only what changed (rmqsim.phases), one phase of one scenario is
rebuilt at a time, so the driver never holds more than one copy of the fleet.

summary and split_brain are per phase: phase 0's, the snapshot in every scenario, are computed once
and named for each scenario; each later phase's from that phase rebuilt. comparison is per
scenario, from its summary and its movement. The recommendation is per group over every scenario
and phase: it reads phase 0 once, as a scenario of its own whose movement to a phase 1 moves
nothing, and each scenario's rows of the groups it touched. Every figure it takes (a maximum, a
sum of moves, a later phase against phase 0) is the same over those rows as over every phase
whole, since an untouched phase repeats phase 0's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import phases, rollups
from rmqsim.arrays import combined
from rmqsim.scenarios.parse import ELEMENT

UNTOUCHED = f"{ELEMENT}untouched"  # no scenario has this name: ELEMENT is refused in names


@dataclass(frozen=True)
class Written:
    """The stage's tables as the run wrote them (the rollups' columns), and the unroutable rates."""

    group_metrics: pa.Table
    consumer_load: pa.Table
    falling_behind: pa.Table | None = None
    movement: pa.Table | None = None
    unroutable: pa.Table | None = None


@dataclass(frozen=True)
class Rollups:
    summary: pa.Table
    comparison: pa.Table | None = None
    recommendation: pa.Table | None = None
    split_brain: pa.Table | None = None
    exposure: pa.Table | None = None


def rolled_up(
    read: Callable[[], Written], touched: pa.Table | None, last: Mapping[str, int], *, stale_views: bool
) -> Rollups:
    """The rollups of a run: ``read`` gives the written tables (called once, so that only the
    rollups hold them and can let go of what they are done with); ``touched`` None where every
    phase was written whole; ``last``: each scenario's last phase; ``stale_views``: split_brain
    and exposure wanted."""
    written = read()
    if touched is None:
        return _of(written, stale_views=stale_views, recommend=True)
    summary, comparison, brain = _per_scenario(written, touched, last, stale_views=stale_views)
    if written.movement is None:
        return Rollups(summary)
    exposure = rollups.exposure(brain) if stale_views else None
    # A group's load is its clients' rows summed: per group, so taken before the rebuild, which
    # then copies a row per group, not per client; and the clients' rows let go of.
    written = replace(written, consumer_load=rollups.group_load(written.consumer_load))
    reduced = _reduced(written, touched, last)
    advice = rollups.recommendation(reduced.group_metrics, reduced.consumer_load, reduced.movement)
    return Rollups(summary, comparison, advice, brain, exposure)


def _per_scenario(
    written: Written, touched: pa.Table, last: Mapping[str, int], *, stale_views: bool
) -> tuple[pa.Table, pa.Table | None, pa.Table | None]:
    """summary, comparison (None without movement) and split_brain (None unless ``stale_views``)
    of every scenario, one phase at a time."""
    scenarios = sorted(s for s in last if s != phases.SNAPSHOT)
    own = _by_scenario(written)
    # Phase 0 is the snapshot in every scenario: rolled up once, then named for each.
    first = scenarios[0]
    at_0 = _of(_phase(own(first), touched, last, first, 0), stale_views=stale_views, recommend=False)
    summaries, comparisons, brains = [], [], []
    for scenario in scenarios:
        rows, mine = own(scenario), [_named(at_0, scenario)]
        for k in range(1, last[scenario] + 1):
            tables = _phase(rows, touched, last, scenario, k)
            mine.append(_of(tables, stale_views=stale_views, recommend=False))
        summary = pa.concat_tables([p.summary for p in mine])
        summaries.append(summary)
        if written.movement is not None:
            moved = phases.full("movement", rows.movement, touched, last, scenarios=(scenario,))
            comparisons.append(rollups.comparison(summary, moved))
        if stale_views:
            brains.extend(p.split_brain for p in mine)
    summary = _sorted(pa.concat_tables(summaries), ["scenario", "phase", "strategy"])
    comparison = _sorted(pa.concat_tables(comparisons), ["scenario", "strategy"]) if comparisons else None
    return summary, comparison, pa.concat_tables(brains) if stale_views else None


def _sorted(table: pa.Table, keys: list[str]) -> pa.Table:
    return table.sort_by([(k, "ascending") for k in keys])


def _of(tables: Written, *, stale_views: bool, recommend: bool) -> Rollups:
    """rollups over ``tables``, every phase whole (comparison: only where they have movement)."""
    summary = rollups.summary(
        tables.group_metrics, tables.consumer_load, tables.unroutable, tables.falling_behind
    )
    brain = rollups.split_brain(tables.group_metrics) if stale_views else None
    if tables.movement is None:
        return Rollups(summary, split_brain=brain)
    comparison = rollups.comparison(summary, tables.movement)
    advice = None
    if recommend:
        load = rollups.group_load(tables.consumer_load)
        advice = rollups.recommendation(tables.group_metrics, load, tables.movement)
    exposure = rollups.exposure(brain) if stale_views and recommend else None
    return Rollups(summary, comparison, advice, brain, exposure)


def _named(rolled: Rollups, scenario: str) -> Rollups:
    """Phase 0's summary and split_brain as ``scenario``'s."""

    brain = rolled.split_brain
    return Rollups(
        phases.relabelled(rolled.summary, scenario, {}),
        split_brain=None if brain is None else phases.relabelled(brain, scenario, {}),
    )


def _each(written: Written, rebuild) -> Written:
    def of(name: str) -> pa.Table | None:
        table = getattr(written, name)
        return None if table is None else rebuild(name, table)

    return Written(
        *(of(n) for n in ("group_metrics", "consumer_load", "falling_behind", "movement", "unroutable"))
    )


def _by_scenario(written: Written) -> Callable[[str], Written]:
    """A scenario's rows with phase 0's (each rebuild then reads those, not every scenario's):
    the tables split once, each scenario's rows taken when asked for, in the order written."""
    split: dict[str, tuple[pa.Table, pa.Table, np.ndarray, dict[str, int]] | None] = {}
    for name in ("group_metrics", "consumer_load", "falling_behind", "movement", "unroutable"):
        table = getattr(written, name)
        if table is None:
            split[name] = None
            continue
        encoded = pc.dictionary_encode(combined(table["scenario"]))
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        code = {v: i for i, v in enumerate(encoded.dictionary.to_pylist())}
        at = table["to_phase" if name == "movement" else "phase"].to_numpy()
        base = (codes == code.get(phases.SNAPSHOT, -1)) & (at == 0)
        split[name] = (table, table.filter(pa.array(base)), codes, code)

    def of(scenario: str) -> Written:
        tables: dict[str, pa.Table | None] = {}
        for name, parts in split.items():
            if parts is None:
                tables[name] = None
                continue
            table, base, codes, code = parts
            own = table.take(pa.array(np.flatnonzero(codes == code.get(scenario, -1))))
            tables[name] = pa.concat_tables([base, own])
        return Written(**tables)

    return of


def _phase(
    written: Written, touched: pa.Table, last: Mapping[str, int], scenario: str, phase: int
) -> Written:
    """Phase ``phase`` of ``scenario``, whole, without movement."""
    mine = touched.filter(pc.equal(touched["scenario"], scenario))
    return _each(
        replace(written, movement=None),
        lambda name, table: phases.full(name, table, mine, last, scenarios=(scenario,), phase=phase),
    )


def _reduced(written: Written, touched: pa.Table, last: Mapping[str, int]) -> Written:
    """What the recommendation reads (module doc): phase 0 as scenario UNTOUCHED, phases 0 and 1
    (movement: 0 to 1), and per scenario its written rows with phase 0's rows of what it touched;
    ``written.consumer_load``: the groups' loads (rollups.group_load)."""
    nothing = touched.slice(0, 0)
    scenarios = [s for s in last if s != phases.SNAPSHOT]

    def rebuild(name: str, table: pa.Table) -> pa.Table:
        snapshot = pc.equal(table["scenario"], phases.SNAPSHOT)
        at = "to_phase" if name == "movement" else "phase"
        base = table.filter(pc.and_(snapshot, pc.equal(table[at], 0)))
        parts = [phases.full(name, base, nothing, {UNTOUCHED: 1}), table.filter(pc.invert(snapshot))]
        if name != "movement":
            for scenario in scenarios:
                mine = touched.filter(pc.equal(touched["scenario"], scenario))
                parts.append(phases.at_phase_0(name, base, mine, scenario))
        return pa.concat_tables([p.cast(table.schema) for p in parts])

    return _each(written, rebuild)
