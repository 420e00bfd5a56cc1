"""Every BROKER vector (QueryAssignmentProcessor's answer) through strategies.broker, plus hand cases.

The records list queues and consumers as the broker receives them (unsorted); the broker sorts
both in Java order, so the batch is built from the Java-sorted lists. A record's answer per client
is the broker's Set, listed sorted: the function's answers are compared sorted the same way, after
checking that they hold no queue twice (a Set cannot).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from rmqsim.arrays import as_objects
from rmqsim.javaorder import java_key, java_sorted
from rmqsim.strategies import Allocation, Callers, GroupBatch, broker, distinct_callers
from tests.conformance import queues, records

Queue = tuple[str, int]


def _mq_key(q: Queue) -> tuple[bytes, int]:
    # MessageQueue.compareTo within one topic: broker name (UTF-16 code units), then queue id.
    return java_key(q[0]), q[1]


def _batch(topics, mq_alls, cid_alls) -> GroupBatch:
    return GroupBatch.from_lists(
        topics, [sorted(queues(m), key=_mq_key) for m in mq_alls], [java_sorted(c) for c in cid_alls]
    )


def _answers(
    batch: GroupBatch, callers: Callers, allocation: Allocation
) -> dict[tuple[int, str], list | None]:
    """Each caller's answer in returned order (None where the broker answers null), keyed by
    (group, client id)."""
    cids = as_objects(batch.client_ids)
    keys = [(int(callers.group[k]), cids[callers.client[k]]) for k in range(len(callers))]
    got: dict[tuple[int, str], list | None] = {key: [] for key in keys}
    brokers, ids = as_objects(allocation.brokers(batch)), allocation.queue_ids(batch)
    for k, b, q in zip(allocation.caller, brokers, ids):
        got[keys[k]].append((b, int(q)))
    for k in np.flatnonzero(allocation.null_result):
        assert got[keys[k]] == [], "a null answer carries no queues"
        got[keys[k]] = None
    return got


def _run(recs: list[dict], strings: str = "numpy") -> dict[tuple[int, str], list | None]:
    batch = _batch([r["topic"] for r in recs], [r["queues"] for r in recs], [r["consumers"] for r in recs])
    if strings == "arrow":  # as the Spark stage hands them over
        batch = dataclasses.replace(
            batch,
            topics=pa.array(list(batch.topics), pa.string()),
            queue_broker=pa.array(list(batch.queue_broker), pa.string()),
            client_ids=pa.array(list(batch.client_ids), pa.string()),
        )
    callers = distinct_callers(batch)
    allocation = broker.allocate(
        batch,
        callers,
        strategy=np.array([r["strategy"] for r in recs], dtype=object),
        pop=np.array([r["mode"] == "POP" for r in recs]),
        pop_share_queue_num=np.array([r["pop_share_queue_num"] for r in recs], dtype=np.int64),
        server_load_balancer_enable=np.array([r["server_load_balancer_enable"] for r in recs]),
    )
    return _answers(batch, callers, allocation)


def _one_group(
    mq_all: list[Queue],
    cid_all: list[str],
    *,
    strategy: str = "AVG",
    pop: bool = True,
    share: int = -1,
    topic="t",
) -> dict[str, list | None]:
    batch = GroupBatch.from_lists([topic], [mq_all], [cid_all])
    callers = distinct_callers(batch)
    allocation = broker.allocate(
        batch,
        callers,
        strategy=np.array([strategy], dtype=object),
        pop=np.array([pop]),
        pop_share_queue_num=np.array([share], dtype=np.int64),
    )
    return {cid: answer for (_, cid), answer in _answers(batch, callers, allocation).items()}


def test_the_records_are_what_this_file_expects() -> None:
    recs = records("BROKER")
    assert len(recs) == 700
    assert all(isinstance(r["assignment"], dict) for r in recs)
    # None of the records has a retry topic: request_pop's rule is tested by hand below.
    assert not any(r["topic"].startswith("%RETRY%") for r in recs)
    # serverLoadBalancerEnable off (the broker hands every client the whole queue set) is modelled,
    # not skipped: it is one path of the function.
    assert sum(not r["server_load_balancer_enable"] for r in recs) == 37


@pytest.mark.parametrize("strings", ["numpy", "arrow"])
def test_every_record_in_one_batch(strings: str) -> None:
    recs = records("BROKER")
    got = _run(recs, strings)
    for g, r in enumerate(recs):
        # One answer per distinct client id (a "dup" record lists an id twice, answered once).
        assert set(r["assignment"]) == set(r["consumers"]), r["case_id"]
        for cid, expected in r["assignment"].items():
            answer = got[(g, cid)]
            if expected is None:
                assert answer is None, (r["case_id"], cid)
                continue
            assert answer is not None, (r["case_id"], cid)
            assert len(set(answer)) == len(answer), (r["case_id"], cid)
            # Sorted here: the broker answers a Set, and the records list it sorted.
            assert sorted(answer, key=_mq_key) == queues(expected), (r["case_id"], cid)


def test_every_path_is_exercised_by_the_records() -> None:
    recs = records("BROKER")
    batch = _batch([r["topic"] for r in recs], [r["queues"] for r in recs], [r["consumers"] for r in recs])
    callers = distinct_callers(batch)
    path, reason = broker.answer_paths(
        batch,
        callers,
        strategy=np.array([r["strategy"] for r in recs], dtype=object),
        pop=np.array([r["mode"] == "POP" for r in recs]),
        pop_share_queue_num=np.array([r["pop_share_queue_num"] for r in recs], dtype=np.int64),
        server_load_balancer_enable=np.array([r["server_load_balancer_enable"] for r in recs]),
    )
    paths = {broker.EVERY_QUEUE, broker.NULL, broker.PULL, broker.POP_ALL, broker.POP_SHARED, broker.POP_ONE}
    assert set(path.tolist()) == paths
    # Every null in the records is an unsupported strategy: no record makes the allocation throw.
    assert all(r.startswith(broker.UNSUPPORTED_STRATEGY) for r in reason[path == broker.NULL])


def test_pop_sharing_one_neighbour_with_four_clients_and_five_queues() -> None:
    mq_all = [("b", i) for i in range(5)]
    cids = ["c0", "c1", "c2", "c3"]
    # share 1: 1 > 0 and 1 < len(cidAll) - 1 = 3, and 4 clients <= 5 queues: own share + the next one's.
    # AVG of 5 over 4: c0 [0, 1], c1 [2], c2 [3], c3 [4].
    #   c0: [0, 1] + c1's [2]; c1: [2] + [3]; c2: [3] + [4]; c3: [4] + c0's [0, 1] (wrapping).
    # Every queue is read by exactly two clients: 0 and 1 by c0 and c3, 2 by c0 and c1,
    # 3 by c1 and c2, 4 by c2 and c3.
    got = _one_group(mq_all, cids, strategy="AVG", share=1)
    assert {c: [q for _, q in got[c]] for c in cids} == {
        "c0": [0, 1, 2],
        "c1": [2, 3],
        "c2": [3, 4],
        "c3": [4, 0, 1],
    }
    # AVG_BY_CIRCLE of 5 over 4: c0 [0, 4], c1 [1], c2 [2], c3 [3]; then the same window.
    got = _one_group(mq_all, cids, strategy="AVG_BY_CIRCLE", share=1)
    assert {c: [q for _, q in got[c]] for c in cids} == {
        "c0": [0, 4, 1],
        "c1": [1, 2],
        "c2": [2, 3],
        "c3": [3, 0, 4],
    }


@pytest.mark.parametrize("share", [0, -1, 3, 7])
def test_pop_without_sharing_reads_every_broker(share: int) -> None:
    # share <= 0, or >= len(cidAll) - 1 = 3: every client gets (broker, -1) once per broker of
    # mqAll (the Java list has one per queue, 2 + 3 of them; the Set keeps one per broker).
    mq_all = [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]
    got = _one_group(mq_all, ["c0", "c1", "c2", "c3"], share=share)
    assert got == {c: [("a", -1), ("b", -1)] for c in ["c0", "c1", "c2", "c3"]}


def test_pop_with_more_clients_than_queues_gives_one_queue_each() -> None:
    # share 1 < len(cidAll) - 1 = 4, and 5 clients > 3 queues: mqAll[index % 3].
    got = _one_group([("b", 0), ("b", 1), ("b", 2)], ["c0", "c1", "c2", "c3", "c4"], share=1)
    assert got == {"c0": [("b", 0)], "c1": [("b", 1)], "c2": [("b", 2)], "c3": [("b", 0)], "c4": [("b", 1)]}


@pytest.mark.parametrize("pop", [False, True])
def test_a_strategy_the_broker_does_not_have_is_answered_null(pop: bool) -> None:
    # Only AVG and AVG_BY_CIRCLE are registered; the lookup comes before PULL or POP.
    got = _one_group([("b", 0), ("b", 1)], ["c0", "c1"], strategy="CONSISTENT_HASH", pop=pop, share=0)
    assert got == {"c0": None, "c1": None}


def test_server_load_balancer_off_hands_out_the_whole_queue_set() -> None:
    batch = GroupBatch.from_lists(["t"], [[("b", 0), ("b", 1)]], [["c0", "c1"]])
    callers = distinct_callers(batch)
    allocation = broker.allocate(
        batch,
        callers,
        strategy=np.array(["CONFIG"], dtype=object),
        server_load_balancer_enable=np.array([False]),
    )
    assert _answers(batch, callers, allocation) == {
        (0, "c0"): [("b", 0), ("b", 1)],
        (0, "c1"): [("b", 0), ("b", 1)],
    }


def test_a_retry_topic_is_always_pull() -> None:
    mq_all = [("b", i) for i in range(4)]
    got = _one_group(mq_all, ["c0", "c1"], topic="%RETRY%g", share=0)
    assert got == {"c0": [("b", 0), ("b", 1)], "c1": [("b", 2), ("b", 3)]}
    assert broker.request_pop(
        np.array(["%RETRY%g", "t", None], dtype=object), np.array([True] * 3)
    ).tolist() == [
        False,
        True,
        True,
    ]


def test_a_duplicated_id_repeats_a_share_and_leaves_its_own_unread() -> None:
    # cidAll a, a, b, c, d over 6 queues, AVG: positions 0..4 get [0, 1], [2], [3], [4], [5],
    # but indexOf("a") is 0, so position 1's share [2] is nobody's. Share 1:
    #   a: [0, 1] + position 1 = "a" again (dropped); b: [3] + [4]; c: [4] + [5];
    #   d: [5] + position 0 = a's [0, 1].
    got = _one_group([("b", i) for i in range(6)], ["a", "a", "b", "c", "d"], share=1)
    assert {c: [q for _, q in v] for c, v in got.items()} == {
        "a": [0, 1],
        "b": [3, 4],
        "c": [4, 5],
        "d": [5, 0, 1],
    }


def test_an_empty_neighbour_id_makes_the_answer_null() -> None:
    # Sorted cidAll "", a, b, c over 4 queues, share 1: the call made for "" throws (currentCID is
    # empty), so "" itself and c (whose neighbour, wrapping, is "") are answered null.
    got = _one_group([("b", i) for i in range(4)], ["", "a", "b", "c"], share=1)
    assert got == {"": None, "a": [("b", 1), ("b", 2)], "b": [("b", 2), ("b", 3)], "c": None}
    # With more clients than queues the broker's own allocate uses isBlank: a blank id is null,
    # the others are not affected.
    got = _one_group([("b", 0), ("b", 1)], [" ", "a", "b", "c"], share=1)
    assert got == {" ": None, "a": [("b", 1)], "b": [("b", 0)], "c": [("b", 1)]}
