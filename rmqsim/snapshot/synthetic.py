"""Synthetic fleets: brokers in machine rooms, topics with a skewed spread of queue counts, and
consumer groups reading one to three topics, deterministic for a seed.

The fleet's shape can be set instead, each part as a (MIN, MAX) range (FleetSpec's
``queues_per_topic``, ``brokers_per_topic``, ``groups_per_topic``, ``clients_per_group``; for
example the many-small-groups fleet: topics of 8 to 96 queues on 2 to 6 brokers, read by 1 to 3
groups of 2 to 12 clients each). A part left unset keeps the default spread, and with none set the
fleet is the same as before these options existed, for the same seed.

Everything is drawn with numpy in bulk, so millions of queue assignments take seconds; tables are
written with pyarrow (no Spark needed) in the snapshot layout of docs/CONTRACT.md, section 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rmqsim import schemas
from rmqsim.errors import InputError
from rmqsim.snapshot.write import arrow_table
from rmqsim.strategies import STRATEGIES

CITIES = ("hz", "sh", "bj", "sz")
QUEUES_PER_BROKER = np.array([2, 4, 8, 8, 16, 16, 16, 32, 64])
BROKERS_PER_TOPIC = np.array([1, 2, 2, 3, 4])
TOPICS_PER_GROUP = np.array([1, 1, 1, 1, 1, 2, 2, 2, 3, 3])
TOPIC_WORDS = (
    "orders",
    "payments",
    "inventory",
    "user-events",
    "logistics",
    "notify",
    "audit",
    "risk",
    "search",
    "coupons",
    "refunds",
    "billing",
    "clicks",
    "metrics",
)

Range = tuple[int, int]  # inclusive (MIN, MAX)
SHAPE = ("queues_per_topic", "brokers_per_topic", "groups_per_topic", "clients_per_group")


@dataclass(frozen=True)
class FleetSpec:
    seed: int = 1
    assignments: int = 100_000  # about this many (queue, group) pairs
    brokers: int = 8
    rooms: int = 2
    mean_clients: float = 8.0
    strategies: tuple[str, ...] = ("AVG", "AVG_BY_CIRCLE")
    room_broker_names: bool = False  # "hz-a@broker-00", as fleets using MACHINE_ROOM name them
    queue_config: bool = False  # a CONFIG list for every client (dealt round-robin)
    # The shape: each an inclusive (MIN, MAX) range, a value n drawn with weight 1/n (small topics
    # and groups commoner than big ones, as in real fleets); None keeps the default spread.
    queues_per_topic: Range | None = None  # readable queues of a topic in all, split over its brokers
    brokers_per_topic: Range | None = None  # distinct brokers a topic is on (at most ``brokers``)
    groups_per_topic: Range | None = None  # groups reading a topic; each such group reads only it
    clients_per_group: Range | None = None  # clients of a group, instead of ``mean_clients``

    def __post_init__(self) -> None:
        for name in SHAPE:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _checked_range(name, value))
        if self.brokers_per_topic and self.brokers_per_topic[1] > self.brokers:
            raise InputError(
                "arguments",
                _flag("brokers_per_topic"),
                f"up to {self.brokers_per_topic[1]} brokers per topic, but the fleet has "
                f"{self.brokers} (--brokers)",
            )
        if self.queues_per_topic and self.brokers_per_topic:
            if self.queues_per_topic[0] < self.brokers_per_topic[0]:
                raise InputError(
                    "arguments",
                    _flag("queues_per_topic"),
                    f"a topic of {self.queues_per_topic[0]} queues cannot be on "
                    f"{self.brokers_per_topic[0]} brokers (--brokers-per-topic): every broker of a "
                    "topic has a queue",
                )


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _checked_range(name: str, value: object) -> Range:
    try:
        low, high = (int(v) for v in value)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        low, high = 0, 0
    if not 1 <= low <= high:
        raise InputError("arguments", _flag(name), f"expected (MIN, MAX) with 1 <= MIN <= MAX, got {value!r}")
    return low, high


def _values(bounds: Range) -> tuple[np.ndarray, np.ndarray]:
    """The values of a range and their probabilities, each proportional to 1/value."""
    values = np.arange(bounds[0], bounds[1] + 1)
    weights = 1.0 / values
    return values, weights / weights.sum()


def _mean(bounds: Range) -> float:
    values, p = _values(bounds)
    return float(values @ p)


def _draw(rng: np.random.Generator, bounds: Range, n: int) -> np.ndarray:
    values, p = _values(bounds)
    return rng.choice(values, n, p=p)


def room_names(n: int) -> list[str]:
    return [f"{CITIES[i // 2 % len(CITIES)]}-{'ab'[i % 2]}{'' if i < 8 else i // 8}" for i in range(n)]


def generate(spec: FleetSpec) -> dict[str, pa.Table]:
    """The fleet's snapshot tables, the same for a spec every time (one random generator, drawn
    from in this order)."""
    rng = np.random.default_rng(spec.seed)
    rooms = room_names(spec.rooms)
    brokers, broker_names = _brokers(spec, rooms)
    n_topics, n_groups = _sizes(spec)
    topic_queues, topic_names = _topics(spec, rng, n_topics, broker_names)
    subs = _subscriptions(spec, rng, n_topics, n_groups)
    clients = _clients(spec, rng, subs.n_groups, rooms)
    tables = {
        "brokers": brokers,
        "topic_queues": topic_queues,
        "consumers": _consumers(subs, clients, topic_names, rooms),
        "groups": _groups(spec, rng, subs, clients, rooms),
    }
    if spec.queue_config:
        tables["queue_config"] = _queue_config(
            topic_queues,
            subs.group,
            subs.topic,
            clients.counts,
            clients.first,
            clients.group_names,
            topic_names,
            clients.ids,
        )
    return tables


def _brokers(spec: FleetSpec, rooms: list[str]) -> tuple[pa.Table, np.ndarray]:
    """Every broker a master and a slave, alive, in the rooms in turn; and the broker names."""
    n_b = spec.brokers
    broker_room = np.array([rooms[i % len(rooms)] for i in range(n_b)], dtype=object)
    prefix = [f"{broker_room[i]}@" if spec.room_broker_names else "" for i in range(n_b)]
    broker_names = np.array([f"{prefix[i]}broker-{i:02d}" for i in range(n_b)], dtype=object)
    brokers = arrow_table(
        schemas.BROKERS,
        {
            "cluster": ["DefaultCluster"] * (2 * n_b),
            "broker_name": np.repeat(broker_names, 2),
            "broker_id": np.tile([0, 1], n_b).astype(np.int64),
            "address": [f"10.{i % len(rooms)}.0.{2 * i + j + 1}:10911" for i in range(n_b) for j in range(2)],
            "machine_room": np.repeat(broker_room, 2),
            "alive": [True] * (2 * n_b),
        },
    )
    return brokers, broker_names


def _sizes(spec: FleetSpec) -> tuple[int, int | None]:
    """(topics, groups) for about spec.assignments (queue, group) pairs, from the mean queues per
    topic; groups None where each topic draws its own."""
    if spec.queues_per_topic:
        mean_queues = _mean(spec.queues_per_topic)
    elif spec.brokers_per_topic:
        mean_queues = _mean(spec.brokers_per_topic) * QUEUES_PER_BROKER.mean()
    else:
        mean_queues = BROKERS_PER_TOPIC.clip(max=spec.brokers).mean() * QUEUES_PER_BROKER.mean()
    if spec.groups_per_topic:
        return max(1, round(spec.assignments / (mean_queues * _mean(spec.groups_per_topic)))), None
    n_groups = max(1, round(spec.assignments / (mean_queues * TOPICS_PER_GROUP.mean())))
    return max(3, n_groups // 2), n_groups


def _topics(
    spec: FleetSpec, rng: np.random.Generator, n_topics: int, broker_names: np.ndarray
) -> tuple[pa.Table, np.ndarray]:
    """Topics, each on a few distinct brokers with a queue count per broker (or one per topic,
    split evenly over its brokers, the first few by the random order one more); and their names."""
    n_b = spec.brokers
    if spec.brokers_per_topic:
        k = _draw(rng, spec.brokers_per_topic, n_topics)
    else:
        k = np.minimum(rng.choice(BROKERS_PER_TOPIC, n_topics), n_b)
    if spec.queues_per_topic:
        total = _draw(rng, spec.queues_per_topic, n_topics)
        k = np.minimum(k, total)  # every broker of a topic has a queue
    tq_topic = np.repeat(np.arange(n_topics), k)
    order = np.argsort(rng.random((n_topics, n_b)), axis=1)  # a random broker order per topic
    nth = np.arange(len(tq_topic)) - np.repeat(np.cumsum(k) - k, k)  # the broker's place in its topic
    tq_broker = order[tq_topic, nth]
    if spec.queues_per_topic:
        share, rest = np.divmod(total, k)
        read = (share[tq_topic] + (nth < rest[tq_topic])).astype(np.int32)
    else:
        read = rng.choice(QUEUES_PER_BROKER, len(tq_topic)).astype(np.int32)
    shrinking = rng.random(len(read)) < 0.03  # mid-shrink: writes already cut, reads not yet
    write = np.where(shrinking, np.maximum(read // 2, 1), read).astype(np.int32)
    perm = np.where(rng.random(len(read)) < 0.02, 4, 6).astype(np.int32)  # a few read-only
    topic_names = np.array(
        [f"{TOPIC_WORDS[i % len(TOPIC_WORDS)]}-{i:05d}" for i in range(n_topics)], dtype=object
    )
    topic_queues = arrow_table(
        schemas.TOPIC_QUEUES,
        {
            "topic": topic_names[tq_topic],
            "broker_name": broker_names[tq_broker],
            "read_queue_nums": read,
            "write_queue_nums": write,
            "perm": perm,
        },
    )
    return topic_queues, topic_names


@dataclass(frozen=True)
class Subscriptions:
    """Which group reads which topic: a pair per (group, topic)."""

    group: np.ndarray
    topic: np.ndarray
    n_groups: int


def _subscriptions(
    spec: FleetSpec, rng: np.random.Generator, n_topics: int, n_groups: int | None
) -> Subscriptions:
    if spec.groups_per_topic:
        # Each group reads one topic, every topic read by a few groups.
        per_topic = _draw(rng, spec.groups_per_topic, n_topics)
        n_groups = int(per_topic.sum())
        return Subscriptions(np.arange(n_groups), np.repeat(np.arange(n_topics), per_topic), n_groups)
    assert n_groups is not None
    # Popular topics (Zipf-like) are read by many groups.
    popularity = 1.0 / np.arange(1, n_topics + 1) ** 0.6
    popularity = rng.permutation(popularity / popularity.sum())
    subs = rng.choice(TOPICS_PER_GROUP, n_groups)
    sub_group = np.repeat(np.arange(n_groups), subs)
    sub_topic = rng.choice(n_topics, len(sub_group), p=popularity)
    pairs = np.unique(sub_group * n_topics + sub_topic)  # a group reads a topic once
    return Subscriptions(pairs // n_topics, pairs % n_topics, n_groups)


@dataclass(frozen=True)
class Clients:
    """Every group's clients: their count and first index per group, ids, rooms; group names."""

    counts: np.ndarray
    first: np.ndarray
    ids: np.ndarray
    room: np.ndarray  # index into the rooms
    group_names: np.ndarray


def _clients(spec: FleetSpec, rng: np.random.Generator, n_groups: int, rooms: list[str]) -> Clients:
    extra = spec.mean_clients - 1
    if spec.clients_per_group:
        clients = _draw(rng, spec.clients_per_group, n_groups)
    elif extra > 0:
        clients = 1 + rng.negative_binomial(2, 2 / (2 + extra), n_groups)
    else:
        clients = np.ones(n_groups, int)
    n_clients = int(clients.sum())
    idx = np.arange(n_clients)
    room_of_client = rng.integers(0, len(rooms), n_clients)
    pid = rng.integers(1000, 65536, n_clients)
    stamp = rng.integers(10**9, 10**10, n_clients)
    client_ids = np.array(
        [
            f"10.{r}.{i // 250 % 250}.{i % 250 + 1}@{p}#{s}"
            for r, i, p, s in zip(room_of_client.tolist(), idx.tolist(), pid.tolist(), stamp.tolist())
        ],
        dtype=object,
    )
    group_names = np.array(
        [f"cg-{TOPIC_WORDS[g % len(TOPIC_WORDS)]}-{g:05d}" for g in range(n_groups)], dtype=object
    )
    return Clients(clients, np.cumsum(clients) - clients, client_ids, room_of_client, group_names)


def _consumers(subs: Subscriptions, clients: Clients, topic_names: np.ndarray, rooms: list[str]) -> pa.Table:
    """Every client of a group subscribes to each of the group's topics."""
    rows_per_sub = clients.counts[subs.group]
    row_sub = np.repeat(np.arange(len(subs.group)), rows_per_sub)
    within = np.arange(len(row_sub)) - np.repeat(np.cumsum(rows_per_sub) - rows_per_sub, rows_per_sub)
    row_client = clients.first[subs.group[row_sub]] + within
    return arrow_table(
        schemas.CONSUMERS,
        {
            "group": clients.group_names[subs.group[row_sub]],
            "topic": topic_names[subs.topic[row_sub]],
            "client_id": clients.ids[row_client],
            "machine_room": np.array(rooms, dtype=object)[clients.room[row_client]],
        },
    )


def _groups(
    spec: FleetSpec, rng: np.random.Generator, subs: Subscriptions, clients: Clients, rooms: list[str]
) -> pa.Table:
    """A row per group that reads a topic: a strategy (AVG three times as likely as each other),
    MACHINE_ROOM's rooms (one room, or all of them), the defaults for the rest."""
    has_subs = np.bincount(subs.group, minlength=subs.n_groups) > 0
    allowed = [s for s in spec.strategies if s in STRATEGIES] or ["AVG"]
    weights = np.array([3.0] + [1.0] * (len(allowed) - 1))
    strategy = rng.choice(np.array(allowed, dtype=object), subs.n_groups, p=weights / weights.sum())
    idcs = [rooms[: 1 + (g % len(rooms))] for g in np.flatnonzero(has_subs)]
    return arrow_table(
        schemas.GROUPS,
        {
            "group": clients.group_names[has_subs],
            "strategy": strategy[has_subs],
            "virtual_node_cnt": np.full(int(has_subs.sum()), 10, dtype=np.int32),
            "consumer_idcs": idcs,
            "inner_strategy": ["AVG"] * int(has_subs.sum()),
        },
    )


def _queue_config(
    topic_queues, sub_group, sub_topic, clients, first_client, group_names, topic_names, client_ids
) -> pa.Table:
    """Every readable queue of each subscription configured for one client, dealt round-robin."""
    tq = topic_queues.to_pandas()
    tq = tq[(tq.perm & 4) != 0]
    topic_index = {t: i for i, t in enumerate(topic_names)}
    tq_topic = tq.topic.map(topic_index).to_numpy()
    order = np.argsort(tq_topic, kind="stable")
    tq_topic, nums = tq_topic[order], tq.read_queue_nums.to_numpy()[order].astype(np.int64)
    brokers = tq.broker_name.to_numpy(dtype=object)[order]
    # queues of each topic, flat: broker row and queue id
    q_row = np.repeat(np.arange(len(nums)), nums)
    q_id = np.arange(len(q_row)) - np.repeat(np.cumsum(nums) - nums, nums)
    per_topic = np.bincount(tq_topic, weights=nums, minlength=len(topic_names)).astype(np.int64)
    topic_start = np.cumsum(per_topic) - per_topic
    # one row per (subscription, queue of its topic)
    n = per_topic[sub_topic]
    row_sub = np.repeat(np.arange(len(sub_group)), n)
    within = np.arange(len(row_sub)) - np.repeat(np.cumsum(n) - n, n)
    queue = topic_start[sub_topic[row_sub]] + within
    client = first_client[sub_group[row_sub]] + within % clients[sub_group[row_sub]]
    return arrow_table(
        schemas.QUEUE_CONFIG,
        {
            "group": group_names[sub_group[row_sub]],
            "client_id": client_ids[client],
            "topic": topic_names[sub_topic[row_sub]],
            "broker_name": brokers[q_row[queue]],
            "queue_id": q_id[queue].astype(np.int32),
        },
    )
