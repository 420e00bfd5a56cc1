"""STICKY, rmqsim's own strategy: AVG without history, and exactly min_moves owner changes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqsim.stage.movement import movement_batches
from rmqsim.strategies import allocate_one
from tests.builders import phase_routes, staged


def _movement(phases, strategy):
    out = pa.Table.from_batches(movement_batches(phase_routes(phases, strategy))).to_pandas()
    return out.set_index(["from_phase", "to_phase"])


def test_without_history_sticky_is_avg() -> None:
    mq = [("b", i) for i in range(7)]
    for n_clients in range(1, 10):
        cids = [f"c{i}" for i in range(n_clients)]
        for cid in cids:
            assert allocate_one("STICKY", "t", mq, cids, cid) == allocate_one("AVG", "t", mq, cids, cid)


def test_a_consumer_joins_under_sticky() -> None:
    # AVG moved 3 of 6 queues here (test_movement); STICKY: a keeps q0 q1, b keeps q3 q4, and c
    # takes q2 and q5, the queues over a's and b's new share of 2: 2 moves, the minimum.
    m = _movement([({"b": 6}, ["a", "b"]), ({"b": 6}, ["a", "b", "c"])], "STICKY").loc[(0, 1)]
    assert (m.moved, m.min_moves) == (2, 2)


def test_broker_down_and_back_under_sticky() -> None:
    up, down = {"b1": 3, "b2": 3}, {"b2": 3}
    m = _movement([(up, ["x", "y"]), (down, ["x", "y"]), (up, ["x", "y"])], "STICKY")
    assert (m.loc[(0, 1)].moved, m.loc[(0, 1)].min_moves) == (1, 1)
    assert (m.loc[(1, 2)].moved, m.loc[(1, 2)].min_moves) == (0, 0)


@settings(max_examples=60, deadline=None)
@given(
    phases=st.lists(
        st.tuples(st.integers(0, 9), st.integers(0, 9), st.sets(st.sampled_from("abcdefg"), min_size=1)),
        min_size=2,
        max_size=4,
    )
)
def test_sticky_stays_balanced_and_moves_exactly_min_moves(phases) -> None:
    spec = [({b: n for b, n in (("b1", q1), ("b2", q2)) if n}, sorted(c)) for q1, q2, c in phases]
    rows = phase_routes(spec, "STICKY")
    moves = pa.Table.from_batches(movement_batches(rows)).to_pandas()
    consecutive = moves[moves.to_phase == moves.from_phase + 1]
    assert (consecutive.moved == consecutive.min_moves).all()
    run = staged(rows)
    clients = run.consumer_load  # one topic: each client's load is its queues of it
    spread = clients.groupby("phase").queues.agg(lambda q: q.max() - q.min())
    assert (spread <= 1).all()  # within one queue per client in every phase
    groups = run.group_metrics
    assert (groups.unassigned_queues == 0).all() and (groups.multi_owned_queues == 0).all()
    assert np.all(clients.queues.to_numpy() >= 0)


def test_sticky_gives_the_same_answer_however_the_input_rows_are_ordered(spark, tmp_path, sink) -> None:
    import random

    from rmqsim import simulate
    from rmqsim.config import SimulateConfig
    from tests.builders import make_snapshot, queue_rows

    brokers = [{"broker_name": b, "broker_id": 0, "alive": True} for b in ("b1", "b2", "b3")]
    queues = queue_rows("t", {"b1": 5, "b2": 3, "b3": 4}) + queue_rows("u", {"b2": 6})
    consumers = [
        {"group": "g", "topic": t, "client_id": f"10.0.0.{i}@1"} for t in ("t", "u") for i in range(5)
    ]
    scenario = tmp_path / "s.yml"
    scenario.write_text(
        "scenarios:\n  - name: churn\n    steps:\n"
        "      - consumers_leave: {group: g, client_ids: ['10.0.0.2@1']}\n"
        "      - broker_down: {names: [b1]}\n"
        "      - consumers_join: {group: g, count: 2, seed: 5}\n"
    )
    tables = []
    for k, rows in enumerate((consumers, random.Random(7).sample(consumers, len(consumers)))):
        ordered = (queues, brokers) if k == 0 else (queues[::-1], brokers[::-1])
        snap = make_snapshot(
            tmp_path / f"snap{k}", brokers=ordered[1], topic_queues=ordered[0], consumers=rows
        )
        out = str(tmp_path / f"out{k}")
        simulate.run(
            spark, SimulateConfig(snap, out, strategies=("STICKY",), scenarios=str(scenario), sink=sink)
        )
        tables.append(
            sorted(
                tuple(r)
                for r in spark.read.parquet(f"{out}/assignments")
                .select("phase", "topic", "client_id", "broker_name", "queue_id")
                .collect()
            )
        )
    assert tables[0] == tables[1] and len({r[0] for r in tables[0]}) == 4  # all four phases
