"""The stage's Python tasks on Spark: route rows partitioned so that every group arrives whole, over a
fixed number of tasks. What a task computes is stage.outputs; how its rows reach the output, a sink's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from rmqsim.stage.batches import OPTIONAL

GROUP_KEY = ("scenario", "group")

# Route rows per Python task below which a run uses fewer tasks than partition_by_group made.
ROUTES_PER_TASK = 4096


@dataclass(frozen=True)
class StageInput:
    """What the stage runs over: every route row (schemas.GROUP_ROUTES), the OPTIONAL columns null
    on all of them, the partitions partition_by_group makes, and the tasks asked for (None: as
    python_tasks says)."""

    group_routes: pa.Table
    absent: tuple[str, ...]
    partitions: int
    tasks: int | None = None

    @property
    def task_count(self) -> int:
        return self.tasks or python_tasks(self.group_routes.num_rows, self.partitions)

    def shipped(self) -> pa.Table:
        """The route rows as the tasks get them: the absent columns left out."""
        if not set(self.absent) <= set(OPTIONAL):
            raise ValueError(
                f"only {OPTIONAL} may be left out, not {sorted(set(self.absent) - set(OPTIONAL))}"
            )
        return self.group_routes.drop_columns(list(self.absent))


def split_by_group(routes: pa.Table, parts: int) -> list[pa.Table]:
    """``routes`` sorted as partition_by_group sorts a partition, cut into at most ``parts`` runs of
    whole groups with about as many rows each: what partition_by_group gives, without Spark."""
    routes = routes.take(
        pc.sort_indices(routes, sort_keys=[(c, "ascending") for c in (*GROUP_KEY, "phase", "topic")])
    )
    n = routes.num_rows
    if n == 0:
        return [routes]
    same = np.ones(n, dtype=bool)
    same[0] = False  # the first row starts a group
    for column in GROUP_KEY:
        values = routes[column]
        same[1:] &= pc.equal(values.slice(1), values.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(~same)
    wanted = np.arange(1, parts) * n / parts
    cuts = np.unique(np.r_[0, starts[np.minimum(np.searchsorted(starts, wanted), len(starts) - 1)], n])
    return [routes.slice(a, b - a) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


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
