"""Where the messages go (docs/CONTRACT.md, section 2c), worked by hand: one snapshot of small
topics, each a case, simulated once with a scenario that grows the ordered topic; then bad input.

The figures below come from RocketMQ's rules, not from rmqsim: a Java publish list is the
brokers in name order, each with its write queues; ROUND_ROBIN gives every entry rate/N; AVG
gives client i of n the i-th contiguous block of the sorted mqAll.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rmqsim.cli import main
from rmqsim.stage import queue_traffic
from tests.builders import make_snapshot, route, staged
from tests.simulated import simulated

C1, C2 = "10.0.0.1@1", "10.0.0.2@1"

# set_queue_nums grows the ordered topic's list from 8 to 12 queues.
SCENARIOS = """
scenarios:
  - name: grow-ordered
    steps:
      - set_queue_nums: {topics: [ordered], read_queue_nums: 12, write_queue_nums: 12}
"""


def _queues(topic: str, broker: str, read: int, write: int) -> dict:
    return {
        "topic": topic,
        "broker_name": broker,
        "read_queue_nums": read,
        "write_queue_nums": write,
        "perm": 6,
    }


def _two_clients(group: str, topic: str) -> list[dict]:
    return [{"group": group, "topic": topic, "client_id": c} for c in (C1, C2)]


TABLES = {
    "brokers": [
        {"broker_name": "broker-a", "broker_id": 0},
        # broker-b's sends take 800 ms: notAvailableDuration 30000 ms (4.x table) or 2000 ms (5.x)
        {"broker_name": "broker-b", "broker_id": 0, "send_latency_ms": 800.0},
        {"broker_name": "broker-c", "broker_id": 0},
        # broker-s is alive only through its slave: readable, not writable
        {"broker_name": "broker-s", "broker_id": 0, "alive": False},
        {"broker_name": "broker-s", "broker_id": 1, "alive": True},
    ],
    "topic_queues": [
        _queues("eight-four", "broker-a", read=4, write=8),
        _queues("four-eight", "broker-a", read=8, write=4),
        *[
            _queues(t, b, n, n)
            for t in ("avoid-4x", "avoid-5x")
            for b, n in (("broker-a", 4), ("broker-b", 4), ("broker-c", 8))
        ],
        _queues("slave", "broker-a", 4, 4),
        _queues("slave", "broker-s", 4, 4),
        _queues("ordered", "broker-a", 8, 8),
        _queues("conf-bad", "broker-a", 4, 4),
        _queues("no-writer", "broker-s", 4, 4),
    ],
    "consumers": [
        *_two_clients("g-eight-four", "eight-four"),
        *_two_clients("g-four-eight", "four-eight"),
        *_two_clients("g-slave", "slave"),
        {"group": "g-ordered", "topic": "ordered", "client_id": C1},
        {"group": "g-avoid", "topic": "avoid-4x", "client_id": C1},
        {"group": "g-avoid", "topic": "avoid-5x", "client_id": C1},
    ],
    # g-eight-four's backlog on queue i is 10*i messages.
    "offsets": [
        {
            "group": "g-eight-four",
            "topic": "eight-four",
            "broker_name": "broker-a",
            "queue_id": i,
            "broker_offset": 100 + 10 * i,
            "consumer_offset": 100,
        }
        for i in range(8)
    ],
    "producers": [
        {"topic": "eight-four", "msgs_per_s": 800.0},
        {"topic": "four-eight", "msgs_per_s": 400.0},
        {"topic": "avoid-4x", "msgs_per_s": 1600.0, "version": "V4_9_8", "send_latency_fault_enable": True},
        {"topic": "avoid-5x", "msgs_per_s": 1200.0, "version": "V5_1_4", "send_latency_fault_enable": True},
        # the same fleet without fault avoidance: every entry alike
        {"topic": "avoid-5x", "msgs_per_s": 1600.0, "version": "V4_9_8", "send_latency_fault_enable": False},
        {"topic": "slave", "msgs_per_s": 400.0},
        {"topic": "ordered", "producer_group": "orders", "msgs_per_s": 1000.0, "selector": "HASH"},
        {"topic": "conf-bad", "msgs_per_s": 50.0},
        {"topic": "no-writer", "msgs_per_s": 30.0},
    ],
    "producer_keys": [
        {"topic": "ordered", "key": "a", "share": 0.5},
        {"topic": "ordered", "key": "22", "share": 0.3},
        {"topic": "ordered", "key": "k", "share": 0.2},
    ],
    # Java: Integer.parseInt("x") throws NumberFormatException while building the list
    "order_topics": [{"topic": "conf-bad", "order_conf": "broker-a:x"}],
}


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    return simulated(
        spark, tmp_path_factory.mktemp("traffic"), sink="arrow", tables=TABLES, scenarios=SCENARIOS
    )


def _inflow(run, topic: str, phase: int = 0) -> dict[tuple[str, int], float]:
    rows = run.rows("queue_traffic", f"scenario = 'grow-ordered' and phase = {phase} and topic = '{topic}'")
    return {(r.broker_name, r.queue_id): r.in_msgs_per_s for r in rows}


def _group(run, group: str, topic: str):
    (row,) = run.rows(
        "group_metrics",
        f"scenario = 'grow-ordered' and phase = 0 and group = '{group}' and topic = '{topic}'",
    )
    return row


def _clients(run, group: str, phase: int = 0) -> dict[str, float]:
    rows = run.rows("consumer_load", f"scenario = 'grow-ordered' and phase = {phase} and group = '{group}'")
    return {r.client_id: r.msgs_per_s for r in rows}


def test_eight_write_four_read_strands_half(run) -> None:
    # List a0..a7, 800/8 = 100 each; mqAll a0..a3: C1 a0,a1 = 200, C2 a2,a3 = 200;
    # a4..a7 (400) are written and read by nobody: stranded, with backlog 40+50+60+70 = 220.
    assert _inflow(run, "eight-four") == {("broker-a", i): 100.0 for i in range(8)}
    g = _group(run, "g-eight-four", "eight-four")
    assert (g.in_msgs_per_s, g.owned_msgs_per_s, g.unowned_msgs_per_s, g.stranded_msgs_per_s) == (
        800,
        400,
        0,
        400,
    )
    assert g.stranded_backlog == 220
    assert _clients(run, "g-eight-four") == {C1: 200.0, C2: 200.0}


def test_four_write_eight_read_leaves_the_second_client_without_messages(run) -> None:
    # List a0..a3, 400/4 = 100 each; mqAll a0..a7: C1 a0..a3 = 400, C2 a4..a7, never written = 0.
    assert _inflow(run, "four-eight") == {
        **{("broker-a", i): 100.0 for i in range(4)},
        **{("broker-a", i): 0.0 for i in range(4, 8)},
    }
    g = _group(run, "g-four-eight", "four-eight")
    assert (g.queue_count, g.idle_consumers, g.stranded_msgs_per_s) == (8, 0, 0)  # balanced in queues
    assert (g.min_msgs_per_s, g.max_msgs_per_s) == (0, 400)
    assert _clients(run, "g-four-eight") == {C1: 400.0, C2: 0.0}


def test_avoided_broker_before_5_1_4_folds_onto_the_next_queue(run) -> None:
    # List a0..a3 b0..b3 c0..c7 (16 entries, 1600/16 = 100 each). b is avoided; before 5.1.4 its
    # run of four entries folds onto the next available one, c0: 100 + 4*100 = 500 (5/16).
    expected = {
        **{("broker-a", i): 100.0 for i in range(4)},
        **{("broker-b", i): 0.0 for i in range(4)},
        ("broker-c", 0): 500.0,
        **{("broker-c", i): 100.0 for i in range(1, 8)},
    }
    assert _inflow(run, "avoid-4x") == pytest.approx(expected)


def test_avoided_broker_from_5_1_4_spreads_evenly(run) -> None:
    # From 5.1.4: 1200 over the 12 entries of a and c = 100 each, b none; plus the population
    # without fault avoidance, 1600 over all 16 = 100 each: a 200, b 100, c 200.
    expected = {
        **{("broker-a", i): 200.0 for i in range(4)},
        **{("broker-b", i): 100.0 for i in range(4)},
        **{("broker-c", i): 200.0 for i in range(8)},
    }
    assert _inflow(run, "avoid-5x") == pytest.approx(expected)


def test_a_broker_alive_only_through_its_slave_is_read_not_written(run) -> None:
    # The list has no broker-s (no master): a0..a3 get 400/4 = 100. mqAll keeps broker-s's
    # queues: C1 holds a0..a3 (400), C2 s0..s3 (nothing is written there).
    rows = run.rows("queue_traffic", "scenario = 'grow-ordered' and phase = 0 and topic = 'slave'")
    flags = {(r.broker_name, r.queue_id): (r.in_msgs_per_s, r.written, r.read) for r in rows}
    assert flags == {
        **{("broker-a", i): (100.0, True, True) for i in range(4)},
        **{("broker-s", i): (0.0, False, True) for i in range(4)},
    }
    assert _clients(run, "g-slave") == {C1: 400.0, C2: 0.0}


def test_three_keys_over_a_list_that_grows_from_8_to_12(run) -> None:
    # String.hashCode: "a" = 97, "22" = 50*31 + 50 = 1600, "k" = 107.
    # 8 queues: 97 % 8 = 1, 1600 % 8 = 0, 107 % 8 = 3.  12 queues: 97 % 12 = 1, 1600 % 12 = 4,
    # 107 % 12 = 11. "a" stays on queue 1; "22" moves 0 -> 4 and "k" moves 3 -> 11.
    before = {q: v for (_, q), v in _inflow(run, "ordered", 0).items() if v}
    after = {q: v for (_, q), v in _inflow(run, "ordered", 1).items() if v}
    assert before == pytest.approx({1: 500.0, 0: 300.0, 3: 200.0})  # shares 0.5, 0.3, 0.2 of 1000
    assert after == pytest.approx({1: 500.0, 4: 300.0, 11: 200.0})


def test_unroutable_topics_are_rejected_with_the_clients_reason(run) -> None:
    # conf-bad: the client fails on its order conf; no-writer: broker-s has no master, the list
    # is empty. 50 + 30 msgs/s nobody can send, in every phase.
    summary = run.rows("summary", "scenario = 'grow-ordered'")
    assert {r.unroutable_msgs_per_s for r in summary} == {80.0}
    reasons = {json.loads(r.row)["topic"]: r.reason for r in run.rows("rejects", "source = 'traffic'")}
    assert reasons == {
        "conf-bad": 'unroutable: the producer throws: java.lang.NumberFormatException: For input string: "x"',
        "no-writer": "unroutable: no writable queue "
        "(no QueueData with the write perm on a broker whose master is up)",
    }


def test_summary_counts_clients_that_hold_queues_but_get_no_message(run) -> None:
    # Phase 0: g-four-eight's C2 (a4..a7) and g-slave's C2 (s0..s3) hold queues nobody writes.
    (row,) = run.rows("summary", "scenario = 'grow-ordered' and phase = 0")
    assert row.clients_without_messages == 2


# ------------------------------------------------------------------ bad input

BAD_PRODUCERS = [
    {"topic": "t", "msgs_per_s": 10.0},
    {"topic": "t", "msgs_per_s": -1.0},
    {"topic": "t", "msgs_per_s": 5.0, "selector": "RANDOM"},
    {"topic": "t", "msgs_per_s": 5.0, "language": "RUST"},
    {"topic": "t", "msgs_per_s": 5.0, "version": "V9_NOT_A_VERSION"},
    {"topic": "t", "msgs_per_s": 5.0, "selector": "HASH"},
    {"topic": "nowhere", "msgs_per_s": 5.0},
]
BAD_KEYS = [
    {"topic": "t", "key": "a", "share": 1.0},
    {"topic": "t", "key": "b", "share": -0.5},
]


def test_bad_producer_rows_are_rejected_and_the_rest_runs(spark, tmp_path) -> None:
    run = simulated(
        spark,
        tmp_path,
        sink="arrow",
        tables={
            "brokers": [{"broker_name": "broker-a", "broker_id": 0}],
            "topic_queues": [_queues("t", "broker-a", 4, 4)],
            "consumers": [{"group": "g", "topic": "t", "client_id": C1}],
            "producers": BAD_PRODUCERS,
            "producer_keys": BAD_KEYS,
        },
    )
    rejected = {(r.source, r.reason) for r in run.rows("rejects") if r.source.startswith("producer")}
    reasons = " | ".join(sorted(r for _, r in rejected))
    for expected in (
        "msgs_per_s -1.0 is negative",
        "unknown selector 'RANDOM'",
        "unknown language 'RUST'",
        "unknown version",
        "topic 'nowhere' has no route",
        "share -0.5 is negative",
    ):
        assert expected in reasons
    # rows in = rows used + rows rejected, per table
    counted = {r.table: (r.rows_read, r.rows_used, r.rows_rejected) for r in run.rows("reconciliation")}
    assert counted["producers"] == (7, 2, 5)
    assert counted["producer_keys"] == (2, 1, 1)
    # The two good producers: 10 msgs/s round robin (2.5 a queue) and 5 msgs/s on key "a"
    # (hashCode 97 % 4 = 1): queue 1 gets 2.5 + 5 = 7.5.
    inflow = {r.queue_id: r.in_msgs_per_s for r in run.rows("queue_traffic")}
    assert inflow == {0: 2.5, 1: 7.5, 2: 2.5, 3: 2.5}


def test_a_rate_column_of_the_wrong_type_stops_with_table_and_column(tmp_path, capsys) -> None:
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=[{"broker_name": "broker-a", "broker_id": 0}],
        topic_queues=[_queues("t", "broker-a", 4, 4)],
        consumers=[{"group": "g", "topic": "t", "client_id": C1}],
    )
    (tmp_path / "snap" / "producers").mkdir()
    bad = pa.table({"topic": ["t"], "msgs_per_s": ["fast"]})
    pq.write_table(bad, tmp_path / "snap" / "producers" / "part-00000.parquet")
    code = main(["simulate", "--snapshot", snapshot, "--out", str(tmp_path / "out"), "--strategies", "AVG"])
    err = capsys.readouterr().err
    assert code == 2
    assert "producers" in err and "msgs_per_s" in err


def test_a_queue_is_drained_once_read_while_nobody_writes_it() -> None:
    # One queue q of topic t, phase by phase (written, read):
    #   0: (yes, yes)  1: (no, yes)  2: (no, no)  3: (yes, no)  4: (no, no)
    # drained(k) = not written(k-1) and (read(k-1) or drained(k-1)), listed where q is not read:
    #   1: written(0)                -> no
    #   2: not written(1), read(1)   -> yes, and q is not read at 2: listed
    #   3: not written(2), drained(2) -> yes: listed
    #   4: written(3)                -> no: new messages since, nobody reads them
    flags = [(True, True), (False, True), (False, False), (True, False), (False, False)]
    table = pa.table(
        {
            "scenario": ["s"] * len(flags),
            "phase": pa.array(range(len(flags)), pa.int32()),
            "topic": ["t"] * len(flags),
            "broker_name": ["broker-a"] * len(flags),
            "queue_id": pa.array([0] * len(flags), pa.int32()),
            "written": [w for w, _ in flags],
            "read": [r for _, r in flags],
        }
    )
    assert queue_traffic.drained(table)["phase"].to_pylist() == [2, 3]


def test_backlog_of_drained_tail_queues_is_not_stranded() -> None:
    # broker-a read 4 of its 8 queues; offsets give queue i a backlog of 10*i. Queues 4..7 are
    # above the read count: 40+50+60+70 = 220 stranded, less the drained 4 and 5: 60+70 = 130.
    backlogs = [{"broker_name": "broker-a", "queue_id": i, "backlog": 10 * i} for i in range(8)]
    common = dict(topic="t", group="g", brokers={"broker-a": 4}, clients=[C1], backlogs=backlogs)
    rows = [
        route(**common, phase=0),
        route(**common, phase=1, drained_queues=[("broker-a", 4), ("broker-a", 5)]),
    ]
    metrics = staged(rows).group_metrics.set_index("phase")
    assert metrics.stranded_backlog.to_dict() == {0: 220, 1: 130}


def test_a_conf_listing_a_broker_twice_sends_both_shares_to_its_queues(tmp_path) -> None:
    # Topic t reads 2 queues on each of broker-a and broker-b (mqAll a0 a1 b0 b1). Its
    # orderTopicConf "broker-a:2;broker-a:2" gives both clients the list a0 a1 a0 a1, so with
    # ROUND_ROBIN each entry gets rate/4 and each of a's queues twice that:
    #   Java 30 msgs/s + Go 10 msgs/s -> a0 = a1 = 30/2 + 10/2 = 20; b0 = b1 = 0, read, unwritten.
    from rmqsim import build
    from rmqsim.config import SimulateConfig
    from tests.builders import broker_rows, consumer_rows, queue_rows

    snapshot = make_snapshot(
        tmp_path / "snapshot",
        brokers=broker_rows("broker-a", "broker-b"),
        topic_queues=queue_rows("t", {"broker-a": 2, "broker-b": 2}),
        consumers=consumer_rows("g", "t", [C1]),
        order_topics=[{"topic": "t", "order_conf": "broker-a:2;broker-a:2"}],
        producers=[
            {"topic": "t", "producer_group": "java", "msgs_per_s": 30.0},
            {"topic": "t", "producer_group": "go", "msgs_per_s": 10.0, "language": "GO"},
        ],
    )
    built = build.build_group_routes(None, SimulateConfig(snapshot=snapshot, out=str(tmp_path / "out")))
    rows = built.traffic.queue_traffic.cast(queue_traffic.QUEUE_TRAFFIC)  # its names decoded
    rows = rows.sort_by([("broker_name", "ascending"), ("queue_id", "ascending")])
    assert [
        (r["broker_name"], r["queue_id"], r["in_msgs_per_s"], r["written"], r["read"])
        for r in rows.to_pylist()
    ] == [
        ("broker-a", 0, 20.0, True, True),
        ("broker-a", 1, 20.0, True, True),
        ("broker-b", 0, 0.0, False, True),
        ("broker-b", 1, 0.0, False, True),
    ]
    assert built.traffic.topic_inflow["queue_inflow"].to_pylist() == [[20.0, 20.0, 0.0, 0.0]]
    assert built.traffic.topic_inflow["stranded_inflow"].to_pylist() == [0.0]
