"""Every GO_*.jsonl.gz vector through the Go client's strategies (strategies.go), returned order included.

The vectors list queues and consumers unsorted, as the route and the broker hand them over. The
stage gives every library its batch in Java order, so each file runs as one batch sorted the Java
way, and again unsorted and as Arrow columns: the Go functions derive Go's order themselves. The
hand-worked tests compute CRC-32 with zlib here, independently of the code under test.
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pytest

from rmqsim.arrays import as_objects, object_array
from rmqsim.javaorder import java_key
from rmqsim.strategies import Callers, GroupBatch, distinct_callers, registry
from rmqsim.strategies.go import GO_STRATEGIES
from rmqsim.strategies.params import ConfigLists
from tests.conformance import queues, records

FILES = ("GO_AVG", "GO_AVG_BY_CIRCLE", "GO_CONSISTENT_HASH", "GO_MACHINE_ROOM", "GO_MACHINE_ROOM_NEARBY")


def _params(recs: list[dict]) -> dict:
    out: dict = {}
    if any("virtual_node_cnt" in r["params"] for r in recs):
        out["virtual_node_cnt"] = np.array([r["params"]["virtual_node_cnt"] for r in recs], dtype=np.int64)
    if any("consumer_idcs" in r["params"] for r in recs):
        out["consumer_idcs"] = object_array([r["params"]["consumer_idcs"] for r in recs])
    return out


def _batch(recs: list[dict], java_order: bool = True) -> GroupBatch:
    mq_alls = [queues(r["queues"]) for r in recs]
    cid_alls = [list(r["consumers"]) for r in recs]
    if java_order:  # what the stage hands every library
        mq_alls = [sorted(m, key=lambda q: (java_key(q[0]), q[1])) for m in mq_alls]
        cid_alls = [sorted(c, key=java_key) for c in cid_alls]
    return GroupBatch.from_lists([r["topic"] for r in recs], mq_alls, cid_alls, _params(recs))


def _arrow(batch: GroupBatch) -> GroupBatch:
    """The same batch with Arrow string columns, as a Spark batch arrives."""
    return GroupBatch(
        topics=pa.array(list(batch.topics), type=pa.string()),
        queue_offsets=batch.queue_offsets,
        queue_broker=pa.array(list(batch.queue_broker), type=pa.string()),
        queue_id=batch.queue_id,
        client_offsets=batch.client_offsets,
        client_ids=pa.array(list(batch.client_ids), type=pa.string()),
        params=batch.params,
    )


def _run(name: str, batch: GroupBatch, callers: Callers | None = None) -> dict:
    """Per (group, client id): its queues in returned order, None for nil, or its error."""
    callers = distinct_callers(batch) if callers is None else callers
    allocation, errors = registry.allocate(GO_STRATEGIES[name], batch, callers)
    clients = as_objects(batch.client_ids)
    keys = [
        (int(g), clients[c] if i >= 0 else "<absent>")
        for g, c, i in zip(callers.group, callers.client, callers.index, strict=True)
    ]
    got: dict = {k: [] for k in keys}
    for k, b, q in zip(allocation.caller, as_objects(allocation.brokers(batch)), allocation.queue_ids(batch)):
        got[keys[k]].append((b, int(q)))
    for k, key in enumerate(keys):
        if errors[k] is not None:
            got[key] = errors[k]
        elif allocation.null_result is not None and allocation.null_result[k]:
            assert got[key] == [], key
            got[key] = None
    return got


def _expected(recs: list[dict]) -> dict:
    return {
        (g, cid): None if value is None else queues(value)
        for g, r in enumerate(recs)
        for cid, value in r["assignment"].items()
    }


def test_the_vectors_are_all_here() -> None:
    recs = [r for name in FILES for r in records(name)]
    assert len(recs) == 840
    for name in FILES:
        assert {r["strategy"] for r in records(name)} == {name.removeprefix("GO_")}
    for r in recs:  # one entry per distinct client id, none more
        assert list(r["assignment"]) == list(dict.fromkeys(r["consumers"])), r["case_id"]


@pytest.mark.parametrize("name", FILES)
def test_every_record_in_one_batch(name: str) -> None:
    recs = records(name)
    assert _run(name.removeprefix("GO_"), _batch(recs)) == _expected(recs)


@pytest.mark.parametrize("name", FILES)
def test_input_order_and_arrow_columns_do_not_matter(name: str) -> None:
    # Go sorts mqAll and cidAll itself: the unsorted lists, and Arrow columns, give the same answer.
    recs = records(name)
    strategy = name.removeprefix("GO_")
    assert _run(strategy, _batch(recs, java_order=False)) == _expected(recs)
    assert _run(strategy, _arrow(_batch(recs))) == _expected(recs)


def _one_group(name: str, mq_all: list, cid_all: list, params: dict | None = None) -> dict:
    """Every distinct client of one group, in Java order as the stage gives them, plus a caller
    whose id is not in cidAll (key "<absent>")."""
    batch = GroupBatch.from_lists(
        ["T"],
        [sorted(mq_all, key=lambda q: (java_key(q[0]), q[1]))],
        [sorted(cid_all, key=java_key)],
        params,
    )
    callers = distinct_callers(batch)
    absent = Callers(np.zeros(1, np.int64), np.zeros(1, np.int64), np.full(1, -1, np.int64))
    both = Callers(
        np.append(callers.group, absent.group),
        np.append(callers.client, absent.client),
        np.append(callers.index, absent.index),
    )
    return {cid: value for (_, cid), value in _run(name, batch, both).items()}


def test_hand_worked_crc32_ring_two_clients_one_node_each() -> None:
    # Nodes are str(i) + clientId: "0c1" and "0c2". The ring, ascending: 1563252070 (c2),
    # 3290694876 (c1). A queue goes to the first node strictly above its hash, else wraps:
    #   a:0 3332418027 > both -> wraps to c2    a:1 3753613482 -> wraps to c2
    #   b:0 2070594853 -> c1                    b:1 1651635300 -> c1
    #   b:2 1230808999 -> c2 (1563252070 is the first node above it)
    def crc(text: str) -> int:
        return zlib.crc32(text.encode())

    assert (crc("0c1"), crc("0c2")) == (3290694876, 1563252070)
    hashes = {
        (b, q): crc(f"MessageQueue [topic=T, brokerName={b}, queueId={q}]") for b in "ab" for q in (0, 1, 2)
    }
    assert hashes[("a", 0)] == 3332418027 and hashes[("a", 1)] == 3753613482
    assert (hashes[("b", 0)], hashes[("b", 1)], hashes[("b", 2)]) == (2070594853, 1651635300, 1230808999)

    mq_all = [("b", 2), ("a", 1), ("b", 0), ("a", 0), ("b", 1)]
    got = _one_group("CONSISTENT_HASH", mq_all, ["c2", "c1"], {"virtual_node_cnt": np.array([1])})
    assert got == {"c1": [("b", 0), ("b", 1)], "c2": [("a", 0), ("a", 1), ("b", 2)], "<absent>": None}


def _forge(prefix: bytes, suffix: bytes, target: int) -> bytes:
    """Four bytes X with crc32(prefix + X + suffix) == target. CRC-32 is affine over GF(2) for a
    fixed length: each bit of X flips a fixed set of CRC bits, so X solves a 32x32 linear system."""
    base = zlib.crc32(prefix + bytes(4) + suffix)
    basis: list[tuple[int, int]] = []  # (CRC bits flipped, bits of X), distinct leading bits
    for k in range(32):
        value, combo = zlib.crc32(prefix + (1 << k).to_bytes(4, "little") + suffix) ^ base, 1 << k
        for b_value, b_combo in basis:
            if value ^ b_value < value:
                value, combo = value ^ b_value, combo ^ b_combo
        if value:
            basis = sorted([*basis, (value, combo)], reverse=True)
    want, combo = target ^ base, 0
    for b_value, b_combo in basis:
        if want ^ b_value < want:
            want, combo = want ^ b_value, combo ^ b_combo
    assert want == 0
    return combo.to_bytes(4, "little")


def _client_with_node_hash(target: int, replica: int = 0) -> str:
    """A printable client id whose node key str(replica) + id hashes to ``target``."""
    for n in range(10_000):
        head = f"{replica}10.0.0.{n}@".encode()
        tail = _forge(head, b"", target)
        if all(0x21 <= byte <= 0x7E for byte in tail):
            return (head + tail).decode()[len(str(replica)) :]
    raise AssertionError("no printable forgery found")


def test_hand_worked_queue_hash_equal_to_a_node_goes_to_the_next_node() -> None:
    # Client x's only node is forged to hash exactly like queue b:0. The library searches for the
    # first node strictly greater, so b:0 skips x and goes to the other node, y's (wrapping if
    # needed). Java's ring (>=) would have given it to x.
    queue_hash = zlib.crc32(b"MessageQueue [topic=T, brokerName=b, queueId=0]")
    x = _client_with_node_hash(queue_hash)
    assert zlib.crc32(b"0" + x.encode()) == queue_hash
    got = _one_group("CONSISTENT_HASH", [("b", 0)], [x, "y"], {"virtual_node_cnt": np.array([1])})
    assert got == {x: [], "y": [("b", 0)], "<absent>": None}


def test_hand_worked_equal_node_hashes_the_later_client_wins() -> None:
    # Client w's node "0w" and client ids forged to the same CRC: the ring keeps one node per hash,
    # the one added last. Clients are added in Go's cidAll order (byte order), so whichever of the
    # two sorts later owns every queue.
    w_hash = zlib.crc32(b"0w")
    forged = _client_with_node_hash(w_hash)
    assert forged < "w"  # digits sort before letters: w is added last
    mq_all = [("b", q) for q in range(4)]
    got = _one_group("CONSISTENT_HASH", mq_all, ["w", forged], {"virtual_node_cnt": np.array([1])})
    assert got == {forged: [], "w": mq_all, "<absent>": None}


def test_consistent_hash_node_counts_zero_and_negative() -> None:
    mq_all = [("b", 0), ("b", 1)]
    # 0: the library divides by NumberOfReplicas * 4 after each Add: a panic for every caller it
    # reaches (not for the absent one, which returned nil before).
    got = _one_group("CONSISTENT_HASH", mq_all, ["c1", "c2"], {"virtual_node_cnt": np.array([0])})
    assert got == {
        "c1": "panic: runtime error: integer divide by zero",
        "c2": "panic: runtime error: integer divide by zero",
        "<absent>": None,
    }
    # Negative: no node, no panic; Get fails on the empty circle and everyone gets an empty list.
    got = _one_group("CONSISTENT_HASH", mq_all, ["c1", "c2"], {"virtual_node_cnt": np.array([-1])})
    assert got == {"c1": [], "c2": [], "<absent>": None}


def test_hand_worked_machine_room_blocks_come_from_the_unfiltered_mq_all() -> None:
    # mqAll in Go order: broker-x:0, hz@:0, hz@b:0, hz@b:1, sh@c:0. consumeridcs [hz]. Go's split
    # keeps empty parts, so "hz@" is [hz, ""], two parts, kept (Java would drop it); broker-x has
    # one part and sh@c another room. premqAll = [hz@:0, hz@b:0, hz@b:1]: n = 3, c = 2, so
    # mod = 1, rem = 1.
    #   c0 (i = 0): mqAll[0:1] = broker-x:0 (no room at all), then premqAll[0 + 1*2] = hz@b:1
    #   c1 (i = 1): mqAll[1:2] = hz@:0; 1 < rem is false, no extra
    # hz@b:0 has no owner, broker-x:0 has one.
    mq_all = [("sh@c", 0), ("hz@b", 1), ("hz@", 0), ("broker-x", 0), ("hz@b", 0)]
    idcs = object_array([["hz"]])
    got = _one_group("MACHINE_ROOM", mq_all, ["c1", "c0"], {"consumer_idcs": idcs})
    assert got == {"c0": [("broker-x", 0), ("hz@b", 1)], "c1": [("hz@", 0)], "<absent>": None}

    # consumeridcs [hz, hz] lists every kept queue twice: n = 6, mod = 3. c0's block is
    # mqAll[0:3]; c1's is mqAll[3:6], and mqAll has 5 queues: Go panics at index 5.
    idcs = object_array([["hz", "hz"]])
    got = _one_group("MACHINE_ROOM", mq_all, ["c1", "c0"], {"consumer_idcs": idcs})
    assert got == {
        "c0": [("broker-x", 0), ("hz@", 0), ("hz@b", 0)],
        "c1": "panic: runtime error: index out of range [5] with length 5",
        "<absent>": None,
    }

    # A nil consumeridcs keeps nothing: everyone gets an empty list (Java would throw).
    got = _one_group("MACHINE_ROOM", mq_all, ["c1", "c0"], {"consumer_idcs": object_array([None])})
    assert got == {"c0": [], "c1": [], "<absent>": None}


def test_hand_worked_go_sorts_client_ids_by_utf8_bytes() -> None:
    # U+FF21 (full-width A, UTF-8 EF BC A1) against U+1D4B3 (UTF-8 F0 9D 92 B3; UTF-16 D835 DCB3):
    # Go puts the full-width A first (0xEF < 0xF0), Java the other (0xD835 < 0xFF21). With two
    # queues and two clients, AVG gives index 0 queue 0.
    full_width, script_x = "10.1.1.1@\uff21", "10.1.1.1@\U0001d4b3"
    assert sorted([script_x, full_width], key=java_key) == [script_x, full_width]
    mq_all = [("broker-a", 0), ("broker-a", 1)]
    for name in ("AVG", "AVG_BY_CIRCLE", "MACHINE_ROOM_NEARBY"):
        got = _one_group(name, mq_all, [script_x, full_width])
        assert got == {full_width: [("broker-a", 0)], script_x: [("broker-a", 1)], "<absent>": None}


def test_go_sorts_broker_names_by_utf8_bytes() -> None:
    # The same two names as brokers: Go's mqAll starts with the full-width one, so AVG's first
    # client (c0) gets its queue.
    mq_all = [("\U0001d4b3", 0), ("\uff21", 0)]
    got = _one_group("AVG", mq_all, ["c0", "c1"])
    assert got == {"c0": [("\uff21", 0)], "c1": [("\U0001d4b3", 0)], "<absent>": None}


@pytest.mark.parametrize(
    "name", ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY"]
)
def test_nil_where_java_throws_or_returns_empty(name: str) -> None:
    params = {"virtual_node_cnt": np.array([10]), "consumer_idcs": object_array([["hz"]])}
    # An empty current id that is in cidAll: nil (Java throws).
    got = _one_group(name, [("hz@b", 0)], ["", "c1"], params)
    assert got[""] is None and got["<absent>"] is None  # absent: nil (Java returns an empty list)
    assert got["c1"] in ([], [("hz@b", 0)])
    # Empty mqAll: nil for everyone (Java throws).
    assert _one_group(name, [], ["c0", "c1"], params) == {"c0": None, "c1": None, "<absent>": None}
    # Empty cidAll: only an absent caller can ask, and gets nil.
    assert _one_group(name, [("hz@b", 0)], [], params) == {"<absent>": None}


def test_duplicate_ids_share_the_first_copy() -> None:
    # AVG over [c0, c0, c1] and 3 queues: both copies of c0 take index 0's queue; index 1's goes
    # unowned, as in Java.
    got = _one_group("AVG", [("b", 0), ("b", 1), ("b", 2)], ["c1", "c0", "c0"])
    assert got == {"c0": [("b", 0)], "c1": [("b", 2)], "<absent>": None}


def test_config_returns_the_configured_list() -> None:
    config = ConfigLists.from_lists([[("x", 7), ("b", 0)], None])
    got = _one_group("CONFIG", [("b", 0)], ["c0", "c1"], {"client_config": config})
    assert got["c0"] == [("x", 7), ("b", 0)] and got["c1"] is None


def test_go_strategies_cover_rocketmq_names() -> None:
    assert set(GO_STRATEGIES) == set(registry.ROCKETMQ_STRATEGIES)
    assert all(not s.checks_arguments for s in GO_STRATEGIES.values())
