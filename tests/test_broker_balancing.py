"""Who computes the assignment: the broker (groups.rebalance broker, clientRebalance off).

Worked by hand from QueryAssignmentProcessor's rules, and the broker's conformance records
round-tripped through a real snapshot and Spark.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import zlib

import pyarrow as pa
import pytest
from chispa import assert_df_equality

from rmqsim import simulate
from rmqsim.config import SimulateConfig
from rmqsim.errors import InputError
from rmqsim.snapshot.load import load_snapshot
from rmqsim.strategies.broker import ANSWERS_NULL
from tests.builders import Staged, broker_rows, consumer_rows, make_snapshot, queue_rows, route, staged
from tests.conformance import records
from tests.simulated import whole

BROKER = {"rebalance": "BROKER", "pop": False, "pop_share_queue_num": -1, "consume_orderly": False}
POP_SHARE_1 = {**BROKER, "pop": True, "pop_share_queue_num": 1}
CLIENT = {**BROKER, "rebalance": "CLIENT"}


def _clients(rows: list[dict]) -> Staged:
    return staged(rows)


def _owned(run: Staged, group: str | None = None) -> dict[tuple[int, str], list[tuple[str, int]]]:
    """What each client that holds a queue holds, by (phase, client), in returned order."""
    lists = run.lists if group is None else run.lists[run.lists.group == group]
    return {
        (r.phase, r.client_id): [(q["broker_name"], q["queue_id"]) for q in r.owned]
        for r in lists.itertuples()
    }


def _first(run: Staged, **where: object):
    """The group_metrics row with ``where``'s values."""
    rows = run.group_metrics
    for column, value in where.items():
        rows = rows[rows[column] == value]
    return rows.iloc[0]


def test_pop_with_pop_share_queue_num_1_shares_every_queue_between_two_clients() -> None:
    # AVG over 5 queues and c0..c3: c0 {0, 1}, c1 {2}, c2 {3}, c3 {4}. POP with
    # pop_share_queue_num 1 (0 < 1 < 4 - 1, and 4 clients <= 5 queues): each client gets its own
    # share and the next client's: c0 {0, 1, 2}, c1 {2, 3}, c2 {3, 4}, c3 {4, 0, 1}.
    # Readers: q0 c0 c3, q1 c0 c3, q2 c0 c1, q3 c1 c2, q4 c2 c3: every queue read by two, by
    # design, so 5 shared queues and none multi-owned; each reader gets 1/2 of a queue's messages:
    # c0 3 x 1/2 = 1.5, c1 1.0, c2 1.0, c3 1.5 (min 1.0, max 1.5, mean 1.25).
    rows = _clients(
        [route(brokers={"b": 5}, clients=["c0", "c1", "c2", "c3"], strategies=["AVG"], balancing=POP_SHARE_1)]
    )
    owned = {c: sorted(q for _, q in qs) for (_, c), qs in _owned(rows).items()}
    assert owned == {"c0": [0, 1, 2], "c1": [2, 3], "c2": [3, 4], "c3": [0, 1, 4]}
    first = _first(rows)
    assert (first.shared_queues, first.multi_owned_queues, first.unassigned_queues) == (5, 0, 0)
    assert (first.min_message_share, first.max_message_share, first.mean_message_share) == (1.0, 1.5, 1.25)
    assert dict(zip(rows.consumer_load.client_id, rows.consumer_load.message_share)) == {
        "c0": 1.5,
        "c1": 1.0,
        "c2": 1.0,
        "c3": 1.5,
    }
    assert set(rows.lists.computed_by) == {"broker POP"}


def test_pop_reading_everything_gets_one_queue_per_broker_and_reads_all_of_them() -> None:
    # pop_share_queue_num 0: every client gets (broker, -1) for each broker of mqAll, and pops from
    # every queue: brokers a (2 queues) and b (3): each of the 2 clients reads all 5, 1/2 each.
    pop_all = {**BROKER, "pop": True, "pop_share_queue_num": 0}
    rows = _clients(
        [route(brokers={"a": 2, "b": 3}, clients=["c0", "c1"], strategies=["AVG"], balancing=pop_all)]
    )
    assert _owned(rows) == {(0, "c0"): [("a", -1), ("b", -1)], (0, "c1"): [("a", -1), ("b", -1)]}
    load = rows.consumer_load
    assert list(load.queues) == [5, 5] and list(load.message_share) == [2.5, 2.5]
    first = _first(rows)
    assert (first.shared_queues, first.multi_owned_queues) == (5, 0)


def test_a_null_answer_keeps_the_previous_phase_and_nothing_in_phase_0() -> None:
    # CONSISTENT_HASH, which the broker does not have. Phase 0: the clients balance themselves
    # (Java's ring over 4 queues: c0 {2, 3}, c1 {0, 1}). Phase 1: the broker balances and answers
    # null, so each keeps its phase 0 queues. Phase 2: a fifth queue appears, and nobody reads it.
    # A group on the broker from phase 0 holds nothing.
    rows = _clients(
        [
            route(
                brokers={"b": 4},
                clients=["c0", "c1"],
                strategies=["CONSISTENT_HASH"],
                balancing=CLIENT,
                phase=0,
            ),
            route(
                brokers={"b": 4},
                clients=["c0", "c1"],
                strategies=["CONSISTENT_HASH"],
                balancing=BROKER,
                phase=1,
            ),
            route(
                brokers={"b": 5},
                clients=["c0", "c1"],
                strategies=["CONSISTENT_HASH"],
                balancing=BROKER,
                phase=2,
            ),
            route(
                group="h", brokers={"b": 2}, clients=["d"], strategies=["CONSISTENT_HASH"], balancing=BROKER
            ),
        ]
    )
    owned = _owned(rows, "g")
    for phase in (1, 2):
        assert owned[(phase, "c0")] == owned[(0, "c0")] and owned[(phase, "c1")] == owned[(0, "c1")]
    assert sorted(q for c in ("c0", "c1") for _, q in owned[(0, c)]) == [0, 1, 2, 3]
    kept = rows.lists[(rows.lists.group == "g") & (rows.lists.phase > 0)]
    assert set(kept.computed_by) == {"broker kept"}
    last = _first(rows, group="g", phase=2)
    assert last.unassigned_queues == 1 and last.error.startswith(ANSWERS_NULL)
    assert _owned(rows, "h") == {} and _first(rows, group="h").unassigned_queues == 2


def test_orderly_and_broadcasting_groups_still_balance_on_the_client() -> None:
    orderly = {**BROKER, "consume_orderly": True}
    rows = _clients(
        [route(brokers={"b": 2}, clients=["c0", "c1"], strategies=["CONSISTENT_HASH"], balancing=orderly)]
    )
    assert set(rows.lists.computed_by) == {"client JAVA"} and _first(rows).unassigned_queues == 0


def test_unknown_rebalance_and_request_mode_are_rejected_and_the_others_run(spark, tmp_path, sink) -> None:
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 4}),
        consumers=consumer_rows("g1", "t", ["a"])
        + consumer_rows("g2", "t", ["a"])
        + consumer_rows("g3", "t", ["a"]),
        groups=[
            {"group": "g1", "rebalance": "server"},
            {"group": "g2", "rebalance": "broker", "request_mode": "PUSH"},
            {"group": "g3", "rebalance": " Broker ", "request_mode": "pop", "pop_share_queue_num": 0},
        ],
    )
    out = str(tmp_path / "out")
    simulate.run(spark, SimulateConfig(sink=sink, snapshot=snapshot, out=out, strategies=None))
    rejects = {
        (r.source, json.loads(r.row)["group"]): r.reason for r in whole(spark, out, "rejects").collect()
    }
    assert rejects[("groups", "g1")] == "unknown rebalance 'server': expected client, broker or proxy"
    assert rejects[("groups", "g2")] == "unknown request_mode 'PUSH': expected PULL or POP"
    assert ("consumers", "g1") in rejects and ("consumers", "g2") in rejects
    got = whole(spark, out, "assignments").collect()
    assert {(r.group, r.broker_name, r.queue_id, r.computed_by) for r in got} == {
        ("g3", "b", -1, "broker POP")
    }


def test_a_pop_share_queue_num_of_the_wrong_type_stops_the_run(spark, tmp_path) -> None:
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 4}),
        consumers=consumer_rows("g", "t", ["a"]),
        groups=[{"group": "g", "rebalance": "broker"}],
    )
    # Rewrite groups with a string pop_share_queue_num.
    import pyarrow.parquet as pq

    groups = pa.table({"group": ["g"], "rebalance": ["broker"], "pop_share_queue_num": ["two"]})
    pq.write_table(groups, f"{snapshot}/groups/part-00000.parquet")
    with pytest.raises(InputError, match="groups.pop_share_queue_num"):
        load_snapshot(spark, snapshot)


PER_MODE = 60


def _picked() -> list[dict]:
    chosen: dict[str, list[dict]] = {"PULL": [], "POP": []}
    for r in records("BROKER"):
        if not r["server_load_balancer_enable"]:
            continue  # a broker setting the contract does not model
        ids: dict[str, set[int]] = {}
        for b, q in r["queues"]:
            ids.setdefault(b, set()).add(q)
        if any(found != set(range(len(found))) for found in ids.values()):
            continue  # no snapshot holds a gap in a broker's queue ids
        chosen[r["mode"]].append(r)
    assert all(len(c) >= 50 for c in chosen.values())
    return chosen["PULL"][:PER_MODE] + chosen["POP"][:PER_MODE]


def test_broker_records_round_trip_through_spark(spark, tmp_path, sink) -> None:
    recs = _picked()
    brokers, topic_queues, consumers, groups, expected = set(), [], [], [], set()
    for r in recs:
        topic, group = f"{r['topic']}~{r['case_id']}", f"cg~{r['case_id']}"
        counts: dict[str, int] = {}
        for b, q in r["queues"]:
            counts[b] = max(counts.get(b, 0), q + 1)
        for b, n in counts.items():
            brokers.add(b)
            topic_queues += queue_rows(topic, {b: n})
        consumers += consumer_rows(group, topic, r["consumers"])
        groups.append(
            {
                "group": group,
                "strategy": r["strategy"],
                "rebalance": "broker",
                "request_mode": r["mode"],
                "pop_share_queue_num": r["pop_share_queue_num"],
            }
        )
        # A null answer in phase 0: the client holds nothing.
        expected |= {(topic, group, c, b, q) for c, owned in r["assignment"].items() for b, q in owned or []}
    snapshot = make_snapshot(
        tmp_path / "snapshot",
        brokers=broker_rows(*sorted(brokers)),
        topic_queues=topic_queues,
        consumers=consumers,
        groups=groups,
    )
    out = str(tmp_path / "out")
    simulate.run(spark, SimulateConfig(sink=sink, snapshot=snapshot, out=out, strategies=None))
    got = whole(spark, out, "assignments").select("topic", "group", "client_id", "broker_name", "queue_id")
    want = spark.createDataFrame(
        sorted(expected), "topic string, group string, client_id string, broker_name string, queue_id int"
    )
    # The broker answers a Set: rows, not their order, are what it means.
    assert_df_equality(got.distinct(), want, ignore_row_order=True, ignore_nullable=True)
    assert got.count() == got.distinct().count()


SCENARIOS = """
scenarios:
  - name: idle-to-pop
    steps:
      - set_rebalance: {group: g, rebalance: broker, request_mode: POP, pop_share_queue_num: 1}
  - name: go-joins
    steps:
      - consumers_join: {group: h, client_ids: ["z@1"], language: go}
"""


def test_set_rebalance_and_a_go_client_joining_through_scenarios(spark, tmp_path, sink) -> None:
    # g: AVG, 3 queues, 5 clients: c0..c2 one queue each, c3 and c4 idle. After set_rebalance to
    # POP with pop_share_queue_num 1 (5 clients > 3 queues): client i reads mqAll[i % 3]: c0 q0,
    # c1 q1, c2 q2, c3 q0, c4 q1: nobody idle; q0 and q1 are shared by two, by design; their
    # reader sets changed (q2's did not): 2 moved.
    scenarios = tmp_path / "scenarios.yml"
    scenarios.write_text(SCENARIOS)
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 3}),
        consumers=consumer_rows("g", "t", [f"c{i}" for i in range(5)]) + consumer_rows("h", "t", ["a@1"]),
        groups=[{"group": "g", "strategy": "AVG"}, {"group": "h", "strategy": "CONSISTENT_HASH"}],
    )
    out = tmp_path / "out"
    simulate.run(
        spark,
        SimulateConfig(sink=sink, snapshot=snapshot, out=str(out), strategies=None, scenarios=str(scenarios)),
    )
    metrics = {
        (r.scenario, r.phase, r.group): r
        for r in whole(spark, out, "group_metrics").where("topic = 't'").collect()
    }
    before, after = metrics[("idle-to-pop", 0, "g")], metrics[("idle-to-pop", 1, "g")]
    assert (before.idle_consumers, after.idle_consumers) == (2, 0)
    assert (after.shared_queues, after.multi_owned_queues, after.unassigned_queues) == (2, 0, 0)
    [moved] = (
        whole(spark, out, "movement")
        .where("scenario = 'idle-to-pop' AND `group` = 'g' AND from_phase = 0 AND to_phase = 1")
        .collect()
    )
    assert moved.moved == 2
    # h: a@1 (Java) and z@1 (Go, joined) over 3 queues, 10 virtual nodes each: each keeps the
    # share its own ring gives it (both rings spelt out below, independently of rmqsim).
    got = {
        (r.client_id, r.queue_id, r.computed_by)
        for r in whole(spark, out, "assignments")
        .where("scenario = 'go-joins' AND phase = 1 AND `group` = 'h'")
        .collect()
    }
    keys = [f"MessageQueue [topic=t, brokerName=b, queueId={q}]" for q in range(3)]
    java = _ring(
        {_md5(f"{c}-{i}"): c for c in ("a@1", "z@1") for i in range(10)}, [_md5(k) for k in keys], True
    )
    go = _ring(
        {zlib.crc32(f"{i}{c}".encode()): c for c in ("a@1", "z@1") for i in range(10)},
        [zlib.crc32(k.encode()) for k in keys],
        False,
    )
    want = {("a@1", q, "client JAVA") for q in range(3) if java[q] == "a@1"}
    want |= {("z@1", q, "client GO") for q in range(3) if go[q] == "z@1"}
    assert got == want


def _md5(key: str) -> int:
    return int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big")


def _ring(nodes: dict[int, str], hashes: list[int], at_or_above: bool) -> list[str]:
    """Each hash's node: the first node hash >= it (Java's TreeMap ring) or > it (Go's), wrapping."""
    ring = sorted(nodes)
    pick = bisect.bisect_left if at_or_above else bisect.bisect_right
    return [nodes[ring[pick(ring, h) % len(ring)]] for h in hashes]


PROXY = {**BROKER, "rebalance": "PROXY"}


def test_the_proxy_hands_every_client_every_broker() -> None:
    # Brokers a (2 queues) and b (3), clients c0 and c1, masters up: each client gets (a, -1) and
    # (b, -1) whatever the strategy, and reads all 5 queues, each shared by the two: 2.5 each.
    # Orderly, the proxy hands every read queue instead: the same 5 queues, listed one by one.
    rows = _clients(
        [
            route(
                brokers={"a": 2, "b": 3},
                clients=["c0", "c1"],
                strategies=["CONSISTENT_HASH"],
                balancing=PROXY,
            ),
            route(
                group="h",
                brokers={"a": 2, "b": 3},
                clients=["c0"],
                strategies=["AVG"],
                balancing={**PROXY, "consume_orderly": True},
            ),
        ]
    )
    owned = _owned(rows, "g")
    assert owned == {(0, "c0"): [("a", -1), ("b", -1)], (0, "c1"): [("a", -1), ("b", -1)]}
    g = rows.consumer_load[rows.consumer_load.group == "g"]
    assert set(rows.lists[rows.lists.group == "g"].computed_by) == {"proxy"}
    assert list(g.message_share) == [2.5, 2.5]
    first = _first(rows, group="g")
    assert (first.shared_queues, first.multi_owned_queues, first.error) == (5, 0, None)
    orderly = _owned(rows, "h")
    assert orderly == {(0, "c0"): [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]}


def test_the_proxy_fails_where_a_broker_is_alive_only_through_a_slave() -> None:
    # broker b's master is down, its slave up: the NameServer still routes b, so mqAll has its
    # queues, but the proxy builds each assignment with the master and the whole answer fails:
    # nothing in phase 0, and the group's error names b. Both of a's queues go unread as well.
    rows = _clients(
        [
            route(
                brokers={"a": 2, "b": 3},
                clients=["c0", "c1"],
                strategies=["AVG"],
                balancing=PROXY,
                broker_masters=[True, False],
            )
        ]
    )
    assert rows.lists.empty  # the clients keep what they had: nothing
    first = _first(rows)
    assert first.unassigned_queues == 5 and "broker 'b' is alive only through a slave" in first.error


def test_a_proxied_topic_that_loses_its_read_permission_keeps_the_clients_queues() -> None:
    # Phase 0: broker a (2 queues), readable; each client gets (a, -1). Phase 1: the topic's only
    # QueueData loses its read bit, so mqAll is empty and the proxy answers FORBIDDEN: the clients
    # log it and keep (a, -1), now outside mqAll, computed_by "proxy kept".
    rows = _clients(
        [
            route(phase=p, last_phase=1, brokers=b, clients=["c0", "c1"], balancing=PROXY)
            for p, b in ((0, {"a": 2}), (1, {}))
        ]
    )
    owned = _owned(rows)
    assert owned == {(p, c): [("a", -1)] for p in (0, 1) for c in ("c0", "c1")}
    assert set(rows.lists[rows.lists.phase == 1].computed_by) == {"proxy kept"}
    after = _first(rows, phase=1)
    assert "no readable queue: the proxy answers FORBIDDEN" in after.error


def test_a_proxy_group_through_spark_with_a_slave_only_broker(spark, tmp_path, sink) -> None:
    # The same from a snapshot: broker-b's master (id 0) is down, its slave (id 1) up.
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=[
            {"broker_name": "broker-a", "broker_id": 0, "alive": True},
            {"broker_name": "broker-b", "broker_id": 0, "alive": False},
            {"broker_name": "broker-b", "broker_id": 1, "alive": True},
        ],
        topic_queues=queue_rows("t", {"broker-a": 2, "broker-b": 2}) + queue_rows("u", {"broker-a": 2}),
        consumers=consumer_rows("g", "t", ["c0", "c1"]) + consumer_rows("g", "u", ["c0", "c1"]),
        groups=[{"group": "g", "rebalance": "proxy"}],
    )
    out = tmp_path / "out"
    simulate.run(spark, SimulateConfig(sink=sink, snapshot=snapshot, out=str(out), strategies=None))
    metrics = {r.topic: r for r in whole(spark, out, "group_metrics").collect()}
    assert metrics["t"].unassigned_queues == 4 and "broker 'broker-b'" in metrics["t"].error
    assert (metrics["u"].shared_queues, metrics["u"].error) == (2, None)  # u lives on broker-a only
    got = {
        (r.topic, r.client_id, r.broker_name, r.queue_id, r.computed_by)
        for r in whole(spark, out, "assignments").collect()
    }
    assert got == {("u", c, "broker-a", -1, "proxy") for c in ("c0", "c1")}
    assert whole(spark, out, "rejects").count() == 0


def test_a_group_with_idle_clients_is_told_what_pop_would_give() -> None:
    # AVG, 4 queues, 6 clients: c4 and c5 idle. In POP with pop_share_queue_num 1 (6 > 4 queues)
    # client i reads q[i % 4]: q0 c0 c4, q1 c1 c5, q2 c2, q3 c3: nobody idle; c2 and c3 each read a
    # whole queue alone, the busiest share (1.0); c0, c1, c4, c5 half a queue each.
    rows = _clients([route(brokers={"b": 4}, clients=[f"c{i}" for i in range(6)], strategies=["AVG"])])
    first = _first(rows)
    assert (first.idle_consumers, first.pop_idle_consumers, first.pop_max_message_share) == (2, 0, 1.0)
