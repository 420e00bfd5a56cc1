"""Row-level checks: rows that cannot be simulated go to rejects/ with a reason, the rest go on.

Each table is checked once; rules are listed in the order they are tried, and a row is rejected
for the first rule it breaks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rmqsim import rejects, routes
from rmqsim.rejects import blank
from rmqsim.snapshot import Snapshot
from rmqsim.strategies import STRATEGIES


@dataclass(frozen=True)
class Checked:
    snapshot: Snapshot  # only rows that can be simulated
    rejects: DataFrame


def _blank_rules(*names: str) -> list[tuple[Column, str]]:
    return [(blank(n), f"{n} is null or empty") for n in names]


def _queue_id_rules() -> list[tuple[Column, str]]:
    return [(F.col("queue_id").isNull(), "queue_id is null"), (F.col("queue_id") < 0, "queue_id is negative")]


def _known(df: DataFrame, keys: DataFrame, key: str, flag: str) -> DataFrame:
    """``df`` with ``flag`` true where its ``key`` is in ``keys`` (one row per key), else null."""
    return df.join(keys.select(key, F.lit(True).alias(flag)), key, "left")


def _split(df: DataFrame, *, source: str, columns: Sequence[str], rules) -> tuple[DataFrame, DataFrame]:
    marked = rejects.with_reject_reason(df, rules=rules)
    return rejects.kept(marked).select(*columns), rejects.rejected(marked, source=source, columns=columns)


def strategy_problem(strategy: Column) -> Column:
    """Why a configured strategy cannot run here, or null."""
    implemented = F.lit(list(STRATEGIES)) if STRATEGIES else F.array()
    return F.when(F.array_contains(implemented, strategy), F.lit(None)).otherwise(
        F.concat(F.lit("unknown strategy '"), strategy, F.lit("'"))
    )


def check_snapshot(snapshot: Snapshot, *, configured_strategies: bool) -> Checked:
    """Split every table into rows to simulate and reject rows; later tables see only kept rows."""
    brokers, bad_brokers = _split(
        snapshot.brokers,
        source="brokers",
        columns=snapshot.brokers.columns,
        rules=_blank_rules("broker_name"),
    )

    # Each aggregate below is the one route building makes of the same kept rows, so Spark
    # computes it once (a reused exchange) for both.
    tq_cols = snapshot.topic_queues.columns
    topic_queues, bad_tq = _split(
        _known(snapshot.topic_queues, routes.broker_facts(brokers), "broker_name", "_broker_known"),
        source="topic_queues",
        columns=tq_cols,
        rules=[
            *_blank_rules("topic", "broker_name"),
            (F.col("read_queue_nums").isNull(), "read_queue_nums is null"),
            (F.col("read_queue_nums") < 0, "read_queue_nums is negative"),
            (F.col("perm").isNull(), "perm is null"),
            (
                F.col("_broker_known").isNull(),
                F.concat(F.lit("broker_name '"), F.col("broker_name"), F.lit("' is not in brokers")),
            ),
        ],
    )

    group_cols = snapshot.groups.columns
    first_row = F.row_number().over(Window.partitionBy("group").orderBy(F.to_json(F.struct(*group_cols))))
    ranked = snapshot.groups.withColumn("_first", (first_row == 1) & ~blank("group"))
    group_rules: list[tuple[Column, Column | str]] = [
        *_blank_rules("group"),
        (~F.col("_first"), "duplicate row for this group: the first one (in JSON order) is used"),
    ]
    if configured_strategies:
        group_rules.append(
            (
                strategy_problem(routes.normalised_strategy()).isNotNull(),
                strategy_problem(routes.normalised_strategy()),
            )
        )
    groups, bad_groups = _split(ranked, source="groups", columns=group_cols, rules=group_rules)

    c_cols = snapshot.consumers.columns
    consumer_rules: list[tuple[Column, Column | str]] = [
        *_blank_rules("group", "topic", "client_id"),
        (
            F.col("_topic_known").isNull(),
            F.concat(F.lit("topic '"), F.col("topic"), F.lit("' has no route (no topic_queues row)")),
        ),
    ]
    known_topics = routes.topic_routes(topic_queues, brokers=brokers)
    consumers = _known(snapshot.consumers, known_topics, "topic", "_topic_known")
    if configured_strategies:
        # A group whose configured strategy cannot run is not simulated: its clients say why.
        problem = (
            ranked.where("_first")
            .select("group", strategy_problem(routes.normalised_strategy()).alias("_group_problem"))
            .where(F.col("_group_problem").isNotNull())
        )
        consumers = consumers.join(problem, "group", "left")
        consumer_rules.append(
            (
                F.col("_group_problem").isNotNull(),
                F.concat(
                    F.lit("group '"), F.col("group"), F.lit("' is not simulated: "), F.col("_group_problem")
                ),
            )
        )
    consumers, bad_consumers = _split(consumers, source="consumers", columns=c_cols, rules=consumer_rules)

    parts = [bad_brokers, bad_tq, bad_groups, bad_consumers]

    def optional(df: DataFrame | None, source: str, *keys: str, rules=()) -> DataFrame | None:
        """An optional per-queue table: keys not blank, a valid queue_id, then ``rules``."""
        if df is None:
            return None
        kept, bad = _split(
            df, source=source, columns=df.columns, rules=[*_blank_rules(*keys), *_queue_id_rules(), *rules]
        )
        parts.append(bad)
        return kept

    queue_config = optional(
        snapshot.queue_config, "queue_config", "group", "client_id", "topic", "broker_name"
    )
    offsets = optional(
        snapshot.offsets,
        "offsets",
        "group",
        "topic",
        "broker_name",
        rules=[
            (F.col("broker_offset").isNull(), "broker_offset is null"),
            (F.col("consumer_offset").isNull(), "consumer_offset is null"),
        ],
    )
    all_rejects = reduce(DataFrame.unionByName, parts)
    checked = replace(
        snapshot,
        brokers=brokers,
        topic_queues=topic_queues,
        consumers=consumers,
        groups=groups,
        queue_config=queue_config,
        offsets=offsets,
    )
    return Checked(checked, all_rejects)
