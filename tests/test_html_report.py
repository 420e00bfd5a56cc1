"""`rmqsim report --run DIR --html`: one self-contained page of the run's tables and charts."""

from __future__ import annotations

import base64
import contextlib
import io
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
from rmqsim.reporting.charts import _safe as safe
from rmqsim.strategies import STRATEGIES

PNG = b"\x89PNG\r\n\x1a\n"
ROOT = Path(__file__).resolve().parents[1]
IMAGE = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


class _Tables(HTMLParser):
    """Every <table> as rows of cell texts (the header row first), the headings (h2, h3, in
    order), the h2s alone, and each table's title: the heading just before it, with its caption
    if it has one ("heading: caption")."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.headings: list[str] = []
        self.sections: list[str] = []
        self.titles: list[str] = []
        self._cell: list[str] | None = None
        self._heading: list[str] | None = None
        self._caption: list[str] | None = None

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
        elif tag == "caption":
            self._caption = []

    def handle_endtag(self, tag) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag in ("h2", "h3") and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            if tag == "h2":
                self.sections.append(self.headings[-1])
            self._heading = None
        elif tag == "caption" and self._caption is not None:
            self.titles[-1] += ": " + "".join(self._caption).strip()
            self._caption = None

    def handle_data(self, data) -> None:
        for parts in (self._cell, self._heading, self._caption):
            if parts is not None:
                parts.append(data)


def _tables(text: str) -> _Tables:
    parsed = _Tables()
    parsed.feed(text)
    return parsed


@pytest.fixture(scope="module")
def sample_run(sample_run, tmp_path_factory) -> Path:
    """A copy of the demo's run: the report writes its page and charts into the run it reads, and
    the other workers read the demo's run (conftest.py)."""
    copy = tmp_path_factory.mktemp("reported") / "out"
    shutil.copytree(sample_run, copy)
    return copy


@pytest.fixture(scope="module")
def printed(sample_run) -> str:
    """`rmqsim report --html` on the sample run, once for the module: what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", "--run", str(sample_run), "--html"]) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def page(printed, sample_run) -> Path:
    return sample_run / "report.html"


def test_report_has_the_run_tables_and_its_charts(page, sample_run) -> None:
    text = page.read_text(encoding="utf-8")
    assert all(name in text for name in STRATEGIES)
    parsed = _tables(text)
    headers = {title for table in parsed.tables for title in table[0]}
    assert {"fleet max/mean", "groups with errors", "moved (0 to last)", "min moves"} <= headers
    assert {"best balance", "useful (<= queues)", "read twice", "read by none"} <= headers
    tables = dict(zip(parsed.titles, parsed.tables))
    assert len(tables) == len(parsed.tables)  # every table titled apart
    # The comparison of each scenario in parts, the messages' where the run has traffic and the
    # capacity's where it has capacities; a split-brain table per stale_view scenario: counted from
    # the scenario file the demo ran.
    scenarios = yaml.safe_load((ROOT / "conf" / "scenarios" / "sample.yml").read_text())["scenarios"]
    traffic, capacities = (sample_run / "queue_traffic").is_dir(), _has_capacities(sample_run)
    pods = (
        pq.read_table(ROOT / "conf" / "sample_snapshot" / "consumers")
        .to_pandas()
        .groupby("group")
        .client_id.nunique()
    )
    for scenario in scenarios:
        # a step is a phase, but a rolling restart of n pods one at a time: a leave and a join each
        last = sum(
            2 * pods[s["rolling_restart"]["group"]] if "rolling_restart" in s else 1
            for s in scenario["steps"]
        )
        title = f"scenario {scenario['name']}: phase 0 against phase {last}"
        parts = {"queues per client", "queues that change owner"}
        parts |= {"messages"} if traffic else set()
        parts |= {"clients over capacity"} if capacities else set()
        assert {t.removeprefix(f"{title}: ") for t in tables if t.startswith(f"{title}: ")} == parts
    exposed = set(pq.read_table(sample_run / "exposure").column("scenario").to_pylist())
    assert {s["name"] for s in scenarios if any("stale_view" in step for step in s["steps"])} <= exposed
    assert {t for t in tables if re.fullmatch(r"scenario [\w-]+", t)} == {f"scenario {s}" for s in exposed}

    # A cell read back from the page is the run's own value, read here independently of rmqsim.
    comparison = pq.read_table(sample_run / "comparison").to_pandas()
    expected = comparison[(comparison.scenario == "scale-out-two-brokers") & (comparison.strategy == "AVG")]
    table = tables["scenario scale-out-two-brokers: phase 0 against phase 1: queues that change owner"]
    row = next(r for r in table if r[0] == "AVG")
    assert int(row[table[0].index("moved (0 to last)")]) == int(expected.queues_moved.iloc[0])
    config = next(r for r in table if r[0] == "CONFIG")
    assert config[table[0].index("min moves")] == "-"  # null: no one-owner assignment to compare

    images = [base64.b64decode(data) for data in IMAGE.findall(text)]
    # Moves and one group's queues per client; with traffic (the sample has producers), that
    # group's messages per client and the messages stranded per scenario too; with capacities,
    # each scenario's messages per client against capacity.
    charts = sample_run / "charts"
    capacity = [charts / f"capacity_{safe(name)}.png" for name in _scenarios_with_capacities(sample_run)]
    # The sample's sweeps: their worst elements charted first.
    assert (charts / "sweep_worst_elements.png").read_bytes() in images
    # The sample's hand-overs leave queues unread: their timeline per scenario and strategy.
    assert (charts / "unread_over_time.png").read_bytes() in images
    assert len(images) == (6 if traffic else 4) + len(capacity) and all(png.startswith(PNG) for png in images)
    assert (charts / "moved_per_strategy.png").read_bytes() in images
    if traffic:
        assert (charts / "stranded_per_scenario.png").read_bytes() in images
    assert all(path.read_bytes() in images for path in capacity)
    # Self-contained: nothing to fetch, nothing to run.
    assert not re.search(r"(src|href)=\"(?!data:)", text) and "<script" not in text


WHAT_MATTERS = "What matters: groups that fall behind and messages stranded, per scenario"
FALLING_BEHIND = "Groups that fall behind: clients over capacity, or a backlog that never drains"
NAMED = re.compile(r"([\w.-]+) \((\d+) of (\d+) strategies\)")


def test_the_page_opens_with_what_falls_behind_and_what_is_stranded(page, sample_run) -> None:
    text = page.read_text(encoding="utf-8")
    parsed = _tables(text)
    assert parsed.sections[0] == WHAT_MATTERS and parsed.titles[0] == WHAT_MATTERS
    header, *rows = parsed.tables[0]
    cell = dict(zip(header, zip(*rows)))
    comparison = pq.read_table(sample_run / "comparison").to_pandas()
    per = comparison.groupby("scenario")
    assert list(cell["scenario"]) == sorted(per.groups)
    assert [int(v) for v in cell["last phase"]] == per.last_phase.max().tolist()
    if (sample_run / "queue_traffic").is_dir():
        # The most over the strategies, as comparison/ has them.
        for title, column in (
            ("stranded msgs/s at phase 0", "stranded_msgs_per_s_before"),
            ("at the last phase", "stranded_msgs_per_s_after"),
            ("the most after a step", "most_stranded_msgs_per_s"),
        ):
            assert list(cell[title]) == [f"{v:.2f}" for v in per[column].max()], title
        advised = comparison.dropna(subset=["advice"]).scenario.unique()
        assert all(f"({name}" in text or f", {name}" in text for name in advised)
    column = "groups behind after a step (in any phase but 0)"
    if not _has_capacities(sample_run):
        assert column not in cell and "whether clients keep up is not known" in text
        return
    # Each scenario's groups behind in a phase after the snapshot, and under how many strategies,
    # from consumer_load's clients over capacity (or that never drain) read here.
    behind = _behind(sample_run)
    for scenario, named in zip(cell["scenario"], cell[column]):
        after = behind[(behind.scenario == scenario) & (behind.phase > 0)]
        expected = after.groupby("group").strategy.nunique().to_dict()
        assert {g: int(k) for g, k, _ in NAMED.findall(named)} == expected, scenario
        assert {int(n) for _, _, n in NAMED.findall(named)} <= {per.strategy.nunique()[scenario]}
        assert named == "none" or NAMED.findall(named)


def test_the_groups_that_fall_behind_are_those_with_a_client_over_capacity(page, sample_run) -> None:
    parsed = _tables(page.read_text(encoding="utf-8"))
    capacities = _has_capacities(sample_run)
    assert (FALLING_BEHIND in parsed.sections) == capacities  # the table only with capacities
    if not capacities:
        return
    behind = _behind(sample_run)
    assert len(behind) > 0  # the sample's order-consumer has small pods
    tables = dict(zip(parsed.titles, parsed.tables))
    snapshot = tables["the snapshot (phase 0)"]
    first = behind[(behind.scenario == behind.scenario.min()) & (behind.phase == 0)]
    assert sorted((r[0], r[1]) for r in snapshot[1:]) == sorted(zip(first.group, first.strategy))
    page_text = page.read_text(encoding="utf-8")
    for scenario, rows in behind[behind.phase > 0].groupby("scenario"):
        table = tables[f"scenario {scenario}, after a step"]
        shown = sorted((int(r[0]), r[1], r[2]) for r in table[1:])
        expected = sorted(zip(rows.phase, rows.group, rows.strategy))
        if len(rows) <= html_report.BEHIND_ROWS:
            assert shown == expected, scenario
            continue
        # A rolling deploy's 16 phases repeat every group behind: the first BEHIND_ROWS shown, the
        # rest counted.
        assert len(shown) == html_report.BEHIND_ROWS and set(shown) <= set(expected), scenario
        assert f"And {len(rows) - html_report.BEHIND_ROWS} more rows in falling_behind/." in page_text


def _consumer_load(run: Path) -> pd.DataFrame:
    load = results.phase_table(run, "consumer_load").to_pandas()  # every phase whole
    return load.astype({"scenario": str, "strategy": str})


def _has_capacities(run: Path) -> bool:
    load = _consumer_load(run)
    return "capacity_msgs_per_s" in load and bool(load.capacity_msgs_per_s.notna().any())


def _scenarios_with_capacities(run: Path) -> list[str]:
    if not _has_capacities(run):
        return []
    load = _consumer_load(run)
    return sorted(load[load.capacity_msgs_per_s.notna()].scenario.unique())


def _behind(run: Path) -> pd.DataFrame:
    """(scenario, phase, strategy, group) with a client over capacity, or one with a backlog and no
    spare capacity (it never drains): docs/CONTRACT.md, section 2d, from consumer_load."""
    load = _consumer_load(run)
    over = load.over_capacity.astype("boolean").fillna(False)
    never = (load.backlog.fillna(0) > 0) & (load.msgs_per_s >= load.capacity_msgs_per_s)
    return load[over | never][["scenario", "phase", "strategy", "group"]].drop_duplicates()


def test_report_prints_its_path_and_leaves_no_temp_file(printed, sample_run) -> None:
    assert f"html report: {sample_run / 'report.html'}" in printed
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
    assert parsed.headings == [WHAT_MATTERS, "Summary", "scenario baseline, phase 0"]
    # The overview: the one scenario, its phase 0; nothing stranded or behind to tell.
    assert parsed.tables[0] == [["scenario", "last phase"], ["baseline", "0"]]
    assert "no traffic" in text and "whether clients keep up is not known" in text
    summary = parsed.tables[1]
    assert parsed.titles[1] == "scenario baseline, phase 0: queues" and len(parsed.tables) == 2
    assert [row[0] for row in summary[1:]] == ["<AVG & co>", "STICKY"]
    assert "&lt;AVG &amp; co&gt;" in text and "<AVG" not in text
    assert summary[1][summary[0].index("fleet max/mean")] == "-"  # a null cell
    assert summary[2][summary[0].index("fleet max/mean")] == "1.50"
    assert "<img" not in text


def test_bad_run_directory_is_exit_code_2_and_writes_nothing(tmp_path, capsys) -> None:
    assert main(["report", "--run", str(tmp_path), "--html"]) == 2
    assert "arguments.--run" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def _chromium() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


def _browser() -> str:
    browser = _chromium()
    if browser is None:
        missing = "no chromium, chromium-browser or google-chrome on PATH"
        if os.environ.get("CI") == "true":  # .ci/run installs Chromium: without it the test checks nothing
            pytest.fail(f"{missing}, in CI")
        pytest.skip(f"{missing}; the page's content is checked above")
    return browser


def _dump_dom(page: Path, profile: Path, *flags: str) -> str:
    """The DOM headless Chromium builds of ``page``, after its load event."""
    done = subprocess.run(
        [
            _browser(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *flags,
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout, done.stderr[-2000:]
    return done.stdout


def test_page_renders_in_headless_chromium(page, tmp_path) -> None:
    # A virtual time budget: without one, a loaded machine's Chromium was seen waiting past the
    # timeout before dumping a page of many inline charts.
    dom = _dump_dom(page, tmp_path / "profile", "--virtual-time-budget=10000")
    # The browser's DOM holds the same tables, cell for cell: no markup it had to repair.
    written = _tables(page.read_text(encoding="utf-8"))
    rendered = _tables(dom)
    assert rendered.tables == written.tables and len(rendered.tables) > 10
    assert rendered.headings == written.headings and rendered.titles == written.titles
    assert len(IMAGE.findall(dom)) == len(IMAGE.findall(page.read_text(encoding="utf-8")))  # every chart


# Written into the DOM once the page (its images too) is laid out: the widths a reader gets.
MEASURE = """<script>addEventListener("load", () => {
  document.body.dataset.scrollWidth = document.documentElement.scrollWidth;
  document.body.dataset.innerWidth = window.innerWidth;
  document.body.dataset.drawn = [...document.images].filter((i) => i.complete && i.naturalWidth > 0).length;
});</script>"""


def _measured(dom: str, name: str) -> int:
    return int(re.search(rf'data-{name}="(\d+)"', dom).group(1))


def test_page_fits_a_1366_pixel_screen(page, tmp_path) -> None:
    # A copy of the page with a script that measures it: the page itself runs none.
    probe = tmp_path / "probe.html"
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", f"{MEASURE}</body>"), encoding="utf-8"
    )
    dom = _dump_dom(probe, tmp_path / "profile", "--window-size=1366,900", "--virtual-time-budget=10000")
    scroll_width, inner_width = _measured(dom, "scroll-width"), _measured(dom, "inner-width")
    assert inner_width == 1366  # the window is the screen's width: the check below means something
    assert scroll_width <= 1366  # nothing runs off the right edge: no horizontal scrolling
    # Every chart decodes and draws, the timeline of queues unread among them.
    assert _measured(dom, "drawn") == len(IMAGE.findall(page.read_text(encoding="utf-8")))
    assert "Queues no client reads while they are handed over" in dom


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
