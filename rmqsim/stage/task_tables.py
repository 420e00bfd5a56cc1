"""Arrow out, straight to Parquet: the client rows' tables (assignments, group_metrics and
consumer_load) written by the Python task that computed them, where the run's output is on this
machine.

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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from rmqsim import metrics, schemas
from rmqsim.output import partition_directory

PARTITIONED_BY = ("scenario", "strategy")
TABLES = ("assignments", "group_metrics", "consumer_load")
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
    return pa.table(columns).select(FILE_SCHEMAS["assignments"].names).cast(FILE_SCHEMAS["assignments"])


def flagged_rows(client_queues: pa.RecordBatch, table: str) -> pa.Table:
    """group_metrics' or consumer_load's file columns of schemas.CLIENT_QUEUES rows: the rows
    metrics.CLIENT_ROW_TABLES flags, its columns renamed."""
    flag, columns = metrics.CLIENT_ROW_TABLES[table]
    rows = pa.Table.from_batches([client_queues]).filter(client_queues.column(flag))
    schema = FILE_SCHEMAS[table]
    return pa.table({name: rows.column(columns.get(name, name)) for name in schema.names}).cast(schema)


def table_rows(client_queues: pa.RecordBatch, table: str) -> pa.Table:
    return assignment_rows(client_queues) if table == "assignments" else flagged_rows(client_queues, table)


def by_partition(client_queues: pa.RecordBatch) -> Iterator[tuple[tuple[str, str], pa.RecordBatch]]:
    """``client_queues`` split by (scenario, strategy), each part in its input order."""
    scenario, strategy = (pc.dictionary_encode(client_queues.column(c)) for c in PARTITIONED_BY)
    strategies = len(strategy.dictionary)
    code = scenario.indices.to_numpy().astype(np.int64) * strategies + strategy.indices.to_numpy()
    for c in np.unique(code):
        s, t = divmod(int(c), strategies)
        key = (scenario.dictionary[s].as_py(), strategy.dictionary[t].as_py())
        yield key, client_queues.filter(pa.array(code == c))


@dataclass
class TaskFiles:
    """One task attempt's open part files, one per (table, scenario, strategy) it has rows for."""

    directory: str  # the run's: a table per subdirectory
    task: int
    attempt: int
    _open: dict[tuple[str, str, str], tuple[pq.ParquetWriter, str, str]] = field(default_factory=dict)

    def write(self, client_queues: pa.RecordBatch) -> None:
        for key, rows in by_partition(client_queues):
            for table in TABLES:
                written = table_rows(rows, table)
                if written.num_rows:
                    self._writer(table, key).write_table(written)

    def _writer(self, table: str, key: tuple[str, str]) -> pq.ParquetWriter:
        if (table, *key) not in self._open:
            where = os.path.join(self.directory, table, partition_directory(zip(PARTITIONED_BY, key)))
            os.makedirs(where, exist_ok=True)
            final = os.path.join(where, f"part-{self.task:05d}.snappy.parquet")
            temporary = os.path.join(where, f".part-{self.task:05d}-{self.attempt}.parquet.tmp")
            # No Arrow schema in the file: readers see plain strings, not dictionaries.
            schema = FILE_SCHEMAS[table]
            writer = pq.ParquetWriter(temporary, schema, compression="snappy", store_schema=False)
            self._open[(table, *key)] = (writer, temporary, final)
        return self._open[(table, *key)][0]

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
    """The run's staging directory, into which the tasks write TABLES (shipped to them pickled)."""

    directory: str

    @classmethod
    def empty(cls, directory: str) -> TaskTables:
        for table in TABLES:
            shutil.rmtree(os.path.join(directory, table), ignore_errors=True)
            os.makedirs(os.path.join(directory, table))
        return cls(directory)

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
        for table in TABLES:
            open(os.path.join(self.directory, table, "_SUCCESS"), "w").close()
