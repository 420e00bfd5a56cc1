"""The stage's Python tasks on Spark: route rows partitioned so that every group arrives whole, over a
fixed number of tasks. What a task computes is stage.outputs; how its rows reach the output, a sink's.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from rmqsim.stage.batches import OPTIONAL

GROUP_KEY = ("scenario", "group")

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


def handed_to_tasks(routes: DataFrame, *, route_rows: int, partitions: int, tasks: int | None) -> DataFrame:
    """``routes`` (partition_by_group's) over the tasks that run the stage: ``tasks``, else
    python_tasks' count for ``route_rows``."""
    tasks = tasks or python_tasks(route_rows, partitions)
    return routes if tasks >= partitions else routes.coalesce(tasks)
