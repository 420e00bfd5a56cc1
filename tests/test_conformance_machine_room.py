"""Every MACHINE_ROOM vector through the pure strategy function, returned order included.

The full-group records (and the one whose every call throws) run as one vectorised batch, so group
boundaries and per-group consumeridcs are exercised together; single-call records (an unknown,
empty or null current id; empty lists) go through allocate_one.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rmqsim import strategies
from rmqsim.arrays import as_objects
from rmqsim.strategies import GroupBatch, distinct_callers, machine_room, registry
from tests.conformance import assert_single_call, queues, records, unit_examples

NAME = "MACHINE_ROOM"
STRATEGY = registry.Strategy(NAME, machine_room.allocate, check=machine_room.check)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """allocate_one looks strategies up by name; the registry may not list this one yet."""
    monkeypatch.setattr(registry, "STRATEGIES", {**registry.STRATEGIES, NAME: STRATEGY})


def _all_records() -> list[dict]:
    return records(NAME) + unit_examples(NAME)


def _group_records() -> list[dict]:
    # "assignment": one call per distinct client; "error" without "current_cid": every call threw.
    return [r for r in _all_records() if "current_cid" not in r and ("assignment" in r or "error" in r)]


def _single_call_records() -> list[dict]:
    return [r for r in _all_records() if "current_cid" in r]


def _idcs(values: list) -> np.ndarray:
    """One consumer_idcs element per group; filled one by one so that lists stay lists."""
    out = np.empty(len(values), dtype=object)
    for k, v in enumerate(values):
        out[k] = v
    return out


def _batch(recs: list[dict]) -> GroupBatch:
    return GroupBatch.from_lists(
        [r["topic"] for r in recs],
        [queues(r["queues"]) for r in recs],
        [r["consumers"] for r in recs],
        params={"consumer_idcs": _idcs([r["params"]["consumeridcs"] for r in recs])},
    )


def _run(batch: GroupBatch) -> tuple[dict, dict]:
    """Per (group, distinct client): its queues in returned order, and its error if any."""
    callers = distinct_callers(batch)
    allocation, errors = strategies.allocate(STRATEGY, batch, callers)
    brokers = as_objects(allocation.brokers(batch))
    clients = as_objects(batch.client_ids)
    key = [(int(callers.group[k]), clients[callers.client[k]]) for k in range(len(callers))]
    got: dict[tuple[int, str], list[tuple[str, int]]] = {k: [] for k in key}
    for k, b, q in zip(allocation.caller, brokers, allocation.queue_ids(batch)):
        got[key[k]].append((b, int(q)))
    got_errors = {key[k]: errors[k] for k in range(len(callers)) if errors[k] is not None}
    return got, got_errors


def test_every_record_is_covered() -> None:
    # Each record is either a group record or a single-call record, never both, never neither.
    recs = _all_records()
    group = {r["case_id"] for r in _group_records()}
    single = {r["case_id"] for r in _single_call_records()}
    assert group.isdisjoint(single)
    assert [r["case_id"] for r in recs if r["case_id"] not in group | single] == []
    assert len(recs) == 402
    assert all(r["strategy_name"] == NAME for r in recs)


def test_group_records_in_one_batch() -> None:
    recs = _group_records()
    got, got_errors = _run(_batch(recs))
    for g, r in enumerate(recs):
        expected_errors = {cid: msg.split(": ", 1)[1] for cid, msg in (r.get("errors") or {}).items()}
        if "error" in r:  # every call threw the same exception
            expected_errors = dict.fromkeys(r["consumers"], r["error_message"])
        for cid in dict.fromkeys(r["consumers"]):
            if cid in expected_errors:
                assert got_errors.get((g, cid)) == expected_errors[cid], (r["case_id"], cid)
                assert got[(g, cid)] == [], r["case_id"]
            else:
                assert (g, cid) not in got_errors, (r["case_id"], cid)
                assert got[(g, cid)] == queues(r["assignment"][cid]), (r["case_id"], cid)


def test_arrow_columns_give_the_same_allocation() -> None:
    # Spark hands the strategy Arrow arrays rather than numpy object arrays.
    recs = _group_records()
    plain = _batch(recs)
    arrow = GroupBatch(
        topics=pa.array(list(plain.topics), type=pa.string()),
        queue_offsets=plain.queue_offsets,
        queue_broker=pa.array(list(plain.queue_broker), type=pa.string()),
        queue_id=plain.queue_id,
        client_offsets=plain.client_offsets,
        client_ids=pa.array(list(plain.client_ids), type=pa.string()),
        params=plain.params,
    )
    assert _run(arrow) == _run(plain)


@pytest.mark.usefixtures("registered")
def test_single_call_records() -> None:
    recs = _single_call_records()
    assert recs
    for r in recs:
        assert_single_call(r, NAME, {"consumer_idcs": _idcs([r["params"]["consumeridcs"]])})


@pytest.mark.usefixtures("registered")
def test_null_consumer_idcs_throws_only_where_a_room_is_looked_up() -> None:
    mq_all = [("hz@a", 0), ("hz@a", 1)]
    params = {"consumer_idcs": _idcs([None])}
    with pytest.raises(strategies.AllocationError, match="this.consumeridcs"):
        strategies.allocate_one(NAME, "t", mq_all, ["c0"], "c0", params)
    # Java returns before the loop for a caller that is not in cidAll.
    assert strategies.allocate_one(NAME, "t", mq_all, ["c0"], "other", params) == []
    # No name with two parts: contains() is never called.
    assert strategies.allocate_one(NAME, "t", [("a@", 0), ("a", 1)], ["c0"], "c0", params) == []


@pytest.mark.usefixtures("registered")
def test_hand_worked_two_rooms_three_clients() -> None:
    # consumeridcs {hz}: of the 9 queues, the 7 of hz@broker-a (0-3) and hz@broker-b (0-2) are
    # kept; sh@broker-c and "hz@" (split drops the trailing empty string: one part) are not.
    # n = 7, c = 3: mod = 2, rem = 1. Client 0 gets premqAll[0:2] plus premqAll[0 + 2*3] = the
    # last kept queue; client 1 gets [2:4]; client 2 gets [4:6].
    mq_all = [
        ("hz@", 0),
        ("hz@broker-a", 0),
        ("hz@broker-a", 1),
        ("hz@broker-a", 2),
        ("hz@broker-a", 3),
        ("hz@broker-b", 0),
        ("hz@broker-b", 1),
        ("hz@broker-b", 2),
        ("sh@broker-c", 0),
    ]
    cids = ["c0", "c1", "c2"]
    params = {"consumer_idcs": _idcs([["hz"]])}
    got = [strategies.allocate_one(NAME, "t", mq_all, cids, c, params) for c in cids]
    assert got == [
        [("hz@broker-a", 0), ("hz@broker-a", 1), ("hz@broker-b", 2)],
        [("hz@broker-a", 2), ("hz@broker-a", 3)],
        [("hz@broker-b", 0), ("hz@broker-b", 1)],
    ]
    # With {hz, sh} all 8 two-part queues are kept: mod = 2, rem = 2, so clients 0 and 1 also get
    # premqAll[6] and premqAll[7] (hz@broker-b 2 and sh@broker-c 0).
    params = {"consumer_idcs": _idcs([("sh", "hz")])}
    got = [strategies.allocate_one(NAME, "t", mq_all, cids, c, params) for c in cids]
    assert [[f"{b}:{q}" for b, q in queues] for queues in got] == [
        ["hz@broker-a:0", "hz@broker-a:1", "hz@broker-b:2"],
        ["hz@broker-a:2", "hz@broker-a:3", "sh@broker-c:0"],
        ["hz@broker-b:0", "hz@broker-b:1"],
    ]
