"""Plain-text tables for the terminal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def format_table(rows: Sequence[Mapping[str, object]], columns: Sequence[tuple[str, str]]) -> str:
    header = [title for _, title in columns]
    body = [[_cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for r in body:
        lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def format_summary(rows: Sequence[Mapping[str, object]]) -> str:
    """The per-strategy comparison that `rmqsim demo` and `rmqsim simulate` print."""
    blocks = []
    by_run: dict[tuple[object, object], list[Mapping[str, object]]] = {}
    for row in rows:
        by_run.setdefault((row["scenario"], row["phase"]), []).append(row)
    for (scenario, phase), run_rows in sorted(by_run.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        blocks.append(f"scenario {scenario}, phase {phase}")
        blocks.append(format_table(sorted(run_rows, key=lambda r: str(r["strategy"])), SUMMARY_COLUMNS))
    return "\n".join(blocks)
