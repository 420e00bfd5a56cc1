"""Producers for a synthetic fleet (docs/CONTRACT.md, section 2c): every topic written, in the
mix a real fleet has, deterministic for a seed.

Every topic gets a Java 5.x round-robin population; about a quarter of the topics also a Java 4.x
one with latency fault tolerance, a fifth a Go one, and a seventh a HASH producer with a key mix of
16 keys (a few hot ones and a tail). One broker in eight answers sends slowly (800 ms), so the
fault-tolerant populations avoid it. Capacities (section 2d): every client process one, drawn
around its share of its topics' rate, so that some fall behind; a group in ten gives a default
instead. Drawn with numpy in bulk, like the rest of the fleet.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.snapshot.write import arrow_table

KEYS_PER_HASH_TOPIC = 16
SLOW_MS = 800.0  # above 550 ms: a non-zero notAvailableDuration in both latency tables
FAST_MS = 20.0


def with_producers(tables: dict[str, pa.Table], seed: int) -> dict[str, pa.Table]:
    """``tables`` (a generated fleet) with producers, producer_keys and brokers.send_latency_ms."""
    rng = np.random.default_rng([seed, 2])  # a stream of its own: the fleet stays as it was
    topics = pc.unique(tables["topic_queues"]["topic"]).sort()
    n = len(topics)
    rate = np.round(rng.lognormal(mean=4.0, sigma=1.2, size=n), 1)  # msgs/s: most small, some busy
    kinds = {
        "java5": np.ones(n, dtype=bool),
        "java4": rng.random(n) < 0.25,
        "go": rng.random(n) < 0.2,
        "hash": rng.random(n) < 1 / 7,
    }
    rows = {
        c: []
        for c in (
            "topic",
            "producer_group",
            "msgs_per_s",
            "language",
            "version",
            "selector",
            "send_latency_fault_enable",
        )
    }
    settings = {
        "java5": ("JAVA", "V5_2_0", "ROUND_ROBIN", True),
        "java4": ("JAVA", "V4_9_8", "ROUND_ROBIN", True),
        "go": ("GO", None, "ROUND_ROBIN", False),
        "hash": ("JAVA", "V5_2_0", "HASH", False),
    }
    names = np.asarray(topics.to_pylist(), dtype=object)
    for kind, chosen in kinds.items():
        language, version, selector, fault = settings[kind]
        picked = names[chosen]
        rows["topic"] += list(picked)
        rows["producer_group"] += [f"{t}-{kind}" for t in picked]
        rows["msgs_per_s"] += list(rate[chosen])
        rows["language"] += [language] * len(picked)
        rows["version"] += [version] * len(picked)
        rows["selector"] += [selector] * len(picked)
        rows["send_latency_fault_enable"] += [fault] * len(picked)
    hashed = names[kinds["hash"]]
    key_rank = np.tile(np.arange(KEYS_PER_HASH_TOPIC), len(hashed))
    keys = {
        "topic": np.repeat(hashed, KEYS_PER_HASH_TOPIC),
        "producer_group": np.repeat([f"{t}-hash" for t in hashed], KEYS_PER_HASH_TOPIC),
        "key": [f"key-{i}-{r}" for i in range(len(hashed)) for r in range(KEYS_PER_HASH_TOPIC)],
        "share": 1.0 / (key_rank + 1),
    }
    brokers = tables["brokers"]
    names_b = brokers["broker_name"].to_numpy(zero_copy_only=False)
    distinct = np.unique(names_b)
    slow = set(distinct[::8])
    master = pc.equal(brokers["broker_id"], 0).to_numpy(zero_copy_only=False)
    latency = np.where([b in slow for b in names_b], SLOW_MS, FAST_MS)
    latency_array = pa.array(latency, mask=~master, type=pa.float64())
    return {
        **tables,
        "brokers": brokers.append_column("send_latency_ms", latency_array),
        "producers": arrow_table(schemas.PRODUCERS, rows),
        "producer_keys": arrow_table(schemas.PRODUCER_KEYS, keys),
    }


def with_capacities(tables: dict[str, pa.Table], seed: int) -> dict[str, pa.Table]:
    """``tables`` (a fleet with producers) with consumers' and groups' capacity_msgs_per_s: one per
    client process (the same on all its rows), between half and twice its mean inflow; the clients
    of a group in ten left to their group's default, 1.5 times its mean inflow per client."""
    rng = np.random.default_rng([seed, 3])
    consumers, groups = tables["consumers"], tables["groups"]
    rates = tables["producers"].group_by("topic").aggregate([("msgs_per_s", "sum")])
    rate = pc.fill_null(
        pc.take(rates["msgs_per_s_sum"], pc.index_in(consumers["topic"], rates["topic"])), 0.0
    ).to_numpy()
    group = pc.index_in(consumers["group"], groups["group"]).to_numpy(zero_copy_only=False)
    process = pc.binary_join_element_wise(consumers["group"], consumers["client_id"], "\x00")
    client = pc.index_in(process, pc.unique(process)).to_numpy()
    n_groups, n_clients = groups.num_rows, int(client.max(initial=-1)) + 1
    group_of_client = np.zeros(n_clients, dtype=np.int64)
    group_of_client[client] = group
    clients = np.bincount(group_of_client, minlength=n_groups)
    share = rate / clients[group]  # each row's topic rate over its group's clients
    mean = np.bincount(client, weights=share, minlength=n_clients)
    capacity = np.round(mean * rng.uniform(0.5, 2.0, n_clients), 1)
    by_group = rng.random(n_groups) < 0.1
    group_default = np.round(
        np.bincount(group, weights=share, minlength=n_groups) / np.maximum(clients, 1) * 1.5, 1
    )
    return {
        **tables,
        "consumers": consumers.append_column(
            "capacity_msgs_per_s", pa.array(capacity[client], mask=by_group[group], type=pa.float64())
        ),
        "groups": groups.append_column(
            "capacity_msgs_per_s", pa.array(group_default, mask=~by_group, type=pa.float64())
        ),
    }
