"""Arrow out, straight to Parquet: the tables of the allocation stage (assignments, group_metrics,
consumer_load and movement) written by the Python task that computed them, where the run's output
and the executors are on this machine.

Handed back to Spark, the client rows had to be cached for three writes, and each client's owned
list became a JVM row per queue: in bench/, that cost several times what pyarrow takes to filter
and explode the same rows and write them. So each task writes its own part file into every
(scenario, strategy) directory it has rows for, laid out as Spark lays out a partitioned table.

A task writes hidden temporary files and renames them into place once it has written every row,
so a failed attempt leaves nothing a reader sees, and a retried task replaces its files with the
same rows.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from rmqsim import metrics, schemas
from rmqsim.output import partition_directory, partitions
from rmqsim.schemas import PARTITIONED_BY

CLIENT_TABLES = ("assignments", "group_metrics", "consumer_load")  # of the client rows
MOVEMENT = "movement"  # of the routes, where a scenario has a second phase
# Repeated on every queue of a client: dictionary-encoded, a gather of indices instead of strings.
REPEATED = ("topic", "group", "client_id", "computed_by")


def _file_schema(schema: StructType, dictionaries: tuple[str, ...] = ()) -> pa.Schema:
    """A part file's columns: the table's less those its directory names."""
    fields = [f for f in to_arrow_schema(schema) if f.name not in PARTITIONED_BY]
    return pa.schema(
        [f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in dictionaries else f for f in fields]
    )


FILE_SCHEMAS = {
    "assignments": _file_schema(schemas.ASSIGNMENTS, REPEATED),
    MOVEMENT: _file_schema(schemas.MOVEMENT),
    **{table: _file_schema(schema) for table, schema in metrics.TABLE_SCHEMAS.items()},
}


def assignment_rows(client_queues: pa.RecordBatch) -> pa.Table:
    """The assignments' file columns, one row per owned queue of schemas.CLIENT_QUEUES rows:
    metrics.assignments' explode, in Arrow."""
    owned = client_queues.column("owned")
    client = pc.list_parent_indices(owned)
    queues = owned.flatten()
    columns = {
        "phase": client_queues.column("phase").take(client),
        **{c: pc.dictionary_encode(client_queues.column(c)).take(client) for c in REPEATED},
        "broker_name": queues.field("broker_name"),
        "queue_id": queues.field("queue_id"),
    }
    return pa.table(columns).select(FILE_SCHEMAS["assignments"].names)


def flagged_rows(client_queues: pa.RecordBatch, table: str) -> pa.Table:
    """group_metrics' or consumer_load's file columns of schemas.CLIENT_QUEUES rows: the rows
    metrics.CLIENT_ROW_TABLES flags, its columns renamed."""
    flag, columns = metrics.CLIENT_ROW_TABLES[table]
    rows = client_queues.filter(client_queues.column(flag))
    schema = FILE_SCHEMAS[table]
    return pa.table({name: rows.column(columns.get(name, name)) for name in schema.names})


def table_rows(client_queues: pa.RecordBatch, table: str) -> pa.Table:
    return assignment_rows(client_queues) if table == "assignments" else flagged_rows(client_queues, table)


@dataclass
class TaskFiles:
    """One task attempt's open part files, one per (table, scenario, strategy) it has rows for."""

    directory: str  # the run's: a table per subdirectory
    task: int
    attempt: int
    _open: dict[tuple, tuple[pq.ParquetWriter, str, str]] = field(default_factory=dict)

    def write_client_rows(self, client_queues: pa.RecordBatch) -> None:
        """CLIENT_TABLES' rows of schemas.CLIENT_QUEUES rows."""
        for key, rows in partitions(client_queues, PARTITIONED_BY):
            for table in CLIENT_TABLES:
                self._write(table, key, table_rows(rows, table))

    def write_movement(self, movement: pa.RecordBatch) -> None:
        """schemas.MOVEMENT rows."""
        for key, rows in partitions(movement, PARTITIONED_BY):
            self._write(MOVEMENT, key, pa.Table.from_batches([rows]).drop_columns(list(PARTITIONED_BY)))

    def _write(self, table: str, key: tuple, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        if (table, *key) not in self._open:
            where = os.path.join(self.directory, table, partition_directory(zip(PARTITIONED_BY, key)))
            os.makedirs(where, exist_ok=True)
            final = os.path.join(where, f"part-{self.task:05d}.snappy.parquet")
            temporary = os.path.join(where, f".part-{self.task:05d}-{self.attempt}.parquet.tmp")
            # No Arrow schema in the file: readers see plain strings, not dictionaries.
            schema = FILE_SCHEMAS[table]
            writer = pq.ParquetWriter(temporary, schema, compression="snappy", store_schema=False)
            self._open[(table, *key)] = (writer, temporary, final)
        self._open[(table, *key)][0].write_table(rows.cast(FILE_SCHEMAS[table]))

    def commit(self) -> None:
        for writer, temporary, final in self._open.values():
            writer.close()
            os.replace(temporary, final)

    def abort(self) -> None:
        for writer, temporary, _ in self._open.values():
            writer.close()
            os.remove(temporary)


@dataclass(frozen=True)
class TaskTables:
    """Where the tasks write, and which tables (shipped to them pickled): the run's staging
    directory, and CLIENT_TABLES, with MOVEMENT where a scenario has a second phase."""

    directory: str
    tables: tuple[str, ...]

    @classmethod
    def empty(cls, directory: str, *, movement: bool) -> TaskTables:
        tables = (*CLIENT_TABLES, MOVEMENT) if movement else CLIENT_TABLES
        for table in tables:
            shutil.rmtree(os.path.join(directory, table), ignore_errors=True)
            os.makedirs(os.path.join(directory, table))
        return cls(directory, tables)

    @property
    def movement(self) -> bool:
        return MOVEMENT in self.tables

    @contextmanager
    def task(self, task: int, attempt: int) -> Iterator[TaskFiles]:
        """The files of one task attempt: in place if it ends normally, removed if it fails."""
        files = TaskFiles(self.directory, task, attempt)
        try:
            yield files
        except BaseException:
            files.abort()
            raise
        files.commit()

    def complete(self) -> None:
        """Mark each table written, as Spark does, once every task has committed."""
        for table in self.tables:
            open(os.path.join(self.directory, table, "_SUCCESS"), "w").close()
