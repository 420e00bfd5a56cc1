"""Properties of every strategy over random fleets (hypothesis), on the allocation stage's own
input batches, without Spark:

- under the balanced strategies every queue of mqAll has exactly one owner (MACHINE_ROOM: every
  queue of the rooms in consumer_idcs, and no other);
- only the group's own clients own queues, under every strategy;
- the answer does not depend on the order of the (topic, group) rows in a batch.
(The order of the snapshot's rows is covered end to end by tests/test_output.py.)
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqsim.arrays import union_sorted
from rmqsim.strategies import STRATEGIES
from rmqsim.strategies.by_config import first_match
from tests.builders import route, staged

ROOMS = ("hz-a", "hz-b")
ONE_OWNER = {"AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "STICKY", "LAG_BALANCED", "MACHINE_ROOM_NEARBY"}


@st.composite
def group_rows(draw, index: int) -> dict:
    """One (topic, group) route: brokers named room@broker in two rooms, distinct clients."""
    n_brokers = draw(st.integers(1, 4))
    rooms = [draw(st.sampled_from(ROOMS)) for _ in range(n_brokers)]
    brokers = [f"{room}@broker-{i}" for i, room in enumerate(rooms)]
    reads = [draw(st.integers(0, 9)) for _ in brokers]
    clients = sorted(draw(st.sets(st.integers(1, 60), min_size=1, max_size=9)))
    client_ids = [f"10.0.0.{c}@{1000 + c}" for c in clients]
    client_rooms = [draw(st.sampled_from(ROOMS)) for _ in client_ids]
    queues = [(b, q) for b, n in zip(brokers, reads) for q in range(n)]
    # CONFIG: each client's own list, some queues configured for none. Which ones is drawn, so
    # that hypothesis' seed alone fixes the example (hash() of strings changes with PYTHONHASHSEED).
    configs = [
        [{"broker_name": b, "queue_id": q} for b, q in queues if draw(st.booleans())] for _ in client_ids
    ]
    virtual_node_cnt = draw(st.integers(1, 12))
    consumer_idcs = draw(st.lists(st.sampled_from(ROOMS), min_size=1, max_size=2, unique=True))
    inner_strategy = draw(st.sampled_from(["AVG", "AVG_BY_CIRCLE"]))
    backlogs = [{"broker_name": b, "queue_id": q, "backlog": draw(st.integers(0, 500))} for b, q in queues]
    return route(
        scenario="s",
        phase=0,
        strategies=list(STRATEGIES),
        skipped=[],
        topic=f"topic-{index}",
        group=f"group-{index}",
        brokers=dict(zip(brokers, reads)),
        broker_rooms=rooms,
        clients=client_ids,
        client_rooms=client_rooms,
        client_configs=configs,
        virtual_node_cnt=virtual_node_cnt,
        consumer_idcs=consumer_idcs,
        inner_strategy=inner_strategy,
        message_model="CLUSTERING",
        last_phase=0,
        compare=True,
        backlogs=backlogs,
        stale_clients=None,
        view_phase=None,
    )


@st.composite
def fleets(draw) -> list[dict]:
    return [draw(group_rows(i)) for i in range(draw(st.integers(1, 4)))]


def _owned(rows: list[dict]) -> list[tuple]:
    """(strategy, topic, group, client, broker, queue id) of every owned queue, sorted."""
    got = staged(rows).assignments
    columns = ["strategy", "topic", "group", "client_id", "broker_name", "queue_id"]
    return sorted(map(tuple, got[columns].values.tolist()))


@settings(max_examples=60, deadline=None)
@given(fleets())
def test_balanced_strategies_give_every_queue_one_owner_and_only_clients_own(rows: list[dict]) -> None:
    owned = _owned(rows)
    for row in rows:
        queues = sorted((b, q) for b, n in zip(row["broker_names"], row["read_queue_nums"]) for q in range(n))
        mine = [o for o in owned if o[2] == row["group"]]
        assert {o[3] for o in mine} <= set(row["client_ids"])  # only the group's clients
        for strategy in sorted(ONE_OWNER):
            got = sorted((o[4], o[5]) for o in mine if o[0] == strategy)
            assert got == queues, strategy
        in_rooms = [(b, q) for b, q in queues if b.split("@")[0] in row["consumer_idcs"]]
        assert sorted((o[4], o[5]) for o in mine if o[0] == "MACHINE_ROOM") == in_rooms


@settings(max_examples=40, deadline=None)
@given(fleets(), st.randoms(use_true_random=False))
def test_the_answer_does_not_depend_on_the_order_of_rows_in_a_batch(rows: list[dict], random) -> None:
    shuffled = list(rows)
    random.shuffle(shuffled)
    assert _owned(shuffled) == _owned(rows)


_key = st.integers(min_value=0, max_value=5)
_big = st.sampled_from([0, 1, 2**60, 2**60 + 1])  # spans whose product overflows int64 codes


@given(
    keys=st.lists(st.tuples(_key, _key, _key | _big), max_size=30),
    queries=st.lists(st.tuples(_key | st.just(-1), _key, _key | _big | st.just(-1)), max_size=30),
)
@settings(max_examples=200, deadline=None)
def test_config_finds_the_first_equal_mq_all_entry_of_each_configured_queue(keys, queries) -> None:
    # A dict of first positions is the obvious answer; -1 (a null) never matches.
    first: dict[tuple[int, ...], int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    expected = [first.get(q, -1) for q in queries]
    columns = lambda rows: tuple(np.array([r[i] for r in rows], dtype=np.int64) for i in range(3))  # noqa: E731
    assert list(first_match(columns(keys), columns(queries))) == expected


_keys = st.sets(st.integers(-(2**62), 2**62), max_size=30)


@given(a=_keys, b=_keys)
@settings(max_examples=200, deadline=None)
def test_union_sorted_is_the_set_union_with_where_each_key_came_from(a, b) -> None:
    # Python's sets are the independent answer: their union, sorted, and membership in each.
    union, in_a, in_b = union_sorted(np.array(sorted(a), np.int64), np.array(sorted(b), np.int64))
    expected = sorted(a | b)
    assert union.tolist() == expected
    assert in_a.tolist() == [k in a for k in expected]
    assert in_b.tolist() == [k in b for k in expected]
