"""Scenario files and their steps, end to end through Spark on small snapshots worked by hand."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pytest

from rmqsim import build, cli, config
from rmqsim.config import SimulateConfig
from rmqsim.errors import InputError
from rmqsim.scenarios import apply, names, parse
from rmqsim.stage.batches import OPTIONAL
from tests.builders import make_snapshot, queue_rows
from tests.simulated import simulated, whole

BROKERS = [
    {"broker_name": b, "broker_id": 0, "machine_room": "hz-a", "alive": True}
    for b in ("broker-a", "broker-b")
]


def _snapshot(tmp_path) -> str:
    # orders: 4 queues on each of two brokers; group g: clients c1, c2; queue q of broker-b has a
    # backlog of 10**q messages (broker-a's are all consumed).
    return make_snapshot(
        tmp_path / "snap",
        brokers=BROKERS,
        topic_queues=queue_rows("orders", {"broker-a": 4, "broker-b": 4}),
        consumers=[{"group": "g", "topic": "orders", "client_id": c} for c in ("c1", "c2")],
        offsets=[
            {
                "group": "g",
                "topic": "orders",
                "broker_name": b,
                "queue_id": q,
                "broker_offset": 5000,
                "consumer_offset": 5000 - (10**q if b == "broker-b" else 0),
            }
            for b in ("broker-a", "broker-b")
            for q in range(4)
        ],
    )


def _run(sink: str, spark, tmp_path, text: str, strategies=("AVG",)) -> str:
    run = simulated(
        spark, tmp_path, sink=sink, snapshot=_snapshot(tmp_path), scenarios=text, strategies=strategies
    )
    return str(run.out)


CHURN = """
scenarios:
  - name: churn
    steps:
      - broker_down: {names: [broker-a]}
      - broker_up: {names: [broker-a]}
      - consumers_join: {group: g, client_ids: [c3]}
"""


def _owners(spark, out: str, phase: int, strategy: str = "AVG") -> dict[tuple[str, int], str]:
    rows = whole(spark, out, "assignments").where(f"phase = {phase} and strategy = '{strategy}'").collect()
    return {(r.broker_name, r.queue_id): r.client_id for r in rows}


def _movement(spark, out: str) -> dict[tuple[int, int], object]:
    return {(r.from_phase, r.to_phase): r for r in whole(spark, out, "movement").collect()}


def test_shrinking_write_queues_first_moves_nothing_and_read_queues_then_move(spark, tmp_path, sink) -> None:
    out = _run(
        sink,
        spark,
        tmp_path,
        """
scenarios:
  - name: shrink
    steps:
      - set_queue_nums: {topics: [orders], write_queue_nums: 2}
      - set_queue_nums: {topics: [orders], read_queue_nums: 2}
""",
    )
    # AVG over a0-a3 b0-b3: c1 a0-a3, c2 b0-b3. Consumers follow read counts: step 1 changes nothing.
    # Step 2 leaves a0 a1 b0 b1: c1 takes the first two, c2 the last two, so no queue that stays
    # changes owner (the queues that go, a2 a3 b2 b3, are the ones producers stopped writing to).
    assert _owners(spark, out, 0) == _owners(spark, out, 1)
    assert _owners(spark, out, 2) == {
        ("broker-a", 0): "c1",
        ("broker-a", 1): "c1",
        ("broker-b", 0): "c2",
        ("broker-b", 1): "c2",
    }
    m = _movement(spark, out)
    assert (m[(0, 1)].moved, m[(0, 1)].queues_after) == (0, 8)
    assert (m[(1, 2)].queues_before, m[(1, 2)].queues_after, m[(1, 2)].queues_in_both, m[(1, 2)].moved) == (
        8,
        4,
        4,
        0,
    )
    assert m[(0, 2)].moved == 0


def test_broker_down_and_up_with_a_consumer_joining(spark, tmp_path, sink) -> None:
    out = _run(
        sink,
        spark,
        tmp_path,
        CHURN,
        strategies=("AVG", "AVG_BY_CIRCLE"),
    )
    # Phase 1 (a down), AVG over b0-b3 with c1 c2: c1 b0 b1, c2 b2 b3: b0 b1 move from c2 to c1.
    assert _owners(spark, out, 1) == {("broker-b", q): ("c1" if q < 2 else "c2") for q in range(4)}
    rows = whole(spark, out, "movement").where("strategy = 'AVG'").collect()
    m = {(r.from_phase, r.to_phase): r for r in rows}
    assert (m[(0, 1)].moved, m[(0, 1)].min_moves, m[(0, 1)].moved_backlog) == (2, 2, 1 + 10)
    # Backlog skew: phase 0, c2 holds all of broker-b's 1 + 10 + 100 + 1000; phase 1, c1 b0 b1.
    [g0] = whole(spark, out, "group_metrics").where("phase = 0 and strategy = 'AVG'").collect()
    assert (g0.backlog, g0.min_backlog, g0.max_backlog, g0.mean_backlog) == (1111, 0, 1111, 555.5)
    load = whole(spark, out, "consumer_load").where("phase = 1 and strategy = 'AVG'").collect()
    assert {r.client_id: r.backlog for r in load} == {"c1": 11, "c2": 1100}
    assert (m[(1, 2)].moved, m[(2, 3)].consumers_after) == (2, 3)
    # Phase 3: c3 joins, 8 queues: c1 a0 a1 a2, c2 a3 b0 b1, c3 b2 b3: a3, b2 and b3 move.
    # A 3-3-2 split keeping c1's a0-a2 and c2's b0-b2 would move 2.
    assert (m[(2, 3)].moved, m[(2, 3)].min_moves, m[(0, 3)].moved) == (3, 2, 3)
    assert sorted({r.strategy for r in whole(spark, out, "movement").collect()}) == [
        "AVG",
        "AVG_BY_CIRCLE",
    ]


def test_recommendation_weighs_balance_then_moves(spark, tmp_path, sink) -> None:
    out = _run(
        sink,
        spark,
        tmp_path,
        CHURN,
        strategies=("AVG", "AVG_BY_CIRCLE", "STICKY"),
    )
    # All three end 3-3-2 after c3 joins (max/mean 3 / (8/3) = 1.125). Moved over the steps: AVG
    # 2 + 2 + 3 = 7; AVG_BY_CIRCLE 0 + 0 + 4 (b0..b3 keep their owners while a is down); STICKY
    # 2 + 0 + 2. Tied on balance and moves, the name decides: AVG_BY_CIRCLE.
    [r] = whole(spark, out, "recommendation").collect()
    assert (r.best_balance, r.best_max_over_mean, r.fewest_moves, r.fewest_moved) == (
        "AVG_BY_CIRCLE",
        1.125,
        "AVG_BY_CIRCLE",
        4,
    )
    assert (r.consumers, r.useful_consumers) == (2, 2)


def test_set_strategy_changes_the_configured_strategy_and_moves_queues(spark, tmp_path, sink) -> None:
    out = _run(
        sink,
        spark,
        tmp_path,
        """
scenarios:
  - name: to-circle
    steps:
      - set_strategy: {group: g, strategy: AVG_BY_CIRCLE}
""",
        strategies=None,
    )
    # AVG: c1 a0-a3, c2 b0-b3; circle: c1 a0 a2 b0 b2, c2 a1 a3 b1 b3: 4 of 8 move, the fewest is 0.
    [m] = whole(spark, out, "movement").collect()
    assert (m.strategy, m.moved, m.min_moves) == ("AVG_BY_CIRCLE", 4, 0)


def test_add_brokers_takes_each_topics_usual_counts(spark, tmp_path, sink) -> None:
    out = _run(
        sink,
        spark,
        tmp_path,
        """
scenarios:
  - name: grow
    steps:
      - add_brokers: {names: [broker-c], machine_room: hz-b, topics: all}
      - consumers_leave: {group: g, count: 1, seed: 3}
""",
    )
    m = _movement(spark, out)
    assert (m[(0, 1)].queues_after, m[(1, 2)].consumers_after) == (12, 1)
    assert sorted({q for q in _owners(spark, out, 2).values()}) in (["c1"], ["c2"])


@pytest.mark.parametrize(
    "text, problem",
    [
        ("scenarios: []", "'scenarios:' list"),
        ("scenarios: [{name: x, steps: [{explode: {}}]}]", "unknown step kind"),
        ("scenarios: [{name: x, steps: [{broker_down: {}}]}]", "missing key(s) ['names']"),
        ("scenarios: [{name: x, steps: [{broker_down: {names: [a], when: 1}}]}]", "unknown key(s) ['when']"),
        ("scenarios: [{name: x, steps: [{consumers_join: {group: g}}]}]", "either client_ids or count"),
        (
            "scenarios: [{name: x, steps: [{set_queue_nums: {read_queue_nums: 70000}}]}]",
            "between 0 and 65535",
        ),
        (
            "scenarios: [{name: x, steps: [{set_strategy: {group: g, strategy: FASTEST}}]}]",
            "unknown strategy",
        ),
        (
            "scenarios: [{name: x, steps: [{set_strategy: {group: g, strategy: AVG, message_model: b}}]}]",
            "unknown message_model 'b'",
        ),
    ],
)
def test_malformed_scenario_files_are_clear_errors(text, problem) -> None:
    with pytest.raises(
        InputError,
        match=problem.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)"),
    ):
        parse.parse(text)


@pytest.mark.parametrize(
    "step, problem",
    [
        ("broker_down: {names: [broker-z]}", "no such broker in the snapshot at this step: 'broker-z'"),
        ("set_queue_nums: {topics: [nope], read_queue_nums: 1}", "no such topic"),
        ("consumers_leave: {group: g, client_ids: [c9]}", "no such client of group 'g'"),
        ("consumers_join: {group: nobody, count: 1}", "no such group"),
        ("add_brokers: {names: [broker-a]}", "already in the snapshot"),
        ("consumers_leave: {group: g, count: 3}", "3 clients cannot leave group 'g': it has 2 at this step"),
    ],
)
def test_steps_naming_what_does_not_exist_fail_before_simulating(spark, tmp_path, step, problem) -> None:
    path = tmp_path / "s.yml"
    path.write_text(f"scenarios:\n  - name: bad\n    steps:\n      - {step}\n")
    with pytest.raises(InputError, match=problem):
        build.build_group_routes(
            spark, SimulateConfig(_snapshot(tmp_path), str(tmp_path / "o"), scenarios=str(path))
        )


def test_a_removed_broker_cannot_be_named_by_a_later_step() -> None:
    runs = parse.parse(
        "scenarios: [{name: x, steps: [{remove_brokers: {names: [a]}}, {broker_up: {names: [a]}}]}]"
    )
    existing = names.Referenced(frozenset({"a"}), frozenset(), frozenset(), frozenset())
    with pytest.raises(InputError, match="step 2"):
        names.check_names(runs, existing)


def test_a_count_leave_is_checked_against_the_clients_earlier_steps_left() -> None:
    # g starts with c1, c2, c3. Step 1 adds c4 and re-adds c1 (already there): 4 clients. Step 2
    # adds 2 generated ones: 6. Step 3 takes c2 away: 5. So 5 may leave in step 4, 6 may not.
    steps = [
        "{consumers_join: {group: g, client_ids: [c4, c1]}}",
        "{consumers_join: {group: g, count: 2}}",
        "{consumers_leave: {group: g, client_ids: [c2]}}",
    ]
    existing = names.Referenced(
        frozenset(), frozenset(), frozenset({"g"}), frozenset({("g", "c1"), ("g", "c2")}), {"g": 3}
    )
    for leaving, fails in ((5, False), (6, True)):
        last = f"{{consumers_leave: {{group: g, count: {leaving}}}}}"
        runs = parse.parse(f"scenarios: [{{name: x, steps: [{', '.join([*steps, last])}]}}]")
        assert names.counted_groups(runs) == {"g"}
        if fails:
            with pytest.raises(InputError, match="step 4.*6 clients cannot leave group 'g': it has 5"):
                names.check_names(runs, existing)
        else:
            names.check_names(runs, existing)


def test_cli_exit_code_2_names_the_scenario_and_step(tmp_path, capsys) -> None:
    path = tmp_path / "s.yml"
    path.write_text("scenarios:\n  - name: bad\n    steps:\n      - broker_down: {names: [broker-z]}\n")
    code = cli.main(
        [
            "simulate",
            "--snapshot",
            _snapshot(tmp_path),
            "--out",
            str(tmp_path / "o"),
            "--scenarios",
            str(path),
        ]
    )
    assert code == 2
    assert "scenario 'bad', step 1" in capsys.readouterr().err


def test_route_columns_a_run_has_no_data_for_are_named_absent_and_null(spark, tmp_path) -> None:
    # No offsets, no queue_config, no stale views, no languages, no balancing: every optional
    # column is absent, and indeed null on every row. The sample with its scenarios has data for
    # each: none is absent.
    bare = make_snapshot(
        tmp_path / "bare",
        brokers=BROKERS,
        topic_queues=queue_rows("orders", {"broker-a": 4}),
        consumers=[{"group": "g", "topic": "orders", "client_id": "c1"}],
    )
    built = build.build_group_routes(spark, SimulateConfig(bare, str(tmp_path / "o")))
    assert set(built.absent) == set(OPTIONAL)
    routes = built.group_routes
    assert routes.num_rows == 1
    assert [routes[c].null_count for c in built.absent] == [1] * len(built.absent)
    sample = SimulateConfig(
        str(config.sample_snapshot()),
        str(tmp_path / "o"),
        strategies=config.parse_strategies("all"),
        scenarios=str(config.sample_scenarios()),
    )
    built = build.build_group_routes(spark, sample)
    assert built.absent == ()


def test_phases_keeping_the_snapshots_consumers_are_left_without_consumers_rows(tmp_path) -> None:
    # broker_down changes the brokers alone: down's phases 0 and 1 keep the snapshot's consumers
    # and groups, and so do down-join's until its consumers_join makes new consumers (phase 2).
    # consumers_leave names one group: leave's phases hold that group's rows alone (apply._local),
    # none the snapshot's own table. So, with the caller holding phase 0's client lists, four
    # phases come back, and the stack's consumers hold the others' rows: leave 0 (c1, c2), leave 1
    # (c1, the client left) and down-join 2 (c1, c2 and the new c3).
    snapshot = build.snapshot_read(None, SimulateConfig(_snapshot(tmp_path), str(tmp_path / "o")))
    runs = parse.parse(
        """
scenarios:
  - name: down
    steps: [{broker_down: {names: [broker-a]}}]
  - name: leave
    steps: [{consumers_leave: {group: g, client_ids: [c2]}}]
  - name: down-join
    steps: [{broker_down: {names: [broker-a]}}, {consumers_join: {group: g, client_ids: [c3]}}]
"""
    )
    staged, _, known = apply.phased_changes(snapshot, runs, snapshot_name=None, lists_known=True)
    assert known == [("down", 0), ("down", 1), ("down-join", 0), ("down-join", 1)]
    rows = staged.consumers.select(["scenario", "phase", "client_id"]).to_pylist()
    assert sorted(tuple(r.values()) for r in rows) == [
        ("down-join", 2, "c1"),
        ("down-join", 2, "c2"),
        ("down-join", 2, "c3"),
        ("leave", 0, "c1"),
        ("leave", 0, "c2"),
        ("leave", 1, "c1"),
    ]
    _, _, known = apply.phased_changes(snapshot, runs, snapshot_name=None)
    assert known == []


def test_a_chunks_client_lists_taken_from_phase_0_are_the_ones_it_would_sort(monkeypatch) -> None:
    # The sample's scenarios, a chunk at a time, built twice: taking the lists of every phase that
    # keeps the snapshot's consumers from phase 0's (cut to what each scenario touches), and
    # building every phase's own. The routes are the same, and some phases did take phase 0's.
    sample = SimulateConfig(
        str(config.sample_snapshot()),
        "unused",
        strategies=config.parse_strategies("all"),
        scenarios=str(config.sample_scenarios()),
    )
    first = build.build_group_routes(None, sample, deferred=True)
    taken = []
    of = build.SnapshotClients.of
    monkeypatch.setattr(
        build.SnapshotClients, "of", lambda self, keys, listed: taken.extend(keys) or of(self, keys, listed)
    )

    def chunks(built: build.Staged) -> list[pa.Table]:
        return [cut.group_routes for _, cut in build.chunked(sample, built, list(built.later), "scenarios")]

    assert first.snapshot_clients is not None
    reused = chunks(first)
    assert len(taken) >= 10
    own = chunks(replace(first, snapshot_clients=None))
    assert [t.schema for t in reused] == [t.schema for t in own]
    assert [t.to_pylist() for t in reused] == [t.to_pylist() for t in own]
