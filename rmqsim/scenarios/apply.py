"""Scenario steps applied to a checked snapshot as DataFrame transformations (docs/CONTRACT.md, section 3).

Phase 0 of every scenario is the snapshot; phase k is phase k-1 with step k applied. ``phased``
stacks every phase of every scenario into one set of tables keyed by (scenario, phase), so that
route building and allocation run once, in one Spark job per output, however many phases there are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from rmqsim.errors import InputError
from rmqsim.scenarios import parse as sc
from rmqsim.snapshot.load import Snapshot

PHASE = ("scenario", "phase")


def _in(column: str, names: tuple[str, ...] | str):
    return F.lit(True) if names == sc.ALL else F.col(column).isin(list(names))


def _add_brokers(step: sc.AddBrokers, snap: Snapshot) -> Snapshot:
    spark = snap.brokers.sparkSession
    new = spark.createDataFrame(
        [
            {c: v for c, v in zip(snap.brokers.columns, _broker_row(snap.brokers.columns, step, name))}
            for name in step.names
        ],
        snap.brokers.schema,
    )
    counts = snap.topic_queues.where(_in("topic", step.topics)).groupBy("topic")
    # A new broker gets each topic's most common counts (the smaller on a tie), unless given.
    counts = counts.agg(
        F.mode("read_queue_nums", True).alias("_read"), F.mode("write_queue_nums", True).alias("_write")
    )
    names = spark.createDataFrame([(n,) for n in step.names], "broker_name string")
    queues = counts.crossJoin(names).select(
        *[_queue_column(c, step) for c in snap.topic_queues.columns],
    )
    return replace(
        snap,
        brokers=snap.brokers.unionByName(new),
        topic_queues=snap.topic_queues.unionByName(queues),
    )


def _broker_row(columns: Sequence[str], step: sc.AddBrokers, name: str) -> list[object]:
    values = {
        "cluster": step.cluster,
        "broker_name": name,
        "broker_id": 0,
        "address": None,
        "machine_room": step.machine_room,
        "alive": True,
    }
    return [values.get(c) for c in columns]


def _queue_column(name: str, step: sc.AddBrokers):
    given = {
        "read_queue_nums": step.read_queue_nums,
        "write_queue_nums": step.write_queue_nums,
        "perm": step.perm,
    }
    if name in ("topic", "broker_name"):
        return F.col(name)
    if name in ("read_queue_nums", "write_queue_nums"):
        default = F.col("_read" if name == "read_queue_nums" else "_write")
        value = given[name]
        return (F.lit(value) if value is not None else default).cast("int").alias(name)
    if name == "perm":
        return F.lit(step.perm).cast("int").alias(name)
    return F.lit(None).alias(name)


def _remove_brokers(step: sc.RemoveBrokers, snap: Snapshot) -> Snapshot:
    gone = F.col("broker_name").isin(list(step.names))
    return replace(snap, brokers=snap.brokers.where(~gone), topic_queues=snap.topic_queues.where(~gone))


def _set_alive(alive: bool) -> Callable[[sc.BrokerDown | sc.BrokerUp, Snapshot], Snapshot]:
    def apply(step, snap: Snapshot) -> Snapshot:
        named = F.col("broker_name").isin(list(step.names))
        return replace(
            snap,
            brokers=snap.brokers.withColumn("alive", F.when(named, F.lit(alive)).otherwise(F.col("alive"))),
        )

    return apply


def _set_queue_nums(step: sc.SetQueueNums, snap: Snapshot) -> Snapshot:
    match = _in("topic", step.topics) & _in("broker_name", step.brokers)
    tq = snap.topic_queues
    for column in ("read_queue_nums", "write_queue_nums"):
        value = getattr(step, column)
        if value is not None:
            tq = tq.withColumn(column, F.when(match, F.lit(value).cast("int")).otherwise(F.col(column)))
    return replace(snap, topic_queues=tq)


def generated_client_ids(group: str, count: int, seed: int, start: int = 0) -> list[str]:
    """Deterministic ids shaped like RocketMQ's ip@pid#nanotime for clients a step adds: the
    ``start``-th to the (``start`` + ``count`` - 1)-th of the group's sequence for ``seed``."""
    out = []
    for i in range(start, start + count):
        h = hashlib.sha256(f"{seed}:{group}:{i}".encode()).digest()
        out.append(f"10.{200 + h[0] % 50}.{h[1]}.{h[2] % 254 + 1}@{1000 + int.from_bytes(h[3:5], 'big')}")
    return out


def _consumers_join(step: sc.ConsumersJoin, snap: Snapshot, *, first: Snapshot, start: int) -> Snapshot:
    """``start``: how many ids earlier steps of the scenario generated for the group and seed, so
    that two ``count`` steps add different clients. ``first``: the scenario's phase 0, whose topics
    of the group are its default even after every client of the group has left."""
    spark = snap.consumers.sparkSession
    ids = step.client_ids or tuple(generated_client_ids(step.group, step.count or 0, step.seed, start))
    if step.topics is not None:
        topics = spark.createDataFrame([(t,) for t in step.topics], "topic string")
    else:
        known = snap.consumers.unionByName(first.consumers)
        topics = known.where(F.col("group") == step.group).select("topic").distinct()
    given = {
        "group": F.lit(step.group),
        "machine_room": F.lit(step.machine_room).cast("string"),
        "language": F.lit(step.language).cast("string"),
    }
    new = topics.crossJoin(spark.createDataFrame([(c,) for c in ids], "client_id string")).select(
        *[
            given[c].alias(c)
            if c in given
            else F.col(c)
            if c in ("topic", "client_id")
            else F.lit(None).cast(snap.consumers.schema[c].dataType).alias(c)
            for c in snap.consumers.columns
        ]
    )
    return replace(snap, consumers=snap.consumers.unionByName(new))


def _consumers_leave(step: sc.ConsumersLeave, snap: Snapshot) -> Snapshot:
    spark = snap.consumers.sparkSession
    in_group = F.col("group") == step.group
    if step.client_ids is not None:
        leaving = spark.createDataFrame([(c,) for c in step.client_ids], "client_id string")
    else:
        # ``count`` of the group's clients, picked by a seeded hash: the same ones every run.
        leaving = (
            snap.consumers.where(in_group)
            .select("client_id")
            .distinct()
            .orderBy(F.xxhash64(F.lit(step.seed), "client_id"), "client_id")
            .limit(step.count or 0)
        )
    stays = (
        snap.consumers.where(in_group).join(leaving, "client_id", "left_anti").select(*snap.consumers.columns)
    )
    kept = snap.consumers.where(~in_group).unionByName(stays)
    return replace(snap, consumers=kept)


def _set_strategy(step: sc.SetStrategy, snap: Snapshot) -> Snapshot:
    updates = {
        "strategy": step.strategy.upper(),
        "virtual_node_cnt": step.virtual_node_cnt,
        "consumer_idcs": list(step.consumer_idcs) if step.consumer_idcs is not None else None,
        "inner_strategy": step.inner_strategy,
        "message_model": step.message_model,
    }
    return _set_group_columns(step.group, updates, snap)


def _set_rebalance(step: sc.SetRebalance, snap: Snapshot) -> Snapshot:
    updates = {
        "rebalance": step.rebalance,
        "request_mode": step.request_mode,
        "pop_share_queue_num": step.pop_share_queue_num,
    }
    return _set_group_columns(step.group, updates, snap)


def _set_group_columns(group: str, updates: dict[str, object], snap: Snapshot) -> Snapshot:
    """The groups rows of ``group`` (a name, or all) with ``updates`` (None: unchanged)."""
    groups = snap.groups
    named = _in("group", (group,) if group != sc.ALL else sc.ALL)
    # Groups without a groups row run with the defaults: give the named ones a row to change.
    missing = (
        snap.consumers.select("group")
        .distinct()
        .where(named)
        .join(groups.select("group"), "group", "left_anti")
        .select(
            *[
                F.col(c) if c == "group" else F.lit(None).cast(groups.schema[c].dataType).alias(c)
                for c in groups.columns
            ]
        )
    )
    groups = groups.unionByName(missing)
    for column, value in updates.items():
        if value is None or column not in groups.columns:
            continue
        literal = F.array(*[F.lit(v) for v in value]) if isinstance(value, list) else F.lit(value)
        groups = groups.withColumn(
            column, F.when(named, literal.cast(groups.schema[column].dataType)).otherwise(F.col(column))
        )
    return replace(snap, groups=groups)


# consumers_join also needs the scenario's earlier steps: phase_snapshots applies it.
APPLY: dict[type, Callable] = {
    sc.AddBrokers: _add_brokers,
    sc.RemoveBrokers: _remove_brokers,
    sc.BrokerDown: _set_alive(False),
    sc.BrokerUp: _set_alive(True),
    sc.SetQueueNums: _set_queue_nums,
    sc.ConsumersLeave: _consumers_leave,
    sc.SetStrategy: _set_strategy,
    sc.SetRebalance: _set_rebalance,
    sc.StaleView: lambda step, snap: snap,  # the state stays; only some clients' view differs
}


def phase_snapshots(snapshot: Snapshot, scenario: sc.Scenario) -> list[Snapshot]:
    """Phase 0 (the snapshot) and the state after each step."""
    out = [snapshot]
    generated: dict[tuple[str, int], int] = {}
    for step in scenario.steps:
        if isinstance(step, sc.ConsumersJoin):
            key = (step.group, step.seed)
            start = generated.get(key, 0)
            out.append(_consumers_join(step, out[-1], first=snapshot, start=start))
            if not step.client_ids:
                generated[key] = start + (step.count or 0)
        else:
            out.append(APPLY[type(step)](step, out[-1]))
    return out


PHASED = ("brokers", "topic_queues", "consumers", "groups")  # the tables a step may change


def phased(snapshot: Snapshot, scenarios: Sequence[sc.Scenario]) -> Snapshot:
    """Every phase of every scenario stacked into one snapshot keyed by (scenario, phase).

    A table a step leaves alone is the same DataFrame in the phases before and after it, and phase
    0 is the same in every scenario: each distinct DataFrame enters the stack once, joined to the
    (scenario, phase) keys that share it, which keeps the plan, and its planning, small.
    Offsets and CONFIG lists describe the fleet, not a phase: they stay as they are."""
    if not scenarios:
        raise InputError("arguments", "--scenarios", "no scenario to run")
    shared: dict[str, dict[int, tuple[DataFrame, list[tuple[str, int]]]]] = {t: {} for t in PHASED}
    for scenario in scenarios:
        for k, snap in enumerate(phase_snapshots(snapshot, scenario)):
            for table, frames in shared.items():
                df = getattr(snap, table)
                frames.setdefault(id(df), (df, []))[1].append((scenario.name, k))
    stacked = {
        table: reduce(DataFrame.unionByName, [_keyed(df, keys) for df, keys in frames.values()])
        for table, frames in shared.items()
    }
    return replace(snapshot, **stacked)


def _keyed(df: DataFrame, keys: list[tuple[str, int]]) -> DataFrame:
    """``df``'s rows once per (scenario, phase) of ``keys``, those two columns first."""
    if len(keys) == 1:
        ((scenario, phase),) = keys
        return df.select(F.lit(scenario).alias("scenario"), F.lit(phase).cast("int").alias("phase"), "*")
    key_rows = df.sparkSession.createDataFrame(keys, "scenario string, phase int")
    return key_rows.crossJoin(df)


STALE_VIEWS = "scenario string, phase int, group string, client_id string, view_phase int"


def stale_views(snapshot: Snapshot, scenarios: Sequence[sc.Scenario]) -> DataFrame | None:
    """One row per (scenario, phase, group, stale client): the clients of each stale_view phase
    that still compute from ``view_phase`` (the phase before the change); None without any.

    ``fraction`` picks ceil(fraction x clients) of the group's clients by a seeded hash: the
    same ones every run."""
    frames = []
    for scenario in scenarios:
        views = scenario.stale_views()
        if not views:
            continue
        snaps = phase_snapshots(snapshot, scenario)
        for k, step in views:
            frames.append(
                _stale_clients(snaps[k - 1], step).select(
                    F.lit(scenario.name).alias("scenario"),
                    F.lit(k).cast("int").alias("phase"),
                    F.lit(step.group).alias("group"),
                    "client_id",
                    F.lit(k - 2).cast("int").alias("view_phase"),
                )
            )
    return reduce(DataFrame.unionByName, frames) if frames else None


def _stale_clients(current: Snapshot, step: sc.StaleView) -> DataFrame:
    spark = current.consumers.sparkSession
    if step.client_ids is not None:
        return spark.createDataFrame([(c,) for c in step.client_ids], "client_id string")
    clients = current.consumers.where(F.col("group") == step.group).select("group", "client_id").distinct()
    by_hash = Window.partitionBy("group").orderBy(F.xxhash64(F.lit(step.seed), "client_id"), "client_id")
    everyone = Window.partitionBy("group")
    return (
        clients.withColumn("_rank", F.row_number().over(by_hash))
        .withColumn("_of", F.count(F.lit(1)).over(everyone))
        # Less a hair: 10 x 0.7 is 7.000000000000001 in floating point, and must pick 7.
        .where(F.col("_rank") <= F.ceil(F.col("_of") * F.lit(step.fraction) - F.lit(1e-9)))
        .select("client_id")
    )


# client_lists columns null for a whole row where the snapshot has no data for them.
NULL_WHEN_ABSENT = ("client_configs", "client_languages")


def with_left_subscriptions(client_lists: DataFrame, scenarios: Sequence[sc.Scenario]) -> DataFrame:
    """``client_lists`` (routes.client_lists by phase) with an empty client list for each phase in
    which a (topic, group) has no client left but had one in an earlier phase of the scenario.

    The subscription outlives its consumers on the brokers: its queues still fill and nobody
    reads them, which group_metrics must show (every queue unassigned) rather than drop the
    group. Only groups a consumers_leave step names can lose every client."""
    leaving = sorted({s.group for run in scenarios for s in run.steps if isinstance(s, sc.ConsumersLeave)})
    if not leaving:
        return client_lists
    spark = client_lists.sparkSession
    key = [*PHASE, "topic", "group"]
    every_phase = spark.createDataFrame(
        [(run.name, k) for run in scenarios for k in range(run.last_phase + 1)], "scenario string, phase int"
    )
    present = client_lists.where(F.col("group").isin(leaving)).select(*key)
    since = present.groupBy("scenario", "topic", "group").agg(F.min("phase").alias("_since"))
    left = (
        since.join(F.broadcast(every_phase), "scenario")
        .where(F.col("phase") > F.col("_since"))
        .join(present, key, "left_anti")
    )
    empty = {
        f.name: F.lit(None).cast(f.dataType) if f.name in NULL_WHEN_ABSENT else F.array().cast(f.dataType)
        for f in client_lists.schema.fields
        if f.name not in key
    }
    return client_lists.unionByName(left.select(*key, *[c.alias(n) for n, c in empty.items()]))
