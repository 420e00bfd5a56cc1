"""The terminal's tables, each at most WIDTH columns: one table per concern, a row per strategy,
scenario or group, the strategies folded where a row is a scenario. The run's tables and its HTML
report hold every column; `--wide` prints text's wide tables."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from rmqsim.reporting.findings import WIDTH
from rmqsim.reporting.text import format_sweep, format_table
from rmqsim.scenarios.parse import ELEMENT

Rows = Sequence[Mapping[str, object]]
SCENARIOS_SHOWN = 20
GROUPS_SHOWN = 10
NAME_WIDTH = 32  # the longest name a first column shows whole

SNAPSHOT_COLUMNS = (
    ("strategy", "strategy"),
    ("groups", "groups"),
    ("fleet_max_queues", "max q"),
    ("worst_group_max_over_mean", "max/mean"),
    ("idle_consumers", "idle"),
    ("unassigned_queues", "unread q"),
    ("stranded_msgs_per_s", "stranded"),
    ("clients_over_capacity", "over cap"),
    ("lag_growth_msgs_per_s", "lag"),
    ("groups_with_errors", "errors"),
)
SCENARIO_COLUMNS = (
    ("scenario", "scenario"),
    ("queues_moved", "q moved"),
    ("lag_growth_msgs_per_s_after", "lag/s after"),
    ("most_stranded_msgs_per_s", "stranded/s"),
    ("handover_msgs", "hand-over msgs"),
    ("cheapest", "cheapest"),
)
SWEEP_COLUMNS = (
    ("element", "element"),
    ("mean_rank", "mean rank"),
    ("lag_growth_msgs_per_s", "lag/s"),
    ("lost_msgs_per_s", "lost msgs/s"),
    ("queues_unread", "unread q"),
    ("groups_changed", "groups"),
    ("queues_moved", "q moved"),
)
RECOMMENDATION_COLUMNS = (
    ("group", "group"),
    ("best_balance", "best balance"),
    ("fewest_moves", "fewest moves"),
    ("cheapest_deploy", "cheapest hand-overs"),
    ("keeps_up", "keeps up"),
    ("clients_needed", "clients needed"),
)
EXPOSURE_COLUMNS = (
    ("scenario", "scenario"),
    ("strategy", "most exposed"),
    ("exposed", "exposed"),
    ("multi_owned_queues", "read twice"),
    ("unassigned_queues", "read by none"),
    ("at_risk_fraction", "at risk"),
)


def fitted(rows: Rows, columns: Sequence[tuple[str, str]], table: str) -> str:
    """format_table of ``rows``, the first column's names cut at NAME_WIDTH, and the last columns
    left out while a line is wider than WIDTH (a note says which, and where they are)."""
    cut = [{**r, columns[0][0]: _cut(r.get(columns[0][0]))} for r in rows]
    kept = list(columns)
    text = _table(cut, kept)
    while len(kept) > 2 and _widest(text) > WIDTH:
        kept.pop()
        text = _table(cut, kept)
    left_out = [title for _, title in columns[len(kept) :]]
    if left_out:
        text += "\n" + wrapped(f"left out here: {', '.join(left_out)} (in {table}/)")
    return text


def _table(rows: Rows, columns: Sequence[tuple[str, str]]) -> str:
    return "\n".join(line.rstrip() for line in format_table(rows, columns).splitlines())


def _cut(value: object) -> object:
    if isinstance(value, str) and len(value) > NAME_WIDTH:
        return value[: NAME_WIDTH - 3] + "..."
    return value


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def wrapped(text: str) -> str:
    """``text`` in lines of at most WIDTH, the second on indented."""
    return textwrap.fill(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)


def format_snapshot(rows: Rows) -> str:
    """Phase 0 per strategy: its balance, then its messages."""
    first = max(rows, key=lambda r: int(r.get("groups") or 0))
    inflow = first.get("in_msgs_per_s")
    title = f"the snapshot: {first['groups']} groups, {first['consumers']} clients, {first['queues']} queues"
    if inflow is not None:
        title += f", {float(inflow):.0f} msgs/s in"
    table = fitted(sorted(rows, key=lambda r: str(r["strategy"])), SNAPSHOT_COLUMNS, "summary")
    legend = "max/mean: the worst group's" + ("; stranded and lag: msgs/s" if inflow is not None else "")
    return f"{title}\n{table}\n{legend}"


def scenario_rows(comparison: Rows) -> list[dict]:
    """comparison/'s rows folded to one per scenario of the file (a sweep's elements are in its
    own table): queues moved as the fewest-most over the strategies, the most lag growth and
    messages stranded after, and the hand-overs' messages (delayed or read twice) as the
    cheapest-costliest over the strategies that hand queues over, with the cheapest one where
    it costs less than another."""
    by: dict[str, list[Mapping[str, object]]] = {}
    for row in comparison:
        if ELEMENT not in str(row["scenario"]):
            by.setdefault(str(row["scenario"]), []).append(row)
    out = []
    for scenario, rows in sorted(by.items()):
        moved = [int(r["queues_moved"]) for r in rows if r.get("queues_moved") is not None]
        handing = [r for r in rows if r.get("queues_handed_over")]
        costs = sorted((_msgs(r), str(r["strategy"])) for r in handing)
        out.append(
            {
                "scenario": scenario,
                "queues_moved": _span(moved),
                "lag_growth_msgs_per_s_after": _most(rows, "lag_growth_msgs_per_s_after"),
                "most_stranded_msgs_per_s": _most(rows, "most_stranded_msgs_per_s"),
                "handover_msgs": _span([round(c) for c, _ in costs]),
                # Named only where it costs less than another: a tie at 0 (no traffic) names none.
                "cheapest": costs[0][1] if costs and costs[0][0] < costs[-1][0] else None,
            }
        )
    return out


def _msgs(row: Mapping[str, object]) -> float:
    return float(row.get("msgs_delayed") or 0.0) + float(row.get("msgs_read_twice") or 0.0)


def _span(values: Sequence[int]) -> str | None:
    if not values:
        return None
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def _most(rows: Rows, column: str) -> float | None:
    values = [float(r[column]) for r in rows if r.get(column) is not None]
    return max(values) if values else None


def format_scenarios(comparison: Rows) -> str:
    rows = scenario_rows(comparison)
    text = "scenarios, phase 0 against the last: fewest-most over the strategies\n"
    text += fitted(rows[:SCENARIOS_SHOWN], SCENARIO_COLUMNS, "comparison")
    if len(rows) > SCENARIOS_SHOWN:
        text += f"\n... and {len(rows) - SCENARIOS_SHOWN} more scenarios in comparison/"
    return text


def format_sweeps(rows: Rows) -> str:
    """Per sweep, its worst elements (text.format_sweep), in fitted tables."""
    return format_sweep(rows, table=lambda elements: fitted(elements, SWEEP_COLUMNS, "sweep"))


def format_recommendation(rows: Rows, groups: int) -> str:
    """The first GROUPS_SHOWN groups (the ones a scenario strands messages of first), and the advice."""
    text = "recommendation per group, over every scenario and phase run\n"
    text += fitted(rows[:GROUPS_SHOWN], RECOMMENDATION_COLUMNS, "recommendation")
    shown = min(len(rows), GROUPS_SHOWN)
    if groups > shown:
        text += f"\n... and {groups - shown} more groups in recommendation/"
    for advice in dict.fromkeys(r["advice"] for r in rows if r.get("advice")):
        text += "\n" + wrapped(f"advice: {advice}")
    return text


def format_exposure(rows: Rows) -> str:
    """Per scenario with a stale view, its most exposed strategy (rows come most exposed first)."""
    first: dict[str, Mapping[str, object]] = {}
    for row in rows:
        first.setdefault(str(row["scenario"]), row)
    text = "split-brain risk: queues of the stale phase, the most exposed strategy\n"
    return text + fitted([first[s] for s in sorted(first)], EXPOSURE_COLUMNS, "exposure")


def format_reconciliation(rows: Rows) -> str:
    """Every table's rows read, used and rejected, wrapped."""
    parts = [f"{r['table']} {r['rows_read']} = {r['rows_used']} + {r['rows_rejected']}" for r in rows]
    return wrapped("rows read = used + rejected (why: rejects/): " + "; ".join(parts))
