"""PRODUCER_SELECT_4X: the Java selection before 5.1.4 (4.9.8 and 4.9.7), step by step, and the
folded shares it implies.

Every record is replayed through TopicPublishInfo, FaultItems4x and MQFaultStrategy4x: each
selected queue, path, pickOneAtLeast's broker, both counters, each fault update, and the final
selected/counts/fault_state/queues_after. Its list and route_queue_datas also follow from its
route through publish_list.

Then the steady state, shares.folded_latency_shares: share(p) = (1 + U(p)) / N. The 95 full_cycles
records (static fault marks, then exactly k*N selections) must count k * N * share per queue; and
any N consecutive scans under one fault state, clear of the int wrap, must do the same.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from rmqsim.javaorder import java_key
from rmqsim.producers.fault_items import FaultItems4x
from rmqsim.producers.publish_list import java_publish_lists
from rmqsim.producers.selection_java4x import MQFaultStrategy4x, probe_position
from rmqsim.producers.shares import folded_latency_shares
from rmqsim.producers.topic_publish_info import POSITIVE_MASK, ThreadLocalIndex, TopicPublishInfo
from tests.conformance import failing, queues, records, route_rows

SELECT_4X = records("PRODUCER_SELECT_4X")


def _replay(r: dict) -> tuple[TopicPublishInfo, MQFaultStrategy4x, list]:
    info = TopicPublishInfo(
        queues(r["queues"]),
        ThreadLocalIndex(r["start_index"]),
        [(b, n, perm) for b, n, perm in r["route_queue_datas"]],
    )
    strategy = MQFaultStrategy4x(
        FaultItems4x(ThreadLocalIndex(r["worst_start_index"])), r["send_latency_fault_enable"], r["version"]
    )
    selected = []
    for k, step in enumerate(r["steps"]):
        where = f"{r['case_id']} step {k}"
        if step["op"] == "select":
            pick = strategy.select(info, step["last_broker_name"])
            selected.append(pick.queue)
            got = (list(pick.queue), pick.path, pick.picked_broker, info.index.stored)
            expected = (step["selected"], step["path"], step["picked_broker"], step["index_after"])
            assert got + (strategy.faults.which_item_worst.stored,) == expected + (
                step["worst_index_after"],
            ), where
        else:
            duration = strategy.update_fault_item(step["broker"], step["current_latency"], step["isolation"])
            got = (duration, strategy.faults.is_available(step["broker"]))
            assert got == (step["not_available_duration"], step["available_after"]), where
    return info, strategy, selected


def test_every_step_of_every_sequence():
    assert failing(_check_sequence, SELECT_4X) == []


def _check_sequence(r: dict) -> None:
    info, strategy, selected = _replay(r)
    assert selected == queues(r["selected"])
    times = Counter(selected)
    listed = dict.fromkeys(queues(r["queues"]))
    counted = list(listed) + [q for q in dict.fromkeys(selected) if q not in listed]
    assert [[b, q, times[(b, q)]] for b, q in counted] == r["counts"]
    named = [s["broker"] for s in r["steps"] if s["op"] == "fault"]
    named += [s["picked_broker"] for s in r["steps"] if s["op"] == "select" and s["picked_broker"]]
    brokers = dict.fromkeys([b for b, _ in listed] + [b for b, _, _ in r["route_queue_datas"]] + named)
    state = [
        {"broker": b, "has_item": strategy.faults.has_item(b), "available": strategy.faults.is_available(b)}
        for b in brokers
    ]
    assert state == r["fault_state"]
    assert info.queues == queues(r["queues_after"])  # 4.9.7's pick rewrites list entries


def test_lists_and_route_order_follow_from_the_routes():
    kwargs, _ = route_rows(SELECT_4X)
    lists = java_publish_lists(**kwargs)
    for i, r in enumerate(SELECT_4X):
        assert lists.topic_list(i) == queues(r["queues"]), r["case_id"]
        datas = [(q["brokerName"], q["writeQueueNums"], q["perm"]) for q in r["route"]["queueDatas"]]
        if not r["route"]["orderTopicConf"]:  # the builder sorts the route in place, stably
            datas.sort(key=lambda d: java_key(d[0]))
        assert datas == [tuple(d) for d in r["route_queue_datas"]], r["case_id"]


def _available_entries(r: dict, state: dict[str, bool]) -> np.ndarray:
    return np.array([state.get(b, True) for b, _ in r["queues"]], dtype=bool)


def _expected_counts(r: dict, available: np.ndarray, calls: int) -> list[list]:
    shares = folded_latency_shares(np.array([0, len(r["queues"])]), available)
    per_queue: Counter = Counter()
    for queue, share in zip(queues(r["queues"]), shares):
        per_queue[queue] += share
    return [[b, q, round(calls * per_queue[(b, q)])] for b, q in dict.fromkeys(queues(r["queues"]))]


def test_full_cycles_count_k_times_the_folded_share():
    full = [r for r in SELECT_4X if r["full_cycles"] is not None]
    for r in full:
        # The marks come first and stay, so the final fault_state is the state of every selection.
        state = {f["broker"]: f["available"] for f in r["fault_state"]}
        calls = r["full_cycles"] * len(r["queues"])
        assert len(r["selected"]) == calls, r["case_id"]
        assert r["counts"] == _expected_counts(r, _available_entries(r, state), calls), r["case_id"]
    assert len(full) > 0  # 95 in the public file


def test_any_n_consecutive_scans_fold_the_same_way():
    """From the real sequences alone: under one fault state, N consecutive scan calls whose counter
    values are consecutive and whose probes stay below 2^31 count N * share per queue."""
    windows = Counter()
    for r in SELECT_4X:
        if r["version"] != "4.9.8":
            continue  # 4.9.7's pick path rewrites the list, so the list itself changes under it
        n = len(r["queues"])
        state: dict[str, bool] = {}
        run: list = []
        for step in r["steps"] + [{"op": "end"}]:
            if step["op"] != "select" or step["path"] != "scan":
                expected = _expected_counts(r, _available_entries(r, state), n) if len(run) >= n else []
                for start in range(len(run) - n + 1):
                    window = run[start : start + n]
                    values = [v for _, v in window]
                    if values != list(range(values[0], values[0] + n)) or values[-1] + n - 1 > POSITIVE_MASK:
                        continue  # the stored int wrapped, or a probe would pass 2^31-1
                    got = Counter(q for q, _ in window)
                    assert [[b, q, got[(b, q)]] for b, q, _ in expected] == expected, (r["case_id"], start)
                    windows["folding" if not all(state.get(b, True) for b, _ in r["queues"]) else "all"] += 1
                run = []
            if step["op"] == "fault":
                state[step["broker"]] = step["available_after"]
            elif step["op"] == "select" and step["path"] == "scan":
                run.append((tuple(step["selected"]), step["index_after"] & POSITIVE_MASK))
    # Public file: 2 717 windows with some broker unavailable, 491 with none.
    assert windows["all"] > 0 and windows["folding"] > 0


def test_folded_share_by_hand():
    # select4x-4101-0015 (README): 5 brokers of 8 queues, N = 40, the second broker unavailable.
    # Its 8 queues fold onto the third broker's queue 0: (1 + 8) / 40; every other available
    # queue 1/40, the unavailable ones 0.
    available = np.ones(40, dtype=bool)
    available[8:16] = False
    shares = folded_latency_shares(np.array([0, 40]), available)
    assert shares[16] == pytest.approx(9 / 40) and shares[8:16].sum() == 0
    assert np.allclose(np.delete(shares, np.r_[8:17]), 1 / 40)
    r = next(r for r in SELECT_4X if r["case_id"] == "select4x-4101-0015")
    assert r["counts"][16] == ["broker-a1", 0, 18]  # k = 2 full cycles: 2 * 9


def test_folded_share_wraps_around_and_spans_lists():
    # List 0: [u a u u] -> entry 0 folds onto a, entries 2 and 3 wrap round onto a too: a gets 4/4.
    # List 1: [a u b] -> a 1/3, b (1 + 1)/3. List 2: all unavailable -> 1/2 each.
    offsets = np.array([0, 4, 7, 9])
    available = np.array([0, 1, 0, 0, 1, 0, 1, 0, 0], dtype=bool)
    expected = [0, 1, 0, 0, 1 / 3, 0, 2 / 3, 1 / 2, 1 / 2]
    assert np.allclose(folded_latency_shares(offsets, available), expected)


def test_probe_position_at_the_wrap():
    # Math.abs(Integer.MIN_VALUE) is MIN_VALUE, whose % n is <= 0, which the code turns into 0.
    assert probe_position(-(2**31), 7) == 0 and probe_position(2**31 - 1, 7) == (2**31 - 1) % 7


def test_4_9_7_rewrites_a_slot_that_then_takes_the_traffic():
    # README: in select4x-4101-0145-497 a read-only broker with a fast item takes 22 of 24 sends.
    r = next(r for r in SELECT_4X if r["case_id"] == "select4x-4101-0145-497")
    _, _, selected = _replay(r)
    assert Counter(selected)[("broker-a", 7)] == 22 and len(selected) == 24


def test_folded_shares_equal_a_scan_from_every_counter_value():
    """Random lists against the rule itself: one call per counter residue c, each taking the first
    available entry at or after c (all unavailable: entry c, the 1/N fallback)."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        lengths = rng.integers(0, 9, rng.integers(1, 6))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        available = rng.random(offsets[-1]) < 0.5
        shares = folded_latency_shares(offsets, available)
        for start, n in zip(offsets[:-1].tolist(), lengths.tolist()):
            calls = np.zeros(n)
            for c in range(n):
                hits = [p for p in range(c, c + n) if available[start + p % n]]
                calls[hits[0] % n if hits else c] += 1
            assert np.allclose(shares[start : start + n], calls / max(n, 1))
