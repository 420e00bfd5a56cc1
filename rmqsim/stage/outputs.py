"""What the allocation stage computes from a batch of route rows (schemas.GROUP_ROUTES): the rows of
each table it hands a sink (schemas.STAGE_TABLES). One allocation per strategy serves them all.

Plain functions over pyarrow batches: tests call them without Spark, and both sinks' tasks call
``outputs_of`` over the batches Spark hands them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa

from rmqsim.stage.batches import whole_groups, with_absent_columns
from rmqsim.stage.dispatch import allocate_rows
from rmqsim.stage.metric_rows import metric_rows
from rmqsim.stage.movement import movement_batches

StageRows = dict[str, list[pa.RecordBatch]]  # table -> its rows; assignments as schemas.CLIENT_ASSIGNMENTS


def stage_outputs(rows: pa.RecordBatch, tables: Sequence[str]) -> StageRows:
    """``tables``' rows for every strategy each of ``rows`` runs: group_metrics, consumer_load and
    assignments (schemas.CLIENT_ASSIGNMENTS), and falling_behind and movement where asked for.
    ``rows`` holds every topic and phase of each (scenario, group) it holds."""
    out: StageRows = {table: [] for table in tables}
    if not rows.num_rows:
        return out
    allocated = allocate_rows(rows)
    for strategy in metric_rows(rows, allocated, falling_behind="falling_behind" in out):
        for table in ("group_metrics", "consumer_load", "assignments", "falling_behind"):
            if table in out:
                out[table].append(getattr(strategy, table))
    if "movement" in out:
        out["movement"] = movement_batches(rows, allocated)
    return out


def outputs_of(batches: Iterable[pa.RecordBatch], tables: Sequence[str]) -> Iterator[StageRows]:
    """stage_outputs of batches as Spark hands them to a task: each group made whole
    (stage.batches.whole_groups), the columns a run left out put back as nulls."""
    for rows in whole_groups(iter(batches)):
        yield stage_outputs(with_absent_columns(rows), tables)
