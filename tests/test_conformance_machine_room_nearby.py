"""Every MACHINE_ROOM_NEARBY vector through the pure strategy function, returned order included.

The vectors give a room resolver per record rather than rooms; the resolvers live here (resolving
is the caller's business: the simulator gets rooms from its input tables). Full-group records,
group-wide errors included, run as one vectorised batch; single-call records (an unknown, empty or
null current id; empty or null lists) go through allocate_one.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rmqsim import strategies
from rmqsim.strategies import GroupBatch, distinct_callers, machine_room_nearby, registry
from rmqsim.strategies.params import ParamValues
from rmqsim.strategies.registry import Strategy, allocate
from tests.conformance import assert_single_call, java_split, queues, records, resolve, unit_examples

NAME = machine_room_nearby.NAME
STRATEGY = Strategy(NAME, machine_room_nearby.allocate, check=machine_room_nearby.check)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    # The registry does not list the strategy yet; allocate_one looks it up by name.
    monkeypatch.setitem(registry.STRATEGIES, NAME, STRATEGY)


def _rooms(r: dict) -> tuple[list, list]:
    resolver = r["params"]["resolver"]
    return (
        [resolve(resolver["broker"], b) for b, _ in r["queues"] or []],
        [resolve(resolver["consumer"], c) for c in r["consumers"] or []],
    )


def _params(recs: list[dict]) -> dict[str, np.ndarray]:
    rooms = [_rooms(r) for r in recs]
    return {
        "queue_room": np.array([room for q, _ in rooms for room in q], dtype=object),
        "client_room": np.array([room for _, c in rooms for room in c], dtype=object),
        "inner_strategy": np.array([r["params"]["inner"] for r in recs], dtype=object),
    }


# --- which record goes where -----------------------------------------------------------------------


def _all_records() -> list[dict]:
    return records(NAME) + unit_examples(NAME)


def _is_group(r: dict) -> bool:
    # A whole cidAll, called once per distinct id: an assignment, or an error every call threw.
    return "current_cid" not in r and ("assignment" in r or "error" in r)


def _group_records() -> list[dict]:
    return [r for r in _all_records() if _is_group(r)]


def _single_call_records() -> list[dict]:
    return [r for r in _all_records() if "current_cid" in r]


def test_every_record_is_covered() -> None:
    recs = _all_records()
    uncovered = [r["case_id"] for r in recs if not _is_group(r) and "current_cid" not in r]
    assert uncovered == []  # no record is skipped, so no reason is owed
    assert len(recs) == 415
    assert len(_group_records()) + len(_single_call_records()) == len(recs)
    for r in recs:
        assert r["strategy_name"] == f"{NAME}-{r['params']['inner']}", r["case_id"]


def _group_batch(recs: list[dict]) -> GroupBatch:
    return GroupBatch.from_lists(
        [r["topic"] for r in recs],
        [queues(r["queues"]) for r in recs],
        [r["consumers"] for r in recs],
        _params(recs),
    )


def _results(batch: GroupBatch) -> tuple[dict, dict]:
    callers = distinct_callers(batch)
    allocation, errors = allocate(STRATEGY, batch, callers)
    client_ids = np.asarray(
        batch.client_ids.to_pylist() if isinstance(batch.client_ids, pa.Array) else batch.client_ids
    )
    key = [(int(callers.group[k]), client_ids[callers.client[k]]) for k in range(len(callers))]
    got: dict[tuple[int, str], list[tuple[str, int]]] = {k: [] for k in key}
    brokers = np.asarray(allocation.brokers(batch), dtype=object)
    for k, b, q in zip(allocation.caller, brokers, allocation.queue_ids(batch)):
        got[key[k]].append((b, int(q)))
    return got, {key[k]: errors[k] for k in range(len(callers)) if errors[k] is not None}


def test_group_records_in_one_batch() -> None:
    recs = _group_records()
    got, got_errors = _results(_group_batch(recs))
    for g, r in enumerate(recs):
        if "error" in r:  # every call threw the same exception
            expected_errors = dict.fromkeys(r["consumers"], r["error_message"])
        else:
            expected_errors = {cid: msg.split(": ", 1)[1] for cid, msg in (r.get("errors") or {}).items()}
        for cid in dict.fromkeys(r["consumers"]):
            if cid in expected_errors:
                assert got_errors.get((g, cid)) == expected_errors[cid], (r["case_id"], cid)
                assert got[(g, cid)] == [], r["case_id"]
            else:
                assert (g, cid) not in got_errors, (r["case_id"], cid, got_errors.get((g, cid)))
                assert got[(g, cid)] == queues(r["assignment"][cid]), (r["case_id"], cid)


def test_arrow_strings_give_the_same_result() -> None:
    # Spark hands strings over as Arrow arrays; the result must not depend on that.
    recs = _group_records()
    batch = _group_batch(recs)
    arrow = GroupBatch(
        topics=pa.array(batch.topics.tolist(), pa.string()),
        queue_offsets=batch.queue_offsets,
        queue_broker=pa.array(batch.queue_broker.tolist(), pa.string()),
        queue_id=batch.queue_id,
        client_offsets=batch.client_offsets,
        client_ids=pa.array(batch.client_ids.tolist(), pa.string()),
        params=ParamValues(
            queue_room=pa.array(batch.params.queue_room.tolist(), pa.string()),
            client_room=pa.array(batch.params.client_room.tolist(), pa.string()),
            inner_strategy=pa.array(batch.params.inner_strategy.tolist(), pa.string()),
        ),
    )
    assert _results(arrow) == _results(batch)


def test_single_call_records(registered: None) -> None:
    recs = _single_call_records()
    assert len(recs) == 13
    for r in recs:
        queue_room, client_room = _rooms(r)
        params = {
            "queue_room": np.array(queue_room, dtype=object),
            "client_room": np.array(client_room, dtype=object),
            "inner_strategy": np.array([r["params"]["inner"]], dtype=object),
        }
        assert_single_call(r, NAME, params)


def test_java_split_semantics() -> None:
    assert java_split("room1@broker-a", "@") == ["room1", "broker-a"]
    assert java_split("-broker-a", "-") == ["", "broker", "a"]  # leading empty string kept
    assert java_split("a--", "-") == ["a"]  # trailing empty strings removed
    assert java_split("", "-") == [""]  # no match: the string itself
    assert java_split("broker", "-") == ["broker"]
    assert java_split("---", "-") == []  # only separators: Java's [0] would throw
    assert java_split("a.b", ".") == []  # a regex: "." matches every character
    with pytest.raises(IndexError):
        resolve({"type": "prefix", "sep": "-"}, "--")
    assert resolve({"type": "suffix", "sep": "@"}, "10.0.0.1@1@hza") == "hza"
    assert resolve({"type": "suffix", "sep": "@"}, "10.0.0.1") is None
    assert resolve({"type": "suffix", "sep": "@"}, "10.0.0.1@") == ""


# --- hand-worked ---------------------------------------------------------------------------------


def _strings(arrow: bool):
    return (lambda v: pa.array(v, pa.string())) if arrow else (lambda v: np.array(v, dtype=object))


def _run(
    mq_alls, cid_alls, queue_rooms, client_rooms, inners, arrow: bool = False
) -> list[dict[str, list[tuple[str, int]]]]:
    """Rooms as Python objects (records) or, with ``arrow``, as Arrow strings (the allocation stage)."""
    strings = _strings(arrow)
    params = {
        "queue_room": strings([r for rooms in queue_rooms for r in rooms]),
        "client_room": strings([r for rooms in client_rooms for r in rooms]),
        "inner_strategy": np.array(inners, dtype=object),
    }
    batch = GroupBatch.from_lists(["t"] * len(mq_alls), mq_alls, cid_alls, params)
    got, errors = _results(batch)
    assert errors == {}
    out: list[dict[str, list[tuple[str, int]]]] = [{} for _ in mq_alls]
    for (g, cid), qs in got.items():
        out[g][cid] = qs
    return out


def test_every_orphan_room_restarts_from_the_first_client() -> None:
    # Rooms r1 and r2 hold 3 queues each and no consumer; c0 and c1 sit in r3, which has no
    # queues. Each orphan room is its own inner call over all of cidAll [c0, c1]:
    #   AVG, 3 queues over 2: c0 gets 3 // 2 + 1 = 2 (queues 0, 1), c1 gets 1 (queue 2), per room,
    #   so c0 = r1:0, r1:1, r2:0, r2:1 and c1 = r1:2, r2:2 (4 + 2, where 3 + 3 would be even);
    #   AVG_BY_CIRCLE: c0 gets queues 0 and 2 of each room, c1 queue 1.
    mq_all = [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)]
    rooms = ["r1"] * 3 + ["r2"] * 3
    got = _run(
        [mq_all, mq_all], [["c0", "c1"]] * 2, [rooms, rooms], [["r3", "r3"]] * 2, ["AVG", "AVG_BY_CIRCLE"]
    )
    assert got[0] == {"c0": [("a", 0), ("a", 1), ("b", 0), ("b", 1)], "c1": [("a", 2), ("b", 2)]}
    assert got[1] == {"c0": [("a", 0), ("a", 2), ("b", 0), ("b", 2)], "c1": [("a", 1), ("b", 1)]}


@pytest.mark.parametrize("arrow", [False, True], ids=["objects", "arrow"])
def test_own_room_first_then_orphan_rooms_in_java_order(arrow) -> None:
    # c0 sits in room "z" with broker z's 2 queues; rooms "\uff21" (fullwidth A) and "\U0001f600"
    # (an emoji) have no consumer. Java's TreeMap orders rooms by UTF-16 code units, where the
    # emoji's surrogate 0xD83D comes before 0xFF21 (code-point order says the opposite). So c0
    # gets its own room first, then the emoji room, then the fullwidth room, though mqAll lists
    # the fullwidth room's broker first.
    mq_all = [("f", 0), ("e", 0), ("z", 0), ("z", 1)]
    rooms = ["\uff21", "\U0001f600", "z", "z"]
    got = _run([mq_all], [["c0"]], [rooms], [["z"]], ["AVG"], arrow=arrow)
    assert got[0] == {"c0": [("z", 0), ("z", 1), ("e", 0), ("f", 0)]}


@pytest.mark.parametrize("arrow", [False, True], ids=["objects", "arrow"])
def test_room_errors_fail_the_whole_group_but_not_outsiders(arrow) -> None:
    # Java groups all of mqAll by room before all of cidAll, so where both hold an unresolved room
    # the queue's message wins (no vector has both). A caller that is not in cidAll returned []
    # before resolving anything, so it gets no error; the other group is untouched. Rooms come
    # as Python objects (records) or as Arrow strings (the allocation stage).
    strings = _strings(arrow)
    mq_alls = [[("a", 0), ("b", 0)], [("a", 0)]]
    params = {
        "queue_room": strings(["r1", "", "r1"]),
        "client_room": strings([None, "r1", "r1"]),
        "inner_strategy": np.array(["AVG", "AVG"], dtype=object),
    }
    batch = GroupBatch.from_lists(["t", "t"], mq_alls, [["c0", "c1"], ["c0"]], params)
    callers = strategies.Callers(
        np.array([0, 0, 0, 1]),
        np.array([0, 1, 0, 2]),
        np.array([0, 1, -1, 0]),  # third: an outsider
    )
    allocation, errors = allocate(STRATEGY, batch, callers)
    mq_error = "Machine room is null for mq MessageQueue [topic=t, brokerName=b, queueId=0]"
    assert errors.tolist() == [mq_error, mq_error, None, None]
    assert allocation.caller.tolist() == [3] and allocation.queue.tolist() == [2]
