"""Metrics against hand-worked examples: on route batches where a snapshot and Spark add nothing,
through a real snapshot, simulate and the written tables (on both sinks) where they do."""

from __future__ import annotations

import pyarrow.dataset as ds
import pytest

from rmqsim import rollups, schemas
from tests.builders import broker_rows, consumer_rows, queue_rows, route, staged
from tests.simulated import simulated


def test_three_brokers_of_three_queues_over_four_consumers() -> None:
    # 9 queues, 4 clients: AVG gives 3, 2, 2, 2 (the extra queue to the first-sorted client).
    run = staged(
        [route(brokers={"broker-a": 3, "broker-b": 3, "broker-c": 3}, clients=["c1", "c2", "c3", "c4"])]
    )
    assert run.consumer_load.set_index("client_id").queues.to_dict() == {"c1": 3, "c2": 2, "c3": 2, "c4": 2}
    [row] = run.group_metrics.itertuples()
    assert (row.queue_count, row.consumer_count, row.active_consumers, row.idle_consumers) == (9, 4, 4, 0)
    assert (row.min_queues, row.max_queues, row.mean_queues) == (3 - 1, 3, 2.25)
    assert row.max_over_mean == pytest.approx(4 / 3)
    # population stddev of 3, 2, 2, 2: sqrt(((0.75)^2 + 3 * (0.25)^2) / 4)
    assert row.stddev_queues == pytest.approx(((0.75**2 + 3 * 0.25**2) / 4) ** 0.5)
    assert (row.unassigned_queues, row.multi_owned_queues, row.duplicate_client_ids) == (0, 0, 0)
    assert row.error is None


def test_assignment_rows_by_hand() -> None:
    # 5 queues on one broker, 2 clients. AVG: x gets 0-2, y gets 3-4. Circle: x gets 0,2,4; y gets 1,3.
    run = staged([route(brokers={"b": 5}, clients=["x@1", "y@2"], strategies=["AVG", "AVG_BY_CIRCLE"])])
    got = sorted(zip(run.assignments.strategy, run.assignments.client_id, run.assignments.queue_id))
    owners = {"AVG": "xxxyy", "AVG_BY_CIRCLE": "xyxyx"}
    assert got == sorted(
        (s, f"{o}@{1 if o == 'x' else 2}", q) for s, seq in owners.items() for q, o in enumerate(seq)
    )


def test_fleet_skew_is_worse_than_any_topic_shows() -> None:
    # Three topics of 5 queues read by the same two clients: each topic is 3 vs 2 (max/mean 1.2),
    # but AVG hands every extra queue to the first-sorted client: 9 vs 6 over the fleet.
    run = staged([route(topic=t, brokers={"b": 5}, clients=["a@1", "b@1"]) for t in ("t1", "t2", "t3")])
    load = run.consumer_load.set_index("client_id")
    assert load[["topics", "queues"]].to_dict("index") == {
        "a@1": {"topics": 3, "queues": 9},
        "b@1": {"topics": 3, "queues": 6},
    }
    assert run.group_metrics.max_over_mean.tolist() == [pytest.approx(1.2)] * 3
    [summary] = rollups.summary(run.arrow["group_metrics"], run.arrow["consumer_load"]).to_pylist()
    assert summary["fleet_max_over_mean"] == pytest.approx(9 / 7.5)  # 9 over the mean (9 + 6) / 2
    assert summary["worst_group_max_over_mean"] == pytest.approx(1.2)


def test_idle_consumers_and_duplicate_client_ids() -> None:
    # 2 queues, clients [a, b, b, c] as sorted cidAll: both b copies take b's share (queue 1),
    # c (index 3) gets nothing, and nothing is unassigned here; with [a, a, b] and 3 queues under
    # AVG, a takes queue 0, the second a's share (queue 1) has no owner, b takes queue 2.
    run = staged(
        [
            route(topic="few", group="g1", brokers={"b": 2}, clients=["a", "b", "b", "c"]),
            route(topic="dup", group="g2", brokers={"b": 3}, clients=["a", "a", "b"]),
        ]
    )
    columns = ["queue_count", "consumer_count", "active_consumers", "idle_consumers", "unassigned_queues"]
    got = run.group_metrics.set_index("group")[[*columns, "duplicate_client_ids"]]
    assert got.to_dict("index") == {
        "g1": dict(zip(got.columns, (2, 3, 2, 1, 0, 1))),
        "g2": dict(zip(got.columns, (3, 2, 2, 0, 1, 1))),
    }
    g2 = run.assignments[run.assignments.group == "g2"]
    assert sorted(zip(g2.client_id, g2.queue_id)) == [("a", 0), ("b", 2)]


def test_topic_whose_brokers_are_all_down_reports_the_client_error(spark, tmp_path, sink) -> None:
    run = simulated(
        spark,
        tmp_path,
        sink=sink,
        tables=dict(
            brokers=broker_rows("up") + broker_rows("down", alive=False),
            topic_queues=queue_rows("lost", {"down": 4}) + queue_rows("fine", {"up": 2}),
            consumers=consumer_rows("g", "lost", ["a", "b"]) + consumer_rows("g", "fine", ["a", "b"]),
        ),
    )
    gm = {r.topic: r for r in run.rows("group_metrics")}
    assert gm["lost"].error == "mqAll is null or mqAll empty"
    assert (gm["lost"].queue_count, gm["lost"].idle_consumers) == (0, 2)
    assert gm["fine"].error is None
    assert run.result.summary[0]["groups_with_errors"] == 1
    assert not run.rows("assignments", "topic = 'lost'")


def test_every_table_is_written_with_its_declared_schema(spark, tmp_path, sink) -> None:
    """Columns, types and nullability of every table of a run, as schemas.OUTPUTS declares them."""
    run = simulated(
        spark,
        tmp_path,
        sink=sink,
        tables=dict(
            brokers=broker_rows("b"),
            topic_queues=queue_rows("t", {"b": 2}),
            consumers=consumer_rows("g", "t", ["a"]),
        ),
        # c joins and takes a's second queue: a hand-over, so that handover/ has a row to check.
        scenarios="scenarios: [{name: s, steps: [{consumers_join: {group: g, client_ids: [c]}}]}]",
    )
    written = sorted(p.name for p in run.out.iterdir())
    assert written == ["assignments", "comparison", "consumer_load", "group_metrics", "handover", "movement",
                       "recommendation", "reconciliation", "rejects", "summary", "touched"]  # fmt: skip
    for name in written:
        table = schemas.OUTPUTS[name]
        declared = schemas.arrow(table.schema)
        files = ds.dataset(str(run.out / name), format="parquet", partitioning="hive").schema
        expected = [(f.name, f.type, f.nullable) for f in declared if f.name not in table.partitioned_by]
        assert [
            (f.name, f.type, f.nullable) for f in files if f.name not in table.partitioned_by
        ] == expected, name
