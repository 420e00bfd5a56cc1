"""How a consumer sees its topic (SPEC section 2): each topic's mqAll and each group's cidAll.

Routes stay compact: one row per topic with its brokers (in Java String order) and their read
queue counts, joined to one row per (topic, group) with its sorted client ids. Queues are only
expanded inside the allocation stage, so Spark never shuffles one row per queue.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rmqsim import schemas

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


def broker_rooms(brokers: DataFrame) -> DataFrame:
    """One row per broker_name: its machine room (the master's where instances disagree)."""
    master_room = F.max(F.when(F.col("broker_id") == 0, F.col("machine_room")))
    return brokers.groupBy("broker_name").agg(
        F.coalesce(master_room, F.max("machine_room")).alias("machine_room")
    )


def topic_routes(topic_queues: DataFrame, *, brokers: DataFrame) -> DataFrame:
    """One row per topic: ``broker_names`` in Java order, their ``read_queue_nums`` and rooms.

    mqAll is a set in the client, so repeated QueueData for one broker add no queues: a broker
    contributes queues 0..max(read_queue_nums)-1. A topic whose every QueueData is unreadable keeps
    its row with empty arrays (the client then throws "mqAll is null or mqAll empty").
    """
    per_broker = (
        filter_readable_queue_data(topic_queues, brokers=brokers)
        .groupBy("topic", "broker_name")
        .agg(F.max("read_queue_nums").alias("read_queue_nums"))
        .join(broker_rooms(brokers), "broker_name", "left")
    )
    entry = F.struct(
        java_order("broker_name").alias("key"),
        F.col("broker_name"),
        F.col("read_queue_nums"),
        F.col("machine_room"),
    )
    routes = per_broker.groupBy("topic").agg(F.array_sort(F.collect_list(entry)).alias("route"))
    return (
        topic_queues.select("topic")
        .distinct()
        .join(routes, "topic", "left")
        .select(
            "topic",
            F.coalesce(F.col("route.broker_name"), F.array().cast("array<string>")).alias("broker_names"),
            F.coalesce(F.col("route.read_queue_nums"), F.array().cast("array<int>")).alias("read_queue_nums"),
            F.coalesce(F.col("route.machine_room"), F.array().cast("array<string>")).alias("broker_rooms"),
        )
    )


def configured_queues(queue_config: DataFrame) -> DataFrame:
    """One row per (group, topic, client_id): its CONFIG queue list, in mqAll order."""
    entry = F.struct(java_order("broker_name").alias("key"), F.col("broker_name"), F.col("queue_id"))
    return (
        queue_config.groupBy("group", "topic", "client_id")
        .agg(F.array_sort(F.collect_set(entry)).alias("queues"))
        .select(
            "group",
            "topic",
            "client_id",
            F.transform(
                "queues", lambda q: F.struct(q.broker_name.alias("broker_name"), q.queue_id.alias("queue_id"))
            ).alias("client_config"),
        )
    )


def client_lists(consumers: DataFrame, *, queue_config: DataFrame | None = None) -> DataFrame:
    """One row per (topic, group): ``client_ids`` in Java order, duplicates kept as reported, with
    each client's machine room and CONFIG list (null without queue_config rows) alongside."""
    if queue_config is not None:
        consumers = consumers.join(configured_queues(queue_config), ["group", "topic", "client_id"], "left")
    else:
        consumers = consumers.withColumn("client_config", F.lit(None).cast(CLIENT_CONFIG))
    entry = F.struct(
        java_order("client_id").alias("key"),
        F.col("client_id"),
        F.col("machine_room"),
        F.col("client_config"),
    )
    return (
        consumers.groupBy("topic", "group")
        .agg(F.array_sort(F.collect_list(entry)).alias("clients"))
        .select(
            "topic",
            "group",
            F.col("clients.client_id").alias("client_ids"),
            F.col("clients.machine_room").alias("client_rooms"),
            F.col("clients.client_config").alias("client_configs"),
        )
    )


CLIENT_CONFIG = "array<struct<broker_name:string,queue_id:int>>"


# What a strategy needs to run on a (topic, group) when several strategies are compared, and the
# reject reason where it lacks it. (With --strategies configured it runs regardless, and the
# client's exception is reported instead.)
def _needs() -> list[tuple[str, Column, str]]:
    return [
        (
            "CONFIG",
            F.exists("client_configs", lambda c: c.isNotNull()),
            "CONFIG needs queue_config rows for the group's clients on this topic",
        ),
        ("MACHINE_ROOM", F.col("consumer_idcs").isNotNull(), "MACHINE_ROOM needs groups.consumer_idcs"),
        (
            "MACHINE_ROOM_NEARBY",
            F.forall("broker_rooms", lambda r: r.isNotNull() & (r != ""))
            & F.forall("client_rooms", lambda r: r.isNotNull() & (r != "")),
            "MACHINE_ROOM_NEARBY needs a machine_room for every broker and client",
        ),
    ]


def _runnable(name: Column) -> Column:
    out = F.lit(True)
    for strategy, can, _ in _needs():
        out = F.when(name == strategy, can).otherwise(out)
    return out


def _why_not(name: Column) -> Column:
    out = F.lit(None).cast("string")
    for strategy, _, reason in _needs():
        out = F.when(name == strategy, F.lit(reason)).otherwise(out)
    return out


def with_strategies(
    client_lists: DataFrame, *, groups: DataFrame, strategies: Sequence[str] | None
) -> DataFrame:
    """Add the group's parameters and the ``strategies`` to run: the group's configured one (None),
    or the named ones (narrowed by group_routes to those the group has the configuration for)."""
    params = groups.select(
        "group",
        normalised_strategy().alias("strategy"),
        "virtual_node_cnt",
        "consumer_idcs",
        F.upper(F.col("inner_strategy")).alias("inner_strategy"),
        F.upper(F.col("message_model")).alias("message_model"),
    )
    requested = (
        F.array(F.coalesce(F.col("strategy"), F.lit("AVG")))
        if strategies is None
        else F.array(*[F.lit(s) for s in strategies])
    )
    return client_lists.join(params, "group", "left").select(
        client_lists["*"],
        requested.alias("strategies"),
        F.lit(strategies is not None).alias("compare"),
        F.coalesce(F.col("virtual_node_cnt"), F.lit(10)).alias("virtual_node_cnt"),
        "consumer_idcs",
        F.coalesce(F.col("inner_strategy"), F.lit("AVG")).alias("inner_strategy"),
        F.coalesce(F.col("message_model"), F.lit("CLUSTERING")).alias("message_model"),
    )


def normalised_strategy() -> Column:
    return F.upper(F.trim(F.coalesce(F.col("strategy"), F.lit("AVG"))))


def group_routes(client_lists: DataFrame, *, routes: DataFrame, scenario: str, phase: int) -> DataFrame:
    """The allocation stage's input (schemas.GROUP_ROUTES): a group's clients beside its topic's
    route; when strategies are compared, those the group lacks the configuration for are moved to
    ``skipped`` with the reason."""
    skip = lambda s: F.col("compare") & ~_runnable(s)  # noqa: E731
    return (
        client_lists.join(routes, "topic", "inner")
        .withColumns(
            {
                "skipped": F.transform(
                    F.filter("strategies", skip),
                    lambda s: F.struct(s.alias("strategy"), _why_not(s).alias("reason")),
                ),
                "strategies": F.filter("strategies", lambda s: ~skip(s)),
            }
        )
        .select(
            F.lit(scenario).alias("scenario"),
            F.lit(phase).cast("int").alias("phase"),
            *schemas.GROUP_ROUTES.fieldNames()[2:],
        )
    )
