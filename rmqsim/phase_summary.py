"""A scenario's summary rows, phase after phase, from phase 0's figures and the rows each phase
wrote (rmqsim.phases): to the last bit rollups.summary's over each phase rebuilt whole, at the cost
of what the phase touched rather than of the fleet.

summary adds up two tables. consumer_load's figures are counts, integer sums and maxima
(rollups.client_figures), which come to the same in any order: they are taken per group once for
phase 0, and a phase's fleet figures are its untouched groups' with the groups it wrote. Some of
group_metrics' are sums of doubles, added row after row in (strategy, topic, group) order: a
phase's rows are put in that order by merging its own into phase 0's sorted rows by integer keys,
without sorting strings again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import rollups
from rmqsim.arrays import combined

ORDER = ["strategy", "topic", "group"]  # summary's order of a phase's group_metrics rows


@dataclass(frozen=True)
class Phase0:
    """What every later phase's summary reuses of phase 0: its group_metrics rows in ORDER (only
    what summary reads), each row's rank in that order, and its (topic, group) code; the names
    each code stands for; and its clients' and behind figures per group."""

    metrics: pa.Table
    rank: np.ndarray
    pair: np.ndarray
    names: dict[str, pa.Array]
    per_group: pa.Table
    behind: pa.Table


def phase_0(group_metrics: pa.Table, consumer_load: pa.Table, falling_behind: pa.Table | None) -> Phase0:
    """Phase 0's figures, from its rows as written (one scenario, one phase)."""
    metrics = group_metrics.select([*ORDER, "error", *rollups.FIGURED]).sort_by(rollups.in_order(ORDER))
    names = {c: _sorted_unique(metrics[c]) for c in ORDER}
    codes = [_codes(metrics[c], names[c]) for c in ORDER]
    per_group = rollups.client_figures(consumer_load)
    behind = rollups.behind_figures(per_group, falling_behind)
    return Phase0(
        metrics, _rank(codes, names), _pair(codes[1:], names), names, _by_group(per_group), _by_group(behind)
    )


def summary(
    at_0: Phase0,
    group_metrics: pa.Table,
    consumer_load: pa.Table,
    falling_behind: pa.Table | None,
    touched: pa.Table,
    scenario: str,
    last: int,
    unroutable: pa.Table | None,
) -> pa.Table:
    """``scenario``'s summary rows of phases 1 to ``last`` (schemas.SUMMARY, in order): from the
    group_metrics, consumer_load and falling_behind rows it wrote (its own alone); ``touched``:
    touched/'s rows of ``scenario``; ``unroutable``: its unroutable rows of every phase, whole (None:
    no traffic)."""
    groups, loads = [], []
    rest: tuple[tuple[str, ...], tuple[pa.Table, pa.Table]] | None = None  # _untouched's, by its groups
    for k in range(1, last + 1):
        mine = touched.filter(pc.equal(touched["phase"], k))
        at = {"scenario": scenario, "phase": k}
        metrics = group_metrics.filter(pc.equal(group_metrics["phase"], k))
        groups.append(_labelled(rollups.metric_figures(_merged(at_0, metrics, mine), ["strategy"]), at))
        load = consumer_load.filter(pc.equal(consumer_load["phase"], k))
        behind = (
            None if falling_behind is None else falling_behind.filter(pc.equal(falling_behind["phase"], k))
        )
        per_group = rollups.client_figures(load)
        listed = pc.unique(pc.drop_null(mine["group"]))
        names = tuple(sorted(listed.to_pylist()))
        if rest is None or rest[0] != names:  # a rolling restart's phases all touch one group
            rest = (names, _untouched(at_0, listed))
        fleet, behind_of = rest[1]
        own = _by_group(per_group).select(fleet.column_names).cast(fleet.schema)
        own_behind = rollups.behind_figures(per_group, behind).select(behind_of.column_names)
        loads.append(
            _labelled(
                rollups.fleet_figures(
                    pa.concat_tables([fleet, own]),
                    pa.concat_tables([behind_of, own_behind.cast(behind_of.schema)]),
                    ["strategy"],
                ),
                at,
            )
        )
    return rollups.summary_of(pa.concat_tables(groups), pa.concat_tables(loads), unroutable)


def _merged(at_0: Phase0, metrics: pa.Table, mine: pa.Table) -> pa.Table:
    """A phase's group_metrics rows in ORDER: phase 0's but those of the (topic, group)s ``mine``
    (touched/'s of the phase) lists, and the phase's own (``metrics``) at their places."""
    metrics = metrics.select(at_0.metrics.column_names)
    codes = [_codes(metrics[c], at_0.names[c]) for c in ORDER]
    if any(np.any(c < 0) for c in codes):
        # a name phase 0 does not have (a group that joins): sort this phase's rows whole
        kept = at_0.metrics.filter(pa.array(~_dropped(at_0, mine)))
        return pa.concat_tables([kept, metrics.cast(kept.schema)]).sort_by(rollups.in_order(ORDER))
    kept = np.flatnonzero(~_dropped(at_0, mine))
    rank = _rank(codes, at_0.names)
    own = np.argsort(rank, kind="stable")
    # where each of the phase's rows goes among phase 0's kept ones, and then among all
    at = np.searchsorted(at_0.rank[kept], rank[own]) + np.arange(len(own))
    order = np.empty(len(kept) + len(own), dtype=np.int64)
    theirs = np.ones(len(order), dtype=bool)
    theirs[at] = False
    order[theirs] = kept
    order[at] = len(at_0.metrics) + own
    return pa.concat_tables([at_0.metrics, metrics.cast(at_0.metrics.schema)]).take(pa.array(order))


def _dropped(at_0: Phase0, mine: pa.Table) -> np.ndarray:
    """Per phase-0 row: whether ``mine`` (touched/'s rows of a phase) lists its (topic, group)."""
    listed = mine.filter(pc.is_valid(mine["group"]))
    codes = [_codes(listed[c], at_0.names[c]) for c in ("topic", "group")]
    found = (codes[0] >= 0) & (codes[1] >= 0)
    pairs = _pair([c[found] for c in codes], at_0.names)
    return np.isin(at_0.pair, pairs)


def _untouched(at_0: Phase0, listed: pa.Array) -> tuple[pa.Table, pa.Table]:
    """Phase 0's client and behind figures of every group but those ``listed``, added up per
    strategy in the shape of a group's: fleet_figures takes sums and maxima, so these with a
    phase's own groups add up to the figures of all its groups."""

    def without(table: pa.Table) -> pa.Table:
        return table.filter(pc.invert(pc.is_in(table["group"], value_set=listed)))

    summed = rollups.fleet_figures(without(at_0.per_group), without(at_0.behind), ["strategy"])
    load = [c for c in at_0.per_group.column_names if c != "group"]
    return summed.select(load), summed.select(["strategy", "_behind"])


def _by_group(table: pa.Table) -> pa.Table:
    """Per-group figures without their scenario and phase: fleet_figures adds them up per strategy."""
    return table.drop_columns(["scenario", "phase"])


def _labelled(table: pa.Table, at: dict[str, object]) -> pa.Table:
    """Figures per strategy as (scenario, phase, strategy)'s: summary_of joins on all three."""
    columns = {
        c: pa.repeat(pa.scalar(v, pa.string() if c == "scenario" else pa.int32()), table.num_rows)
        for c, v in at.items()
    }
    return pa.table({**columns, **{c: table[c] for c in table.column_names}})


def _sorted_unique(column: pa.ChunkedArray) -> pa.Array:
    """A column's values but null, once each, in order: Arrow sorts strings by their UTF-8 bytes,
    which is the order of their code points, numpy's."""
    values = pc.drop_null(pc.unique(combined(column))).to_numpy(zero_copy_only=False).astype(str)
    return pa.array(np.unique(values), pa.string())


def _codes(column: pa.ChunkedArray, names: pa.Array) -> np.ndarray:
    """Each value's place in ``names``; null after every name, as Arrow sorts it; -1: not there."""
    at = pc.fill_null(pc.index_in(column, value_set=names), -1).to_numpy(zero_copy_only=False)
    return np.where(pc.is_null(column).to_numpy(zero_copy_only=False), len(names), at).astype(np.int64)


def _rank(codes: list[np.ndarray], names: dict[str, pa.Array]) -> np.ndarray:
    """Each row's (strategy, topic, group) as one integer in ORDER."""
    strategy, topic, group = codes
    return (strategy * (len(names["topic"]) + 1) + topic) * (len(names["group"]) + 1) + group


def _pair(codes: list[np.ndarray], names: dict[str, pa.Array]) -> np.ndarray:
    """Each row's (topic, group) as one integer."""
    topic, group = codes
    return topic * (len(names["group"]) + 1) + group
