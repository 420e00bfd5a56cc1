"""Runs are deterministic and published whole: a failed run leaves the previous result intact."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chispa import assert_df_equality

from rmqsim import simulate
from rmqsim.config import SimulateConfig, sample_snapshot
from rmqsim.errors import InputError
from rmqsim.sink import arrow_sink, open_sink, spark_sink
from rmqsim.sink.directory import RunDirectory

TABLES = ("assignments", "group_metrics", "consumer_load", "rejects", "summary")


def _config(out, **kw) -> SimulateConfig:
    return SimulateConfig(
        snapshot=str(sample_snapshot()),
        out=str(out),
        strategies=("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG"),
        **kw,
    )


@pytest.fixture(scope="module")
def first_run(spark, tmp_path_factory) -> Path:
    """_config's run, once: the tables the tests below compare with, or a copy of them that they
    try to overwrite."""
    out = tmp_path_factory.mktemp("first") / "out"
    simulate.run(spark, _config(out, sink="arrow"))
    return out


def _shuffled_sample(out: Path) -> str:
    """The sample snapshot with every table's rows in another order, split over two files."""
    rng = np.random.default_rng(7)
    for table_dir in sorted(p for p in sample_snapshot().iterdir() if p.is_dir()):
        table = pq.read_table(table_dir)
        order = rng.permutation(table.num_rows)
        (out / table_dir.name).mkdir(parents=True)
        half = table.num_rows // 2
        pq.write_table(table.take(order[:half]), out / table_dir.name / "part-b.parquet")
        pq.write_table(table.take(order[half:]), out / table_dir.name / "part-a.parquet")
    return str(out)


def _kept_blocks(spark) -> int:
    """RDDs the executors hold: caches and local checkpoints alike."""
    return spark.sparkContext._jsc.sc().getPersistentRDDs().size()


def test_same_input_same_tables_whatever_the_row_order_or_task_layout(spark, first_run, tmp_path) -> None:
    kept = _kept_blocks(spark)
    simulate.run(spark, _config(tmp_path / "b", sink="spark"))  # the same input again, the other sink
    assert _kept_blocks(spark) == kept  # a run frees what it cached or checkpointed
    shuffled = _shuffled_sample(tmp_path / "shuffled")
    for kind, name in (("arrow", "c"), ("spark", "d")):
        simulate.run(spark, replace(_config(tmp_path / name, partitions=3, sink=kind), snapshot=shuffled))
    for table in TABLES:
        a = spark.read.parquet(str(first_run / table))
        for other in ("b", "c", "d"):
            b = spark.read.parquet(str(tmp_path / other / table))
            assert_df_equality(a, b, ignore_row_order=True, ignore_column_order=True)


def test_a_run_that_fails_midway_leaves_the_previous_result(spark, first_run, tmp_path, monkeypatch) -> None:
    out = shutil.copytree(first_run, tmp_path / "out")
    before = sorted(p.relative_to(out) for p in out.rglob("*.parquet"))
    for sink in (arrow_sink.ArrowSink, spark_sink.SparkSink):
        real_write = sink.write

        def fail_on_summary(self, name, table, real_write=real_write, **append):  # after the stage's
            if name == "summary":
                raise RuntimeError("killed")
            real_write(self, name, table, **append)

        monkeypatch.setattr(sink, "write", fail_on_summary)
    for kind in ("arrow", "spark"):
        with pytest.raises(RuntimeError, match="killed"):
            simulate.run(spark, _config(out, sink=kind))
        assert sorted(p.relative_to(out) for p in out.rglob("*.parquet")) == before
        assert not list(tmp_path.glob(".out.tmp-*"))  # the half-written staging directory is gone


def test_a_table_the_driver_writes_reads_back_the_same_from_either_sink(spark, tmp_path) -> None:
    """A table the driver holds: pyarrow writes it on a local output, Spark elsewhere. Spark must
    read the same table from either: the schema's types and nullability, the rows in their order,
    nulls kept."""
    # Columns in another order and wider integers than the schema's, as a rollup may build them.
    table = pa.table(
        {
            "matched": [True, False, True],
            "in_progress": [True, True, False],
            "simulated_client_ids": [["c1", "c2"], [], ["c3"]],
            "observed_client_ip": ["10.0.0.1", None, None],
            "observed_client_id": ["c1", None, None],
            "queue_id": pa.array([3, 0, 2**31 - 1], pa.int64()),
            "broker_name": ["b", "b", "a"],
            "group": ["g1", "g2", "g3"],
            "topic": ["t", "u", "t"],
        }
    )
    for kind in ("arrow", "spark"):
        open_sink(spark, str(tmp_path / kind), kind=kind, staged=False).write("validation_queues", table)
    by_driver = spark.read.parquet(str(tmp_path / "arrow" / "validation_queues"))
    by_spark = spark.read.parquet(str(tmp_path / "spark" / "validation_queues"))
    assert_df_equality(by_driver, by_spark)  # types, nullability and row order too
    assert [tuple(r) for r in by_driver.collect()] == [
        ("t", "g1", "b", 3, "c1", "10.0.0.1", ["c1", "c2"], True, True),
        ("u", "g2", "b", 0, None, None, [], True, False),
        ("t", "g3", "a", 2**31 - 1, None, None, ["c3"], False, True),
    ]
    files = [pq.read_schema(f) for kind in ("arrow", "spark") for f in (tmp_path / kind).rglob("part-*")]
    assert files[0].field("queue_id").nullable is False and files[0].equals(files[1])


def test_mode_error_refuses_an_existing_destination(tmp_path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(InputError, match="exists and --mode is error"):
        RunDirectory(str(tmp_path / "out"), mode="error")


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_run_killed_during_its_write_leaves_the_previous_result_intact(first_run, tmp_path) -> None:
    out = shutil.copytree(first_run, tmp_path / "out")
    before = _files(out)
    command = [sys.executable, "-m", "rmqsim.cli", "simulate", "--snapshot", str(sample_snapshot())]
    command += ["--out", str(out), "--strategies", "all", "--master", "local[2]"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    # Its own session (process group): the kill takes the JVM and the Python workers with it.
    run = subprocess.Popen(
        command, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 300
        # Killed once the allocation's tasks have started writing their tables (each attempt's
        # directory beside the run is made first), a second or more before the run could publish.
        while not list(tmp_path.glob(".out.tmp-*.tasks-*/task-*")):
            assert run.poll() is None, run.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the run never started writing"
            time.sleep(0.05)
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == -signal.SIGKILL
    assert _files(out) == before  # not one byte of the previous result changed
