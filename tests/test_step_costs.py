"""What each step costs and whom (rmqsim.step_costs), and the findings and compact tables built on
it (rmqsim.reporting): pure functions over small tables worked by hand, no Spark."""

from __future__ import annotations

import pyarrow as pa

from rmqsim import step_costs
from rmqsim.reporting import compact
from rmqsim.reporting.findings import LINES, WIDTH, findings, format_findings


def _handover(rows: list[tuple]) -> pa.Table:
    names = ["scenario", "strategy", "topic", "group", "to_phase", "msgs_delayed", "msgs_read_twice"]
    return pa.table(dict(zip(names, map(list, zip(*rows)))))


def _behind(rows: list[tuple]) -> pa.Table:
    names = ["scenario", "phase", "strategy", "group", "clients_over_capacity", "lag_growth_msgs_per_s"]
    return pa.table(dict(zip(names, map(list, zip(*rows)))))


def test_a_step_s_messages_are_summed_and_the_group_they_cost_most_is_named() -> None:
    handover = _handover(
        [
            # Step 1 under AVG: g1 loses 10 + 5 on t1 and 2 + 0 on t2 (17), g2 20 + 0 (20): 37, most g2.
            ("s", "AVG", "t1", "g1", 1, 10.0, 5.0),
            ("s", "AVG", "t2", "g1", 1, 2.0, 0.0),
            ("s", "AVG", "t1", "g2", 1, 20.0, 0.0),
            # Step 2: g1 alone, 3 + 4.
            ("s", "AVG", "t1", "g1", 2, 3.0, 4.0),
            # A tie under STICKY (5 each): the first by name.
            ("s", "STICKY", "t1", "gb", 1, 5.0, 0.0),
            ("s", "STICKY", "t1", "ga", 1, 0.0, 5.0),
        ]
    )
    rows = step_costs.step_costs(handover, None, None).to_pylist()
    got = {(r["phase"], r["strategy"]): (r["msgs"], r["msgs_group"]) for r in rows}
    assert got == {(1, "AVG"): (37.0, "g2"), (2, "AVG"): (7.0, "g1"), (1, "STICKY"): (10.0, "ga")}
    assert all(r["groups_behind"] is None and r["behind_group"] is None for r in rows)


def test_only_groups_not_behind_in_the_snapshot_under_that_strategy_are_newly_behind() -> None:
    at_0 = _behind([("base", 0, "AVG", "g1", 2, 50.0)])  # g1 behind already under AVG
    later = _behind(
        [
            ("s", 1, "AVG", "g1", 3, 90.0),  # still behind: not new
            ("s", 1, "AVG", "g2", 1, 30.0),
            ("s", 1, "AVG", "g3", 1, 70.0),
            ("s", 1, "AVG", "g4", 0, 0.0),  # a row without a client over capacity: not behind
            ("s", 1, "STICKY", "g1", 1, 10.0),  # new under STICKY: at phase 0 only AVG's was behind
        ]
    )
    rows = step_costs.step_costs(
        None, step_costs.behind_rows(later), step_costs.behind_rows(at_0)
    ).to_pylist()
    got = {
        r["strategy"]: (r["groups_behind"], r["behind_group"], r["behind_lag_growth_msgs_per_s"])
        for r in rows
    }
    assert got == {"AVG": (2, "g3", 70.0), "STICKY": (1, "g1", 10.0)}
    assert all(r["msgs"] is None for r in rows)


def test_the_snapshot_s_groups_behind_most_strategies_first() -> None:
    at_0 = _behind(
        [
            ("base", 0, "AVG", "a", 1, 10.0),
            ("base", 0, "AVG", "b", 2, 40.0),
            ("base", 0, "STICKY", "b", 3, 20.0),
            ("base", 0, "STICKY", "c", 1, 99.0),
        ]
    )
    rows = step_costs.snapshot_behind(step_costs.behind_rows(at_0)).to_pylist()
    # b under 2 strategies first; a and c under 1, the most lag growth first (c 99, a 10).
    assert [
        (r["group"], r["strategies"], r["clients_over_capacity"], r["lag_growth_msgs_per_s"]) for r in rows
    ] == [
        ("b", 2, 3, 40.0),
        ("c", 1, 1, 99.0),
        ("a", 1, 1, 10.0),
    ]


def _comparison(scenario: str, strategy: str, moved: int, delayed: float, handed: int) -> dict:
    return {
        "scenario": scenario,
        "strategy": strategy,
        "queues_moved": moved,
        "lag_growth_msgs_per_s_after": 1.0,
        "most_stranded_msgs_per_s": 0.0,
        "queues_handed_over": handed,
        "msgs_delayed": delayed,
        "msgs_read_twice": 0.0,
    }


def test_a_scenario_s_strategies_fold_into_one_row() -> None:
    rows = [
        _comparison("s", "AVG", 12, 30.0, 4),
        _comparison("s", "STICKY", 3, 7.6, 1),
        _comparison("s", "CONFIG", 0, 0.0, 0),  # hands nothing over: not the cheapest
        _comparison("sweep/broker-a", "AVG", 9, 1.0, 1),  # a sweep's element: in the sweep's table
    ]
    [row] = compact.scenario_rows(rows)
    # moved 0 to 12 over the three; hand-overs 8 (7.6 rounded) to 30, STICKY the cheapest.
    assert (row["scenario"], row["queues_moved"], row["handover_msgs"], row["cheapest"]) == (
        "s",
        "0-12",
        "8-30",
        "STICKY",
    )
    # Without traffic every hand-over costs 0 messages: no strategy is cheaper than another.
    [free] = compact.scenario_rows([{**r, "msgs_delayed": 0.0} for r in rows])
    assert (free["handover_msgs"], free["cheapest"]) == ("0", None)


def test_tables_leave_out_their_last_columns_rather_than_pass_the_width() -> None:
    rows = [{"a": "x" * 40, "b": 1, "c": "y" * 50, "d": "z" * 30}]
    text = compact.fitted(rows, [("a", "a"), ("b", "b"), ("c", "c"), ("d", "d")], "t")
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    # a (cut to 32) + b fit with c (32 + 2 + 1 + 2 + 50 = 87); d would make 119.
    assert text.splitlines()[0].split() == ["a", "b", "c"]
    assert text.splitlines()[-1] == "left out here: d (in t/)"
    assert text.splitlines()[2].startswith("x" * 29 + "...")


def test_the_findings_block_keeps_to_its_lines_and_says_how_many_more() -> None:
    summary = [{"strategy": "AVG"}]
    steps = [
        {"scenario": f"s{i:02}", "phase": 1, "strategy": "AVG", "msgs": float(i + 1), "msgs_group": f"g{i}"}
        for i in range(30)
    ]
    found = findings(summary=summary, steps=steps)
    assert len(found) == 30
    # The costliest first: s29 (30 msgs), s28, ...; each names its scenario and group.
    assert found[0].text == "s29, phase 1, AVG: 30 msgs of g29 late or twice"
    assert all(set(f.subjects) <= set(f.text.replace(",", " ").replace(":", " ").split()) for f in found)
    lines = format_findings(found).splitlines()
    # The title, 13 findings, and a line for the other 17.
    assert len(lines) == LINES and lines[-1].startswith("  ... 17 more")
