"""What each step costs and whom: the figures the findings (rmqsim.reporting.findings) name a
group by, from the rows a scenario wrote.

A step's hand-overs cost messages (delayed or read twice, section 2e) and can put groups behind
that were not behind in the snapshot (section 2d). Per (scenario, phase, strategy): the step's
messages and the group they cost most; the groups newly behind and the one whose lag grows most.
Only groups a step touches can be newly behind (an untouched group repeats phase 0), so the rows
a scenario wrote are enough. Arrow's plans run on one thread, as rmqsim.rollups' do.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import row_codes, runs_of

KEYS = ["scenario", "phase", "strategy"]
STEP_COSTS = pa.schema(
    [
        ("scenario", pa.string()),
        ("phase", pa.int32()),
        ("strategy", pa.string()),
        ("msgs", pa.float64()),  # delayed or read twice by the step's hand-overs
        ("msgs_group", pa.string()),  # the group they cost most (null: none)
        ("groups_behind", pa.int64()),  # behind now, not behind in the snapshot
        ("behind_group", pa.string()),  # of those, the one whose lag grows most
        ("behind_lag_growth_msgs_per_s", pa.float64()),
    ]
)
# Per group behind in the snapshot: under how many strategies, and its worst figures.
SNAPSHOT_BEHIND = pa.schema(
    [
        ("group", pa.string()),
        ("strategies", pa.int64()),
        ("clients_over_capacity", pa.int64()),
        ("lag_growth_msgs_per_s", pa.float64()),
    ]
)


def behind_rows(falling_behind: pa.Table | None) -> pa.Table | None:
    """falling_behind's rows of groups with a client over capacity (a row can hold only clients
    that never drain)."""
    if falling_behind is None:
        return None
    return falling_behind.filter(pc.greater(falling_behind["clients_over_capacity"], 0))


def snapshot_behind(at_0: pa.Table | None) -> pa.Table | None:
    """Per group behind at phase 0 (behind_rows of one scenario's phase 0): the strategies it is
    behind under, its most clients over capacity and its most lag growth; the most strategies,
    then the most lag growth, first. None without capacities."""
    if at_0 is None:
        return None
    per = at_0.group_by("group", use_threads=False).aggregate(
        [
            ("strategy", "count_distinct"),
            ("clients_over_capacity", "max"),
            ("lag_growth_msgs_per_s", "max"),
        ]
    )
    per = per.rename_columns(
        {
            "strategy_count_distinct": "strategies",
            "clients_over_capacity_max": "clients_over_capacity",
            "lag_growth_msgs_per_s_max": "lag_growth_msgs_per_s",
        }
    )
    order = [("strategies", "descending"), ("lag_growth_msgs_per_s", "descending"), ("group", "ascending")]
    return per.select(SNAPSHOT_BEHIND.names).cast(SNAPSHOT_BEHIND).sort_by(order)


def step_costs(handover: pa.Table | None, behind: pa.Table | None, behind_at_0: pa.Table | None) -> pa.Table:
    """Per (scenario, phase, strategy) of a step: its hand-overs' messages and the group they cost
    most, and the groups behind there but not at phase 0 under the strategy. ``handover``:
    handover/'s rows (rollups.HANDOVER_COLUMNS); ``behind``: behind_rows of the steps' phases;
    ``behind_at_0``: behind_rows of phase 0 (any scenario's: phase 0 is the snapshot in each)."""
    parts = []
    if handover is not None and handover.num_rows:
        cost = pc.add(handover["msgs_delayed"], handover["msgs_read_twice"])
        rows = pa.table(
            {
                "scenario": handover["scenario"],
                "phase": handover["to_phase"].cast(pa.int32()),
                "strategy": handover["strategy"],
                "group": handover["group"],
                "cost": cost,
            }
        )
        per_group = rows.group_by([*KEYS, "group"], use_threads=False).aggregate([("cost", "sum")])
        parts.append(_most(per_group, "cost_sum", "msgs", "msgs_group", None))
    if behind is not None and behind.num_rows:
        later = behind.filter(pc.greater(behind["phase"], 0))
        if behind_at_0 is not None and behind_at_0.num_rows:
            was = (
                behind_at_0.select(["strategy", "group"])
                .group_by(["strategy", "group"], use_threads=False)
                .aggregate([])
            )
            later = later.join(was, ["strategy", "group"], join_type="left anti", use_threads=False)
        if later.num_rows:
            rows = later.select([*KEYS, "group", "lag_growth_msgs_per_s"]).cast(
                pa.schema(
                    [
                        ("scenario", pa.string()),
                        ("phase", pa.int32()),
                        ("strategy", pa.string()),
                        ("group", pa.string()),
                        ("lag_growth_msgs_per_s", pa.float64()),
                    ]
                )
            )
            parts.append(
                _most(
                    rows,
                    "lag_growth_msgs_per_s",
                    "behind_lag_growth_msgs_per_s",
                    "behind_group",
                    "groups_behind",
                )
            )
    if not parts:
        return STEP_COSTS.empty_table()
    joined = parts[0]
    for part in parts[1:]:
        joined = joined.join(part, KEYS, join_type="full outer", use_threads=False)
    for name in STEP_COSTS.names:
        if name not in joined.column_names:
            joined = joined.append_column(name, pa.nulls(joined.num_rows, STEP_COSTS.field(name).type))
    return joined.select(STEP_COSTS.names).cast(STEP_COSTS).sort_by([(k, "ascending") for k in KEYS])


def _most(rows: pa.Table, value: str, total: str, named: str, counted: str | None) -> pa.Table:
    """Per (scenario, phase, strategy) of ``rows`` (a row per group): ``value`` summed as
    ``total`` (or, with ``counted``, the most as ``total`` and the groups counted as ``counted``),
    and the group of the most as ``named`` (ties: the first by name)."""
    values = np.nan_to_num(rows[value].to_numpy(zero_copy_only=False).astype(float))
    ordered = rows.append_column("_v", pa.array(values)).sort_by(
        [*((k, "ascending") for k in KEYS), ("_v", "descending"), ("group", "ascending")]
    )
    codes = row_codes([ordered[k] for k in KEYS])
    _, first, count = runs_of(codes)
    heads = ordered.take(pa.array(first))
    out = {k: heads[k] for k in KEYS}
    if counted:
        out[total] = heads["_v"]
    else:
        out[total] = pa.array(np.add.reduceat(ordered["_v"].to_numpy(), first) if len(first) else np.zeros(0))
    out[named] = heads["group"]
    if counted:
        out[counted] = pa.array(count.astype(np.int64))
    return pa.table(out)


# Per (topic, group) whose messages the snapshot strands: the most over the strategies.
SNAPSHOT_STRANDED = pa.schema(
    [("topic", pa.string()), ("group", pa.string()), ("stranded_msgs_per_s", pa.float64())]
)


def snapshot_stranded(group_metrics_at_0: pa.Table) -> pa.Table:
    """Per (topic, group) that phase 0 (one scenario's group_metrics rows) strands messages of:
    the most over the strategies, the most first. Empty without traffic."""
    rows = group_metrics_at_0.filter(
        pc.greater(pc.fill_null(group_metrics_at_0["stranded_msgs_per_s"], 0.0), 0.0)
    )
    per = rows.group_by(["topic", "group"], use_threads=False).aggregate([("stranded_msgs_per_s", "max")])
    per = per.rename_columns({"stranded_msgs_per_s_max": "stranded_msgs_per_s"})
    order = [("stranded_msgs_per_s", "descending"), ("topic", "ascending"), ("group", "ascending")]
    return per.select(SNAPSHOT_STRANDED.names).cast(SNAPSHOT_STRANDED).sort_by(order)
