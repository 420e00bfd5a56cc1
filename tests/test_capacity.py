"""What each consumer must carry (docs/CONTRACT.md, section 2d), worked by hand on route batches:
capacity, lag growth, drain time, clients needed, RATE_BALANCED, designated machines."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rmqsim.cli import main
from rmqsim.stage import capacity
from rmqsim.strategies import GroupBatch, distinct_callers, rate_balanced, registry
from tests.builders import broker_rows, consumer_rows, make_snapshot, queue_rows, route, staged
from tests.simulated import simulated

SIX_QUEUES = {"b": 6}
INFLOW = [30.0] * 6  # 6 queues of 30 msgs/s: 180 msgs/s in all
BACKLOG = [{"broker_name": "b", "queue_id": q, "backlog": 100} for q in range(6)]  # 600 behind


def _two_unequal_clients(strategy: str, **extra: object):
    return staged(
        [
            route(
                brokers=SIX_QUEUES,
                clients=["c1@1", "c2@1"],
                strategies=[strategy],
                queue_inflow=INFLOW,
                backlogs=BACKLOG,
                client_capacities=[100.0, 50.0],
                drain_target_s=3600.0,
                **extra,
            )
        ]
    )


def test_avg_puts_half_the_inflow_on_the_client_of_half_the_capacity() -> None:
    # AVG: c1 q0-q2 (90 msgs/s, 300 behind), c2 q3-q5 (90 msgs/s, 300 behind).
    # c1: 90 <= 100, growth 0, drains 300 / (100 - 90) = 30 s, load 0.9.
    # c2: 90 > 50, growth 90 - 50 = 40, never drains (null), load 90 / 50 = 1.8.
    run = _two_unequal_clients("AVG")
    load = run.consumer_load.set_index("client_id")
    assert load.msgs_per_s.to_dict() == {"c1@1": 90.0, "c2@1": 90.0}
    assert load.lag_growth_msgs_per_s.to_dict() == {"c1@1": 0.0, "c2@1": 40.0}
    assert load.over_capacity.to_dict() == {"c1@1": False, "c2@1": True}
    assert load.load_over_capacity.to_dict() == pytest.approx({"c1@1": 0.9, "c2@1": 1.8})
    assert load.drain_seconds["c1@1"] == pytest.approx(30.0) and math.isnan(load.drain_seconds["c2@1"])
    [g] = run.group_metrics.itertuples()
    assert (g.clients_over_capacity, g.lag_growth_msgs_per_s) == (1, 40.0)
    assert g.max_load_over_capacity == pytest.approx(1.8)
    assert g.drain_seconds is None or math.isnan(g.drain_seconds)  # one client never drains
    # (180 msgs/s + 600 / 3600 s) / the mean capacity 75 = 2.4022: 3 clients keep up.
    assert g.clients_needed == 3
    # The group falls behind: c2 over capacity, and with 300 behind and no spare capacity it
    # never drains; its clients' 90 + 90 msgs/s against 100 + 50 of capacity.
    [behind] = run.falling_behind.to_dict("records")
    assert behind == {
        **{"scenario": "s", "phase": 0, "strategy": "AVG", "group": "g"},
        **{"consumers": 2, "clients_over_capacity": 1, "never_drain": 1, "msgs_per_s": 180.0},
        **{"capacity_msgs_per_s": 150.0, "lag_growth_msgs_per_s": 40.0},
        **{"max_load_over_capacity": pytest.approx(1.8), "clients_needed": 3},
    }


def test_rate_balanced_shares_the_overload_by_capacity() -> None:
    # Greedy, heaviest queue first (all 30), each to the least load over capacity, then the fewest
    # queues, then the first: q0 c1 (0.3); q1 c2 (0.6); q2 c1 (0.6); q3 tie, c2 has fewer: c2
    # (1.2); q4 c1 (0.9); q5 c1 (1.2). c1 4 queues 120 msgs/s, c2 2 queues 60 msgs/s.
    # c1: growth 120 - 100 = 20; c2: 60 - 50 = 10. Together 30 = 180 - 150, the least possible.
    # Both over capacity with 400 and 200 behind: neither drains.
    run = _two_unequal_clients("RATE_BALANCED")
    owned = run.assignments.groupby("client_id").queue_id.apply(sorted).to_dict()
    assert owned == {"c1@1": [0, 2, 4, 5], "c2@1": [1, 3]}
    load = run.consumer_load.set_index("client_id")
    assert load.msgs_per_s.to_dict() == {"c1@1": 120.0, "c2@1": 60.0}
    assert load.lag_growth_msgs_per_s.to_dict() == {"c1@1": 20.0, "c2@1": 10.0}
    assert load.drain_seconds.isna().all()
    [g] = run.group_metrics.itertuples()
    assert (g.clients_over_capacity, g.lag_growth_msgs_per_s) == (2, 30.0)
    assert g.max_load_over_capacity == pytest.approx(1.2)
    # Both over capacity and neither drains: the group falls behind by 30 msgs/s.
    [behind] = run.falling_behind.itertuples()
    assert (behind.clients_over_capacity, behind.never_drain, behind.lag_growth_msgs_per_s) == (2, 2, 30.0)


def test_drain_time_is_zero_without_backlog_and_null_without_capacity() -> None:
    # Offsets say nothing is behind: a client under capacity drains in 0 s. c1's capacity 100,
    # c2's unknown (null, no group default): c2's figures are null, and it is not counted over.
    run = staged(
        [
            route(
                brokers=SIX_QUEUES,
                clients=["c1@1", "c2@1"],
                queue_inflow=INFLOW,
                backlogs=[{**b, "backlog": 0} for b in BACKLOG],
                client_capacities=[100.0, None],
            )
        ]
    )
    load = run.consumer_load.set_index("client_id")
    assert load.drain_seconds["c1@1"] == 0.0
    assert math.isnan(load.capacity_msgs_per_s["c2@1"]) and math.isnan(load.lag_growth_msgs_per_s["c2@1"])
    [g] = run.group_metrics.itertuples()
    assert g.clients_over_capacity == 0
    assert run.falling_behind.empty  # c1 keeps up, c2's capacity is unknown


def test_without_rates_rate_balanced_is_avg_by_circle() -> None:
    # No inflow: every weight 0, so the queues are dealt one per client in turn.
    rows = [
        route(brokers={"a": 3, "b": 4}, clients=["x", "y", "z"], strategies=[s]) for s in ("RATE_BALANCED",)
    ]
    circle = [route(brokers={"a": 3, "b": 4}, clients=["x", "y", "z"], strategies=["AVG_BY_CIRCLE"])]
    got = staged(rows).assignments[["client_id", "broker_name", "queue_id"]]
    want = staged(circle).assignments[["client_id", "broker_name", "queue_id"]]
    assert sorted(map(tuple, got.values)) == sorted(map(tuple, want.values))


@pytest.mark.parametrize("seed", range(40))
def test_rate_balanced_keeps_every_client_under_its_fair_part_plus_its_heaviest_queue(seed: int) -> None:
    # The bound of section 2d, for random groups: load_i <= W * cap_i / C + max queue it owns.
    rng = np.random.default_rng(seed)
    groups = int(rng.integers(1, 6))
    queues = [int(rng.integers(1, 40)) for _ in range(groups)]
    clients = [int(rng.integers(1, 9)) for _ in range(groups)]
    batch = GroupBatch.from_lists(
        [f"t{i}" for i in range(groups)],
        [[("b", q) for q in range(n)] for n in queues],
        [[f"c{j}" for j in range(k)] for k in clients],
        params={
            "queue_inflow": rng.exponential(50.0, sum(queues)).round(2),
            "client_capacity": rng.uniform(10.0, 200.0, sum(clients)).round(1),
        },
    )
    callers = distinct_callers(batch)
    allocation, errors = registry.allocate(registry.get(rate_balanced.NAME), batch, callers)
    assert (errors == None).all()  # noqa: E711 (an object array)
    weight, capacity = batch.params.queue_inflow, batch.params.client_capacity
    flat_client = callers.client[allocation.caller]
    load = np.bincount(flat_client, weights=weight[allocation.queue], minlength=len(capacity))
    heaviest = np.zeros(len(capacity))
    np.maximum.at(heaviest, flat_client, weight[allocation.queue])
    group = np.repeat(np.arange(groups), batch.client_counts)
    total = np.bincount(batch.queue_group, weights=weight, minlength=groups)
    all_capacity = np.bincount(group, weights=capacity, minlength=groups)
    fair = total[group] * capacity / all_capacity[group]
    assert (load <= fair + heaviest + 1e-9).all()
    assert np.bincount(allocation.queue, minlength=len(weight)).tolist() == [1] * len(weight)  # each once


def test_designated_machines_during_a_rollout() -> None:
    # 8 queues, clients on 10.0.0.1-4, designated 10.0.0.1 and .2; .3 still runs the stock AVG.
    # Aware and designated: AVG over [.1, .2]: .1 q0-q3, .2 q4-q7. Aware, not designated: .4
    # holds nothing. Unaware: .3 computes AVG over all 4 (index 2): q4, q5. So q4 and q5 are read
    # twice (by .2 and .3), nothing is unread.
    clients = ["10.0.0.1@a", "10.0.0.2@b", "10.0.0.3@c", "10.0.0.4@d"]
    run = staged(
        [
            route(
                brokers={"b": 8},
                clients=clients,
                designated_ips=["10.0.0.1", "10.0.0.2"],
                client_designated_aware=[True, None, False, True],
            )
        ]
    )
    owned = run.assignments.groupby("client_id").queue_id.apply(sorted).to_dict()
    assert owned == {clients[0]: [0, 1, 2, 3], clients[1]: [4, 5, 6, 7], clients[2]: [4, 5]}
    [g] = run.group_metrics.itertuples()
    assert (g.multi_owned_queues, g.unassigned_queues, g.unaware_clients, g.error) == (2, 0, 1, None)


def test_a_designated_group_without_a_designated_client_consumes_nothing() -> None:
    # Nobody on 10.9.9.9: the aware clients hold nothing and the group's error says so.
    run = staged([route(brokers={"b": 4}, clients=["10.0.0.1@a", "10.0.0.2@b"], designated_ips=["10.9.9.9"])])
    assert run.assignments.empty
    [g] = run.group_metrics.itertuples()
    assert g.unassigned_queues == 4 and "no client of the group runs on groups.designated_ips" in g.error


def test_designation_leaves_broadcasting_groups_alone() -> None:
    # A BROADCASTING client reads every queue; a designation changes no strategy it does not run.
    run = staged(
        [
            route(
                brokers={"b": 3},
                clients=["10.0.0.1@a", "10.0.0.2@b"],
                designated_ips=["10.0.0.1"],
                message_model="BROADCASTING",
            )
        ]
    )
    assert run.assignments.groupby("client_id").size().to_dict() == {"10.0.0.1@a": 3, "10.0.0.2@b": 3}


# ------------------------------------------------------------------ through a snapshot


def _fleet(tmp_path) -> str:
    # Group g on topics t (4 queues) and u (2): a@1 gives 100 on its row of t and 80 on its row of
    # u, which disagree; b@1 gives a negative capacity, c@1 NaN. Group d
    # is designated to 10.0.0.1 but lists "not-an-ip" too; group e is designated to 10.9.9.9,
    # where none of its clients runs.
    return make_snapshot(
        tmp_path / "snap",
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 4}) + queue_rows("u", {"b": 2}),
        consumers=[
            {"group": "g", "topic": "t", "client_id": "a@1", "capacity_msgs_per_s": 100.0},
            {"group": "g", "topic": "u", "client_id": "a@1", "capacity_msgs_per_s": 80.0},
            {"group": "g", "topic": "t", "client_id": "b@1", "capacity_msgs_per_s": -5.0},
            {"group": "g", "topic": "t", "client_id": "c@1", "capacity_msgs_per_s": float("nan")},
            {"group": "d", "topic": "t", "client_id": "10.0.0.1@1"},
            {"group": "e", "topic": "t", "client_id": "10.0.0.1@1"},
        ],
        groups=[
            {"group": "d", "designated_ips": ["10.0.0.1", "not-an-ip"]},
            {"group": "e", "designated_ips": ["10.9.9.9"]},
        ],
    )


def test_bad_capacities_and_designations_are_rejected_and_the_rest_runs(spark, tmp_path) -> None:
    run = simulated(spark, tmp_path, sink="arrow", snapshot=_fleet(tmp_path))
    rejects = {
        (r.source, json.loads(r.row).get("client_id") or json.loads(r.row)["group"], r.reason)
        for r in run.rows("rejects")
    }
    assert ("consumers", "b@1", "capacity_msgs_per_s -5.0 is negative") in rejects
    assert ("consumers", "c@1", "capacity_msgs_per_s is not a number") in rejects
    # JSON order: {"group":"g","topic":"t",...} sorts before {"group":"g","topic":"u",...}, so t's
    # 100 is the client's and u's row is the one rejected.
    assert (
        "consumers",
        "a@1",
        "capacity_msgs_per_s 80.0 disagrees with 100.0 on another row of this client in this group: "
        "it is the process's, over all its topics",
    ) in rejects
    assert ("groups", "d", "designated_ips entry 'not-an-ip' is not an IP address") in rejects
    reconciled = {r.table: (r.rows_read, r.rows_used, r.rows_rejected) for r in run.rows("reconciliation")}
    assert reconciled["consumers"] == (6, 2, 4)  # a@1's t row and e's; d's is rejected with its group
    metrics = {r.group: r for r in run.rows("group_metrics")}
    assert set(metrics) == {"g", "e"}
    assert metrics["g"].unassigned_queues == 0  # a@1 alone reads t's 4 queues
    assert "no client of the group runs on groups.designated_ips" in metrics["e"].error
    assert metrics["e"].unassigned_queues == 4


def test_a_capacity_of_the_wrong_type_is_exit_code_2(tmp_path, capsys) -> None:
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 4}),
        consumers=consumer_rows("g", "t", ["a"]),
    )
    pq.write_table(
        pa.table({"group": ["g"], "topic": ["t"], "client_id": ["a"], "capacity_msgs_per_s": ["fast"]}),
        f"{snapshot}/consumers/part-00000.parquet",
    )
    code = main(["simulate", "--snapshot", snapshot, "--out", str(tmp_path / "out"), "--master", "local[2]"])
    assert code == 2
    assert "consumers.capacity_msgs_per_s: expected double, found string" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-60", "soon", "nan"])
def test_a_drain_target_that_is_not_a_positive_number_is_exit_code_2(value, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "--snapshot", "s", "--out", "o", "--drain-target", value])
    assert exited.value.code == 2
    assert "--drain-target" in capsys.readouterr().err


def test_falling_behind_refuses_clients_not_side_by_side_by_group() -> None:
    # Group 0's clients split by group 1's: summed as runs, group 0 would count as two groups.
    keep = capacity.keeping(
        np.array([90.0, 90.0, 90.0]),
        np.zeros(3),
        np.array([50.0, 50.0, 50.0]),
        msgs_known=np.ones(3, dtype=bool),
        backlog_known=np.ones(3, dtype=bool),
    )
    with pytest.raises(ValueError, match="side by side"):
        capacity.falling_behind(np.array([0, 1, 0]), keep, np.full(3, 90.0), np.ones(3, dtype=bool))
    # Side by side: one row per group, each client 40 msgs/s over its 50.
    behind = capacity.falling_behind(np.array([0, 0, 1]), keep, np.full(3, 90.0), np.ones(3, dtype=bool))
    assert behind.consumers.tolist() == [2, 1] and behind.over.tolist() == [2, 1]
