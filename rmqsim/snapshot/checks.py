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

from rmqsim import session
from rmqsim.schemas import MESSAGE_MODELS, REBALANCES, REQUEST_MODES
from rmqsim.snapshot import rejects
from rmqsim.snapshot.load import Snapshot
from rmqsim.snapshot.rejects import blank
from rmqsim.stage import routes
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


def _later(
    df: DataFrame,
    key: Sequence[str],
    earlier: Sequence[tuple[Column, object]],
    prefer: Sequence[Column] = (),
) -> Column:
    """Rows after the first with the same ``key`` values. Rows breaking one of the ``earlier``
    rules rank last, so a bad row never makes a good one a duplicate; then ``prefer`` (sort
    keys); then JSON order, so the choice is deterministic. Where the key is the whole row its
    copies are identical, so any order keeps the same row: sorting a million queue_config rows by
    their JSON cost about a second."""
    if set(key) >= set(df.columns):
        return F.row_number().over(Window.partitionBy(*key).orderBy(F.lit(0))) > 1
    order = F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns]))
    return F.row_number().over(Window.partitionBy(*key).orderBy(_broken(earlier), *prefer, order)) > 1


@dataclass(frozen=True)
class _Repeat:
    """A rule for repeated ``key`` values: _split makes it ``_later`` over the rules before it."""

    df: DataFrame  # the table as read: its columns give the JSON order
    key: Sequence[str]
    reason: str | Column
    prefer: Sequence[Column] = ()  # which of the repeated rows is kept, before JSON order


def _resolved(rules: Sequence[tuple[Column, Column | str] | _Repeat]) -> list[tuple[Column, Column | str]]:
    out: list[tuple[Column, Column | str]] = []
    for rule in rules:
        if isinstance(rule, _Repeat):
            rule = (_later(rule.df, rule.key, out, rule.prefer), rule.reason)
        out.append(rule)
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


def _split(df: DataFrame, *, source: str, columns: Sequence[str], rules) -> Split:
    # Cached: route building, rejects/ and reconciliation/ all read the kept or rejected rows, and
    # recomputing the checks' windows and joins for each cost a dozen small Spark jobs apiece.
    marked = session.keep(
        rejects.with_reject_reason(df, rules=_resolved(rules)), StorageLevel.MEMORY_AND_DISK
    )
    return Split(
        rejects.kept(marked).select(*columns),
        rejects.rejected(marked, source=source, columns=columns),
        marked,
    )


def message_model_problem(model: Column) -> Column:
    """Why a groups.message_model cannot run (null: CLUSTERING, as the client's default), or null."""
    return _unknown_value("message_model", model, MESSAGE_MODELS)


def _unknown_value(name: str, value: Column, allowed: Sequence[str], *, lower: bool = False) -> Column:
    """Why a groups column's value is none of ``allowed`` (upper case; compared trimmed, in any
    case; null is the default). ``lower``: the contract spells the values in lower case."""
    shown = [a.lower() for a in allowed] if lower else list(allowed)
    expected = ", ".join(shown[:-1]) + " or " + shown[-1]
    return F.when(
        value.isNotNull() & ~routes.normalised(value).isin(*allowed),
        F.concat(F.lit(f"unknown {name} '"), value, F.lit(f"': expected {expected}")),
    )


def balancing_problem() -> Column:
    """Why a group's rebalance or request_mode cannot run, or null."""
    rebalance = F.col("rebalance")
    return F.coalesce(
        _unknown_value("rebalance", rebalance, REBALANCES, lower=True),
        _unknown_value("request_mode", F.col("request_mode"), REQUEST_MODES),
    )


def strategy_problem(strategy: Column) -> Column:
    """Why a configured strategy cannot run here, or null."""
    implemented = F.lit(list(STRATEGIES)) if STRATEGIES else F.array()
    return F.when(F.array_contains(implemented, strategy), F.lit(None)).otherwise(
        F.concat(F.lit("unknown strategy '"), strategy, F.lit("'"))
    )


@dataclass(frozen=True)
class Split:
    """A table split by its rules: the rows kept, the reject rows, and the cached table with each
    row's reason (null when kept) that both are read from."""

    kept: DataFrame
    rejected: DataFrame
    marked: DataFrame


def check_snapshot(snapshot: Snapshot, *, configured_strategies: bool) -> Checked:
    """Split every table into rows to simulate and reject rows; later tables see only kept rows.

    The checked tables are cached until ``Checked.unpersist``."""
    # One shuffle of topic_queues, by topic: both its repeat windows (the whole row; topic and
    # broker_name) contain that key, so neither shuffles it again. (Each shuffle is a Spark job.)
    by_topic = snapshot.topic_queues.repartition("topic")
    brokers = check_brokers(snapshot.brokers)
    topic_queues = check_topic_queues(by_topic, brokers=brokers.kept)
    groups, group_problems = check_groups(
        snapshot.groups, consumers=snapshot.consumers, configured_strategies=configured_strategies
    )
    consumers = check_consumers(
        snapshot.consumers, topic_queues=topic_queues.kept, group_problems=group_problems
    )
    splits = [brokers, topic_queues, groups, consumers]
    queue_config = offsets = None
    if snapshot.queue_config is not None:
        queue_config = check_queue_config(snapshot.queue_config)
        splits.append(queue_config)
    if snapshot.offsets is not None:
        offsets = check_offsets(snapshot.offsets, topic_queues=topic_queues.kept)
        splits.append(offsets)
    checked = replace(
        snapshot,
        brokers=brokers.kept,
        topic_queues=topic_queues.kept,
        consumers=consumers.kept,
        groups=groups.kept,
        queue_config=queue_config.kept if queue_config else None,
        offsets=offsets.kept if offsets else None,
    )
    all_rejects = reduce(DataFrame.unionByName, [s.rejected for s in splits])
    return Checked(checked, all_rejects, tuple(s.marked for s in splits))


def check_brokers(brokers: DataFrame) -> Split:
    return _split(
        brokers,
        source="brokers",
        columns=brokers.columns,
        rules=[
            *_blank_rules("broker_name"),
            _Repeat(
                brokers,
                ["broker_name", "broker_id"],
                "duplicate row for this broker_name and broker_id: "
                "the first good one (in JSON order) is used",
            ),
        ],
    )


def check_topic_queues(topic_queues: DataFrame, *, brokers: DataFrame) -> Split:
    """``brokers``: the kept broker rows. The aggregate of them joined here is the one route
    building makes of the same rows, so Spark computes it once (a reused exchange) for both."""
    columns = topic_queues.columns
    return _split(
        _known(topic_queues, routes.broker_facts(brokers), "broker_name", "_broker_known"),
        source="topic_queues",
        columns=columns,
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
            _Repeat(topic_queues, columns, "duplicate row: an identical row is used"),
            # A NameServer keeps one QueueData per broker, so two rows for one broker are a broken
            # capture. The client puts the queues of every readable QueueData in one set: the
            # union, which is the readable row with the most read queues, the one kept.
            _Repeat(
                topic_queues,
                ["topic", "broker_name"],
                F.concat(
                    F.lit(
                        "another row for this topic and broker_name (a NameServer keeps one QueueData "
                        "per broker): the client reads the union of their queues, the readable row "
                        "with the most read queues, which is used; this one has "
                    ),
                    F.col("read_queue_nums").cast("string"),
                    F.lit(" read queues and perm "),
                    F.col("perm").cast("string"),
                ),
                prefer=[
                    F.desc(
                        (F.col("perm").bitwiseAND(routes.PERM_READ) != 0) & (F.col("read_queue_nums") > 0)
                    ),
                    F.desc("read_queue_nums"),
                ],
            ),
        ],
    )


def check_groups(
    groups: DataFrame, *, consumers: DataFrame, configured_strategies: bool
) -> tuple[Split, DataFrame]:
    """The groups split, and (group, _group_problem) for each group whose first good row cannot
    run (its message model, or with configured strategies its strategy): its consumers go too."""
    # Why the group cannot be simulated as this row describes it, or null: a row with a problem
    # ranks after the good ones, so it never makes a good row a duplicate.
    problem = F.coalesce(
        message_model_problem(F.col("message_model")),
        balancing_problem(),
        strategy_problem(routes.normalised_strategy())
        if configured_strategies
        else F.lit(None).cast("string"),
    )
    later = _later(groups, ["group"], [(problem.isNotNull(), "")])
    ranked = groups.withColumn("_first", ~later & ~blank("group")).withColumn("_problem", problem)
    ranked = _known(ranked, consumers.select("group").distinct(), "group", "_has_clients")
    rules: list[tuple[Column, Column | str]] = [
        *_blank_rules("group"),
        (~F.col("_first"), "duplicate row for this group: the first good one (in JSON order) is used"),
        (F.col("_has_clients").isNull(), "group has no consumers in the snapshot"),
        (F.col("_problem").isNotNull(), F.col("_problem")),
    ]
    problems = (
        ranked.where("_first")
        .select("group", F.col("_problem").alias("_group_problem"))
        .where(F.col("_group_problem").isNotNull())
    )
    return _split(ranked, source="groups", columns=groups.columns, rules=rules), problems


def check_consumers(consumers: DataFrame, *, topic_queues: DataFrame, group_problems: DataFrame) -> Split:
    """``topic_queues``: the kept rows (every topic with one has a route, perhaps an empty one)."""
    known = _known(consumers, topic_queues.select("topic").distinct(), "topic", "_topic_known")
    return _split(
        known.join(group_problems, "group", "left"),
        source="consumers",
        columns=consumers.columns,
        rules=[
            *_blank_rules("group", "topic", "client_id"),
            (
                F.col("_topic_known").isNull(),
                F.concat(F.lit("topic '"), F.col("topic"), F.lit("' has no route (no topic_queues row)")),
            ),
            (
                F.col("_group_problem").isNotNull(),
                F.concat(
                    F.lit("group '"), F.col("group"), F.lit("' is not simulated: "), F.col("_group_problem")
                ),
            ),
        ],
    )


def _per_queue(df: DataFrame, source: str, keys: Sequence[str], rules: list, columns: Sequence[str]) -> Split:
    """An optional per-queue table: ``keys`` not blank, a valid queue_id, then ``rules``."""
    return _split(
        df, source=source, columns=columns, rules=[*_blank_rules(*keys), *_queue_id_rules(), *rules]
    )


def check_queue_config(queue_config: DataFrame) -> Split:
    columns = queue_config.columns
    return _per_queue(
        queue_config,
        "queue_config",
        ["group", "client_id", "topic", "broker_name"],
        [_Repeat(queue_config, columns, "duplicate row: an identical row is used")],
        columns,
    )


def check_offsets(offsets: DataFrame, *, topic_queues: DataFrame) -> Split:
    # A queue exists below the larger of its read and write counts (writes may outnumber reads).
    queues = topic_queues.groupBy("topic", "broker_name").agg(
        F.max(F.greatest("read_queue_nums", F.coalesce("write_queue_nums", F.lit(0)))).alias("_queues")
    )
    return _per_queue(
        offsets.join(queues, ["topic", "broker_name"], "left"),
        "offsets",
        ["group", "topic", "broker_name"],
        [
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
                offsets,
                ["group", "topic", "broker_name", "queue_id"],
                "duplicate row for this queue: the first good one (in JSON order) is used",
            ),
        ],
        offsets.columns,
    )
