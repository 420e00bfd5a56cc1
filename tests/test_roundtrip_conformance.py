"""Conformance records of every strategy written as one real snapshot, simulated by Spark with
each group's configured strategy, and read back from assignments/.

Each record becomes its own group, and its own topic where the topic name does not matter.
CONSISTENT_HASH hashes the topic name, so its records keep theirs, one record per name (a topic
has one route). MACHINE_ROOM_NEARBY takes broker rooms from the brokers table, which one
snapshot holds once, so its records are picked where their rooms agree. Records that no snapshot
can express are left out, each for a stated reason.
"""

from __future__ import annotations

from chispa import assert_df_equality
from pyspark.sql import functions as F

from rmqsim import simulate
from rmqsim.config import SimulateConfig
from tests.builders import make_snapshot
from tests.conformance import records, resolve

PER_STRATEGY = 60
STRATEGIES = ("AVG", "AVG_BY_CIRCLE", "CONFIG", "CONSISTENT_HASH", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY")


def _expressible(r: dict) -> bool:
    return (
        "assignment" in r  # single-call records have no group to simulate
        and "route" in r  # the queues must come from a route a snapshot can hold
        and r["presorted"]  # the simulator sorts mqAll and cidAll as RebalanceImpl does
        and len(set(r["consumers"])) == len(r["consumers"])  # duplicates: covered in test_metrics
        and not r.get("errors")  # throwing groups: covered in test_rejects and test_metrics
        and r["kind"] != "edge"
    )


class Picker:
    """Chooses records that can share one snapshot."""

    def __init__(self) -> None:
        self.topics: set[str] = set()
        self.broker_rooms: dict[str, str | None] = {}

    def accept(self, r: dict) -> bool:
        if r["strategy"] == "CONSISTENT_HASH":
            if r["topic"] in self.topics:
                return False
            self.topics.add(r["topic"])
        if r["strategy"] == "MACHINE_ROOM_NEARBY":
            spec = r["params"]["resolver"]
            rooms = {b: resolve(spec["broker"], b) for b, _ in r["queues"]}
            clients = [resolve(spec["consumer"], c) for c in r["consumers"]]
            if not all(rooms.values()) or not all(clients):
                return False  # the client throws: not an allocation
            if any(self.broker_rooms.get(b, room) != room for b, room in rooms.items()):
                return False
            self.broker_rooms.update(rooms)
        return True


def _picked() -> tuple[list[dict], Picker]:
    picker, picked = Picker(), []
    for name in STRATEGIES:
        chosen = [r for r in records(name) if _expressible(r) and picker.accept(r)][:PER_STRATEGY]
        assert len(chosen) >= 50, name
        picked += chosen
    return picked, picker


def _topic(r: dict) -> str:
    return r["topic"] if r["strategy"] == "CONSISTENT_HASH" else f"{r['topic']}~{r['case_id']}"


def _group_row(r: dict, group: str) -> dict:
    row: dict = {"group": group, "strategy": r["strategy"]}
    params = r["params"]
    if r["strategy"] == "CONSISTENT_HASH":
        row["virtual_node_cnt"] = 10 if params["ctor"] == "default" else params["virtualNodeCnt"]
    if r["strategy"] == "MACHINE_ROOM":
        row["consumer_idcs"] = params["consumeridcs"]
    if r["strategy"] == "MACHINE_ROOM_NEARBY":
        row["inner_strategy"] = params["inner"]
    return row


def test_conformance_records_round_trip_through_spark(spark, tmp_path, sink) -> None:
    recs, picker = _picked()
    brokers, topic_queues, consumers, groups, config, expected = set(), [], [], [], [], set()
    for r in recs:
        topic, group = _topic(r), f"cg~{r['case_id']}"
        for qd in r["route"]["queueDatas"]:
            brokers.add(qd["brokerName"])
            row = {
                "topic": topic,
                "broker_name": qd["brokerName"],
                "read_queue_nums": qd["readQueueNums"],
                "write_queue_nums": qd["writeQueueNums"],
                "perm": qd["perm"],
            }
            if row not in topic_queues:
                topic_queues.append(row)
        resolver = r["params"].get("resolver")
        consumers += [
            {
                "group": group,
                "topic": topic,
                "client_id": c,
                "machine_room": resolver and resolve(resolver["consumer"], c),
            }
            for c in r["consumers"]
        ]
        groups.append(_group_row(r, group))
        if r["strategy"] == "CONFIG":
            # One row per configured queue (docs/CONTRACT.md: a row per (group, client_id, topic, broker_name,
            # queue_id)): a list that names a queue twice gives one row, since a repeated row is
            # rejected. The client ends the same way: RebalanceImpl collects the list into a set.
            config += [
                {"group": group, "client_id": c, "topic": topic, "broker_name": b, "queue_id": q}
                for c in r["consumers"]
                for b, q in dict.fromkeys(map(tuple, r["params"]["messageQueueList"] or []))
            ]
        expected |= {
            (r["strategy"], topic, group, cid, b, q)
            for cid, owned in r["assignment"].items()
            for b, q in owned or []
        }
    snapshot = make_snapshot(
        tmp_path / "snapshot",
        brokers=[{"broker_name": b, "machine_room": picker.broker_rooms.get(b)} for b in sorted(brokers)],
        topic_queues=topic_queues,
        consumers=consumers,
        groups=groups,
        queue_config=config,
    )
    out = str(tmp_path / "out")
    simulate.run(spark, SimulateConfig(sink=sink, snapshot=snapshot, out=out, strategies=None))

    got = spark.read.parquet(f"{out}/assignments").select(
        "strategy", "topic", "group", "client_id", "broker_name", "queue_id"
    )
    want = spark.createDataFrame(
        sorted(expected),
        "strategy string, topic string, group string, client_id string, broker_name string, queue_id int",
    )
    assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)
    assert spark.read.parquet(f"{out}/rejects").count() == 0
    per_strategy = {
        r.strategy: r["count"]
        for r in got.groupBy("strategy").agg(F.countDistinct("group").alias("count")).collect()
    }
    assert set(per_strategy) == set(STRATEGIES)
