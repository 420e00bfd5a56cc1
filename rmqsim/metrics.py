"""The output tables (docs/CONTRACT.md, section 4), all derived from one row per (group, distinct client).

The allocation stage already counted each client's queues and each group's unowned and
multi-owned queues, so no metric touches the (much larger) assignment rows.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rmqsim import schemas
from rmqsim.stage.alternatives import POP_SHARE_QUEUE_NUM
from rmqsim.strategies import broker, proxy
from rmqsim.strategies.batch import RMQSIM_REFUSES

# How group_metrics.error starts where the answer is an answer (the client keeps what it had), not
# an error the client throws or a group rmqsim refuses.
KEPT = (broker.ANSWERS_NULL, proxy.ANSWERS_NULL)


def _thrown(error: Column) -> Column:
    kept = [error.startswith(k) for k in KEPT]
    return error.isNotNull() & ~(kept[0] | kept[1])


RUN = ["scenario", "phase", "strategy"]


def _max_over_mean(max_col: str, mean_col: str) -> Column:
    # ANSI mode makes x / 0 an error, and a group with no queue has no meaningful ratio.
    return F.when(F.col(mean_col) > 0, F.col(max_col) / F.col(mean_col))


def assignments(client_queues: DataFrame) -> DataFrame:
    """One row per (scenario, phase, strategy, topic, group, client, queue it owns):
    schemas.ASSIGNMENTS, each client's owned list exploded in the JVM (shipping one Arrow row per
    queue out of Python cost more than the allocation itself)."""
    keys = [f for f in schemas.ASSIGNMENTS.fieldNames() if f not in schemas.OWNED_QUEUE.fieldNames()]
    return client_queues.select(*keys, F.inline("owned")).select(*schemas.ASSIGNMENTS.fieldNames())


def _max_over_mean_of(column: str) -> Column:
    return F.when(F.avg(column) > 0, F.max(column) / F.avg(column))


def group_metrics(client_queues: DataFrame) -> DataFrame:
    """One row per (scenario, phase, strategy, topic, group): schemas.GROUP_METRICS.

    Consumers are distinct client ids; stddev_queues is the population standard deviation over
    them; max_over_mean is null where the group has no queue. Computed by the allocation stage
    (rmqsim.skew), so this is a row filter.
    """
    return client_queues.where(F.col("first_in_group")).select(*schemas.GROUP_METRICS.fieldNames())


def consumer_load(client_queues: DataFrame) -> DataFrame:
    """One row per (scenario, phase, strategy, group, client_id): queues summed over its topics.

    AVG gives the extra queue of every topic to the first-sorted clients, so a client can be the
    busiest of every topic it reads: fleet skew that no single topic's metrics show.
    """
    return client_queues.where(F.col("first_in_client")).select(
        *RUN,
        "group",
        "client_id",
        F.col("client_topics").alias("topics"),
        F.col("client_queues").alias("queues"),
        F.col("client_backlog").alias("backlog"),
        F.col("client_message_share").alias("message_share"),
        F.col("client_backlog_share").alias("backlog_share"),
    )


def strategy_summary(group_metrics: DataFrame, consumer_load: DataFrame) -> DataFrame:
    """One row per (scenario, phase, strategy): the fleet at a glance."""
    load = (
        consumer_load.groupBy(*RUN)
        .agg(
            F.count(F.lit(1)).alias("consumers"),
            F.max("queues").alias("fleet_max_queues"),
            F.avg("queues").alias("fleet_mean_queues"),
            F.sum((F.col("queues") == 0).cast("long")).alias("idle_consumers"),
        )
        .withColumn("fleet_max_over_mean", _max_over_mean("fleet_max_queues", "fleet_mean_queues"))
    )
    groups = group_metrics.groupBy(*RUN).agg(
        F.count(F.lit(1)).alias("groups"),
        F.sum("queue_count").alias("queues"),
        F.max("max_over_mean").alias("worst_group_max_over_mean"),
        F.sum("idle_consumers").alias("idle_in_a_topic"),
        F.sum("unassigned_queues").alias("unassigned_queues"),
        F.sum("multi_owned_queues").alias("multi_owned_queues"),
        F.sum("shared_queues").alias("shared_queues"),
        # Groups the client fails on: a null answer is an answer, kept by the client.
        F.sum(_thrown(F.col("error")).cast("long")).alias("groups_with_errors"),
    )
    return groups.join(load, RUN, "full").select(
        *RUN,
        "groups",
        "consumers",
        "queues",
        "fleet_max_queues",
        "fleet_mean_queues",
        "fleet_max_over_mean",
        "worst_group_max_over_mean",
        "idle_consumers",
        "idle_in_a_topic",
        "unassigned_queues",
        "multi_owned_queues",
        "shared_queues",
        "groups_with_errors",
    )


COMPARED = (
    "fleet_max_queues",
    "fleet_mean_queues",
    "fleet_max_over_mean",
    "idle_consumers",
    "unassigned_queues",
    "multi_owned_queues",
    "shared_queues",
)


def scenario_comparison(summary: DataFrame, movement: DataFrame) -> DataFrame:
    """One row per (scenario, strategy): the fleet at phase 0 against the last phase, and the
    queues that changed owner between the two (with the fewest possible) and over every step."""
    last = summary.groupBy("scenario").agg(F.max("phase").alias("last_phase"))
    phases = summary.join(last, "scenario")
    before = phases.where(F.col("phase") == 0).select(
        "scenario", "strategy", *[F.col(c).alias(f"{c}_before") for c in COMPARED]
    )
    after = phases.where(F.col("phase") == F.col("last_phase")).select(
        "scenario", "strategy", "last_phase", *[F.col(c).alias(f"{c}_after") for c in COMPARED]
    )
    whole = (F.col("from_phase") == 0) & (F.col("to_phase") == F.col("last_phase"))
    step = F.col("to_phase") == F.col("from_phase") + 1
    moves = (
        movement.join(last, "scenario")
        .groupBy("scenario", "strategy")
        .agg(
            F.sum(F.when(whole, F.col("queues_in_both"))).alias("queues_in_both"),
            F.sum(F.when(whole, F.col("moved"))).alias("queues_moved"),
            # Null where any (topic, group) has none (an unowned or twice-owned queue after): a
            # sum of the others would pass for the scenario's minimum.
            F.when(
                F.count(F.when(whole, 1)) == F.count(F.when(whole, F.col("min_moves"))),
                F.sum(F.when(whole, F.col("min_moves"))),
            ).alias("min_moves"),
            F.sum(F.when(step, F.col("moved"))).alias("moved_over_steps"),
            F.sum(F.when(whole, F.col("moved_backlog"))).alias("moved_backlog"),
        )
    )
    return (
        before.join(after, ["scenario", "strategy"], "full")
        .join(moves, ["scenario", "strategy"], "left")
        .select(*schemas.COMPARISON.fieldNames())
        .orderBy("scenario", "strategy")
    )


def recommendation(group_metrics: DataFrame, consumer_load: DataFrame, movement: DataFrame) -> DataFrame:
    """One row per group: over every scenario and phase run, each strategy's worst max/mean of
    its clients' queues summed over the group's topics (the load a client feels; a single topic
    with fewer queues than clients would make every strategy look alike) and the queues it moved
    over the steps; the strategy with the best
    balance (then the fewest moves), the one with the fewest moves (then the best balance), and
    how many of the group's clients are useful in the snapshot: beyond its biggest topic's queue
    count, the rest sit idle whatever the strategy.

    A strategy never wins where the client throws with it but not with every strategy (where all
    throw, a step left the topic without queues: no strategy is to blame), nor where it was not
    simulated in every phase the others were (skipped for lack of its configuration: its missing
    phases would pass for phases without moves). A group with no such strategy has no winner."""
    step = F.col("to_phase") == F.col("from_phase") + 1
    moves = movement.where(step).groupBy("group", "strategy").agg(F.sum("moved").alias("moved"))
    load = (
        consumer_load.groupBy("scenario", "phase", "strategy", "group")
        .agg(_max_over_mean_of("queues").alias("max_over_mean"))
        .groupBy("group", "strategy")
        .agg(F.max("max_over_mean").alias("worst_max_over_mean"))
    )
    threw = F.col("error").isNotNull()
    every_strategy_threw = F.min(threw).over(Window.partitionBy("group", "scenario", "phase", "topic"))
    per_strategy = (
        group_metrics.withColumn("blameless", threw & every_strategy_threw)
        .groupBy("group", "strategy")
        .agg(
            F.sum((threw & ~F.col("blameless")).cast("long")).alias("errors"),
            F.count(F.lit(1)).alias("runs"),  # (scenario, phase, topic) simulated
            # As the snapshot is (phase 0): how many clients it has, and how many its biggest topic can use.
            F.max(F.when(F.col("phase") == 0, F.col("consumer_count"))).alias("consumers"),
            F.max(F.when(F.col("phase") == 0, F.col("queue_count"))).alias("most_queues"),
            # The snapshot another way (stage.alternatives): in POP, and on one library.
            F.max(F.when(F.col("phase") == 0, F.col("pop_idle_consumers"))).alias("pop_idle_consumers"),
            F.max(F.when(F.col("phase") == 0, F.col("pop_max_message_share"))).alias("pop_max_message_share"),
            *[
                (F.sum(F.when(F.col("phase") == 0, F.col(c))) / F.countDistinct("scenario"))
                .cast("long")
                .alias(c)
                for c in ("one_library_multi_owned", "one_library_unassigned")
            ],
        )
        .withColumn(
            "eligible",
            (F.col("errors") == 0) & (F.col("runs") == F.max("runs").over(Window.partitionBy("group"))),
        )
        .join(load, ["group", "strategy"], "left")
        .join(moves, ["group", "strategy"], "left")
        .withColumn("moved", F.coalesce("moved", F.lit(0)))
    )
    balance = F.coalesce(F.round("worst_max_over_mean", 3), F.lit(float("inf")))
    eligible = lambda c: F.when(F.col("eligible"), c)  # noqa: E731  (min and min_by skip nulls)
    best = F.min_by(F.col("strategy"), eligible(F.struct(balance, F.col("moved"), F.col("strategy"))))
    fewest = F.min_by(F.col("strategy"), eligible(F.struct(F.col("moved"), balance, F.col("strategy"))))
    # One library's figures are the best-balanced strategy's (they depend on the strategy).
    one_library = per_strategy.select(
        "group",
        F.col("strategy").alias("best_balance"),
        "one_library_multi_owned",
        "one_library_unassigned",
    )
    return (
        per_strategy.groupBy("group")
        .agg(
            best.alias("best_balance"),
            F.min(eligible(balance)).alias("best_max_over_mean"),
            fewest.alias("fewest_moves"),
            F.min(eligible(F.col("moved"))).alias("fewest_moved"),
            F.max("consumers").alias("consumers"),
            F.max("most_queues").alias("most_queues"),
            F.max("pop_idle_consumers").alias("pop_idle_consumers"),
            F.max("pop_max_message_share").alias("pop_max_message_share"),
        )
        .join(one_library, ["group", "best_balance"], "left")
        .select(
            "group",
            "best_balance",
            F.when(F.col("best_max_over_mean") < float("inf"), F.col("best_max_over_mean")).alias(
                "best_max_over_mean"
            ),
            "fewest_moves",
            "fewest_moved",
            "consumers",
            F.least("consumers", "most_queues").alias("useful_consumers"),
            F.when(F.col("pop_idle_consumers").isNotNull(), F.lit(POP_SHARE_QUEUE_NUM)).alias(
                "pop_share_queue_num"
            ),
            "pop_idle_consumers",
            "pop_max_message_share",
            "one_library_multi_owned",
            "one_library_unassigned",
        )
        .orderBy("group")
    )


SPLIT_BRAIN = (
    "stale_clients",
    "consumer_count",
    "queue_count",
    "multi_owned_queues",
    "unassigned_queues",
    "multi_owned_backlog",
    "unassigned_backlog",
)


def split_brain(group_metrics: DataFrame) -> DataFrame:
    """One row per (scenario, phase, strategy, topic, group) of a stale_view phase in which some
    client computes from the old view: the queues read twice (duplicate consumption) and read by
    nobody (stalled), and the backlog on each."""
    return group_metrics.where(F.col("stale_clients") > 0).select(*RUN, "topic", "group", *SPLIT_BRAIN)


def most_exposed_first(exposure: DataFrame) -> DataFrame:
    """How the exposure table reads best: per scenario, the most exposed strategy first."""
    return exposure.orderBy("scenario", F.desc("at_risk_fraction"), "strategy")


def exposure(split_brain: DataFrame) -> DataFrame:
    """One row per (scenario, strategy): the split-brain risk summed over the groups with stale
    clients (unordered: see most_exposed_first)."""
    risk = F.col("multi_owned_queues") + F.col("unassigned_queues")
    return (
        split_brain.groupBy("scenario", "strategy")
        .agg(
            F.count(F.lit(1)).alias("topic_groups"),
            F.sum((risk > 0).cast("long")).alias("exposed"),
            F.sum("multi_owned_queues").alias("multi_owned_queues"),
            F.sum("unassigned_queues").alias("unassigned_queues"),
            F.sum("multi_owned_backlog").alias("multi_owned_backlog"),
            F.sum("unassigned_backlog").alias("unassigned_backlog"),
            F.sum("queue_count").alias("queues"),
        )
        .withColumn(
            "at_risk_fraction",  # ANSI mode: x / 0 is an error, and a group may have no queue
            F.when(
                F.col("queues") > 0,
                (F.col("multi_owned_queues") + F.col("unassigned_queues")) / F.col("queues"),
            ),
        )
    )


def allocation_rejects(group_routes: DataFrame, group_metrics: DataFrame) -> DataFrame:
    """Reject rows for (topic, group, strategy) runs that produced no allocation: a strategy
    skipped for lack of its configuration, a group on which the real client throws, or one that
    rmqsim refuses to run."""
    where = ["scenario", "phase", "topic", "group"]
    skipped = group_routes.select(*where, F.explode("skipped").alias("s")).select(
        F.lit("allocation").alias("source"),
        F.col("s.reason").alias("reason"),
        F.to_json(F.struct(*where, F.col("s.strategy").alias("strategy"))).alias("row"),
    )
    # A null answer is simulated (the client keeps its queues), not a group left out.
    thrown = group_metrics.where(_thrown(F.col("error"))).select(
        F.lit("allocation").alias("source"),
        F.when(F.col("error").startswith(RMQSIM_REFUSES), F.col("error"))
        .otherwise(F.concat(F.lit("the client throws: "), F.col("error")))
        .alias("reason"),
        F.to_json(F.struct(*where, "strategy")).alias("row"),
    )
    return skipped.unionByName(thrown)
