"""A deliberately broken snapshot: each kind of bad row goes to rejects/ with its documented reason,
everything else is simulated, and every table reconciles (rows read = rows used + rows rejected).
(Broken tables, a missing table or column or a wrong type, are errors: tests/test_snapshot.py.)

One snapshot holds every defect, each on rows of its own, so one simulate run checks them all.
The good group `good` (clients a, b on topic t: 4 queues on broker b) must come out untouched.
"""

from __future__ import annotations

import json

import pytest

from rmqsim.sink import KINDS as SINKS
from rmqsim.snapshot.load import load_snapshot
from tests.builders import make_snapshot
from tests.simulated import simulated


def _tq(topic, broker, read=4, write=4, perm=6) -> dict:
    return {
        "topic": topic,
        "broker_name": broker,
        "read_queue_nums": read,
        "write_queue_nums": write,
        "perm": perm,
    }


def _offset(group, topic, broker, queue_id, consumer_offset=5) -> dict:
    return {
        "group": group,
        "topic": topic,
        "broker_name": broker,
        "queue_id": queue_id,
        "broker_offset": 9,
        "consumer_offset": consumer_offset,
    }


MODELS = "expected CLUSTERING or BROADCASTING"
# (source table, reason, how many rows): the documented reason for each kind of defect.
KINDS = [
    ("brokers", "broker_name is null or empty", 1),
    (
        "brokers",
        "duplicate row for this broker_name and broker_id: the first good one (in JSON order) is used",
        1,
    ),
    ("topic_queues", "topic is null or empty", 1),
    ("topic_queues", "broker_name is null or empty", 1),
    ("topic_queues", "read_queue_nums is null", 1),
    ("topic_queues", "read_queue_nums is negative", 1),
    ("topic_queues", "read_queue_nums 70000 is more than 65535", 1),
    ("topic_queues", "write_queue_nums is negative", 1),
    ("topic_queues", "perm is null", 1),
    ("topic_queues", "perm 16 is outside 0 to 15", 1),
    ("topic_queues", "broker_name 'ghost' is not in brokers", 1),
    ("topic_queues", "duplicate row: an identical row is used", 1),
    *[
        (
            "topic_queues",
            "another row for this topic and broker_name (a NameServer keeps one QueueData per broker): "
            "the client reads the union of their queues, the readable row with the most read queues, "
            f"which is used; this one has {read} read queues and perm {perm}",
            1,
        )
        for read, perm in ((2, 6), (8, 2))
    ],
    ("groups", "group is null or empty", 1),
    ("groups", "duplicate row for this group: the first good one (in JSON order) is used", 2),
    ("groups", "unknown strategy 'FASTEST'", 1),
    ("groups", "group has no consumers in the snapshot", 1),
    ("groups", f"unknown message_model 'broadcast': {MODELS}", 1),
    ("consumers", "client_id is null or empty", 2),
    ("consumers", "group is null or empty", 1),
    ("consumers", "topic 'nowhere' has no route (no topic_queues row)", 1),
    ("consumers", "group 'weird' is not simulated: unknown strategy 'FASTEST'", 2),
    ("consumers", f"group 'modelled' is not simulated: unknown message_model 'broadcast': {MODELS}", 1),
    ("offsets", "consumer_offset is null", 2),
    ("offsets", "queue_id is negative", 1),
    ("offsets", "no such queue in topic_queues: topic 't', broker_name 'b', queue_id 4", 1),
    ("offsets", "duplicate row for this queue: the first good one (in JSON order) is used", 1),
    ("queue_config", "client_id is null or empty", 1),
    ("queue_config", "duplicate row: an identical row is used", 1),
    ("allocation", "the client throws: illegal virtualNodeCnt :-1", 1),
]


def _broken(tmp_path) -> str:
    return make_snapshot(
        tmp_path / "broken",
        brokers=[
            {"broker_name": "b", "broker_id": 0, "alive": True},
            {"broker_name": "b", "broker_id": 0, "alive": True},  # duplicate
            {"broker_name": "b", "broker_id": 1, "alive": True},  # a slave: fine
            {"broker_name": " ", "broker_id": 0, "alive": True},
        ],
        topic_queues=[
            _tq("t", "b"),
            _tq("t", "b"),  # identical duplicate
            _tq("", "b"),
            _tq("u", ""),
            _tq("v1", "b", read=None),
            _tq("v2", "b", read=-1),
            _tq("v3", "b", read=70000),
            _tq("v4", "b", write=-2),
            _tq("v5", "b", perm=None),
            _tq("v6", "b", perm=16),
            _tq("v7", "ghost"),
            # Three QueueData for one broker, which a NameServer never holds: the client's set of
            # readable queues is 0..1 with 0..5, so 0..5; the perm-2 row (write only) adds none.
            _tq("w", "b", read=2),
            _tq("w", "b", read=6),
            _tq("w", "b", read=8, perm=2),
        ],
        consumers=[
            {"group": "good", "topic": "t", "client_id": "a"},
            {"group": "good", "topic": "t", "client_id": "b"},
            {"group": "good", "topic": "t", "client_id": ""},
            {"group": "good", "topic": "t", "client_id": "\t"},  # white space, not a space
            {"group": "", "topic": "t", "client_id": "z"},
            {"group": "lost", "topic": "nowhere", "client_id": "x"},
            {"group": "weird", "topic": "t", "client_id": "w1"},
            {"group": "weird", "topic": "t", "client_id": "w2"},
            {"group": "hashy", "topic": "t", "client_id": "h1"},
            {"group": "conf", "topic": "t", "client_id": "k1"},
            {"group": "twin", "topic": "t", "client_id": "t1"},
            {"group": "modelled", "topic": "t", "client_id": "m1"},
            {"group": "merged", "topic": "w", "client_id": "j1"},
            {"group": "merged", "topic": "w", "client_id": "j2"},
        ],
        groups=[
            {"group": "good", "strategy": "AVG_BY_CIRCLE"},
            {"group": "good", "strategy": "AVG"},  # duplicate: JSON order keeps AVG ("AVG" < "AVG_")
            {"group": "", "strategy": "AVG"},
            {"group": "weird", "strategy": "FASTEST"},
            {"group": "idle", "strategy": "AVG"},  # no consumers
            {"group": "hashy", "strategy": "CONSISTENT_HASH", "virtual_node_cnt": -1},
            {"group": "conf", "strategy": "CONFIG"},
            # The bad row is first in JSON order ("AAA" < "AVG"), yet the good one is used.
            {"group": "twin", "strategy": "AAA"},
            {"group": "twin", "strategy": "AVG"},
            {"group": "modelled", "strategy": "AVG", "message_model": "broadcast"},
        ],
        queue_config=[
            {"group": "conf", "client_id": "k1", "topic": "t", "broker_name": "b", "queue_id": 0},
            {
                "group": "conf",
                "client_id": "k1",
                "topic": "t",
                "broker_name": "b",
                "queue_id": 0,
            },  # duplicate
            {"group": "conf", "client_id": None, "topic": "t", "broker_name": "b", "queue_id": 1},
        ],
        offsets=[
            _offset("good", "t", "b", 0),
            _offset("good", "t", "b", 0, consumer_offset=7),  # a second row for queue 0
            _offset("good", "t", "b", 1, consumer_offset=None),
            _offset("good", "t", "b", -1),
            _offset("good", "t", "b", 4),  # t has 4 queues on b: 0..3
            # Queue 2: a bad row first in JSON order ("broker_offset":0 < 9), then a good one, used.
            {**_offset("good", "t", "b", 2, consumer_offset=None), "broker_offset": 0},
            _offset("good", "t", "b", 2),
        ],
    )


@pytest.fixture(scope="module", params=SINKS)
def broken_run(spark, tmp_path_factory, request):
    tmp_path = tmp_path_factory.mktemp("broken")
    snapshot = _broken(tmp_path)
    done = simulated(spark, tmp_path, sink=request.param, snapshot=snapshot, strategies=None)
    out, result = str(done.out), done.result
    rejects = [(r.source, r.reason, r.row) for r in spark.read.parquet(f"{out}/rejects").collect()]
    return snapshot, out, result, rejects


@pytest.mark.parametrize(("source", "reason", "rows"), KINDS, ids=[f"{k[0]}: {k[1][:40]}" for k in KINDS])
def test_each_kind_of_bad_row_is_rejected_with_its_reason(broken_run, source, reason, rows) -> None:
    _, _, _, rejects = broken_run
    assert sum(1 for s, r, _ in rejects if (s, r) == (source, reason)) == rows


def test_nothing_else_is_rejected_and_each_reject_row_is_the_offending_row(broken_run) -> None:
    _, _, _, rejects = broken_run
    assert len(rejects) == sum(n for _, _, n in KINDS)
    rows = {reason: json.loads(row) for _, reason, row in rejects}
    assert rows["read_queue_nums 70000 is more than 65535"]["topic"] == "v3"
    assert rows["perm 16 is outside 0 to 15"]["topic"] == "v6"
    assert rows["no such queue in topic_queues: topic 't', broker_name 'b', queue_id 4"] == _offset(
        "good", "t", "b", 4
    )


def test_every_table_reconciles_and_the_good_group_still_runs(spark, broken_run) -> None:
    snapshot, out, result, rejects = broken_run
    counted = {
        r["table"]: (r["rows_read"], r["rows_used"], r["rows_rejected"]) for r in result.reconciliation
    }
    loaded = load_snapshot(spark, snapshot)
    for table, (read, used, rejected) in counted.items():
        assert read == getattr(loaded, table).num_rows, table  # counted on the input itself
        assert read == used + rejected, table
        assert rejected == sum(1 for s, _, _ in rejects if s == table), table
    assert counted == {
        "brokers": (4, 2, 2),
        "topic_queues": (14, 2, 12),
        "consumers": (14, 7, 7),
        "groups": (10, 4, 6),
        "offsets": (7, 2, 5),
        "queue_config": (3, 1, 2),
    }
    owned = spark.read.parquet(f"{out}/assignments").where("group = 'good'").collect()
    # The duplicate groups row is dropped, and the kept one (first in JSON order) says AVG: a 0 1, b 2 3.
    assert sorted((r.strategy, r.client_id, r.queue_id) for r in owned) == [
        ("AVG", "a", 0),
        ("AVG", "a", 1),
        ("AVG", "b", 2),
        ("AVG", "b", 3),
    ]
    # merged reads w's union, queues 0..5 of b; AVG over j1, j2: 6 / 2 = 3 each, in order.
    merged = spark.read.parquet(f"{out}/assignments").where("group = 'merged'").collect()
    assert sorted((r.client_id, r.queue_id) for r in merged) == [("j1", q) for q in range(3)] + [
        ("j2", q) for q in range(3, 6)
    ]
    conf = spark.read.parquet(f"{out}/assignments").where("group = 'conf'").collect()
    assert [(r.client_id, r.queue_id) for r in conf] == [("k1", 0)]
