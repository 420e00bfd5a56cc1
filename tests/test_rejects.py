"""Bad rows go to rejects/ with a precise reason; every other group is still simulated, and
rows in = rows used + rows rejected for every table."""

from __future__ import annotations

import json
from collections import Counter

from rmqsim.snapshot.checks import check_snapshot
from rmqsim.snapshot.load import load_snapshot
from tests.builders import broker_rows, consumer_rows, make_snapshot, queue_rows
from tests.simulated import simulated


def _snapshot(tmp_path) -> str:
    return make_snapshot(
        tmp_path / "snapshot",
        brokers=broker_rows("b") + [{"broker_name": "", "broker_id": 0, "alive": True}],
        topic_queues=queue_rows("t", {"b": 4})
        + queue_rows("ghost-topic", {"ghost": 2})  # broker not in brokers
        + [{"topic": "neg", "broker_name": "b", "read_queue_nums": -1, "write_queue_nums": 1, "perm": 6}],
        consumers=consumer_rows("good", "t", ["a", "b"])
        + consumer_rows("good", "t", [""])  # empty client id
        + consumer_rows("lost", "no-such-topic", ["x"])
        + consumer_rows("hashy", "t", ["h1", "h2"])  # the client throws for this group
        + consumer_rows("ringy", "t", ["r1", "r2"])  # a mistyped virtual node count: rmqsim refuses
        + consumer_rows("weird", "t", ["w1", "w2"]),
        groups=[
            {"group": "good", "strategy": "avg_by_circle"},  # names are case-insensitive
            {"group": "hashy", "strategy": "CONSISTENT_HASH", "virtual_node_cnt": -1},
            {"group": "ringy", "strategy": "CONSISTENT_HASH", "virtual_node_cnt": 2_000_000_000},
            {"group": "weird", "strategy": "FASTEST"},
        ],
        offsets=[
            {
                "group": "good",
                "topic": "t",
                "broker_name": "b",
                "queue_id": q,
                "broker_offset": 9,
                "consumer_offset": 4,
            }
            for q in range(4)
        ]
        + [
            {
                "group": "good",
                "topic": "t",
                "broker_name": "b",
                "queue_id": 0,
                "broker_offset": 9,
                "consumer_offset": None,
            }
        ],
    )


EXPECTED = {
    ("brokers", "broker_name is null or empty"),
    ("topic_queues", "broker_name 'ghost' is not in brokers"),
    ("topic_queues", "read_queue_nums is negative"),
    ("consumers", "client_id is null or empty"),
    ("consumers", "topic 'no-such-topic' has no route (no topic_queues row)"),
    ("groups", "unknown strategy 'FASTEST'"),
    ("consumers", "group 'weird' is not simulated: unknown strategy 'FASTEST'"),
    ("offsets", "consumer_offset is null"),
    # an input that is valid but on which the real client throws: reported, not simulated
    ("allocation", "the client throws: illegal virtualNodeCnt :-1"),
    # 4,000,000,000 MD5s would exhaust the worker: reported as rmqsim's limit, not the client's error
    (
        "allocation",
        "rmqsim does not simulate a ring of more than 10,000,000 nodes: "
        "virtualNodeCnt 2000000000 for 2 clients is 4,000,000,000",
    ),
}


def test_each_bad_row_is_rejected_with_its_reason(spark, tmp_path, sink) -> None:
    out = str(simulated(spark, tmp_path, sink=sink, snapshot=_snapshot(tmp_path), strategies=None).out)
    rejects = spark.read.parquet(f"{out}/rejects").collect()
    assert {(r.source, r.reason) for r in rejects} == EXPECTED
    assert len(rejects) == 11  # weird has two clients
    rows = {r.reason: json.loads(r.row) for r in rejects}
    assert rows["read_queue_nums is negative"]["topic"] == "neg"
    assert rows["the client throws: illegal virtualNodeCnt :-1"] == {
        "scenario": "baseline",
        "phase": 0,
        "topic": "t",
        "group": "hashy",
        "strategy": "CONSISTENT_HASH",
    }

    # the good group still runs, with its configured strategy, over the two valid clients
    owned = spark.read.parquet(f"{out}/assignments").collect()
    assert {(r.strategy, r.group, r.client_id, r.queue_id) for r in owned} == {
        ("AVG_BY_CIRCLE", "good", "a", 0),
        ("AVG_BY_CIRCLE", "good", "b", 1),
        ("AVG_BY_CIRCLE", "good", "a", 2),
        ("AVG_BY_CIRCLE", "good", "b", 3),
    }


def test_rows_in_equal_rows_used_plus_rows_rejected(spark, tmp_path) -> None:
    snapshot = load_snapshot(spark, _snapshot(tmp_path))
    checked = check_snapshot(snapshot, configured_strategies=True)
    rejected = Counter(checked.rejects["source"].to_pylist())
    for table in ("brokers", "topic_queues", "consumers", "groups", "offsets"):
        rows_in = getattr(snapshot, table).num_rows
        used = getattr(checked.snapshot, table).num_rows
        assert rows_in == used + rejected.get(table, 0), table
    assert rejected == {"brokers": 1, "topic_queues": 2, "consumers": 4, "groups": 1, "offsets": 1}


def test_strategies_all_ignores_the_configured_names(spark, tmp_path) -> None:
    snapshot = load_snapshot(spark, _snapshot(tmp_path))
    checked = check_snapshot(snapshot, configured_strategies=False)
    reasons = set(checked.rejects["reason"].to_pylist())
    assert not any("strategy" in reason for reason in reasons)
    assert checked.snapshot.consumers.num_rows == 8  # good a, b; hashy h1, h2; ringy r1, r2; weird w1, w2


def test_compared_strategies_skip_groups_without_their_configuration(spark, tmp_path, sink) -> None:
    # No queue_config, no consumer_idcs, no machine rooms: with every strategy asked for, the three
    # that read them are skipped for the (topic, group), each with a reject row saying why.
    snapshot = make_snapshot(
        tmp_path / "s",
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 4}),
        consumers=consumer_rows("g", "t", ["x", "y"]),
    )
    strategies = ("AVG", "CONFIG", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY", "CONSISTENT_HASH")
    out = str(simulated(spark, tmp_path, sink=sink, snapshot=snapshot, strategies=strategies).out)
    rejects = {
        (json.loads(r.row)["strategy"], r.reason) for r in spark.read.parquet(f"{out}/rejects").collect()
    }
    assert rejects == {
        ("CONFIG", "CONFIG needs queue_config rows for the group's clients on this topic"),
        ("MACHINE_ROOM", "MACHINE_ROOM needs groups.consumer_idcs"),
        ("MACHINE_ROOM_NEARBY", "MACHINE_ROOM_NEARBY needs a machine_room for every broker and client"),
    }
    ran = {r.strategy for r in spark.read.parquet(f"{out}/group_metrics").collect()}
    assert ran == {"AVG", "CONSISTENT_HASH"}
