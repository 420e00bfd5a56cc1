"""What the driver computes with pyarrow from the client rows' tables as written (group_metrics,
consumer_load) and from movement: summary, comparison and exposure (a row per scenario and
strategy), recommendation (a row per group), split_brain (group_metrics' rows with a stale client)
and the allocation's reject rows.

Their inputs are a fleet's metric tables, a row per (topic, group) or per client, read back as
Arrow with only the columns used. In Spark their aggregations, joins and windows cost a job each
whatever their size; here they cost none. Each runs on one thread (``use_threads=False``): the
rollups of several scenarios run at once on threads of their own (rmqsim.phase_rollups), beside
which a plan's own threads only contend.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import StructType

from rmqsim import movement_sums, schemas
from rmqsim.arrays import when
from rmqsim.movement_sums import SCENARIO_STRATEGY
from rmqsim.snapshot.text import row_json
from rmqsim.stage.capacity import from_sums, millionths, summable
from rmqsim.strategies import broker, proxy
from rmqsim.strategies.batch import RMQSIM_REFUSES

RUN = ["scenario", "phase", "strategy"]
# How group_metrics.error starts where the answer is an answer (the client keeps what it had), not
# an error the client throws or a group rmqsim refuses.
KEPT = (broker.ANSWERS_NULL, proxy.ANSWERS_NULL)


# The summary columns compared between phase 0 and a scenario's last phase.
COMPARED = (
    "fleet_max_queues",
    "fleet_mean_queues",
    "fleet_max_over_mean",
    "idle_consumers",
    "unassigned_queues",
    "multi_owned_queues",
    "shared_queues",
    "fleet_max_msgs_per_s",
    "stranded_msgs_per_s",
    "stranded_backlog",
    "clients_without_messages",
    "clients_over_capacity",
    "lag_growth_msgs_per_s",
    "groups_behind",
)

# Where a step strands messages (docs/CONTRACT.md, section 2c): what to do instead.
ADVICE = (
    "messages are written to queues no consumer of the group reads (write_queue_nums above "
    "read_queue_nums, or a write-only QueueData), or queues still holding messages left the read "
    "queues: lower write_queue_nums first (for an ordered topic, its orderTopicConf's counts), wait "
    "until every group has drained the queues above the new count, then lower read_queue_nums"
)

# What recommendation and comparison read of each table.
MOVEMENT_COLUMNS = (
    "scenario",
    "strategy",
    "group",
    "from_phase",
    "to_phase",
    "queues_in_both",
    "moved",
    "min_moves",
    "moved_backlog",
)
# What comparison sums of handover/.
HANDOVER_SUMS = (
    "queues_handed_over",
    "queues_paused",
    "pause_s",
    "overlap_s",
    "msgs_delayed",
    "msgs_read_twice",
)
HANDOVER_COLUMNS = ("scenario", "strategy", "topic", "group", "to_phase", *HANDOVER_SUMS, "max_pause_s")
# What the recommendation reads of group_metrics.
GROUP_METRICS_COLUMNS = (
    "scenario",
    "phase",
    "strategy",
    "topic",
    "group",
    "error",
    "consumer_count",
    "queue_count",
    "pop_idle_consumers",
    "pop_max_message_share",
    "one_library_multi_owned",
    "one_library_unassigned",
    "stranded_msgs_per_s",
    "stranded_backlog",
    "clients_needed",
)
# What summary reads of group_metrics besides.
SUMMARY_METRICS_COLUMNS = (
    "max_over_mean",
    "idle_consumers",
    "unassigned_queues",
    "multi_owned_queues",
    "shared_queues",
    "in_msgs_per_s",
    "unowned_msgs_per_s",
    "duplicated_msgs_per_s",
)


# summary's sums of group_metrics' columns: integers, and messages (doubles, added in order).
SUMMED = ("unassigned_queues", "multi_owned_queues", "shared_queues")
MESSAGES = (
    "in_msgs_per_s",
    "stranded_msgs_per_s",
    "unowned_msgs_per_s",
    "duplicated_msgs_per_s",
    "stranded_backlog",
)
# What metric_figures adds up of group_metrics, besides the keys it is given and error.
FIGURED = ("queue_count", "max_over_mean", "idle_consumers", *SUMMED, *MESSAGES)

# What the driver reads of consumer_load: a row per client is the longest table it reads.
CONSUMER_LOAD_COLUMNS = (
    *RUN,
    "group",
    "queues",
    "msgs_per_s",
    "over_capacity",
    "lag_growth_msgs_per_s",
)
# What summary reads of falling_behind (its groups with a client over capacity), and the findings'
# step costs (rmqsim.step_costs) their lag growth.
BEHIND_COLUMNS = (*RUN, "group", "clients_over_capacity", "lag_growth_msgs_per_s")
# Sums of doubles over rows the tasks wrote in no fixed order are taken in millionths as integers
# (EXACT): the same rows give the same figure to the last bit, however the tasks were split.


def _exact(values: pa.ChunkedArray) -> list[pa.Array]:
    """A double column (finite, not negative) as stage.capacity's summable int64 columns (null
    stays null): sums of them do not depend on order, and cannot overflow."""
    null = pc.is_null(values).to_numpy(zero_copy_only=False)
    parts = summable(millionths(pc.fill_null(values, 0.0).to_numpy(zero_copy_only=False)))
    return [pa.array(part, mask=null) for part in parts]


def _from_exact(table: pa.Table, name: str) -> pa.Array:
    """The sums of _exact's parts, columns ``{name}0``, ``{name}1``, ..., in msgs/s (null where
    the rows were)."""
    sums = [table[c] for c in table.column_names if c.startswith(name) and c[len(name) :].isdigit()]
    null = pc.is_null(sums[0]).to_numpy(zero_copy_only=False)
    summed = np.stack([pc.fill_null(s, 0).to_numpy(zero_copy_only=False) for s in sums])
    return pa.array(from_sums(summed), mask=null, type=pa.float64())


def _thrown(error: pa.ChunkedArray) -> pa.ChunkedArray:
    """Groups the client fails on: a null answer is an answer, kept by the client."""
    kept = pc.or_(*(pc.starts_with(error, k) for k in KEPT))
    return pc.and_(pc.is_valid(error), pc.invert(pc.fill_null(kept, False)))


def _max_over_mean(highest: pa.ChunkedArray, mean: pa.ChunkedArray) -> pa.ChunkedArray:
    """max / mean, null where the mean is not positive: no queue, no meaningful ratio."""
    return when(pc.greater(mean, 0), pc.divide(pc.cast(highest, pa.float64()), mean))


def summary(
    group_metrics: pa.Table,
    consumer_load: pa.Table,
    unroutable: pa.Table | None = None,
    falling_behind: pa.Table | None = None,
) -> pa.Table:
    """One row per (scenario, phase, strategy), schemas.SUMMARY, in that order: the fleet at a glance.

    A run with groups but no client has no consumer figures (null), and one with clients but no
    group metrics none of those. ``unroutable``: per (scenario, phase, topic), the messages per second
    nobody could send (stage.inflow); without it (no traffic) that figure is null.
    ``falling_behind``: where some client has a capacity, falling_behind's table (BEHIND_COLUMNS
    of it, as the stage wrote it): groups_behind counts its groups with a client over capacity.
    Without it, they are counted from consumer_load."""
    per_group = client_figures(consumer_load)
    groups = metric_figures(group_metrics.sort_by(in_order(RUN, "topic", "group")), RUN)
    load = fleet_figures(per_group, behind_figures(per_group, falling_behind), RUN)
    return summary_of(groups, load, unroutable)


def client_figures(consumer_load: pa.Table) -> pa.Table:
    """Per (scenario, phase, strategy, group), what summary adds up of its clients: counts,
    integer sums (msgs/s as _exact's parts) and maxima, which add up to the fleet's in any order
    and so can be taken per group once and reused in every phase that leaves the group as it was."""
    idle = pc.cast(pc.equal(consumer_load["queues"], 0), pa.int64())
    silent = pc.and_(pc.greater(consumer_load["queues"], 0), pc.equal(consumer_load["msgs_per_s"], 0))
    exact = {
        **{f"_msgs{i}": part for i, part in enumerate(_exact(consumer_load["msgs_per_s"]))},
        **{f"_growth{i}": part for i, part in enumerate(_exact(consumer_load["lag_growth_msgs_per_s"]))},
    }
    load = (
        consumer_load.select([*RUN, "group", "queues", "msgs_per_s"])
        .append_column("_idle", idle)
        .append_column("_silent", pc.cast(silent, pa.int64()))
        .append_column("_over", pc.cast(consumer_load["over_capacity"], pa.int64()))
    )
    for name, part in exact.items():
        load = load.append_column(name, part)
    per_group = load.group_by([*RUN, "group"], use_threads=False).aggregate(
        [
            ("queues", "count"),
            ("queues", "sum"),
            ("queues", "max"),
            ("_idle", "sum"),
            ("msgs_per_s", "max"),
            ("_silent", "sum"),
            *[(name, "sum") for name in exact],
            ("_msgs0", "count"),
            ("_over", "sum"),
        ]
    )
    return per_group.rename_columns({c: c.removesuffix("_sum") for c in per_group.column_names})


def behind_figures(per_group: pa.Table, falling_behind: pa.Table | None) -> pa.Table:
    """Per (scenario, phase, strategy, group) behind: falling_behind's rows with a client over
    capacity (``per_group``: client_figures'; without falling_behind, 1 where a client is over)."""
    if falling_behind is None:
        behind = per_group.filter(pc.fill_null(pc.greater(per_group["_over"], 0), False))
        return behind.select([*RUN, "group"]).append_column("_behind", pa.repeat(1, behind.num_rows))
    behind = falling_behind.filter(pc.greater(falling_behind["clients_over_capacity"], 0))
    return (
        behind.group_by([*RUN, "group"], use_threads=False)
        .aggregate([("group", "count")])
        .rename_columns({"group_count": "_behind"})
    )


def fleet_figures(per_group: pa.Table, behind: pa.Table, keys: list[str]) -> pa.Table:
    """client_figures' and behind_figures' rows added up per ``keys``."""
    exact = [c for c in per_group.column_names if c.startswith(("_msgs", "_growth")) and c[-1].isdigit()]
    load = per_group.group_by(keys, use_threads=False).aggregate(
        [
            ("queues_count", "sum"),
            ("queues", "sum"),
            ("queues_max", "max"),
            ("_idle", "sum"),
            ("msgs_per_s_max", "max"),
            ("_silent", "sum"),
            *[(name, "sum") for name in exact],
            ("_msgs0_count", "sum"),
            ("_over", "sum"),
        ]
    )
    load = load.rename_columns({c: c.removesuffix("_sum").removesuffix("_max") for c in load.column_names})
    behind = (
        behind.group_by(keys, use_threads=False)
        .aggregate([("_behind", "sum")])
        .rename_columns([*keys, "_behind"])
    )
    return load.join(behind, keys, join_type="left outer", use_threads=False)


def metric_figures(group_metrics: pa.Table, keys: list[str]) -> pa.Table:
    """What summary takes of group_metrics, per ``keys``, its rows added in the order given (sort
    them: in_order's)."""
    threw = pc.cast(_thrown(group_metrics["error"]), pa.int64())
    groups = (
        group_metrics.select([*keys, *FIGURED])
        .append_column("_threw", threw)
        .group_by(keys, use_threads=False)
        .aggregate(
            [
                ("queue_count", "count"),
                ("queue_count", "sum"),
                ("max_over_mean", "max"),
                ("idle_consumers", "sum"),
                *[(c, "sum") for c in (*SUMMED, *MESSAGES)],
                ("_threw", "sum"),
            ]
        )
    )
    return pa.table(
        {
            **{c: groups[c] for c in keys},
            "groups": groups["queue_count_count"],
            "queues": groups["queue_count_sum"],
            "worst_group_max_over_mean": groups["max_over_mean_max"],
            "idle_in_a_topic": groups["idle_consumers_sum"],
            **{c: groups[f"{c}_sum"] for c in (*SUMMED, *MESSAGES)},
            "groups_with_errors": groups["_threw_sum"],
        }
    )


def summary_of(groups: pa.Table, load: pa.Table, unroutable: pa.Table | None) -> pa.Table:
    """summary's rows from metric_figures' and fleet_figures' per RUN."""
    count = pc.cast(load["queues_count"], pa.float64())
    mean = when(pc.greater(load["queues_count"], 0), pc.divide(pc.cast(load["queues"], pa.float64()), count))
    msgs_mean = pc.divide(_from_exact(load, "_msgs"), pc.cast(load["_msgs0_count"], pa.float64()))
    load = pa.table(
        {
            **{c: load[c] for c in RUN},
            "consumers": load["queues_count"],
            "fleet_max_queues": load["queues_max"],
            "fleet_mean_queues": mean,
            "fleet_max_over_mean": _max_over_mean(load["queues_max"], mean),
            "idle_consumers": load["_idle"],
            "fleet_max_msgs_per_s": load["msgs_per_s_max"],
            # null without traffic, as the messages are
            "clients_without_messages": when(pc.is_valid(load["msgs_per_s_max"]), load["_silent"]),
            "fleet_msgs_max_over_mean": _max_over_mean(load["msgs_per_s_max"], msgs_mean),
            # null without capacities, as the figures are
            "clients_over_capacity": load["_over"],
            "lag_growth_msgs_per_s": _from_exact(load, "_growth"),
            "groups_behind": when(pc.is_valid(load["_over"]), pc.fill_null(load["_behind"], 0)),
        }
    )
    out = groups.join(load, RUN, join_type="full outer", use_threads=False)
    if unroutable is not None:
        per_phase = (
            unroutable.sort_by(in_order(["scenario", "phase", "topic"]))
            .group_by(["scenario", "phase"], use_threads=False)
            .aggregate([("unroutable_msgs_per_s", "sum")])
            .rename_columns({"unroutable_msgs_per_s_sum": "unroutable_msgs_per_s"})
        )
        out = out.join(per_phase, ["scenario", "phase"], join_type="left outer", use_threads=False)
    else:
        out = out.append_column("unroutable_msgs_per_s", pa.nulls(out.num_rows, pa.float64()))
    return conformed(out.sort_by([(c, "ascending") for c in RUN]), schemas.SUMMARY)


def group_load(consumer_load: pa.Table) -> pa.Table:
    """Per (scenario, phase, strategy, group): max/mean of its clients' queues summed over its
    topics, the load recommendation weighs, and whether a client is over capacity (null: unknown)."""
    per_group = consumer_load.group_by([*RUN, "group"], use_threads=False).aggregate(
        [("queues", "max"), ("queues", "mean"), ("over_capacity", "max")]
    )
    return (
        per_group.append_column(
            "max_over_mean", _max_over_mean(per_group["queues_max"], per_group["queues_mean"])
        )
        .rename_columns({"over_capacity_max": "over_capacity"})
        .drop_columns(["queues_max", "queues_mean"])
    )


def split_brain(group_metrics: pa.Table) -> pa.Table:
    """One row per (scenario, phase, strategy, topic, group) in which some client computes from
    another view than the others: a stale_view phase's old view, or a designated group's client
    still on the stock strategy (a half-done rollout, section 2d): schemas.SPLIT_BRAIN, the
    queues read twice (duplicate consumption) and read by nobody (stalled), and the backlog on each."""
    views = pc.or_(
        pc.greater(group_metrics["stale_clients"], 0),
        pc.fill_null(pc.greater(group_metrics["unaware_clients"], 0), False),
    )
    return conformed(group_metrics.filter(views), schemas.SPLIT_BRAIN)


def allocation_rejects(group_routes: pa.Table, group_metrics: pa.Table) -> pa.Table:
    """Reject rows (schemas.REJECTS, sorted by row and reason) for the (topic, group, strategy)
    runs that produced no allocation: a strategy skipped for lack of its configuration, a group on
    which the real client throws, or one that rmqsim refuses to run."""
    where = ["scenario", "phase", "topic", "group"]
    skipped = group_routes.select([*where, "skipped"])
    row = pc.list_parent_indices(skipped["skipped"])
    each = pc.list_flatten(skipped["skipped"])
    skips = pa.table({c: skipped[c].take(row) for c in where}).append_column(
        "strategy", pc.struct_field(each, "strategy")
    )
    thrown = group_metrics.filter(_thrown(group_metrics["error"]))
    error = thrown["error"]
    reason = pc.if_else(
        pc.starts_with(error, RMQSIM_REFUSES),
        error,
        pc.binary_join_element_wise("the client throws: ", error, ""),
    )
    rejects = pa.table(
        {
            "source": pa.array(["allocation"] * (skips.num_rows + thrown.num_rows), pa.string()),
            "reason": pa.chunked_array(
                [*pc.struct_field(each, "reason").chunks, *reason.chunks], pa.string()
            ),
            "row": pa.chunked_array(
                [row_json(skips), row_json(thrown.select([*where, "strategy"]))], pa.string()
            ),
        }
    )
    return conformed(rejects.sort_by([("row", "ascending"), ("reason", "ascending")]), schemas.REJECTS)


def in_order(*columns) -> list[tuple[str, str]]:
    """Sort keys that fix the order of a float sum: the same rows always add up to the same bits,
    however the tasks that wrote them were split."""
    names = [c for part in columns for c in ([part] if isinstance(part, str) else part)]
    return [(c, "ascending") for c in names]


def conformed(table: pa.Table, schema: StructType) -> pa.Table:
    return pa.table({f.name: table[f.name].cast(to_arrow_type(f.dataType)) for f in schema.fields})


def comparison(
    summary: pa.Table,
    movement: pa.Table | None,
    handover: pa.Table | None = None,
    *,
    moves: pa.Table | None = None,
) -> pa.Table:
    """One row per (scenario, strategy), schemas.COMPARISON, in that order: the fleet at phase 0
    against the last phase, and the queues that changed owner between the two (with the fewest
    possible) and over every step; with ``handover`` (HANDOVER_COLUMNS of handover/), the
    hand-overs' costs summed over every step (0 where there is none). ``moves``: movement_sums
    .of's rows, given for ``movement`` (None)."""
    last = movement_sums.last_phase_rows(summary)
    phases = summary.join(last, "scenario", use_threads=False)
    before = phases.filter(pc.equal(phases["phase"], 0)).select([*SCENARIO_STRATEGY, *COMPARED])
    before = before.rename_columns({c: f"{c}_before" for c in COMPARED})
    after = phases.filter(pc.equal(phases["phase"], phases["last_phase"]))
    after = after.select([*SCENARIO_STRATEGY, "last_phase", *COMPARED])
    after = after.rename_columns({c: f"{c}_after" for c in COMPARED})

    moves = movement_sums.of(movement, summary) if moves is None else moves
    # Null where any (topic, group) has none (an unowned or twice-owned queue after): a sum of
    # the others would pass for the scenario's minimum.
    complete = pc.equal(pc.fill_null(moves["_whole"], 0), moves["_counted"])
    moves = pa.table(
        {
            **{c: moves[c] for c in SCENARIO_STRATEGY},
            **{c: when(complete, moves[c]) if c == "min_moves" else moves[c] for c in movement_sums.MOVES},
        }
    )
    out = (
        before.join(after, SCENARIO_STRATEGY, join_type="full outer", use_threads=False)
        .join(moves, SCENARIO_STRATEGY, join_type="left outer", use_threads=False)
        .join(_stranding(summary), SCENARIO_STRATEGY, join_type="left outer", use_threads=False)
    )
    out = _with_handovers(out, handover)
    return conformed(out.sort_by([(c, "ascending") for c in SCENARIO_STRATEGY]), schemas.COMPARISON)


def _with_handovers(compared: pa.Table, handover: pa.Table | None) -> pa.Table:
    """``compared`` with handover/'s costs per (scenario, strategy): summed in a fixed order, as
    the tasks wrote the rows in none; null without the table."""
    names = [*HANDOVER_SUMS, "max_pause_s"]
    if handover is None:
        return _nulls(compared, names)
    sums = (
        handover.sort_by(in_order(SCENARIO_STRATEGY, "to_phase", "topic", "group"))
        .group_by(SCENARIO_STRATEGY, use_threads=False)
        .aggregate([*[(c, "sum") for c in HANDOVER_SUMS], ("max_pause_s", "max")])
        .rename_columns({**{f"{c}_sum": c for c in HANDOVER_SUMS}, "max_pause_s_max": "max_pause_s"})
    )
    out = compared.join(sums, SCENARIO_STRATEGY, join_type="left outer", use_threads=False)
    for c in names:
        i = out.schema.get_field_index(c)
        out = out.set_column(i, c, pc.fill_null(out[c], pa.scalar(0, out.schema.field(c).type)))
    return out


def _nulls(table: pa.Table, names: list[str]) -> pa.Table:
    for c in names:
        table = table.append_column(c, pa.nulls(table.num_rows, pa.float64()))
    return table  # conformed casts each to its type


def _stranding(summary: pa.Table) -> pa.Table:
    """Per (scenario, strategy): the most messages per second any step strands, and the advice
    where a step strands more messages, or more backlog, than the snapshot did."""
    stranded = stranded_more(summary, SCENARIO_STRATEGY).drop_columns(["most_stranded_backlog"])
    steps = summary.filter(pc.greater(summary["phase"], 0))
    silent = steps.group_by(SCENARIO_STRATEGY, use_threads=False).aggregate(
        [("clients_without_messages", "max")]
    )
    silent = silent.rename_columns({"clients_without_messages_max": "most_clients_without_messages"})
    over = steps.group_by(SCENARIO_STRATEGY, use_threads=False).aggregate([("clients_over_capacity", "max")])
    over = over.rename_columns({"clients_over_capacity_max": "most_clients_over_capacity"})
    return stranded.join(silent, SCENARIO_STRATEGY, join_type="left outer", use_threads=False).join(
        over, SCENARIO_STRATEGY, join_type="left outer", use_threads=False
    )


def stranded_more(table: pa.Table, keys: list[str]) -> pa.Table:
    """Per ``keys``: the most stranded_msgs_per_s and stranded_backlog of the phases after the
    snapshot, and the advice where either is above the snapshot's (phase 0)."""
    figures = [("stranded_msgs_per_s", "max"), ("stranded_backlog", "max")]
    steps = table.filter(pc.greater(table["phase"], 0)).group_by(keys, use_threads=False).aggregate(figures)
    snapshot = table.filter(pc.equal(table["phase"], 0)).group_by(keys, use_threads=False).aggregate(figures)
    snapshot = snapshot.rename_columns({f"{c}_max": f"{c}_at_0" for c, _ in figures})
    both = steps.join(snapshot, keys, join_type="left outer", use_threads=False)

    def more(column: str) -> pa.Array:
        after, before = both[f"{column}_max"], pc.fill_null(both[f"{column}_at_0"], 0)
        return pc.fill_null(pc.greater(after, before), False)

    return pa.table(
        {
            **{c: both[c] for c in keys},
            "most_stranded_msgs_per_s": both["stranded_msgs_per_s_max"],
            "most_stranded_backlog": both["stranded_backlog_max"],
            "advice": pc.if_else(
                pc.or_(more("stranded_msgs_per_s"), more("stranded_backlog")),
                ADVICE,
                pa.scalar(None, pa.string()),
            ),
        }
    )


def exposure(split_brain: pa.Table) -> pa.Table:
    """One row per (scenario, strategy), schemas.EXPOSURE: the split-brain risk summed over the
    groups with stale clients, the most exposed strategy of each scenario first."""
    risk = pc.add(split_brain["multi_owned_queues"], split_brain["unassigned_queues"])
    rows = split_brain.append_column("_exposed", pc.cast(pc.greater(risk, 0), pa.int64()))
    summed = ["multi_owned_queues", "unassigned_queues", "multi_owned_backlog", "unassigned_backlog"]
    out = rows.group_by(SCENARIO_STRATEGY, use_threads=False).aggregate(
        [
            ("scenario", "count", pc.CountOptions(mode="all")),
            ("_exposed", "sum"),
            *[(c, "sum") for c in summed],
            ("queue_count", "sum"),
        ]
    )
    queues = out["queue_count_sum"]
    at_risk = pc.add(out["multi_owned_queues_sum"], out["unassigned_queues_sum"])
    fraction = pc.divide(pc.cast(at_risk, pa.float64()), pc.cast(queues, pa.float64()))
    table = pa.table(
        {
            "scenario": out["scenario"],
            "strategy": out["strategy"],
            "topic_groups": out["scenario_count"],
            "exposed": out["_exposed_sum"],
            **{c: out[f"{c}_sum"] for c in summed},
            "queues": queues,
            # ANSI mode: x / 0 is an error, and a group may have no queue
            "at_risk_fraction": when(pc.greater(queues, 0), fraction),
        }
    )
    order = [("scenario", "ascending"), ("at_risk_fraction", "descending"), ("strategy", "ascending")]
    return conformed(table.sort_by(order), schemas.EXPOSURE)  # nulls last
