"""Row-level checks: rows that cannot be simulated go to rejects/ with a reason, the rest go on.

Each table is checked once; rules are listed in the order they are tried, and a row is rejected
for the first rule it breaks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rmqsim import rejects, routes
from rmqsim.rejects import blank
from rmqsim.schemas import MESSAGE_MODELS
from rmqsim.snapshot import Snapshot
from rmqsim.strategies import STRATEGIES


@dataclass(frozen=True)
class Checked:
    snapshot: Snapshot  # only rows that can be simulated
    rejects: DataFrame
    marked: tuple[DataFrame, ...] = ()  # the cached tables with their reject reason

    def unpersist(self) -> None:
        for df in self.marked:
            df.unpersist()


def _blank_rules(*names: str) -> list[tuple[Column, str]]:
    return [(blank(n), f"{n} is null or empty") for n in names]


def _queue_id_rules() -> list[tuple[Column, str]]:
    return [(F.col("queue_id").isNull(), "queue_id is null"), (F.col("queue_id") < 0, "queue_id is negative")]


MAX_QUEUES = 65535  # RocketMQ's own limit on a topic's queue count per broker


def _broken(rules: Sequence[tuple[Column, object]]) -> Column:
    """Whether a row breaks any of ``rules`` (false, never null)."""
    return F.coalesce(*[F.when(bad, True) for bad, _ in rules], F.lit(False))


def _later(df: DataFrame, key: Sequence[str], earlier: Sequence[tuple[Column, object]]) -> Column:
    """Rows after the first with the same ``key`` values. Rows breaking one of the ``earlier``
    rules rank last, so a bad row never makes a good one a duplicate; then JSON order, so the
    choice is deterministic. Where the key is the whole row its copies are identical, so any
    order keeps the same row: sorting a million queue_config rows by their JSON cost about a second."""
    if set(key) >= set(df.columns):
        return F.row_number().over(Window.partitionBy(*key).orderBy(F.lit(0))) > 1
    order = F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns]))
    return F.row_number().over(Window.partitionBy(*key).orderBy(_broken(earlier), order)) > 1


@dataclass(frozen=True)
class _Repeat:
    """A rule for repeated ``key`` values: _split makes it ``_later`` over the rules before it."""

    df: DataFrame  # the table as read: its columns give the JSON order
    key: Sequence[str]
    reason: str


def _resolved(rules: Sequence[tuple[Column, Column | str] | _Repeat]) -> list[tuple[Column, Column | str]]:
    out: list[tuple[Column, Column | str]] = []
    for rule in rules:
        out.append((_later(rule.df, rule.key, out), rule.reason) if isinstance(rule, _Repeat) else rule)
    return out


def _count_rules(column: str) -> list[tuple[Column, Column | str]]:
    value = F.col(column)
    return [
        (value < 0, f"{column} is negative"),
        (
            value > MAX_QUEUES,
            F.concat(F.lit(f"{column} "), value.cast("string"), F.lit(f" is more than {MAX_QUEUES}")),
        ),
    ]


def _known(df: DataFrame, keys: DataFrame, key: str, flag: str) -> DataFrame:
    """``df`` with ``flag`` true where its ``key`` is in ``keys`` (one row per key), else null."""
    return df.join(keys.select(key, F.lit(True).alias(flag)), key, "left")


def _split(
    df: DataFrame, *, source: str, columns: Sequence[str], rules, cache: list[DataFrame]
) -> tuple[DataFrame, DataFrame]:
    # Cached: route building, rejects/ and reconciliation/ all read the kept or rejected rows, and
    # recomputing the checks' windows and joins for each cost a dozen small Spark jobs apiece.
    marked = rejects.with_reject_reason(df, rules=_resolved(rules)).persist(StorageLevel.MEMORY_AND_DISK)
    cache.append(marked)
    return rejects.kept(marked).select(*columns), rejects.rejected(marked, source=source, columns=columns)


def message_model_problem(model: Column) -> Column:
    """Why a groups.message_model cannot run (null: CLUSTERING, as the client's default), or null."""
    return F.when(
        model.isNotNull() & ~routes.normalised(model).isin(*MESSAGE_MODELS),
        F.concat(
            F.lit("unknown message_model '"), model, F.lit(f"': expected {' or '.join(MESSAGE_MODELS)}")
        ),
    )


def strategy_problem(strategy: Column) -> Column:
    """Why a configured strategy cannot run here, or null."""
    implemented = F.lit(list(STRATEGIES)) if STRATEGIES else F.array()
    return F.when(F.array_contains(implemented, strategy), F.lit(None)).otherwise(
        F.concat(F.lit("unknown strategy '"), strategy, F.lit("'"))
    )


def check_snapshot(snapshot: Snapshot, *, configured_strategies: bool) -> Checked:
    """Split every table into rows to simulate and reject rows; later tables see only kept rows.

    The checked tables are cached until ``Checked.unpersist``."""
    cache: list[DataFrame] = []
    brokers, bad_brokers = _split(
        snapshot.brokers,
        source="brokers",
        columns=snapshot.brokers.columns,
        cache=cache,
        rules=[
            *_blank_rules("broker_name"),
            _Repeat(
                snapshot.brokers,
                ["broker_name", "broker_id"],
                "duplicate row for this broker_name and broker_id: "
                "the first good one (in JSON order) is used",
            ),
        ],
    )

    # Each aggregate below is the one route building makes of the same kept rows, so Spark
    # computes it once (a reused exchange) for both.
    tq_cols = snapshot.topic_queues.columns
    topic_queues, bad_tq = _split(
        _known(snapshot.topic_queues, routes.broker_facts(brokers), "broker_name", "_broker_known"),
        source="topic_queues",
        columns=tq_cols,
        cache=cache,
        rules=[
            *_blank_rules("topic", "broker_name"),
            (F.col("read_queue_nums").isNull(), "read_queue_nums is null"),
            *_count_rules("read_queue_nums"),
            *_count_rules("write_queue_nums"),
            (F.col("perm").isNull(), "perm is null"),
            (
                (F.col("perm") < 0) | (F.col("perm") > 15),
                F.concat(F.lit("perm "), F.col("perm").cast("string"), F.lit(" is outside 0 to 15")),
            ),
            (
                F.col("_broker_known").isNull(),
                F.concat(F.lit("broker_name '"), F.col("broker_name"), F.lit("' is not in brokers")),
            ),
            _Repeat(snapshot.topic_queues, tq_cols, "duplicate row: an identical row is used"),
        ],
    )

    group_cols = snapshot.groups.columns
    # Why the group cannot be simulated as this row describes it, or null: a row with a problem
    # ranks after the good ones, so it never makes a good row a duplicate.
    problem = F.coalesce(
        message_model_problem(F.col("message_model")),
        strategy_problem(routes.normalised_strategy())
        if configured_strategies
        else F.lit(None).cast("string"),
    )
    later = _later(snapshot.groups, ["group"], [(problem.isNotNull(), "")])
    ranked = snapshot.groups.withColumn("_first", ~later & ~blank("group")).withColumn("_problem", problem)
    ranked = _known(ranked, snapshot.consumers.select("group").distinct(), "group", "_has_clients")
    group_rules: list[tuple[Column, Column | str]] = [
        *_blank_rules("group"),
        (~F.col("_first"), "duplicate row for this group: the first good one (in JSON order) is used"),
        (F.col("_has_clients").isNull(), "group has no consumers in the snapshot"),
        (F.col("_problem").isNotNull(), F.col("_problem")),
    ]
    groups, bad_groups = _split(ranked, source="groups", columns=group_cols, rules=group_rules, cache=cache)

    c_cols = snapshot.consumers.columns
    consumer_rules: list[tuple[Column, Column | str]] = [
        *_blank_rules("group", "topic", "client_id"),
        (
            F.col("_topic_known").isNull(),
            F.concat(F.lit("topic '"), F.col("topic"), F.lit("' has no route (no topic_queues row)")),
        ),
    ]
    # Every topic with a kept topic_queues row has a route (perhaps an empty one).
    known_topics = topic_queues.select("topic").distinct()
    consumers = _known(snapshot.consumers, known_topics, "topic", "_topic_known")
    # A group whose row cannot run (its configured strategy, its message model) is not simulated:
    # its clients say why.
    group_problems = (
        ranked.where("_first")
        .select("group", F.col("_problem").alias("_group_problem"))
        .where(F.col("_group_problem").isNotNull())
    )
    consumers = consumers.join(group_problems, "group", "left")
    consumer_rules.append(
        (
            F.col("_group_problem").isNotNull(),
            F.concat(
                F.lit("group '"), F.col("group"), F.lit("' is not simulated: "), F.col("_group_problem")
            ),
        )
    )
    consumers, bad_consumers = _split(
        consumers, source="consumers", columns=c_cols, rules=consumer_rules, cache=cache
    )

    parts = [bad_brokers, bad_tq, bad_groups, bad_consumers]

    def optional(df: DataFrame | None, source: str, *keys: str, rules=(), columns=None) -> DataFrame | None:
        """An optional per-queue table: keys not blank, a valid queue_id, then ``rules``."""
        if df is None:
            return None
        kept, bad = _split(
            df,
            source=source,
            columns=columns or df.columns,
            rules=[*_blank_rules(*keys), *_queue_id_rules(), *rules],
            cache=cache,
        )
        parts.append(bad)
        return kept

    queue_config = optional(
        snapshot.queue_config,
        "queue_config",
        "group",
        "client_id",
        "topic",
        "broker_name",
        rules=[
            _Repeat(
                snapshot.queue_config,
                snapshot.queue_config.columns,
                "duplicate row: an identical row is used",
            )
        ]
        if snapshot.queue_config is not None
        else [],
    )
    offsets = None
    if snapshot.offsets is not None:
        # A queue exists below the larger of its read and write counts (writes may outnumber reads).
        queues = topic_queues.groupBy("topic", "broker_name").agg(
            F.max(F.greatest("read_queue_nums", F.coalesce("write_queue_nums", F.lit(0)))).alias("_queues")
        )
        offsets = optional(
            snapshot.offsets.join(queues, ["topic", "broker_name"], "left"),
            "offsets",
            "group",
            "topic",
            "broker_name",
            rules=[
                (F.col("broker_offset").isNull(), "broker_offset is null"),
                (F.col("consumer_offset").isNull(), "consumer_offset is null"),
                (
                    F.coalesce(F.col("queue_id") >= F.col("_queues"), F.lit(True)),
                    F.concat(
                        F.lit("no such queue in topic_queues: topic '"),
                        F.col("topic"),
                        F.lit("', broker_name '"),
                        F.col("broker_name"),
                        F.lit("', queue_id "),
                        F.col("queue_id").cast("string"),
                    ),
                ),
                _Repeat(
                    snapshot.offsets,
                    ["group", "topic", "broker_name", "queue_id"],
                    "duplicate row for this queue: the first good one (in JSON order) is used",
                ),
            ],
            columns=snapshot.offsets.columns,
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
    return Checked(checked, all_rejects, tuple(cache))


TABLES = ("brokers", "topic_queues", "consumers", "groups", "offsets", "queue_config")


def reconciliation(snapshot: Snapshot, used_tables: Snapshot, rejects: DataFrame) -> DataFrame:
    """One row per table read: rows read (``snapshot``), rows used (``used_tables``) and rows
    rejected (``rejects``, by source), each counted on its own: read = used + rejected is what
    this shows, not what it assumes. One aggregation over a union: a count per table and kind
    would be a Spark job each."""
    present = [t for t in TABLES if getattr(snapshot, t) is not None]

    def tally(df: DataFrame, table: Column, kind: str) -> DataFrame:
        return df.select(table.alias("table"), *[F.lit(int(k == kind)).alias(k) for k in KINDS])

    parts = [tally(getattr(snapshot, t), F.lit(t), "rows_read") for t in present]
    parts += [tally(getattr(used_tables, t), F.lit(t), "rows_used") for t in present]
    parts.append(tally(rejects.where(F.col("source").isin(present)), F.col("source"), "rows_rejected"))
    # A row per table even when it is empty.
    parts.append(rejects.sparkSession.createDataFrame([(t, 0, 0, 0) for t in present], parts[0].schema))
    return (
        reduce(DataFrame.unionByName, parts)
        .groupBy("table")
        .agg(*[F.sum(k).cast("long").alias(k) for k in KINDS])
        .orderBy(F.array_position(F.array(*[F.lit(t) for t in TABLES]), F.col("table")))
    )


KINDS = ("rows_read", "rows_used", "rows_rejected")
