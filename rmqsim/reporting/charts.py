"""Charts of a run: PNG files next to its tables (`rmqsim report --run DIR`), and the same figures
for notebooks.

Figures are built as bare matplotlib ``Figure`` objects, never through pyplot: no backend to pick
on a server without a display, no global figure list to close, and a notebook's inline backend is
left alone (a figure returned from a cell shows there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from rmqsim.reporting import results, text
from rmqsim.scenarios.parse import ELEMENT


@dataclass(frozen=True)
class Charts:
    moved: Path | None  # moved queues per strategy per scenario
    load: Path | None  # per-client load before and after, for one group
    group: str | None
    scenario: str | None
    # With traffic (docs/CONTRACT.md, section 2c): the same group's messages per client, and
    # the messages each scenario strands.
    messages: Path | None = None
    stranded: Path | None = None
    # With capacities (section 2d): per scenario, its clients' messages against their capacity.
    capacity: tuple[tuple[str, Path], ...] = ()
    # With sweeps (section 2f): each sweep's worst elements.
    sweep: Path | None = None
    # With hand-overs that leave queues unread (section 2e): per scenario, those queues over time.
    unread: Path | None = None


def _panels(count: int, height: float) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(9, height * count))
    axes = fig.subplots(count, 1, squeeze=False)
    return fig, list(axes[:, 0])


# Strategy names are long (MACHINE_ROOM_NEARBY): slanted, they do not run into each other.
STRATEGY_TICKS = {"fontsize": 8, "rotation": 20, "ha": "right"}


def _pairs(
    ax: Axes, labels: Sequence[str], left, right, *, names: tuple[str, str], ylabel: str, **ticks
) -> None:
    """Two bars per label, side by side; ``ticks`` styles the labels (default: STRATEGY_TICKS)."""
    _bars(ax, labels, [left, right], names=names, ylabel=ylabel, **ticks)


def _bars(
    ax: Axes, labels: Sequence[str], series: Sequence, *, names: Sequence[str], ylabel: str, **ticks
) -> None:
    """One bar per series for each label, side by side."""
    x = range(len(labels))
    width = 0.8 / len(series)
    for k, (values, name) in enumerate(zip(series, names)):
        ax.bar([i + (k - (len(series) - 1) / 2) * width for i in x], values, width=width, label=name)
    ax.set_xticks(list(x), labels, **(ticks or STRATEGY_TICKS))
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)


def moved_figure(comparison: pd.DataFrame) -> Figure:
    """Per scenario, each strategy's queues moved (phase 0 against the last), the moves summed over
    its steps, and min_moves. A broker restart can end where it began (0 moved from phase 0 to
    the last) while both steps moved queues: that churn is what the restart costs."""
    scenarios = sorted(comparison.scenario.unique())
    fig, axes = _panels(len(scenarios), 2.6)
    for ax, scenario in zip(axes, scenarios):
        rows = comparison[comparison.scenario == scenario].sort_values("strategy")
        # No bar where min_moves is null: 0 would claim that nothing had to move.
        moved, fewest = rows.queues_moved.fillna(0), rows.min_moves.astype("float64")
        over_steps = rows.moved_over_steps.fillna(0)
        _bars(
            ax,
            rows.strategy,
            [moved, over_steps, fewest],
            names=(
                f"moved, phase 0 to {int(rows.last_phase.max())}",
                "moved, summed over steps",
                "fewest possible",
            ),
            ylabel="queues",
        )
        last = int(rows.last_phase.max())
        ax.set_title(f"{scenario}: queues that change owner, phase 0 to {last}", fontsize=10)
    fig.tight_layout()
    return fig


def balance_figure(comparison: pd.DataFrame) -> Figure:
    """Per scenario, each strategy's fleet max/mean queues per client, phase 0 beside the last."""
    scenarios = sorted(comparison.scenario.unique())
    fig, axes = _panels(len(scenarios), 2.6)
    for ax, scenario in zip(axes, scenarios):
        rows = comparison[comparison.scenario == scenario].sort_values("strategy")
        last = int(rows.last_phase.max())
        before, after = rows.fleet_max_over_mean_before, rows.fleet_max_over_mean_after
        _pairs(ax, rows.strategy, before, after, names=("phase 0", f"phase {last}"), ylabel="max / mean")
        ax.axhline(1.0, color="grey", linewidth=0.8)  # perfectly even
        ax.set_title(f"{scenario}: busiest client's queues over the mean, fleet-wide", fontsize=10)
    fig.tight_layout()
    return fig


# What a load chart can show per client: consumer_load's column, and its axis label.
LOADS = {"queues": "queues", "msgs_per_s": "messages per second"}


def load_figure(
    load: pd.DataFrame, *, group: str, scenario: str, last_phase: int, value: str = "queues"
) -> Figure:
    """Queues (or messages per second: ``value`` "msgs_per_s") per client of one group, phase 0
    against the last phase, one panel per strategy."""
    strategies = sorted(load.strategy.unique())
    fig, axes = _panels(len(strategies), 2.4)
    for ax, strategy in zip(axes, strategies):
        rows = load[load.strategy == strategy]
        wide = rows.pivot_table(index="client_id", columns="phase", values=value, aggfunc="sum").fillna(0)
        wide = wide.reindex(columns=[0, last_phase], fill_value=0)
        names = ("phase 0", f"phase {last_phase}")
        ticks = {"rotation": 60, "ha": "right", "fontsize": 6}  # client ids are long
        _pairs(ax, wide.index, wide[0], wide[last_phase], names=names, ylabel=LOADS[value], **ticks)
        ax.set_title(strategy, fontsize=10)
    fig.suptitle(f"group {group}, scenario {scenario}: {LOADS[value]} per client over its topics")
    fig.tight_layout()
    return fig


def stranded_figure(comparison: pd.DataFrame) -> Figure:
    """Per scenario, the messages per second written where no reader of a group reads them: in the
    snapshot, and the most any later phase strands (the largest over the strategies: which queues
    a group reads does not depend on who reads them, only groups a strategy skips differ)."""
    per = comparison.groupby("scenario")[["stranded_msgs_per_s_before", "most_stranded_msgs_per_s"]].max()
    per = per.sort_index().fillna(0)
    fig, (ax,) = _panels(1, 3.4)
    names = ("phase 0", "most after a step")
    _pairs(
        ax,
        per.index,
        per.stranded_msgs_per_s_before,
        per.most_stranded_msgs_per_s,
        names=names,
        ylabel="messages per second",
    )
    ax.set_title("messages written to queues a group does not read (stranded), per scenario", fontsize=10)
    fig.tight_layout()
    return fig


# Phase 0 pale, the last phase dark; red where the client reads more than its capacity.
CAPACITY_COLOURS = {
    (False, False): "#9ecae1",
    (False, True): "#3182bd",
    (True, False): "#fcae91",
    (True, True): "#cb181d",
}


def capacity_figure(load: pd.DataFrame, *, scenario: str, last_phase: int) -> Figure:
    """One panel per group of ``load`` (results.capacity_load): a block of bars per strategy, in
    each a pair per client (phase 0, the last phase) of the messages per second it reads, red
    where that is over its capacity, and its capacity as a black line across the pair. Clients
    are in the same order in every block, the largest capacity first: the lines say which is which."""
    groups = sorted(load.group.unique())
    # Constrained layout puts the legend under the panels, where it hides no bar.
    fig = Figure(figsize=(9, 2.8 * len(groups) + 0.6), layout="constrained")
    axes = fig.subplots(len(groups), 1, squeeze=False)[:, 0]
    for ax, group in zip(axes, groups):
        _capacity_panel(ax, load[load.group == group], last_phase)
        ax.set_title(f"group {group}", fontsize=10)
    fig.suptitle(f"scenario {scenario}: messages per second per client against its capacity", fontsize=11)
    fig.legend(handles=_capacity_legend(last_phase), fontsize=8, ncol=5, loc="outside lower center")
    return fig


def _capacity_panel(ax: Axes, rows: pd.DataFrame, last_phase: int) -> None:
    """The bars in one call, not one per client: a group can have hundreds of clients."""
    capacities = rows.groupby("client_id").capacity_msgs_per_s.max()
    # The largest capacity first, unknown ones last, then by id: the same order in every block.
    clients = sorted(capacities.index, key=lambda c: (pd.isna(capacities[c]), -(capacities[c] or 0), c))
    strategies = sorted(rows.strategy.unique())
    slot = len(clients) + 1  # a gap between the strategies' blocks
    phases = [0, last_phase] if last_phase else [0]
    width = 0.8 / len(phases)
    bars = rows[rows.phase.isin(phases)]
    centre = bars.strategy.map(strategies.index) * slot + bars.client_id.map(clients.index)
    k = bars.phase.map(phases.index)
    over = bars.over_capacity.astype("boolean").fillna(False)
    colours = [CAPACITY_COLOURS[(bool(o), bool(p))] for o, p in zip(over, k.eq(1))]
    ax.bar(centre - 0.4 + width * (k + 0.5), bars.msgs_per_s.astype("float64"), width=width, color=colours)
    known = [(b * slot + j, capacities[c]) for b in range(len(strategies)) for j, c in enumerate(clients)]
    known = [(x, cap) for x, cap in known if pd.notna(cap)]
    if known:
        xs, caps = zip(*known)
        ax.hlines(caps, [x - 0.45 for x in xs], [x + 0.45 for x in xs], colors="black", linewidth=1.5)
    centres = [b * slot + (len(clients) - 1) / 2 for b in range(len(strategies))]
    ax.set_xticks(centres, strategies, **STRATEGY_TICKS)
    ax.set_ylabel("messages per second")


def _capacity_legend(last_phase: int) -> list:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(color=CAPACITY_COLOURS[(False, False)], label="phase 0")]
    if last_phase:
        handles.append(Patch(color=CAPACITY_COLOURS[(False, True)], label=f"phase {last_phase}"))
    handles.append(Patch(color=CAPACITY_COLOURS[(True, False)], label="phase 0, over capacity"))
    if last_phase:
        handles.append(
            Patch(color=CAPACITY_COLOURS[(True, True)], label=f"phase {last_phase}, over capacity")
        )
    handles.append(Line2D([], [], color="black", linewidth=1.5, label="capacity"))
    return handles


def steps_figure(steps: pd.DataFrame) -> Figure:
    """Per scenario, the queues each strategy moves at each step (results.moved_per_step)."""
    scenarios = sorted(steps.scenario.unique())
    fig, axes = _panels(len(scenarios), 2.6)
    for ax, scenario in zip(axes, scenarios):
        rows = steps[steps.scenario == scenario]
        wide = rows.pivot_table(index="strategy", columns="step", values="moved", aggfunc="sum").fillna(0)
        width = 0.8 / len(wide.columns)
        for k, step in enumerate(wide.columns):
            offsets = [i - 0.4 + width * (k + 0.5) for i in range(len(wide))]
            ax.bar(offsets, wide[step], width=width, label=f"phase {step - 1} to {step}")
        ax.set_xticks(range(len(wide)), wide.index, **STRATEGY_TICKS)
        ax.set_ylabel("queues moved")
        ax.legend(fontsize=8)
        ax.set_title(f"{scenario}: queues that change owner at each step", fontsize=10)
    fig.tight_layout()
    return fig


def exposure_figure(exposure: pd.DataFrame) -> Figure:
    """Per stale_view scenario, each strategy's queues read twice and read by none
    (the run's exposure/ table)."""
    scenarios = sorted(exposure.scenario.unique())
    fig, axes = _panels(len(scenarios), 2.6)
    for ax, scenario in zip(axes, scenarios):
        rows = exposure[exposure.scenario == scenario].sort_values("strategy")
        twice, none = rows.multi_owned_queues, rows.unassigned_queues
        _pairs(ax, rows.strategy, twice, none, names=("read twice", "read by none"), ylabel="queues")
        ax.set_title(f"{scenario}: split-brain risk while some clients see the old view", fontsize=10)
    fig.tight_layout()
    return fig


def unread_figure(unread: pd.DataFrame) -> Figure:
    """Per scenario of ``unread`` (results.unread_over_time), a line per strategy: how many queues
    no client reads, over the seconds since the scenario began."""
    scenarios = sorted(unread.scenario.unique())
    fig, axes = _panels(len(scenarios), 2.4)
    for ax, scenario in zip(axes, scenarios):
        rows = unread[unread.scenario == scenario]
        for strategy, line in rows.groupby("strategy", sort=True):
            # from nothing unread before the first hand-over, a step at each change
            t = [line.t_s.iloc[0], *line.t_s]
            ax.step(t, [0, *line.queues_unread], where="post", label=strategy, linewidth=1.2)
        ax.set_xlabel("seconds since the scenario began")
        ax.set_ylabel("queues unread")
        ax.legend(fontsize=7, ncol=4)
        ax.set_title(f"{scenario}: queues no client reads while they are handed over", fontsize=10)
    fig.tight_layout()
    return fig


SWEEP_ELEMENTS = 10  # elements per sweep chart, the worst first


def sweep_figure(sweep: pd.DataFrame) -> Figure:
    """Per sweep, its worst elements (text.worst_elements): each one's lag growth and messages
    stranded or unroutable, over every strategy run, the worst element on top."""
    worst = text.worst_elements(sweep.to_dict("records"), SWEEP_ELEMENTS)
    fig, axes = _panels(len(worst), 0.4 * SWEEP_ELEMENTS + 1.2)
    for ax, (name, elements) in zip(axes, worst.items()):
        labels = [e["element"] for e in elements][::-1]
        y = range(len(labels))
        growth = [e["lag_growth_msgs_per_s"] or 0.0 for e in elements][::-1]
        lost = [e["lost_msgs_per_s"] or 0.0 for e in elements][::-1]
        ax.barh([i + 0.2 for i in y], growth, height=0.4, label="lag growth")
        ax.barh([i - 0.2 for i in y], lost, height=0.4, label="stranded or unroutable")
        ax.set_yticks(list(y), labels, fontsize=8)
        ax.set_xlabel("messages per second (the worst strategy's)")
        ax.legend(fontsize=8)
        ax.set_title(f"sweep {name}: the worst elements, by mean rank over the strategies", fontsize=10)
    fig.tight_layout()
    return fig


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    return path


def write_charts(run: str, *, group: str | None = None, scenario: str | None = None) -> Charts:
    """Write the charts into ``run/charts/``. Without ``group``: the group with the most queues
    moved in ``scenario`` (default: the scenario where most queues moved)."""
    tables = results.load_run(run)
    out = tables.path / "charts"
    out.mkdir(exist_ok=True)
    swept = None
    if tables.sweep is not None and not tables.sweep.empty:
        swept = _save(sweep_figure(tables.sweep), out / "sweep_worst_elements.png")
    if tables.comparison is None or tables.comparison.empty:
        return Charts(None, None, None, None, sweep=swept)  # a run without scenarios has nothing moving
    moved = _save(moved_figure(tables.comparison), out / "moved_per_strategy.png")
    chosen = results.focus(tables, scenario=scenario, group=group)
    load = results.group_load(
        run, scenario=chosen.scenario, group=chosen.group, phases=(0, chosen.last_phase)
    )
    where = dict(group=chosen.group, scenario=chosen.scenario, last_phase=chosen.last_phase)
    name = f"{_safe(chosen.scenario)}_{_safe(chosen.group)}.png"
    path = _save(load_figure(load, **where), out / f"load_{name}")
    messages = stranded = None
    if (
        "msgs_per_s" in load and load.msgs_per_s.notna().any()
    ):  # a run with traffic (older runs lack the column)
        messages = _save(load_figure(load, **where, value="msgs_per_s"), out / f"messages_{name}")
        stranded = _save(stranded_figure(tables.comparison), out / "stranded_per_scenario.png")
    capacity = _capacity_charts(tables, out)
    timeline = results.unread_over_time(run)
    if timeline is not None:  # the scenarios of the file, not a sweep's elements
        timeline = timeline[~timeline.scenario.str.contains(ELEMENT, regex=False)]
    unread = None
    if timeline is not None and not timeline.empty:
        unread = _save(unread_figure(timeline), out / "unread_over_time.png")
    return Charts(moved, path, chosen.group, chosen.scenario, messages, stranded, capacity, swept, unread)


# Groups per capacity chart: a fleet can have thousands with capacities; the worst are shown.
CAPACITY_GROUPS = 4


def _capacity_charts(tables: results.Run, out: Path) -> tuple[tuple[str, Path], ...]:
    """Per scenario, capacity_figure of its CAPACITY_GROUPS groups with the most clients over
    capacity; nothing where no client has a capacity."""
    groups = results.capacity_groups(tables.path)
    if groups is None:
        return ()
    last_phases = tables.comparison.groupby("scenario").last_phase.max()
    written = []
    for scenario, mine in groups.groupby("scenario", sort=True):
        last = int(last_phases.get(scenario, 0))
        load = results.capacity_load(
            tables.path, scenario=scenario, groups=mine.group.head(CAPACITY_GROUPS), phases=(0, last)
        )
        figure = capacity_figure(load, scenario=scenario, last_phase=last)
        written.append((scenario, _save(figure, out / f"capacity_{_safe(scenario)}.png")))
    return tuple(written)
