"""The Spark side of the stage: route rows partitioned so that every group arrives whole, and the
mapInArrow adapters that run client_queues and movement over them, or have each task write its
tables itself (stage.task_tables)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql.types import StructField, StructType

from rmqsim import schemas
from rmqsim.stage.batches import OPTIONAL, whole_groups, with_absent_columns
from rmqsim.stage.client_queues import client_queue_batches
from rmqsim.stage.dispatch import allocate_rows
from rmqsim.stage.movement import movement_batches
from rmqsim.stage.task_tables import TaskTables

GROUP_KEY = ("scenario", "group")

# What comes back from tasks that write their tables themselves: nothing.
NOTHING = StructType([StructField("nothing", schemas.LONG)])

# Route rows per Python task below which a run uses fewer tasks than partition_by_group made.
ROUTES_PER_TASK = 4096


def partition_by_group(group_routes: DataFrame, *, partitions: int, absent: Sequence[str] = ()) -> DataFrame:
    """All topics and phases of a group in one partition, contiguous, over a fixed number of
    Python tasks: a client's load sums over its topics, and movement compares phases.

    A fixed count, because adaptive execution would coalesce the small route rows onto fewer
    tasks than there are cores; contiguous, so whole_groups can hand each group whole to Python.
    ``absent``: OPTIONAL columns null on every row of the run, dropped (with_absent_columns
    puts them back as nulls in Python).
    """
    if not set(absent) <= set(OPTIONAL):
        raise ValueError(f"only {OPTIONAL} may be left out, not {sorted(set(absent) - set(OPTIONAL))}")
    return (
        group_routes.drop(*absent)
        .repartition(partitions, *GROUP_KEY)
        .sortWithinPartitions(*GROUP_KEY, "phase", "topic")
    )


def python_tasks(route_rows: int, partitions: int) -> int:
    """Python tasks for ``route_rows`` routes: ``partitions``, or fewer for a small fleet.

    Every task writes a file into each (scenario, strategy) directory of every output table; on
    a sample-sized fleet those tiny files, not the allocation, are the cost of a run. Fewer tasks
    come from coalescing partition_by_group's partitions, which keeps each group's rows whole and
    contiguous, all whole_groups needs."""
    return max(1, min(partitions, -(-route_rows // ROUTES_PER_TASK)))


def map_client_queues(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for rows in whole_groups(batches):
        yield from client_queue_batches(with_absent_columns(rows))


def map_task_tables(batches: Iterator[pa.RecordBatch], tables: TaskTables) -> Iterator[pa.RecordBatch]:
    context = TaskContext.get()
    with tables.task(context.partitionId(), context.attemptNumber()) as written:
        for rows in whole_groups(batches):
            rows = with_absent_columns(rows)
            allocated = allocate_rows(rows)  # once, for the client rows and the movement alike
            for batch in client_queue_batches(rows, allocated):
                written.write_client_rows(batch)
            if tables.movement:
                for batch in movement_batches(rows, allocated):
                    written.write_movement(batch)
    yield from ()


def map_movement(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for rows in whole_groups(batches):
        yield from movement_batches(with_absent_columns(rows))


def client_queues(routes: DataFrame) -> DataFrame:
    """schemas.CLIENT_QUEUES from partition_by_group's routes."""
    return routes.mapInArrow(map_client_queues, schemas.CLIENT_QUEUES)


def task_tables(routes: DataFrame, tables: TaskTables) -> DataFrame:
    """No rows: running it (a noop write) has each task write ``tables`` of partition_by_group's
    routes (stage.task_tables)."""
    return routes.mapInArrow(partial(map_task_tables, tables=tables), NOTHING)


def movement(routes: DataFrame) -> DataFrame:
    """schemas.MOVEMENT from partition_by_group's routes."""
    return routes.mapInArrow(map_movement, schemas.MOVEMENT)
