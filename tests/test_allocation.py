"""The functions behind mapInArrow, called on local Arrow batches without Spark."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rmqsim import schemas
from rmqsim.stage.batches import OPTIONAL, whole_groups, with_absent_columns
from rmqsim.stage.outputs import outputs_of
from rmqsim.stage.tasks import ROUTES_PER_TASK, python_tasks
from tests.builders import route, route_batch, staged


def test_mixed_strategies_and_groups_in_one_batch() -> None:
    pdf = route_batch(
        [
            # mqAll a0 a1 b0: x gets a0 a1, y gets b0
            route(strategies=["AVG"], topic="t1", group="g", brokers={"a": 2, "b": 1}, clients=["x", "y"]),
            # x: a0 b0, y: a1
            route(
                strategies=["AVG_BY_CIRCLE"],
                topic="t1",
                group="g",
                brokers={"a": 2, "b": 1},
                clients=["x", "y"],
            ),
            # no readable queue: the client throws, nothing owned
            route(strategies=["AVG"], topic="t2", group="h", brokers={}, clients=["z"]),
            # q idle
            route(strategies=["AVG_BY_CIRCLE"], topic="t3", group="k", brokers={"c": 1}, clients=["p", "q"]),
        ]
    )
    run = staged(pdf)
    got = run.assignments
    assert list(got.columns) == schemas.ASSIGNMENTS.fieldNames()
    assert sorted(
        map(tuple, got[["strategy", "topic", "client_id", "broker_name", "queue_id"]].values.tolist())
    ) == [
        ("AVG", "t1", "x", "a", 0),
        ("AVG", "t1", "x", "a", 1),
        ("AVG", "t1", "y", "b", 0),
        ("AVG_BY_CIRCLE", "t1", "x", "a", 0),
        ("AVG_BY_CIRCLE", "t1", "x", "b", 0),
        ("AVG_BY_CIRCLE", "t1", "y", "a", 1),
        ("AVG_BY_CIRCLE", "t3", "p", "c", 0),
    ]
    assert got.queue_id.dtype == np.int32

    load = run.consumer_load.set_index(["strategy", "group", "client_id"])
    assert load.loc[("AVG", "h", "z")].queues == 0
    assert load.loc[("AVG_BY_CIRCLE", "k", "q")].queues == 0
    assert load.loc[("AVG", "g", "x")].queues == 2
    groups = run.group_metrics.set_index(["strategy", "topic"])
    assert groups.loc[("AVG", "t2")].error == "mqAll is null or mqAll empty"
    assert groups.error.isna().sum() == 3  # every group but h


def test_duplicate_ids_leave_the_second_copys_share_unowned() -> None:
    # a: 0 1, (a): 2 3, c: 4 5
    pdf = route_batch(
        [route(strategies=["AVG"], topic="t", group="g", brokers={"b": 6}, clients=["a", "a", "c"])]
    )
    run = staged(pdf)
    got = run.assignments
    assert sorted(zip(got.client_id, got.queue_id)) == [("a", 0), ("a", 1), ("c", 4), ("c", 5)]
    summary = run.group_metrics
    assert summary.unassigned_queues.tolist() == [2]
    assert summary.duplicate_client_ids.tolist() == [1]


def test_empty_batch() -> None:
    got = staged(route_batch([])).assignments
    assert got.empty and list(got.columns) == schemas.ASSIGNMENTS.fieldNames()


def test_whole_groups_never_splits_a_group_across_batches() -> None:
    rows = route_batch(
        route(strategies=["AVG"], topic=f"t{i}", group=g, brokers={"b": 1}, clients=["c"])
        for g, n in (("g1", 3), ("g2", 4), ("g3", 1))
        for i in range(n)
    )
    cuts = [rows.slice(0, 2), rows.slice(2, 3), rows.slice(5, 1), rows.slice(6, 2)]  # as Spark might cut
    batches = list(whole_groups(iter(cuts)))
    groups = [b.column("group").to_pylist() for b in batches]
    assert sum(len(g) for g in groups) == rows.num_rows
    seen: set[str] = set()
    for g in groups:
        assert not (set(g) & seen)  # a group appears in one batch only
        seen |= set(g)


def test_whole_groups_takes_contiguous_groups_in_any_order() -> None:
    # Two coalesced partitions, each sorted: g2, g3 then g1. Contiguous is enough.
    rows = route_batch(
        route(strategies=["AVG"], topic=f"t{i}", group=g, brokers={"b": 1}, clients=["c"])
        for g, n in (("g2", 2), ("g3", 3), ("g1", 2))
        for i in range(n)
    )
    cuts = [rows.slice(0, 3), rows.slice(3, 3), rows.slice(6, 1)]  # g2 g2 g3 | g3 g3 g1 | g1
    batches = [b.column("group").to_pylist() for b in whole_groups(iter(cuts))]
    assert batches == [["g2", "g2"], ["g3", "g3", "g3"], ["g1", "g1"]]


def test_a_small_fleet_runs_on_fewer_python_tasks() -> None:
    assert python_tasks(22_630, 4) == 4  # the 1M-assignment bench fleet keeps 2 tasks per core
    assert python_tasks(150, 4) == 1  # the bundled sample: one task, one file per directory
    assert python_tasks(ROUTES_PER_TASK + 1, 4) == 2
    assert python_tasks(0, 4) == 1


def test_group_metrics_per_topic_and_each_clients_load_over_the_groups_topics() -> None:
    # Two topics of 5 queues, clients a and b: AVG gives a 3 + 3, b 2 + 2.
    run = staged(
        [
            route(strategies=["AVG"], topic="t1", group="g", brokers={"x": 5}, clients=["a", "b"]),
            route(strategies=["AVG"], topic="t2", group="g", brokers={"x": 5}, clients=["a", "b"]),
        ]
    )
    groups = run.group_metrics
    assert groups.topic.tolist() == ["t1", "t2"]
    assert groups[["min_queues", "max_queues", "mean_queues", "max_over_mean"]].values.tolist() == [
        [2, 3, 2.5, 1.2],
        [2, 3, 2.5, 1.2],
    ]
    load = run.consumer_load.set_index("client_id")
    assert load.queues.to_dict() == {"a": 6, "b": 4}
    assert load.topics.to_dict() == {"a": 2, "b": 2}


def test_broadcasting_groups_read_every_queue_whatever_the_strategy() -> None:
    rows = route_batch(
        [
            route(
                strategies=["AVG"],
                topic="t",
                group="g",
                brokers={"b": 3},
                clients=["x", "y"],
                message_model="BROADCASTING",
            )
        ]
    )
    run = staged(rows)
    got = run.assignments
    assert sorted(zip(got.client_id, got.queue_id)) == [(c, q) for c in "xy" for q in range(3)]
    assert run.consumer_load.queues.tolist() == [3, 3]
    assert run.group_metrics.multi_owned_queues.tolist() == [3]


def test_config_reports_no_error_where_it_throws_none() -> None:
    # ByConfig checks nothing: with no readable queue it still returns the configured list, so the
    # group has no error (AVG on the same route reports the client's "mqAll is null or mqAll empty").
    rows = route_batch(
        [
            route(strategies=["CONFIG"], topic="t", group="g", brokers={}, clients=["x"]),
            route(strategies=["AVG"], topic="u", group="h", brokers={}, clients=["y"]),
        ]
    )
    summary = staged(rows).group_metrics.set_index("strategy")
    assert summary.loc["CONFIG"].error is None
    assert summary.loc["AVG"].error == "mqAll is null or mqAll empty"


def test_config_lists_line_up_with_their_clients_when_some_rows_have_none() -> None:
    # Row 1 has no client_configs at all (a snapshot without queue_config), row 2 configures
    # y with [b1, b0] and z with nothing: only y owns queues, in its configured order.
    y_list = [{"broker_name": "b", "queue_id": 1}, {"broker_name": "b", "queue_id": 0}]
    rows = route_batch(
        [
            route(
                strategies=["CONFIG"],
                topic="t",
                group="g",
                brokers={"b": 2},
                clients=["w", "x"],
                client_configs=None,
            ),
            route(
                strategies=["CONFIG"],
                topic="t",
                group="h",
                brokers={"b": 2},
                clients=["y", "z"],
                client_configs=[y_list, None],
            ),
        ]
    )
    got = staged(rows).assignments
    assert list(zip(got.client_id, got.queue_id)) == [("y", 1), ("y", 0)]


def test_backlog_per_client_and_its_skew_from_offsets() -> None:
    # AVG: x owns b0 b1 (10 + 20 = 30 messages behind), y owns b2 b3 (30 + 60 = 90): min 30,
    # max 90, mean 60, population stddev 30, max/mean 1.5; the group is 120 behind.
    lags = [{"broker_name": "b", "queue_id": q, "backlog": n} for q, n in enumerate((10, 20, 30, 60))]
    rows = route_batch(
        [
            route(
                strategies=["AVG"], topic="t", group="g", brokers={"b": 4}, clients=["x", "y"], backlogs=lags
            ),
            route(strategies=["AVG"], topic="u", group="h", brokers={"b": 1}, clients=["z"]),  # h: no offsets
        ]
    )
    run = staged(rows)
    groups = run.group_metrics.set_index("group")
    g = groups.loc["g"]
    assert (g.backlog, g.min_backlog, g.max_backlog, g.mean_backlog) == (120, 30, 90, 60.0)
    assert (g.stddev_backlog, g.backlog_max_over_mean) == (30.0, 1.5)
    load = run.consumer_load.set_index("client_id")
    assert load.backlog.to_dict()["y"] == 90
    assert np.isnan(groups.loc["h"].backlog) and np.isnan(load.loc["z"].backlog)  # unknown, not 0


def test_optional_columns_left_out_of_the_input_change_no_output() -> None:
    # A run without offsets, CONFIG lists or stale views ships its routes without those columns:
    # the client rows must be exactly those of the same routes with the columns present and null.
    # client_configs null for the row, as without queue_config
    rows = route_batch(
        [
            route(
                strategies=["AVG"],
                topic="t",
                group="g",
                brokers={"b0": 3, "b1": 2},
                clients=["x", "y", "z"],
                client_configs=None,
            ),
            route(
                strategies=["AVG_BY_CIRCLE"],
                topic="u",
                group="h",
                brokers={"b": 4},
                clients=["w"],
                client_configs=None,
            ),
        ]
    )
    shipped = rows.drop_columns(list(OPTIONAL))
    assert with_absent_columns(shipped).equals(rows)
    tables = ("assignments", "group_metrics", "consumer_load")

    def outputs(batch: pa.RecordBatch) -> dict[str, pa.Table]:
        parts = list(outputs_of([batch], tables))
        return {t: pa.Table.from_batches([b for p in parts for b in p[t]]) for t in tables}

    full, lean = outputs(rows), outputs(shipped)
    assert all(lean[t].equals(full[t]) for t in tables)
    assert full["consumer_load"].num_rows == 4  # x, y, z and w
