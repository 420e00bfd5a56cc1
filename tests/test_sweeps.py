"""Later phases hold what changed, and sweeps rank single failures (docs/CONTRACT.md, sections 2f
and 4), on a generated fleet with producers and capacities.

Independent checks: a later phase rebuilt from phase 0 and touched/ against the same run with
--full-phases (every phase computed and written whole, as before); and a sweep's row for an
element against the same failure run as a plain one-step scenario (its summary and comparison,
which are computed over the whole fleet, phase by phase).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from rmqsim.compare_runs import compare_runs, read_table
from rmqsim.config import SimulateConfig
from rmqsim.simulate import allocation_partitions
from rmqsim.snapshot import synthetic, synthetic_traffic, write
from rmqsim.stage.outputs import _adding
from tests.simulated import simulated

STRATEGIES = ("AVG", "CONSISTENT_HASH")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """About 2,000 assignments over 6 brokers in 2 rooms, producers on every topic (one slow
    broker) and a capacity for every client."""
    spec = synthetic.FleetSpec(seed=11, assignments=2000, brokers=6, rooms=2, mean_clients=4)
    tables = synthetic_traffic.with_producers(synthetic.generate(spec), seed=11)
    tables = synthetic_traffic.with_capacities(tables, seed=11)
    path = tmp_path_factory.mktemp("fleet") / "snapshot"
    write.write_snapshot(tables, str(path))
    return path


def _names(fleet: Path, table: str, column: str) -> list[str]:
    return sorted(set(pc.drop_null(read_table(fleet / table)[column]).to_pylist()))


def _steps_file(fleet: Path) -> str:
    """A scenario of every kind of change, one after the other: a broker, queue counts, members,
    a crash, a room, traffic, strategy, and a stale view; and one of a group's own changes alone
    (a rolling restart among them), which is replayed on that group's rows alone."""
    brokers = _names(fleet, "brokers", "broker_name")
    groups = _names(fleet, "consumers", "group")
    rooms = _names(fleet, "brokers", "machine_room")
    topics = _names(fleet, "topic_queues", "topic")
    return f"""
scenarios:
  - name: many-steps
    steps:
      - broker_down: {{names: [{brokers[0]}]}}
      - consumers_join: {{group: {groups[0]}, count: 2, machine_room: {rooms[0]}, seed: 3}}
      - stale_view: {{group: {groups[0]}, fraction: 0.5, seed: 1}}
      - set_queue_nums: {{topics: [{topics[1]}], read_queue_nums: 2}}
      - crash: {{group: {groups[1]}, count: 1, seed: 2}}
      - set_traffic: {{topics: [{topics[2]}], factor: 3}}
      - broker_up: {{names: [{brokers[0]}]}}
      - set_strategy: {{group: {groups[2]}, strategy: AVG_BY_CIRCLE}}
  - name: room-goes
    steps:
      - room_down: {{rooms: [{rooms[1]}]}}
  - name: restart
    steps:
      - consumers_leave: {{group: {groups[3]}, count: 1, seed: 4}}
      - rolling_restart: {{group: {groups[3]}, batch: 2, interval_s: 20, down_s: 50, graceful: false}}
      - designate: {{group: {groups[3]}, ips: [10.0.0.1]}}
"""


def test_later_phases_rebuilt_from_phase_0_and_touched_equal_full_phases(spark, tmp_path, fleet) -> None:
    scenarios = _steps_file(fleet)
    kw = dict(snapshot=fleet, scenarios=scenarios, sink="arrow")
    full = simulated(spark, tmp_path, name="full", full_phases=True, strategies=("AVG", "STICKY"), **kw)
    changed = simulated(spark, tmp_path, name="changed", strategies=("AVG", "STICKY"), **kw)
    results = compare_runs(full.out, changed.out)
    assert [r.lines[0] for r in results if not r.equal] == []
    assert {r.name for r in results} >= {
        "assignments",
        "group_metrics",
        "movement",
        "queue_traffic",
        "summary",
    }
    # Fewer rows written: a later phase repeats none of phase 0's untouched (topic, group)s.
    written, whole = (read_table(run.out / "assignments").num_rows for run in (changed, full))
    assert written < whole
    touched = read_table(changed.out / "touched")
    # Cumulative: what step 1 touched stays touched at every later phase of its scenario.
    steps = touched.filter(pc.equal(touched["scenario"], "many-steps"))
    by_phase = {
        k: set(zip(*(steps.filter(pc.equal(steps["phase"], k))[c].to_pylist() for c in ("topic", "group"))))
        for k in range(1, 9)
    }
    assert all(by_phase[k] <= by_phase[k + 1] for k in range(1, 8))
    # Where a run has touched/, a phased table is compared a scenario at a time: one row of one
    # scenario's later phase changed (a queue more) is still found, in that table alone.
    broken = tmp_path / "broken"
    shutil.copytree(changed.out, broken)
    part = next((broken / "group_metrics").glob("scenario=room-goes/*/*.parquet"))
    rows = pq.read_table(part)
    at = rows.schema.get_field_index("queue_count")
    more = pc.add(rows["queue_count"], pa.array([1] + [0] * (rows.num_rows - 1), rows["queue_count"].type))
    pq.write_table(rows.set_column(at, rows.schema.field(at), more), part)
    results = {r.name: r for r in compare_runs(full.out, broken, tables=["group_metrics", "assignments"])}
    assert results["assignments"].equal
    assert results["group_metrics"].lines[0].endswith("DIFFERENT (rows only in old: 1, only in new: 1)")


def test_phase_0_is_written_once_and_a_later_phase_only_what_its_steps_touched(spark, tmp_path) -> None:
    # t1 on broker-a and broker-b, t2 and t3 on broker-b only; g1 reads t1, g2 reads t2, g3 reads
    # t2 and t3. broker-a down touches t1 (its queue data is on a) and so g1 alone: (t1, g1).
    # Then c9 joins g3: g3 on both its topics, (t2, g3) and (t3, g3), not g2 though g2 reads t2.
    queues = [
        {"topic": "t1", "broker_name": b, "read_queue_nums": 2, "write_queue_nums": 2, "perm": 6}
        for b in ("broker-a", "broker-b")
    ] + [
        {"topic": t, "broker_name": "broker-b", "read_queue_nums": 2, "write_queue_nums": 2, "perm": 6}
        for t in ("t2", "t3")
    ]
    consumers = [
        {"group": g, "topic": t, "client_id": f"10.0.0.{i}@1"}
        for g, t in (("g1", "t1"), ("g2", "t2"), ("g3", "t2"), ("g3", "t3"))
        for i in (1, 2)
    ]
    brokers = [{"broker_name": b, "broker_id": 0, "address": f"{b}:1"} for b in ("broker-a", "broker-b")]
    scenarios = """
scenarios:
  - name: s
    steps:
      - broker_down: {names: [broker-a]}
      - consumers_join: {group: g3, client_ids: ["10.0.0.9@1"]}
"""
    run = simulated(
        spark,
        tmp_path,
        tables=dict(brokers=brokers, topic_queues=queues, consumers=consumers),
        scenarios=scenarios,
        sink="arrow",
    )
    touched = read_table(run.out / "touched")
    listed = {(r["phase"], r["topic"], r["group"]) for r in touched.to_pylist()}
    assert listed == {
        (1, "t1", "g1"),
        (2, "t1", "g1"),
        (2, "t2", "g3"),
        (2, "t3", "g3"),
    }
    metrics = read_table(run.out / "group_metrics")
    written = {(r["scenario"], r["phase"], r["topic"], r["group"]) for r in metrics.to_pylist()}
    at_0 = {("baseline", 0, t, g) for t, g in (("t1", "g1"), ("t2", "g2"), ("t2", "g3"), ("t3", "g3"))}
    assert written == at_0 | {("s", k, t, g) for k, t, g in listed}
    # summary still covers the whole fleet at every phase: 4 (topic, group)s, 2 + 2 + 2 + 2 queues.
    summary = read_table(run.out / "summary").to_pylist()
    assert [(r["scenario"], r["phase"], r["groups"], r["queues"]) for r in summary] == [
        ("s", 0, 4, 10),
        ("s", 1, 4, 8),  # t1 loses broker-a's two queues
        ("s", 2, 4, 8),
    ]


def test_a_sweep_row_equals_the_same_failure_as_a_plain_scenario(spark, tmp_path, fleet) -> None:
    brokers = _names(fleet, "brokers", "broker_name")
    rooms = _names(fleet, "brokers", "machine_room")
    plain = [(f"broker-loss/{b}", f"broker_down: {{names: [{b}]}}") for b in brokers] + [
        (f"room-loss/{r}", f"room_down: {{rooms: [{r}]}}") for r in rooms
    ]
    scenarios = "scenarios:\n" + "".join(
        f"  - name: plain-{i}\n    steps:\n      - {step}\n" for i, (_, step) in enumerate(plain)
    )
    scenarios += """sweeps:
  - {name: broker-loss, each: broker_down, of: all}
  - {name: room-loss, each: room_down, of: all}
"""
    run = simulated(
        spark,
        tmp_path,
        snapshot=fleet,
        scenarios=scenarios,
        strategies=STRATEGIES,
        sink="arrow",
        sweep_detail=2,
    )
    sweep = {
        (r["sweep"] + "/" + r["element"], r["strategy"]): r for r in read_table(run.out / "sweep").to_pylist()
    }
    assert len(sweep) == len(plain) * len(STRATEGIES)
    summary = {(r["scenario"], r["phase"], r["strategy"]): r for r in run.result.summary}
    compared = {(r["scenario"], r["strategy"]): r for r in run.result.comparison}
    pairs = [
        ("queues_unread", "unassigned_queues"),
        ("stranded_msgs_per_s", "stranded_msgs_per_s"),
        ("unroutable_msgs_per_s", "unroutable_msgs_per_s"),
        ("clients_over_capacity", "clients_over_capacity"),
        ("lag_growth_msgs_per_s", "lag_growth_msgs_per_s"),
    ]
    for i, (element, _) in enumerate(plain):
        for strategy in STRATEGIES:
            row, at_1 = sweep[(element, strategy)], summary[(f"plain-{i}", 1, strategy)]
            for ours, theirs in pairs:
                assert row[ours] == pytest.approx(at_1[theirs], rel=1e-9, abs=1e-6), (element, strategy, ours)
            assert row["queues_moved"] == compared[(f"plain-{i}", strategy)]["queues_moved"], element
            # One step: the plain scenario's hand-overs summed over its steps are that step's.
            for figure in ("msgs_delayed", "msgs_read_twice"):
                theirs = compared[(f"plain-{i}", strategy)][figure]
                assert row[figure] == pytest.approx(theirs, rel=1e-9, abs=1e-6), (element, figure)
    # The fleet's producers and capacities make the figures summed from the stage's rows move (a
    # sweep's stage leaves out the rows that add 0): the equalities above are not of zeros alone.
    at_0 = {s: summary[("plain-0", 0, s)] for s in STRATEGIES}
    moving = {o for o, t in pairs if any(r[o] != at_0[r["strategy"]][t] for r in sweep.values())}
    assert {"queues_unread", "lag_growth_msgs_per_s", "clients_over_capacity"} <= moving, moving
    assert any(r["msgs_delayed"] > 0 for r in sweep.values())
    assert any(r["msgs_read_twice"] > 0 for r in sweep.values())
    # Ranks 1..n per (sweep, strategy); the 2 worst are detailed, their phases in the other tables.
    for name in ("broker-loss", "room-loss"):
        for strategy in STRATEGIES:
            ranks = sorted(
                r["rank"] for (e, s), r in sweep.items() if e.startswith(name + "/") and s == strategy
            )
            assert ranks == list(range(1, len(ranks) + 1))
    detailed = {e for (e, _), r in sweep.items() if r["detailed"]}
    assert detailed == {e for (e, _), r in sweep.items() if r["rank"] <= 2}
    simulated_scenarios = set(pc.unique(read_table(run.out / "group_metrics")["scenario"]).to_pylist())
    assert simulated_scenarios == {"baseline"} | {f"plain-{i}" for i in range(len(plain))} | detailed
    # A detailed element's rows equal its plain twin's (same steps, other name).
    twin = {element: f"plain-{i}" for i, (element, _) in enumerate(plain)}
    for element in detailed:
        for strategy in STRATEGIES:
            ours, theirs = summary[(element, 1, strategy)], summary[(twin[element], 1, strategy)]
            assert {k: v for k, v in ours.items() if k != "scenario"} == {
                k: v for k, v in theirs.items() if k != "scenario"
            }


def test_a_crash_sweep_has_one_element_per_client_of_its_groups(spark, tmp_path, fleet) -> None:
    consumers = read_table(fleet / "consumers")
    group = _names(fleet, "consumers", "group")[0]
    clients = sorted(set(consumers.filter(pc.equal(consumers["group"], group))["client_id"].to_pylist()))
    first = clients[0]
    scenarios = f"""
scenarios:
  - name: one-crash
    steps:
      - crash: {{group: {group}, client_ids: ["{first}"]}}
sweeps:
  - {{name: pod-crash, each: crash, of: [{group}]}}
"""
    run = simulated(spark, tmp_path, snapshot=fleet, scenarios=scenarios, sink="arrow", sweep_detail=0)
    rows = {r["element"]: r for r in run.result.sweep}
    assert sorted(rows) == [f"{group}:{c}" for c in clients]
    at_1 = next(r for r in run.result.summary if r["scenario"] == "one-crash" and r["phase"] == 1)
    mine = rows[f"{group}:{first}"]
    assert mine["lag_growth_msgs_per_s"] == pytest.approx(at_1["lag_growth_msgs_per_s"], rel=1e-9, abs=1e-6)
    assert mine["queues_moved"] == run.result.comparison[0]["queues_moved"]
    for figure in ("msgs_delayed", "msgs_read_twice"):
        assert mine[figure] == pytest.approx(run.result.comparison[0][figure], rel=1e-9, abs=1e-6)
    # One group touched: at most that group changes, and with K = 0 no element is detailed.
    assert all(r["groups_changed"] <= 1 and not r["detailed"] for r in rows.values())


def test_a_sweep_stage_leaves_out_only_rows_that_add_nothing_to_a_sum() -> None:
    # x + 0 is x: a row whose summed columns are all 0, false or null changes no sum; NaN does.
    rows = pa.RecordBatch.from_pydict(
        {
            "lag_growth_msgs_per_s": [0.0, None, 2.5, math.nan, 0.0, -0.0],
            "over_capacity": [False, None, False, False, True, None],
            "client_id": ["a", "b", "c", "d", "e", "f"],
        }
    )
    kept = _adding(rows, ("lag_growth_msgs_per_s", "over_capacity"))
    assert kept.column("client_id").to_pylist() == ["c", "d", "e"]


def test_a_sweep_sums_the_same_through_either_sink(spark, tmp_path, fleet) -> None:
    # Each sink's collect_stage runs the stage in its summed mode (rows that add 0 left out), the
    # Spark sink's as a cluster or Spark Connect runs it: both sweeps' rows are the same bits.
    scenarios = "sweeps:\n  - {name: broker-loss, each: broker_down, of: all}\n"
    kw = dict(snapshot=fleet, scenarios=scenarios, strategies=STRATEGIES, sweep_detail=0)
    arrow = simulated(spark, tmp_path, name="arrow", sink="arrow", **kw)
    spark_sink = simulated(spark, tmp_path, name="spark", sink="spark", **kw)
    [result] = compare_runs(arrow.out, spark_sink.out, tables=["sweep"])
    assert result.equal, result.lines
    brokers = len(_names(fleet, "brokers", "broker_name"))
    assert read_table(arrow.out / "sweep").num_rows == brokers * len(STRATEGIES)


def test_a_chunk_runs_one_task_per_core_and_the_fleet_two(spark) -> None:
    # local[2]: the fleet's stage on 2 x 2 tasks, a chunk's on 2 (fewer for few routes), and
    # --partitions rules both.
    config = SimulateConfig(snapshot="s", out="o")
    cores = spark.sparkContext.defaultParallelism
    assert cores == 2
    assert allocation_partitions(spark, config) == 4
    assert allocation_partitions(spark, config, chunk=True) == 2
    given = SimulateConfig(snapshot="s", out="o", partitions=3)
    assert allocation_partitions(spark, given) == allocation_partitions(spark, given, chunk=True) == 3
