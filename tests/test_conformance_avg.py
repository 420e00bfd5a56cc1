"""Every AVG and AVG_BY_CIRCLE vector through the pure strategy functions, returned order included.

The full-group records run as one vectorised batch per file, so group boundaries are exercised too;
single-call records (an unknown, empty or null current id; empty lists) go through allocate_one.
"""

from __future__ import annotations

import numpy as np
import pytest

from rmqsim import strategies
from rmqsim.strategies import GroupBatch, distinct_callers
from tests.conformance import assert_single_call, queues, records, unit_examples

STRATEGIES = ["AVG", "AVG_BY_CIRCLE"]


def _all_records(name: str) -> list[dict]:
    return records(name) + unit_examples(name)


def _group_records(name: str) -> list[dict]:
    return [r for r in _all_records(name) if "assignment" in r]


def _single_call_records(name: str) -> list[dict]:
    return [r for r in _all_records(name) if "current_cid" in r]


@pytest.mark.parametrize("name", STRATEGIES)
def test_every_record_is_covered(name: str) -> None:
    # No record may slip past both tests below without a reason.
    uncovered = [r["case_id"] for r in _all_records(name) if "assignment" not in r and "current_cid" not in r]
    assert uncovered == []
    assert len(_all_records(name)) >= 400


@pytest.mark.parametrize("name", STRATEGIES)
def test_group_records_in_one_batch(name: str) -> None:
    recs = _group_records(name)
    batch = GroupBatch.from_lists(
        [r["topic"] for r in recs], [queues(r["queues"]) for r in recs], [r["consumers"] for r in recs]
    )
    callers = distinct_callers(batch)
    allocation, errors = strategies.allocate(strategies.get(name), batch, callers)

    got: dict[tuple[int, str], list[tuple[str, int]]] = {}
    for k in range(len(callers)):
        got[(int(callers.group[k]), batch.client_ids[callers.client[k]])] = []
    for k, q in zip(allocation.caller, allocation.queue):
        key = (int(callers.group[k]), batch.client_ids[callers.client[k]])
        got[key].append((batch.queue_broker[q], int(batch.queue_id[q])))
    got_errors = {
        (int(callers.group[k]), batch.client_ids[callers.client[k]]): errors[k]
        for k in range(len(callers))
        if errors[k] is not None
    }

    for g, r in enumerate(recs):
        assert r["strategy_name"] == name
        expected_errors = {cid: msg.split(": ", 1)[1] for cid, msg in (r.get("errors") or {}).items()}
        for cid in dict.fromkeys(r["consumers"]):
            if cid in expected_errors:
                assert got_errors.get((g, cid)) == expected_errors[cid], r["case_id"]
                assert got[(g, cid)] == [], r["case_id"]
            else:
                assert got[(g, cid)] == queues(r["assignment"][cid]), (r["case_id"], cid)


@pytest.mark.parametrize("name", STRATEGIES)
def test_single_call_records(name: str) -> None:
    recs = _single_call_records(name)
    assert recs
    for r in recs:
        assert_single_call(r, name, None)


def test_hand_worked_avg_and_circle() -> None:
    # 10 queues over 4 clients, as RocketMQ's own unit tests state it.
    mq_all = [("b", i) for i in range(10)]
    cids = ["c0", "c1", "c2", "c3"]
    avg = [[q for _, q in strategies.allocate_one("AVG", "t", mq_all, cids, c)] for c in cids]
    circle = [[q for _, q in strategies.allocate_one("AVG_BY_CIRCLE", "t", mq_all, cids, c)] for c in cids]
    assert avg == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    assert circle == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]


def test_fewer_queues_than_clients_leaves_the_last_idle() -> None:
    mq_all = [("b", 0), ("b", 1)]
    cids = ["a", "b", "c"]
    for name in STRATEGIES:
        got = [strategies.allocate_one(name, "t", mq_all, cids, c) for c in cids]
        assert got == [[("b", 0)], [("b", 1)], []]


def test_unknown_strategy_names_the_choices() -> None:
    with pytest.raises(KeyError, match="unknown strategy 'FASTEST'"):
        strategies.get("FASTEST")
    assert np.array_equal(np.array(strategies.ROCKETMQ_STRATEGIES[:2]), np.array(STRATEGIES))
