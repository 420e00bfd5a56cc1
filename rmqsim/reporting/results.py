"""A run's outputs as pandas, for the report, the HTML page and notebooks: pyarrow, no Spark.

The summary tables (a row per scenario, phase and strategy, or per group) are small and read whole.
consumer_load and movement grow with the fleet: they are read filtered or aggregated in Arrow, so
a notebook on a million-group run holds one group's rows, not the fleet's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from rmqsim import phases as phased
from rmqsim import schemas
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


def _optional_pandas(table: pa.Table | None) -> pd.DataFrame | None:
    return None if table is None else _pandas(table)


# The partition keys are names: inferred, scenario=07 would be the integer 7.
_PARTITIONING = ds.partitioning(
    pa.schema([("scenario", pa.string()), ("strategy", pa.string())]), flavor="hive"
)


def _dataset(run: str | Path, name: str) -> ds.Dataset | None:
    """Table ``name`` of the run, with its schema's columns even where it has no rows (a stage
    table whose tasks wrote no file)."""
    path = Path(run) / name
    if not path.is_dir():
        return None
    schema = schemas.arrow(schemas.OUTPUTS[name].schema) if name in schemas.OUTPUTS else None
    return ds.dataset(path, schema=schema, format="parquet", partitioning=_PARTITIONING)


def phase_table(
    run: str | Path,
    name: str,
    *,
    scenario: str | None = None,
    filter: ds.Expression | None = None,
    columns: list[str] | None = None,
    phases_wanted: Iterable[int] | None = None,
) -> pa.Table | None:
    """Table ``name`` (one of rmqsim.phases.PHASED_TABLES) with every phase whole: a run that wrote
    only what later phases changed is rebuilt from phase 0 and touched/ (docs/CONTRACT.md, section
    4). ``scenario``: its rows alone; ``filter``: on other columns than scenario and the phase;
    ``phases_wanted``: these phases (to_phase for movement). None where the table is absent."""
    dataset = _dataset(run, name)
    if dataset is None:
        return None
    at = "to_phase" if name == "movement" else "phase"
    touched = load_touched(run)
    keys = {"scenario", at, "from_phase"} & set(dataset.schema.names) | set(phased.KEYS[name])
    read = None if columns is None else sorted(set(columns) | keys)
    mine = ds.field("scenario") == scenario if scenario is not None else None
    if touched is not None and mine is not None:
        mine = mine | ((ds.field("scenario") == phased.SNAPSHOT) & (ds.field(at) == 0))
    where = mine if filter is None else (filter if mine is None else mine & filter)
    rows = dataset.to_table(filter=where, columns=read)
    if touched is not None:
        if scenario is not None:
            touched = touched.filter(pc.equal(touched["scenario"], scenario))
        last = phased.last_phases(load_table_arrow(run, "summary", ["scenario", "phase"]))
        only = None if scenario is None else (scenario,)
        rows = phased.full(name, rows, touched, last, scenarios=only)
    if phases_wanted is not None:
        rows = rows.filter(pc.is_in(rows[at], value_set=pa.array(sorted(set(phases_wanted)), rows[at].type)))
    return rows if columns is None else rows.select(columns)


def load_touched(run: str | Path) -> pa.Table | None:
    """touched/ of a run that wrote only what later phases changed; None for one written whole."""
    return load_table_arrow(run, "touched")


def load_table_arrow(run: str | Path, name: str, columns: list[str] | None = None) -> pa.Table | None:
    dataset = _dataset(run, name)
    return None if dataset is None else dataset.to_table(columns=columns)


def require_run(run: str | Path) -> Path:
    root = Path(run)
    if not (root / RUN_MARK).is_dir():
        raise InputError("arguments", "--run", f"{run} is not a simulate output directory (no {RUN_MARK}/)")
    return root


@dataclass(frozen=True)
class Run:
    """A run's small tables. Without scenarios there is no comparison or recommendation; without
    a stale_view step, no exposure; without capacities, no falling_behind."""

    path: Path
    summary: pd.DataFrame
    comparison: pd.DataFrame | None
    recommendation: pd.DataFrame | None
    exposure: pd.DataFrame | None  # per (scenario, strategy), the most exposed first
    # Per (scenario, phase, strategy, group) behind; None: the run had no capacities (section 2d).
    falling_behind: pd.DataFrame | None = None
    # Per (sweep, element, strategy), ranked; None: the run had no sweeps (section 2f).
    sweep: pd.DataFrame | None = None


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
        _optional_pandas(phase_table(root, "falling_behind")),
        load_table(root, "sweep"),
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


def unread_over_time(run: str | Path) -> pd.DataFrame | None:
    """Per (scenario, strategy), the queues no client reads over time, from handover/'s unread
    times: a row per time that count changes (``t_s``, seconds from the scenario's start), with
    the count from then on (``queues_unread``). None where no queue went unread."""
    handover = load_table_arrow(run, "handover", ["scenario", "strategy", "unread_from_s", "unread_until_s"])
    if (
        handover is None
        or not pc.sum(pc.fill_null(pc.list_value_length(handover["unread_from_s"]), 0)).as_py()
    ):
        return None
    row = pc.list_parent_indices(handover["unread_from_s"])
    starts = pc.list_flatten(handover["unread_from_s"]).to_numpy()
    ends = pc.list_flatten(handover["unread_until_s"]).to_numpy()
    changes = pd.DataFrame(
        {
            "scenario": np.tile(handover["scenario"].take(row).to_numpy(zero_copy_only=False), 2),
            "strategy": np.tile(handover["strategy"].take(row).to_numpy(zero_copy_only=False), 2),
            "t_s": np.concatenate([starts, ends]),
            "step": np.repeat([1, -1], len(starts)),
        }
    )
    out = changes.groupby(["scenario", "strategy", "t_s"], as_index=False).step.sum()
    out["queues_unread"] = out.groupby(["scenario", "strategy"]).step.cumsum()
    return out.drop(columns="step")


def moved_per_step(run: str | Path) -> pd.DataFrame | None:
    """Per (scenario, strategy, step): the queues that changed owner from phase step - 1 to step,
    and the fewest that could have. None for a run without scenarios."""
    movement = phase_table(
        run, "movement", columns=["scenario", "strategy", "from_phase", "to_phase", "moved", "min_moves"]
    )
    if movement is None:
        return None
    step = pc.equal(movement["to_phase"], pc.add(movement["from_phase"], 1))
    steps = movement.filter(step).select(["scenario", "strategy", "to_phase", "moved", "min_moves"])
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
    rows = phase_table(run, "movement", scenario=scenario, columns=["group", "moved"])
    if rows is None:
        return pd.Series(dtype="int64")
    summed = _pandas(rows.group_by("group").aggregate([("moved", "sum")]))
    # Sorted by name so that a tie goes to the first group, whatever order Arrow grouped in.
    return summed.set_index("group").moved_sum.sort_index()


def group_load(run: str | Path, *, scenario: str, group: str, phases: Iterable[int]) -> pd.DataFrame:
    """consumer_load of one group in one scenario at ``phases``: a client per row and strategy."""
    load = phase_table(
        run, "consumer_load", scenario=scenario, filter=ds.field("group") == group, phases_wanted=phases
    )
    if load is None:
        raise InputError(str(run), "consumer_load", "missing: not a complete simulate output")
    return _pandas(load)


# At most this many groups named per cell of the overview: a fleet can have thousands behind.
NAMED_GROUPS = 5


def overview(run: Run) -> pd.DataFrame:
    """One row per scenario, what matters first: the groups that fall behind in some phase after
    the snapshot (a text naming each with the strategies it falls behind under; null without
    capacities or without a step), and the messages per second stranded at phase 0, at the last
    phase and the most after a step, with the backlog left stranded; the advice where a step
    strands more. snapshot_behind says which groups are behind at phase 0.

    Stranded figures are the most over the strategies: which queues a group reads does not depend
    on who reads them, only the groups a strategy skips (CONFIG without queue_config) differ. From
    summary/, so that a run without scenarios (phase 0 only) gets the same row."""
    rows = []
    for scenario, phases in run.summary.groupby("scenario", sort=True):
        last = int(phases.phase.max())
        first, final = phases[phases.phase == 0], phases[phases.phase == last]
        steps = phases[phases.phase > 0]
        rows.append(
            {
                "scenario": scenario,
                "last_phase": last,
                "behind_after_a_step": _behind(run.falling_behind, steps) if last else None,
                "stranded_msgs_per_s_before": _most(first, "stranded_msgs_per_s"),
                "stranded_msgs_per_s_after": _most(final, "stranded_msgs_per_s") if last else None,
                "most_stranded_msgs_per_s": _most(steps, "stranded_msgs_per_s"),
                "stranded_backlog_after": _most(final, "stranded_backlog") if last else None,
                "advice": _advice(run.comparison, scenario),
            }
        )
    return pd.DataFrame(rows, columns=list(OVERVIEW_KEYS), dtype=object)  # ints stay ints beside nulls


OVERVIEW_KEYS = (
    "scenario",
    "last_phase",
    "behind_after_a_step",
    "stranded_msgs_per_s_before",
    "stranded_msgs_per_s_after",
    "most_stranded_msgs_per_s",
    "stranded_backlog_after",
    "advice",
)


def snapshot_behind(run: Run) -> str | None:
    """The groups behind at phase 0, as overview names them: every scenario starts from the same
    phase 0, so the first one's. None without capacities."""
    summary = run.summary
    first = summary[(summary.scenario == summary.scenario.min()) & (summary.phase == 0)]
    return _behind(run.falling_behind, first)


def _most(rows: pd.DataFrame, column: str) -> object:
    """The column's largest value in ``rows``; None where it has none (no traffic, no offsets)."""
    if column not in rows or rows[column].isna().all():
        return None
    value = rows[column].max()
    return int(value) if pd.api.types.is_integer_dtype(rows[column]) else float(value)


def _behind(behind: pd.DataFrame | None, phases: pd.DataFrame) -> str | None:
    """The groups of falling_behind/ in the (scenario, phase)s of summary rows ``phases``, as
    "group (k of n strategies)": behind in some of those phases under k of the n strategies run,
    most strategies first; "none" where no group is; None where not known: without capacities (no
    falling_behind/), or where no client with a capacity has known messages (groups_behind null)."""
    if behind is None or ("groups_behind" in phases and phases.groups_behind.isna().all()):
        return None
    keys = ["scenario", "phase", "strategy"]
    rows = behind.merge(phases[keys].drop_duplicates(), on=keys)
    if rows.empty:
        return "none"
    of = phases.strategy.nunique()
    counts = rows.groupby("group").strategy.nunique().reset_index()
    counts = counts.sort_values(["strategy", "group"], ascending=[False, True])
    named = [f"{g} ({k} of {of} strategies)" for g, k in zip(counts.group, counts.strategy)]
    more = len(named) - NAMED_GROUPS
    if more > 0:
        named[NAMED_GROUPS:] = [f"and {more} more group{'s' if more > 1 else ''}"]
    return ", ".join(named)


def _advice(comparison: pd.DataFrame | None, scenario: str) -> str | None:
    if comparison is None:
        return None
    advice = comparison[comparison.scenario == scenario].advice.dropna()
    return str(advice.iloc[0]) if len(advice) else None


def capacity_groups(run: str | Path) -> pd.DataFrame | None:
    """Per (scenario, group) whose clients have a known capacity: its clients over capacity, summed
    over phases and strategies, and its highest load over capacity; the worst first in each
    scenario. None where no client has a capacity (or the run predates capacities). Aggregated in
    Arrow: consumer_load has a row per client."""
    load = _dataset(run, "consumer_load")
    if load is None or "capacity_msgs_per_s" not in load.schema.names:
        return None
    rows = phase_table(
        run,
        "consumer_load",
        columns=["scenario", "group", "over_capacity", "load_over_capacity"],
        filter=ds.field("capacity_msgs_per_s").is_valid(),
    )
    if rows.num_rows == 0:
        return None
    over = pc.cast(pc.fill_null(rows["over_capacity"], False), pa.int64())
    per = (
        rows.append_column("_over", over)
        .group_by(["scenario", "group"])
        .aggregate([("_over", "sum"), ("load_over_capacity", "max")])
    )
    out = _pandas(per).rename(columns={"_over_sum": "over", "load_over_capacity_max": "worst"})
    order = out.sort_values(["scenario", "over", "worst", "group"], ascending=[True, False, False, True])
    return order.reset_index(drop=True)


def capacity_load(
    run: str | Path, *, scenario: str, groups: Iterable[str], phases: Iterable[int]
) -> pd.DataFrame:
    """consumer_load's messages and capacities of ``groups`` in ``scenario`` at ``phases``."""
    columns = [
        "strategy",
        "phase",
        "group",
        "client_id",
        "msgs_per_s",
        "capacity_msgs_per_s",
        "over_capacity",
    ]
    load = phase_table(
        run,
        "consumer_load",
        scenario=scenario,
        filter=ds.field("group").isin(sorted(set(groups))),
        columns=columns,
        phases_wanted=phases,
    )
    if load is None:
        raise InputError(str(run), "consumer_load", "missing: not a complete simulate output")
    return _pandas(load)
