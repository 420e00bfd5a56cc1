"""How a consumer sees its topic (SPEC section 2): each topic's mqAll and each group's cidAll.

Routes stay compact: one row per topic with its brokers (in Java String order) and their read
queue counts, joined to one row per (topic, group) with its sorted client ids. Queues are only
expanded inside the allocation stage, so Spark never shuffles one row per queue.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# RocketMQ PermName bits.
PERM_READ = 4


def java_order(name: str) -> Column:
    """A binary sort key that orders strings as Java's String.compareTo (UTF-16 code units)."""
    return F.encode(F.col(f"`{name}`"), "UTF-16BE")


def live_broker_names(brokers: DataFrame) -> DataFrame:
    """Broker names with at least one instance alive: the ones still in the NameServer's routes."""
    alive = F.coalesce(F.col("alive"), F.lit(True))
    return (
        brokers.groupBy("broker_name")
        .agg(F.max(alive.cast("int")).alias("alive"))
        .where(F.col("alive") == 1)
        .select("broker_name")
    )


def filter_readable_queue_data(topic_queues: DataFrame, *, brokers: DataFrame) -> DataFrame:
    """QueueData the client turns into queues: read permission, read queues, a live broker."""
    readable = (F.col("perm").bitwiseAND(PERM_READ) != 0) & (F.col("read_queue_nums") > 0)
    return topic_queues.where(readable).join(live_broker_names(brokers), "broker_name", "left_semi")


def topic_routes(topic_queues: DataFrame, *, brokers: DataFrame) -> DataFrame:
    """One row per topic: ``broker_names`` in Java order and their ``read_queue_nums``.

    mqAll is a set in the client, so repeated QueueData for one broker add no queues: a broker
    contributes queues 0..max(read_queue_nums)-1. A topic whose every QueueData is unreadable keeps
    its row with empty arrays (the client then throws "mqAll is null or mqAll empty").
    """
    per_broker = (
        filter_readable_queue_data(topic_queues, brokers=brokers)
        .groupBy("topic", "broker_name")
        .agg(F.max("read_queue_nums").alias("read_queue_nums"))
    )
    entry = F.struct(java_order("broker_name").alias("key"), F.col("broker_name"), F.col("read_queue_nums"))
    routes = per_broker.groupBy("topic").agg(F.array_sort(F.collect_list(entry)).alias("route"))
    return (
        topic_queues.select("topic")
        .distinct()
        .join(routes, "topic", "left")
        .select(
            "topic",
            F.coalesce(F.col("route.broker_name"), F.array().cast("array<string>")).alias("broker_names"),
            F.coalesce(F.col("route.read_queue_nums"), F.array().cast("array<int>")).alias("read_queue_nums"),
        )
    )


def client_lists(consumers: DataFrame) -> DataFrame:
    """One row per (topic, group): ``client_ids`` in Java order, duplicates kept as reported."""
    entry = F.struct(java_order("client_id").alias("key"), F.col("client_id"))
    return (
        consumers.groupBy("topic", "group")
        .agg(F.array_sort(F.collect_list(entry)).alias("clients"))
        .select("topic", "group", F.col("clients.client_id").alias("client_ids"))
    )


def with_strategies(
    client_lists: DataFrame, *, groups: DataFrame, strategies: Sequence[str] | None
) -> DataFrame:
    """Add a ``strategies`` list: each group's configured one (None), or every named strategy."""
    if strategies is None:
        configured = groups.select("group", normalised_strategy().alias("strategy"))
        return (
            client_lists.join(configured, "group", "left")
            .withColumn("strategies", F.array(F.coalesce(F.col("strategy"), F.lit("AVG"))))
            .drop("strategy")
        )
    return client_lists.withColumn("strategies", F.array(*[F.lit(s) for s in strategies]))


def normalised_strategy() -> Column:
    return F.upper(F.trim(F.coalesce(F.col("strategy"), F.lit("AVG"))))


def group_routes(client_lists: DataFrame, *, routes: DataFrame, scenario: str, phase: int) -> DataFrame:
    """The allocation stage's input (schemas.GROUP_ROUTES): a group's clients beside its topic's route."""
    return client_lists.join(routes, "topic", "inner").select(
        F.lit(scenario).alias("scenario"),
        F.lit(phase).cast("int").alias("phase"),
        "strategies",
        "topic",
        "group",
        "broker_names",
        "read_queue_nums",
        "client_ids",
    )
