"""A run's outputs as pandas, for the report, the HTML page and notebooks: pyarrow, no Spark.

The summary tables (a row per scenario, phase and strategy, or per group) are small and read whole.
consumer_load and movement grow with the fleet: they are read filtered or aggregated in Arrow, so
a notebook on a million-group run holds one group's rows, not the fleet's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from rmqsim.errors import InputError
from rmqsim.sink.directory import RUN_MARK


def load_table(
    run: str | Path,
    name: str,
    filter: ds.Expression | None = None,
    columns: list[str] | None = None,
) -> pd.DataFrame | None:
    """Table ``name`` of a run (Parquet, hive-partitioned as simulate writes it); None if absent."""
    dataset = _dataset(run, name)
    if dataset is None:
        return None
    return _pandas(dataset.to_table(filter=filter, columns=columns))


# Integer columns stay integers where they hold nulls (min_moves, backlogs): as float64 they would
# print as "10.00". Matplotlib still reads them as numbers (float where there is a null).
_NULLABLE = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype()}


def _pandas(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas(types_mapper=_NULLABLE.get)


# The partition keys are names: inferred, scenario=07 would be the integer 7.
_PARTITIONING = ds.partitioning(
    pa.schema([("scenario", pa.string()), ("strategy", pa.string())]), flavor="hive"
)


def _dataset(run: str | Path, name: str) -> ds.Dataset | None:
    path = Path(run) / name
    return ds.dataset(path, format="parquet", partitioning=_PARTITIONING) if path.is_dir() else None


def require_run(run: str | Path) -> Path:
    root = Path(run)
    if not (root / RUN_MARK).is_dir():
        raise InputError("arguments", "--run", f"{run} is not a simulate output directory (no {RUN_MARK}/)")
    return root


@dataclass(frozen=True)
class Run:
    """A run's small tables. Without scenarios there is no comparison or recommendation; without
    a stale_view step, no exposure."""

    path: Path
    summary: pd.DataFrame
    comparison: pd.DataFrame | None
    recommendation: pd.DataFrame | None
    exposure: pd.DataFrame | None  # per (scenario, strategy), the most exposed first


def load_run(run: str | Path) -> Run:
    root = require_run(run)
    summary = load_table(root, "summary")
    assert summary is not None  # require_run checked it
    return Run(
        root,
        summary,
        load_table(root, "comparison"),
        load_table(root, "recommendation"),
        _most_exposed_first(load_table(root, "exposure")),
    )


def snapshot_summary(run: Run) -> pd.DataFrame:
    """The summary of the snapshot: phase 0 of the first scenario (every scenario starts from the
    same phase 0), or every row of a run without scenarios."""
    summary = run.summary
    if run.comparison is not None:
        summary = summary[(summary.scenario == summary.scenario.min()) & (summary.phase == 0)]
    return summary.sort_values(["scenario", "phase", "strategy"]).reset_index(drop=True)


def _most_exposed_first(exposure: pd.DataFrame | None) -> pd.DataFrame | None:
    """Most exposed first (rollups.exposure), whatever order the files are read in."""
    if exposure is None:
        return None
    order = exposure.sort_values(["scenario", "at_risk_fraction", "strategy"], ascending=[True, False, True])
    return order.reset_index(drop=True)


def moved_per_step(run: str | Path) -> pd.DataFrame | None:
    """Per (scenario, strategy, step): the queues that changed owner from phase step - 1 to step,
    and the fewest that could have. None for a run without scenarios."""
    movement = _dataset(run, "movement")
    if movement is None:
        return None
    steps = movement.to_table(
        columns=["scenario", "strategy", "to_phase", "moved", "min_moves"],
        filter=ds.field("to_phase") == ds.field("from_phase") + 1,
    )
    summed = steps.group_by(["scenario", "strategy", "to_phase"]).aggregate(
        # min_moves is null for the step where any (topic, group) has none, as in comparison/.
        [("moved", "sum"), ("min_moves", "sum", pc.ScalarAggregateOptions(skip_nulls=False))]
    )
    return (
        _pandas(summed)
        .rename(columns={"to_phase": "step", "moved_sum": "moved", "min_moves_sum": "min_moves"})
        .sort_values(["scenario", "strategy", "step"])
        .reset_index(drop=True)
    )


@dataclass(frozen=True)
class Focus:
    """The scenario and group to look at closely, and the scenario's last phase."""

    scenario: str
    group: str
    last_phase: int


def focus(run: Run, *, scenario: str | None = None, group: str | None = None) -> Focus:
    """``scenario`` (default: the one where most queues moved) and ``group`` (default: the group
    that moved most in it). A name the run does not have is an InputError."""
    if run.comparison is None or run.comparison.empty:
        raise InputError("arguments", "--run", f"{run.path} has no scenario phases: run simulate --scenarios")
    totals = run.comparison.groupby("scenario").queues_moved.sum()
    if scenario is None:
        scenario = str(totals.idxmax())
    elif scenario not in totals.index:
        raise InputError(
            "arguments", "--scenario", f"no scenario {scenario!r} in {run.path}: {sorted(totals.index)}"
        )
    moved = _moved_per_group(run.path, scenario)
    if group is None and not moved.empty:
        group = str(moved.idxmax())
    if group not in moved.index:
        raise InputError("arguments", "--group", f"no group {group!r} in scenario {scenario!r} of {run.path}")
    last_phase = int(run.comparison[run.comparison.scenario == scenario].last_phase.max())
    return Focus(scenario, str(group), last_phase)


def _moved_per_group(run: Path, scenario: str) -> pd.Series:
    """Queues moved per group in ``scenario``, summed over strategies and phase pairs, by name."""
    movement = _dataset(run, "movement")
    if movement is None:
        return pd.Series(dtype="int64")
    rows = movement.to_table(columns=["group", "moved"], filter=ds.field("scenario") == scenario)
    summed = _pandas(rows.group_by("group").aggregate([("moved", "sum")]))
    # Sorted by name so that a tie goes to the first group, whatever order Arrow grouped in.
    return summed.set_index("group").moved_sum.sort_index()


def group_load(run: str | Path, *, scenario: str, group: str, phases: Iterable[int]) -> pd.DataFrame:
    """consumer_load of one group in one scenario at ``phases``: a client per row and strategy."""
    where = (
        (ds.field("scenario") == scenario)
        & (ds.field("group") == group)
        & ds.field("phase").isin(sorted(set(phases)))
    )
    load = load_table(run, "consumer_load", filter=where)
    if load is None:
        raise InputError(str(run), "consumer_load", "missing: not a complete simulate output")
    return load
