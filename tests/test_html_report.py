"""`rmqsim report --run DIR --html`: one self-contained page of the run's tables and charts."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from rmqsim.cli import main
from rmqsim.reporting import html as html_report
from rmqsim.reporting import results
from rmqsim.strategies import STRATEGIES

PNG = b"\x89PNG\r\n\x1a\n"
ROOT = Path(__file__).resolve().parents[1]
IMAGE = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


class _Tables(HTMLParser):
    """Every <table> as rows of cell texts (the header row first), the headings, and each table's
    title: the heading just before it."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.headings: list[str] = []
        self.titles: list[str] = []
        self._cell: list[str] | None = None
        self._heading: list[str] | None = None

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "table":
            self.tables.append([])
            self.titles.append(self.headings[-1] if self.headings else "")
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("h2", "h3"):
            self._heading = []

    def handle_endtag(self, tag) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag in ("h2", "h3") and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None

    def handle_data(self, data) -> None:
        for parts in (self._cell, self._heading):
            if parts is not None:
                parts.append(data)


def _tables(text: str) -> _Tables:
    parsed = _Tables()
    parsed.feed(text)
    return parsed


@pytest.fixture(scope="module")
def page(sample_run) -> Path:
    assert main(["report", "--run", str(sample_run), "--html"]) == 0
    return sample_run / "report.html"


def test_report_has_the_run_tables_and_its_charts(page, sample_run) -> None:
    text = page.read_text(encoding="utf-8")
    assert all(name in text for name in STRATEGIES)
    parsed = _tables(text)
    headers = {title for table in parsed.tables for title in table[0]}
    assert {"fleet max/mean", "groups with errors", "moved (0 to last)", "min moves"} <= headers
    assert {"best balance", "useful (<= queues)", "read twice", "read by none"} <= headers
    # The snapshot, one table per scenario, the recommendation, and one per stale_view scenario,
    # counted from the scenario file the demo ran.
    scenarios = yaml.safe_load((ROOT / "conf" / "scenarios" / "sample.yml").read_text())["scenarios"]
    stale = [s for s in scenarios if any("stale_view" in step for step in s["steps"])]
    assert len(parsed.tables) == 1 + len(scenarios) + 1 + len(stale)
    tables = dict(zip(parsed.titles, parsed.tables))
    assert len(tables) == len(parsed.tables)

    # A cell read back from the page is the run's own value, read here independently of rmqsim.
    comparison = pq.read_table(sample_run / "comparison").to_pandas()
    expected = comparison[(comparison.scenario == "scale-out-two-brokers") & (comparison.strategy == "AVG")]
    table = tables["scenario scale-out-two-brokers: phase 0 against phase 1"]
    row = next(r for r in table if r[0] == "AVG")
    assert int(row[table[0].index("moved (0 to last)")]) == int(expected.queues_moved.iloc[0])
    config = next(r for r in table if r[0] == "CONFIG")
    assert config[table[0].index("min moves")] == "-"  # null: no one-owner assignment to compare

    images = [base64.b64decode(data) for data in IMAGE.findall(text)]
    # Moves and one group's queues per client; with traffic (the sample has producers), that
    # group's messages per client and the messages stranded per scenario too.
    traffic = (sample_run / "queue_traffic").is_dir()
    assert len(images) == (4 if traffic else 2) and all(png.startswith(PNG) for png in images)
    assert images[0] == (sample_run / "charts" / "moved_per_strategy.png").read_bytes()
    if traffic:
        assert images[3] == (sample_run / "charts" / "stranded_per_scenario.png").read_bytes()
    # Self-contained: nothing to fetch, nothing to run.
    assert not re.search(r"(src|href)=\"(?!data:)", text) and "<script" not in text


def test_report_prints_its_path_and_leaves_no_temp_file(sample_run, capsys) -> None:
    assert main(["report", "--run", str(sample_run), "--html"]) == 0
    assert f"html report: {sample_run / 'report.html'}" in capsys.readouterr().out
    assert not list(sample_run.glob(".report.html.*"))


def test_a_failed_write_keeps_the_previous_page(tmp_path, monkeypatch) -> None:
    run = _run_without_scenarios(tmp_path)
    previous = html_report.write_html(run, _no_charts())
    before = previous.read_bytes()

    def broken(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(html_report.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        html_report.write_html(run, _no_charts())
    assert previous.read_bytes() == before
    assert sorted(p.name for p in run.iterdir()) == ["report.html", "summary"]


def test_a_run_without_scenarios_gets_its_summary_and_escaped_names(tmp_path) -> None:
    run = _run_without_scenarios(tmp_path)
    text = html_report.write_html(run, _no_charts()).read_text(encoding="utf-8")
    parsed = _tables(text)
    assert parsed.headings == ["Summary", "scenario baseline, phase 0"]
    assert [row[0] for row in parsed.tables[0][1:]] == ["<AVG & co>", "STICKY"]
    assert "&lt;AVG &amp; co&gt;" in text and "<AVG" not in text
    assert parsed.tables[0][1][parsed.tables[0][0].index("fleet max/mean")] == "-"  # a null cell
    assert parsed.tables[0][2][parsed.tables[0][0].index("fleet max/mean")] == "1.50"
    assert "<img" not in text


def test_bad_run_directory_is_exit_code_2_and_writes_nothing(tmp_path, capsys) -> None:
    assert main(["report", "--run", str(tmp_path), "--html"]) == 2
    assert "arguments.--run" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def _chromium() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


def test_page_renders_in_headless_chromium(page, sample_run, tmp_path) -> None:
    browser = _chromium()
    if browser is None:
        missing = "no chromium, chromium-browser or google-chrome on PATH"
        if os.environ.get("CI") == "true":  # .ci/run installs Chromium: without it the test checks nothing
            pytest.fail(f"{missing}, in CI")
        pytest.skip(f"{missing}; the page's content is checked above")
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    # The browser's DOM holds the same tables, cell for cell: no markup it had to repair.
    written = _tables(page.read_text(encoding="utf-8"))
    rendered = _tables(dom)
    # The snapshot's summary, a comparison per scenario, the recommendation, and a split-brain
    # table per scenario with a stale view.
    run = results.load_run(sample_run)
    expected = 1 + run.comparison.scenario.nunique() + 1 + run.exposure.scenario.nunique()
    assert rendered.tables == written.tables and len(rendered.tables) == expected
    assert rendered.headings == written.headings
    assert len(IMAGE.findall(dom)) == len(IMAGE.findall(page.read_text(encoding="utf-8")))  # every chart


def _no_charts():
    from rmqsim.reporting.charts import Charts

    return Charts(None, None, None, None)


def _run_without_scenarios(tmp_path: Path) -> Path:
    """A run's summary/ as simulate writes it without --scenarios: scenario baseline, phase 0."""
    run = tmp_path / "run"
    (run / "summary").mkdir(parents=True)
    summary = pd.DataFrame(
        {
            "scenario": ["baseline", "baseline"],
            "phase": [0, 0],
            "strategy": ["STICKY", "<AVG & co>"],
            "groups": [1, 1],
            "consumers": [2, 2],
            "queues": [3, 3],
            "fleet_max_queues": [2, 2],
            "fleet_mean_queues": [1.5, 1.5],
            "fleet_max_over_mean": [1.5, None],
            "worst_group_max_over_mean": [1.5, 1.5],
            "idle_consumers": [0, 0],
            "unassigned_queues": [0, 0],
            "groups_with_errors": [0, 0],
        }
    )
    summary.to_parquet(run / "summary" / "part-00000.parquet", index=False)
    assert results.load_run(run).comparison is None
    return run
