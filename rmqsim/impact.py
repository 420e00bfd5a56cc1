"""Sweeps' impact (docs/CONTRACT.md, section 2f): what each single failure does to the whole fleet,
from the rows of the (topic, group)s it touches, and its rank among its sweep's elements.

An element's figure for the fleet is phase 0's, less phase 0's rows of what the element touched,
plus the element's own rows of them: the work grows with what the elements touch, not with
elements times the fleet. The stage's rows of the elements come back to the driver (the sink's
collect_stage: a few per touched group), never written: the other tables hold only the worst
elements' phases. Arrow's plans run on one thread, as rmqsim.rollups' do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.arrays import combined, runs_of
from rmqsim.scenarios.parse import ELEMENT
from rmqsim.stage.capacity import EXACT, millionths

# The figures of sweep/, with the table and column of the stage's rows each is summed from.
SUMMED = {
    "queues_unread": ("group_metrics", "unassigned_queues"),
    "stranded_msgs_per_s": ("group_metrics", "stranded_msgs_per_s"),
    "lag_growth_msgs_per_s": ("consumer_load", "lag_growth_msgs_per_s"),
    "clients_over_capacity": ("consumer_load", "over_capacity"),
}
IN_MILLIONTHS = {"lag_growth_msgs_per_s"}  # summed exactly by summary: here too
IN_SUMMARY = {"queues_unread": "unassigned_queues"}  # summary's name where it differs
COLLECTED = ("group_metrics", "consumer_load", "movement", "handover")
HANDED_OVER = ("msgs_delayed", "msgs_read_twice")  # section 2e: summed from handover/


def _per_element(table: pa.Table, column: str) -> pa.Table:
    """Per (scenario, strategy): the column summed (booleans counted), as doubles; IN_MILLIONTHS'
    columns in millionths, as summary sums them, so that the sum is exact."""
    values = pc.fill_null(pc.cast(table[column], pa.float64()), 0.0).to_numpy(zero_copy_only=False)
    if column in IN_MILLIONTHS:
        values = millionths(values)
    scenario = pc.dictionary_encode(combined(table["scenario"]))
    strategy = pc.dictionary_encode(combined(table["strategy"]))
    key = scenario.indices.to_numpy().astype(np.int64) * max(len(strategy.dictionary), 1)
    key += strategy.indices.to_numpy()
    # Summed in one order, by value within each key, whatever order the tasks returned the rows
    # in: the same rows give the same bits.
    order = np.lexsort((values, key))
    keys, first, _ = runs_of(key[order])
    sums = np.add.reduceat(values[order], first) if len(first) else np.zeros(0)
    n = max(len(strategy.dictionary), 1)
    return pa.table(
        {
            "scenario": scenario.dictionary.take(pa.array(keys // n)),
            "strategy": strategy.dictionary.take(pa.array(keys % n)),
            "v_sum": pa.array(sums, pa.float64()),
        }
    )


def _at(keys: pa.ChunkedArray, values: pa.ChunkedArray, wanted: pa.Array) -> np.ndarray:
    """``values`` at each of ``wanted``'s keys (distinct in ``keys``), as doubles; 0 where absent."""
    at = pc.index_in(wanted, value_set=pc.cast(keys, pa.string()))
    known = np.append(pc.fill_null(pc.cast(values, pa.float64()), 0.0).to_numpy(zero_copy_only=False), 0.0)
    return known[pc.fill_null(at, len(keys)).to_numpy(zero_copy_only=False).astype(np.int64)]


def _lookup(table: pa.Table, scenario: pa.Array, strategy: pa.Array) -> np.ndarray:
    """``table``'s v_sum at each (scenario, strategy); 0 where it has none."""
    keys = pc.binary_join_element_wise(table["scenario"], table["strategy"], "\x1f")
    return _at(keys, table["v_sum"], pc.binary_join_element_wise(scenario, strategy, "\x1f"))


def _at_phase(table: pa.Table, phase: int, column: str = "phase") -> pa.Table:
    return table.filter(pc.equal(table[column], phase))


def changes(
    elements: Mapping[str, Sequence[str]],
    rows: Mapping[str, pa.Table],
    strategies: Sequence[str],
    unroutable: pa.Table | None,
) -> pa.Table:
    """Per (sweep, element, strategy): what the element changes. SUMMED's figures and unroutable
    as the change from phase 0 (its phase 1's rows less its phase 0's, over what it touched);
    queues_moved and groups_changed as they are (an untouched group moves nothing).

    ``elements``: sweep name -> its element scenarios' names. ``rows``: the stage's rows of the
    elements at phases 0 and 1 (collected). ``unroutable``: the elements' rates per (scenario,
    phase, topic), None without traffic."""
    scenario = pa.array([e for names in elements.values() for e in names for _ in strategies], pa.string())
    strategy = pa.array([s for names in elements.values() for _ in names for s in strategies], pa.string())
    sweep = pa.array([w for w, names in elements.items() for _ in names for _ in strategies], pa.string())
    columns: dict[str, pa.Array] = {"sweep": sweep, "element": _element_names(scenario), "strategy": strategy}
    phased = {(t, p): _at_phase(rows[t], p) for t, _ in SUMMED.values() for p in (0, 1)}
    for figure, (table, column) in SUMMED.items():
        after = _lookup(_per_element(phased[table, 1], column), scenario, strategy)
        before = _lookup(_per_element(phased[table, 0], column), scenario, strategy)
        columns[figure] = pa.array((after - before) / (EXACT if column in IN_MILLIONTHS else 1))
    first = _at_phase(rows["movement"], 1, "to_phase")
    columns["queues_moved"] = pa.array(
        _lookup(_per_element(first, "moved"), scenario, strategy).astype(np.int64)
    )
    changed = pc.or_(
        pc.greater(first["moved"], 0),
        pc.or_(
            pc.not_equal(first["queues_before"], first["queues_after"]),
            pc.greater(first["consumers_changed"], 0),
        ),
    )
    per_group = first.filter(changed).select(["scenario", "strategy", "group"])
    per_group = per_group.group_by(["scenario", "strategy", "group"], use_threads=False).aggregate([])
    per_group = per_group.append_column("one", pa.repeat(pa.scalar(1.0), per_group.num_rows))
    counted = per_group.group_by(["scenario", "strategy"], use_threads=False).aggregate([("one", "sum")])
    counted = counted.rename_columns(["scenario", "strategy", "v_sum"])
    columns["groups_changed"] = pa.array(_lookup(counted, scenario, strategy).astype(np.int64))
    if unroutable is None:
        columns["unroutable_msgs_per_s"] = pa.nulls(len(scenario), pa.float64())
    else:
        per = unroutable.group_by(["scenario", "phase"], use_threads=False).aggregate(
            [("unroutable_msgs_per_s", "sum")]
        )
        keys = pc.binary_join_element_wise(per["scenario"], pc.cast(per["phase"], pa.string()), "\x1f")

        def at(phase: str) -> np.ndarray:
            return _at(
                keys, per["unroutable_msgs_per_s_sum"], pc.binary_join_element_wise(scenario, phase, "\x1f")
            )

        columns["unroutable_msgs_per_s"] = pa.array(at("1") - at("0"))
    handover = rows.get("handover")
    for figure in HANDED_OVER:  # the element's one step: what it hands over is all it adds
        if handover is None:
            columns[figure] = pa.nulls(len(scenario), pa.float64())
            continue
        per_element = _per_element(_at_phase(handover, 1, "to_phase"), figure)
        columns[figure] = pa.array(_lookup(per_element, scenario, strategy))
    return pa.table(columns)


def finished(ranked: pa.Table, totals: pa.Table) -> pa.Table:
    """schemas.SWEEP: the ranked changes plus phase 0's whole-fleet figures (``totals``: summary's
    rows at phase 0, one per strategy; a figure null there, as without traffic, stays null)."""
    out = ranked
    at = pc.index_in(ranked["strategy"], value_set=totals["strategy"])
    for figure in (*SUMMED, "unroutable_msgs_per_s"):
        base = pc.take(totals[IN_SUMMARY.get(figure, figure)], at)
        value = pc.add(pc.cast(base, pa.float64()), ranked[figure])
        if schemas.SWEEP[figure].dataType == schemas.LONG:
            value = pc.cast(pc.round(value), pa.int64())
        i = out.schema.get_field_index(figure)
        out = out.set_column(i, figure, value)
    return out.select(schemas.SWEEP.fieldNames()).cast(schemas.arrow(schemas.SWEEP))


def _element_names(scenario: pa.Array) -> pa.Array:
    return pa.array([s.split(ELEMENT, 1)[1] for s in scenario.to_pylist()], pa.string())


def ranked(rows: pa.Table, detail: int) -> tuple[pa.Table, set[str]]:
    """``rows`` with ``rank`` per (sweep, strategy) (1: worst by lag growth, then messages stranded
    or unroutable, then delayed, then queues unread; ties by element name) and ``detailed``; and
    the element scenarios ranked within ``detail`` for some strategy."""
    zero = {c: pc.fill_null(rows[c], 0) for c in ("lag_growth_msgs_per_s", "msgs_delayed", "queues_unread")}
    lost = pc.add(
        pc.fill_null(rows["stranded_msgs_per_s"], 0.0), pc.fill_null(rows["unroutable_msgs_per_s"], 0.0)
    )
    keyed = pa.table(
        {
            "sweep": rows["sweep"],
            "strategy": rows["strategy"],
            "growth": pc.negate(pc.cast(zero["lag_growth_msgs_per_s"], pa.float64())),
            "lost": pc.negate(lost),
            "delayed": pc.negate(pc.cast(zero["msgs_delayed"], pa.float64())),
            "unread": pc.negate(pc.cast(zero["queues_unread"], pa.float64())),
            "element": rows["element"],
            "i": pa.array(np.arange(rows.num_rows)),
        }
    )
    order = keyed.sort_by(
        [(c, "ascending") for c in ("sweep", "strategy", "growth", "lost", "delayed", "unread", "element")]
    )
    sweep, strategy = (
        order["sweep"].to_numpy(zero_copy_only=False),
        order["strategy"].to_numpy(zero_copy_only=False),
    )
    n = order.num_rows
    start = np.ones(n, dtype=bool)
    if n:
        start[1:] = (sweep[1:] != sweep[:-1]) | (strategy[1:] != strategy[:-1])
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    rank = np.empty(n, dtype=np.int32)
    rank[order["i"].to_numpy()] = np.arange(n) - first + 1
    detailed = rank <= detail
    names = pc.binary_join_element_wise(rows["sweep"], rows["element"], ELEMENT)
    chosen = set(names.filter(pa.array(detailed)).to_pylist())
    out = rows.append_column("rank", pa.array(rank, pa.int32()))
    detailed_scenario = pc.is_in(names, value_set=pa.array(sorted(chosen), pa.string()))
    return out.append_column("detailed", detailed_scenario), chosen
