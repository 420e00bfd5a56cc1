"""What the allocation stage computes from a batch of route rows (schemas.GROUP_ROUTES): the rows of
each table it hands a sink (schemas.STAGE_TABLES). One allocation per strategy serves them all.

Plain functions over pyarrow batches: tests call them without Spark, and both sinks' tasks call
``outputs_of`` over the batches Spark hands them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.impact import SUMMED
from rmqsim.stage.allocated import Allocated, of_rows
from rmqsim.stage.batches import row_codes, to_batch, whole_groups, with_absent_columns
from rmqsim.stage.dispatch import allocate_rows
from rmqsim.stage.handover_rows import handover_rows
from rmqsim.stage.metric_rows import metric_rows
from rmqsim.stage.movement import movement_rows, paired

StageRows = dict[str, list[pa.RecordBatch]]  # table -> its rows; assignments as schemas.CLIENT_ASSIGNMENTS
# What a sweep's impact sums of each table (stage_outputs' ``summed``): table -> its columns.
SUMMED_OVER = {t: tuple(c for table, c in SUMMED.values() if table == t) for t, _ in SUMMED.values()}


def stage_outputs(rows: pa.RecordBatch, tables: Sequence[str], *, summed: bool = False) -> StageRows:
    """``tables``' rows for every strategy each of ``rows`` runs: group_metrics, consumer_load and
    assignments (schemas.CLIENT_ASSIGNMENTS), and falling_behind, movement and handover where asked
    for.
    ``rows`` holds every topic and phase of each (scenario, group) it holds. ``summed``: the rows
    are only summed (a sweep's elements, rmqsim.impact), so a row that adds nothing to any sum is
    left out: group_metrics' and consumer_load's rows whose summed columns are all 0 or null, and
    the hand-overs of queues no message flows into (they delay and double nothing)."""
    out: StageRows = {table: [] for table in tables}
    if not rows.num_rows:
        return out
    allocated = allocate_rows(rows)
    written = _written(rows)
    wanted = dict(falling_behind="falling_behind" in out, assignments="assignments" in out)
    for strategy in metric_rows(*_written_only(rows, allocated, written), **wanted):
        for table in ("group_metrics", "consumer_load", "assignments", "falling_behind"):
            if table in out:
                out[table].append(getattr(strategy, table))
    if "movement" in out or "handover" in out:
        pairs = paired(rows, allocated, written)
        if "movement" in out:
            out["movement"] = movement_rows(rows, pairs)
        if "handover" in out:
            out["handover"] = handover_rows(rows, pairs, flowing_only=summed)
    if summed:
        for table, columns in SUMMED_OVER.items():
            if table in out:
                out[table] = [_adding(part, columns) for part in out[table]]
    return out


def _written_only(
    rows: pa.RecordBatch, allocated: list[Allocated], written: np.ndarray | None
) -> tuple[pa.RecordBatch, list[Allocated]]:
    """The rows written and their allocations (metric_rows' input): a later phase's chunk holds
    the phase 0 it moves from unwritten, half its rows. The allocation ran over every row, as a
    phase's may start from the one before (STICKY, a stale view, a kept answer); a written (scenario,
    phase, group) keeps all its rows, so each client's sums over its topics are whole."""
    if written is None or not allocated:
        return rows, allocated
    kept = np.flatnonzero(written)
    some = rows.take(pa.array(kept, type=pa.int64()))
    batch = to_batch(some)
    return some, [of_rows(a, kept, batch) for a in allocated]


def _adding(rows: pa.RecordBatch, columns: Sequence[str]) -> pa.RecordBatch:
    """``rows`` less those whose ``columns`` are all 0, false or null: x + 0 is x, so every sum
    of the rows left is the same bits (NaN is kept)."""
    adds = np.zeros(rows.num_rows, dtype=bool)
    for column in columns:
        values = rows.column(column)
        nonzero = values if pa.types.is_boolean(values.type) else pc.not_equal(values, 0)
        adds |= pc.fill_null(nonzero, False).to_numpy(zero_copy_only=False)
    return rows if adds.all() else rows.filter(pa.array(adds))


def _written(rows: pa.RecordBatch) -> np.ndarray | None:
    """Per row, whether its (scenario, phase, group) is written: not the phases of a scenario
    its steps have not touched yet, nor the phase 0 a later phase compares with (docs/CONTRACT.md,
    section 4). None where every row is."""
    written = pc.fill_null(rows.column("written"), True).to_numpy(zero_copy_only=False)
    if written.all():
        return None
    group = row_codes(rows, "scenario", "phase", "group")
    return np.bincount(group, weights=written)[group] > 0


def outputs_of(
    batches: Iterable[pa.RecordBatch], tables: Sequence[str], *, summed: bool = False
) -> Iterator[StageRows]:
    """stage_outputs of batches as Spark hands them to a task: each group made whole
    (stage.batches.whole_groups), the columns a run left out put back as nulls."""
    for rows in whole_groups(iter(batches)):
        yield stage_outputs(with_absent_columns(rows), tables, summed=summed)
