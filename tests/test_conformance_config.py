"""Every CONFIG vector through the pure strategy function, returned order included.

ByConfig returns the caller's configured list whatever mqAll, cidAll and the current id are, so the
vectors pin down that nothing is checked, filtered, de-duplicated or sorted. The full-group records
run as one batch; single-call records go through a helper that mirrors strategies.allocate_one,
because allocate_one has no flat client to hold the list of a caller outside cidAll.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pytest

from rmqsim.arrays import as_objects
from rmqsim.strategies import GroupBatch, by_config, distinct_callers, registry
from rmqsim.strategies.batch import Callers
from rmqsim.strategies.registry import Strategy, allocate
from tests.conformance import queues, records, unit_examples

# Not registered yet: ByConfig makes none of the common argument checks.
CONFIG = Strategy(by_config.NAME, by_config.allocate, checks_arguments=False)

Queue = tuple[str, int]


def _all_records() -> list[dict]:
    return records("CONFIG") + unit_examples("CONFIG")


def _group_records() -> list[dict]:
    return [r for r in _all_records() if "assignment" in r]


def _single_call_records() -> list[dict]:
    return [r for r in _all_records() if "current_cid" in r]


def _configured(r: dict) -> list[Queue] | None:
    mql = r["params"]["messageQueueList"]
    return None if mql is None else queues(mql)


def _objects(values: Sequence[object]) -> np.ndarray:
    # Element by element: np.array would turn a list of equal-length lists into a 3-d array.
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def _results(batch: GroupBatch, callers: Callers, allocation) -> dict[tuple[int, str], list[Queue] | None]:
    """Each caller's returned list (None where allocate returned null), keyed by (group, client id)."""
    cids = as_objects(batch.client_ids)
    keys = [(int(callers.group[k]), cids[callers.client[k]]) for k in range(len(callers))]
    got: dict[tuple[int, str], list[Queue] | None] = {key: [] for key in keys}
    for k, b, q in zip(allocation.caller, as_objects(allocation.brokers(batch)), allocation.queue_ids(batch)):
        got[keys[k]].append((b, int(q)))
    for k in np.flatnonzero(allocation.null_result):
        assert got[keys[k]] == [], "a null result carries no queues"
        got[keys[k]] = None
    return got


def _first_index(batch: GroupBatch) -> dict[tuple[int, str, int], int]:
    """(group, broker, queue id) -> its first flat index in the group's mqAll: a plain Python scan."""
    first: dict[tuple[int, str, int], int] = {}
    rows = zip(batch.queue_group.tolist(), as_objects(batch.queue_broker), batch.queue_id.tolist())
    for i, key in enumerate(rows):
        first.setdefault(key, i)
    return first


def test_every_record_is_covered() -> None:
    # No record may slip past both tests below without a reason (none is skipped).
    uncovered = [r["case_id"] for r in _all_records() if "assignment" not in r and "current_cid" not in r]
    assert uncovered == []
    assert len(_group_records()) + len(_single_call_records()) == len(_all_records()) == 401


@pytest.mark.parametrize("strings", ["numpy", "arrow"])
def test_group_records_in_one_batch(strings: str) -> None:
    recs = _group_records()
    # Every client of a record runs the one strategy instance the vector was made with.
    lists = [_configured(r) for r in recs for _ in r["consumers"]]
    batch = GroupBatch.from_lists(
        [r["topic"] for r in recs],
        [queues(r["queues"]) for r in recs],
        [r["consumers"] for r in recs],
        {"client_config": _objects(lists)},
    )
    if strings == "arrow":  # as the Spark stage hands them over
        batch = dataclasses.replace(
            batch,
            queue_broker=pa.array(list(batch.queue_broker), pa.string()),
            client_ids=pa.array(list(batch.client_ids), pa.string()),
        )
    callers = distinct_callers(batch)
    allocation, errors = allocate(CONFIG, batch, callers)
    assert all(e is None for e in errors)  # not even the "" client of G-CONFIG-0394 throws
    got = _results(batch, callers, allocation)

    for g, r in enumerate(recs):
        assert r["strategy_name"] == "CONFIG"
        assert "errors" not in r and "error" not in r, r["case_id"]
        for cid in dict.fromkeys(r["consumers"]):
            expected = r["assignment"][cid]
            assert got[(g, cid)] == (None if expected is None else queues(expected)), (r["case_id"], cid)

    # The mqAll index of every returned queue, against a plain scan of the caller's group.
    first = _first_index(batch)
    group = callers.group[allocation.caller].tolist()
    returned = zip(group, as_objects(allocation.brokers(batch)), allocation.queue_ids(batch).tolist())
    assert allocation.queue.tolist() == [first.get(key, -1) for key in returned]
    assert (allocation.queue == -1).any() and (allocation.queue >= 0).any()


def _allocate_one(
    topic: str,
    mq_all: Sequence[Queue] | None,
    cid_all: Sequence[str] | None,
    current_cid: str | None,
    configured: list[Queue] | None,
) -> list[Queue] | None:
    """strategies.allocate_one for ByConfig, whose list belongs to the caller, not to cidAll.

    No argument is checked. A caller outside cidAll (null and "" included) gets its list from a
    flat client of its own, in a second group with no queues; the caller stays in group 0, whose
    mqAll its queues are looked up in. Other clients' lists are unknown to one call: None.
    """
    cids = list(cid_all or [])
    index = cids.index(current_cid) if current_cid in cids else -1
    cid_alls = [cids] if index >= 0 else [cids, [current_cid]]
    lists = [None] * len(cids) + ([] if index >= 0 else [None])
    client = index if index >= 0 else len(cids)
    lists[client] = configured
    batch = GroupBatch.from_lists(
        [topic] * len(cid_alls),
        [list(mq_all or []), []][: len(cid_alls)],
        cid_alls,
        {"client_config": _objects(lists)},
    )
    callers = Callers(np.zeros(1, np.int64), np.array([client], np.int64), np.array([index], np.int64))
    result, errors = allocate(CONFIG, batch, callers)
    assert errors[0] is None
    return _results(batch, callers, result)[(0, current_cid)]


def test_single_call_records() -> None:
    recs = _single_call_records()
    assert len(recs) == 12
    for r in recs:
        assert "error" not in r, r["case_id"]  # ByConfig throws for nothing
        mq_all = queues(r["queues"]) if r["queues"] is not None else None
        got = _allocate_one(r["topic"], mq_all, r["consumers"], r["current_cid"], _configured(r))
        assert got == (None if r["result"] is None else queues(r["result"])), r["case_id"]


def test_single_call_records_through_allocate_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # The records allocate_one can express: the caller is in cidAll, so cidAll-aligned params
    # reach its list (here mqAll empty or null, which ByConfig does not check).
    monkeypatch.setitem(registry.STRATEGIES, "CONFIG", CONFIG)
    recs = [r for r in _single_call_records() if r["current_cid"] in (r["consumers"] or [])]
    assert [r["case_id"] for r in recs] == ["G-CONFIG-0384", "G-CONFIG-0385"]
    for r in recs:
        mq_all = queues(r["queues"]) if r["queues"] is not None else None
        params = {"client_config": _objects([_configured(r)] * len(r["consumers"]))}
        got = registry.allocate_one("CONFIG", r["topic"], mq_all, r["consumers"], r["current_cid"], params)
        assert got == queues(r["result"]), r["case_id"]


def test_hand_worked_overlapping_lists() -> None:
    # Group 0: mqAll b:0..3 (flat 0..3); group 1: mqAll b:0..1 (flat 4..5).
    # c1 lists b:1, b:0 and x:9, which no mqAll has; c2 lists b:0 again and b:2; b:3 is nobody's.
    # c3 in group 1 names b:1, which must resolve to group 1's copy; c4 has a null list.
    c1 = [("b", 1), ("b", 0), ("x", 9)]
    c2 = [("b", 0), ("b", 2)]
    batch = GroupBatch.from_lists(
        ["t", "t"],
        [[("b", i) for i in range(4)], [("b", 0), ("b", 1)]],
        [["c1", "c2"], ["c3", "c4"]],
        {"client_config": _objects([c1, c2, [("b", 1)], None])},
    )
    callers = distinct_callers(batch)
    allocation, _ = allocate(CONFIG, batch, callers)
    assert allocation.caller.tolist() == [0, 0, 0, 1, 1, 2]
    assert allocation.queue.tolist() == [1, 0, -1, 0, 2, 5]
    assert list(allocation.broker) == ["b", "b", "x", "b", "b", "b"]
    assert allocation.queue_id.tolist() == [1, 0, 9, 0, 2, 1]
    assert allocation.null_result.tolist() == [False, False, False, True]
    owners = np.bincount(allocation.queue[allocation.queue >= 0], minlength=6)
    assert owners.tolist() == [2, 1, 1, 0, 0, 1]  # b:0 owned twice, b:3 by nobody
