"""Who computes a client's queues: each client with its own library's code (consumers.language).

A group that mixes libraries computes different answers on different clients; these tests work
out by hand which queues end up read twice or by nobody, and round-trip the Go client's
conformance records through a real snapshot and Spark.
"""

from __future__ import annotations

import numpy as np
from chispa import assert_df_equality

from rmqsim import simulate
from rmqsim.config import SimulateConfig
from rmqsim.strategies.batch import RMQSIM_REFUSES
from tests.builders import Staged, make_snapshot, route, staged
from tests.conformance import records


def _clients(**kw) -> Staged:
    return staged([route(**kw)])


def _owned(run: Staged) -> dict[str, list[int]]:
    """The queue ids each client that holds a queue holds, in returned order."""
    return {r.client_id: [q["queue_id"] for q in r.owned] for r in run.lists.itertuples()}


def test_two_java_clients_and_one_go_client_on_consistent_hash() -> None:
    # Topic t, broker b with queues 0..5, clients a (JAVA), b (GO), c (JAVA), one virtual node each.
    # Java's ring (MD5 of "a-0", "b-0", "c-0": 2707812305, 888299375, 1675877464; a queue goes to
    # the first node >= MD5("MessageQueue [topic=t, brokerName=b, queueId=N]")):
    #   q0 1143333663 -> c, q1 3733635559 -> b (wraps), q2 2415092970 -> a, q3 2652530574 -> a,
    #   q4 405589498 -> b, q5 152257695 -> b.
    # Go's ring (CRC-32 of "0a", "0b", "0c": 2754246082, 1025713272, 1243878638; a queue goes to
    # the first node > CRC-32 of the same key):
    #   q0 3347288975 -> b (wraps), q1 3734545102 -> b, q2 4122341645 -> b, q3 3970875468 -> b,
    #   q4 2750371467 -> a, q5 3136579530 -> b.
    # Each client keeps its own library's share: a {2, 3}, c {0} (Java), b {0, 1, 2, 3, 5} (Go).
    # Read twice: q0 (c, b), q2 and q3 (a, b); read by nobody: q4 (Java gives it to b, Go to a).
    rows = _clients(
        brokers={"b": 6},
        clients=["a", "b", "c"],
        client_languages=["JAVA", "GO", "JAVA"],
        strategies=["CONSISTENT_HASH"],
        virtual_node_cnt=1,
    )
    assert _owned(rows) == {"a": [2, 3], "b": [0, 1, 2, 3, 5], "c": [0]}
    first = rows.group_metrics.iloc[0]
    assert (first.multi_owned_queues, first.unassigned_queues) == (3, 1)
    assert dict(zip(rows.lists.client_id, rows.lists.computed_by)) == {
        "a": "client JAVA",
        "b": "client GO",
        "c": "client JAVA",
    }


def test_a_cpp_client_runs_avg_whatever_the_group_names() -> None:
    # Four queues, clients a (JAVA) and b (CPP), the group names AVG_BY_CIRCLE.
    # a, index 0, deals in turn: queues 0 and 2. b's library knows only AVG: index 1 of 2 gets the
    # second block, queues 2 and 3. Queue 2 is read twice, queue 1 by nobody.
    rows = _clients(
        brokers={"b": 4}, clients=["a", "b"], client_languages=["JAVA", "CPP"], strategies=["AVG_BY_CIRCLE"]
    )
    assert _owned(rows) == {"a": [0, 2], "b": [2, 3]}
    first = rows.group_metrics.iloc[0]
    assert (first.multi_owned_queues, first.unassigned_queues) == (1, 1)


def test_a_library_rmqsim_does_not_simulate_is_reported_and_the_others_still_compute() -> None:
    # AVG over 4 queues and clients a (null language: JAVA) and b (RUST): a, index 0 of 2, computes
    # its block 0, 1; b's share (2, 3) is nobody's, and the group says why.
    rows = _clients(brokers={"b": 4}, clients=["a", "b"], client_languages=[None, "RUST"], strategies=["AVG"])
    assert _owned(rows) == {"a": [0, 1]}  # b holds nothing
    first = rows.group_metrics.iloc[0]
    assert first.error.startswith(RMQSIM_REFUSES) and "consumers.language 'RUST'" in first.error
    assert first.unassigned_queues == 2
    assert rows.lists.set_index("client_id").computed_by.to_dict() == {"a": "client JAVA"}
    assert rows.consumer_load.set_index("client_id").queues.to_dict() == {"a": 2, "b": 0}


GO_FILES = ("GO_AVG", "GO_AVG_BY_CIRCLE", "GO_CONSISTENT_HASH", "GO_MACHINE_ROOM", "GO_MACHINE_ROOM_NEARBY")
PER_FILE = 60


def _route_of(queues: list) -> dict[str, int] | None:
    """The read counts a topic route needs for exactly these queues (0..n-1 per broker), or None."""
    ids: dict[str, set[int]] = {}
    for b, q in queues:
        ids.setdefault(b, set()).add(q)
    if any(found != set(range(len(found))) for found in ids.values()):
        return None
    return {b: len(found) for b, found in ids.items()}


def _picked() -> list[dict]:
    picked, topics = [], set()
    for name in GO_FILES:
        chosen = []
        for r in records(name):
            if r["queues"] is None or r["consumers"] is None or _route_of(r["queues"]) is None:
                continue  # no snapshot holds a gap in a broker's queue ids
            if r["strategy"] == "CONSISTENT_HASH" and r["topic"] in topics:
                continue  # the ring hashes the topic name, and a topic has one route
            topics.add(r["topic"])
            chosen.append(r)
        assert len(chosen) >= 50, name
        picked += chosen[:PER_FILE]
    return picked


def test_go_records_round_trip_through_spark(spark, tmp_path, sink) -> None:
    recs = _picked()
    brokers, topic_queues, consumers, groups, expected = set(), [], [], [], set()
    for r in recs:
        topic = r["topic"] if r["strategy"] == "CONSISTENT_HASH" else f"{r['topic']}~{r['case_id']}"
        group = f"cg~{r['case_id']}"
        for b, n in _route_of(r["queues"]).items():
            brokers.add(b)
            topic_queues.append(
                {"topic": topic, "broker_name": b, "read_queue_nums": n, "write_queue_nums": n, "perm": 6}
            )
        consumers += [
            {"group": group, "topic": topic, "client_id": c, "language": "GO"} for c in r["consumers"]
        ]
        params = r.get("params") or {}
        groups.append(
            {
                "group": group,
                "strategy": r["strategy"],
                "virtual_node_cnt": params.get("virtual_node_cnt", 10),
                "consumer_idcs": params.get("consumer_idcs"),
            }
        )
        expected |= {
            (topic, group, cid, b, q) for cid, owned in r["assignment"].items() for b, q in owned or []
        }
    snapshot = make_snapshot(
        tmp_path / "snapshot",
        brokers=[{"broker_name": b} for b in sorted(brokers)],
        topic_queues=topic_queues,
        consumers=consumers,
        groups=groups,
    )
    out = str(tmp_path / "out")
    simulate.run(spark, SimulateConfig(sink=sink, snapshot=snapshot, out=out, strategies=None))

    assignments = spark.read.parquet(f"{out}/assignments")
    got = assignments.select("topic", "group", "client_id", "broker_name", "queue_id")
    want = spark.createDataFrame(
        sorted(expected), "topic string, group string, client_id string, broker_name string, queue_id int"
    )
    assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)
    assert {r.computed_by for r in assignments.select("computed_by").distinct().collect()} == {"client GO"}
    assert spark.read.parquet(f"{out}/rejects").count() == 0
    assert np.unique([r["strategy"] for r in recs]).tolist() == sorted(
        ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY"]
    )


def test_a_mixed_group_is_told_what_one_library_would_give() -> None:
    # The Java/Go CONSISTENT_HASH group above: 3 queues read twice and 1 by nobody. With every
    # client on Java's code, each queue has exactly its Java ring owner (q0 c, q1 b, q2 a, q3 a,
    # q4 b, q5 b): none read twice, none by nobody. An all-Java group gets no such figure.
    rows = _clients(
        brokers={"b": 6},
        clients=["a", "b", "c"],
        client_languages=["JAVA", "GO", "JAVA"],
        strategies=["CONSISTENT_HASH"],
        virtual_node_cnt=1,
    )
    first = rows.group_metrics.iloc[0]
    assert (first.multi_owned_queues, first.unassigned_queues) == (3, 1)
    assert (first.one_library_multi_owned, first.one_library_unassigned) == (0, 0)
    java = _clients(brokers={"b": 6}, clients=["a", "b"], strategies=["CONSISTENT_HASH"], virtual_node_cnt=1)
    assert np.isnan(java.group_metrics.iloc[0].one_library_multi_owned)
