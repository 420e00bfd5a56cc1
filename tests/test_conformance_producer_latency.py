"""PRODUCER_LATENCY and PRODUCER_LATENCY_4X: the latency -> notAvailableDuration tables, what one
updateFaultItem does to a fresh strategy, and (4.x) what a sequence of them does to one broker.
Also which table and algorithm a producer's version name runs.

Durations are computed for every record in one vectorised call; the state after each update
comes from the step simulators (MQFaultStrategy, MQFaultStrategy4x).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rmqsim.producers.fault_items import FaultItems4x
from rmqsim.producers.latency import LATENCY_4X, LATENCY_5X, latency_table, not_available_duration
from rmqsim.producers.selection_java import MQFaultStrategy
from rmqsim.producers.selection_java4x import MQFaultStrategy4x
from rmqsim.producers.topic_publish_info import ThreadLocalIndex
from rmqsim.producers.versions import (
    CURRENT,
    HIGHER_VERSION,
    UnknownVersionError,
    classify_versions,
    is_before_v5_1_4,
    parse_version,
)
from tests.conformance import records

LATENCY = records("PRODUCER_LATENCY")
LATENCY_4X_RECORDS = records("PRODUCER_LATENCY_4X")


def test_tables():
    (table,) = [r for r in LATENCY if r["kind"] == "table"]
    assert list(LATENCY_5X.latency_max) == table["latencyMax"]
    assert list(LATENCY_5X.not_available_duration) == table["notAvailableDuration"]
    assert LATENCY_5X.isolation_latency == table["isolation_latency"]
    assert table["default_send_latency_enable"] is False and table["default_start_detector_enable"] is False
    for table in [r for r in LATENCY_4X_RECORDS if r["kind"] == "table"]:  # 4.9.8 and 4.9.7 agree
        assert list(LATENCY_4X.latency_max) == table["latencyMax"]
        assert list(LATENCY_4X.not_available_duration) == table["notAvailableDuration"]
        assert LATENCY_4X.isolation_latency == table["isolation_latency"]
        assert table["default_send_latency_fault_enable"] is False


def test_5x_durations_in_one_call_and_the_state_they_leave():
    single = [r for r in LATENCY if r["kind"] != "table"]
    durations = not_available_duration(
        np.array([r["current_latency"] for r in single]),
        np.array([r["isolation"] for r in single]),
        LATENCY_5X,
    )
    assert durations.tolist() == [r["not_available_duration"] for r in single]
    for r in single:
        strategy = MQFaultStrategy(send_latency_fault_enable=r["send_latency_fault_enable"])
        strategy.update_fault_item("b", r["current_latency"], r["isolation"], r["reachable"])
        state = (strategy.faults.is_available("b"), strategy.faults.is_reachable("b"))
        assert state == (r["available_after"], r["reachable_after"]), r["case_id"]


def test_4x_durations_in_one_call_and_the_state_they_leave():
    single = [r for r in LATENCY_4X_RECORDS if r["kind"] in ("boundary", "random")]
    durations = not_available_duration(
        np.array([r["current_latency"] for r in single]),
        np.array([r["isolation"] for r in single]),
        LATENCY_4X,
    )
    assert durations.tolist() == [r["not_available_duration"] for r in single]
    for r in single:
        strategy = MQFaultStrategy4x(
            FaultItems4x(ThreadLocalIndex(0)), r["send_latency_fault_enable"], r["version"]
        )
        strategy.update_fault_item("b", r["current_latency"], r["isolation"])
        state = (strategy.faults.is_available("b"), strategy.faults.has_item("b"))
        assert state == (r["available_after"], r["has_item_after"]), r["case_id"]


def test_4x_updates_overwrite():
    sequences = [r for r in LATENCY_4X_RECORDS if r["kind"] == "sequence"]
    for r in sequences:
        strategy = MQFaultStrategy4x(
            FaultItems4x(ThreadLocalIndex(0)), r["send_latency_fault_enable"], r["version"]
        )
        results = []
        for latency, isolation in r["updates"]:
            duration = strategy.update_fault_item("b", latency, isolation)
            results.append(
                {"not_available_duration": duration, "available_after": strategy.faults.is_available("b")}
            )
        assert results == r["results"], r["case_id"]
    # A fast success after a slow one makes the broker available again at once (4.x), but not on
    # 5.x, where an item only ever extends.
    assert any(
        not a["available_after"] and b["available_after"]
        for r in sequences
        for a, b in zip(r["results"], r["results"][1:])
    )
    strategy = MQFaultStrategy(send_latency_fault_enable=True)
    strategy.update_fault_item("b", 16000, False, True)
    strategy.update_fault_item("b", 10, False, True)
    assert not strategy.faults.is_available("b")


def test_table_edges_by_hand():
    # 549 -> 0, 550 -> 2000 (5.x) / 30000 (4.x); negative latencies match no step; isolation counts
    # as 10000 (5.x: 10000 ms) or 30000 (4.x: 600000 ms) whatever the latency.
    latency = np.array([-5, 549, 550, 1799, 1800, 15000, 1])
    isolation = np.array([0, 0, 0, 0, 0, 0, 1], dtype=bool)
    assert not_available_duration(latency, isolation).tolist() == [0, 0, 2000, 2000, 5000, 30000, 10000]
    latency_4x = not_available_duration(latency, isolation, LATENCY_4X).tolist()
    assert latency_4x == [0, 0, 30000, 60000, 60000, 600000, 600000]


@pytest.mark.parametrize(
    ("name", "before"),
    [
        ("V4_9_8", True),
        ("V4_9_7", True),
        ("V5_1_3", True),
        ("V5_0_0_SNAPSHOT", True),
        ("V3_0_0_BETA6_SNAPSHOT", True),
        ("V5_1_4", False),
        ("V5_3_3_SNAPSHOT", False),
        ("V5_3_3", False),
        ("HIGHER_VERSION", False),
        (None, False),
    ],
)
def test_which_algorithm_a_version_runs(name, before):
    assert is_before_v5_1_4(name) is before
    assert latency_table(name) is (LATENCY_4X if before else LATENCY_5X)


def test_versions_compare_in_enum_order():
    order = [
        "V3_0_0_SNAPSHOT",
        "V3_0_0_ALPHA1",
        "V3_0_0_BETA1",
        "V3_0_0_BETA6_SNAPSHOT",
        "V3_0_0_BETA6",
        "V3_0_0_FINAL",
        "V3_0_1_SNAPSHOT",
        "V3_0_1",
        "V4_9_8",
        "V5_1_4_SNAPSHOT",
        "V5_1_4",
        "V5_9_9",
        "HIGHER_VERSION",
    ]
    parsed = [parse_version(name) for name in order]
    assert parsed == sorted(parsed) and len(set(parsed)) == len(parsed)
    assert parse_version(None) == CURRENT and HIGHER_VERSION > parse_version("V5_9_9")


@pytest.mark.parametrize(
    "name", ["HigherVersion", "4.9.8", "V4_9", "v4_9_8", "V5_1_4_SNAPSHOT", "", "V4_9_8_GA"]
)
def test_unknown_versions_are_detected(name):
    with pytest.raises(UnknownVersionError):
        is_before_v5_1_4(name)


def test_a_column_of_versions():
    names = pa.array(["V4_9_8", None, "V5_2_0", "junk", "V4_9_8", "V5_1_4_SNAPSHOT"])
    before, problem = classify_versions(names)
    assert before.tolist() == [True, False, False, False, True, False]
    reasons = problem.to_pylist()
    assert [r is None for r in reasons] == [True, True, True, False, True, False]
    assert "not a RocketMQ version name" in reasons[3] and "5.1.4" in reasons[5]


def test_the_last_name_of_an_old_tool_is_unknown():
    # A 4.0.0 mqadmin prints every client from 4.5.0 on as V4_5_0: 4.9.8 and 5.3.3 alike.
    before, problem = classify_versions(["V4_5_0", "V4_4_0"], tool_last_name="V4_5_0")
    assert before.tolist() == [False, True] and "may be any newer" in problem.to_pylist()[0]
    assert is_before_v5_1_4("HIGHER_VERSION", tool_last_name="HIGHER_VERSION") is False
