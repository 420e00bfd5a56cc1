"""rollups.comparison's figures of movement per (scenario, strategy): sums and counts, so that a
table's parts summed on their own add up to the whole's (phase_rollups sums a scenario's written
rows and, per strategy, the (topic, group)s it left untouched). Arrow's plans run on one thread,
as rmqsim.rollups' do."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import when

SCENARIO_STRATEGY = ["scenario", "strategy"]  # what comparison, and rollups, are per


def last_phase_rows(summary: pa.Table) -> pa.Table:
    """Each scenario's last phase in ``summary``: a (scenario, last_phase) row per scenario."""
    return (
        summary.group_by("scenario", use_threads=False)
        .aggregate([("phase", "max")])
        .rename_columns({"phase_max": "last_phase"})
    )


# Summed: over the rows from phase 0 to the last (moved_over_steps: over each step's), nulls left
# out (null where every row's is).
MOVES = ["queues_in_both", "queues_moved", "min_moves", "moved_over_steps", "moved_backlog"]


def of(movement: pa.Table, summary: pa.Table) -> pa.Table:
    """Per (scenario, strategy) of ``movement``: MOVES, the rows from phase 0 to the last (the
    scenario's in ``summary``; _whole) and how many of those have a min_moves (_counted). Sums of
    several tables' rows add up (added): they are sums and counts."""
    moved = movement.join(last_phase_rows(summary), "scenario", join_type="inner", use_threads=False)
    whole = pc.and_(pc.equal(moved["from_phase"], 0), pc.equal(moved["to_phase"], moved["last_phase"]))
    step = pc.equal(moved["to_phase"], pc.add(moved["from_phase"], 1))
    per_run = pa.table(
        {
            "scenario": moved["scenario"],
            "strategy": moved["strategy"],
            "queues_in_both": when(whole, moved["queues_in_both"]),
            "queues_moved": when(whole, moved["moved"]),
            "min_moves": when(whole, moved["min_moves"]),
            "moved_over_steps": when(step, moved["moved"]),
            "moved_backlog": when(whole, moved["moved_backlog"]),
            "_whole": pc.cast(whole, pa.int64()),
        }
    )
    sums = per_run.group_by(SCENARIO_STRATEGY, use_threads=False).aggregate(
        [*[(c, "sum") for c in MOVES], ("_whole", "sum"), ("min_moves", "count")]
    )
    return _moves_table(
        sums, {**{f"{c}_sum": c for c in MOVES}, "_whole_sum": "_whole", "min_moves_count": "_counted"}
    )


def unmoved(movement_0: pa.Table, scenario: str) -> pa.Table:
    """``of``'s rows of phase 0's movement rows (each (topic, group) against itself) as
    ``scenario``'s at its last phase, where its steps left them untouched: each a row from phase 0
    to the last and one over the last step, or one that is both."""
    sums = movement_0.group_by("strategy", use_threads=False).aggregate(
        [(c, "sum") for c in ("queues_in_both", "moved", "min_moves", "moved_backlog")]
        + [("strategy", "count"), ("min_moves", "count")]
    )
    return pa.table(
        {
            "scenario": pa.repeat(pa.scalar(scenario, pa.string()), sums.num_rows),
            "strategy": sums["strategy"],
            "queues_in_both": sums["queues_in_both_sum"],
            "queues_moved": sums["moved_sum"],
            "min_moves": sums["min_moves_sum"],
            "moved_over_steps": sums["moved_sum"],
            "moved_backlog": sums["moved_backlog_sum"],
            "_whole": sums["strategy_count"],
            "_counted": sums["min_moves_count"],
        }
    )


def added(parts: list[pa.Table]) -> pa.Table:
    """``of``'s rows of several parts of the same runs' movement, added up."""
    sums = (
        pa.concat_tables(parts)
        .group_by(SCENARIO_STRATEGY, use_threads=False)
        .aggregate([(c, "sum") for c in (*MOVES, "_whole", "_counted")])
    )
    return _moves_table(sums, {f"{c}_sum": c for c in (*MOVES, "_whole", "_counted")})


def _moves_table(sums: pa.Table, names: dict[str, str]) -> pa.Table:
    return pa.table(
        {**{c: sums[c] for c in SCENARIO_STRATEGY}, **{new: sums[old] for old, new in names.items()}}
    )
