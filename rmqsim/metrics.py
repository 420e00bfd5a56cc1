"""The output tables (docs/CONTRACT.md, section 4), all derived from one row per (group, distinct client).

The allocation stage already counted each client's queues and each group's unowned and
multi-owned queues, so no metric touches the (much larger) assignment rows.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rmqsim import schemas
from rmqsim.strategies import broker, proxy
from rmqsim.strategies.batch import RMQSIM_REFUSES

# How group_metrics.error starts where the answer is an answer (the client keeps what it had), not
# an error the client throws or a group rmqsim refuses.
KEPT = (broker.ANSWERS_NULL, proxy.ANSWERS_NULL)


def _thrown(error: Column) -> Column:
    kept = [error.startswith(k) for k in KEPT]
    return error.isNotNull() & ~(kept[0] | kept[1])


RUN = ["scenario", "phase", "strategy"]

# The tables that are row filters of the client rows (schemas.CLIENT_QUEUES): the flag that keeps
# a row, and the client rows' columns that the table's columns of another name come from. Spark
# (below) and the Python tasks that write them (stage.task_tables) both read it.
CLIENT_ROW_TABLES = {
    "group_metrics": ("first_in_group", {}),
    "consumer_load": (
        "first_in_client",
        {
            "topics": "client_topics",
            "queues": "client_queues",
            "backlog": "client_backlog",
            "message_share": "client_message_share",
            "backlog_share": "client_backlog_share",
        },
    ),
}
TABLE_SCHEMAS = {"group_metrics": schemas.GROUP_METRICS, "consumer_load": schemas.CONSUMER_LOAD}


def _max_over_mean(max_col: str, mean_col: str) -> Column:
    # ANSI mode makes x / 0 an error, and a group with no queue has no meaningful ratio.
    return F.when(F.col(mean_col) > 0, F.col(max_col) / F.col(mean_col))


def assignments(client_queues: DataFrame) -> DataFrame:
    """One row per (scenario, phase, strategy, topic, group, client, queue it owns):
    schemas.ASSIGNMENTS, each client's owned list exploded in the JVM (shipping one Arrow row per
    queue out of Python cost more than the allocation itself). Where the output is on this
    machine, the Python tasks write these rows themselves instead: stage.task_tables."""
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
    return _flagged(client_queues, "group_metrics")


def consumer_load(client_queues: DataFrame) -> DataFrame:
    """One row per (scenario, phase, strategy, group, client_id): queues summed over its topics.

    AVG gives the extra queue of every topic to the first-sorted clients, so a client can be the
    busiest of every topic it reads: fleet skew that no single topic's metrics show.
    """
    return _flagged(client_queues, "consumer_load")


def _flagged(client_queues: DataFrame, table: str) -> DataFrame:
    flag, renamed = CLIENT_ROW_TABLES[table]
    names = TABLE_SCHEMAS[table].fieldNames()
    return client_queues.where(F.col(flag)).select(*(F.col(renamed.get(n, n)).alias(n) for n in names))


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


def group_load(consumer_load: DataFrame) -> DataFrame:
    """Per (scenario, phase, strategy, group): max/mean of its clients' queues summed over its
    topics, the load rollups.recommendation weighs."""
    return consumer_load.groupBy(*RUN, "group").agg(_max_over_mean_of("queues").alias("max_over_mean"))


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
