"""The recommendation (docs/CONTRACT.md, section 4): per group, the strategy that balances best and
the one that moves fewest queues over every scenario and phase run.

Every figure it takes is a sum, a maximum or a count over rows, each kept per (group, strategy) or
per group, and every comparison it makes (a strategy that throws where another does not, a later
phase strands more than the snapshot) stays inside one scenario's rows. So it is worked in parts,
one or more scenarios each (``part``), and the parts merged (``merged``): the driver holds one
scenario's rows at a time, and a few rows per group. Arrow's plans run on one thread, as
rmqsim.rollups' do.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.arrays import when
from rmqsim.rollups import conformed, stranded_more
from rmqsim.stage.alternatives import POP_SHARE_QUEUE_NUM

GROUP_STRATEGY = ["group", "strategy"]
# Per (group, strategy): the messages its hand-overs delayed or read twice (_deploy).
DEPLOY = pa.schema([("group", pa.string()), ("strategy", pa.string()), ("deploy_msgs", pa.int64())])
# A run: one (topic, group) in one phase of one scenario, over the strategies.
RUN = ["group", "scenario", "phase", "topic"]
# group_metrics' figures of the snapshot (phase 0): the most of them, and the sum of these.
FIGURES = ("consumer_count", "queue_count", "pop_idle_consumers", "pop_max_message_share")
ONE_LIBRARY = ("one_library_multi_owned", "one_library_unassigned")

# How each part's columns merge.
MERGED = {
    "per_strategy": [
        ("blamed", "sum"),
        ("rows", "sum"),
        *[(c, "max") for c in FIGURES],
        *[(c, "sum") for c in ONE_LIBRARY],
        ("scenarios", "sum"),  # each scenario is in one part
    ],
    "load": [("worst_max_over_mean", "max"), ("over_capacity", "max")],
    "moves": [("moved", "sum")],
    "deploy": [("deploy_msgs", "sum")],
    "needed": [("clients_needed", "max")],
    "stranded": [("most_stranded_msgs_per_s", "max"), ("most_stranded_backlog", "max"), ("advice", "max")],
}
KEYS = {
    "per_strategy": GROUP_STRATEGY,
    "load": GROUP_STRATEGY,
    "moves": GROUP_STRATEGY,
    "deploy": GROUP_STRATEGY,
}


@dataclass(frozen=True)
class Part:
    """The recommendation's figures over some scenarios' rows, each scenario's all in this part."""

    per_strategy: pa.Table  # per (group, strategy): rows, rows blamed, the snapshot's figures, scenarios
    load: pa.Table  # per (group, strategy): the worst balance, and whether a client is over capacity
    moves: pa.Table  # per (group, strategy): the queues moved over the steps
    deploy: pa.Table  # per (group, strategy) with a hand-over: the messages they delayed or read twice
    needed: pa.Table  # per group: the clients it needs in the snapshot
    stranded: pa.Table  # per group: the most a later phase strands, and the advice


def part(
    group_metrics: pa.Table, load: pa.Table, movement: pa.Table, handover: pa.Table | None = None
) -> Part:
    """The figures of every scenario in these rows (``load``: rollups.group_load's; ``movement``:
    its steps are the rows from a phase to the next; ``handover``: handover/'s rows, if any)."""
    snapshot = group_metrics.filter(pc.equal(group_metrics["phase"], 0))
    counted = group_metrics.group_by(GROUP_STRATEGY, use_threads=False).aggregate(
        [("group", "count", pc.CountOptions(mode="all")), ("scenario", "count_distinct")]
    )
    figures = snapshot.group_by(GROUP_STRATEGY, use_threads=False).aggregate(
        [*[(c, "max") for c in FIGURES], *[(c, "sum") for c in ONE_LIBRARY]]
    )
    per_strategy = (
        counted.rename_columns({"group_count": "rows", "scenario_count_distinct": "scenarios"})
        .join(_blamed(group_metrics), GROUP_STRATEGY, join_type="left outer", use_threads=False)
        .join(figures, GROUP_STRATEGY, join_type="left outer", use_threads=False)
    )
    per_strategy = per_strategy.rename_columns(
        {**{f"{c}_max": c for c in FIGURES}, **{f"{c}_sum": c for c in ONE_LIBRARY}}
    )
    per_strategy = per_strategy.set_column(
        per_strategy.schema.get_field_index("blamed"), "blamed", pc.fill_null(per_strategy["blamed"], 0)
    )
    worst = load.group_by(GROUP_STRATEGY, use_threads=False).aggregate(
        [("max_over_mean", "max"), ("over_capacity", "max")]
    )
    step = pc.equal(movement["to_phase"], pc.add(movement["from_phase"], 1))
    moves = movement.filter(step).group_by(GROUP_STRATEGY, use_threads=False).aggregate([("moved", "sum")])
    needed = snapshot.group_by("group", use_threads=False).aggregate([("clients_needed", "max")])
    return Part(
        per_strategy,
        worst.rename_columns(
            {"max_over_mean_max": "worst_max_over_mean", "over_capacity_max": "over_capacity"}
        ),
        moves.rename_columns({"moved_sum": "moved"}),
        _deploy(handover),
        needed.rename_columns({"clients_needed_max": "clients_needed"}),
        _stranded_per_group(group_metrics),
    )


def _deploy(handover: pa.Table | None) -> pa.Table:
    """Per (group, strategy) with a hand-over (section 2e): the messages delayed and read twice,
    each row's rounded to whole messages so that the sums are integers, the same in any order."""
    if handover is None:
        return DEPLOY.empty_table()
    msgs = pc.add(handover["msgs_delayed"], handover["msgs_read_twice"]).to_numpy(zero_copy_only=False)
    rows = handover.select(GROUP_STRATEGY).append_column(
        "deploy_msgs", pa.array(np.round(msgs).astype(np.int64))
    )
    summed = rows.group_by(GROUP_STRATEGY, use_threads=False).aggregate([("deploy_msgs", "sum")])
    return summed.rename_columns({"deploy_msgs_sum": "deploy_msgs"}).select(DEPLOY.names).cast(DEPLOY)


def _blamed(group_metrics: pa.Table) -> pa.Table:
    """Per (group, strategy): its rows that threw in a run where another strategy did not. Only
    the runs with a row that threw are looked at: a few, where a client throws at all."""
    threw = pc.is_valid(group_metrics["error"])
    thrown = group_metrics.filter(threw).select([*RUN, "strategy"])
    runs = group_metrics.select(RUN).append_column("threw", threw)
    runs = runs.join(
        thrown.select(RUN).group_by(RUN, use_threads=False).aggregate([]), RUN, join_type="left semi"
    )
    shared = runs.group_by(RUN, use_threads=False).aggregate([("threw", "min")])
    blamed_runs = shared.filter(pc.invert(shared["threw_min"])).select(RUN)
    blamed = thrown.join(blamed_runs, RUN, join_type="left semi", use_threads=False)
    counted = blamed.group_by(GROUP_STRATEGY, use_threads=False).aggregate(
        [("group", "count", pc.CountOptions(mode="all"))]
    )
    return counted.rename_columns({"group_count": "blamed"})


def _stranded_per_group(group_metrics: pa.Table) -> pa.Table:
    """Per group, the most messages per second and backlog a phase after the snapshot strands in
    one of its topics, and the advice where a step strands more than the snapshot did. A topic's
    most over its phases' strategies is its most over its phases of each phase's most over them:
    stranded_more takes it from the rows as they are."""
    figures = [f for f, _ in MERGED["stranded"]]
    out = (
        stranded_more(group_metrics, ["group", "scenario", "topic"])
        .group_by("group", use_threads=False)
        .aggregate([(f, "max") for f in figures])
    )
    return out.rename_columns({f"{f}_max": f for f in figures})


def folded(parts: list[Part]) -> list[Part]:
    """``parts`` as one part where the later ones hold more rows than the first (a few rows per
    group each): over scenarios taken a part at a time, the driver holds about twice the fleet's
    groups, and folds about as often as those rows double."""
    if len(parts) < 2 or sum(p.per_strategy.num_rows for p in parts[1:]) < parts[0].per_strategy.num_rows:
        return parts
    return [_one(parts)]


def _one(parts: list[Part]) -> Part:
    """The parts' figures as one part's."""
    if len(parts) == 1:
        return parts[0]
    tables = {}
    for name, how in MERGED.items():
        keys = KEYS.get(name, ["group"])
        out = (
            pa.concat_tables([getattr(p, name) for p in parts])
            .group_by(keys, use_threads=False)
            .aggregate(how)
        )
        tables[name] = out.rename_columns({f"{c}_{f}": c for c, f in how}).select(
            getattr(parts[0], name).column_names
        )
    return Part(**tables)


def merged(parts: Iterable[Part]) -> pa.Table:
    """The recommendation (schemas.RECOMMENDATION, in group order) over every part's scenarios.

    A strategy never wins where the client throws with it but not with every strategy (where all
    throw, a step left the topic without queues: no strategy is to blame), nor where it was not
    simulated in every phase the others were (skipped for lack of its configuration: its missing
    phases would pass for phases without moves). A group with no such strategy has no winner."""
    whole = _one(list(parts))
    per_strategy = _eligible(whole.per_strategy)
    per_strategy = per_strategy.join(whole.load, GROUP_STRATEGY, join_type="left outer", use_threads=False)
    per_strategy = per_strategy.join(whole.moves, GROUP_STRATEGY, join_type="left outer", use_threads=False)
    i = per_strategy.schema.get_field_index("moved")
    per_strategy = per_strategy.set_column(i, "moved", pc.fill_null(per_strategy["moved"], 0))
    return conformed(
        _best_per_group(per_strategy)
        .join(whole.stranded, "group", join_type="left outer", use_threads=False)
        .join(_keeps_up(whole.needed, per_strategy), "group", join_type="left outer", use_threads=False)
        .join(
            _cheapest_deploy(per_strategy, whole.deploy), "group", join_type="left outer", use_threads=False
        )
        .sort_by("group"),
        schemas.RECOMMENDATION,
    )


def recommendation(
    group_metrics: pa.Table, load: pa.Table, movement: pa.Table, handover: pa.Table | None = None
) -> pa.Table:
    """The recommendation over these rows, as one part."""
    return merged([part(group_metrics, load, movement, handover)])


def _cheapest_deploy(per_strategy: pa.Table, deploy: pa.Table) -> pa.Table:
    """Per group whose queues some step hands over: of the strategies that may win, the one whose
    hand-overs delay or read twice the fewest messages (one without a hand-over: none), ties by
    the fewest moves, then the name."""
    handed = deploy.group_by("group", use_threads=False).aggregate([])
    rows = per_strategy.filter(per_strategy["eligible"]).join(
        handed, "group", join_type="inner", use_threads=False
    )
    rows = rows.join(deploy, GROUP_STRATEGY, join_type="left outer", use_threads=False)
    rows = rows.set_column(
        rows.schema.get_field_index("deploy_msgs"), "deploy_msgs", pc.fill_null(rows["deploy_msgs"], 0)
    )
    best = _firsts(rows, ["deploy_msgs", "moved", "strategy"]).select(["group", "strategy", "deploy_msgs"])
    return best.rename_columns({"strategy": "cheapest_deploy", "deploy_msgs": "cheapest_deploy_msgs"})


def _eligible(per_strategy: pa.Table) -> pa.Table:
    """Per (group, strategy): whether it may win (no error of its own, run as often as the group's
    most run strategy), the snapshot's figures, and the one-library figures per scenario."""
    most_runs = per_strategy.group_by("group", use_threads=False).aggregate([("rows", "max")])
    out = per_strategy.join(most_runs, "group", use_threads=False)
    scenarios = pc.cast(out["scenarios"], pa.float64())
    return pa.table(
        {
            "group": out["group"],
            "strategy": out["strategy"],
            "eligible": pc.and_(pc.equal(out["blamed"], 0), pc.equal(out["rows"], out["rows_max"])),
            "consumers": out["consumer_count"],
            "most_queues": out["queue_count"],
            "pop_idle_consumers": out["pop_idle_consumers"],
            "pop_max_message_share": out["pop_max_message_share"],
            # (sum / scenarios) as a long: truncated
            **{
                c: pc.cast(pc.trunc(pc.divide(pc.cast(out[c], pa.float64()), scenarios)), pa.int64())
                for c in ONE_LIBRARY
            },
        }
    )


def _keeps_up(needed: pa.Table, per_strategy: pa.Table) -> pa.Table:
    """Per group (section 2d): the clients it needs in the snapshot, and of the strategies that
    could win, the one that keeps every client under capacity in every phase with the fewest moves
    (ties: the name); null without capacities, or where none does."""
    under = pc.and_(
        per_strategy["eligible"], pc.equal(pc.fill_null(per_strategy["over_capacity"], True), False)
    )
    best = _firsts(per_strategy.filter(under), ["moved", "strategy"]).select(["group", "strategy", "moved"])
    best = best.rename_columns({"strategy": "keeps_up", "moved": "keeps_up_moved"})
    return needed.join(best, "group", join_type="left outer", use_threads=False)


def _firsts(table: pa.Table, order: list[str]) -> pa.Table:
    """Each group's first row by ``order`` (ascending, after the group)."""
    ranked = table.sort_by([("group", "ascending"), *[(c, "ascending") for c in order]])
    groups = ranked["group"].to_numpy(zero_copy_only=False)
    first = np.ones(len(groups), dtype=bool)
    first[1:] = groups[1:] != groups[:-1]
    return ranked.filter(pa.array(first))


def rounded(values: np.ndarray, places: int) -> np.ndarray:
    """Doubles rounded half up on the decimal that prints them (0.0125 to 0.013, which numpy's
    round, working on the binary value, makes 0.012). A double is at or past the half-way decimal
    exactly when it is at or past that decimal's nearest double."""
    scale = 10.0**places
    low = np.floor(values * scale)
    halfway = (2 * low + 1) / (2 * scale)
    return np.where(values >= halfway, low + 1, low) / scale


def _best_per_group(per_strategy: pa.Table) -> pa.Table:
    worst = per_strategy["worst_max_over_mean"].to_numpy(zero_copy_only=False).astype(float)
    known = ~np.isnan(worst)
    balance = np.full(len(worst), np.inf)
    balance[known] = rounded(worst[known], 3)
    table = per_strategy.append_column("balance", pa.array(balance))
    eligible = table.filter(table["eligible"])
    best = _firsts(eligible, ["balance", "moved", "strategy"]).select(
        ["group", "strategy", "balance", "one_library_multi_owned", "one_library_unassigned"]
    )
    best = best.rename_columns({"strategy": "best_balance", "balance": "best_max_over_mean"})
    fewest = _firsts(eligible, ["moved", "balance", "strategy"]).select(["group", "strategy", "moved"])
    fewest = fewest.rename_columns({"strategy": "fewest_moves", "moved": "fewest_moved"})
    figures = ("consumers", "most_queues", "pop_idle_consumers", "pop_max_message_share")
    groups = table.group_by("group", use_threads=False).aggregate([(c, "max") for c in figures])
    groups = groups.rename_columns({f"{c}_max": c for c in figures})
    out = (
        groups.join(best, "group", use_threads=False)
        .join(fewest, "group", use_threads=False)
        .sort_by("group")
    )
    best_balance = out["best_max_over_mean"]
    pop_idle = out["pop_idle_consumers"]
    return (
        out.set_column(
            out.schema.get_field_index("best_max_over_mean"),
            "best_max_over_mean",
            when(pc.less(best_balance, np.inf), best_balance),
        )
        .append_column("useful_consumers", _least(out["consumers"], out["most_queues"]))
        .append_column(
            "pop_share_queue_num",
            when(pc.is_valid(pop_idle), pa.array(np.full(len(out), POP_SHARE_QUEUE_NUM), pa.int32())),
        )
    )


def _least(a, b):
    """SQL's least: the smaller of the two, nulls skipped."""
    return pc.min_element_wise(a, b, skip_nulls=True)
