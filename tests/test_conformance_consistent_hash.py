"""Every CONSISTENT_HASH vector through the pure strategy functions, returned order included.

The full-group records (and the one whose constructor throws for every call) run as one vectorised
batch, so group boundaries and per-group virtualNodeCnt are exercised together; single-call records
(an unknown, empty or null current id; empty lists) go through allocate_one. The registry does not
list CONSISTENT_HASH yet, so the tests build its Strategy themselves.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left

import numpy as np
import pyarrow as pa
import pytest

from rmqsim.strategies import (
    AllocationError,
    GroupBatch,
    allocate_one,
    consistent_hash,
    distinct_callers,
    registry,
)
from rmqsim.strategies.registry import Strategy, allocate
from tests.conformance import assert_single_call, queues, records, unit_examples

NAME = consistent_hash.NAME
STRATEGY = Strategy(NAME, consistent_hash.allocate, check=consistent_hash.check)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """allocate_one looks strategies up by name: list this one for the test's duration."""
    monkeypatch.setitem(registry.STRATEGIES, NAME, STRATEGY)


def _all_records() -> list[dict]:
    return records(NAME) + unit_examples(NAME)


def _virtual_nodes(r: dict) -> int:
    ctor = r["params"]["ctor"]
    assert ctor in ("default", "int"), r["case_id"]
    return consistent_hash.DEFAULT_VIRTUAL_NODES if ctor == "default" else r["params"]["virtualNodeCnt"]


def _params(recs: list[dict]) -> dict[str, np.ndarray]:
    return {"virtual_node_cnt": np.array([_virtual_nodes(r) for r in recs], dtype=np.int64)}


def _group_records() -> list[dict]:
    # "assignment": one call per distinct client. A bare "error" without current_cid: the
    # constructor threw (virtualNodeCnt < 0), so every call of the group fails the same way.
    return [r for r in _all_records() if "assignment" in r or ("error" in r and "current_cid" not in r)]


def _single_call_records() -> list[dict]:
    return [r for r in _all_records() if "current_cid" in r]


def _batch(recs: list[dict]) -> GroupBatch:
    return GroupBatch.from_lists(
        [r["topic"] for r in recs],
        [queues(r["queues"]) for r in recs],
        [r["consumers"] for r in recs],
        _params(recs),
    )


def test_every_record_is_covered() -> None:
    # No record may slip past both tests below without a reason; none needs one.
    covered = {r["case_id"] for r in _group_records()} | {r["case_id"] for r in _single_call_records()}
    assert [r["case_id"] for r in _all_records() if r["case_id"] not in covered] == []
    assert len(records(NAME)) == 400
    assert len(unit_examples(NAME)) >= 20


def test_default_constructor_means_ten_nodes() -> None:
    assert consistent_hash.DEFAULT_VIRTUAL_NODES == 10
    for r in _all_records():
        if r["params"]["ctor"] == "default":
            assert r["params"]["virtualNodeCnt"] == 10, r["case_id"]
    batch = GroupBatch.from_lists(["t"], [[("b", 0)]], [["c"]])
    assert consistent_hash.virtual_node_counts(batch).tolist() == [10]


def test_group_records_in_one_batch() -> None:
    recs = _group_records()
    batch = _batch(recs)
    callers = distinct_callers(batch)
    allocation, errors = allocate(STRATEGY, batch, callers)

    def key(k: int) -> tuple[int, str]:
        return int(callers.group[k]), batch.client_ids[callers.client[k]]

    got: dict[tuple[int, str], list[tuple[str, int]]] = {key(k): [] for k in range(len(callers))}
    for k, q in zip(allocation.caller, allocation.queue):
        got[key(k)].append((batch.queue_broker[q], int(batch.queue_id[q])))
    got_errors = {key(k): errors[k] for k in range(len(callers)) if errors[k] is not None}

    checked = 0
    for g, r in enumerate(recs):
        if "assignment" not in r:
            # getName() never ran: the constructor threw before any allocate call.
            assert r["strategy_name"] is None, r["case_id"]
            for cid in dict.fromkeys(r["consumers"]):
                assert got_errors.get((g, cid)) == r["error_message"], r["case_id"]
                assert got[(g, cid)] == [], r["case_id"]
                checked += 1
            continue
        assert r["strategy_name"] == NAME, r["case_id"]
        expected_errors = {cid: msg.split(": ", 1)[1] for cid, msg in (r.get("errors") or {}).items()}
        for cid in dict.fromkeys(r["consumers"]):
            if cid in expected_errors:
                assert got_errors.get((g, cid)) == expected_errors[cid], r["case_id"]
                assert got[(g, cid)] == [], r["case_id"]
            else:
                assert (g, cid) not in got_errors, r["case_id"]
                assert got[(g, cid)] == queues(r["assignment"][cid]), (r["case_id"], cid)
            checked += 1
    assert checked == len(callers)


def test_arrow_strings_give_the_same_allocation() -> None:
    # A Spark batch hands the strategy Arrow arrays; the hashes must not depend on that.
    recs = _group_records()
    plain = _batch(recs)
    arrow = GroupBatch(
        topics=pa.array(list(plain.topics), pa.string()),
        queue_offsets=plain.queue_offsets,
        queue_broker=pa.array(list(plain.queue_broker), pa.string()),
        queue_id=plain.queue_id,
        client_offsets=plain.client_offsets,
        client_ids=pa.array(list(plain.client_ids), pa.string()),
        params=plain.params,
    )
    callers = distinct_callers(plain)
    want, want_errors = allocate(STRATEGY, plain, callers)
    got, got_errors = allocate(STRATEGY, arrow, callers)
    assert np.array_equal(got.caller, want.caller)
    assert np.array_equal(got.queue, want.queue)
    assert got_errors.tolist() == want_errors.tolist()


def test_single_call_records(registered: None) -> None:
    recs = _single_call_records()
    assert recs
    for r in recs:
        assert_single_call(r, NAME, _params([r]))


def test_negative_virtual_node_count_is_the_constructors_error(registered: None) -> None:
    params = {"virtual_node_cnt": np.array([-3], dtype=np.int64)}
    with pytest.raises(AllocationError, match="^illegal virtualNodeCnt :-3$"):
        allocate_one(NAME, "t", [("b", 0)], ["a"], "a", params)


def test_a_ring_past_rmqsims_limit_is_refused_and_one_at_it_runs(
    registered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consistent_hash, "MAX_RING_NODES", 6)
    three = {"virtual_node_cnt": np.array([3], dtype=np.int64)}
    mq_all = [("b", 0), ("b", 1)]
    # 2 clients x 3 nodes = 6: at the limit, so it runs and every queue has an owner.
    owned = [q for cid in ("x", "y") for q in allocate_one(NAME, "t", mq_all, ["x", "y"], cid, three)]
    assert sorted(owned) == mq_all
    # 3 clients x 3 nodes = 9: past it. Not the client's exception: rmqsim's own, and it says so.
    with pytest.raises(AllocationError) as refused:
        allocate_one(NAME, "t", mq_all, ["x", "y", "z"], "x", three)
    assert (
        str(refused.value)
        == "rmqsim does not simulate a ring of more than 6 nodes: virtualNodeCnt 3 for 3 clients is 9"
    )


def test_the_clients_own_exception_wins_over_rmqsims_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # 3 clients x 10 nodes is past a limit of 6, and cidAll holds a null before its end: the real
    # client throws the NullPointerException, so that is what the group reports.
    monkeypatch.setattr(consistent_hash, "MAX_RING_NODES", 6)
    batch = GroupBatch.from_lists(["t"], [[("b", 0)]], [["a", None, "b"]])
    callers = distinct_callers(batch)
    _, errors = allocate(STRATEGY, batch, callers)
    by_caller = dict(zip(batch.client_ids[callers.client], errors.tolist()))
    assert by_caller["a"].startswith("NullPointerException")
    assert by_caller["b"].startswith("NullPointerException")


# Independent of the strategy module: MD5Hash.hash and ConsistentHashRouter, spelt out.


def _md5(key: str) -> int:
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


def _mq(topic: str, broker: str, queue_id: int) -> str:
    return f"MessageQueue [topic={topic}, brokerName={broker}, queueId={queue_id}]"


def _java_owners(cid_all: list[str], v: int, mq_keys: list[str], renumber: bool = True) -> list[str | None]:
    """A TreeMap ring built as addNode does; ``renumber=False`` numbers copy k from k * v instead."""
    ring: dict[int, str] = {}
    seen: dict[str, int] = {}
    for cid in cid_all:
        existing = sum(owner == cid for owner in ring.values()) if renumber else seen.get(cid, 0) * v
        seen[cid] = seen.get(cid, 0) + 1
        for i in range(v):
            ring[_md5(f"{cid}-{i + existing}")] = cid
    keys = sorted(ring)
    if not keys:
        return [None] * len(mq_keys)
    return [ring[keys[bisect_left(keys, _md5(k)) % len(keys)]] for k in mq_keys]


def test_hand_worked_ring(registered: None) -> None:
    # Two clients, one virtual node each: the ring has two keys, and a queue goes to the first key
    # at or after its hash, or wraps around to the smaller key.
    one = {"virtual_node_cnt": np.array([1], dtype=np.int64)}
    a, b = _md5("a-0"), _md5("b-0")
    low, high = ("a", "b") if a < b else ("b", "a")
    mq_all = [("broker", i) for i in range(40)]
    expected: dict[str, list[tuple[str, int]]] = {"a": [], "b": []}
    cases = set()
    for q in mq_all:
        h = _md5(_mq("t", *q))
        if h <= min(a, b):
            expected[low].append(q)
            cases.add("below both")
        elif h <= max(a, b):
            expected[high].append(q)
            cases.add("between")
        else:
            expected[low].append(q)  # past the largest key: wraps to the smallest
            cases.add("wraps")
    assert cases == {"below both", "between", "wraps"}  # the 40 queues exercise every branch
    for cid in ("a", "b"):
        assert allocate_one(NAME, "t", mq_all, ["a", "b"], cid, one) == expected[cid]


def test_zero_virtual_nodes_leave_every_queue_unowned(registered: None) -> None:
    zero = {"virtual_node_cnt": np.array([0], dtype=np.int64)}
    assert allocate_one(NAME, "t", [("b", 0), ("b", 1)], ["a", "b"], "a", zero) == []


# "c44193-1" and "c50300-0" share their first four MD5 bytes: on the ring the later replaces the
# earlier, so "c44193" holds one node fewer than it put in, and its next copy numbers from there.
A, B = "c44193", "c50300"
SHIFTED = [
    [A, B, A, "x"],
    [A, B, A, A, "x"],  # the third copy's start depends on the second's: the re-put "A-2" replaces itself
    [A, "x", B, A, A],
]
UNSHIFTED = [B, A, A, "x"]  # here A's node replaces B's: A keeps all of its nodes


def _collision_case() -> tuple[list[tuple[str, int]], list[str | None]]:
    assert _md5(f"{A}-1") == _md5(f"{B}-0")
    mq_all = [("broker", i) for i in range(1000)]  # enough queues to land in the arcs that move
    return mq_all, [_mq("t", *q) for q in mq_all]


@pytest.mark.parametrize("cid_all", [*SHIFTED, UNSHIFTED])
def test_duplicate_ids_after_a_hash_collision(registered: None, cid_all: list[str]) -> None:
    mq_all, mq_keys = _collision_case()
    owners = _java_owners(cid_all, 3, mq_keys)
    params = {"virtual_node_cnt": np.array([3], dtype=np.int64)}
    for cid in dict.fromkeys(cid_all):
        want = [q for q, owner in zip(mq_all, owners) if owner == cid]
        assert allocate_one(NAME, "t", mq_all, cid_all, cid, params) == want, cid


@pytest.mark.parametrize("cid_all", SHIFTED)
def test_the_collision_cases_are_sensitive_to_renumbering(cid_all: list[str]) -> None:
    # Without this, the test above could pass with copy k simply numbered from k * v.
    _, mq_keys = _collision_case()
    assert _java_owners(cid_all, 3, mq_keys) != _java_owners(cid_all, 3, mq_keys, renumber=False)


def test_null_client_id_before_the_end_is_javas_null_pointer() -> None:
    # getExistingReplicas calls equals on every ring node's key: a null id on the ring throws for
    # every later addNode. Last in cidAll it is harmless ("null-i" nodes, owned by no caller).
    mq_all = [("b", i) for i in range(30)]
    batch = GroupBatch.from_lists(["t", "t"], [mq_all, mq_all], [["a", None, "b"], ["a", "b", None]])
    callers = distinct_callers(batch)
    allocation, errors = allocate(STRATEGY, batch, callers)
    by_caller = dict(zip(zip(callers.group.tolist(), batch.client_ids[callers.client]), errors.tolist()))
    assert by_caller[(0, "a")].startswith("NullPointerException")
    assert by_caller[(0, "b")].startswith("NullPointerException")
    assert by_caller[(0, None)] == "currentCID is empty"
    assert by_caller[(1, "a")] is None and by_caller[(1, "b")] is None
    owners = _java_owners(["a", "b", "null"], 10, [_mq("t", *q) for q in mq_all])
    got = {cid: [] for cid in ("a", "b")}
    for k, q in zip(allocation.caller, allocation.queue):
        assert callers.group[k] == 1
        got[batch.client_ids[callers.client[k]]].append(int(batch.queue_id[q]))
    assert "null" in owners
    for cid in ("a", "b"):
        assert got[cid] == [i for i, owner in enumerate(owners) if owner == cid]


def test_random_batch_matches_the_reference_ring() -> None:
    # Ids and topics shared across groups (hashed once per distinct key), duplicates, unsorted
    # cidAll and per-group virtualNodeCnt, against the plain router above.
    rng = np.random.default_rng(7)
    pool = [f"10.0.0.{i}@{i % 3}" for i in range(12)]
    topics, mq_alls, cid_alls, counts = [], [], [], []
    for _ in range(60):
        topics.append(f"topic-{rng.integers(4)}")
        brokers = [f"broker-{b}" for b in rng.choice(5, size=rng.integers(1, 4), replace=False)]
        mq_alls.append([(b, int(i)) for b in brokers for i in range(rng.integers(1, 9))])
        cid_alls.append([pool[i] for i in rng.integers(0, len(pool), size=rng.integers(1, 7))])
        counts.append(int(rng.choice([0, 1, 2, 5, 10])))
    params = {"virtual_node_cnt": np.array(counts, dtype=np.int64)}
    batch = GroupBatch.from_lists(topics, mq_alls, cid_alls, params)
    callers = distinct_callers(batch)
    allocation, errors = allocate(STRATEGY, batch, callers)
    assert all(e is None for e in errors)
    got: dict[int, list[tuple[str, int]]] = {k: [] for k in range(len(callers))}
    for k, q in zip(allocation.caller, allocation.queue):
        got[int(k)].append((batch.queue_broker[q], int(batch.queue_id[q])))
    for k in range(len(callers)):
        g = int(callers.group[k])
        owners = _java_owners(cid_alls[g], counts[g], [_mq(topics[g], *q) for q in mq_alls[g]])
        cid = batch.client_ids[callers.client[k]]
        assert got[k] == [q for q, owner in zip(mq_alls[g], owners) if owner == cid], (g, cid)


def test_unpaired_surrogate_hashes_as_javas_question_mark() -> None:
    # Java's getBytes() writes "?" for a lone surrogate, so "a\ud800" puts its virtual nodes where
    # "a?" would: the same ring, and the same queues for the first client and for "b".
    mq_all = [("broker-a", i) for i in range(16)]
    owned = []
    for odd in ("a\ud800", "a?"):
        batch = GroupBatch.from_lists(["T"], [mq_all], [[odd, "b"]], {})
        callers = distinct_callers(batch)
        allocation, _ = allocate(STRATEGY, batch, callers)
        owned.append(sorted(zip(allocation.caller.tolist(), allocation.queue.tolist())))
    assert owned[0] == owned[1]
    assert {c for c, _ in owned[0]} == {0, 1}  # both clients own queues: the case can tell them apart
