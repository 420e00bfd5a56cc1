"""phase_summary's later phases against rollups.summary over the same phases rebuilt whole
(phases.of_scenario) and sorted by Arrow: the same rows to the last bit.

The doubles are chosen so that the order they are added in shows: 1e16 + 1.0 + 1.0 is 1e16 added
left to right (each 1.0 is lost to rounding), but 1e16 + 2.0 when the ones come first. So a row put
at the wrong place in (strategy, topic, group) order changes a sum.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import phase_summary, phases, rollups

STRATEGIES = ("AVG", "STICKY")
SCENARIO = "s"
LAST = 3


def _metrics(rows: list[tuple]) -> pa.Table:
    """group_metrics rows (scenario, phase, strategy, topic, group, in_msgs_per_s, error)."""
    n = len(rows)
    column = list(zip(*rows)) if rows else [[]] * 7
    rng = np.random.default_rng(n)
    ints = {c: pa.array(rng.integers(0, 4, n), pa.int32()) for c in ("queue_count", "idle_consumers")}
    return pa.table(
        {
            "scenario": pa.array(column[0], pa.string()),
            "phase": pa.array(column[1], pa.int32()),
            "strategy": pa.array(column[2], pa.string()),
            "topic": pa.array(column[3], pa.string()),
            "group": pa.array(column[4], pa.string()),
            "error": pa.array(column[6], pa.string()),
            **ints,
            "max_over_mean": pa.array(rng.random(n) + 1),
            **{c: pa.array(rng.integers(0, 3, n), pa.int32()) for c in rollups.SUMMED},
            "in_msgs_per_s": pa.array(column[5], pa.float64()),
            **{c: pa.array(rng.choice([0.0, 0.1, 1.0], n)) for c in rollups.MESSAGES[1:-1]},
            "stranded_backlog": pa.array(rng.integers(0, 9, n)),
        }
    )


def _load(rows: list[tuple]) -> pa.Table:
    """consumer_load rows (scenario, phase, strategy, group, queues, msgs_per_s, over_capacity)."""
    column = list(zip(*rows))
    return pa.table(
        {
            "scenario": pa.array(column[0], pa.string()),
            "phase": pa.array(column[1], pa.int32()),
            "strategy": pa.array(column[2], pa.string()),
            "group": pa.array(column[3], pa.string()),
            "queues": pa.array(column[4], pa.int32()),
            "msgs_per_s": pa.array(column[5], pa.float64()),
            "over_capacity": pa.array(column[6], pa.bool_()),
            "lag_growth_msgs_per_s": pa.array(
                [None if m is None else m / 3 for m in column[5]], pa.float64()
            ),
        }
    )


def _fleet(scenario: str, phase: int, pairs: list[tuple[str, str]], big: str) -> tuple[list, list]:
    """Rows of ``pairs`` in every strategy: the (topic, group) ``big`` carries 1e16 msgs/s, the
    rest 1.0; clients two per group, one of them over capacity in group g1."""
    metrics = [
        (scenario, phase, s, t, g, 1e16 if t == big else 1.0, "boom" if (t, g) == ("t2", "g2") else None)
        for s in STRATEGIES
        for t, g in pairs
    ]
    groups = sorted({g for _, g in pairs})
    load = [
        (scenario, phase, s, g, q, None if g == "g3" else 1.5 * q, g == "g1" and q == 2)
        for s in STRATEGIES
        for g in groups
        for q in (1, 2)
    ]
    return metrics, load


def test_later_phases_equal_rollups_summary_over_each_phase_rebuilt_whole() -> None:
    pairs = [(f"t{i}", f"g{i % 4}") for i in range(8)]
    metrics_0, load_0 = _fleet(phases.SNAPSHOT, 0, pairs, big="t4")
    base_metrics, base_load = _metrics(metrics_0), _load(load_0)
    # Phase 1 moves the 1e16 ahead of every 1.0 (t0 ranks first): 1e16 + 1.0 * 7 stays 1e16,
    # where phase 0 had 1.0 * 4 + 1e16 + 1.0 * 3 = 1e16 + 4.0.
    # Phase 2 drops (t5, g1) from the fleet; phase 3 brings a group phase 0 has not got ("g-new"),
    # which the merge cannot place by phase 0's names and so sorts whole.
    touched_pairs = {1: [("t0", "g0")], 2: [("t0", "g0"), ("t5", "g1")], 3: [("t0", "g0"), ("t6", "g-new")]}
    written_metrics, written_load, touched = [], [], []
    for k, listed in touched_pairs.items():
        alive = [p for p in listed if p != ("t5", "g1")]
        m, load = _fleet(SCENARIO, k, alive, big="t0")
        written_metrics += m
        written_load += [r for r in load if r[3] in {g for _, g in listed}]
        touched += [(SCENARIO, k, t, g) for t, g in listed]
        touched += [
            (SCENARIO, k, t, g) for t, g in pairs if g in {g for _, g in listed} and (t, g) not in listed
        ]
    metrics, load = _metrics(written_metrics), _load(written_load)
    # every (topic, group) of a touched group is listed, as the stage lists them
    touched_table = pa.table(
        {
            "scenario": pa.array([r[0] for r in touched], pa.string()),
            "phase": pa.array([r[1] for r in touched], pa.int32()),
            "topic": pa.array([r[2] for r in touched], pa.string()),
            "group": pa.array([r[3] for r in touched], pa.string()),
        }
    )

    def whole(name: str, base: pa.Table, own: pa.Table, k: int) -> pa.Table:
        return phases.of_scenario(name, base, phases.keyed(base, name), own, touched_table, SCENARIO, LAST, k)

    expected = pa.concat_tables(
        [
            rollups.summary(
                whole("group_metrics", base_metrics, metrics, k), whole("consumer_load", base_load, load, k)
            )
            for k in range(1, LAST + 1)
        ]
    )
    at_0 = phase_summary.phase_0(base_metrics, base_load, None)
    got = phase_summary.summary(at_0, metrics, load, None, touched_table, SCENARIO, LAST, None)
    assert got.equals(expected), (got.to_pylist(), expected.to_pylist())
    # the merge placed the 1e16 first at phase 1: 1e16 + 1.0 + ... rounds to 1e16 (by hand)
    first = got.filter(pc.equal(got["phase"], 1)).to_pylist()
    assert {r["in_msgs_per_s"] for r in first} == {1e16}
    assert 1e16 + 1.0 == 1e16 and 4.0 + 1e16 == 1e16 + 4.0  # the arithmetic the test leans on
    # phase 0's order gave 1.0 * 4 + 1e16 + 1.0 * 3
    at_phase_0 = rollups.summary(base_metrics, base_load).to_pylist()
    assert {r["in_msgs_per_s"] for r in at_phase_0} == {1e16 + 4.0}
    # g1's clients over capacity stay counted where g1 is untouched, and g3's msgs stay null
    assert [r["groups_behind"] for r in first] == [1, 1]
