"""Metrics against hand-worked examples, through a real snapshot, simulate and the written tables."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from rmqsim import schemas, simulate
from rmqsim.config import SimulateConfig
from tests.builders import broker_rows, consumer_rows, make_snapshot, queue_rows


def _run(spark, tmp_path, strategies=("AVG", "AVG_BY_CIRCLE"), **tables):
    snapshot = make_snapshot(tmp_path / "snapshot", **tables)
    out = str(tmp_path / "out")
    result = simulate.run(spark, SimulateConfig(snapshot=snapshot, out=out, strategies=strategies))
    return out, result


def test_three_brokers_of_three_queues_over_four_consumers(spark, tmp_path) -> None:
    # 9 queues, 4 clients: AVG gives 3, 2, 2, 2 (the extra queue to the first-sorted client).
    out, _ = _run(
        spark,
        tmp_path,
        strategies=("AVG",),
        brokers=broker_rows("broker-a", "broker-b", "broker-c"),
        topic_queues=queue_rows("t", {"broker-a": 3, "broker-b": 3, "broker-c": 3}),
        consumers=consumer_rows("g", "t", ["c1", "c2", "c3", "c4"]),
    )
    load = spark.read.parquet(f"{out}/consumer_load").select("client_id", "queues")
    expected_load = spark.createDataFrame(
        [("c1", 3), ("c2", 2), ("c3", 2), ("c4", 2)], "client_id string, queues long"
    )
    assert_df_equality(load, expected_load, ignore_row_order=True, ignore_nullable=True)

    gm = spark.read.parquet(f"{out}/group_metrics").drop("scenario", "strategy").collect()
    [row] = gm
    assert (row.queue_count, row.consumer_count, row.active_consumers, row.idle_consumers) == (9, 4, 4, 0)
    assert (row.min_queues, row.max_queues, row.mean_queues) == (3 - 1, 3, 2.25)
    assert row.max_over_mean == pytest.approx(4 / 3)
    # population stddev of 3, 2, 2, 2: sqrt(((0.75)^2 + 3 * (0.25)^2) / 4)
    assert row.stddev_queues == pytest.approx(((0.75**2 + 3 * 0.25**2) / 4) ** 0.5)
    assert (row.unassigned_queues, row.multi_owned_queues, row.duplicate_client_ids) == (0, 0, 0)
    assert row.error is None


def test_assignment_rows_by_hand(spark, tmp_path) -> None:
    # 5 queues on one broker, 2 clients. AVG: a gets 0-2, b gets 3-4. Circle: a gets 0,2,4; b gets 1,3.
    out, _ = _run(
        spark,
        tmp_path,
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 5}),
        consumers=consumer_rows("g", "t", ["y@2", "x@1"]),
    )
    got = spark.read.parquet(f"{out}/assignments").select("strategy", "client_id", "queue_id")
    owners = {"AVG": "xxxyy", "AVG_BY_CIRCLE": "xyxyx"}
    expected = spark.createDataFrame(
        [(s, f"{o}@{1 if o == 'x' else 2}", q) for s, seq in owners.items() for q, o in enumerate(seq)],
        "strategy string, client_id string, queue_id int",
    )
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_fleet_skew_is_worse_than_any_topic_shows(spark, tmp_path) -> None:
    # Three topics of 5 queues read by the same two clients: each topic is 3 vs 2 (max/mean 1.2),
    # but AVG hands every extra queue to the first-sorted client: 9 vs 6 over the fleet.
    topics = ["t1", "t2", "t3"]
    out, result = _run(
        spark,
        tmp_path,
        strategies=("AVG",),
        brokers=broker_rows("b"),
        topic_queues=[r for t in topics for r in queue_rows(t, {"b": 5})],
        consumers=[r for t in topics for r in consumer_rows("g", t, ["a@1", "b@1"])],
    )
    load = spark.read.parquet(f"{out}/consumer_load").select("client_id", "topics", "queues")
    expected = spark.createDataFrame(
        [("a@1", 3, 9), ("b@1", 3, 6)], "client_id string, topics long, queues long"
    )
    assert_df_equality(load, expected, ignore_row_order=True, ignore_nullable=True)
    gm = spark.read.parquet(f"{out}/group_metrics")
    assert [r.max_over_mean for r in gm.collect()] == [pytest.approx(1.2)] * 3
    [summary] = result.summary
    assert summary["fleet_max_over_mean"] == pytest.approx(9 / 7.5)
    assert summary["worst_group_max_over_mean"] == pytest.approx(1.2)


def test_idle_consumers_and_duplicate_client_ids(spark, tmp_path) -> None:
    # 2 queues, clients [a, b, b, c] as sorted cidAll: both b copies take b's share (queue 1),
    # c (index 3) gets nothing, and nothing is unassigned here; with [a, a, b] and 3 queues under
    # AVG, a takes queue 0, the second a's share (queue 1) has no owner, b takes queue 2.
    out, _ = _run(
        spark,
        tmp_path,
        strategies=("AVG",),
        brokers=broker_rows("b"),
        topic_queues=queue_rows("few", {"b": 2}) + queue_rows("dup", {"b": 3}),
        consumers=consumer_rows("g1", "few", ["a", "b", "b", "c"])
        + consumer_rows("g2", "dup", ["a", "a", "b"]),
    )
    gm = spark.read.parquet(f"{out}/group_metrics").select(
        "group",
        "queue_count",
        "consumer_count",
        "active_consumers",
        "idle_consumers",
        "unassigned_queues",
        "duplicate_client_ids",
    )
    expected = spark.createDataFrame(
        [("g1", 2, 3, 2, 1, 0, 1), ("g2", 3, 2, 2, 0, 1, 1)],
        "group string, queue_count long, consumer_count long, active_consumers long, "
        "idle_consumers long, unassigned_queues long, duplicate_client_ids long",
    )
    assert_df_equality(gm, expected, ignore_row_order=True, ignore_nullable=True)
    owned = spark.read.parquet(f"{out}/assignments").where(F.col("group") == "g2")
    assert sorted((r.client_id, r.queue_id) for r in owned.collect()) == [("a", 0), ("b", 2)]


def test_topic_whose_brokers_are_all_down_reports_the_client_error(spark, tmp_path) -> None:
    out, result = _run(
        spark,
        tmp_path,
        strategies=("AVG",),
        brokers=broker_rows("up") + broker_rows("down", alive=False),
        topic_queues=queue_rows("lost", {"down": 4}) + queue_rows("fine", {"up": 2}),
        consumers=consumer_rows("g", "lost", ["a", "b"]) + consumer_rows("g", "fine", ["a", "b"]),
    )
    gm = {r.topic: r for r in spark.read.parquet(f"{out}/group_metrics").collect()}
    assert gm["lost"].error == "mqAll is null or mqAll empty"
    assert (gm["lost"].queue_count, gm["lost"].idle_consumers) == (0, 2)
    assert gm["fine"].error is None
    assert result.summary[0]["groups_with_errors"] == 1
    assert spark.read.parquet(f"{out}/assignments").where("topic = 'lost'").count() == 0


def test_output_schemas_are_the_declared_ones(spark, tmp_path) -> None:
    out, _ = _run(
        spark,
        tmp_path,
        strategies=("AVG",),
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 1}),
        consumers=consumer_rows("g", "t", ["a"]),
    )
    for name, schema in [
        ("assignments", schemas.ASSIGNMENTS),
        ("group_metrics", schemas.GROUP_METRICS),
        ("consumer_load", schemas.CONSUMER_LOAD),
        ("rejects", schemas.REJECTS),
    ]:
        got = spark.read.parquet(f"{out}/{name}")
        assert sorted(got.columns) == sorted(schema.fieldNames()), name
