"""A run as one static HTML page (`rmqsim report --run DIR --html`), for readers who do not open
notebooks: what matters first (per scenario, the groups that fall behind and the messages
stranded), then the tables the CLI prints, the groups that fall behind, and the charts.

The page is self-contained (inline CSS, PNGs as data: URIs, no script, nothing fetched), so it can
be mailed, attached to a ticket or archived as one file. Every text from the run is escaped.
"""

from __future__ import annotations

import base64
import contextlib
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from html import escape
from pathlib import Path

import pandas as pd

from rmqsim.reporting import results, text
from rmqsim.reporting.charts import Charts

# Fits a 1366-pixel screen: the body is narrower than the window, wide tables come split into
# parts (COMPARISON_PARTS), headers wrap, and a long word may break anywhere (td.long: a client
# id) while numbers never do. Nothing is hidden or scrolled inside the page.
CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; padding: 0 1.5em; max-width: 84em;
       color: #222; }
h1 { font-size: 1.5em; overflow-wrap: anywhere; }
h2 { font-size: 1.2em; margin-top: 2em; } h3 { font-size: 1em; margin-bottom: 0.3em; }
table { border-collapse: collapse; margin: 0.3em 0 1.2em; font-size: 13px; }
caption { text-align: left; font-style: italic; padding: 0.2em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.45em; vertical-align: top; overflow-wrap: break-word; }
th { background: #f2f2f2; text-align: left; vertical-align: bottom; font-weight: 600; }
td { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.text { white-space: normal; }
td.long { white-space: normal; overflow-wrap: anywhere; }
p.note { color: #555; }
figure { margin: 0.5em 0 1.5em; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
"""


# The page's columns left out where every row has none, beside the terminal's (text.OPTIONAL).
OPTIONAL = text.OPTIONAL | {
    "stranded_msgs_per_s_before",
    "stranded_msgs_per_s_after",
    "most_clients_over_capacity",
    "groups_behind",
    "groups_behind_before",
    "groups_behind_after",
    "keeps_up_moved",
    "behind_after_a_step",  # results.overview: null without capacities
}


def shown_columns(
    rows: Sequence[Mapping[str, object]], columns: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """``columns`` less the page's OPTIONAL ones no row has a value for."""
    return text.shown_columns(rows, columns, OPTIONAL)


# A word longer than this (a client id, a generated group name) may break anywhere; shorter
# ones, strategy names among them, stay whole however narrow the table gets.
LONG_WORD = 20


def _text_class(cell: str) -> str:
    """A word (a strategy, a group) stays on one line, so headers wrap before it does; text with
    spaces wraps between words; a word longer than LONG_WORD may break anywhere."""
    words = cell.split()
    if any(len(word) > LONG_WORD for word in words):
        return " class=long"
    return " class=text" if len(words) > 1 else ""


def table_html(
    rows: Sequence[Mapping[str, object]], columns: Sequence[tuple[str, str]], *, caption: str | None = None
) -> str:
    """An HTML table of ``rows`` with the CLI's columns (key, title) and cell formatting."""
    columns = shown_columns(rows, columns)
    head = "".join(f"<th>{escape(title)}</th>" for _, title in columns)
    body = []
    for row in rows:
        cells = []
        for key, _ in columns:
            value = row.get(key)
            number = isinstance(value, numbers.Real) and not isinstance(value, bool)
            cell = text.format_cell(value)
            css = " class=num" if number else _text_class(cell)
            cells.append(f"<td{css}>{escape(cell)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    title = f"<caption>{escape(caption)}</caption>" if caption else ""
    return (
        f"<table>{title}\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
        + "\n".join(body)
        + "\n</tbody>\n</table>"
    )


def parts_html(
    rows: Sequence[Mapping[str, object]], parts: Sequence[tuple[str, Sequence[tuple[str, str]]]]
) -> list[str]:
    """A table per part (caption, columns) of a table too wide for one screen; a part left with its
    first (key) column only, its others all OPTIONAL and null (no traffic, no capacities), is left out."""
    return [
        table_html(rows, columns, caption=caption)
        for caption, columns in parts
        if len(shown_columns(rows, columns)) > 1
    ]


STRATEGY = ("strategy", "strategy")
# text.SUMMARY_COLUMNS in two parts: the queues, then the messages and whether clients keep up.
_MESSAGES = [key for key, _ in text.SUMMARY_COLUMNS].index("in_msgs_per_s")
SUMMARY_PARTS = (
    ("queues", text.SUMMARY_COLUMNS[:_MESSAGES]),
    (
        "messages, and clients over capacity",
        (
            STRATEGY,
            *text.SUMMARY_COLUMNS[_MESSAGES:],
            *[c for c in (("groups_behind", "groups behind"),) if c not in text.SUMMARY_COLUMNS],
        ),
    ),
)
# The comparison (30 columns with traffic and capacities) in four parts of at most 12 columns.
COMPARISON_PARTS = (
    ("queues per client", text.COMPARISON_COLUMNS[:12]),  # the strategy, then queue counts
    (
        "queues that change owner",
        (
            STRATEGY,
            ("queues_moved", "moved (0 to last)"),
            ("min_moves", "min moves"),
            ("moved_over_steps", "moved over steps"),
            ("moved_backlog", "backlog moved"),
        ),
    ),
    (
        "messages",
        (
            STRATEGY,
            ("fleet_max_msgs_per_s_before", "max msgs/s before"),
            ("fleet_max_msgs_per_s_after", "after"),
            ("clients_without_messages_after", "w/o msgs after"),
            ("most_clients_without_messages", "w/o msgs (most)"),
            ("stranded_msgs_per_s_after", "stranded msgs/s after"),
            ("most_stranded_msgs_per_s", "stranded msgs/s (most)"),
            ("stranded_backlog_after", "stranded backlog"),
        ),
    ),
    (
        "clients over capacity",
        (
            STRATEGY,
            ("clients_over_capacity_before", "over capacity before"),
            ("clients_over_capacity_after", "after"),
            ("most_clients_over_capacity", "over capacity (most)"),
            ("groups_behind_before", "groups behind before"),
            ("groups_behind_after", "after"),
            ("lag_growth_msgs_per_s_before", "lag growth msgs/s before"),
            ("lag_growth_msgs_per_s_after", "after"),
        ),
    ),
)
OVERVIEW_COLUMNS = (
    ("scenario", "scenario"),
    ("last_phase", "last phase"),
    ("behind_after_a_step", "groups behind after a step (in any phase but 0)"),
    ("stranded_msgs_per_s_before", "stranded msgs/s at phase 0"),
    ("stranded_msgs_per_s_after", "at the last phase"),
    ("most_stranded_msgs_per_s", "the most after a step"),
    ("stranded_backlog_after", "stranded backlog at the last phase"),
)
FALLING_BEHIND_COLUMNS = (
    ("phase", "phase"),
    ("group", "group"),
    ("strategy", "strategy"),
    ("consumers", "consumers"),
    ("clients_over_capacity", "over capacity"),
    ("never_drain", "never drain"),
    ("msgs_per_s", "msgs/s"),
    ("capacity_msgs_per_s", "capacity msgs/s"),
    ("lag_growth_msgs_per_s", "lag growth msgs/s"),
    ("max_load_over_capacity", "max load / capacity"),
    ("clients_needed", "clients needed"),
)
_KEYS = [key for key, _ in text.RECOMMENDATION_COLUMNS]
_POP = _KEYS.index("pop_share_queue_num")
# text.RECOMMENDATION_COLUMNS in two parts, the second with the moves of the strategy that keeps up.
RECOMMENDATION_PARTS = (
    ("balance and moves", text.RECOMMENDATION_COLUMNS[:_POP]),
    (
        "POP, client libraries and capacity",
        (
            text.RECOMMENDATION_COLUMNS[0],
            *text.RECOMMENDATION_COLUMNS[_POP:],
            *[c for c in (("keeps_up_moved", "keeps up: queues moved"),) if c[0] not in _KEYS],
        ),
    ),
)
# Rows of falling_behind/ shown per scenario, the fastest-growing lag first; the rest are counted.
BEHIND_ROWS = 60


def _records(df: pd.DataFrame) -> list[dict[str, object]]:
    # Nulls arrive as NaN (a nullable int column becomes float64): shown as "-" like None.
    return df.astype(object).where(df.notna(), None).to_dict("records")


def _per_scenario(
    df: pd.DataFrame, columns: Sequence[tuple[str, str]], title: Callable[[str, pd.DataFrame], str]
) -> list[str]:
    """A titled table per scenario, scenarios by name, rows in the order given."""
    parts = []
    for scenario in sorted(df.scenario.unique()):
        rows = df[df.scenario == scenario]
        parts.append(f"<h3>{escape(title(scenario, rows))}</h3>")
        parts.append(table_html(_records(rows), columns))
    return parts


def _against_last_phase(scenario: str, rows: pd.DataFrame) -> str:
    return f"scenario {scenario}: phase 0 against phase {int(rows.last_phase.max())}"


def image_html(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<figure><img src="data:image/png;base64,{data}" alt="{escape(alt)}"></figure>'


def overview_html(run: results.Run) -> list[str]:
    """The page's first section: per scenario, the groups that fall behind and the messages
    stranded (results.overview), then each distinct advice with the scenarios it is for."""
    overview = results.overview(run)
    parts = [
        "<h2>What matters: groups that fall behind and messages stranded, per scenario</h2>",
        table_html(_records(overview), OVERVIEW_COLUMNS),
    ]
    if run.falling_behind is None:
        parts.append(
            '<p class="note">The snapshot gives no consumer capacity (consumers or groups '
            "capacity_msgs_per_s): whether clients keep up is not known.</p>"
        )
    else:
        behind = results.snapshot_behind(run) or "not known (no client with a capacity has traffic)"
        parts.insert(1, f"<p>Groups behind in the snapshot (phase 0): {escape(behind)}.</p>")
    if overview.stranded_msgs_per_s_before.isna().all():
        parts.append('<p class="note">The snapshot has no traffic (producers): messages are not counted.</p>')
    advised = overview.dropna(subset=["advice"])
    for advice, rows in advised.groupby("advice", sort=False):
        scenarios = ", ".join(rows.scenario)
        parts.append(f"<p><strong>Advice</strong> ({escape(scenarios)}): {escape(str(advice))}</p>")
    return parts


SWEEP_ROWS = 10  # elements per sweep in the page's table


def sweep_html(run: results.Run) -> list[str]:
    """With sweeps, first: per sweep its worst elements (text.worst_elements), ranked."""
    if run.sweep is None or run.sweep.empty:
        return []
    rows = run.sweep.to_dict("records")
    parts = ["<h2>Which single failure hurts most: each sweep's worst elements</h2>"]
    counts = run.sweep.groupby("sweep").element.nunique()
    for name, elements in text.worst_elements(rows, SWEEP_ROWS).items():
        parts.append(
            f"<h3>sweep {escape(name)}: the worst {len(elements)} of {int(counts[name])} elements</h3>"
        )
        parts.append(table_html(elements, text.SWEEP_COLUMNS))
    parts.append(
        '<p class="note">Mean rank over the strategies run (1: the worst element of the sweep for a '
        "strategy, by lag growth, then messages stranded or unroutable, then queues unread); each "
        "figure the worst strategy's. Every element and strategy is in sweep/.</p>"
    )
    return parts


def falling_behind_html(run: results.Run, capacity: Mapping[str, tuple[str, bytes]]) -> list[str]:
    """falling_behind/: its phase 0 rows once (every scenario starts from the same snapshot), then
    per scenario its rows after a step and its capacity chart (``capacity``: caption, PNG)."""
    behind = run.falling_behind
    if behind is None:
        return []
    parts = ["<h2>Groups that fall behind: clients over capacity, or a backlog that never drains</h2>"]
    first = run.summary.scenario.min()
    snapshot = behind[(behind.scenario == first) & (behind.phase == 0)]
    parts += ["<h3>the snapshot (phase 0)</h3>", *_behind_table(snapshot, FALLING_BEHIND_COLUMNS[1:])]
    for scenario in sorted(set(run.summary[run.summary.phase > 0].scenario) | set(capacity)):
        parts.append(f"<h3>scenario {escape(scenario)}, after a step</h3>")
        parts += _behind_table(
            behind[(behind.scenario == scenario) & (behind.phase > 0)], FALLING_BEHIND_COLUMNS
        )
        if scenario in capacity:
            caption, png = capacity[scenario]
            parts.append(image_html(png, caption))
    return parts


def _behind_table(rows: pd.DataFrame, columns: Sequence[tuple[str, str]]) -> list[str]:
    """``rows`` by phase, group and strategy: the BEHIND_ROWS whose lag grows fastest, the others
    counted."""
    if rows.empty:
        return ["<p>No group falls behind.</p>"]
    order = ["lag_growth_msgs_per_s", "phase", "group", "strategy"]
    shown = rows.sort_values(order, ascending=[False, True, True, True]).head(BEHIND_ROWS)
    parts = [table_html(_records(shown.sort_values(["phase", "group", "strategy"])), columns)]
    if len(rows) > len(shown):
        parts.append(f'<p class="note">And {len(rows) - len(shown)} more rows in falling_behind/.</p>')
    return parts


def render(
    run: results.Run,
    images: Sequence[tuple[str, bytes]],
    capacity: Mapping[str, tuple[str, bytes]] | None = None,
) -> str:
    """The page: what matters (overview_html), the snapshot's summary, then with scenarios the
    comparison; the groups that fall behind with ``capacity`` (per scenario, its capacity chart's
    caption and PNG), the recommendation and the split-brain exposure, then ``images``
    (caption, PNG bytes)."""
    parts = [f"<h1>rmqsim run {escape(str(run.path))}</h1>", *overview_html(run), *sweep_html(run)]
    summary = results.snapshot_summary(run)
    if run.comparison is not None:
        parts += ["<h2>The snapshot (phase 0)</h2>", *parts_html(_records(summary), SUMMARY_PARTS)]
        parts.append("<h2>Each scenario: phase 0 against its last phase</h2>")
        comparison = run.comparison.sort_values(["scenario", "strategy"])
        for scenario, rows in comparison.groupby("scenario", sort=True):
            parts.append(f"<h3>{escape(_against_last_phase(scenario, rows))}</h3>")
            parts += parts_html(_records(rows), COMPARISON_PARTS)
    else:
        parts.append("<h2>Summary</h2>")
        for (scenario, phase), rows in summary.groupby(["scenario", "phase"], sort=True):
            parts.append(f"<h3>scenario {escape(str(scenario))}, phase {int(phase)}</h3>")
            parts += parts_html(_records(rows), SUMMARY_PARTS)
    parts += falling_behind_html(run, capacity or {})
    if run.recommendation is not None:
        parts.append("<h2>Recommendation, over every scenario and phase run</h2>")
        advice = run.recommendation.sort_values("group")
        parts += parts_html(_records(advice), RECOMMENDATION_PARTS)
    if run.exposure is not None:
        parts.append("<h2>Split-brain risk: queues of the stale phase, most exposed first</h2>")
        parts += _per_scenario(
            run.exposure, text.EXPOSURE_COLUMNS, lambda scenario, _: f"scenario {scenario}"
        )
    if images:
        parts.append("<h2>Charts</h2>")
        parts += [f"<h3>{escape(caption)}</h3>\n{image_html(png, caption)}" for caption, png in images]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>rmqsim run {escape(run.path.name)}</title>\n<style>{CSS}</style>\n</head>\n"
        "<body>\n" + "\n".join(parts) + "\n</body>\n</html>\n"
    )


def chart_images(charts: Charts) -> list[tuple[str, bytes]]:
    """The PNGs `rmqsim report` wrote, with their captions, but the capacity charts (capacity_images)."""
    images = []
    if charts.sweep is not None:
        images.append(
            ("Each sweep's worst elements: which single failure hurts most", charts.sweep.read_bytes())
        )
    if charts.moved is not None:
        images.append(("Queues moved per strategy, beside the fewest possible", charts.moved.read_bytes()))
    if charts.load is not None:
        caption = f"Per-client load of group {charts.group} in scenario {charts.scenario}, before and after"
        images.append((caption, charts.load.read_bytes()))
    if charts.messages is not None:
        caption = f"Messages per second per client of group {charts.group} in scenario {charts.scenario}"
        images.append((caption, charts.messages.read_bytes()))
    if charts.stranded is not None:
        images.append(
            (
                "Messages stranded per scenario: in the snapshot and the most after a step",
                charts.stranded.read_bytes(),
            )
        )
    if charts.unread is not None:
        caption = "Queues no client reads while they are handed over, per scenario and strategy, over time"
        images.append((caption, charts.unread.read_bytes()))
    return images


def capacity_images(charts: Charts) -> dict[str, tuple[str, bytes]]:
    """Per scenario, its capacity chart's caption and PNG: shown with its groups that fall behind."""
    return {
        scenario: (
            f"Messages per second per client against its capacity, scenario {scenario}",
            path.read_bytes(),
        )
        for scenario, path in charts.capacity
    }


def write_html(run: str | Path, charts: Charts) -> Path:
    """Write ``run/report.html`` atomically (a reader or a web server never sees half a page)."""
    tables = results.load_run(run)
    path = tables.path / "report.html"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(render(tables, chart_images(charts), capacity_images(charts)), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()  # left only when writing failed
    return path
