"""stale_view steps: clients computing from the view before a change, worked by hand.

The hand-checked case of the issue: 12 queues q0..q11 on one broker, clients c1 c2 c3, then c4
joins, and c1 has not yet rebalanced (it still computes from the 3-client view).

AVG, 3 clients: c1 q0-q3, c2 q4-q7, c3 q8-q11; 4 clients: c1 q0-q2, c2 q3-q5, c3 q6-q8, c4 q9-q11.
With c1 stale: c1 q0-q3 and the rest as with 4 clients: q3 is read twice (c1, c2), none is stranded.

AVG_BY_CIRCLE, 3 clients: c1 q0 q3 q6 q9; 4 clients: c1 q0 q4 q8, c2 q1 q5 q9, c3 q2 q6 q10,
c4 q3 q7 q11. With c1 stale: q3 (c1, c4), q6 (c1, c3) and q9 (c1, c2) are read twice, and q4 and
q8 (c1's in the new view) by nobody.

Queue q has a backlog of q + 1 messages.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from rmqsim.errors import InputError
from rmqsim.scenarios import apply, names, parse
from rmqsim.sink import KINDS as SINKS
from rmqsim.snapshot.load import load_snapshot
from tests.builders import make_snapshot, queue_rows
from tests.simulated import simulated, whole

SCENARIOS = """
scenarios:
  - name: join
    steps:
      - consumers_join: {group: g, client_ids: [c4]}
      - stale_view: {group: g, client_ids: [c1]}
  - name: down
    steps:
      - broker_down: {names: [ub]}
      - stale_view: {group: h, client_ids: [x]}
  - name: broadcast
    steps:
      - consumers_join: {group: k, client_ids: [k3]}
      - stale_view: {group: k, client_ids: [k1]}
"""


def _snapshot(tmp_path) -> str:
    # Group g reads topic t (12 queues on broker b); group h reads topic u (2 queues on each of ua,
    # ub); BROADCASTING group k reads topic t too: its clients read every queue, stale or not.
    return make_snapshot(
        tmp_path / "snap",
        brokers=[{"broker_name": b, "broker_id": 0, "alive": True} for b in ("b", "ua", "ub")],
        topic_queues=queue_rows("t", {"b": 12}) + queue_rows("u", {"ua": 2, "ub": 2}),
        consumers=[{"group": "g", "topic": "t", "client_id": c} for c in ("c1", "c2", "c3")]
        + [{"group": "h", "topic": "u", "client_id": c} for c in ("x", "y")]
        + [{"group": "k", "topic": "t", "client_id": c} for c in ("k1", "k2")],
        groups=[{"group": "k", "message_model": "BROADCASTING"}],
        offsets=[
            {
                "group": "g",
                "topic": "t",
                "broker_name": "b",
                "queue_id": q,
                "broker_offset": 100,
                "consumer_offset": 100 - (q + 1),
            }
            for q in range(12)
        ],
    )


@pytest.fixture(scope="module", params=SINKS)
def run(spark, tmp_path_factory, request):
    tmp_path = tmp_path_factory.mktemp("stale")
    done = simulated(
        spark,
        tmp_path,
        sink=request.param,
        snapshot=_snapshot(tmp_path),
        scenarios=SCENARIOS,
        strategies=("AVG", "AVG_BY_CIRCLE"),
    )
    return str(done.out), done.result


def _metrics(spark, out: str) -> dict[tuple, tuple]:
    rows = whole(spark, out, "group_metrics").where("scenario = 'join' AND group = 'g'").collect()
    return {
        (r.strategy, r.phase): (
            r.stale_clients,
            r.multi_owned_queues,
            r.unassigned_queues,
            r.multi_owned_backlog,
            r.unassigned_backlog,
        )
        for r in rows
    }


def _owned(spark, out: str, scenario: str, phase: int, strategy: str, client: str) -> list[tuple[str, int]]:
    rows = (
        whole(spark, out, "assignments")
        .where(
            (F.col("scenario") == scenario)
            & (F.col("phase") == phase)
            & (F.col("strategy") == strategy)
            & (F.col("client_id") == client)
        )
        .collect()
    )
    return sorted((r.broker_name, r.queue_id) for r in rows)


def test_one_stale_client_after_a_join_doubles_and_strands_queues_as_worked_by_hand(spark, run) -> None:
    out, _ = run
    m = _metrics(spark, out)
    # (stale clients, read twice, read by none, backlog read twice, backlog stalled)
    assert m[("AVG", 1)] == (0, 0, 0, 0, 0)
    assert m[("AVG", 2)] == (1, 1, 0, 4, 0)  # q3
    assert m[("AVG_BY_CIRCLE", 1)] == (0, 0, 0, 0, 0)
    assert m[("AVG_BY_CIRCLE", 2)] == (1, 3, 2, 4 + 7 + 10, 5 + 9)  # q3 q6 q9; q4 q8
    assert _owned(spark, out, "join", 2, "AVG", "c1") == [("b", q) for q in (0, 1, 2, 3)]
    assert _owned(spark, out, "join", 2, "AVG_BY_CIRCLE", "c1") == [("b", q) for q in (0, 3, 6, 9)]


def test_the_split_brain_table_and_exposure_rank_avg_by_circle_as_more_exposed(spark, run) -> None:
    out, result = run
    rows = whole(spark, out, "split_brain").collect()
    # Only the stale phase of each scenario, and only the groups with a stale client: not the
    # BROADCASTING group k, whose stale client reads what everyone reads.
    assert {(r.scenario, r.phase, r.strategy, r.group) for r in rows} == {
        (s, 2, strategy, group)
        for s, group in (("join", "g"), ("down", "h"))
        for strategy in ("AVG", "AVG_BY_CIRCLE")
    }
    assert {r["scenario"] for r in result.exposure} == {"join", "down"}
    join = [r for r in result.exposure if r["scenario"] == "join"]
    assert [r["strategy"] for r in join] == ["AVG_BY_CIRCLE", "AVG"]
    assert join[0]["at_risk_fraction"] == pytest.approx(5 / 12)
    assert join[1]["at_risk_fraction"] == pytest.approx(1 / 12)


def test_movement_into_the_stale_phase_counts_queues_gaining_or_losing_an_owner(spark, run) -> None:
    out, _ = run
    rows = (
        whole(spark, out, "movement")
        .where("scenario = 'join' AND group = 'g' AND from_phase = 1 AND to_phase = 2")
        .collect()
    )
    moved = {r.strategy: (r.moved, r.min_moves) for r in rows}
    # AVG: q3 gains c1. AVG_BY_CIRCLE: q3 q6 q9 gain c1, q4 q8 lose it. No one-owner comparison.
    assert moved == {"AVG": (1, None), "AVG_BY_CIRCLE": (5, None)}


def test_a_stale_client_keeps_reading_a_queue_of_a_broker_that_went_down(spark, run) -> None:
    # u: [ua0 ua1 ub0 ub1], clients x y. AVG_BY_CIRCLE phase 0: x ua0 ub0, y ua1 ub1. ub goes down:
    # x ua0, y ua1. x stale: still ua0 and ub0; ub0 is outside today's mqAll, so nothing is doubled
    # or stranded. AVG phase 0: x ua0 ua1; stale x doubles ua1 with y.
    out, _ = run
    assert _owned(spark, out, "down", 2, "AVG_BY_CIRCLE", "x") == [("ua", 0), ("ub", 0)]
    assert _owned(spark, out, "down", 2, "AVG", "x") == [("ua", 0), ("ua", 1)]
    rows = whole(spark, out, "group_metrics").where("scenario = 'down' AND phase = 2 AND group = 'h'")
    got = {r.strategy: (r.multi_owned_queues, r.unassigned_queues) for r in rows.collect()}
    assert got == {"AVG": (1, 0), "AVG_BY_CIRCLE": (0, 0)}


def test_every_strategy_gives_stale_clients_their_old_share_and_the_others_todays(
    spark, tmp_path, sink
) -> None:
    # An invariant, whatever the strategy: in the stale phase a stale client owns what it owned in
    # the view phase (0), and every other client what it owned in phase 1.
    strategies = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "STICKY", "LAG_BALANCED")
    done = simulated(
        spark, tmp_path, sink=sink, snapshot=_snapshot(tmp_path), scenarios=SCENARIOS, strategies=strategies
    )
    out_all = str(done.out)
    a = whole(spark, out_all, "assignments").where("scenario = 'join'").collect()
    owned: dict[tuple, set] = {}
    for r in a:
        owned.setdefault((r.strategy, r.phase, r.client_id), set()).add(r.queue_id)
    strategies = {k[0] for k in owned}
    assert strategies == {"AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "STICKY", "LAG_BALANCED"}
    for s in strategies:
        for c in ("c1", "c2", "c3", "c4"):
            source = 0 if c == "c1" else 1
            assert owned.get((s, 2, c), set()) == owned.get((s, source, c), set()), (s, c)
        assert owned.get((s, 0, "c4"), set()) == set()


def test_fraction_picks_the_same_ceil_of_the_clients_every_run(spark, tmp_path) -> None:
    snapshot = make_snapshot(
        tmp_path / "snap",
        brokers=[{"broker_name": "b", "broker_id": 0, "alive": True}],
        topic_queues=queue_rows("t", {"b": 4}),
        consumers=[{"group": "g", "topic": "t", "client_id": f"c{i}"} for i in range(10)],
    )
    runs = parse.parse(
        "scenarios: [{name: s, steps: [{broker_up: {names: [b]}},"
        " {stale_view: {group: g, fraction: 0.7, seed: 3}}]}]"
    )
    snap = load_snapshot(spark, snapshot)

    def picked():
        views = apply.stale_views(snap, runs).to_pylist()
        return sorted((r["phase"], r["client_id"], r["view_phase"]) for r in views)

    first = picked()
    assert len(first) == 7  # 10 x 0.7 is 7.000000000000001 in floating point: still 7
    assert {(p, v) for p, _, v in first} == {(2, 0)}
    assert picked() == first


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        ("[{stale_view: {group: g, client_ids: [a]}}]", "must come right after a change step"),
        (
            "[{set_strategy: {group: g, strategy: AVG}}, {stale_view: {group: g, client_ids: [a]}}]",
            "must come right after a change step",
        ),
        (
            "[{broker_up: {names: [b]}}, {stale_view: {group: g, client_ids: [a], fraction: 0.5}}]",
            "either client_ids or fraction",
        ),
        ("[{broker_up: {names: [b]}}, {stale_view: {group: g, fraction: 0}}]", "above 0 and at most 1"),
        ("[{broker_up: {names: [b]}}, {stale_view: {group: g, fraction: half}}]", "expected a number"),
    ],
)
def test_badly_placed_or_shaped_stale_views_are_input_errors(steps: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        parse.parse(f"scenarios: [{{name: s, steps: {steps}}}]")


def test_a_stale_client_must_be_a_client_of_the_group_at_that_step() -> None:
    runs = parse.parse(
        "scenarios: [{name: s, steps: [{consumers_leave: {group: g, client_ids: [a]}},"
        " {stale_view: {group: g, client_ids: [a]}}]}]"
    )
    existing = names.Referenced(frozenset(), frozenset(), frozenset({"g"}), frozenset({("g", "a")}))
    with pytest.raises(InputError, match="step 2.*no such client of group 'g'"):
        names.check_names(runs, existing)
