"""How a consumer sees its topic (docs/CONTRACT.md, section 2): each topic's mqAll and each group's cidAll.

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


def broker_facts(brokers: DataFrame, *, by: Sequence[str] = ()) -> DataFrame:
    """One row per broker_name: ``alive`` (an instance is up, so the NameServer still routes it;
    a null alive counts as up), ``master_alive`` (its master, id 0, is up: the proxy needs it) and
    ``machine_room`` (the master's where instances disagree)."""
    alive = F.coalesce(F.col("alive"), F.lit(True))
    master = F.coalesce(F.col("broker_id"), F.lit(0)) == 0
    master_room = F.max(F.when(master, F.col("machine_room")))
    return brokers.groupBy(*by, "broker_name").agg(
        F.max(alive).alias("alive"),
        F.coalesce(F.max(master & alive), F.lit(False)).alias("master_alive"),
        F.coalesce(master_room, F.max("machine_room")).alias("machine_room"),
    )


def topic_routes(topic_queues: DataFrame, *, brokers: DataFrame, by: Sequence[str] = ()) -> DataFrame:
    """One row per topic (and ``by`` key, e.g. scenario and phase): ``broker_names`` in Java
    order, their ``read_queue_nums`` and rooms.

    A QueueData becomes queues when it has read permission and read queues on a live broker.
    mqAll is a set in the client, so repeated QueueData for one broker add no queues: a broker
    contributes queues 0..max(read_queue_nums)-1. A topic whose every QueueData is unreadable keeps
    its row with empty arrays (the client then throws "mqAll is null or mqAll empty").
    One aggregation per topic does it all: every shuffle is a Spark job, and these tables are small.
    """
    readable = (
        (F.col("perm").bitwiseAND(PERM_READ) != 0)
        & (F.col("read_queue_nums") > 0)
        & F.coalesce(F.col("alive"), F.lit(False))
    )
    entry = F.struct(
        java_order("broker_name").alias("key"),
        (-F.col("read_queue_nums")).alias("most_queues_first"),
        F.col("broker_name"),
        F.col("read_queue_nums"),
        F.col("machine_room"),
        F.col("master_alive"),
    )
    queue_data = F.array_sort(F.collect_list(F.when(readable, entry)))  # collect_list drops nulls
    first_per_broker = F.filter(
        "queue_data", lambda e, i: (i == 0) | (e["key"] != F.get(F.col("queue_data"), i - 1)["key"])
    )
    return (
        topic_queues.join(F.broadcast(broker_facts(brokers, by=by)), [*by, "broker_name"], "left")
        .groupBy(*by, "topic")
        .agg(queue_data.alias("queue_data"))
        .select(*by, "topic", first_per_broker.alias("route"))
        .select(
            *by,
            "topic",
            F.col("route.broker_name").alias("broker_names"),
            F.col("route.read_queue_nums").alias("read_queue_nums"),
            F.col("route.machine_room").alias("broker_rooms"),
            F.col("route.master_alive").alias("broker_masters"),
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


def client_lists(
    consumers: DataFrame,
    *,
    queue_config: DataFrame | None = None,
    languages: bool = False,
    by: Sequence[str] = (),
) -> DataFrame:
    """One row per (topic, group) and ``by`` key: ``client_ids`` in Java order, duplicates kept
    as reported, with each client's machine room, CONFIG list (null without queue_config rows) and
    library (null unless ``languages``: the consumers table has a language column) alongside.

    Without a queue_config table ``client_configs`` is null for the whole row: a list of nulls
    per client cost more to hand to Python than the client ids themselves; so for languages.
    """
    fields = [java_order("client_id").alias("key"), F.col("client_id"), F.col("machine_room")]
    if queue_config is not None:
        consumers = consumers.join(configured_queues(queue_config), ["group", "topic", "client_id"], "left")
        fields.append(F.col("client_config"))
    if languages:
        fields.append(normalised(F.col("language")).alias("language"))
    clients = consumers.groupBy(*by, "topic", "group").agg(
        F.array_sort(F.collect_list(F.struct(*fields))).alias("c")
    )
    configs = F.col("c.client_config") if queue_config is not None else F.lit(None).cast(CLIENT_CONFIGS)
    language = F.col("c.language") if languages else F.lit(None).cast("array<string>")
    return clients.select(
        *by,
        "topic",
        "group",
        F.col("c.client_id").alias("client_ids"),
        F.col("c.machine_room").alias("client_rooms"),
        configs.alias("client_configs"),
        language.alias("client_languages"),
    )


CLIENT_CONFIGS = "array<array<struct<broker_name:string,queue_id:int>>>"


# What a strategy needs to run on a (topic, group) when several strategies are compared, and the
# reject reason where it lacks it. (With --strategies configured it runs regardless, and the
# client's exception is reported instead.)
def _needs() -> list[tuple[str, Column, str]]:
    return [
        (
            "CONFIG",
            # A (topic, group) every client left (phases.with_left_subscriptions) has none to configure.
            F.coalesce(F.exists("client_configs", lambda c: c.isNotNull()), F.lit(False))
            | (F.size("client_ids") == 0),
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
    client_lists: DataFrame,
    *,
    groups: DataFrame,
    strategies: Sequence[str] | None,
    balancing: bool = False,
    by: Sequence[str] = (),
) -> DataFrame:
    """Add the group's parameters and the ``strategies`` to run: the group's configured one (None),
    or the named ones (narrowed by group_routes to those the group has the configuration for).
    ``balancing``: the groups table says who balances (schemas.BALANCING); else that is null."""
    params = groups.select(
        *by,
        "group",
        normalised_strategy().alias("strategy"),
        "virtual_node_cnt",
        "consumer_idcs",
        normalised(F.col("inner_strategy")).alias("inner_strategy"),
        normalised(F.col("message_model")).alias("message_model"),
        "rebalance",
        "request_mode",
        "pop_share_queue_num",
        "consume_orderly",
    )
    requested = (
        F.array(F.coalesce(F.col("strategy"), F.lit("AVG")))
        if strategies is None
        else F.array(*[F.lit(s) for s in strategies])
    )
    return client_lists.join(params, [*by, "group"], "left").select(
        client_lists["*"],
        requested.alias("strategies"),
        F.lit(strategies is not None).alias("compare"),
        F.coalesce(F.col("virtual_node_cnt"), F.lit(10)).alias("virtual_node_cnt"),
        "consumer_idcs",
        F.coalesce(F.col("inner_strategy"), F.lit("AVG")).alias("inner_strategy"),
        F.coalesce(F.col("message_model"), F.lit("CLUSTERING")).alias("message_model"),
        (_balancing() if balancing else F.lit(None).cast(schemas.BALANCING)).alias("balancing"),
    )


def _balancing() -> Column:
    """schemas.BALANCING with the contract's defaults: the client balances, PULL, -1, not orderly."""
    return F.struct(
        F.coalesce(normalised(F.col("rebalance")), F.lit("CLIENT")).alias("rebalance"),
        F.coalesce(normalised(F.col("request_mode")) == "POP", F.lit(False)).alias("pop"),
        F.coalesce(F.col("pop_share_queue_num"), F.lit(-1)).alias("pop_share_queue_num"),
        F.coalesce(F.col("consume_orderly"), F.lit(False)).alias("consume_orderly"),
    )


def normalised(name: Column) -> Column:
    """A name from the groups table as the client compares it: trimmed, upper case."""
    return F.upper(F.trim(name))


def normalised_strategy() -> Column:
    return normalised(F.coalesce(F.col("strategy"), F.lit("AVG")))


def queue_backlogs(offsets: DataFrame) -> DataFrame:
    """One row per (group, topic): each queue's backlog, the messages not yet consumed."""
    backlog = F.greatest(F.col("broker_offset") - F.col("consumer_offset"), F.lit(0)).cast("long")
    entry = F.struct("broker_name", F.col("queue_id").cast("int").alias("queue_id"), backlog.alias("backlog"))
    return offsets.groupBy("group", "topic").agg(F.collect_list(entry).alias("backlogs"))


def group_routes(
    client_lists: DataFrame,
    *,
    routes: DataFrame,
    last_phase: dict[str, int],
    offsets: DataFrame | None = None,
    stale_views: DataFrame | None = None,
    masters: bool = True,
) -> DataFrame:
    """The allocation stage's input (schemas.GROUP_ROUTES), from phase-keyed client lists and
    routes: a group's clients beside its topic's route; when strategies are compared, those the
    group lacks the configuration for are moved to ``skipped`` with the reason.

    A topic that a step left without any QueueData keeps its clients, with an empty route: the
    client then throws "mqAll is null or mqAll empty", which is what a user must see.
    ``stale_views`` (phases.stale_views) names the clients of a phase that compute from an earlier one.
    ``masters``: keep ``broker_masters`` (null otherwise).
    """
    skip = lambda s: F.col("compare") & ~_runnable(s)  # noqa: E731
    arrays = ("broker_names", "read_queue_nums", "broker_rooms", "broker_masters")
    empty = {c: schemas.GROUP_ROUTES[c].dataType for c in arrays}
    last = F.create_map(*[F.lit(x) for kv in sorted(last_phase.items()) for x in kv])[F.col("scenario")]
    return (
        client_lists.join(routes, [*PHASE, "topic"], "left")
        .transform(
            lambda df: (
                df.join(queue_backlogs(offsets), ["group", "topic"], "left")
                if offsets is not None
                else df.withColumn("backlogs", F.lit(None).cast(schemas.GROUP_ROUTES["backlogs"].dataType))
            )
        )
        .transform(lambda df: _with_stale_views(df, stale_views))
        .withColumns({c: F.coalesce(F.col(c), F.array().cast(t)) for c, t in empty.items()})
        .withColumns(
            {
                "skipped": F.transform(
                    F.filter("strategies", skip),
                    lambda s: F.struct(s.alias("strategy"), _why_not(s).alias("reason")),
                ),
                "strategies": F.filter("strategies", lambda s: ~skip(s)),
                "last_phase": last.cast("int"),
            }
        )
        .transform(
            # Only the proxy reads whether a broker's master is up: null unless a group may need it.
            lambda df: df if masters else df.withColumn("broker_masters", F.lit(None).cast("array<boolean>"))
        )
        .select(*schemas.GROUP_ROUTES.fieldNames())
    )


def _with_stale_views(df: DataFrame, stale_views: DataFrame | None) -> DataFrame:
    if stale_views is None:
        return df.withColumns(
            {c: F.lit(None).cast(schemas.GROUP_ROUTES[c].dataType) for c in ("stale_clients", "view_phase")}
        )
    per_group = stale_views.groupBy(*PHASE, "group").agg(
        F.array_sort(F.collect_set("client_id")).alias("stale_clients"),
        F.max("view_phase").alias("view_phase"),
    )
    return df.join(F.broadcast(per_group), [*PHASE, "group"], "left")


PHASE = ("scenario", "phase")
