"""Route building: mqAll per topic and cidAll per (topic, group), as the real client builds them."""

from __future__ import annotations

import sys
from array import array
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqsim import schemas
from rmqsim.javaorder import java_key, java_order, java_sorted
from rmqsim.snapshot.write import arrow_table
from rmqsim.stage import routes
from rmqsim.strategies import GroupBatch
from tests.conformance import queues, records


def _table(spec: schemas.TableSpec, rows: list[tuple]) -> pa.Table:
    """Rows as tuples of the spec's first columns; the later ones null."""
    columns = [c.name for c in spec.columns]
    return arrow_table(spec, {c: [r[i] if i < len(r) else None for r in rows] for i, c in enumerate(columns)})


def _mq_all(topic_queues: list[tuple], brokers: list[tuple]) -> dict[str, list[tuple[str, int]]]:
    """Every topic's mqAll from route rows, through routes.topic_routes and the kernel's expansion."""
    tq = _table(schemas.TOPIC_QUEUES, topic_queues)
    br = _table(schemas.BROKERS, brokers)
    out = {}
    for r in (SimpleNamespace(**row) for row in routes.topic_routes(tq, brokers=br).to_pylist()):
        batch = GroupBatch.from_routes(
            topics=np.array([r.topic], dtype=object),
            broker_offsets=np.array([0, len(r.broker_names)]),
            broker_names=np.array(r.broker_names, dtype=object),
            read_queue_nums=np.array(r.read_queue_nums, dtype=np.int64),
            client_offsets=np.array([0, 0]),
            client_ids=np.empty(0, dtype=object),
        )
        out[r.topic] = [(b, int(i)) for b, i in zip(batch.queue_broker, batch.queue_id)]
    return out


def _alive(name: str, alive: bool | None = True, broker_id: int = 0) -> tuple:
    return ("c", name, broker_id, None, None, alive)


def test_mq_all_matches_every_route_vector() -> None:
    recs = records("mqall_from_route")
    tq, names = [], set()
    for r in recs:
        for qd in r["route"]["queueDatas"]:
            # one topic per record: several records reuse a topic name with different routes
            tq.append((r["case_id"], qd["brokerName"], qd["readQueueNums"], qd["writeQueueNums"], qd["perm"]))
            names.add(qd["brokerName"])
    got = _mq_all(tq, [_alive(n) for n in sorted(names)])
    assert len(recs) == 150
    for r in recs:
        assert got[r["case_id"]] == queues(r["mqAll"]), r["case_id"]


def test_perm_bits_read_counts_and_dead_brokers() -> None:
    tq = [
        ("t", "rw", 4, 8, 6),  # read and write: 4 read queues, whatever the write count
        ("t", "ro", 2, 2, 4),  # read only
        ("t", "wo", 3, 3, 2),  # write only: invisible to consumers
        ("t", "inherit", 1, 1, 7),
        ("t", "priority-only", 5, 5, 8),
        ("t", "dead", 2, 2, 6),  # no instance alive: gone from the route
        ("t", "slave-only", 2, 2, 6),  # master down, slave up: still routed
        ("t", "null-alive", 1, 1, 6),  # null means alive
        ("t", "shrunk", 0, 4, 6),  # read queues already at 0
        ("t", "rw", 2, 2, 6),  # a repeated QueueData adds nothing: mqAll is a set
    ]
    brokers = [
        _alive("rw"),
        _alive("ro"),
        _alive("wo"),
        _alive("inherit"),
        _alive("priority-only"),
        _alive("dead", False),
        _alive("dead", False, 1),
        _alive("slave-only", False),
        _alive("slave-only", True, 1),
        _alive("null-alive", None),
        _alive("shrunk"),
    ]
    expected = (
        [("inherit", 0), ("null-alive", 0)]
        + [("ro", i) for i in range(2)]
        + [("rw", i) for i in range(4)]
        + [("slave-only", i) for i in range(2)]
    )
    assert _mq_all(tq, brokers) == {"t": expected}


def test_topic_with_no_readable_queue_keeps_an_empty_route() -> None:
    got = _mq_all([("t", "wo", 3, 3, 2), ("u", "a", 1, 1, 6)], [_alive("wo"), _alive("a")])
    assert got == {"t": [], "u": [("a", 0)]}


def test_java_order_puts_surrogate_pairs_before_high_bmp_characters() -> None:
    # From the conformance vector G-AVG-0399: U+6D88 < U+D83D (emoji's high surrogate) < U+FF21.
    names = ["room1-Ａ@3", "room1-😀@2", "room2-cafe@5", "room1-消费者@1", "room2-café@4"]
    expected = ["room1-消费者@1", "room1-😀@2", "room1-Ａ@3", "room2-cafe@5", "room2-café@4"]
    assert java_sorted(names) == expected
    assert sorted(names) != expected  # code-point order differs here
    consumers = _table(schemas.CONSUMERS, [("g", "t", n, None, None) for n in names])
    [row] = routes.client_lists(consumers).to_pylist()
    assert row["client_ids"] == expected


def test_client_lists_keep_duplicate_ids() -> None:
    consumers = _table(schemas.CONSUMERS, [("g", "t", c, None, None) for c in ["b@1", "a@1", "b@1"]])
    [row] = routes.client_lists(consumers).to_pylist()
    assert row["client_ids"] == ["a@1", "b@1", "b@1"]


_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), min_codepoint=32), min_size=0, max_size=6
)


@settings(max_examples=25, deadline=None)
@given(st.lists(_text, min_size=1, max_size=12))
def test_java_order_key_equals_utf16_code_unit_order(names) -> None:
    table = pa.table({"name": pa.array(names, pa.string())})
    keys = java_order(table["name"])
    got = table.take(pc.sort_indices(pa.table({"key": keys}), sort_keys=[("key", "ascending")]))[
        "name"
    ].to_pylist()
    # Java's compareTo: lexicographic over UTF-16 code units, a shorter prefix first.
    native = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"
    units = [array("H", n.encode(native)).tolist() for n in names]
    expected = [n for _, n in sorted(zip(units, names), key=lambda p: p[0])]
    assert got == expected
    assert [java_key(n) for n in got] == sorted(java_key(n) for n in names)
