"""The sink of a run on a cluster or through Spark Connect, or whose output is not a path of this
machine: Spark writes and reads every table. (On a cluster a path without a scheme may be on each
executor's own disk or on HDFS: Spark's writers fail loudly there, a task's pyarrow would write
where the driver never reads.)

The stage's tasks hand their rows back to Spark in one pass, packed: a row per Arrow batch, its
table's name beside the batch's IPC bytes. That is kept (a few rows, however wide the tables) and
each table unpacked from it and written by a Spark job of its own. Assignments come back as each
client's list of queues and are exploded in the JVM: one Arrow row per queue out of Python cost
more than the allocation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from functools import partial

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from rmqsim import schemas, session
from rmqsim.sink.arrow_sink import stage_form
from rmqsim.sink.directory import RunDirectory
from rmqsim.stage import tasks
from rmqsim.stage.outputs import outputs_of

log = logging.getLogger(__name__)
PACKED = StructType([StructField("table", StringType(), False), StructField("batch", BinaryType(), False)])


def packed_rows(
    batches: Iterator[pa.RecordBatch], tables: Sequence[str], summed: bool = False
) -> Iterator[pa.RecordBatch]:
    """A task: the stage's rows of its route batches, each batch packed beside its table's name
    (``summed``: stage.outputs.stage_outputs')."""
    schema = schemas.arrow(PACKED)
    for out in outputs_of(batches, tables, summed=summed):
        for name, parts in out.items():
            for rows in parts:
                if rows.num_rows:
                    sink = pa.BufferOutputStream()
                    with pa.ipc.new_stream(sink, rows.schema) as stream:
                        stream.write_batch(rows)
                    packed = pa.array([sink.getvalue().to_pybytes()], pa.binary())
                    yield pa.RecordBatch.from_arrays([pa.array([name]), packed], schema=schema)


def unpacked_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task: packed batches as the rows they hold."""
    for packed in batches:
        for blob in packed.column("batch"):
            yield from pa.ipc.open_stream(blob.as_buffer()).read_all().to_batches()


def _rows_of(packed: DataFrame, name: str) -> DataFrame:
    """Table ``name``'s rows, unpacked, with its columns as its schema declares them."""
    rows = packed.where(F.col("table") == name).mapInArrow(unpacked_rows, stage_form(name))
    if name == "assignments":
        keys = [c for c in schemas.CLIENT_ASSIGNMENTS.fieldNames() if c != "owned"]
        rows = rows.select(*keys, F.inline("owned"))
    return rows.select(*schemas.OUTPUTS[name].schema.fieldNames())


def _whole(append: bool) -> None:
    if append:
        raise NotImplementedError("the Spark sink writes each table whole, once (appends is False)")


class SparkSink:
    """Tables written and read by Spark."""

    kind = "spark"
    appends = False  # a table once written stays whole: simulate stages every phase at once

    def __init__(self, spark: SparkSession, directory: RunDirectory) -> None:
        self.spark = spark
        self.directory = directory
        self._before = session.last_job(spark)  # the jobs after it are this run's
        self._written: set[str] = set()

    def run_stage(self, stage: tasks.StageInput, tables: Sequence[str], *, append: bool = False) -> None:
        """The stage over ``stage``'s routes, handed to the executors partitioned by group: one
        Python pass, kept packed for the writes, and a Spark job per table.

        Nothing is kept that Spark cannot compute again: the routes start from the driver's
        Arrow table, and the packed rows are cached, not checkpointed. A lost executor's blocks
        and shuffle files are recomputed from the driver's routes, and the run goes on."""
        _whole(append)
        packed = self._packed(stage, tables, reused=True).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            for name in tables:
                self._write(name, _rows_of(packed, name))
        finally:
            packed.unpersist()

    def collect_stage(self, stage: tasks.StageInput, tables: Sequence[str]) -> dict[str, pa.Table]:
        """The stage's ``tables`` over ``stage``'s routes, back in the driver and never written:
        the routes handed to the executors partitioned by group, the packed rows collected."""
        with session.job_description(self.spark, f"rmqsim: {', '.join(tables)}, collected"):
            packed = self._packed(stage, tables, summed=True).toArrow()
        parts: dict[str, list[pa.Table]] = {name: [] for name in tables}
        for name, blob in zip(packed["table"].to_pylist(), packed["batch"].to_pylist()):
            parts[name].append(pa.ipc.open_stream(pa.py_buffer(blob)).read_all())
        return {
            name: pa.concat_tables(found) if found else schemas.arrow(stage_form(name)).empty_table()
            for name, found in parts.items()
        }

    def _packed(
        self, stage: tasks.StageInput, tables: Sequence[str], *, reused: bool = False, summed: bool = False
    ) -> DataFrame:
        """The stage's rows of ``tables``, packed: the routes (the driver's Arrow table; ``reused``:
        several queries start from it) handed to the executors partitioned by group. ``summed``:
        rows only summed (collect_stage)."""
        routes = session.from_arrow(self.spark, stage.group_routes, reused=reused)  # GROUP_ROUTES' types
        staged = tasks.partition_by_group(routes, partitions=stage.partitions, absent=stage.absent)
        handed = tasks.handed_to_tasks(
            staged, route_rows=stage.group_routes.num_rows, partitions=stage.partitions, tasks=stage.tasks
        )
        return handed.mapInArrow(partial(packed_rows, tables=tuple(tables), summed=summed), PACKED)

    def _write(self, name: str, rows: DataFrame) -> None:
        self._written.add(name)
        with session.job_description(self.spark, f"rmqsim: {name}"):
            partitioned_by = schemas.OUTPUTS[name].partitioned_by
            rows.write.mode("overwrite").partitionBy(*partitioned_by).parquet(self.directory.table(name))

    def write(self, name: str, table: pa.Table, *, append: bool = False) -> None:
        """``table`` (the driver's) as table ``name``, one file (per partition) in its row order."""
        _whole(append)
        schema = schemas.OUTPUTS[name].schema
        table = table.select(schema.fieldNames()).cast(schemas.arrow(schema))  # no dictionaries
        self._write(name, session.from_arrow(self.spark, table, schema).coalesce(1))

    def read(
        self, name: str, columns: Sequence[str] = (), where: Mapping[str, object] | None = None
    ) -> pa.Table:
        """``columns`` (all: none given) of table ``name`` as written, with its schema's types;
        only the rows whose columns equal ``where``'s values."""
        schema = schemas.OUTPUTS[name].schema
        columns = list(columns or schema.fieldNames())
        rows = self.spark.read.schema(schema).parquet(self.directory.table(name))
        for column, value in (where or {}).items():
            rows = rows.where(F.col(column) == value)
        types = schemas.arrow(schema)
        return rows.select(*columns).toArrow().cast(pa.schema([types.field(c) for c in columns]))

    def drop(self, name: str) -> None:
        raise NotImplementedError("the Spark sink writes each table whole, once")

    def publish(self) -> str:
        """The run moved into place once no task of it runs, without Spark's temporary folders."""
        self._settle()
        for folder in self.directory.remove_temporaries(self._written):
            log.info("removed %s, left by a stopped task attempt", folder)
        return self.directory.publish()

    def abandon(self) -> None:
        self._settle()  # a late attempt would write into the staging directory again
        self.directory.abandon()

    def _settle(self, timeout: float = 120.0) -> None:
        if not session.wait_for_stopped_tasks(self.spark, after=self._before, timeout=timeout):
            log.warning("tasks of this run still run after %.0f s: a table may keep a _temporary", timeout)
