"""The two sinks (rmqsim.sink): the same tables whoever writes them, and tasks that commit as Spark's
own writers do. (Every simulate-level test runs on both sinks: tests/simulated.py.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import functions as F

from rmqsim import build, schemas, simulate
from rmqsim.compare_runs import compare_runs
from rmqsim.config import SimulateConfig, sample_scenarios, sample_snapshot
from rmqsim.sink import open_sink
from rmqsim.sink.arrow_sink import StageJob
from rmqsim.sink.layout import partition_directory
from rmqsim.stage import tasks
from tests.builders import route, route_batch

STAGE = schemas.STAGE_TABLES


def _routes(spark, strategies: tuple[str, ...]):
    config = SimulateConfig(
        snapshot=str(sample_snapshot()),
        out="unused",
        strategies=strategies,
        scenarios=str(sample_scenarios()),
    )
    built = build.build_group_routes(spark, config)
    return tasks.StageInput(built.group_routes, built.absent, partitions=3, tasks=3)


def test_both_sinks_write_the_same_stage_tables(spark, tmp_path) -> None:
    """The sample's scenarios with five strategies, over three tasks: the same columns, types,
    nullability and rows (as multisets) whoever writes them."""
    routes = _routes(spark, ("AVG", "CONSISTENT_HASH", "MACHINE_ROOM", "CONFIG", "STICKY"))
    for kind in ("arrow", "spark"):
        sink = open_sink(spark, str(tmp_path / kind), kind=kind, staged=False)
        sink.run_stage(routes, STAGE)
    results = compare_runs(tmp_path / "spark", tmp_path / "arrow")
    assert [(r.name, r.equal) for r in results] == [(t, True) for t in sorted(STAGE)], results
    assert spark.read.parquet(str(tmp_path / "arrow" / "movement")).where("moved > 0").count() > 0
    for table in STAGE:
        assert (tmp_path / "arrow" / table / "_SUCCESS").exists()
    # Three tasks, each with one file in each (scenario, strategy) directory it has rows for: a
    # task's number names its files, and no directory holds two of one task.
    directories = [d for d in (tmp_path / "arrow" / "assignments").glob("scenario=*/strategy=*")]
    files = [sorted(p.name for p in d.glob("part-*")) for d in directories]
    assert all(len(names) == len(set(names)) for names in files)
    assert {name for names in files for name in names} == {f"part-{t:05d}.snappy.parquet" for t in range(3)}
    assert not [p for p in tmp_path.iterdir() if ".tasks-" in p.name]  # the attempts' directory is gone


def test_a_part_file_holds_plain_strings_and_the_tables_types(tmp_path) -> None:
    """The assignments' repeated strings are written dictionary-encoded; a reader must still see
    strings, and the contract's int32 phase and queue_id."""
    rows = route_batch([route(brokers={"b": 3}, clients=["c1", "c2"])])
    files = StageJob(str(tmp_path), ("assignments",)).attempt(0, 0)
    written = files.directory
    from rmqsim.stage.outputs import stage_outputs

    for batch in stage_outputs(rows, ("assignments",))["assignments"]:
        files.write("assignments", batch)
    files.close()
    read = pq.read_table(
        Path(written) / "assignments" / "scenario=s" / "strategy=AVG" / "part-00000.snappy.parquet"
    )
    assert read.schema.field("client_id").type == pa.string()
    assert read.schema.field("phase").type == read.schema.field("queue_id").type == pa.int32()
    # AVG, 3 queues over 2 clients: c1 gets b:0 and b:1 (3 // 2 + the remainder), c2 gets b:2.
    pairs = sorted(zip(read.column("client_id").to_pylist(), read.column("queue_id").to_pylist()))
    assert pairs == [("c1", 0), ("c1", 1), ("c2", 2)]


FLAKY = '''
    import sys
    from rmqsim import config, session, simulate
    from rmqsim.sink import arrow_sink
    from rmqsim.sink.arrow_sink import StageJob


    class Flaky(StageJob):
        """Task 0's first attempt writes its files and dies."""

        def attempt(self, task, attempt):
            files = super().attempt(task, attempt)
            if attempt == 0 and task == 0:
                close = files.close

                def dying():
                    close()
                    raise RuntimeError("task 0 dies after writing")

                files.close = dying
            return files


    arrow_sink.ArrowSink.Job = Flaky
    spark = session.build_session(master="local[3,2]", conf={"spark.ui.enabled": "false"})
    snapshot, scenarios, out = sys.argv[1:4]
    simulate.run(spark, config.SimulateConfig(
        snapshot=snapshot, out=out, scenarios=scenarios, strategies=("AVG", "STICKY"), partitions=3,
        sink="arrow",
    ))
'''


def test_a_failed_attempt_leaves_nothing_in_the_run(spark, tmp_path) -> None:
    """A task that dies after writing its files is retried, in every stage job of a run with
    scenarios and sweeps: only the attempts Spark kept are in the run, whose tables equal a run
    without failures, and no attempt's directory is left beside it. (No local master runs a
    speculative copy: Spark runs no two attempts of a task on one host. test_standalone_cluster
    runs them, on two.)"""
    script = tmp_path / "flaky.py"
    script.write_text(textwrap.dedent(FLAKY))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    args = [str(sample_snapshot()), str(sample_scenarios())]
    done = subprocess.run(
        [sys.executable, str(script), *args, str(tmp_path / "flaky")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RuntimeError: task 0 dies after writing" in done.stderr
    # and retried, in more than one stage job: phase 0's and at least one appended after it
    failed = set(re.findall(r"Lost task 0\.0 in stage (\d+)\.0 ", done.stderr))
    assert len(failed) >= 2, done.stderr[-3000:]
    simulate.run(
        spark,
        SimulateConfig(
            snapshot=args[0],
            out=str(tmp_path / "calm"),
            scenarios=args[1],
            strategies=("AVG", "STICKY"),
            partitions=3,
        ),
    )
    assert all(r.equal for r in compare_runs(tmp_path / "calm", tmp_path / "flaky"))
    files = [p.relative_to(tmp_path / "flaky") for p in (tmp_path / "flaky").rglob("*") if p.is_file()]
    assert not [f for f in files if "attempt" in str(f) or f.name.startswith(".")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calm", "flaky", "flaky.py"]


def test_partition_directories_are_named_as_spark_names_them(spark, tmp_path) -> None:
    """Scenario names are the user's: a partition's value is escaped as Spark escapes it, and
    Spark reads it back as the name it was."""
    names = ["plain", "a/b", "x=y:z", "50%", "tab\there", "{[braces]}^", "space é ü", "'q'\"#*?\\"]
    df = spark.createDataFrame([(n, "AVG", 1) for n in names], "scenario string, strategy string, v int")
    df.write.partitionBy("scenario", "strategy").parquet(str(tmp_path / "t"))
    by_spark = sorted(str(p.parent.relative_to(tmp_path / "t")) for p in (tmp_path / "t").rglob("*.parquet"))
    ours = sorted(partition_directory([("scenario", n), ("strategy", "AVG")]) for n in names)
    assert by_spark == ours
    back = spark.read.parquet(str(tmp_path / "t")).select(F.col("scenario")).collect()
    assert sorted(r.scenario for r in back) == sorted(names)


def test_a_run_on_a_local_output_has_no_hidden_leftovers(sample_run: Path) -> None:
    """The demo's run (a local output, the arrow sink): no attempt's directory or file is left
    in it or beside it."""
    assert not [p for p in sample_run.rglob("*") if p.name.startswith(".") and not p.name.endswith(".crc")]
    assert not [p for p in sample_run.parent.iterdir() if p.name.startswith(".")]


def test_part_files_keep_dictionaries_for_all_but_floating_point_columns(sample_run: Path) -> None:
    """Rates and ratios are written plain (they seldom repeat), every other column with a
    dictionary page (but booleans, which Parquet never encodes so): in each part file the run
    wrote, by the tasks and by the driver."""
    files = [p for p in sample_run.rglob("*.parquet")]
    assert {p.relative_to(sample_run).parts[0] for p in files} >= {"assignments", "group_metrics", "summary"}
    for path in files:
        metadata = pq.ParquetFile(path).metadata
        for group in range(metadata.num_row_groups):
            for i in range(metadata.num_columns):
                chunk = metadata.row_group(group).column(i)
                if chunk.physical_type == "BOOLEAN":
                    continue
                floating = chunk.physical_type in ("DOUBLE", "FLOAT")
                assert chunk.has_dictionary_page != floating, (path, chunk.path_in_schema)


def test_a_scenario_read_alone_is_its_rows_of_the_whole_table(spark, tmp_path) -> None:
    """The arrow sink reads one scenario from its directory alone: the same rows, in the same
    order and types, as the whole table filtered on it; a scenario without rows gives none."""
    names = ["plain", "a/b", "x=y:z", "50%"]
    schema = schemas.arrow(schemas.MOVEMENT)
    rows = [
        {
            f.name: (1 if pa.types.is_integer(f.type) else 0.5 if pa.types.is_floating(f.type) else "t")
            for f in schema
        }
        | {"scenario": n, "strategy": s, "group": f"g{i}", "to_phase": i}
        for i, (n, s) in enumerate((n, s) for n in names for s in ("AVG", "CONSISTENT_HASH"))
    ]
    sink = open_sink(spark, str(tmp_path / "run"), kind="arrow")
    sink.write("movement", pa.Table.from_pylist(rows, schema))
    whole = sink.read("movement")
    for name in names:
        mine = whole.filter(pc.equal(whole["scenario"], name))
        assert mine.num_rows == 2
        assert sink.read("movement", where={"scenario": name}).equals(mine)
        columns = ("group", "scenario", "to_phase")
        assert sink.read("movement", columns, {"scenario": name}).equals(mine.select(columns))
        one = sink.read("movement", ("group",), {"scenario": name, "strategy": "AVG"})
        assert one.num_rows == 1
    nobody = sink.read("movement", ("group", "scenario"), {"scenario": "nobody"})
    assert nobody.num_rows == 0 and nobody.schema == whole.select(["group", "scenario"]).schema
    sink.abandon()
