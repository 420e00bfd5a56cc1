"""What the allocation stage computes from a batch of route rows (schemas.GROUP_ROUTES): the rows of
each table it hands a sink (schemas.STAGE_TABLES). One allocation per strategy serves them all.

Plain functions over pyarrow batches: tests call them without Spark, and both sinks' tasks call
``outputs_of`` over the batches Spark hands them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

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
    wanted = dict(falling_behind="falling_behind" in out, assignments="assignments" in out)
    for strategy in metric_rows(rows, allocated, **wanted):
        for table in ("group_metrics", "consumer_load", "assignments", "falling_behind"):
            if table in out:
                out[table].append(getattr(strategy, table))
    if "movement" in out:
        out["movement"] = movement_batches(rows, allocated)
    return written_only(rows, out)


def _phase_keys(scenario, phase, group) -> pa.Array:
    return pc.binary_join_element_wise(scenario, pc.cast(phase, pa.string()), group, "\x1f")


def written_only(rows: pa.RecordBatch, out: StageRows) -> StageRows:
    """``out`` less the rows of every (scenario, phase, group) whose routes are not written (the
    phases of a scenario its steps have not touched yet, and the phase 0 a later phase compares
    with: docs/CONTRACT.md, section 4)."""
    written = pc.fill_null(rows.column("written"), True)
    if pc.all(written).as_py():
        return out
    kept = rows.filter(written)
    keys = pc.unique(_phase_keys(kept.column("scenario"), kept.column("phase"), kept.column("group")))
    filtered: StageRows = {}
    for table, parts in out.items():
        phase = "to_phase" if table == "movement" else "phase"
        filtered[table] = [
            part.filter(
                pc.is_in(
                    _phase_keys(part.column("scenario"), part.column(phase), part.column("group")),
                    value_set=keys,
                )
            )
            for part in parts
        ]
    return filtered


def outputs_of(batches: Iterable[pa.RecordBatch], tables: Sequence[str]) -> Iterator[StageRows]:
    """stage_outputs of batches as Spark hands them to a task: each group made whole
    (stage.batches.whole_groups), the columns a run left out put back as nulls."""
    for rows in whole_groups(iter(batches)):
        yield stage_outputs(with_absent_columns(rows), tables)
