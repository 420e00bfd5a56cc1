"""handover/ and comparison/'s sums of it (docs/CONTRACT.md, section 2e) from a real run of a small
fleet, each figure worked by hand.

The fleet: one topic on one broker, 4 queues; one producer sending 40 msgs/s round robin, so each
queue takes 10 msgs/s; group g of two Java clients under AVG. AVG over cidAll [c1, c2] gives c1 q0
and q1, c2 q2 and q3. The clocks are recomputed here from BLAKE2b, not taken from rmqsim.
"""

from __future__ import annotations

import hashlib

import pyarrow.compute as pc
import pytest

from rmqsim.compare_runs import read_table
from tests.builders import broker_rows, consumer_rows, queue_rows
from tests.simulated import simulated
from tests.test_handover_rules import u

C1, C2, C3 = "10.0.0.1@101", "10.0.0.2@102", "10.0.0.3@103"
PER_QUEUE = 10.0  # msgs/s: 40 round robin over 4 queues


def tables(orderly: bool = False) -> dict:
    return dict(
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 4}),
        consumers=consumer_rows("g", "t", [C1, C2]),
        groups=[{"group": "g", "consume_orderly": orderly}],
        producers=[{"topic": "t", "msgs_per_s": 40.0}],
    )


def handed_over(run) -> list[dict]:
    rows = read_table(run.out / "handover").to_pylist()
    return sorted(rows, key=lambda r: (r["scenario"], r["to_phase"]))


def test_a_graceful_leave_hands_two_queues_over_with_the_first_pull_delay(spark, tmp_path, sink) -> None:
    # c2 leaves at 600 (after_s's default): the broker notifies, c1 takes q2 and q3 at 600 and
    # pulls them at 600.5. Each is unread 0.5 s: 10 msgs/s x 0.5 s = 5 messages each; c2 committed.
    steps = (
        "scenarios:\n  - name: leave\n    steps:\n      - consumers_leave: {group: g, client_ids: ['%s']}\n"
    )
    run = simulated(spark, tmp_path, sink=sink, tables=tables(), scenarios=steps % C2)
    (row,) = handed_over(run)
    assert {k: row[k] for k in ("topic", "group", "from_phase", "to_phase", "strategy")} == {
        "topic": "t",
        "group": "g",
        "from_phase": 0,
        "to_phase": 1,
        "strategy": "AVG",
    }
    assert row["queues_handed_over"] == 2 and row["queues_paused"] == 2
    assert (row["pause_s"], row["max_pause_s"], row["overlap_s"]) == (1.0, 0.5, 0.0)
    assert (row["msgs_delayed"], row["msgs_read_twice"], row["settled_after_s"]) == (10.0, 0.0, 0.5)
    # q2 and q3, in mqAll order, each unread from 600 until 600.5
    assert (row["unread_from_s"], row["unread_until_s"]) == ([600.0, 600.0], [600.5, 600.5])
    (compared,) = run.result.comparison
    assert (compared["queues_handed_over"], compared["pause_s"], compared["msgs_delayed"]) == (2, 1.0, 10.0)


def test_a_crash_without_its_connection_closing_waits_for_the_host_loss_then_rereads(spark, tmp_path) -> None:
    # c2 crashes at T = 100 (after_s 100, timing seed 5), its connection left open: the brokers
    # notice at 100 + 120 = 220, and c1 applies at its first tick at or after 220. c1 ticks at
    # tau + 20 m, tau = 20 U(5, "rebalance", c1) in (0, 20); 220 = 11 x 20, so at 220 + tau, and
    # pulls at 220.5 + tau: q2 and q3 unread 120.5 + tau s each. c2 last committed at kappa + 5 m,
    # kappa = 5 U(5, "commit", c2): at or before 100 that is kappa + 95, so it read 5 - kappa s of
    # each queue uncommitted, which c1 reads again.
    tau, kappa = 20 * u(5, "rebalance", C1), 5 * u(5, "commit", C2)
    steps = f"""scenarios:
  - name: lost
    timing: {{seed: 5}}
    steps:
      - crash: {{group: g, client_ids: ['{C2}'], tcp_closed: false, after_s: 100}}
"""
    (row,) = handed_over(simulated(spark, tmp_path, sink="arrow", tables=tables(), scenarios=steps))
    pause = 120.5 + tau
    assert row["max_pause_s"] == pytest.approx(pause)
    assert row["pause_s"] == pytest.approx(2 * pause)
    assert row["msgs_delayed"] == pytest.approx(2 * PER_QUEUE * pause)
    assert row["msgs_read_twice"] == pytest.approx(2 * PER_QUEUE * (5 - kappa))
    assert row["overlap_s"] == 0.0 and row["settled_after_s"] == pytest.approx(pause)
    assert row["unread_from_s"] == [100.0, 100.0]  # from the crash until c1 pulls
    assert row["unread_until_s"] == pytest.approx([100 + pause] * 2)


def test_an_orderly_crash_waits_for_the_lock_and_a_join_moves_one_queue(spark, tmp_path) -> None:
    # Orderly group. Phase 1: c3 joins at 600, notified; AVG over [c1, c2, c3] and 4 queues gives
    # c1 q0 q1, c2 q2, c3 q3: q3 passes from c2 (still there, so it unlocks as it stops at 600) to
    # c3, which pulls at 600.5. Phase 2: c3 crashes at 1200, its connection closed: notified at
    # once, but its lock on q3 expires only at 1200 + 60; AVG over [c1, c2] gives c2 q2 q3 again,
    # so c2 starts q3 at 1260: 60 s unread, 600 messages delayed, and c3's uncommitted reads again.
    steps = f"""scenarios:
  - name: join-then-crash
    steps:
      - consumers_join: {{group: g, client_ids: ['{C3}']}}
      - crash: {{group: g, client_ids: ['{C3}']}}
"""
    join, crash = handed_over(
        simulated(spark, tmp_path, sink="arrow", tables=tables(orderly=True), scenarios=steps)
    )
    assert (join["queues_handed_over"], join["pause_s"], join["overlap_s"], join["msgs_read_twice"]) == (
        1,
        0.5,
        0.0,
        0.0,
    )
    assert (crash["queues_handed_over"], crash["pause_s"], crash["overlap_s"]) == (1, 60.0, 0.0)
    assert (join["unread_from_s"], join["unread_until_s"]) == ([600.0], [600.5])
    assert (crash["unread_from_s"], crash["unread_until_s"]) == ([1200.0], [1260.0])
    assert crash["msgs_delayed"] == 600.0
    kappa = 5 * u(0, "commit", C3)  # c3's last commit at or before 1200 = 240 x 5: kappa + 1195
    assert crash["msgs_read_twice"] == pytest.approx(PER_QUEUE * (5 - kappa))


def test_steps_without_a_hand_over_write_no_row(spark, tmp_path) -> None:
    # A new rate moves no queue; the last phase's figures are the run's own: no handover row.
    steps = "scenarios:\n  - name: busier\n    steps:\n      - set_traffic: {factor: 2}\n"
    run = simulated(spark, tmp_path, sink="arrow", tables=tables(), scenarios=steps)
    written = read_table(run.out / "handover")  # a partitioned table without rows has no file
    assert written is None or written.num_rows == 0
    (compared,) = run.result.comparison
    assert (compared["queues_handed_over"], compared["msgs_delayed"]) == (0, 0.0)
    assert pc.sum(read_table(run.out / "movement")["moved"]).as_py() == 0


def new_id(old: str, seed: int = 0) -> str:
    """A restarted client's id, recomputed from the contract's rule (section 2e): same IP, a new
    PID from BLAKE2b (no collision in these tests, so n = 0)."""
    digest = hashlib.blake2b(f"{seed}:restart:{old}:0".encode(), digest_size=8).digest()
    return f"{old.split('@')[0]}@{1 + int.from_bytes(digest, 'big') % 4_194_303}"


def test_a_rolling_restart_makes_a_phase_per_leave_and_join_each_labelled_and_timed(spark, tmp_path) -> None:
    # "deploy": batch 1, every 60 s, down 30 s, graceful, from 600: c1 leaves at 600, comes back
    # as c1' at 630, c2 leaves at 660 and comes back as c2' at 690. AVG over 4 queues: with one
    # client it reads all four; with [c1', c2] or [c1', c2'] (c1' keeps c1's IP, so it sorts
    # first) q0 q1 go to the first, q2 q3 to the second. Each phase so hands two queues over, each
    # unread 0.5 s (the new reader's first pull): 8 queues, 4 s, 40 messages over the restart.
    # "crashy": down 25 s, every 10 s, crashing: c1 leaves at 600, c2 at 610, c1' joins at 625
    # and c2' at 635. Phase 1 gives q0 q1 to c2 (0.5 s each; c1 read 5 - kappa s of each without
    # committing, kappa = 5 U("commit", c1), as 600 is a multiple of 5); at phase 2 nobody is left
    # (no reader after: unread, no hand-over); c1' then starts all four at 625.5, and c2' takes
    # q2 q3 at 635.5.
    steps = """scenarios:
  - name: deploy
    steps:
      - rolling_restart: {group: g}
  - name: crashy
    steps:
      - rolling_restart: {group: g, interval_s: 10, down_s: 25, graceful: false}
"""
    run = simulated(spark, tmp_path, sink="arrow", tables=tables(), scenarios=steps)
    rows = handed_over(run)
    deploy = [r for r in rows if r["scenario"] == "deploy"]
    assert [(r["to_phase"], r["phase_label"], r["event_s"]) for r in deploy] == [
        (1, "rolling_restart g: 1/2 leave", 600.0),
        (2, "rolling_restart g: 1/2 join", 630.0),
        (3, "rolling_restart g: 2/2 leave", 660.0),
        (4, "rolling_restart g: 2/2 join", 690.0),
    ]
    assert all((r["queues_handed_over"], r["pause_s"], r["overlap_s"]) == (2, 1.0, 0.0) for r in deploy)
    compared = {r["scenario"]: r for r in run.result.comparison}
    assert (compared["deploy"]["last_phase"], compared["deploy"]["queues_handed_over"]) == (4, 8)
    assert (compared["deploy"]["pause_s"], compared["deploy"]["msgs_delayed"]) == (4.0, 40.0)
    # Every queue ends with a reader of a new id: all four moved from phase 0 to the last.
    assert compared["deploy"]["queues_moved"] == 4
    assignments = read_table(run.out / "assignments")
    last = pc.and_(pc.equal(assignments["scenario"], "deploy"), pc.equal(assignments["phase"], 4))
    assert set(assignments.filter(last)["client_id"].to_pylist()) == {new_id(C1), new_id(C2)}

    crashy = [r for r in rows if r["scenario"] == "crashy"]
    assert [(r["to_phase"], r["phase_label"], r["event_s"], r["queues_handed_over"]) for r in crashy] == [
        (1, "rolling_restart g: 1/2 leave", 600.0, 2),
        (3, "rolling_restart g: 1/2 join", 625.0, 4),
        (4, "rolling_restart g: 2/2 join", 635.0, 2),
    ]
    kappa = 5 * u(0, "commit", C1)
    assert crashy[0]["msgs_read_twice"] == pytest.approx(2 * PER_QUEUE * (5 - kappa))
    assert [r["pause_s"] for r in crashy] == [1.0, 2.0, 1.0]
    summary = [r for r in run.result.summary if r["scenario"] == "crashy" and r["strategy"] == "AVG"]
    assert [r["unassigned_queues"] for r in sorted(summary, key=lambda r: r["phase"])] == [0, 0, 4, 0, 0]


def test_the_terminal_names_the_cheapest_strategy_of_each_scenarios_hand_overs() -> None:
    from rmqsim.reporting.text import format_handovers

    def row(scenario: str, strategy: str, queues: int, delayed: float, twice: float) -> dict:
        return dict(
            scenario=scenario,
            strategy=strategy,
            queues_handed_over=queues,
            queues_paused=queues,
            max_pause_s=0.5,
            msgs_delayed=delayed,
            msgs_read_twice=twice,
        )

    rows = [
        # A restart: STICKY moves least; CONFIG handed nothing over (it did not run): not cheapest.
        row("deploy", "AVG", 8, 40.0, 0.0),
        row("deploy", "STICKY", 2, 10.0, 0.0),
        row("deploy", "CONFIG", 0, 0.0, 0.0),
        # A crash: AVG costs 5 + 7 = 12 messages, STICKY 20 + 0: AVG the least.
        row("crash", "AVG", 3, 5.0, 7.0),
        row("crash", "STICKY", 1, 20.0, 0.0),
        # Queues handed over that carry no message: nothing to report.
        row("quiet", "AVG", 4, 0.0, 0.0),
    ]
    lines = format_handovers(rows, detailed=["deploy"]).splitlines()
    crash = "scenario crash: hand-overs cost AVG the least (5.00 msgs delayed, 7.00 read twice), "
    assert lines[0] == crash + "STICKY the most (20.00, 0.00)"
    assert lines[1] == "scenario deploy: hand-overs over every step"
    table = [line.split()[0] for line in lines[4:7]]
    assert table == ["STICKY", "AVG", "CONFIG"]
    assert lines[-1] == "cheapest: STICKY (10.00 msgs delayed or read twice)"
    assert not any("quiet" in line for line in lines)
