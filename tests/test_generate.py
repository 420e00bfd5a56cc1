"""The synthetic fleet generator: deterministic for a seed, about the size asked for, well formed."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from rmqsim import cli
from rmqsim.errors import InputError
from rmqsim.snapshot.synthetic import FleetSpec, generate

CLIENT_ID = re.compile(r"^10\.\d+\.\d+\.\d+@\d+#\d{10}$")
# The many-small-groups shape of issue 23, at a test's size.
SMALL_GROUPS = FleetSpec(
    seed=3,
    assignments=50_000,
    brokers=24,
    queues_per_topic=(8, 96),
    brokers_per_topic=(2, 6),
    groups_per_topic=(1, 3),
    clients_per_group=(2, 12),
)


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


def _digest(tables) -> str:
    h = hashlib.sha256()
    for name in sorted(tables):
        h.update(name.encode())
        for column in tables[name].column_names:
            h.update(column.encode())
            h.update(json.dumps(tables[name].column(column).to_pylist()).encode())
    return h.hexdigest()


def test_without_shape_options_the_fleet_is_the_one_generated_before_they_existed() -> None:
    # Digests of the fleets the generator wrote before the shape options (commit c8567cf).
    plain = generate(FleetSpec(seed=5, assignments=20_000))
    assert _digest(plain) == "3f37770749c61a8f47bec033ace1d0fcfd29888c537236aca0d845f54fe34221"
    rooms = generate(FleetSpec(seed=4, assignments=20_000, room_broker_names=True, queue_config=True))
    assert _digest(rooms) == "42f2332ef6877cf45bff366f3fc324f5828d54345a5432e0d9e1cee705d994e6"


def _shape(tables):
    """Per topic: readable queues and distinct brokers; groups per topic; clients per group; and
    the topics each group reads."""
    tq = tables["topic_queues"].to_pandas()
    readable = tq[(tq.perm & 4) != 0]
    consumers = tables["consumers"].to_pandas()
    subs = consumers[["group", "topic"]].drop_duplicates()
    return (
        readable.groupby("topic").read_queue_nums.sum(),
        tq.groupby("topic").broker_name.nunique(),
        subs.groupby("topic").size().reindex(tq.topic.unique(), fill_value=0),
        consumers.groupby("group").client_id.nunique(),
        subs.groupby("group").size(),
    )


def test_many_small_groups_follow_the_shape() -> None:
    tables = generate(SMALL_GROUPS)
    queues, brokers, groups, clients, topics_per_group = _shape(tables)
    assert queues.between(8, 96).all() and queues.min() < 16 and queues.max() > 80
    assert brokers.between(2, 6).all() and set(brokers) == {2, 3, 4, 5, 6}
    assert groups.between(1, 3).all() and set(groups) == {1, 2, 3}
    assert clients.between(2, 12).all() and set(clients) == set(range(2, 13))
    assert (topics_per_group == 1).all()
    assert 0.9 * 50_000 <= _assignments(tables) <= 1.1 * 50_000
    # as many groups as issue 23's fleet has for its 2,000,000 assignments, scaled: about 60,000
    assert 1_000 <= tables["groups"].num_rows <= 2_000
    # well formed as the default fleet: one groups row per group, one consumers row per
    # (group, topic, client), client ids alike, no broker twice in a topic, no empty broker
    consumers = tables["consumers"].to_pandas()
    assert sorted(tables["groups"].column("group").to_pylist()) == sorted(consumers.group.unique())
    assert not consumers.duplicated(["group", "topic", "client_id"]).any()
    assert consumers.client_id.str.match(CLIENT_ID).all()
    tq = tables["topic_queues"].to_pandas()
    assert not tq.duplicated(["topic", "broker_name"]).any()
    assert (tq.read_queue_nums >= 1).all() and (tq.write_queue_nums <= tq.read_queue_nums).all()
    assert set(tq.perm) <= {4, 6}
    # a topic's queues are split evenly over its brokers
    spread = tq.groupby("topic").read_queue_nums.agg(["min", "max"])
    assert (spread["max"] - spread["min"] <= 1).all()


def test_many_small_groups_are_deterministic_for_a_seed() -> None:
    a, b = generate(SMALL_GROUPS), generate(SMALL_GROUPS)
    assert all(a[t].equals(b[t]) for t in a)
    other = generate(FleetSpec(**{**SMALL_GROUPS.__dict__, "seed": 4}))
    assert not a["consumers"].equals(other["consumers"])


@pytest.mark.parametrize(
    "option, bounds, index",
    [
        ("queues_per_topic", (10, 20), 0),
        ("brokers_per_topic", (3, 5), 1),
        ("groups_per_topic", (2, 2), 2),
        ("clients_per_group", (1, 3), 3),
    ],
)
def test_each_shape_option_alone_holds_its_bounds(option: str, bounds: tuple[int, int], index: int) -> None:
    tables = generate(FleetSpec(seed=7, assignments=20_000, **{option: bounds}))
    counts = _shape(tables)[index]
    assert counts.between(*bounds).all()
    assert 0.8 * 20_000 <= _assignments(tables) <= 1.2 * 20_000


def test_shapes_that_cannot_be_made_are_refused() -> None:
    with pytest.raises(InputError, match="--brokers-per-topic"):
        FleetSpec(brokers=4, brokers_per_topic=(2, 6))
    with pytest.raises(InputError, match="--queues-per-topic"):
        FleetSpec(queues_per_topic=(2, 96), brokers_per_topic=(3, 6))
    with pytest.raises(InputError, match="--clients-per-group"):
        FleetSpec(clients_per_group=(5, 2))


@pytest.mark.parametrize("text", ["8-96", "8:", "0:4", "12:2", "a:b", "1:2:3"])
def test_cli_refuses_a_malformed_range(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.parser().parse_args(["generate", "--out", "x", "--clients-per-group", text])
    assert exit_.value.code == 2
    assert "argument --clients-per-group: expected MIN:MAX" in capsys.readouterr().err


def test_cli_writes_the_many_small_groups_fleet(tmp_path) -> None:
    shape = "--queues-per-topic 8:96 --brokers-per-topic 2:6 --groups-per-topic 1:3 --clients-per-group 2:12"
    argv = ["generate", "--out", str(tmp_path), *"--seed 3 --assignments 50000 --brokers 24".split()]
    assert cli.main(argv + shape.split()) == 0
    written = {t: pq.read_table(tmp_path / t) for t in ("brokers", "topic_queues", "consumers", "groups")}
    assert all(written[t].equals(table) for t, table in generate(SMALL_GROUPS).items())
    exactly = cli.parser().parse_args(["generate", "--out", "x", "--groups-per-topic", "2"])
    assert exactly.groups_per_topic == (2, 2)
