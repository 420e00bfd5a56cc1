"""Write the bundled sample snapshot (conf/sample_snapshot): a small fleet a person can read.

Five brokers in two machine rooms (two named room@broker for MACHINE_ROOM), 15 topics (one
mid-shrink with fewer write than read queues, one with more write than read queues, one read-only
on one broker, an ordered one, two retry topics), groups: one per strategy, a BROADCASTING one and
one with no groups row, and others for who computes the assignment. Producers on every topic
(one topic's rate from offsets' in_tps instead): Java, Go and C++ clients, a 4.x population with
latency fault tolerance, HASH producers with a key mix. Capacities on one group of unequal clients
and a group default on another; a group pinned to designated machines, and one whose clients are
half-way through that rollout. Run it again after editing; the Parquet
files it writes are committed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rmqsim import schemas
from rmqsim.snapshot.write import arrow_table, write_snapshot

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent.parent / "conf" / "sample_snapshot"

BROKERS = [  # broker_name, room, slave alive
    ("broker-a", "hz-a", True),
    ("broker-b", "hz-a", True),
    ("broker-c", "hz-b", False),
    # MACHINE_ROOM reads the room from "room@broker" names, as RocketMQ does
    ("hz-a@ledger-1", "hz-a", True),
    ("hz-b@ledger-2", "hz-b", True),
]

# topic: {broker: (read, write, perm)}
TOPICS = {
    "orders": {"broker-a": (16, 16, 6), "broker-b": (16, 16, 6), "broker-c": (16, 16, 6)},
    "payments": {"broker-a": (8, 8, 6), "broker-b": (8, 8, 6), "broker-c": (8, 8, 6)},
    "refunds": {"broker-a": (4, 4, 6), "broker-b": (4, 4, 6)},
    "inventory": {"broker-a": (8, 8, 6), "broker-c": (8, 8, 6)},
    "user-events": {"broker-a": (8, 8, 6), "broker-b": (8, 8, 6), "broker-c": (8, 8, 6)},
    "logistics": {"broker-b": (6, 6, 6), "broker-c": (6, 6, 6)},
    "notifications": {"broker-c": (4, 4, 6)},
    "audit": {"broker-a": (2, 2, 6), "broker-b": (2, 2, 6), "broker-c": (2, 2, 6)},
    "risk-scores": {"broker-a": (8, 4, 6), "broker-b": (8, 4, 6)},  # shrinking: writes cut first
    "search-index": {"broker-a": (4, 4, 6), "broker-c": (4, 4, 4)},  # read-only on broker-c
    "coupons": {"broker-a": (4, 4, 6), "broker-b": (4, 4, 6), "broker-c": (4, 4, 6)},
    "ledger": {"hz-a@ledger-1": (4, 4, 6), "hz-b@ledger-2": (4, 4, 6)},
    "%RETRY%pay-consumer": {"broker-a": (1, 1, 6), "broker-b": (1, 1, 6), "broker-c": (1, 1, 6)},
    "%RETRY%order-consumer": {"broker-a": (1, 1, 6), "broker-b": (1, 1, 6), "broker-c": (1, 1, 6)},
    "clicks": {"broker-a": (4, 8, 6), "broker-b": (4, 8, 6)},  # written to 8 queues, read from 4
}

# group: (groups row or None for no row, topics, client ids with rooms)
GROUPS = {
    "pay-consumer": (
        {"strategy": "AVG"},
        ["payments", "refunds", "%RETRY%pay-consumer"],
        [(f"10.0.0.{i}@12345", "hz-a" if i <= 4 else "hz-b") for i in range(1, 9)],
    ),
    "order-consumer": (
        {"strategy": "AVG_BY_CIRCLE"},
        ["orders", "inventory", "%RETRY%order-consumer"],
        [(f"10.0.1.{i}@23456#8741230{i:03d}", "hz-a" if i % 2 else "hz-b") for i in range(1, 6)],
    ),
    "analytics": (
        {"strategy": "AVG", "capacity_msgs_per_s": 1500.0},  # each client's, by default
        ["user-events", "orders", "audit", "logistics", "notifications", "coupons", "clicks"],
        [("10.0.2.11@31001", "hz-a"), ("10.0.2.12@31002", "hz-a"), ("10.0.2.13@31003", "hz-b")],
    ),
    "notify-consumer": (
        {"strategy": "MACHINE_ROOM_NEARBY", "inner_strategy": "AVG"},
        ["notifications"],
        [(f"10.0.3.{i}@4100{i}", "hz-b") for i in range(1, 7)],
    ),
    "risk-engine": (
        {"strategy": "CONSISTENT_HASH", "virtual_node_cnt": 10},
        ["risk-scores", "payments"],
        [(f"10.0.4.{i}@5200{i}", "hz-a" if i <= 2 else "hz-b") for i in range(1, 5)],
    ),
    "search-indexer": (
        {"strategy": "AVG_BY_CIRCLE", "message_model": "BROADCASTING"},
        ["search-index"],
        [("10.0.5.1@6100", "hz-b"), ("10.0.5.2@6101", "hz-b")],
    ),
    "audit-archiver": (None, ["audit", "coupons"], [("10.0.6.1@7100", "hz-a")]),
    "ledger-consumer": (
        {"strategy": "MACHINE_ROOM", "consumer_idcs": ["hz-a"]},
        ["ledger"],
        [("10.0.7.1@8100", "hz-a"), ("10.0.7.2@8101", "hz-a")],
    ),
    "billing-export": (
        {"strategy": "CONFIG"},
        ["payments"],
        [("10.0.8.1@9100", "hz-a"), ("10.0.8.2@9101", "hz-b")],
    ),
    # Who computes the assignment (docs/CONTRACT.md, section 2b).
    # A Go service (rocketmq-client-go): its CONSISTENT_HASH is a CRC-32 ring, not Java's MD5 one.
    "geo-tracker": (
        {"strategy": "CONSISTENT_HASH"},
        ["user-events"],
        [(f"10.0.9.{i}@geo-{i}", "hz-a") for i in range(1, 4)],
    ),
    # clientRebalance off: the broker (QueryAssignmentProcessor) computes each client's queues.
    "settlement": (
        {"strategy": "AVG_BY_CIRCLE", "rebalance": "broker"},
        ["refunds"],
        [(f"10.0.10.{i}@9300", "hz-a") for i in range(1, 4)],
    ),
    # POP: the broker shares each client's queues with the next client's (pop_share_queue_num 1).
    "coupon-pusher": (
        {"strategy": "AVG", "rebalance": "broker", "request_mode": "POP", "pop_share_queue_num": 1},
        ["coupons"],
        [(f"10.0.11.{i}@9400", "hz-b") for i in range(1, 5)],
    ),
    # 5.x gRPC clients through the proxy: every client reads every broker, the work split per message.
    "feed-reader": (
        {"strategy": "AVG", "rebalance": "proxy"},
        ["user-events"],
        [(f"10.0.13.{i}@grpc-{i}", "hz-a") for i in range(1, 4)],
    ),
    # Six clients on orders' 48 queues: AVG gives each eight, half of them a broker's queues 8..15,
    # which a shrink to 8 write queues leaves without new messages until the read count follows.
    "order-archiver": (
        {"strategy": "AVG"},
        ["orders"],
        [(f"10.0.14.{i}@9600", "hz-a") for i in range(1, 7)],
    ),
    # Pinned to designated machines (section 2d): the two clients off the list hold nothing.
    "payout-reconciler": (
        {"strategy": "AVG", "designated_ips": ["10.0.15.1", "10.0.15.2"], "capacity_msgs_per_s": 400.0},
        ["payments"],
        [(f"10.0.15.{i}@9700", "hz-a") for i in range(1, 5)],
    ),
    # Six clients on notifications' four queues: two sit idle (a scenario moves the group to POP).
    "sms-sender": (
        {"strategy": "AVG"},
        ["notifications"],
        [(f"10.0.12.{i}@9500", "hz-b") for i in range(1, 7)],
    ),
}

# The client library of each client of these groups (consumers.language); JAVA for the others.
LANGUAGES = {"geo-tracker": "GO"}
# Messages per second each client of a group consumes at most (consumers.capacity_msgs_per_s), in
# client order: order-consumer's five pods are of three sizes, so queue counts mislead.
CAPACITIES = {"order-consumer": [600.0, 600.0, 300.0, 150.0, 150.0]}
# Clients still on the stock strategy (consumers.designated_aware false): risk-engine's hz-b pods
# have not yet been redeployed with the designated-machines code.
NOT_DESIGNATED_AWARE = {"10.0.4.3@52003", "10.0.4.4@52004"}

# CONFIG: each billing-export client reads the queues configured for it; broker-c's are
# configured for both (owned twice) and broker-b's for neither (unowned).
QUEUE_CONFIG = [
    ("billing-export", "10.0.8.1@9100", "payments", "broker-a", range(8)),
    ("billing-export", "10.0.8.1@9100", "payments", "broker-c", range(2)),
    ("billing-export", "10.0.8.2@9101", "payments", "broker-c", range(8)),
]


# Consumer progress of two groups (what `mqadmin consumerProgress` shows): a backlog per queue,
# so scenarios report how many messages change owner, not just how many queues.
PROGRESS = {"pay-consumer": ("payments", "refunds"), "order-consumer": ("orders",)}
# Topics whose rate comes from offsets' in_tps (no producers row): messages per second per queue.
IN_TPS = {"refunds": 5.0}

# Producer populations (docs/CONTRACT.md, section 2c): topic, group, msgs_per_s, language, version,
# selector, send_latency_fault_enable.
PRODUCERS = [
    ("orders", "order-service", 900.0, "JAVA", "V5_1_4", "HASH", False),  # ordered, by order id
    ("orders", "order-backfill", 300.0, "JAVA", "V5_1_4", "ROUND_ROBIN", False),
    # A 4.x population with latency fault tolerance and a 5.x one without, plus a Go service.
    ("payments", "pay-gateway", 400.0, "JAVA", "V4_9_8", "ROUND_ROBIN", True),
    ("payments", "pay-gateway-v5", 120.0, "JAVA", "V5_2_0", "ROUND_ROBIN", True),
    ("payments", "wallet", 80.0, "GO", None, "ROUND_ROBIN", False),
    ("inventory", "stock-service", 300.0, "JAVA", None, "ROUND_ROBIN", False),
    ("user-events", "web", 1500.0, "JAVA", None, "ROUND_ROBIN", False),
    ("user-events", "mobile", 500.0, "GO", None, "ROUND_ROBIN", False),
    ("logistics", "carrier-sync", 150.0, "JAVA", None, "ROUND_ROBIN", False),
    ("notifications", "notifier", 80.0, "CPP", None, "ROUND_ROBIN", False),
    ("audit", "audit-log", 50.0, "JAVA", None, "ROUND_ROBIN", False),
    ("risk-scores", "risk-model", 240.0, "JAVA", None, "ROUND_ROBIN", False),
    ("search-index", "indexer", 60.0, "PYTHON", None, "ROUND_ROBIN", False),
    ("coupons", "promo", 120.0, "JAVA", None, "ROUND_ROBIN", False),
    ("ledger", "ledger-writer", 90.0, "JAVA", None, "ROUND_ROBIN", False),
    ("clicks", "tracker", 500.0, "JAVA", None, "ROUND_ROBIN", False),
    ("%RETRY%pay-consumer", "pay-consumer", 6.0, "JAVA", None, "ROUND_ROBIN", False),
    ("%RETRY%order-consumer", "order-consumer", 3.0, "JAVA", None, "ROUND_ROBIN", False),
]
# orders' key mix: a few hot merchants and a long tail, hashed over the order topic's 48 queues.
PRODUCER_KEYS = [("orders", "order-service", f"merchant-{i:03d}", 40.0 / (i + 1)) for i in range(60)]
# The NameServer's orderTopicConf of an ordered topic: its producers' list, whatever the route says.
ORDER_TOPICS = [("ledger", "hz-a@ledger-1:4;hz-b@ledger-2:4")]
# The send latency producers observe on each broker's master; null elsewhere.
SEND_LATENCY_MS = {"broker-a": 40.0, "broker-b": 35.0, "broker-c": 60.0}


def offsets() -> dict:
    out = {
        "group": [],
        "topic": [],
        "broker_name": [],
        "queue_id": [],
        "broker_offset": [],
        "consumer_offset": [],
        "in_tps": [],
    }
    for group, topics in PROGRESS.items():
        for topic in topics:
            for broker, (read, _, _) in sorted(TOPICS[topic].items()):
                for queue_id in range(read):
                    produced = 100_000 + 7_919 * (len(out["group"]) % 13)
                    lag = (queue_id * 37 + len(broker) * 11) % 400  # deterministic, uneven
                    row = (group, topic, broker, queue_id, produced, produced - lag, IN_TPS.get(topic))
                    for key, value in zip(out, row):
                        out[key].append(value)
    return out


def _producers() -> dict:
    columns = (
        "topic",
        "producer_group",
        "msgs_per_s",
        "language",
        "version",
        "selector",
        "send_latency_fault_enable",
    )
    return {c: [row[i] for row in PRODUCERS] for i, c in enumerate(columns)}


def _brokers() -> dict:
    brokers = {
        "cluster": [],
        "broker_name": [],
        "broker_id": [],
        "address": [],
        "machine_room": [],
        "alive": [],
        "send_latency_ms": [],
    }
    for i, (name, room, slave_alive) in enumerate(BROKERS):
        for broker_id, alive in ((0, True), (1, slave_alive)):
            brokers["cluster"].append("DefaultCluster")
            brokers["broker_name"].append(name)
            brokers["broker_id"].append(broker_id)
            brokers["address"].append(f"10.10.{i}.{broker_id + 1}:10911")
            brokers["machine_room"].append(room)
            brokers["alive"].append(alive)
            brokers["send_latency_ms"].append(SEND_LATENCY_MS.get(name) if broker_id == 0 else None)
    return brokers


def _topic_queues() -> dict:
    tq = {"topic": [], "broker_name": [], "read_queue_nums": [], "write_queue_nums": [], "perm": []}
    for topic, per_broker in TOPICS.items():
        for broker, (read, write, perm) in per_broker.items():
            for key, value in zip(tq, (topic, broker, read, write, perm)):
                tq[key].append(value)
    return tq


def _consumers_and_groups() -> tuple[dict, dict]:
    consumers = {
        "group": [],
        "topic": [],
        "client_id": [],
        "machine_room": [],
        "language": [],
        "capacity_msgs_per_s": [],
        "designated_aware": [],
    }
    group_columns = (
        "strategy",
        "virtual_node_cnt",
        "consumer_idcs",
        "inner_strategy",
        "message_model",
        "rebalance",
        "request_mode",
        "pop_share_queue_num",
        "capacity_msgs_per_s",
        "designated_ips",
    )
    groups = {"group": [], **{c: [] for c in group_columns}}
    for group, (row, topics, clients) in GROUPS.items():
        if row:
            groups["group"].append(group)
            for c in group_columns:
                groups[c].append(row.get(c))
        capacities = CAPACITIES.get(group, [None] * len(clients))
        for topic in topics:
            for (client_id, room), capacity in zip(clients, capacities):
                aware = False if client_id in NOT_DESIGNATED_AWARE else None
                row = (group, topic, client_id, room, LANGUAGES.get(group, "JAVA"), capacity, aware)
                for key, value in zip(consumers, row):
                    consumers[key].append(value)
    return consumers, groups


def _queue_config() -> dict:
    config = {"group": [], "client_id": [], "topic": [], "broker_name": [], "queue_id": []}
    for group, client, topic, broker, ids in QUEUE_CONFIG:
        for queue_id in ids:
            for key, value in zip(config, (group, client, topic, broker, queue_id)):
                config[key].append(value)
    return config


def tables() -> dict:
    consumers, groups = _consumers_and_groups()
    return {
        "offsets": arrow_table(schemas.OFFSETS, offsets()),
        "queue_config": arrow_table(schemas.QUEUE_CONFIG, _queue_config()),
        "brokers": arrow_table(schemas.BROKERS, _brokers()),
        "topic_queues": arrow_table(schemas.TOPIC_QUEUES, _topic_queues()),
        "consumers": arrow_table(schemas.CONSUMERS, consumers),
        "groups": arrow_table(schemas.GROUPS, groups),
        "producers": arrow_table(schemas.PRODUCERS, _producers()),
        "producer_keys": arrow_table(
            schemas.PRODUCER_KEYS,
            {
                c: [r[i] for r in PRODUCER_KEYS]
                for i, c in enumerate(("topic", "producer_group", "key", "share"))
            },
        ),
        "order_topics": arrow_table(
            schemas.ORDER_TOPICS,
            {c: [r[i] for r in ORDER_TOPICS] for i, c in enumerate(("topic", "order_conf"))},
        ),
    }


if __name__ == "__main__":
    print(write_snapshot(tables(), str(OUT)))
