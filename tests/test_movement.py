"""Movement between phases, worked by hand from RocketMQ's AVG and AVG_BY_CIRCLE, and min_moves."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqsim.stage.movement import movement_batches
from tests.builders import phase_routes, route, route_batch


def _movement(phases, strategy):
    out = pa.Table.from_batches(movement_batches(phase_routes(phases, strategy))).to_pandas()
    return out.set_index(["from_phase", "to_phase"])


def test_a_consumer_joins_under_avg() -> None:
    # 6 queues, [a, b] -> a: 0 1 2, b: 3 4 5; [a, b, c] -> a: 0 1, b: 2 3, c: 4 5.
    # Moved: 2 (a to b), 4 and 5 (b to c). A balanced 2-2-2 split could keep a's 0 1 and b's two of
    # 3 4 5: min_moves 2. Every client's share changed.
    m = _movement([({"b": 6}, ["a", "b"]), ({"b": 6}, ["a", "b", "c"])], "AVG").loc[(0, 1)]
    assert (m.queues_in_both, m.moved, m.min_moves, m.consumers_changed) == (6, 3, 2, 3)
    assert m.moved_fraction == 0.5


def test_a_consumer_joins_under_avg_by_circle() -> None:
    # [a, b] -> a: 0 2 4, b: 1 3 5; [a, b, c] -> a: 0 3, b: 1 4, c: 2 5: queues 2 3 4 5 move.
    m = _movement([({"b": 6}, ["a", "b"]), ({"b": 6}, ["a", "b", "c"])], "AVG_BY_CIRCLE").loc[(0, 1)]
    assert (m.moved, m.min_moves, m.consumers_changed) == (4, 2, 3)


def test_a_consumer_leaves_under_avg() -> None:
    # [a, b, c] -> a: 0 1, b: 2 3, c: 4 5; c leaves -> a: 0 1 2, b: 3 4 5. Queue 2 goes a's way,
    # 4 and 5 lose their owner: 3 moved; the fewest is c's 2 queues.
    m = _movement([({"b": 6}, ["a", "b", "c"]), ({"b": 6}, ["a", "b"])], "AVG").loc[(0, 1)]
    assert (m.moved, m.min_moves, m.consumers_before, m.consumers_after) == (3, 2, 3, 2)


def test_broker_down_and_back_under_avg() -> None:
    # mqAll b1:0-2 then b2:0-2 over [x, y]: x owns b1, y owns b2. b1 down: x b2:0 b2:1, y b2:2,
    # so 2 of the 3 surviving queues move while one move (x takes one of y's) was enough.
    # Back up: the same 2 move back (the fewest: 0, each keeps 3); phase 0 against 2: nothing moved.
    up, down = {"b1": 3, "b2": 3}, {"b2": 3}
    m = _movement([(up, ["x", "y"]), (down, ["x", "y"]), (up, ["x", "y"])], "AVG")
    assert (m.loc[(0, 1)].queues_before, m.loc[(0, 1)].queues_after, m.loc[(0, 1)].queues_in_both) == (
        6,
        3,
        3,
    )
    assert (m.loc[(0, 1)].moved, m.loc[(0, 1)].min_moves) == (2, 1)
    assert (m.loc[(1, 2)].moved, m.loc[(1, 2)].min_moves) == (2, 0)
    assert (m.loc[(0, 2)].moved, m.loc[(0, 2)].min_moves) == (0, 0)


def _configured(lists: list[dict[str, list[int]]]):
    """CONFIG rows, one per phase: every client's configured queues of broker b (4 queues)."""
    rows = route_batch(
        route(
            phase=k,
            last_phase=len(lists) - 1,
            strategies=["CONFIG"],
            brokers={"b": 4},
            clients=sorted(c),
            client_configs=[[{"broker_name": "b", "queue_id": q} for q in c[i]] for i in sorted(c)],
        )
        for k, c in enumerate(lists)
    )
    return pa.Table.from_batches(movement_batches(rows)).to_pandas().set_index(["from_phase", "to_phase"])


def test_min_moves_is_measured_against_assignments_as_balanced_as_the_new_one() -> None:
    # Before: x owns 0 1 2, y owns 3. If nothing changes, nothing had to move: the after assignment
    # spans 1..3 queues per client, so keeping everything is as balanced as it.
    same = _configured([{"x": [0, 1, 2], "y": [3]}, {"x": [0, 1, 2], "y": [3]}]).loc[(0, 1)]
    assert (same.moved, same.min_moves) == (0, 0)
    # Rebalanced to 2 and 2, one queue of x's must move, and one did.
    fair = _configured([{"x": [0, 1, 2], "y": [3]}, {"x": [0, 1], "y": [2, 3]}]).loc[(0, 1)]
    assert (fair.moved, fair.min_moves) == (1, 1)
    # Rebalanced the long way round: 0 1 and 3 change hands (2 stays with x) where one move was enough.
    swap = _configured([{"x": [0, 1, 2], "y": [3]}, {"x": [2, 3], "y": [0, 1]}]).loc[(0, 1)]
    assert (swap.moved, swap.min_moves, swap.consumers_changed) == (3, 1, 2)


def test_growing_read_queues_under_avg_by_circle_moves_nothing() -> None:
    # Circle allocation hands queue i to client i mod n: appending queues keeps every old owner.
    m = _movement([({"b": 4}, ["x", "y"]), ({"b": 8}, ["x", "y"])], "AVG_BY_CIRCLE").loc[(0, 1)]
    assert (m.queues_in_both, m.moved, m.min_moves) == (4, 0, 0)


def test_broadcasting_groups_move_only_as_clients_come_and_go() -> None:
    rows = phase_routes([({"b": 2}, ["x", "y"]), ({"b": 2}, ["x"])], "AVG", message_model="BROADCASTING")
    m = pa.Table.from_batches(movement_batches(rows)).to_pandas().iloc[0]
    assert (m.moved, m.min_moves) == (2, 2)  # both queues lose reader y; no assignment avoids it


@settings(max_examples=60, deadline=None)
@given(
    strategy=st.sampled_from(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"]),
    before=st.tuples(st.integers(0, 12), st.integers(0, 12), st.sets(st.sampled_from("abcdefg"), min_size=1)),
    after=st.tuples(st.integers(0, 12), st.integers(0, 12), st.sets(st.sampled_from("abcdefg"), min_size=1)),
)
def test_no_strategy_moves_fewer_than_min_moves(strategy, before, after) -> None:
    # These strategies give every queue one owner; whatever their balance, the after assignment is
    # one of those min_moves ranges over (as balanced as itself), so it cannot beat the minimum.
    phases = [({"b1": q1, "b2": q2}, sorted(c)) for q1, q2, c in (before, after)]
    phases = [({b: n for b, n in brokers.items() if n}, c) for brokers, c in phases]
    m = _movement(phases, strategy).loc[(0, 1)]
    assert 0 <= m.min_moves <= m.moved <= m.queues_in_both


def test_broker_down_under_avg_by_circle_moves_every_surviving_queue() -> None:
    # Circle over b1:0-2 b2:0-2 and [x, y]: x b1:0 b1:2 b2:1, y b1:1 b2:0 b2:2. b1 down: x b2:0 b2:2,
    # y b2:1, so all three surviving queues change hands, though x keeping b2:1 and y b2:0 b2:2
    # (1 and 2 queues, as balanced as the result) needed none.
    m = _movement([({"b1": 3, "b2": 3}, ["x", "y"]), ({"b2": 3}, ["x", "y"])], "AVG_BY_CIRCLE").loc[(0, 1)]
    assert (m.queues_in_both, m.moved, m.min_moves) == (3, 3, 0)


def test_expanding_read_queues_under_avg() -> None:
    # 4 -> 8 queues over [x, y]: x 0 1 -> 0-3, y 2 3 -> 4-7: queues 2 and 3 move; none had to.
    m = _movement([({"b": 4}, ["x", "y"]), ({"b": 8}, ["x", "y"])], "AVG").loc[(0, 1)]
    assert (m.queues_before, m.queues_after, m.moved, m.min_moves) == (4, 8, 2, 0)


def test_backlog_on_moved_queues() -> None:
    # The broker-down case under AVG: b2:0 and b2:1 move from y to x, b2:2 stays with y.
    backlog = [{"broker_name": "b2", "queue_id": q, "backlog": n} for q, n in ((0, 5), (1, 7), (2, 100))]
    backlog.append({"broker_name": "b1", "queue_id": 0, "backlog": 1000})  # gone from the route
    rows = phase_routes([({"b1": 3, "b2": 3}, ["x", "y"]), ({"b2": 3}, ["x", "y"])], "AVG", backlogs=backlog)
    m = pa.Table.from_batches(movement_batches(rows)).to_pandas().iloc[0]
    assert (m.moved, m.moved_backlog) == (2, 12)
    without = pa.Table.from_batches(
        movement_batches(phase_routes([({"b": 2}, ["x"]), ({"b": 2}, ["x", "y"])], "AVG"))
    )
    assert without.column("moved_backlog").null_count == 1  # no offsets: unknown, not zero


def test_min_moves_is_null_where_the_new_assignment_is_not_one_owner_per_queue() -> None:
    # CONFIG lists that leave queues 2 and 3 without an owner: no one-owner assignment to compare.
    m = _configured([{"x": [0, 1], "y": [2, 3]}, {"x": [0], "y": [1]}]).loc[(0, 1)]
    assert m.moved == 3  # 1 changes hands, 2 and 3 lose their owner
    assert pd.isna(m.min_moves)


def test_shrinking_read_queues_under_avg_and_avg_by_circle() -> None:
    # 8 -> 4 read queues over [x, y]. AVG: x 0-3, y 4-7 -> x 0 1, y 2 3: queues 2 and 3 move, and
    # must (x held all four survivors, a 2-2 split leaves it two). Circle: x 0 2 4 6, y 1 3 5 7 ->
    # x 0 2, y 1 3: nothing moves.
    avg = _movement([({"b": 8}, ["x", "y"]), ({"b": 4}, ["x", "y"])], "AVG").loc[(0, 1)]
    assert (avg.queues_in_both, avg.moved, avg.min_moves) == (4, 2, 2)
    circle = _movement([({"b": 8}, ["x", "y"]), ({"b": 4}, ["x", "y"])], "AVG_BY_CIRCLE").loc[(0, 1)]
    assert (circle.moved, circle.min_moves) == (0, 0)


def test_a_consumer_leaves_under_avg_by_circle() -> None:
    # [a, b, c] -> a 0 3, b 1 4, c 2 5; c leaves -> a 0 2 4, b 1 3 5: queues 2 (c to a), 3 (a to b),
    # 4 (b to a) and 5 (c to b) move; only c's two had to.
    m = _movement([({"b": 6}, ["a", "b", "c"]), ({"b": 6}, ["a", "b"])], "AVG_BY_CIRCLE").loc[(0, 1)]
    assert (m.moved, m.min_moves, m.consumers_changed) == (4, 2, 3)
