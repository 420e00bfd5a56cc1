"""`rmqsim report` on a run with capacities (docs/CONTRACT.md, section 2d): each scenario's chart of
messages per client against capacity, and the HTML page's groups that fall behind, checked against
consumer_load read here with pyarrow, and by hand."""

from __future__ import annotations

import base64
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from matplotlib.colors import to_hex

from rmqsim.reporting import charts, html, results
from tests.builders import broker_rows, queue_rows
from tests.simulated import simulated
from tests.test_html_report import FALLING_BEHIND, IMAGE, PNG, WHAT_MATTERS, _tables

# 8 queues of 30 msgs/s. Group g: AVG and STICKY give g-a and g-b 3 queues (90 msgs/s, under
# their 100) and g-c 2 (60 msgs/s, three times its 20): g-c is behind from the snapshot on. In
# "peak" the rate doubles: all three are over (180, 180, 120); then g-d joins with no known
# capacity: 2 queues each, 120 msgs/s, the three still over. In "join" g-d joins at the snapshot's
# rate: 60 msgs/s each, g-c alone over. Group h has no capacities: never behind, never charted.
CAPACITIES = {"g-a": 100.0, "g-b": 100.0, "g-c": 20.0}
SCENARIOS = """
scenarios:
  - name: peak
    steps: [{set_traffic: {topics: [t], factor: 2}}, {consumers_join: {group: g, client_ids: [g-d]}}]
  - {name: join, steps: [{consumers_join: {group: g, client_ids: [g-d]}}]}
"""
STRATEGIES = ("AVG", "STICKY")
OVER = {charts.CAPACITY_COLOURS[(True, False)], charts.CAPACITY_COLOURS[(True, True)]}


def _run(spark, where: Path, capacities: dict[str, float | None]) -> Path:
    consumers = [
        {"group": "g", "topic": "t", "client_id": c, "capacity_msgs_per_s": cap}
        for c, cap in capacities.items()
    ]
    consumers += [
        {"group": "h", "topic": "t", "client_id": c, "capacity_msgs_per_s": None} for c in ("h-a", "h-b")
    ]
    tables = dict(
        brokers=broker_rows("b1", "b2"),
        topic_queues=queue_rows("t", {"b1": 4, "b2": 4}),
        consumers=consumers,
        producers=[{"topic": "t", "msgs_per_s": 240.0}],
    )
    return simulated(
        spark, where, sink="arrow", tables=tables, scenarios=SCENARIOS, strategies=STRATEGIES
    ).out


@pytest.fixture(scope="module")
def capacity_run(spark, tmp_path_factory) -> Path:
    return _run(spark, tmp_path_factory.mktemp("capacity"), CAPACITIES)


@pytest.fixture(scope="module")
def plain_run(spark, tmp_path_factory) -> Path:
    """The same fleet with no capacity known."""
    return _run(spark, tmp_path_factory.mktemp("plain"), dict.fromkeys(CAPACITIES))


def _load(run: Path) -> pd.DataFrame:
    load = results.phase_table(run, "consumer_load").to_pandas()  # every phase whole
    return load.astype({"scenario": str, "strategy": str, "over_capacity": "boolean"})


def test_each_scenario_gets_a_chart_of_its_clients_against_their_capacity(capacity_run) -> None:
    written = charts.write_charts(str(capacity_run))
    assert [scenario for scenario, _ in written.capacity] == ["join", "peak"]
    assert all(path.read_bytes().startswith(PNG) for _, path in written.capacity)
    load = _load(capacity_run)
    # Red bars, by hand: g-c under both strategies at phase 0 and 1 in join; in peak, g-c at
    # phase 0 and g-a, g-b and g-c at its last phase, 2, under both.
    by_hand = {"join": 2 + 2, "peak": 2 + 6}
    for scenario, _ in written.capacity:
        last = {"join": 1, "peak": 2}[scenario]
        shown = results.capacity_load(capacity_run, scenario=scenario, groups=["g"], phases=(0, last))
        figure = charts.capacity_figure(shown, scenario=scenario, last_phase=last)
        (panel,) = figure.axes  # only g has capacities
        colours = [to_hex(bar.get_facecolor()) for bar in panel.patches]
        mine = load[(load.scenario == scenario) & (load.group == "g") & load.phase.isin([0, last])]
        assert len(colours) == len(mine)  # a bar per client, phase and strategy
        assert sum(c in OVER for c in colours) == int(mine.over_capacity.sum()) == by_hand[scenario]
        # A capacity line per client with a known capacity, in each strategy's block.
        (lines,) = panel.collections
        assert len(lines.get_segments()) == len(CAPACITIES) * len(STRATEGIES)


def test_without_capacities_the_same_charts_as_before(capacity_run, plain_run) -> None:
    written = charts.write_charts(str(plain_run))
    assert written.capacity == ()
    names = {p.name for p in (plain_run / "charts").iterdir()}
    assert names == {
        "moved_per_strategy.png",
        f"load_{written.scenario}_{written.group}.png",
        f"messages_{written.scenario}_{written.group}.png",
        "stranded_per_scenario.png",
        "unread_over_time.png",  # the join hands queues over: each unread until its first pull
    }
    charts.write_charts(str(capacity_run))
    with_capacities = {p.name for p in (capacity_run / "charts").iterdir()}
    assert with_capacities - names == {"capacity_join.png", "capacity_peak.png"}


def test_the_page_opens_with_the_groups_that_fall_behind(capacity_run) -> None:
    page = html.write_html(capacity_run, charts.write_charts(str(capacity_run))).read_text(encoding="utf-8")
    parsed = _tables(page)
    assert parsed.sections[:1] == [WHAT_MATTERS] and FALLING_BEHIND in parsed.sections
    header, *rows = parsed.tables[0]
    behind = header.index("groups behind after a step (in any phase but 0)")
    # g behind under both strategies after either step, and in the snapshot; h never.
    assert [(r[0], r[behind]) for r in rows] == [
        ("join", "g (2 of 2 strategies)"),
        ("peak", "g (2 of 2 strategies)"),
    ]
    assert "Groups behind in the snapshot (phase 0): g (2 of 2 strategies)." in page

    # The falling-behind tables: what consumer_load says, summed here per (phase, strategy).
    load = _load(capacity_run)
    tables = dict(zip(parsed.titles, parsed.tables))
    snapshot = tables["the snapshot (phase 0)"]
    assert [r[:2] for r in snapshot[1:]] == [["g", "AVG"], ["g", "STICKY"]]
    growth = {}
    for scenario in ("join", "peak"):
        head, *table = tables[f"scenario {scenario}, after a step"]
        over = load[(load.scenario == scenario) & (load.phase > 0) & load.over_capacity.fillna(False)]
        per = over.groupby(["phase", "strategy"]).agg(
            over=("client_id", "size"), growth=("lag_growth_msgs_per_s", "sum")
        )
        cells = {
            (int(r[0]), r[2]): (int(r[head.index("over capacity")]), r[head.index("lag growth msgs/s")])
            for r in table
        }
        assert cells == {key: (int(p.over), f"{p.growth:.2f}") for key, p in per.iterrows()}
        growth[scenario] = {key: cell[1] for key, cell in cells.items()}
    # By hand: 80 + 80 + 100 at twice the rate, then 20 + 20 + 100 once g-d shares it.
    assert growth["peak"] == {
        (1, "AVG"): "260.00",
        (1, "STICKY"): "260.00",
        (2, "AVG"): "140.00",
        (2, "STICKY"): "140.00",
    }

    # Each scenario's capacity chart inline, under its table.
    section = page[page.index(f"<h2>{FALLING_BEHIND}") :].split("<h3>")
    for scenario in ("join", "peak"):
        (mine,) = (part for part in section if part.startswith(f"scenario {scenario}, after a step</h3>"))
        (png,) = (base64.b64decode(data) for data in IMAGE.findall(mine))
        assert png == (capacity_run / "charts" / f"capacity_{scenario}.png").read_bytes()


def test_without_capacities_the_page_says_so(plain_run) -> None:
    page = html.write_html(plain_run, charts.write_charts(str(plain_run))).read_text(encoding="utf-8")
    parsed = _tables(page)
    assert parsed.sections[0] == WHAT_MATTERS and FALLING_BEHIND not in parsed.sections
    assert "groups behind after a step (in any phase but 0)" not in parsed.tables[0][0]
    assert "whether clients keep up is not known" in page
    assert "Groups behind in the snapshot" not in page


def test_with_capacities_but_no_traffic_nobody_is_known_to_fall_behind(spark, tmp_path) -> None:
    # Capacities, but no producers: no client's messages are known, so no client is over or under
    # its capacity. falling_behind/ is written (some client has a capacity) with no row, summary's
    # groups_behind is null, and the page says it does not know rather than "none".
    consumers = [
        {"group": "g", "topic": "t", "client_id": c, "capacity_msgs_per_s": cap}
        for c, cap in CAPACITIES.items()
    ]
    tables = dict(brokers=broker_rows("b1"), topic_queues=queue_rows("t", {"b1": 4}), consumers=consumers)
    out = simulated(spark, tmp_path, sink="arrow", tables=tables).out
    assert pq.read_table(out / "falling_behind").num_rows == 0
    assert pq.read_table(out / "summary").column("groups_behind").to_pylist() == [None]
    page = html.write_html(out, charts.write_charts(str(out))).read_text(encoding="utf-8")
    assert (
        "Groups behind in the snapshot (phase 0): not known (no client with a capacity has traffic)." in page
    )
