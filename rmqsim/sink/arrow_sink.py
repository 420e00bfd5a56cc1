"""The sink of a run whose output and executors are on this machine (a local master, a local
path): the stage's tasks write their tables with pyarrow, and the driver writes and reads the
others with pyarrow too. Handed back to Spark, the assignment lists became a JVM row per queue and
every table a Spark job: several times what pyarrow takes to explode and write the same rows
(bench/README.md).

The routes reach the tasks as files too: the driver cuts them into runs of whole groups
(stage.tasks.split_by_group) and writes each as an Arrow file beside the run, and task k of a
Spark job over k = 0..n-1 reads its file. Handed through Spark instead (a DataFrame of the routes,
shuffled by group and kept), they crossed from Python to the JVM and back again: 4 s of an 18 s run
on the 2M-assignment fleet (bench/README.md).

Tasks commit as Spark's own writers do: each attempt writes into its own directory beside the run
and returns the files it wrote; the driver moves the files of the attempts Spark kept into the run
once the job succeeds, and removes the rest. So a failed, killed or speculative attempt leaves
nothing in the run, and a retried task writes its part files again. (Spark's Python data source
writer gives the same protocol, but registering one starts a Python process in the driver: about
2 s on a run of a few seconds.)
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from rmqsim import schemas, session
from rmqsim.sink.directory import RunDirectory
from rmqsim.sink.layout import SUCCESS, parquet_options, part_file, partition_directory, partitions
from rmqsim.stage.outputs import outputs_of
from rmqsim.stage.tasks import StageInput, split_by_group

# Route rows per Arrow batch a task reads: what Spark's arrow.maxRecordsPerBatch hands it.
BATCH_ROWS = 10_000
# Rows per row group of a file the driver writes: at most that many, which even queue_traffic's
# rows of a 10M-assignment fleet fit in one (15 MB of Parquet).
DRIVER_ROW_GROUP = 1 << 24

# Repeated on every queue of a client: dictionary-encoded, a gather of indices instead of strings.
REPEATED = ("topic", "group", "client_id", "computed_by")
# What a task attempt returns to the driver: a row per file it wrote, relative to its directory.
WRITTEN = schemas.StructType(
    [
        schemas.StructField("attempt", schemas.STRING, False),  # the attempt's directory
        schemas.StructField("file", schemas.STRING, False),  # table/partition.../part-NNNNN...
    ]
)
WRITTEN_ARROW = schemas.arrow(WRITTEN)


def file_schema(name: str) -> pa.Schema:
    """A part file's columns: the table's less those its directory names; the assignments'
    repeated strings dictionary-encoded (the file stores plain strings: readers see no dictionary)."""
    table = schemas.OUTPUTS[name]
    fields = [f for f in schemas.arrow(table.schema) if f.name not in table.partitioned_by]
    if name == "assignments":
        fields = [f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in REPEATED else f for f in fields]
    return pa.schema(fields)


def assignment_rows(lists: pa.RecordBatch | pa.Table) -> pa.Table:
    """schemas.CLIENT_ASSIGNMENTS' lists exploded, one row per queue: schemas.ASSIGNMENTS."""
    owned = lists.column("owned")
    if isinstance(owned, pa.ChunkedArray):
        owned = owned.combine_chunks()
    client = pc.list_parent_indices(owned)
    queues = owned.flatten()
    columns = {
        **{c: lists.column(c).take(client) for c in ("scenario", "phase", "strategy")},
        **{c: pc.dictionary_encode(lists.column(c)).take(client) for c in REPEATED},
        "broker_name": queues.field("broker_name"),
        "queue_id": queues.field("queue_id"),
    }
    return pa.table(columns).select(schemas.ASSIGNMENTS.fieldNames())


@dataclass
class AttemptFiles:
    """One task attempt's open part files, one per (table, partition) it has rows for, in its own
    directory."""

    directory: str
    task: int
    _open: dict[str, pq.ParquetWriter] = field(default_factory=dict)

    def write(self, name: str, rows: pa.RecordBatch) -> None:
        """``rows``: the stage's rows of table ``name`` (assignments as schemas.CLIENT_ASSIGNMENTS)."""
        table = schemas.OUTPUTS[name]
        for key, part in partitions(rows, table.partitioned_by):  # before the lists are exploded
            if name == "assignments":
                part = assignment_rows(part)
            if not part.num_rows:
                continue
            file = os.path.join(
                name, partition_directory(zip(table.partitioned_by, key)), part_file(self.task)
            )
            if file not in self._open:
                os.makedirs(os.path.join(self.directory, os.path.dirname(file)), exist_ok=True)
                schema = file_schema(name)
                self._open[file] = pq.ParquetWriter(
                    os.path.join(self.directory, file), schema, store_schema=False, **parquet_options(schema)
                )
            self._open[file].write(part.drop_columns(list(table.partitioned_by)).cast(file_schema(name)))

    def close(self) -> pa.RecordBatch:
        for writer in self._open.values():
            writer.close()
        files = sorted(self._open)
        return pa.RecordBatch.from_arrays(
            [pa.array([self.directory] * len(files), pa.string()), pa.array(files, pa.string())],
            schema=WRITTEN_ARROW,
        )


@dataclass(frozen=True)
class StageJob:
    """Where the stage's task attempts write (a directory beside the run, never in it), and which
    tables; shipped to the tasks pickled."""

    temporary: str
    tables: tuple[str, ...]

    def attempt(self, task: int, attempt: int) -> AttemptFiles:
        return AttemptFiles(os.path.join(self.temporary, f"task-{task:05d}-attempt-{attempt}"), task)

    def routes(self, task: int) -> str:
        """Task ``task``'s route rows, written by the driver before the job."""
        return os.path.join(self.temporary, "routes", f"part-{task:05d}.arrow")

    def hand_over(self, stage: StageInput) -> int:
        """The routes written for the tasks, a file of whole groups each; how many tasks."""
        parts = split_by_group(stage.shipped(), stage.task_count)
        os.makedirs(os.path.dirname(self.routes(0)), exist_ok=True)
        for task, rows in enumerate(parts):
            with ipc.new_file(self.routes(task), rows.schema) as writer:
                writer.write_table(rows, max_chunksize=BATCH_ROWS)
        return len(parts)


def write_task_files(ids: Iterator[pa.RecordBatch], job: StageJob) -> Iterator[pa.RecordBatch]:
    """A task: the stage's rows of its routes (the file of its task number), written; the files it
    wrote, returned. ``ids``: the task's number, as Spark's range hands it (unused)."""
    for _ in ids:
        pass
    context = TaskContext.get()
    files = job.attempt(context.partitionId(), context.attemptNumber())
    with ipc.open_file(pa.memory_map(job.routes(context.partitionId()))) as routes:
        batches = (routes.get_batch(i) for i in range(routes.num_record_batches))
        for out in outputs_of(batches, job.tables):
            for name, parts in out.items():
                for rows in parts:
                    files.write(name, rows)
    yield files.close()


def collect_task_rows(ids: Iterator[pa.RecordBatch], job: StageJob) -> Iterator[pa.RecordBatch]:
    """A task: the stage's rows of its routes as Arrow files of the attempt's own directory, one
    per table (``collect_stage``: read by the driver, never part of the run); the directory returned."""
    for _ in ids:
        pass
    context = TaskContext.get()
    folder = job.attempt(context.partitionId(), context.attemptNumber()).directory
    os.makedirs(folder, exist_ok=True)
    writers: dict[str, ipc.RecordBatchStreamWriter] = {}
    with ipc.open_file(pa.memory_map(job.routes(context.partitionId()))) as routes:
        batches = (routes.get_batch(i) for i in range(routes.num_record_batches))
        for out in outputs_of(batches, job.tables, summed=True):
            for name, parts in out.items():
                for rows in parts:
                    if name not in writers:
                        writers[name] = ipc.new_stream(os.path.join(folder, f"{name}.arrow"), rows.schema)
                    writers[name].write_batch(rows)
    for writer in writers.values():
        writer.close()
    yield pa.RecordBatch.from_arrays([pa.array([folder]), pa.array([""])], schema=WRITTEN_ARROW)


def _as_written(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` as ``schema``'s types, but for its dictionaries of the right value type."""
    kept = [
        table.field(f.name).type
        if pa.types.is_dictionary(table.field(f.name).type) and table.field(f.name).type.value_type == f.type
        else f.type
        for f in schema
    ]
    return table.cast(pa.schema([f.with_type(t) for f, t in zip(schema, kept)]))


def _read_streams(paths: Sequence[str], schema: pa.Schema) -> pa.Table:
    """The Arrow stream files that exist among ``paths`` (a task without rows wrote none), as one table."""
    found = [ipc.open_stream(pa.memory_map(p)).read_all() for p in paths if os.path.exists(p)]
    return pa.concat_tables(found, promote_options="permissive") if found else schema.empty_table()


def stage_form(name: str) -> StructType:
    """The schema of a table's rows as the stage's tasks hand them over."""
    return schemas.CLIENT_ASSIGNMENTS if name == "assignments" else schemas.OUTPUTS[name].schema


class ArrowSink:
    """Tables written and read by pyarrow: by the stage's tasks, and by the driver."""

    kind = "arrow"
    appends = True  # run_stage and write add to a table, and drop removes one (simulate streams)
    Job = StageJob  # what the tasks are handed: a subclass may watch or break their attempts

    def __init__(self, spark: SparkSession, directory: RunDirectory) -> None:
        if not directory.local:
            raise ValueError(f"{directory.out} is not on this machine: write it through Spark")
        self.spark = spark
        self.directory = directory

    def run_stage(self, stage: StageInput, tables: Sequence[str], *, append: bool = False) -> None:
        """The stage over ``stage``'s routes, its ``tables`` written by its tasks: the routes
        handed over as files, one Spark job, then the kept attempts' files moved into the run.
        ``append``: beside the rows an earlier stage of the run wrote, in partitions of their own
        (other scenarios)."""
        job = self.Job(self.directory.beside("tasks"), tuple(tables))
        try:
            self._commit(job, self._tasks(job, stage, write_task_files, ", ".join(tables)), append)
        finally:
            shutil.rmtree(job.temporary, ignore_errors=True)

    def collect_stage(self, stage: StageInput, tables: Sequence[str]) -> dict[str, pa.Table]:
        """The stage's ``tables`` over ``stage``'s routes, back in the driver and never written in
        the run: the routes handed over as files, one Spark job, each kept attempt's rows read."""
        job = self.Job(self.directory.beside("collect"), tuple(tables))
        try:
            kept = self._tasks(job, stage, collect_task_rows, f"{', '.join(tables)}, collected")
            return {
                name: _read_streams(
                    [os.path.join(folder, f"{name}.arrow") for folder in kept["attempt"].to_pylist()],
                    schemas.arrow(stage_form(name)),
                )
                for name in tables
            }
        finally:
            shutil.rmtree(job.temporary, ignore_errors=True)

    def _tasks(self, job: StageJob, stage: StageInput, task, what: str) -> pa.Table:
        """``stage``'s routes handed over as ``job``'s files, and one Spark job whose task k runs
        ``task`` on file k; what the kept attempts returned (WRITTEN rows)."""
        count = job.hand_over(stage)
        ids = self.spark.range(0, count, numPartitions=count)
        with session.job_description(self.spark, f"rmqsim: {what}"):
            return ids.mapInArrow(partial(task, job=job), WRITTEN).toArrow()

    def _commit(self, job: StageJob, written: pa.Table, append: bool) -> None:
        for name in job.tables:
            path = self.directory.table(name)
            if not append:
                shutil.rmtree(path, ignore_errors=True)
            os.makedirs(path, exist_ok=True)
        for attempt, file in zip(written["attempt"].to_pylist(), written["file"].to_pylist()):
            final = os.path.join(self.directory.staging, file)
            if os.path.exists(final):  # an appended stage's scenarios are new to the run
                raise RuntimeError(f"{final} was written by an earlier stage of this run")
            os.makedirs(os.path.dirname(final), exist_ok=True)
            os.replace(os.path.join(attempt, file), final)
        for name in job.tables:
            open(os.path.join(self.directory.table(name), SUCCESS), "w").close()

    def write(self, name: str, table: pa.Table, *, append: bool = False) -> None:
        """``table`` (the driver's) as table ``name``: one file, or one per partition, in its row order.
        A dictionary-encoded column of the schema's type is written as it is (readers see the type).
        ``append``: beside the rows written before, in partitions of their own."""
        spec = schemas.OUTPUTS[name]
        table = _as_written(table.select(spec.schema.fieldNames()), schemas.arrow(spec.schema))
        path = self.directory.table(name)
        if not append:
            shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path, exist_ok=True)
        for key, rows in partitions(table, spec.partitioned_by) if spec.partitioned_by else [((), table)]:
            where = os.path.join(path, partition_directory(zip(spec.partitioned_by, key)))
            os.makedirs(where, exist_ok=True)
            rows = rows.drop_columns(list(spec.partitioned_by))
            file = os.path.join(where, part_file(0))
            if os.path.exists(file):
                raise RuntimeError(f"{file} was written before in this run")
            # Without Arrow's schema in the file: a reader sees strings, not the dictionaries. In
            # row groups as large as Spark's writer makes them (128 MB): pyarrow's default, a
            # million rows, wrote queue_traffic's dictionary of every topic once per million.
            options = parquet_options(rows.schema)
            pq.write_table(rows, file, store_schema=False, row_group_size=DRIVER_ROW_GROUP, **options)
        open(os.path.join(path, SUCCESS), "w").close()

    def read(
        self, name: str, columns: Sequence[str] = (), where: Mapping[str, object] | None = None
    ) -> pa.Table:
        """``columns`` (all: none given) of table ``name`` as written, with its schema's types;
        only the rows whose columns equal ``where``'s values."""
        spec = schemas.OUTPUTS[name]
        schema = schemas.arrow(spec.schema)
        wanted = list(columns or schema.names)
        where = dict(where or {})
        # The leading partition columns ``where`` names are read from their directory alone: a
        # dataset of the whole table would list every scenario's files to read one scenario's.
        fixed: dict[str, object] = {}
        for column in spec.partitioned_by:
            if column not in where:
                break
            fixed[column] = where.pop(column)
        path = self.directory.table(name)
        if fixed and os.path.isdir(path):
            path = os.path.join(path, partition_directory((c, str(v)) for c, v in fixed.items()))
            if not os.path.isdir(path):  # no row of those values
                return schema.empty_table().select(wanted)
        else:
            where.update(fixed)
            fixed = {}
        rest = [c for c in spec.partitioned_by if c not in fixed]
        hive = ds.partitioning(pa.schema([schema.field(c) for c in rest]), flavor="hive") if rest else None
        # Hidden and _underscore files (_SUCCESS, Spark's .crc files) are not data: left out.
        found = ds.dataset(
            path,
            schema=pa.schema([f for f in schema if f.name not in fixed]),
            format="parquet",
            partitioning=hive,
        )
        condition = None
        for column, value in where.items():
            test = ds.field(column) == value
            condition = test if condition is None else condition & test
        table = found.to_table(columns=[c for c in wanted if c not in fixed], filter=condition)
        for column, value in fixed.items():
            if column in wanted:
                values = pa.repeat(pa.scalar(value, schema.field(column).type), table.num_rows)
                table = table.add_column(0, schema.field(column), values)
        return table.select(wanted)

    def drop(self, name: str) -> None:
        """Table ``name`` removed from the run: an earlier stage wrote it for phases that, it
        turned out, no table of the run needs."""
        shutil.rmtree(self.directory.table(name), ignore_errors=True)

    def publish(self) -> str:
        return self.directory.publish()

    def abandon(self) -> None:
        self.directory.abandon()
