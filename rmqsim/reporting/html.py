"""A run as one static HTML page (`rmqsim report --run DIR --html`), for readers who do not open
notebooks: the tables the CLI prints, and the charts.

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

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 75em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; } h3 { font-size: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; }
th { background: #f2f2f2; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; border: 1px solid #eee; }
"""


def table_html(rows: Sequence[Mapping[str, object]], columns: Sequence[tuple[str, str]]) -> str:
    """An HTML table of ``rows`` with the CLI's columns (key, title) and cell formatting."""
    columns = text.shown_columns(rows, columns)
    head = "".join(f"<th>{escape(title)}</th>" for _, title in columns)
    body = []
    for row in rows:
        cells = []
        for key, _ in columns:
            value = row.get(key)
            number = isinstance(value, numbers.Real) and not isinstance(value, bool)
            cells.append(f"<td{' class=num' if number else ''}>{escape(text.format_cell(value))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"


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


def render(run: results.Run, images: Sequence[tuple[str, bytes]]) -> str:
    """The page: the snapshot's summary, then with scenarios the comparison, the recommendation and
    the split-brain exposure, then ``images`` (caption, PNG bytes)."""
    parts = [f"<h1>rmqsim run {escape(str(run.path))}</h1>"]
    summary = results.snapshot_summary(run)
    if run.comparison is not None:
        parts += ["<h2>The snapshot (phase 0)</h2>", table_html(_records(summary), text.SUMMARY_COLUMNS)]
        parts.append("<h2>Each scenario: phase 0 against its last phase</h2>")
        comparison = run.comparison.sort_values(["scenario", "strategy"])
        parts += _per_scenario(comparison, text.COMPARISON_COLUMNS, _against_last_phase)
    else:
        parts.append("<h2>Summary</h2>")
        for (scenario, phase), rows in summary.groupby(["scenario", "phase"], sort=True):
            parts.append(f"<h3>scenario {escape(str(scenario))}, phase {int(phase)}</h3>")
            parts.append(table_html(_records(rows), text.SUMMARY_COLUMNS))
    if run.recommendation is not None:
        parts.append("<h2>Recommendation, over every scenario and phase run</h2>")
        advice = run.recommendation.sort_values("group")
        parts.append(table_html(_records(advice), text.RECOMMENDATION_COLUMNS))
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
        f"<title>rmqsim run {escape(run.path.name)}</title>\n<style>{CSS}</style>\n</head>\n"
        "<body>\n" + "\n".join(parts) + "\n</body>\n</html>\n"
    )


def chart_images(charts: Charts) -> list[tuple[str, bytes]]:
    """The PNGs `rmqsim report` wrote, with their captions."""
    images = []
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
    return images


def write_html(run: str | Path, charts: Charts) -> Path:
    """Write ``run/report.html`` atomically (a reader or a web server never sees half a page)."""
    tables = results.load_run(run)
    path = tables.path / "report.html"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(render(tables, chart_images(charts)), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()  # left only when writing failed
    return path
