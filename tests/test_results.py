"""rmqsim.results: a run's tables in pandas without Spark, checked against what Spark computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from rmqsim import recommendation, rollups
from rmqsim.errors import InputError
from rmqsim.reporting import results, text
from rmqsim.strategies import STRATEGIES


def test_the_exposure_table_is_the_split_brain_aggregated_most_exposed_first(spark, sample_run) -> None:
    split_brain = spark.read.parquet(str(sample_run / "split_brain")).toPandas()
    # The sums by hand, in pandas: the written table is this, most exposed first.
    risk = split_brain.multi_owned_queues + split_brain.unassigned_queues
    expected = (
        split_brain.assign(exposed=(risk > 0).astype("int64"))
        .groupby(["scenario", "strategy"], as_index=False)
        .agg(
            topic_groups=("group", "size"),
            exposed=("exposed", "sum"),
            multi_owned_queues=("multi_owned_queues", "sum"),
            unassigned_queues=("unassigned_queues", "sum"),
            queues=("queue_count", "sum"),
        )
    )
    at_risk = expected.multi_owned_queues + expected.unassigned_queues
    expected["at_risk_fraction"] = at_risk / expected.queues
    order = ["scenario", "at_risk_fraction", "strategy"]
    expected = expected.sort_values(order, ascending=[True, False, True])
    loaded = results.load_run(sample_run).exposure
    # The sample's two split brains (a stale view, a half-done designation), each on the seven
    # strategies that ran on its group.
    assert len(loaded) == 14
    written = loaded[expected.columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(written, expected.reset_index(drop=True), check_dtype=False)


def test_exposure_keeps_a_missing_backlog_null_and_puts_the_most_exposed_first() -> None:
    split_brain = pd.DataFrame(
        {
            "scenario": ["s", "s", "s", "s"],
            "strategy": ["AVG", "AVG", "STICKY", "CONFIG"],
            "topic": ["t1", "t2", "t1", "t3"],
            "group": ["g", "g", "g", "g"],
            "queue_count": [4, 6, 4, 0],
            "multi_owned_queues": [0, 1, 2, 0],
            "unassigned_queues": [0, 1, 0, 0],
            "multi_owned_backlog": pd.array([None, None, 7, 0], dtype="Int64"),  # no offsets for AVG's
            "unassigned_backlog": pd.array([None, None, 0, 0], dtype="Int64"),
        }
    )
    out = rollups.exposure(pa.Table.from_pandas(split_brain)).to_pandas().set_index("strategy")
    assert list(out.index) == ["STICKY", "AVG", "CONFIG"]  # 2/4 at risk, 2/10, no queue last
    assert pd.isna(out.loc["CONFIG", "at_risk_fraction"])
    assert out.loc["AVG", ["topic_groups", "exposed", "queues"]].tolist() == [2, 1, 10]
    assert out.loc["AVG", "at_risk_fraction"] == pytest.approx(0.2)
    assert pd.isna(out.loc["AVG", "multi_owned_backlog"]) and out.loc["STICKY", "multi_owned_backlog"] == 7


def test_moves_per_step_add_up_to_the_comparison(sample_run) -> None:
    steps = results.moved_per_step(sample_run)
    summed = steps.groupby(["scenario", "strategy"]).moved.sum()
    comparison = results.load_table(sample_run, "comparison").set_index(["scenario", "strategy"])
    assert summed.sort_index().tolist() == comparison.moved_over_steps.sort_index().tolist()
    # The sample's scenarios have one or two steps, but the rolling deploy of pay-consumer's 8
    # pods: a leave and a join each, 16 phases.
    assert set(steps.step) == set(range(1, 2 * 8 + 1))


def test_focus_and_group_load(sample_run) -> None:
    run = results.load_run(sample_run)
    chosen = results.focus(run, scenario="pay-consumer-8-to-12")
    assert (chosen.scenario, chosen.last_phase) == ("pay-consumer-8-to-12", 2)
    movement = results.load_table(sample_run, "movement")
    moved = movement[movement.scenario == chosen.scenario].groupby("group").moved.sum()
    assert moved[chosen.group] == moved.max() > 0

    load = results.group_load(sample_run, scenario=chosen.scenario, group=chosen.group, phases=[0, 2])
    assert set(load.group) == {chosen.group} and set(load.phase) == {0, 2}
    assert set(load.scenario) == {chosen.scenario}
    # pay-consumer's 8 clients: 4 join, then 1 leaves.
    assert load[load.strategy == "AVG"].groupby("phase").client_id.nunique().to_dict() == {0: 8, 2: 11}

    with pytest.raises(InputError, match=r"--scenario.*'nope'"):
        results.focus(run, scenario="nope")
    with pytest.raises(InputError, match=r"--group.*'nope'"):
        results.focus(run, group="nope")


def test_snapshot_summary_is_phase_0_once(sample_run) -> None:
    summary = results.snapshot_summary(results.load_run(sample_run))
    assert set(summary.phase) == {0} and summary.scenario.nunique() == 1
    assert summary.strategy.is_unique and len(summary) == len(STRATEGIES)  # every strategy, once


def test_recommendation_rounds_as_spark_does_half_up_on_the_printed_decimal() -> None:
    # 0.1235 is stored as 0.12349999999999999...: Python's round() gives 0.123, Spark's
    # BigDecimal("0.1235").setScale(3, HALF_UP) gives 0.124; likewise 2.0005 to 2.001.
    assert recommendation.rounded(np.array([0.1235, 2.0005, 1.0, 1.3333333333333333]), 3).tolist() == [
        0.124,
        2.001,
        1.0,
        1.333,
    ]


def _summary(rows: list[tuple[int, str, float | None, int | None]]) -> pd.DataFrame:
    """(phase, strategy, stranded_msgs_per_s, stranded_backlog) of scenario s."""
    frame = pd.DataFrame(rows, columns=["phase", "strategy", "stranded_msgs_per_s", "stranded_backlog"])
    return frame.assign(scenario="s", stranded_backlog=frame.stranded_backlog.astype("Int64"))


def _behind(rows: list[tuple[int, str, str]]) -> pd.DataFrame:
    """(phase, strategy, group) of scenario s in falling_behind/."""
    return pd.DataFrame(rows, columns=["phase", "strategy", "group"]).assign(scenario="s")


def test_the_overview_names_the_groups_behind_after_a_step_and_the_most_stranded(tmp_path) -> None:
    summary = _summary(
        [
            (0, "A", 5.0, 0),
            (0, "B", 0.0, None),  # B skips the group that strands: nothing, no backlog
            (1, "A", 40.0, 100),
            (1, "B", 0.0, None),
            (2, "A", 5.0, 30),
            (2, "B", 0.0, None),
        ]
    )
    # g1 behind under both strategies after a step (A at 1 and 2: counted once); g2 only in the
    # snapshot; six more groups under A alone: NAMED_GROUPS named, the rest counted.
    behind = _behind(
        [(1, "A", "g1"), (2, "A", "g1"), (2, "B", "g1"), (0, "A", "g2")]
        + [(1, "A", f"g{k}") for k in range(3, 9)]
    )
    # Scenario u has no offsets: its backlog is null, s's stays a whole number beside it.
    without_offsets = _summary([(0, "A", 0.0, None), (1, "A", 0.0, None)]).assign(scenario="u")
    run = results.Run(tmp_path, pd.concat([summary, without_offsets]), None, None, None, behind)
    row, other = results.overview(run).to_dict("records")
    assert other["scenario"] == "u" and other["stranded_backlog_after"] is None
    assert text.format_cell(row["stranded_backlog_after"]) == "30"  # not 30.00
    assert results.NAMED_GROUPS == 5
    assert row["behind_after_a_step"] == (
        "g1 (2 of 2 strategies), g3 (1 of 2 strategies), g4 (1 of 2 strategies), "
        "g5 (1 of 2 strategies), g6 (1 of 2 strategies), and 2 more groups"
    )
    assert results.snapshot_behind(run) == "g2 (1 of 2 strategies)"
    assert (row["last_phase"], row["stranded_msgs_per_s_before"], row["stranded_msgs_per_s_after"]) == (
        2,
        5.0,
        5.0,
    )
    assert (row["most_stranded_msgs_per_s"], row["stranded_backlog_after"]) == (40.0, 30)
    assert row["advice"] is None  # no comparison/: a run's advice comes from there

    # Capacities known and nobody behind after a step: "none"; unknown (no falling_behind/): null.
    quiet = results.Run(tmp_path, summary, None, None, None, behind[behind.phase == 0])
    assert results.overview(quiet).behind_after_a_step.tolist() == ["none"]
    unknown = results.overview(results.Run(tmp_path, summary, None, None, None))
    assert unknown.behind_after_a_step.tolist() == [None]
    assert results.snapshot_behind(results.Run(tmp_path, summary, None, None, None)) is None


def test_the_overview_of_a_run_without_steps_or_traffic(tmp_path) -> None:
    summary = _summary([(0, "A", None, None)])
    (row,) = results.overview(results.Run(tmp_path, summary, None, None, None, _behind([]))).to_dict(
        "records"
    )
    assert row["last_phase"] == 0 and row["behind_after_a_step"] is None  # no step to be behind after
    assert [row[k] for k in results.OVERVIEW_KEYS[3:]] == [None] * 5


def test_a_fleet_prints_its_advised_groups_first_and_at_most_twenty() -> None:
    from rmqsim import simulate

    # 25 groups g00..g24; g03 and g17 have advice (a scenario strands their messages).
    advised = {"g03", "g17"}
    names = [f"g{i:02d}" for i in range(25)]
    rows = pa.table(
        {
            "group": names,
            "advice": [f"drain {g} first" if g in advised else None for g in names],
            "most_stranded_msgs_per_s": [1.5 if g in advised else None for g in names],
        }
    )
    printed = simulate._printed(rows)
    # The two advised groups, then the first 18 others by name: g00..g02, g04..g16, g18, g19.
    assert [r["group"] for r in printed] == ["g03", "g17", *[g for g in names if g not in advised][:18]]
    lines = text.format_recommendation(printed, groups=25).splitlines()
    # A title, a header, a rule, 20 rows; then the count of the rest and each advised group's line
    # (rates print with two decimals).
    assert lines[23:26] == [
        "... and 5 more groups in recommendation/",
        "g03: a scenario strands up to 1.50 msgs/s",
        "g17: a scenario strands up to 1.50 msgs/s",
    ]
