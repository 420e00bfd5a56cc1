"""rmqsim.results: a run's tables in pandas without Spark, checked against what Spark computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from rmqsim import rollups
from rmqsim.errors import InputError
from rmqsim.reporting import results


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
    assert len(loaded) == 6  # the sample's stale_view scenario, on the six strategies that ran
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
    assert set(steps.step) == {1, 2}  # the sample's scenarios have one or two steps


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
    assert summary.strategy.is_unique and len(summary) == 8


def test_recommendation_rounds_as_spark_does_half_up_on_the_printed_decimal() -> None:
    # 0.1235 is stored as 0.12349999999999999...: Python's round() gives 0.123, Spark's
    # BigDecimal("0.1235").setScale(3, HALF_UP) gives 0.124; likewise 2.0005 to 2.001.
    assert rollups.rounded(np.array([0.1235, 2.0005, 1.0, 1.3333333333333333]), 3).tolist() == [
        0.124,
        2.001,
        1.0,
        1.333,
    ]
