"""The simulation job: snapshot in, assignments, metrics and rejects out.

The tables it writes are docs/CONTRACT.md, section 4; its command, section 5.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from rmqsim import metrics, rollups, schemas, session
from rmqsim.config import SimulateConfig
from rmqsim.output import RunOutput
from rmqsim.scenarios import apply, names, parse
from rmqsim.snapshot import checks, reconcile
from rmqsim.snapshot.load import Snapshot, load_snapshot
from rmqsim.stage import routes
from rmqsim.stage import spark as stage
from rmqsim.stage.task_tables import TaskTables

log = logging.getLogger(__name__)

BASELINE = "baseline"
PARTITIONED_BY = schemas.PARTITIONED_BY
# The groups columns that say who balances a group (docs/CONTRACT.md, section 2b).
BALANCING_COLUMNS = ("rebalance", "request_mode", "pop_share_queue_num", "consume_orderly")


@dataclass(frozen=True)
class RunResult:
    out: str
    summary: list[dict]  # per (scenario, phase, strategy)
    comparison: list[dict] = field(default_factory=list)  # per (scenario, strategy), with scenarios
    recommendation: list[dict] = field(default_factory=list)  # per group, with scenarios
    exposure: list[dict] = field(default_factory=list)  # per (scenario, strategy), with stale views
    reconciliation: list[dict] = field(default_factory=list)  # per table: read, used, rejected


def allocation_partitions(spark: SparkSession, config: SimulateConfig) -> int:
    if config.partitions:
        return config.partitions
    if session.is_remote(spark):  # no SparkContext to ask for the cores
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    return max(2, 2 * spark.sparkContext.defaultParallelism)


def load_scenarios(config: SimulateConfig) -> tuple[parse.Scenario, ...]:
    """The scenarios to run: the file's, or the snapshot alone as scenario ``baseline``."""
    if not config.scenarios:
        return (parse.Scenario(BASELINE),)
    return parse.load(config.scenarios)


@dataclass(frozen=True)
class Staged:
    group_routes: pa.Table  # every phase of every scenario: the allocation stage's input
    rejects: pa.Table  # the snapshot's reject rows (schemas.REJECTS)
    with_movement: bool  # a scenario has a second phase
    with_stale_views: bool
    loaded: Snapshot  # as read
    checked: Snapshot  # the rows that pass the checks
    absent: tuple[str, ...] = ()  # optional route columns null on every row of this run


def snapshot_read(spark: SparkSession, config: SimulateConfig) -> Snapshot:
    """The snapshot's tables that this run reads."""
    snapshot = load_snapshot(spark, config.snapshot)
    if config.strategies is not None and "CONFIG" not in config.strategies:
        # CONFIG lists are as long as the assignments: a run without CONFIG neither reads nor checks them.
        snapshot = replace(snapshot, queue_config=None)
    return snapshot


def build_group_routes(spark: SparkSession, config: SimulateConfig) -> Staged:
    """Load and check the snapshot, apply the scenarios' steps, build each (topic, group)'s route:
    in this process, with pyarrow (a fleet's metadata is small, and every Spark job costs a fixed
    overhead whatever its size)."""
    runs = load_scenarios(config)
    snapshot = snapshot_read(spark, config)
    checked = checks.check_snapshot(snapshot, configured_strategies=config.strategies is None)
    valid = checked.snapshot
    wanted = names.referenced(runs)
    names.check_names(runs, names.existing_names(valid, wanted, names.counted_groups(runs)))
    staged = apply.phased(valid, runs)
    # Optional route columns: shipped to Python only where the snapshot or a step gives them.
    steps = [step for run in runs for step in run.steps]
    languages = "consumers.language" in snapshot.given or any(
        isinstance(s, parse.ConsumersJoin) and s.language is not None for s in steps
    )
    balancing = any(f"groups.{c}" in snapshot.given for c in BALANCING_COLUMNS) or any(
        isinstance(s, parse.SetRebalance) for s in steps
    )
    by = apply.PHASE
    topic_routes = routes.topic_routes(staged.topic_queues, brokers=staged.brokers, by=by)
    clients = routes.client_lists(
        staged.consumers, queue_config=staged.queue_config, languages=languages, by=by
    )
    clients = apply.with_left_subscriptions(clients, runs)
    clients = routes.with_strategies(
        clients, groups=staged.groups, strategies=config.strategies, balancing=balancing, by=by
    )
    stale_views = apply.stale_views(valid, runs)
    group_routes = routes.group_routes(
        clients,
        routes=topic_routes,
        last_phase={s.name: s.last_phase for s in runs},
        offsets=staged.offsets,
        stale_views=stale_views,
        masters=balancing,
    )
    absent = {
        "backlogs": staged.offsets is None,
        "client_configs": staged.queue_config is None,
        "stale_clients": stale_views is None,
        "view_phase": stale_views is None,
        "client_languages": not languages,
        "balancing": not balancing,
        "broker_masters": not balancing,
    }
    return Staged(
        group_routes,
        checked.rejects,
        with_movement=any(s.steps for s in runs),
        with_stale_views=any(s.stale_views() for s in runs),
        loaded=snapshot,
        checked=valid,
        absent=tuple(c for c, none in absent.items() if none),
    )


def write_table(output: RunOutput, df: DataFrame, name: str, *partition_by: str) -> None:
    """One output table, written by a Spark job named after it (the Spark UI tells them apart)."""
    with session.job_description(df.sparkSession, f"rmqsim: {name}"):
        df.write.mode("overwrite").partitionBy(*partition_by).parquet(output.table(name))


def read_back(
    output: RunOutput, spark: SparkSession, name: str, schema: StructType, columns: Sequence[str] = ()
) -> pa.Table:
    """``columns`` (all: none given) of a table this run wrote and partitioned by PARTITIONED_BY,
    as Arrow with ``schema``'s types: read by this process where the output is on this machine,
    else by Spark."""
    columns = list(columns or schema.fieldNames())
    types = to_arrow_schema(schema)
    if output.local:
        return output.read_arrow(name, types, columns, PARTITIONED_BY)
    read = spark.read.schema(schema).parquet(output.table(name)).select(*columns).toArrow()
    return read.cast(pa.schema([types.field(c) for c in columns]))


def write_task_tables(output: RunOutput, routes: DataFrame, *, movement: bool) -> None:
    """The allocation stage's tables, each task writing its own (stage.task_tables): one Spark
    job, where the output and the executors are on this machine."""
    tables = TaskTables.empty(output.staging, movement=movement)
    with session.job_description(routes.sparkSession, f"rmqsim: {', '.join(tables.tables)}"):
        stage.task_tables(routes, tables).write.format("noop").mode("overwrite").save()
    tables.complete()


def write_client_tables(output: RunOutput, client_queues: DataFrame) -> None:
    """The client rows' tables, written by Spark from the client rows, cached for the three writes.
    (Kept deserialized: serializing the cached owned lists cost a third of the Python pass.)"""
    client_queues = client_queues.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    try:
        write_table(output, metrics.assignments(client_queues), "assignments", *PARTITIONED_BY)
        write_table(output, metrics.group_metrics(client_queues), "group_metrics", *PARTITIONED_BY)
        write_table(output, metrics.consumer_load(client_queues), "consumer_load", *PARTITIONED_BY)
    finally:
        client_queues.unpersist()


def write_rollup(
    output: RunOutput,
    spark: SparkSession,
    table: pa.Table,
    name: str,
    schema: StructType,
    partition_by: Sequence[str] = (),
) -> None:
    """A table the driver holds as Arrow, written as one file (per partition) in its row order: by
    this process where the output is on this machine (a Spark job costs more than such a table),
    else by Spark. Either way its columns have ``schema``'s types."""
    table = table.select(schema.fieldNames())
    if output.local:
        output.write_arrow(table.cast(to_arrow_schema(schema)), name, partition_by)
    else:
        write_table(output, spark.createDataFrame(table, schema).coalesce(1), name, *partition_by)


def run(spark: SparkSession, config: SimulateConfig) -> RunResult:
    log.info("simulate: %s", config.describe())
    output = RunOutput(config.out, mode=config.mode, remote=session.is_remote(spark))
    built = build_group_routes(spark, config)
    rejects, with_movement, with_stale_views = built.rejects, built.with_movement, built.with_stale_views
    partitions = allocation_partitions(spark, config)
    group_routes = spark.createDataFrame(built.group_routes)  # its Arrow types are GROUP_ROUTES'
    staged = stage.partition_by_group(group_routes, partitions=partitions, absent=built.absent)
    # Partitioned and kept on the executors now: the Python passes and the allocation rejects
    # all read them, and the Spark UI tells this job from the first write.
    with session.job_description(spark, "rmqsim: hand the routes to Spark"):
        staged = session.checkpoint(staged)
    tasks = config.partitions or stage.python_tasks(built.group_routes.num_rows, partitions)
    routes_in = staged if tasks >= partitions else staged.coalesce(tasks)
    try:
        # One Python pass computes each client's queues, its load and its group's metrics: the
        # client rows, of which assignments, group_metrics and consumer_load are an explode and
        # two row filters; and movement. Every later table is computed from these as written.
        if output.local and session.executors_here(spark):
            write_task_tables(output, routes_in, movement=with_movement)
        else:
            write_client_tables(output, stage.client_queues(routes_in))
            if with_movement:
                # A second Python pass over the kept routes: cheaper than shuffling per-queue owners.
                write_table(output, stage.movement(routes_in), "movement", *PARTITIONED_BY)
        group_metrics = read_back(output, spark, "group_metrics", schemas.GROUP_METRICS)
        consumer_load = read_back(
            output, spark, "consumer_load", schemas.CONSUMER_LOAD, rollups.CONSUMER_LOAD_COLUMNS
        )
        summary = rollups.summary(group_metrics, consumer_load)
        write_rollup(output, spark, summary, "summary", schemas.SUMMARY)
        comparison: list[dict] = []
        advised: list[dict] = []
        exposed: list[dict] = []
        if with_movement:
            moves = read_back(output, spark, "movement", schemas.MOVEMENT, rollups.MOVEMENT_COLUMNS)
            compared = rollups.comparison(summary, moves)
            write_rollup(output, spark, compared, "comparison", schemas.COMPARISON)
            advice = rollups.recommendation(group_metrics, rollups.group_load(consumer_load), moves)
            write_rollup(output, spark, advice, "recommendation", schemas.RECOMMENDATION)
            advised, comparison = advice.to_pylist(), compared.to_pylist()
            if with_stale_views:
                brain = rollups.split_brain(group_metrics)
                write_rollup(output, spark, brain, "split_brain", schemas.SPLIT_BRAIN, PARTITIONED_BY)
                risk = rollups.exposure(brain)
                write_rollup(output, spark, risk, "exposure", schemas.EXPOSURE)
                exposed = risk.to_pylist()
        not_simulated = rollups.allocation_rejects(built.group_routes, group_metrics)
        every_reject = pa.concat_tables([rejects, not_simulated.cast(rejects.schema)])
        write_rollup(output, spark, every_reject, "rejects", schemas.REJECTS)
        counted = reconcile.reconciliation(built.loaded, built.checked, rejects)
        write_rollup(output, spark, counted, "reconciliation", schemas.RECONCILIATION)
        output.publish()
    except BaseException:
        output.abandon()
        raise
    finally:
        session.release(staged)
    log.info("simulate: wrote %s", output.out)
    return RunResult(
        output.out,
        summary.to_pylist(),
        sorted(comparison, key=lambda r: (r["scenario"], r["strategy"])),
        sorted(advised, key=lambda r: r["group"]),
        exposed,
        sorted(counted.to_pylist(), key=lambda r: reconcile.TABLES.index(r["table"])),
    )
