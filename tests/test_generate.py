"""The synthetic fleet generator: deterministic for a seed, about the size asked for, well formed."""

from __future__ import annotations

import re

import numpy as np
import pyarrow.compute as pc

from rmqsim.snapshot.synthetic import FleetSpec, generate

CLIENT_ID = re.compile(r"^10\.\d+\.\d+\.\d+@\d+#\d{10}$")


def _assignments(tables) -> int:
    # One assignment per queue per subscribing group: sum of each subscribed topic's readable queues.
    tq = tables["topic_queues"].to_pandas()
    readable = tq[(tq.perm & 4) != 0].groupby("topic").read_queue_nums.sum()
    subs = tables["consumers"].to_pandas()[["group", "topic"]].drop_duplicates()
    return int(subs.topic.map(readable).fillna(0).sum())


def test_same_seed_same_fleet_other_seed_other_fleet() -> None:
    a, b, c = (generate(FleetSpec(seed=s, assignments=20_000)) for s in (5, 5, 6))
    assert all(a[t].equals(b[t]) for t in a)
    assert not a["consumers"].equals(c["consumers"])


def test_size_is_near_the_target_and_rows_are_consistent() -> None:
    tables = generate(FleetSpec(seed=2, assignments=200_000, brokers=6, rooms=2))
    assert 0.7 * 200_000 <= _assignments(tables) <= 1.3 * 200_000
    consumers = tables["consumers"]
    topics = set(tables["topic_queues"].column("topic").to_pylist())
    assert set(consumers.column("topic").to_pylist()) <= topics
    assert set(consumers.column("group").to_pylist()) == set(tables["groups"].column("group").to_pylist())
    ids = consumers.column("client_id").to_pylist()
    assert all(CLIENT_ID.match(i) for i in ids[:1000])
    assert set(tables["brokers"].column("machine_room").to_pylist()) == {"hz-a", "hz-b"}
    # one row per (group, topic, client)
    keys = consumers.select(["group", "topic", "client_id"]).to_pandas()
    assert not keys.duplicated().any()
    counts = pc.value_counts(tables["topic_queues"].column("perm")).to_pylist()
    assert {c["values"] for c in counts} <= {4, 6}
    assert np.all(
        tables["topic_queues"].column("write_queue_nums").to_numpy()
        <= tables["topic_queues"].column("read_queue_nums").to_numpy()
    )


def test_machine_room_names_and_config_lists() -> None:
    tables = generate(FleetSpec(seed=4, assignments=20_000, room_broker_names=True, queue_config=True))
    names = tables["brokers"].column("broker_name").to_pylist()
    rooms = tables["brokers"].column("machine_room").to_pylist()
    assert all(n.split("@")[0] == r for n, r in zip(names, rooms))
    # every readable queue of every subscription is configured for exactly one of the group's clients
    config = tables["queue_config"].to_pandas()
    assert len(config) == _assignments(tables)
    assert not config.duplicated(["group", "topic", "broker_name", "queue_id"]).any()
    consumers = tables["consumers"].to_pandas()
    known = set(zip(consumers.group, consumers.topic, consumers.client_id))
    assert set(zip(config.group, config.topic, config.client_id)) <= known
