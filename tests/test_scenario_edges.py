"""Edge cases of scenarios and their summaries, each worked by hand.

Every snapshot here has topic `orders` with 4 queues on broker-a and 4 on broker-b; sorted, mqAll
is a0..a3 b0..b3. AVG with clients c1, c2: c1 a0-a3, c2 b0-b3.
"""

from __future__ import annotations

import pytest

from rmqsim import cli
from rmqsim.errors import InputError
from rmqsim.reporting import results
from rmqsim.sink import KINDS as SINKS
from rmqsim.sink.directory import RunDirectory
from tests.builders import make_snapshot, queue_rows
from tests.simulated import Run, simulated

BROKERS = [
    {"broker_name": b, "broker_id": 0, "machine_room": "hz-a", "alive": True}
    for b in ("broker-a", "broker-b")
]
ORDERS = queue_rows("orders", {"broker-a": 4, "broker-b": 4})


def _consumers(group: str, topic: str, *ids: str) -> list[dict]:
    return [{"group": group, "topic": topic, "client_id": c, "machine_room": "hz-a"} for c in ids]


# Every name a number: only then would Spark read the partition values back as integers.
STEPS = """
scenarios:
  - name: "07"
    steps:
      - set_queue_nums: {topics: [orders], write_queue_nums: 1}
  - name: "7"
    steps:
      - broker_down: {names: [broker-a]}
  - name: "20"  # two joins
    steps:
      - consumers_join: {group: g, count: 2, machine_room: hz-a}
      - consumers_join: {group: g, count: 2, machine_room: hz-a}
  - name: "30"  # all leave, one joins
    steps:
      - consumers_leave: {group: g, client_ids: [c1, c2]}
      - consumers_join: {group: g, client_ids: [c9]}
"""


@pytest.fixture(scope="module", params=SINKS)
def steps_run(spark, tmp_path_factory, request) -> Run:
    tmp_path = tmp_path_factory.mktemp("steps")
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=BROKERS,
        topic_queues=ORDERS,
        consumers=_consumers("g", "orders", "c1", "c2"),
    )
    return simulated(spark, tmp_path, sink=request.param, snapshot=snapshot, scenarios=STEPS)


def test_scenarios_named_07_and_7_stay_apart_in_every_summary(spark, steps_run) -> None:
    # "07" changes write queues only: nothing moves. "7": broker-a down, mqAll b0..b3, c1 b0 b1 and
    # c2 b2 b3, so b0 and b1 move from c2 to c1.
    moved = {r.scenario: r.queues_moved for r in steps_run.rows("comparison")}
    assert moved["07"] == 0 and moved["7"] == 2
    run = results.load_run(str(steps_run.out))  # as `rmqsim report` reads it
    assert sorted(run.comparison.scenario.unique()) == ["07", "20", "30", "7"]
    assert results.focus(run, scenario="07").group == "g"


def test_two_count_joins_of_one_group_add_four_different_clients(spark, steps_run) -> None:
    (row,) = steps_run.rows("group_metrics", "scenario = '20' and phase = 2")
    assert (row.consumer_count, row.duplicate_client_ids, row.unassigned_queues) == (6, 0, 0)


def test_a_join_after_every_client_left_uses_the_groups_topics_of_the_snapshot(spark, steps_run) -> None:
    # Phase 1 has no client of g; c9 then joins g on its topic in the snapshot, orders, and owns it all.
    load = steps_run.rows("consumer_load", "scenario = '30' and phase = 2")
    assert [(r.client_id, r.queues) for r in load] == [("c9", 8)]


def test_a_group_every_client_left_still_has_its_queues_all_unassigned(spark, steps_run) -> None:
    # Phase 1 of "30": g has no client left, but orders still has its 8 queues and g still
    # subscribes: nobody reads them. Phase 2: c9 takes all 8.
    (row,) = steps_run.rows("group_metrics", "scenario = '30' and phase = 1")
    assert (row.topic, row.group, row.queue_count, row.consumer_count) == ("orders", "g", 8, 0)
    assert (row.active_consumers, row.idle_consumers, row.unassigned_queues) == (0, 0, 8)
    assert (row.multi_owned_queues, row.min_queues, row.max_over_mean, row.error) == (0, None, None, None)
    assert steps_run.rows("consumer_load", "scenario = '30' and phase = 1") == []
    (summary,) = steps_run.rows("summary", "scenario = '30' and phase = 1")
    assert summary.unassigned_queues == 8
    moves = {
        (r.from_phase, r.to_phase): (r.queues_in_both, r.moved, r.min_moves, r.consumers_changed)
        for r in steps_run.rows("movement", "scenario = '30'")
    }
    # 0 -> 1: every queue loses its owner (no assignment of nobody has a minimum); 1 -> 2: every
    # queue gains c9, and with no old owner left none could have stayed.
    assert moves == {(0, 1): (8, 8, None, 2), (1, 2): (8, 8, 8, 1), (0, 2): (8, 8, 8, 3)}


def test_after_every_client_left_sticky_keeps_nothing_and_config_is_not_skipped(
    spark, tmp_path, sink
) -> None:
    # c1 is configured for a0..a3 and c2 for b0..b3. Both leave, then c2 and c3 join. Phase 1 has
    # no client: CONFIG has nothing to configure and runs like every strategy (all 8 unassigned),
    # rather than being skipped. Phase 2: nobody held a queue in phase 1, so STICKY keeps nothing
    # and deals AVG's blocks, c2 a0..a3 and c3 b0..b3 (keeping phase 0's owners would give c2 b0..b3).
    config = [
        {"group": "g", "client_id": c, "topic": "orders", "broker_name": b, "queue_id": q}
        for c, b in (("c1", "broker-a"), ("c2", "broker-b"))
        for q in range(4)
    ]
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=BROKERS,
        topic_queues=ORDERS,
        consumers=_consumers("g", "orders", "c1", "c2"),
        queue_config=config,
    )
    scenario = """
scenarios:
  - name: refill
    steps:
      - consumers_leave: {group: g, client_ids: [c1, c2]}
      - consumers_join: {group: g, client_ids: [c2, c3]}
"""
    out = simulated(
        spark, tmp_path, sink=sink, snapshot=snapshot, scenarios=scenario, strategies=("STICKY", "CONFIG")
    )
    drained = {r.strategy: r.unassigned_queues for r in out.rows("group_metrics", "phase = 1")}
    assert drained == {"STICKY": 8, "CONFIG": 8}
    assert out.rows("rejects", "source = 'allocation'") == []
    sticky = out.rows("assignments", "phase = 2 and strategy = 'STICKY'")
    assert sorted((r.client_id, r.broker_name, r.queue_id) for r in sticky) == [
        ("c2", "broker-a", q) for q in range(4)
    ] + [("c3", "broker-b", q) for q in range(4)]


STALE = """
scenarios:
  - name: gone
    steps:
      - broker_down: {names: [broker-b]}
      - stale_view: {group: g, client_ids: [c2]}
"""


@pytest.fixture(scope="module", params=SINKS)
def stale_run(spark, tmp_path_factory, request) -> Run:
    tmp_path = tmp_path_factory.mktemp("stale")
    # k reads two topics on broker-a; only b-topic has offsets: q0 a backlog of 7, q1 of 14.
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=BROKERS,
        topic_queues=[
            *ORDERS,
            *queue_rows("a-topic", {"broker-a": 2}),
            *queue_rows("b-topic", {"broker-a": 2}),
        ],
        consumers=[
            *_consumers("g", "orders", "c1", "c2"),
            *_consumers("h", "orders", "d1", "d2"),
            *_consumers("k", "a-topic", "x1", "x2"),
            *_consumers("k", "b-topic", "x1", "x2"),
        ],
        offsets=[
            {
                "group": "k",
                "topic": "b-topic",
                "broker_name": "broker-a",
                "queue_id": q,
                "broker_offset": 100,
                "consumer_offset": 100 - backlog,
            }
            for q, backlog in ((0, 7), (1, 14))
        ],
    )
    return simulated(spark, tmp_path, sink=request.param, snapshot=snapshot, scenarios=STALE)


def test_a_stale_clients_queues_of_a_broker_gone_down_are_no_load(spark, stale_run) -> None:
    # Phase 2: c1 follows today's view (mqAll a0..a3, two clients): a0 a1. c2 still computes from
    # phase 0 and keeps b0..b3, all on the dead broker: it reads nothing, and a2 a3 have no reader.
    (g,) = stale_run.rows("group_metrics", "phase = 2 and group = 'g'")
    assert (g.queue_count, g.consumer_count, g.active_consumers, g.idle_consumers) == (4, 2, 1, 1)
    assert (g.min_queues, g.max_queues, g.mean_queues, g.max_over_mean) == (0, 2, 1.0, 2.0)
    assert g.unassigned_queues == 2
    load = {r.client_id: r.queues for r in stale_run.rows("consumer_load", "phase = 2 and group = 'g'")}
    assert load == {"c1": 2, "c2": 0}
    # The assignments still list what c2 pulls from: its old queues, outside mqAll.
    listed = stale_run.rows("assignments", "phase = 2 and client_id = 'c2'")
    assert sorted((r.broker_name, r.queue_id) for r in listed) == [("broker-b", q) for q in range(4)]


def test_min_moves_is_null_where_any_group_has_no_minimum(spark, stale_run) -> None:
    # g's phase 2 leaves queues unowned: no balanced one-owner assignment to compare with, so its
    # min_moves is null, and so are the scenario's and the step's, though h's is known.
    whole = {r.group: r.min_moves for r in stale_run.rows("movement", "from_phase = 0 and to_phase = 2")}
    assert whole["g"] is None and whole["h"] is not None
    (comparison,) = stale_run.rows("comparison")
    assert comparison.min_moves is None
    steps = results.moved_per_step(str(stale_run.out))
    assert steps.set_index("step").min_moves.isna().to_dict() == {1: False, 2: True}


def test_a_clients_backlog_sums_every_topic_that_has_offsets(spark, stale_run) -> None:
    # k's first topic, a-topic, has no offsets; on b-topic AVG gives x1 q0 (7) and x2 q1 (14).
    load = stale_run.rows("consumer_load", "phase = 0 and group = 'k'")
    assert {r.client_id: (r.queues, r.backlog) for r in load} == {"x1": (2, 7), "x2": (2, 14)}


CHOICE = """
scenarios:
  - name: join
    steps:
      - consumers_join: {group: g, client_ids: [c0]}
  - name: drop
    steps:
      - remove_brokers: {names: [broker-a]}
"""


def test_the_recommendation_skips_strategies_not_run_everywhere_but_not_groups_all_fail_on(
    spark, tmp_path, sink
) -> None:
    # c0 joins without a machine room: MACHINE_ROOM_NEARBY is skipped for g in that phase, so its
    # missing phase would pass for zero moves. AVG moves 5 there (c0 a0-a2, c1 a3 b0 b1, c2 b2 b3)
    # and 2 in `drop` (mqAll b0..b3: c1 b0 b1, c2 b2 b3).
    # k's topic `small` lives on broker-a only: with it removed every strategy throws for k there.
    # With one machine room NEARBY is AVG itself: for k the tie goes to the first name, AVG.
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=BROKERS,
        topic_queues=[*ORDERS, *queue_rows("small", {"broker-a": 2})],
        consumers=[
            *_consumers("g", "orders", "c1", "c2"),
            *_consumers("k", "orders", "e1", "e2"),
            *_consumers("k", "small", "e1", "e2"),
        ],
    )
    out = simulated(
        spark,
        tmp_path,
        sink=sink,
        snapshot=snapshot,
        scenarios=CHOICE,
        strategies=("AVG", "MACHINE_ROOM_NEARBY"),
    )
    advice = {r.group: r for r in out.rows("recommendation")}
    assert (advice["g"].best_balance, advice["g"].fewest_moves, advice["g"].fewest_moved) == ("AVG", "AVG", 7)
    assert (advice["k"].best_balance, advice["k"].fewest_moves) == ("AVG", "AVG")


def test_overwrite_replaces_only_an_earlier_run_or_an_empty_directory(tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "run" / "summary").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("keep me")
    for fine in ("empty", "run", "new"):
        RunDirectory.check_mode(str(tmp_path / fine), "overwrite")
    with pytest.raises(InputError, match="not an rmqsim output directory"):
        RunDirectory.check_mode(str(tmp_path / "other"), "overwrite")


def test_out_given_as_the_snapshot_is_exit_code_2_and_the_snapshot_stays(tmp_path, capsys) -> None:
    snapshot = make_snapshot(
        tmp_path / "snap", brokers=BROKERS, topic_queues=ORDERS, consumers=_consumers("g", "orders", "c1")
    )
    before = sorted(p.name for p in (tmp_path / "snap").iterdir())
    assert cli.main(["simulate", "--snapshot", snapshot, "--out", snapshot]) == 2
    assert "--out" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "snap").iterdir()) == before
