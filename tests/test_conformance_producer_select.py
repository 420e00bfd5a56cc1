"""PRODUCER_SELECT: the 5.1.4+ Java selection, step by step, and the steady-state shares it implies.

Every record is replayed through the simulators (TopicPublishInfo, ThreadLocalIndex, MQFaultStrategy,
FaultItems): each selected queue, stored counter and reset, each fault update's duration and
resulting state, and the final selected/counts/fault_state must equal what the real code did.

Then the steady state. shares.latency_avoiding_shares says: with a fixed fault table, first attempts
go evenly to the available entries (else the reachable ones, else all of them). Two checks:
- from the real sequences alone (the record's own fault steps and selections, no simulator): every
  window of W consecutive first-attempt selections under one fault state, clear of a counter wrap,
  selects each entry with a positive share exactly once (W = the number of such entries);
- from the simulator, proven above to be the real code: many full cycles from each record's start
  counter under its final fault table give counts equal to calls x share.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from rmqsim.producers.selection_java import MQFaultStrategy
from rmqsim.producers.shares import latency_avoiding_shares, round_robin_shares
from rmqsim.producers.topic_publish_info import POSITIVE_MASK, ThreadLocalIndex, TopicPublishInfo
from tests.conformance import failing, queues, records

SELECT = records("PRODUCER_SELECT")


def _start(r: dict) -> tuple[TopicPublishInfo, MQFaultStrategy]:
    info = TopicPublishInfo(queues(r["queues"]), ThreadLocalIndex(r["start_index"], r["reset_values"]))
    return info, MQFaultStrategy(send_latency_fault_enable=bool(r["send_latency_fault_enable"]))


def _select(r: dict, info: TopicPublishInfo, strategy: MQFaultStrategy, step: dict) -> tuple[str, int]:
    if r["api"] == "TPI_NOARG":
        return info.select_one()
    if r["api"] == "TPI_LASTBROKER":
        return info.select_one_avoiding(step["last_broker_name"])
    return strategy.select(info, step["last_broker_name"], step["reset_index"])


def _fault(strategy: MQFaultStrategy, step: dict) -> int:
    if step["via"] == "MQFaultStrategy.updateFaultItem":
        return strategy.update_fault_item(
            step["broker"], step["current_latency"], step["isolation"], step["reachable"]
        )
    strategy.faults.update(
        step["broker"], step["current_latency"], step["not_available_duration"], step["reachable"]
    )
    return step["not_available_duration"]


def _replay(r: dict) -> tuple[TopicPublishInfo, MQFaultStrategy, list]:
    """Every step through the simulators; asserts each one as it goes."""
    info, strategy = _start(r)
    selected = []
    for k, step in enumerate(r["steps"]):
        where = f"{r['case_id']} step {k}"
        if step["op"] == "select":
            resets = info.index.resets
            queue = _select(r, info, strategy, step)
            selected.append(queue)
            assert (list(queue), info.index.stored) == (step["selected"], step["index_after"]), where
            if r["api"] == "FAULT":
                assert (info.index.resets > resets) == step["reset_value_used"], where
        else:
            duration = _fault(strategy, step)
            state = (
                duration,
                strategy.faults.is_available(step["broker"]),
                strategy.faults.is_reachable(step["broker"]),
            )
            assert state == (
                step["not_available_duration"],
                step["available_after"],
                step["reachable_after"],
            ), where
    return info, strategy, selected


def _counts(listed: list[tuple[str, int]], selected: list[tuple[str, int]]) -> list[list]:
    times = Counter(selected)
    return [[b, q, times[(b, q)]] for b, q in dict.fromkeys(listed)]


def test_every_step_of_every_sequence():
    assert failing(_check_sequence, SELECT) == []


def _check_sequence(r: dict) -> None:
    info, strategy, selected = _replay(r)
    assert selected == queues(r["selected"])
    assert _counts(info.queues, selected) == r["counts"]
    named = [s["broker"] for s in r["steps"] if s["op"] == "fault"]
    brokers = dict.fromkeys([b for b, _ in info.queues] + named)  # list order, then the steps'
    state = [
        {
            "broker": b,
            "available": strategy.faults.is_available(b),
            "reachable": strategy.faults.is_reachable(b),
        }
        for b in brokers
    ]
    assert state == r["fault_state"]


def _entry_shares(r: dict, available: dict[str, bool], reachable: dict[str, bool]) -> np.ndarray:
    """shares.py's steady state for this record's list under one fault state."""
    offsets = np.array([0, len(r["queues"])])
    if r["api"] != "FAULT" or not r["send_latency_fault_enable"]:
        return round_robin_shares(offsets)
    return latency_avoiding_shares(
        offsets,
        np.array([available.get(b, True) for b, _ in r["queues"]]),
        np.array([reachable.get(b, True) for b, _ in r["queues"]]),
    )


def _per_queue(r: dict, entry_values: np.ndarray) -> dict[tuple[str, int], float]:
    out: dict[tuple[str, int], float] = Counter()
    for queue, value in zip(queues(r["queues"]), entry_values):
        out[queue] += value
    return out


def _first_attempt_runs(r: dict):
    """From the record alone: runs of consecutive first-attempt selections under one fault state,
    each as (available, reachable, [(selected, wrapped)]). The fault state is what the record's
    fault steps say they left behind; ``wrapped``: the counter passed 2^31-1 -> 0 during the call."""
    available: dict[str, bool] = {}
    reachable: dict[str, bool] = {}
    run: list = []
    before = r["start_index"]
    for step in r["steps"]:
        if step["op"] == "fault" or step["last_broker_name"] is not None:
            if run:
                yield dict(available), dict(reachable), run
            run = []
        if step["op"] == "fault":
            available[step["broker"]] = step["available_after"]
            reachable[step["broker"]] = step["reachable_after"]
            continue
        if step["last_broker_name"] is None:
            run.append(
                (tuple(step["selected"]), (step["index_after"] & POSITIVE_MASK) < (before & POSITIVE_MASK))
            )
        before = step["index_after"]
    if run:
        yield dict(available), dict(reachable), run


def test_real_sequences_give_each_share_once_per_window():
    windows = Counter()
    for r in SELECT:
        for available, reachable, run in _first_attempt_runs(r):
            shares = _entry_shares(r, available, reachable)
            width = int((shares > 0).sum())
            expected = {q: round(v * width) for q, v in _per_queue(r, shares).items() if v > 0}
            for start in range(len(run) - width + 1):
                window = run[start : start + width]
                if any(wrapped for _, wrapped in window):
                    continue  # probes jump from (2^31-1) % n to 0: once every 2^31 increments
                assert Counter(q for q, _ in window) == expected, (r["case_id"], start)
                windows["avoiding" if width < len(r["queues"]) else "all"] += 1
    # Public file: 1 346 windows over every entry, 88 that leave some entries out (52 of width >= 2).
    assert windows["all"] > 0 and windows["avoiding"] > 0


def test_many_simulated_cycles_match_shares():
    assert failing(_check_simulated_cycles, SELECT) == []


def _check_simulated_cycles(r: dict) -> None:
    info, strategy, _ = _replay(r)
    shares = _entry_shares(r, *_fault_state(strategy, r))
    width = int((shares > 0).sum())
    calls = 5 * width  # five full cycles of the entries with a share
    # Start from the record's counter, unless the run would cross the int wrap (then from just
    # after it: each call may probe 2n+1 times).
    start = r["start_index"]
    if (start & POSITIVE_MASK) + calls * (2 * len(r["queues"]) + 1) > POSITIVE_MASK:
        start = 0
    info = TopicPublishInfo(queues(r["queues"]), ThreadLocalIndex(start))
    if r["api"] != "FAULT":
        selected = [info.select_one() for _ in range(calls)]
    else:
        selected = [strategy.select(info, None, False) for _ in range(calls)]
    expected = {q: round(v * calls) for q, v in _per_queue(r, shares).items() if v > 0}
    assert Counter(selected) == expected


def _fault_state(strategy: MQFaultStrategy, r: dict) -> tuple[dict[str, bool], dict[str, bool]]:
    brokers = {b for b, _ in r["queues"]}
    return (
        {b: strategy.faults.is_available(b) for b in brokers},
        {b: strategy.faults.is_reachable(b) for b in brokers},
    )


def test_the_fallback_tiers_are_covered():
    """The public file has lists with nothing available but something reachable, and lists with
    nothing reachable either: both fallbacks of latency_avoiding_shares are exercised above."""
    tiers = Counter()
    for r in SELECT:
        if r["api"] == "FAULT" and r["send_latency_fault_enable"]:
            state = {f["broker"]: f for f in r["fault_state"]}
            listed = [state[b] for b, _ in r["queues"]]
            tiers[
                "available"
                if any(s["available"] for s in listed)
                else "reachable"
                if any(s["reachable"] for s in listed)
                else "none"
            ] += 1
    assert tiers["reachable"] > 0 and tiers["none"] > 0  # public file: 75 and 9 records


def test_latency_avoiding_shares_by_hand():
    # Two lists: [a0 a1 b0 b1] with b unavailable -> 1/2 for a0 and a1; [c0 c1 c2] with all
    # unavailable, c1 reachable only -> all of it to c1.
    offsets = np.array([0, 4, 7])
    available = np.array([1, 1, 0, 0, 0, 0, 0], dtype=bool)
    reachable = np.array([1, 1, 1, 1, 0, 1, 0], dtype=bool)
    assert latency_avoiding_shares(offsets, available, reachable).tolist() == [0.5, 0.5, 0, 0, 0, 1, 0]
    assert (
        latency_avoiding_shares(offsets, np.zeros(7, bool), np.zeros(7, bool)).tolist()
        == [0.25] * 4 + [1 / 3] * 3
    )
