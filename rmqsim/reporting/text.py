"""Plain-text tables for the terminal."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

SUMMARY_COLUMNS = (
    ("strategy", "strategy"),
    ("groups", "groups"),
    ("consumers", "consumers"),
    ("queues", "queues"),
    ("fleet_max_queues", "max q/consumer"),
    ("fleet_max_over_mean", "fleet max/mean"),
    ("worst_group_max_over_mean", "worst group max/mean"),
    ("idle_consumers", "idle consumers"),
    ("unassigned_queues", "unassigned queues"),
    ("groups_with_errors", "groups with errors"),
    # Messages (docs/CONTRACT.md, section 2c): shown where the run has traffic.
    ("in_msgs_per_s", "msgs/s in"),
    ("stranded_msgs_per_s", "stranded msgs/s"),
    ("fleet_max_msgs_per_s", "max msgs/s/consumer"),
    ("clients_without_messages", "consumers w/o msgs"),
    # Capacity (section 2d): shown where the run knows one.
    ("clients_over_capacity", "over capacity"),
    ("lag_growth_msgs_per_s", "lag growth msgs/s"),
)
# Columns left out of a printed table where every row has none (a run without traffic).
OPTIONAL = {
    "in_msgs_per_s",
    "stranded_msgs_per_s",
    "fleet_max_msgs_per_s",
    "clients_without_messages",
    "fleet_max_msgs_per_s_before",
    "fleet_max_msgs_per_s_after",
    "clients_without_messages_after",
    "most_stranded_msgs_per_s",
    "most_clients_without_messages",
    "stranded_backlog_after",
    "clients_over_capacity",
    "lag_growth_msgs_per_s",
    "clients_over_capacity_before",
    "clients_over_capacity_after",
    "lag_growth_msgs_per_s_before",
    "lag_growth_msgs_per_s_after",
    "clients_needed",
    "keeps_up",
    "lost_msgs_per_s",
}


def format_cell(value: object) -> str:
    """A table cell as text: "-" for null, floats to two decimals (the terminal's and the HTML's)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def shown_columns(
    rows: Sequence[Mapping[str, object]],
    columns: Sequence[tuple[str, str]],
    optional: frozenset[str] | set[str] = OPTIONAL,
) -> list[tuple[str, str]]:
    """``columns`` less the ``optional`` ones no row has a value for."""
    return [(k, t) for k, t in columns if k not in optional or any(r.get(k) is not None for r in rows)]


def format_table(rows: Sequence[Mapping[str, object]], columns: Sequence[tuple[str, str]]) -> str:
    columns = shown_columns(rows, columns)
    header = [title for _, title in columns]
    body = [[format_cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for r in body:
        lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def format_summary(rows: Sequence[Mapping[str, object]]) -> str:
    """The per-strategy comparison that `rmqsim demo` and `rmqsim simulate` print."""
    return _titled_tables(
        sorted(rows, key=lambda r: str(r["strategy"])),
        lambda r: (str(r["scenario"]), r["phase"]),
        lambda run, _: f"scenario {run[0]}, phase {run[1]}",
        SUMMARY_COLUMNS,
    )


COMPARISON_COLUMNS = (
    ("strategy", "strategy"),
    ("fleet_max_queues_before", "max q before"),
    ("fleet_max_queues_after", "after"),
    ("fleet_mean_queues_before", "mean q before"),
    ("fleet_mean_queues_after", "after"),
    ("idle_consumers_before", "idle before"),
    ("idle_consumers_after", "after"),
    ("unassigned_queues_before", "unassigned before"),
    ("unassigned_queues_after", "after"),
    ("multi_owned_queues_before", "read twice before"),
    ("multi_owned_queues_after", "after"),
    ("shared_queues_after", "shared after"),
    ("queues_moved", "moved (0 to last)"),
    ("min_moves", "min moves"),
    ("moved_over_steps", "moved over steps"),
    ("moved_backlog", "backlog moved"),
    ("fleet_max_msgs_per_s_before", "max msgs/s before"),
    ("fleet_max_msgs_per_s_after", "after"),
    ("clients_without_messages_after", "w/o msgs after"),
    ("most_clients_without_messages", "w/o msgs (most)"),
    ("most_stranded_msgs_per_s", "stranded msgs/s"),
    ("stranded_backlog_after", "stranded backlog"),
    ("clients_over_capacity_before", "over capacity before"),
    ("clients_over_capacity_after", "after"),
    ("lag_growth_msgs_per_s_before", "lag growth before"),
    ("lag_growth_msgs_per_s_after", "after"),
)


RECOMMENDATION_COLUMNS = (
    ("group", "group"),
    ("best_balance", "best balance"),
    ("best_max_over_mean", "its worst max/mean"),
    ("fewest_moves", "fewest moves"),
    ("fewest_moved", "its queues moved"),
    ("cheapest_deploy", "cheapest hand-overs"),
    ("cheapest_deploy_msgs", "its msgs delayed or read twice"),
    ("consumers", "consumers"),
    ("useful_consumers", "useful (<= queues)"),
    ("pop_share_queue_num", "POP share"),
    ("pop_max_message_share", "its max share"),
    ("one_library_multi_owned", "one library: read twice"),
    ("one_library_unassigned", "by none"),
    ("clients_needed", "clients needed"),
    ("keeps_up", "keeps up"),
)


def format_recommendation(rows: Sequence[Mapping[str, object]], groups: int | None = None) -> str:
    """Per group, over the scenarios run: which strategy balances best, which moves least and whose
    hand-overs cost the fewest messages;
    then, for each group a scenario strands messages of, the advice. ``groups``: how many the
    run recommends for, where ``rows`` are the first of them."""
    text = "recommendation, over every scenario and phase run\n" + format_table(rows, RECOMMENDATION_COLUMNS)
    if groups is not None and groups > len(rows):
        text += f"\n... and {groups - len(rows)} more groups in recommendation/"
    advised = [r for r in rows if r.get("advice")]
    for r in advised:
        line = (
            f"{r['group']}: a scenario strands up to {format_cell(r.get('most_stranded_msgs_per_s'))} msgs/s"
        )
        if r.get("most_stranded_backlog"):
            line += f" and leaves {format_cell(r['most_stranded_backlog'])} messages unread"
        text += "\n" + line
    for advice in dict.fromkeys(r["advice"] for r in advised):
        text += f"\nadvice: {advice}"
    return text


def format_comparison(rows: Sequence[Mapping[str, object]]) -> str:
    """Per scenario, each strategy's fleet before (phase 0) and after (last phase), and its moves;
    where a step strands messages, the advice."""
    return _titled_tables(
        sorted(rows, key=lambda r: str(r["strategy"])),
        _scenario,
        lambda scenario, first: f"scenario {scenario}: phase 0 against phase {first.get('last_phase')}",
        COMPARISON_COLUMNS,
        footer=lambda key_rows: next((f"advice: {r['advice']}" for r in key_rows if r.get("advice")), None),
    )


def _scenario(row: Mapping[str, object]) -> str:
    return str(row["scenario"])


def _titled_tables(
    rows: Sequence[Mapping[str, object]], key, title, columns: Sequence[tuple[str, str]], footer=None
) -> str:
    """A titled table per ``key`` of the rows, keys in order, rows in the order given;
    ``title(key, first row)``; ``footer(rows)``, a line under the table (None: none)."""
    by_key: dict[object, list[Mapping[str, object]]] = {}
    for row in rows:
        by_key.setdefault(key(row), []).append(row)
    blocks = []
    for k, key_rows in sorted(by_key.items(), key=lambda kv: kv[0]):
        blocks.append(title(k, key_rows[0]))
        blocks.append(format_table(key_rows, columns))
        line = footer(key_rows) if footer else None
        if line:
            blocks.append(line)
    return "\n".join(blocks)


HANDOVER_COLUMNS = (
    ("strategy", "strategy"),
    ("queues_handed_over", "handed over"),
    ("queues_paused", "paused"),
    ("max_pause_s", "longest pause s"),
    ("msgs_delayed", "msgs delayed"),
    ("msgs_read_twice", "msgs read twice"),
)


def _handover_cost(row: Mapping[str, object]) -> float:
    return float(row.get("msgs_delayed") or 0) + float(row.get("msgs_read_twice") or 0)


def format_handovers(rows: Sequence[Mapping[str, object]], detailed: Sequence[str] = ()) -> str:
    """What each scenario's hand-overs cost (docs/CONTRACT.md, section 2e): for the ``detailed``
    scenarios (a rolling restart's) each strategy's, cheapest first, else a line naming the
    cheapest and the costliest strategy. A strategy that hands no queue over where others do did
    not run on what changed (CONFIG or MACHINE_ROOM without their configuration): it is listed
    last and named neither. Scenarios whose hand-overs cost no message are left out."""
    by_scenario: dict[str, list[Mapping[str, object]]] = {}
    for row in rows:
        by_scenario.setdefault(str(row["scenario"]), []).append(row)
    blocks = []
    for scenario, mine in sorted(by_scenario.items()):
        ran = [r for r in mine if r.get("queues_handed_over")]
        if not ran or not any(_handover_cost(r) for r in ran):
            continue
        ranked = sorted(ran, key=lambda r: (_handover_cost(r), str(r["strategy"])))
        cheap, dear = ranked[0], ranked[-1]
        if scenario in detailed:
            blocks.append(f"scenario {scenario}: hand-overs over every step")
            idle = sorted(
                (r for r in mine if not r.get("queues_handed_over")), key=lambda r: str(r["strategy"])
            )
            blocks.append(format_table([*ranked, *idle], HANDOVER_COLUMNS))
            cost = format_cell(_handover_cost(cheap))
            blocks.append(f"cheapest: {cheap['strategy']} ({cost} msgs delayed or read twice)")
            continue
        delayed, twice = format_cell(cheap["msgs_delayed"]), format_cell(cheap["msgs_read_twice"])
        least = f"{delayed} msgs delayed, {twice} read twice"
        most = f"{format_cell(dear['msgs_delayed'])}, {format_cell(dear['msgs_read_twice'])}"
        if len(ranked) == 1:
            blocks.append(f"scenario {scenario}: only {cheap['strategy']} hands queues over ({least})")
            continue
        blocks.append(
            f"scenario {scenario}: hand-overs cost {cheap['strategy']} the least ({least}), "
            f"{dear['strategy']} the most ({most})"
        )
    return "\n".join(blocks)


EXPOSURE_COLUMNS = (
    ("strategy", "strategy"),
    ("topic_groups", "topic-groups"),
    ("exposed", "exposed"),
    ("multi_owned_queues", "read twice"),
    ("unassigned_queues", "read by none"),
    ("at_risk_fraction", "at risk"),
    ("multi_owned_backlog", "backlog read twice"),
    ("unassigned_backlog", "backlog stalled"),
)


def format_exposure(rows: Sequence[Mapping[str, object]]) -> str:
    """Per scenario with a stale_view step: each strategy's split-brain risk, most exposed first."""
    return _titled_tables(
        rows,
        _scenario,
        lambda scenario, _: (
            f"split-brain risk, scenario {scenario}: queues of the stale phase, most exposed first"
        ),
        EXPOSURE_COLUMNS,
    )


def format_reconciliation(rows: Sequence[Mapping[str, object]]) -> str:
    """One line: every table's rows read, used and rejected (see rejects/ for why)."""
    parts = [
        f"{r['table']} {r['rows_read']} = {r['rows_used']} used + {r['rows_rejected']} rejected" for r in rows
    ]
    return "rows read: " + "; ".join(parts)


SWEEP_COLUMNS = (
    ("element", "element"),
    ("mean_rank", "mean rank"),
    ("lag_growth_msgs_per_s", "lag growth msgs/s"),
    ("lost_msgs_per_s", "stranded+unroutable msgs/s"),
    ("queues_unread", "queues unread"),
    ("groups_changed", "groups changed"),
    ("queues_moved", "queues moved"),
)
SWEEP_SHOWN = 3  # elements printed per sweep


def worst_elements(rows: Sequence[Mapping[str, object]], shown: int = SWEEP_SHOWN) -> dict[str, list[dict]]:
    """Per sweep, its ``shown`` worst elements over every strategy run: the lowest mean rank first
    (then the name), with each figure's worst value over the strategies (most lag growth, messages
    stranded or unroutable, queues unread, groups changed and queues moved)."""
    by_element: dict[tuple[str, str], list[Mapping[str, object]]] = {}
    for row in rows:
        by_element.setdefault((str(row["sweep"]), str(row["element"])), []).append(row)
    out: dict[str, list[dict]] = {}
    for (sweep, element), of in by_element.items():

        def most(column: str, of=of) -> object:
            values = [r[column] for r in of if r.get(column) is not None]
            return max(values) if values else None

        lost = [
            (r.get("stranded_msgs_per_s") or 0.0) + (r.get("unroutable_msgs_per_s") or 0.0)
            for r in of
            if r.get("stranded_msgs_per_s") is not None or r.get("unroutable_msgs_per_s") is not None
        ]
        out.setdefault(sweep, []).append(
            {
                "element": element,
                "mean_rank": sum(int(r["rank"]) for r in of) / len(of),
                "lag_growth_msgs_per_s": most("lag_growth_msgs_per_s"),
                "lost_msgs_per_s": max(lost) if lost else None,
                "queues_unread": most("queues_unread"),
                "groups_changed": most("groups_changed"),
                "queues_moved": most("queues_moved"),
            }
        )
    return {
        sweep: sorted(elements, key=lambda e: (e["mean_rank"], e["element"]))[:shown]
        for sweep, elements in sorted(out.items())
    }


def format_sweep(
    rows: Sequence[Mapping[str, object]],
    shown: int = SWEEP_SHOWN,
    table: Callable[[list[dict]], str] = lambda elements: format_table(elements, SWEEP_COLUMNS),
) -> str:
    """Per sweep, its worst elements (worst_elements): which single failure hurts most; ``table``
    draws them."""
    counts: dict[str, set[str]] = {}
    for row in rows:
        counts.setdefault(str(row["sweep"]), set()).add(str(row["element"]))
    blocks = []
    for sweep, elements in worst_elements(rows, shown).items():
        blocks.append(f"sweep {sweep}: the worst {len(elements)} of {len(counts[sweep])} elements")
        blocks.append(table(elements))
    return "\n".join(blocks)
