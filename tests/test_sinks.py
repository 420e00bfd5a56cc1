"""The client rows' tables written by the Python tasks (stage.task_tables) against the same tables
written by Spark (simulate.write_client_tables): what a local output and a remote one hold."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from rmqsim import simulate
from rmqsim.config import SimulateConfig, sample_scenarios, sample_snapshot
from rmqsim.output import RunOutput, partition_directory
from rmqsim.stage import spark as stage
from rmqsim.stage.client_queues import client_queue_batches
from rmqsim.stage.task_tables import CLIENT_TABLES, MOVEMENT, TaskTables
from tests.builders import route, route_batch
from tests.processes import same_tables


def _routes(spark, strategies: tuple[str, ...]):
    config = SimulateConfig(
        snapshot=str(sample_snapshot()),
        out="unused",
        strategies=strategies,
        scenarios=str(sample_scenarios()),
    )
    built = simulate.build_group_routes(spark, config)
    routes = spark.createDataFrame(built.group_routes)
    return stage.partition_by_group(routes, partitions=3, absent=built.absent)


def test_the_tasks_write_the_tables_spark_writes(spark, tmp_path) -> None:
    """The sample's scenarios with five strategies, over three tasks: the same schema and rows
    either way (bench/compare_runs.py compares them as multisets)."""
    routes = _routes(spark, ("AVG", "CONSISTENT_HASH", "MACHINE_ROOM", "CONFIG", "STICKY"))
    tables = TaskTables.empty(str(tmp_path / "tasks"), movement=True)
    stage.task_tables(routes, tables).write.format("noop").mode("overwrite").save()
    tables.complete()
    by_spark = RunOutput(str(tmp_path / "spark"), remote=True)  # written in place, by Spark
    simulate.write_client_tables(by_spark, stage.client_queues(routes))
    simulate.write_table(by_spark, stage.movement(routes), MOVEMENT, "scenario", "strategy")
    assert sorted(same_tables(tmp_path / "spark", tmp_path / "tasks")) == sorted([*CLIENT_TABLES, MOVEMENT])
    assert spark.read.parquet(str(tmp_path / "tasks" / MOVEMENT)).where("moved > 0").count() > 0
    for table in tables.tables:
        assert (tmp_path / "tasks" / table / "_SUCCESS").exists()
    # Three tasks, each with one file in each (scenario, strategy) directory it has rows for.
    written = sorted(
        p.name for p in (tmp_path / "tasks" / "assignments").glob("scenario=broker-b-restart/strategy=AVG/*")
    )
    assert written == [f"part-{t:05d}.snappy.parquet" for t in range(3)]


def test_a_part_file_holds_plain_strings_and_the_tables_types(tmp_path) -> None:
    """The assignments' repeated strings are written dictionary-encoded; a reader must still see
    strings, and the contract's int32 phase and queue_id."""
    rows = route_batch([route(brokers={"b": 3}, clients=["c1", "c2"])])
    tables = TaskTables.empty(str(tmp_path), movement=False)
    with tables.task(0, 0) as files:
        for batch in client_queue_batches(rows):
            files.write_client_rows(batch)
    part = tmp_path / "assignments" / "scenario=s" / "strategy=AVG" / "part-00000.snappy.parquet"
    read = pq.read_table(part)
    assert read.schema.field("client_id").type == pa.string()
    assert read.schema.field("phase").type == read.schema.field("queue_id").type == pa.int32()
    # AVG, 3 queues over 2 clients: c1 gets b:0 and b:1 (3 // 2 + the remainder), c2 gets b:2.
    pairs = sorted(zip(read.column("client_id").to_pylist(), read.column("queue_id").to_pylist()))
    assert pairs == [("c1", 0), ("c1", 1), ("c2", 2)]


def test_a_failed_task_leaves_no_file_a_reader_sees(tmp_path) -> None:
    rows = route_batch([route(brokers={"b": 4}, clients=["c1"])])
    tables = TaskTables.empty(str(tmp_path), movement=False)
    with pytest.raises(RuntimeError, match="killed"), tables.task(1, 0) as files:
        for batch in client_queue_batches(rows):
            files.write_client_rows(batch)
        raise RuntimeError("killed")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    # The retry writes the same file name, in place.
    for attempt in (1, 2):
        with tables.task(1, attempt) as files:
            for batch in client_queue_batches(rows):
                files.write_client_rows(batch)
    written = [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()]
    assert sorted(map(str, written)) == [
        f"{t}/scenario=s/strategy=AVG/part-00001.snappy.parquet" for t in sorted(CLIENT_TABLES)
    ]


def test_partition_directories_are_named_as_spark_names_them(spark, tmp_path) -> None:
    """Scenario names are the user's: Spark escapes some characters of a partition's value."""
    names = ["plain", "a/b", "x=y:z", "50%", "tab\there", "{[braces]}^", "space é ü", "'q'\"#*?\\"]
    df = spark.createDataFrame([(n, "AVG", 1) for n in names], "scenario string, strategy string, v int")
    df.write.partitionBy("scenario", "strategy").parquet(str(tmp_path / "t"))
    by_spark = sorted(str(p.parent.relative_to(tmp_path / "t")) for p in (tmp_path / "t").rglob("*.parquet"))
    ours = sorted(partition_directory([("scenario", n), ("strategy", "AVG")]) for n in names)
    assert by_spark == ours
    back = spark.read.parquet(str(tmp_path / "t")).select(F.col("scenario")).collect()
    assert sorted(r.scenario for r in back) == sorted(names)  # and they read back as given


def test_a_run_on_a_local_output_has_no_hidden_leftovers(sample_run: Path) -> None:
    """The demo's run (a local output): no temporary file of a task is left behind."""
    for table in (*CLIENT_TABLES, MOVEMENT):
        assert not [p for p in (sample_run / table).rglob(".part-*.tmp")]
