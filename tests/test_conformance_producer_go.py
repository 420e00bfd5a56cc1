"""GO_PRODUCER_ROUTE, GO_PRODUCER_SELECT, GO_PRODUCER_HASH: the Go client (rocketmq-client-go v2).

Routes: all 300 lists in one vectorised call, panics as errors, and ``same_as_java`` against the
Java builder on the same routes. Selection: every step of the round-robin selector, then the
steady state (1/N per entry) from the real sequences and from many simulated cycles. Hash: fnv32a
and the index for every record in one call.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from rmqsim.producers.hashing import fnv32a, go_hash_index
from rmqsim.producers.publish_list import go_publish_lists, java_publish_lists
from rmqsim.producers.selection_go import RoundRobinSelector
from rmqsim.producers.shares import round_robin_shares
from tests.conformance import failing, queues, records, route_rows

ROUTES = records("GO_PRODUCER_ROUTE")
SELECT = records("GO_PRODUCER_SELECT")
HASH = records("GO_PRODUCER_HASH")


def test_every_route_in_one_batch():
    kwargs, master_empty = route_rows(ROUTES)
    lists = go_publish_lists(**kwargs, master_empty=master_empty)
    errors = lists.error.to_pylist()
    for i, r in enumerate(ROUTES):
        if r["result"] is None:
            expected = ([], False, "panic: " + r["panic"])
        else:
            expected = (queues(r["result"]["messageQueueList"]), r["result"]["orderTopic"], None)
        assert (lists.topic_list(i), bool(lists.order_topic[i]), errors[i]) == expected, r["case_id"]


def test_same_as_java():
    """A case where both clients fail counts as the same (README)."""
    kwargs, master_empty = route_rows(ROUTES)
    go = go_publish_lists(**kwargs, master_empty=master_empty)
    java = java_publish_lists(**kwargs)
    go_failed, java_failed = go.error.is_valid().to_pylist(), java.error.is_valid().to_pylist()
    for i, r in enumerate(ROUTES):
        same = (go_failed[i] and java_failed[i]) or (
            not go_failed[i]
            and not java_failed[i]
            and go.topic_list(i) == java.topic_list(i)
            and go.order_topic[i] == java.order_topic[i]
        )
        assert same == r["same_as_java"], r["case_id"]
    assert sum(not r["same_as_java"] for r in ROUTES) > 0  # 29 in the public file


def test_every_step_of_every_sequence():
    assert failing(_check_sequence, SELECT) == []


def _check_sequence(r: dict) -> None:
    selector = RoundRobinSelector({} if r["start_counter"] is None else {r["topic"]: r["start_counter"]})
    listed = queues(r["queues"])
    selected = []
    for k, step in enumerate(r["steps"]):
        queue = selector.select(r["topic"], listed, step["last_broker_name"])
        selected.append(queue)
        assert (list(queue), selector.counters[r["topic"]]) == (step["selected"], step["counter_after"]), k
    assert selected == queues(r["selected"])
    times = Counter(selected)
    assert [[b, q, times[(b, q)]] for b, q in dict.fromkeys(listed)] == r["counts"]


def _multiplicity(listed: list[tuple[str, int]], calls_per_entry: int) -> Counter:
    """round_robin_shares over the list, times the calls, summed per distinct queue."""
    shares = round_robin_shares(np.array([0, len(listed)]))
    per_queue: Counter = Counter()
    for queue, share in zip(listed, shares):
        per_queue[queue] += round(share * len(listed) * calls_per_entry)
    return per_queue


def test_real_first_attempts_visit_every_entry_once_per_window():
    """From the records alone: N consecutive first attempts (last "") whose counters run
    consecutively (no retry between them, no 2^32 wrap) select every entry once."""
    windows = 0
    for r in SELECT:
        listed = queues(r["queues"])
        n = len(listed)
        expected = _multiplicity(listed, 1)
        calls = [
            (tuple(s["selected"]), s["counter_after"]) for s in r["steps"] if s["last_broker_name"] == ""
        ]
        for start in range(len(calls) - n + 1):
            counters = [c for _, c in calls[start : start + n]]
            if counters != list(range(counters[0], counters[0] + n)):
                continue
            assert Counter(q for q, _ in calls[start : start + n]) == expected, (r["case_id"], start)
            windows += 1
    assert windows > 0


def test_many_simulated_cycles_match_round_robin_shares():
    assert failing(_check_simulated_cycles, SELECT) == []


def _check_simulated_cycles(r: dict) -> None:
    listed = queues(r["queues"])
    start = r["start_counter"] or 0
    start = 0 if start + 5 * len(listed) >= 2**32 else start  # clear of the uint32 wrap
    selector = RoundRobinSelector({r["topic"]: start})
    selected = [selector.select(r["topic"], listed) for _ in range(5 * len(listed))]
    assert Counter(selected) == _multiplicity(listed, 5)


def test_a_fresh_selector_starts_at_index_one():
    # counter 0 -> 1 before the first pick: index 1 % 3 = 1, then 2, then 0.
    selector = RoundRobinSelector()
    listed = [("a", 0), ("a", 1), ("b", 0)]
    assert [selector.select("T", listed) for _ in range(3)] == [("a", 1), ("b", 0), ("a", 0)]


def test_every_hash_record():
    fnv = fnv32a(pa.array([r["sharding_key"] for r in HASH]))
    assert fnv.dtype == np.uint32
    assert fnv.tolist() == [r["fnv32a"] for r in HASH]
    index = go_hash_index(fnv, np.array([r["queue_count"] for r in HASH]))
    assert index.tolist() == [r["index"] for r in HASH]
    for r, i in zip(HASH, index.tolist()):
        assert len(r["queues"]) == r["queue_count"] and r["queues"][i] == r["selected"], r["case_id"]


def test_fnv32a_by_hand():
    # Published FNV-1a 32-bit values: "" is the offset basis 0x811c9dc5; "a" 0xe40c292c;
    # "foobar" 0xbf9cf968. Lengths differ, so the byte-position loop retires keys as it goes.
    assert fnv32a(["", "a", "foobar"]).tolist() == [0x811C9DC5, 0xE40C292C, 0xBF9CF968]
    # int(h) % n on 64 bits: 0xE40C292C = 3826002220 stays positive; 3826002220 = 7 * 546571745 + 5.
    # (As an int32 it would be negative: a 32-bit build negates and gets another index.)
    assert go_hash_index(np.array([0xE40C292C], dtype=np.uint32), 7).tolist() == [5]
