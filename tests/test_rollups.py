"""rmqsim.rollups on tables built by hand: the rules of the recommendation and the comparison
(docs/CONTRACT.md, section 4), without Spark."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from rmqsim import movement_sums, recommendation, rollups, schemas
from rmqsim.strategies import broker, proxy
from rmqsim.strategies.batch import RMQSIM_REFUSES

SNAPSHOT_FIGURES = {
    "consumer_count": 4,
    "queue_count": 3,
    "pop_idle_consumers": None,
    "pop_max_message_share": None,
    "one_library_multi_owned": None,
    "one_library_unassigned": None,
    "stranded_msgs_per_s": None,
    "stranded_backlog": None,
    "clients_needed": None,
}


def _group_metrics(rows: list[tuple[str, int, str, str | None]]) -> pa.Table:
    """(group, phase, strategy, error) of scenario s, topic t; the snapshot's figures at phase 0."""
    records = [
        {
            "scenario": "s",
            "phase": phase,
            "strategy": strategy,
            "topic": "t",
            "group": group,
            "error": error,
            **{k: (v if phase == 0 else 1) for k, v in SNAPSHOT_FIGURES.items()},
        }
        for group, phase, strategy, error in rows
    ]
    types = {
        "pop_max_message_share": pa.float64(),
        "stranded_msgs_per_s": pa.float64(),
        "error": pa.string(),
        "phase": pa.int32(),
    }
    schema = pa.schema(
        [
            (c, types.get(c, pa.string() if isinstance(records[0][c], str) else pa.int64()))
            for c in rollups.GROUP_METRICS_COLUMNS
        ]
    )
    return pa.Table.from_pylist(records, schema)


def _load(rows: list[tuple[str, int, str, float]]) -> pa.Table:
    """(group, phase, strategy, max_over_mean) of scenario s."""
    table = pa.Table.from_pylist(
        [
            {"scenario": "s", "phase": p, "strategy": st, "group": g, "max_over_mean": m}
            for g, p, st, m in rows
        ]
    )
    return table.append_column("over_capacity", pa.nulls(table.num_rows, pa.bool_()))  # no capacities


def _movement(rows: list[tuple[str, str, int, int, int, int | None]]) -> pa.Table:
    """(group, strategy, from_phase, to_phase, moved, min_moves) of scenario s; 4 queues in both."""
    schema = pa.schema(
        [
            (c, pa.string() if c in ("scenario", "strategy", "group") else pa.int64())
            for c in rollups.MOVEMENT_COLUMNS
        ]
    )
    return pa.Table.from_pylist(
        [
            {
                "scenario": "s",
                "strategy": st,
                "group": g,
                "from_phase": f,
                "to_phase": t,
                "queues_in_both": 4,
                "moved": moved,
                "min_moves": least,
                "moved_backlog": None,
            }
            for g, st, f, t, moved, least in rows
        ],
        schema,
    )


def test_the_recommendation_breaks_ties_and_passes_over_a_strategy_that_alone_throws() -> None:
    phases = [0, 1]
    metrics = _group_metrics(
        [("g", p, st, "boom" if (st, p) == ("C", 1) else None) for st in "ABC" for p in phases]
        # Group h: every strategy throws at phase 1, so none is to blame.
        + [("h", p, st, "no queues" if p == 1 else None) for st in "ABC" for p in phases]
    )
    load = _load(
        [
            ("g", 0, "A", 1.3334),  # worst 1.3334, rounded 1.333
            ("g", 1, "A", 1.0),
            ("g", 0, "B", 1.3331),  # worst 1.3331, rounded 1.333: a tie with A
            ("g", 1, "B", 1.2),
            ("g", 0, "C", 1.0),  # the best balance, but C threw where A and B did not
            ("g", 1, "C", 1.0),
            *[("h", 0, st, 2.0) for st in "ABC"],
        ]
    )
    movement = _movement(
        [
            ("g", "A", 0, 1, 2, 2),
            ("g", "B", 0, 1, 1, 1),
            ("g", "C", 0, 1, 0, 0),
            *[("h", st, 0, 1, 0, None) for st in "ABC"],
        ]
    )
    # g's hand-overs: A delays 10.4 msgs in two rows (10.2 -> 10, 0.2 -> 0: whole messages per row)
    # and reads 3 twice; B delays 30; C delays 1 but threw, so it may not win; h has none.
    handover = pa.table(
        {
            "group": ["g", "g", "g", "g"],
            "strategy": ["A", "A", "B", "C"],
            "msgs_delayed": [10.2, 0.2, 30.0, 1.0],
            "msgs_read_twice": [3.0, 0.0, 0.0, 0.0],
        }
    )
    out = {
        r["group"]: r for r in recommendation.recommendation(metrics, load, movement, handover).to_pylist()
    }
    # g: A (10 + 3 = 13 messages) costs a deploy less than B (30); h: no hand-over, no figure.
    assert (out["g"]["cheapest_deploy"], out["g"]["cheapest_deploy_msgs"]) == ("A", 13)
    assert (out["h"]["cheapest_deploy"], out["h"]["cheapest_deploy_msgs"]) == (None, None)
    # g: A and B tie on 1.333; B moved 1 queue, A 2: B is best balanced and moves fewest.
    assert (out["g"]["best_balance"], out["g"]["best_max_over_mean"]) == ("B", 1.333)
    assert (out["g"]["fewest_moves"], out["g"]["fewest_moved"]) == ("B", 1)
    # 4 clients in the snapshot, its biggest topic 3 queues: one sits idle whatever the strategy.
    assert (out["g"]["consumers"], out["g"]["useful_consumers"]) == (4, 3)
    assert out["g"]["pop_share_queue_num"] is None  # no POP figures: no idle client in a topic
    # h: all three threw at phase 1, so all stay eligible; equal in everything, the name decides.
    assert (out["h"]["best_balance"], out["h"]["fewest_moves"]) == ("A", "A")
    assert list(out) == ["g", "h"]


def _compared_summary(phases: dict[str, tuple[int, ...]]) -> pa.Table:
    """summary rows of scenario s: per strategy its phases, each COMPARED figure the phase."""
    return pa.Table.from_pylist(
        [
            {"scenario": "s", "phase": p, "strategy": st, **{c: p for c in rollups.COMPARED}}
            for st, of in phases.items()
            for p in of
        ]
    ).cast(
        pa.schema(
            [("scenario", pa.string()), ("phase", pa.int32()), ("strategy", pa.string())]
            + [(c, pa.float64() if "mean" in c else pa.int64()) for c in rollups.COMPARED]
        )
    )


def test_the_comparison_sets_min_moves_null_where_one_topic_has_none() -> None:
    summary = _compared_summary({"A": (0, 1, 2), "B": (0, 1)})
    movement = _movement(
        [
            ("g1", "A", 0, 1, 1, 1),
            ("g1", "A", 1, 2, 1, 1),  # out and back: 2 over the steps, 0 from phase 0 to 2
            ("g1", "A", 0, 2, 0, 0),
            ("g2", "A", 0, 2, 3, None),  # a queue owned twice after: no minimum for g2
            ("g2", "A", 0, 1, 3, None),
        ]
    )
    out = rollups.comparison(summary, movement)
    assert out.schema.names == schemas.COMPARISON.fieldNames()
    rows = {r["strategy"]: r for r in out.to_pylist()}
    a = rows["A"]
    assert (a["last_phase"], a["fleet_max_queues_before"], a["fleet_max_queues_after"]) == (2, 0, 2)
    # phase 0 to 2: g1 moved 0, g2 3 of 4 + 4 queues in both; steps: 1 + 1 + 3.
    assert (a["queues_in_both"], a["queues_moved"], a["moved_over_steps"]) == (8, 3, 5)
    assert a["min_moves"] is None  # g1's 0 alone would pass for the scenario's minimum
    # B never reached phase 2, the scenario's last: its row has phase 0 and nothing after.
    b = rows["B"]
    assert (b["fleet_max_queues_before"], b["last_phase"], b["fleet_max_queues_after"]) == (0, None, None)
    assert b["queues_moved"] is None


def test_the_comparison_of_movement_summed_in_parts_is_the_comparison_of_it_whole() -> None:
    # movement_sums are sums and counts: any split of the rows, summed per part and added up,
    # gives the comparison of the rows whole, nulls included (g2's min_moves).
    summary = _compared_summary({"A": (0, 1, 2), "B": (0, 1, 2)})
    movement = _movement(
        [
            ("g1", "A", 0, 1, 1, 1),
            ("g1", "A", 1, 2, 1, 1),
            ("g1", "A", 0, 2, 0, 0),
            ("g2", "A", 0, 2, 3, None),
            ("g2", "A", 0, 1, 3, None),
            ("g1", "B", 0, 2, 2, 1),
            ("g2", "B", 0, 2, 0, 0),
            ("g2", "B", 1, 2, 4, 4),
        ]
    )
    whole = rollups.comparison(summary, movement)
    for cut in range(movement.num_rows + 1):
        parts = [movement.slice(0, cut), movement.slice(cut)]
        moves = movement_sums.added([movement_sums.of(p, summary) for p in parts])
        assert rollups.comparison(summary, None, moves=moves).equals(whole)
    rows = {r["strategy"]: r for r in whole.to_pylist()}
    # B from phase 0 to 2: 2 + 0 moved, minimums 1 + 0; over the steps only g2's 1 -> 2 counts.
    assert (rows["B"]["queues_moved"], rows["B"]["min_moves"], rows["B"]["moved_over_steps"]) == (2, 1, 4)
    assert rows["A"]["min_moves"] is None


def _full_group_metrics(rows: list[dict]) -> pa.Table:
    """group_metrics rows of scenario s, topic t: each dict names what its test is about, the rest
    is zero or null."""
    fields = to_arrow_schema(schemas.GROUP_METRICS)
    base = {f.name: (0 if pa.types.is_integer(f.type) else None) for f in fields}
    return pa.Table.from_pylist([{**base, "scenario": "s", "topic": "t", **r} for r in rows], fields)


def test_the_summary_counts_clients_queues_and_the_groups_the_client_fails_on() -> None:
    metrics = _full_group_metrics(
        [
            # Phase 0: two groups of 3 and 5 queues, one on which the client throws.
            {
                "phase": 0,
                "strategy": "AVG",
                "group": "a",
                "queue_count": 3,
                "max_over_mean": 1.5,
                "idle_consumers": 1,
            },
            {
                "phase": 0,
                "strategy": "AVG",
                "group": "b",
                "queue_count": 5,
                "error": "IllegalArgumentException",
            },
            # Phase 1: the broker answers null (kept, not an error), and every client left.
            {
                "phase": 1,
                "strategy": "AVG",
                "group": "a",
                "queue_count": 3,
                "error": f"{broker.ANSWERS_NULL}x",
            },
        ]
    )
    load = pa.table(
        {
            "scenario": ["s"] * 3,
            "phase": pa.array([0, 0, 0], pa.int32()),
            "strategy": ["AVG"] * 3,
            "group": ["a", "a", "b"],
            "queues": [2, 0, 5],
            "msgs_per_s": pa.nulls(3, pa.float64()),  # no traffic
            "over_capacity": pa.nulls(3, pa.bool_()),  # no capacities
            "lag_growth_msgs_per_s": pa.nulls(3, pa.float64()),
        }
    )
    out = rollups.summary(metrics, load).to_pylist()
    assert [(r["phase"], r["groups"], r["queues"], r["groups_with_errors"]) for r in out] == [
        (0, 2, 8, 1),
        (1, 1, 3, 0),
    ]
    first, second = out
    # Clients hold 2, 0 and 5 queues: max 5, mean 7/3, one idle.
    assert (first["consumers"], first["fleet_max_queues"], first["idle_consumers"]) == (3, 5, 1)
    assert first["fleet_mean_queues"] == 7 / 3 and first["fleet_max_over_mean"] == 5 / (7 / 3)
    assert (first["worst_group_max_over_mean"], first["idle_in_a_topic"]) == (1.5, 1)
    # No traffic: no message figures.
    assert (first["fleet_max_msgs_per_s"], first["clients_without_messages"], first["in_msgs_per_s"]) == (
        None,
        None,
        None,
    )
    # No client row in phase 1: no consumer figures, and no group ratio to take the max of.
    assert (second["consumers"], second["fleet_max_queues"], second["worst_group_max_over_mean"]) == (
        None,
        None,
        None,
    )


def test_allocation_rejects_name_the_skipped_strategies_and_the_groups_the_client_fails_on() -> None:
    routes = pa.table(
        {
            "scenario": ["s", "s"],
            "phase": pa.array([0, 1], pa.int32()),
            "topic": ["t", "t"],
            "group": ["g", "h"],
            "skipped": [[{"strategy": "CONFIG", "reason": "no queue_config rows"}], []],
        }
    )
    metrics = _full_group_metrics(
        [
            {"phase": 0, "strategy": "AVG", "group": "g", "error": "IllegalStateException: x"},
            {"phase": 0, "strategy": "AVG", "group": "h", "error": f"{RMQSIM_REFUSES}: 300,000 clients"},
            {"phase": 1, "strategy": "AVG", "group": "h", "error": f"{proxy.ANSWERS_NULL}y"},  # kept
            {"phase": 1, "strategy": "AVG", "group": "g"},
        ]
    )
    out = rollups.allocation_rejects(routes, metrics).to_pylist()
    # Spark's to_json of struct(scenario, phase, topic, group, strategy), sorted by row (AVG < CONFIG).
    assert out == [
        {
            "source": "allocation",
            "reason": "the client throws: IllegalStateException: x",
            "row": '{"scenario":"s","phase":0,"topic":"t","group":"g","strategy":"AVG"}',
        },
        {
            "source": "allocation",
            "reason": "no queue_config rows",
            "row": '{"scenario":"s","phase":0,"topic":"t","group":"g","strategy":"CONFIG"}',
        },
        {
            "source": "allocation",
            "reason": f"{RMQSIM_REFUSES}: 300,000 clients",
            "row": '{"scenario":"s","phase":0,"topic":"t","group":"h","strategy":"AVG"}',
        },
    ]


def _as_scenario(table: pa.Table, name: str) -> pa.Table:
    i = table.schema.get_field_index("scenario")
    return table.set_column(i, table.schema.field(i), pa.array([name] * table.num_rows, pa.string()))


def test_the_recommendation_over_parts_equals_it_over_every_row() -> None:
    # Invariant: each scenario's rows as a part of its own, folded in any grouping, give what the
    # rows of every scenario give at once. Scenario s: C alone throws at phase 1 in group g, so C
    # is not eligible there; scenario u: nobody throws, and B moves 3 queues where A moves none.
    s_metrics = _group_metrics(
        [("g", p, st, "boom" if (st, p) == ("C", 1) else None) for st in "ABC" for p in (0, 1)]
    )
    u_metrics = _as_scenario(_group_metrics([("g", p, st, None) for st in "ABC" for p in (0, 1, 2)]), "u")
    s_load = _load([("g", p, st, 1.0 + 0.1 * p + 0.01 * i) for i, st in enumerate("ABC") for p in (0, 1)])
    u_load = _as_scenario(
        _load([("g", p, st, 1.5 - 0.1 * i) for i, st in enumerate("ABC") for p in (0, 1, 2)]), "u"
    )
    s_moves = _movement([("g", st, 0, 1, i, i) for i, st in enumerate("ABC")])
    u_moves = _as_scenario(
        _movement([("g", st, f, f + 1, 3 * (st == "B"), 0) for st in "ABC" for f in (0, 1)]), "u"
    )
    whole = recommendation.recommendation(
        pa.concat_tables([s_metrics, u_metrics]),
        pa.concat_tables([s_load, u_load]),
        pa.concat_tables([s_moves, u_moves]),
    )
    parts = [recommendation.part(s_metrics, s_load, s_moves), recommendation.part(u_metrics, u_load, u_moves)]
    assert recommendation.merged(parts).equals(whole)
    assert recommendation.merged(recommendation.folded(parts[::-1])).equals(whole)
    # Over both: C threw once in s, so A or B wins; A's worst 1.5 (u, phase 0) against B's 1.4,
    # and B moved 1 + 6 = 7 queues where A moved 0: B balances best, A moves fewest.
    row = whole.to_pylist()[0]
    assert (row["best_balance"], row["fewest_moves"], row["fewest_moved"]) == ("B", "A", 0)
