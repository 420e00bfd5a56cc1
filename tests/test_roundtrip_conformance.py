"""Conformance records written as a real snapshot, simulated by Spark, read back from assignments/.

Each record becomes its own topic (records reuse topic names with different routes) and group, with
the record's strategy configured in the groups table, so `--strategies configured` is exercised too.
Records that no snapshot can express are left out, each for a stated reason.
"""

from __future__ import annotations

from chispa import assert_df_equality
from pyspark.sql import functions as F

from rmqsim import simulate
from rmqsim.config import SimulateConfig
from tests.conformance import records
from tests.conftest import make_snapshot

PER_STRATEGY = 80


def _expressible(r: dict) -> bool:
    return (
        "assignment" in r  # single-call records have no group to simulate
        and "route" in r  # the queues must come from a route a snapshot can hold
        and r["presorted"]  # the simulator sorts mqAll and cidAll as RebalanceImpl does
        and len(set(r["consumers"])) == len(r["consumers"])  # duplicates: covered in test_metrics
        and not r.get("errors")
    )


def _picked() -> list[dict]:
    picked = []
    for name in ("AVG", "AVG_BY_CIRCLE"):
        recs = [r for r in records(name) if _expressible(r)]
        large = [r for r in recs if r["kind"] == "large"][:10]
        rest = [r for r in recs if r["kind"] != "large"][: PER_STRATEGY - len(large)]
        assert len(large) + len(rest) >= 50
        picked += large + rest
    return picked


def test_conformance_records_round_trip_through_spark(spark, tmp_path) -> None:
    recs = _picked()
    brokers, topic_queues, consumers, groups, expected = set(), [], [], [], []
    for r in recs:
        topic, group = f"{r['topic']}~{r['case_id']}", f"cg~{r['case_id']}"
        for qd in r["route"]["queueDatas"]:
            brokers.add(qd["brokerName"])
            topic_queues.append(
                {
                    "topic": topic,
                    "broker_name": qd["brokerName"],
                    "read_queue_nums": qd["readQueueNums"],
                    "write_queue_nums": qd["writeQueueNums"],
                    "perm": qd["perm"],
                }
            )
        consumers += [{"group": group, "topic": topic, "client_id": c} for c in r["consumers"]]
        groups.append({"group": group, "strategy": r["strategy"]})
        expected += [
            (r["strategy"], topic, group, cid, b, q)
            for cid, owned in r["assignment"].items()
            for b, q in owned
        ]
    snapshot = make_snapshot(
        tmp_path / "snapshot",
        brokers=[{"broker_name": b} for b in sorted(brokers)],  # alive and broker_id: defaults
        topic_queues=topic_queues,
        consumers=consumers,
        groups=groups,
    )
    out = str(tmp_path / "out")
    simulate.run(spark, SimulateConfig(snapshot=snapshot, out=out, strategies=None))

    got = spark.read.parquet(f"{out}/assignments").select(
        "strategy", "topic", "group", "client_id", "broker_name", "queue_id"
    )
    want = spark.createDataFrame(
        expected,
        "strategy string, topic string, group string, client_id string, broker_name string, queue_id int",
    )
    assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)
    assert spark.read.parquet(f"{out}/rejects").count() == 0
    assert got.select(F.countDistinct("group")).first()[0] == len(recs) >= 100
