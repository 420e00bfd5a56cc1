"""PNG charts of a run, next to its tables (`rmqsim report --run DIR`): matplotlib, headless.

A run's summary tables are small, so they are read with pyarrow on the driver; consumer_load is
read for the one chosen group only (a Parquet filter), whatever the size of the fleet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds

from rmqsim.errors import InputError


@dataclass(frozen=True)
class Charts:
    moved: Path | None  # moved queues per strategy per scenario
    load: Path | None  # per-client load before and after, for one group
    group: str | None
    scenario: str | None


def _table(run: Path, name: str, filter=None) -> pd.DataFrame | None:
    path = run / name
    if not path.is_dir():
        return None
    return ds.dataset(path, format="parquet", partitioning="hive").to_table(filter=filter).to_pandas()


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and in CI
    import matplotlib.pyplot as plt

    return plt


def moved_chart(comparison: pd.DataFrame, out: Path) -> Path:
    """Per scenario, each strategy's queues moved (phase 0 against the last) beside min_moves."""
    plt = _pyplot()
    scenarios = sorted(comparison.scenario.unique())
    fig, axes = plt.subplots(len(scenarios), 1, figsize=(9, 2.6 * len(scenarios)), squeeze=False)
    for ax, scenario in zip(axes[:, 0], scenarios):
        rows = comparison[comparison.scenario == scenario].sort_values("strategy")
        x = range(len(rows))
        ax.bar([i - 0.2 for i in x], rows.queues_moved.fillna(0), width=0.4, label="moved")
        ax.bar([i + 0.2 for i in x], rows.min_moves.fillna(0), width=0.4, label="fewest possible")
        ax.set_xticks(list(x), rows.strategy, fontsize=8)
        ax.set_title(
            f"{scenario}: queues that change owner, phase 0 to {int(rows.last_phase.max())}", fontsize=10
        )
        ax.set_ylabel("queues")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "moved_per_strategy.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def load_chart(load: pd.DataFrame, *, group: str, scenario: str, last_phase: int, out: Path) -> Path:
    """Queues per client of one group, phase 0 against the last phase, one panel per strategy."""
    plt = _pyplot()
    strategies = sorted(load.strategy.unique())
    fig, axes = plt.subplots(len(strategies), 1, figsize=(9, 2.4 * len(strategies)), squeeze=False)
    for ax, strategy in zip(axes[:, 0], strategies):
        rows = load[load.strategy == strategy]
        wide = rows.pivot_table(index="client_id", columns="phase", values="queues", aggfunc="sum").fillna(0)
        wide = wide.reindex(columns=[0, last_phase], fill_value=0)
        x = range(len(wide))
        ax.bar([i - 0.2 for i in x], wide[0], width=0.4, label="phase 0")
        ax.bar([i + 0.2 for i in x], wide[last_phase], width=0.4, label=f"phase {last_phase}")
        ax.set_xticks(list(x), wide.index, rotation=60, ha="right", fontsize=6)
        ax.set_title(f"{strategy}", fontsize=10)
        ax.set_ylabel("queues")
        ax.legend(fontsize=8)
    fig.suptitle(f"group {group}, scenario {scenario}: queues per client over its topics")
    fig.tight_layout()
    path = out / f"load_{_safe(scenario)}_{_safe(group)}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def write_charts(run: str, *, group: str | None = None, scenario: str | None = None) -> Charts:
    """Write the charts into ``run/charts/``. Without ``group``: the group with the most queues
    moved in ``scenario`` (default: the scenario where most queues moved)."""
    root = Path(run)
    if not (root / "summary").is_dir():
        raise InputError("arguments", "--run", f"{run} is not a simulate output directory (no summary/)")
    out = root / "charts"
    out.mkdir(exist_ok=True)
    comparison = _table(root, "comparison")
    movement = _table(root, "movement")
    if comparison is None or movement is None or comparison.empty:
        return Charts(None, None, None, None)  # a run without scenarios has nothing moving
    moved = moved_chart(comparison, out)
    totals = comparison.groupby("scenario").queues_moved.sum()
    if scenario is None:
        scenario = str(totals.idxmax())
    elif scenario not in totals.index:
        raise InputError(
            "arguments", "--scenario", f"no scenario {scenario!r} in {run}: {sorted(totals.index)}"
        )
    mine = movement[movement.scenario == scenario]
    if group is None:
        group = str(mine.groupby("group").moved.sum().idxmax())
    elif group not in set(mine.group):
        raise InputError("arguments", "--group", f"no group {group!r} in scenario {scenario!r} of {run}")
    last_phase = int(comparison[comparison.scenario == scenario].last_phase.max())
    load = _table(
        root,
        "consumer_load",
        filter=(ds.field("scenario") == scenario) & (ds.field("group") == group),
    )
    load = load[load.phase.isin([0, last_phase])]
    return Charts(
        moved,
        load_chart(load, group=group, scenario=scenario, last_phase=last_phase, out=out),
        group,
        scenario,
    )
