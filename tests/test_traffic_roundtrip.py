"""Producer conformance records written as one real snapshot, simulated by Spark, and read back
from queue_traffic/: the publish lists (PRODUCER_ROUTE, GO_PRODUCER_ROUTE) and the key hashes
(PRODUCER_HASH, GO_PRODUCER_HASH), each record its own topic.

A route record's topic has one ROUND_ROBIN producer whose rate is its list's length, so every
list entry carries 1 msg/s and a queue's inflow is how often the real client listed it. A hash
record's topic has one HASH producer at 1 msg/s with the record's key as its only key, so the one
queue with inflow is the one the real client selected.

One snapshot has one brokers table, so its broker facts (routed, master alive, master address
empty) must agree over the records picked: the picker keeps the records that agree with those
taken before. Records that no snapshot can express are left out, each for a stated reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

from tests.conformance import queues, records
from tests.simulated import simulated

PER_KIND = 60
# What a route says of a broker name, as a brokers table must say it too.
Fact = tuple[bool, bool, bool]  # routed (has a BrokerData), master listed, master address empty


def _java_sorted(names: list[str]) -> list[str]:
    return sorted(names, key=lambda n: n.encode("utf-16-be"))  # String.compareTo: UTF-16 units


class Picker:
    """Chooses records whose brokers one brokers table can describe."""

    def __init__(self) -> None:
        self.facts: dict[str, Fact] = {}

    def accept(self, facts: dict[str, Fact]) -> bool:
        if any(self.facts.get(b, f) != f for b, f in facts.items()):
            return False
        self.facts.update(facts)
        return True

    def broker_rows(self) -> list[dict]:
        rows = []
        for name, (routed, master, empty) in sorted(self.facts.items()):
            if master:
                rows.append(
                    {
                        "broker_name": name,
                        "broker_id": 0,
                        "alive": True,
                        "address": "" if empty else "10.0.0.1:10911",
                    }
                )
            else:  # alive through a slave only, or (not routed) answering for nobody
                rows.append(
                    {"broker_name": name, "broker_id": 1, "alive": routed, "address": "10.0.0.2:10911"}
                )
        return rows


def _route_facts(route: dict) -> dict[str, Fact] | None:
    """None: the route cannot be a snapshot's (a QueueData listed twice: the snapshot keeps one
    row per topic and broker; a BrokerData listed twice: the client reads the first)."""
    names = [q["brokerName"] for q in route["queueDatas"]]
    datas = [b["brokerName"] for b in route["brokerDatas"]]
    if len(set(names)) != len(names) or len(set(datas)) != len(datas):
        return None
    if any(
        q["writeQueueNums"] < 0 or q["readQueueNums"] < 0 or not 0 <= q["perm"] <= 15
        for q in route["queueDatas"]
    ):
        return None  # a snapshot rejects the row (covered in test_traffic's bad input)
    addrs = {b["brokerName"]: b["brokerAddrs"] or {} for b in route["brokerDatas"]}
    facts = {}
    for name in names:
        if name in addrs:
            master = "0" in addrs[name]
            facts[name] = (True, master, master and addrs[name]["0"] == "")
        else:
            facts[name] = (False, False, False)
    return facts


def _hash_facts(pairs: list) -> dict[str, Fact] | None:
    """None: a list no single route's Java build gives (brokers out of Java order, or queue ids
    not 0..n-1 per broker)."""
    listed = queues(pairs)
    brokers = list(dict.fromkeys(b for b, _ in listed))
    if brokers != _java_sorted(brokers):
        return None
    expected = [(b, i) for b in brokers for i in range(sum(1 for x, _ in listed if x == b))]
    if listed != expected:
        return None
    return {b: (True, True, False) for b in brokers}


@dataclass
class Fleet:
    """The snapshot's tables as row dicts, and per topic what the real client did: the inflow of
    each queue that has some, and the queues of the publish list."""

    picker: Picker = field(default_factory=Picker)
    tables: dict[str, list[dict]] = field(
        default_factory=lambda: {
            t: [] for t in ("topic_queues", "producers", "producer_keys", "order_topics", "consumers")
        }
    )
    expected: dict[str, Counter] = field(default_factory=dict)
    lists: dict[str, set] = field(default_factory=dict)

    def topic(self, name: str, queue_rows: list[dict], producer: dict, listed: list, inflow: Counter) -> None:
        self.tables["topic_queues"] += [{"topic": name, **q} for q in queue_rows]
        self.tables["consumers"].append({"group": "reader", "topic": name, "client_id": "10.0.0.9@1"})
        self.tables["producers"].append({"topic": name, **producer})
        self.expected[name] = inflow
        self.lists[name] = set(listed)


def _add_route(fleet: Fleet, kind: str, language: str, r: dict) -> bool:
    if r["result"] is None:
        return False  # thrown lists: unroutable, covered in test_traffic
    facts = _route_facts(r["route"])
    listed = queues(r["result"]["messageQueueList"])
    if facts is None or not listed:
        return False  # nothing to send to: unroutable, covered in test_traffic
    # An orderTopicConf may list a broker the topic has no QueueData on: the sends there succeed
    # where its master is up, so the picked snapshot has it up.
    facts.update({b: (True, True, False) for b, _ in listed if b not in facts})
    if not fleet.picker.accept(facts):
        return False
    topic = f"{kind}~{r['case_id']}"
    route = r["route"]
    rows = [
        {
            "broker_name": q["brokerName"],
            "read_queue_nums": q["readQueueNums"],
            "write_queue_nums": q["writeQueueNums"],
            "perm": q["perm"],
        }
        for q in route["queueDatas"]
    ]
    producer = {"msgs_per_s": float(len(listed)), "language": language}
    fleet.topic(topic, rows, producer, listed, Counter(listed))
    if route["orderTopicConf"] is not None:
        fleet.tables["order_topics"].append({"topic": topic, "order_conf": route["orderTopicConf"]})
    return True


def _add_hash(fleet: Fleet, kind: str, language: str, key: str, r: dict) -> bool:
    if r.get("arg_type", "String") != "String" or r.get(key) is None:
        return False  # producer_keys holds strings: Java's String.hashCode
    facts = _hash_facts(r["queues"])
    if facts is None or not fleet.picker.accept(facts):
        return False
    topic = f"{kind}~{r['case_id']}"
    listed = queues(r["queues"])
    counts = Counter(b for b, _ in listed)
    rows = [
        {"broker_name": b, "read_queue_nums": n, "write_queue_nums": n, "perm": 6} for b, n in counts.items()
    ]
    producer = {"msgs_per_s": 1.0, "language": language, "selector": "HASH"}
    fleet.topic(topic, rows, producer, listed, Counter([tuple(r["selected"])]))
    fleet.tables["producer_keys"].append({"topic": topic, "key": r[key], "share": 1.0})
    return True


def _fleet() -> Fleet:
    fleet = Fleet()
    kinds = [
        ("PRODUCER_ROUTE", lambda r: _add_route(fleet, "PRODUCER_ROUTE", "JAVA", r)),
        ("GO_PRODUCER_ROUTE", lambda r: _add_route(fleet, "GO_PRODUCER_ROUTE", "GO", r)),
        ("PRODUCER_HASH", lambda r: _add_hash(fleet, "PRODUCER_HASH", "JAVA", "arg", r)),
        ("GO_PRODUCER_HASH", lambda r: _add_hash(fleet, "GO_PRODUCER_HASH", "GO", "sharding_key", r)),
    ]
    for kind, add in kinds:
        taken = 0
        for r in records(kind):
            if taken < PER_KIND and add(r):
                taken += 1
        assert taken >= 50, kind
    fleet.tables["brokers"] = fleet.picker.broker_rows()
    return fleet


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return _fleet()


def test_every_picked_record_reads_back_from_queue_traffic(spark, tmp_path, sink, fleet) -> None:
    expected, lists = fleet.expected, fleet.lists
    run = simulated(spark, tmp_path, sink=sink, tables=fleet.tables)
    got: dict[str, Counter] = {}
    for row in run.rows("queue_traffic", "phase = 0 and in_msgs_per_s > 0"):
        got.setdefault(row.topic, Counter())[(row.broker_name, row.queue_id)] = row.in_msgs_per_s
    written = {
        (r.topic, r.broker_name, r.queue_id) for r in run.rows("queue_traffic", "phase = 0 and written")
    }
    assert written == {(t, b, q) for t, listed in lists.items() for b, q in listed}
    wrong = {t: (got.get(t), e) for t, e in expected.items() if got.get(t) != e}
    assert not wrong, list(wrong.items())[:3]
    assert set(got) == set(expected)
