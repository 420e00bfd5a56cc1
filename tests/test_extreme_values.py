"""Extreme but valid numbers in the traffic and capacity tables (docs/CONTRACT.md, sections 1, 2c, 2d
and 3): a rate, share, factor or capacity past its bound is a reject row (the snapshot's) or exit
code 2 (the scenarios file's), never a stack trace or a wrong figure, and values at the bounds come
out exact.

The cases of the issue run the snapshot checks alone on damaged copies of the sample snapshot's
tables (pyarrow, no Spark); one simulate run takes values at the bounds end to end; the properties
feed extreme finite values through the checks, the parser, the traffic and the capacity arithmetic.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqsim import cli, schemas
from rmqsim.config import sample_snapshot
from rmqsim.errors import InputError
from rmqsim.scenarios import apply, parse
from rmqsim.snapshot.checks import SILENT_KEYS, check_snapshot
from rmqsim.snapshot.load import Snapshot, load_snapshot
from rmqsim.snapshot.reconcile import reconciliation
from rmqsim.stage import capacity, inflow, routes
from tests.builders import make_snapshot
from tests.simulated import simulated

BIG = 10000000000.0  # 1e10: ten times the bound on a rate
NO_HASH_PRODUCER = "no HASH producer of this topic (and producer_group) sends with this key"


@pytest.fixture(scope="module")
def sample() -> Snapshot:
    return load_snapshot(None, str(sample_snapshot()))


def _with(snapshot: Snapshot, table: str, column: str, values: dict[int, float]) -> Snapshot:
    """``snapshot`` with ``table.column`` set to ``values`` ({row: value}) on those rows."""
    t = getattr(snapshot, table)
    column_values = t[column].to_pylist()
    for row, value in values.items():
        column_values[row] = value
    at = t.schema.get_field_index(column)
    return dataclasses.replace(
        snapshot, **{table: t.set_column(at, column, pa.array(column_values, pa.float64()))}
    )


def _checked(snapshot: Snapshot) -> tuple[list[tuple[str, str, dict]], dict[str, tuple[int, int, int]]]:
    """The reject rows (source, reason, row) and each table's (read, used, rejected)."""
    checked = check_snapshot(snapshot, configured_strategies=True)
    rejects = [(r["source"], r["reason"], json.loads(r["row"])) for r in checked.rejects.to_pylist()]
    counts = reconciliation(snapshot, checked.snapshot, checked.rejects).to_pylist()
    return rejects, {r["table"]: (r["rows_read"], r["rows_used"], r["rows_rejected"]) for r in counts}


def _row(snapshot: Snapshot, table: str, row: int, **changed: object) -> dict:
    """A row as its reject row shows it: the required columns and those the files have."""
    spec = next(t for t in schemas.SNAPSHOT_TABLES if t.name == table)
    shown = [c.name for c in spec.columns if c.required or f"{table}.{c.name}" in snapshot.given]
    values = getattr(snapshot, table).select(shown).slice(row, 1).to_pylist()[0]
    return {**values, **changed}


# ------------------------------------------------------------------ the cases


@pytest.mark.parametrize("row", range(18))
def test_any_one_producer_at_1e10_is_a_reject_row_and_the_tables_reconcile(sample, row) -> None:
    rejects, counts = _checked(_with(sample, "producers", "msgs_per_s", {row: BIG}))
    producers = [r for r in rejects if r[0] == "producers"]
    assert producers == [
        (
            "producers",
            "msgs_per_s 10000000000.0 is more than 1e+09",
            _row(sample, "producers", row, msgs_per_s=BIG),
        )
    ]
    assert counts["producers"] == (18, 17, 1)
    # order-service (row 0) is the sample's only HASH producer: its 60 keys go with it.
    keys = (60, 0, 60) if row == 0 else (60, 60, 0)
    assert counts["producer_keys"] == keys
    assert [r[1] for r in rejects if r[0] == "producer_keys"] == [NO_HASH_PRODUCER] * keys[2]
    assert {t: n for t, n in counts.items() if t not in ("producers", "producer_keys")} == {
        t: (n[0], n[0], 0) for t, n in counts.items() if t not in ("producers", "producer_keys")
    }


def test_the_web_producer_at_1e10_is_rejected_with_its_row(sample) -> None:
    rejects, _ = _checked(_with(sample, "producers", "msgs_per_s", {6: BIG}))
    assert rejects == [
        (
            "producers",
            "msgs_per_s 10000000000.0 is more than 1e+09",
            {
                "topic": "user-events",
                "producer_group": "web",
                "msgs_per_s": 10000000000.0,
                "language": "JAVA",
                "version": None,
                "selector": "ROUND_ROBIN",
                "send_latency_fault_enable": False,
            },
        )
    ]


def test_two_producers_at_1e308_are_two_reject_rows(sample) -> None:
    rejects, counts = _checked(_with(sample, "producers", "msgs_per_s", {6: 1e308, 7: 1e308}))
    assert [(s, r, row["producer_group"], row["msgs_per_s"]) for s, r, row in rejects] == [
        ("producers", "msgs_per_s 1e+308 is more than 1e+09", "web", 1e308),
        ("producers", "msgs_per_s 1e+308 is more than 1e+09", "mobile", 1e308),
    ]
    assert counts["producers"] == (18, 16, 2)


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ([float("nan")], "msgs_per_s is not a number"),
        ([float("inf")], "msgs_per_s inf is not finite"),
        ([-1.0], "msgs_per_s -1.0 is negative"),
        ([1e9 + 1], "msgs_per_s 1000000001.0 is more than 1e+09"),
    ],
)
def test_non_finite_negative_and_just_past_the_bound_rates_are_rejected(sample, values, reason) -> None:
    rejects, counts = _checked(_with(sample, "producers", "msgs_per_s", {6: values[0]}))
    assert [(s, r) for s, r, _ in rejects] == [("producers", reason)]
    assert counts["producers"] == (18, 17, 1)


def test_a_producer_at_the_bound_is_kept(sample) -> None:
    rejects, counts = _checked(_with(sample, "producers", "msgs_per_s", {6: 1e9, 7: 5e-324}))
    assert rejects == [] and counts["producers"] == (18, 18, 0)


def test_an_offsets_in_tps_past_the_bound_is_a_reject_row(sample) -> None:
    rejects, counts = _checked(_with(sample, "offsets", "in_tps", {0: 2e9}))
    assert [(s, r, row["queue_id"]) for s, r, row in rejects] == [
        ("offsets", "in_tps 2000000000.0 is more than 1e+09", 0)
    ]
    assert counts["offsets"] == (80, 79, 1)


@pytest.mark.parametrize("step", ["{factor: 1.0e+10}", "{msgs_per_s: 1.0e+13}"])
def test_set_traffic_past_the_bound_is_exit_code_2_naming_file_step_and_key(tmp_path, capsys, step) -> None:
    scenarios = tmp_path / "s.yml"
    scenarios.write_text(f"scenarios:\n  - name: surge\n    steps:\n      - set_traffic: {step}\n")
    args = ["simulate", "--snapshot", str(sample_snapshot()), "--out", str(tmp_path / "out")]
    assert cli.main([*args, "--scenarios", str(scenarios)]) == 2
    problem = {
        "{factor: 1.0e+10}": "set_traffic.factor: must be at most 1000, got 10000000000.0",
        "{msgs_per_s: 1.0e+13}": "set_traffic.msgs_per_s: must be at most 1e+09, got 10000000000000.0",
    }[step]
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"rmqsim: bad input: {scenarios}: scenario 'surge', step 1.{problem}"
    assert not (tmp_path / "out").exists()


def test_factors_that_multiply_past_the_bound_are_an_error_at_the_step_that_passes_it() -> None:
    text = """scenarios:
  - name: surge
    steps:
      - set_traffic: {factor: 100}
      - broker_down: {names: [b]}
      - set_traffic: {topics: [t], factor: 20}
"""
    with pytest.raises(InputError) as raised:
        parse.parse(text, source="s.yml")
    assert str(raised.value) == (
        "s.yml: scenario 'surge', step 3.set_traffic.factor: with the factors of the steps before it, "
        "rates would grow 2000 times, more than 1000"
    )


@pytest.mark.parametrize("key", ["factor", "msgs_per_s"])
def test_a_yaml_integer_past_any_double_is_an_input_error_not_an_overflow(key) -> None:
    # YAML's integers have no bound: 10**400 passes "0 or more" but float() of it overflows.
    text = f"scenarios:\n  - name: surge\n    steps:\n      - set_traffic: {{{key}: {10**400}}}\n"
    with pytest.raises(InputError) as raised:
        parse.parse(text)
    assert str(raised.value) == (
        f"scenarios: scenario 'surge', step 1.set_traffic.{key}: "
        "expected a number a double holds, got an integer of 401 digits"
    )


def test_factors_that_stay_within_the_bound_parse() -> None:
    # 1000, then 1/2 and 2 (a run's product: 1000 at most), then a new total for every topic and 1000 again.
    steps = ["{factor: 1000}", "{factor: 0.5}", "{factor: 2}", "{msgs_per_s: 1.0e+9}", "{factor: 1000}"]
    text = "scenarios:\n  - name: ok\n    steps:\n" + "".join(f"      - set_traffic: {s}\n" for s in steps)
    [scenario] = parse.parse(text)
    assert [s.factor for s in scenario.steps] == [1000.0, 0.5, 2.0, None, 1000.0]


def test_a_consumer_capacity_of_1e13_is_a_reject_row(sample) -> None:
    rejects, counts = _checked(_with(sample, "consumers", "capacity_msgs_per_s", {0: 1e13}))
    assert rejects == [
        (
            "consumers",
            "capacity_msgs_per_s 10000000000000.0 is more than 1e+09",
            _row(sample, "consumers", 0, capacity_msgs_per_s=1e13),
        )
    ]
    assert counts["consumers"] == (111, 110, 1)


def test_a_capacity_past_the_bound_sets_no_value_for_the_clients_other_rows(tmp_path) -> None:
    # One process on topics t and u: its t row gives 2e9 (past the bound), its u row 1000. Only the
    # t row is rejected; the u row has no kept row to disagree with, so the client keeps topic u.
    snapshot = load_snapshot(
        None,
        make_snapshot(
            tmp_path,
            brokers=[{"broker_name": "b", "broker_id": 0}],
            topic_queues=[
                {"topic": t, "broker_name": "b", "read_queue_nums": 4, "write_queue_nums": 4, "perm": 6}
                for t in ("t", "u")
            ],
            consumers=[
                {"group": "g", "topic": "t", "client_id": "c@1", "capacity_msgs_per_s": 2e9},
                {"group": "g", "topic": "u", "client_id": "c@1", "capacity_msgs_per_s": 1000.0},
            ],
        ),
    )
    rejects, counts = _checked(snapshot)
    assert [(s, r) for s, r, _ in rejects] == [
        ("consumers", "capacity_msgs_per_s 2000000000.0 is more than 1e+09")
    ]
    assert counts["consumers"] == (2, 1, 1)


def test_a_tiny_positive_capacity_is_a_reject_row(sample) -> None:
    # load over capacity would be m / 5e-324: infinite for any m above about 1e-16.
    rejects, counts = _checked(_with(sample, "consumers", "capacity_msgs_per_s", {0: 5e-324}))
    assert [(s, r) for s, r, _ in rejects] == [
        ("consumers", "capacity_msgs_per_s 5e-324 is above 0 but below 1e-06")
    ]
    assert counts["consumers"] == (111, 110, 1)


def test_a_group_capacity_of_1e13_rejects_the_group_and_its_consumers(sample) -> None:
    # groups row 2 is analytics (capacity 1500): its 21 consumer rows cannot run without it.
    rejects, counts = _checked(_with(sample, "groups", "capacity_msgs_per_s", {2: 1e13}))
    reason = "capacity_msgs_per_s 10000000000000.0 is more than 1e+09"
    assert rejects[0] == ("groups", reason, _row(sample, "groups", 2, capacity_msgs_per_s=1e13))
    assert {(s, r) for s, r, _ in rejects[1:]} == {
        ("consumers", f"group 'analytics' is not simulated: {reason}")
    }
    assert counts["groups"] == (15, 14, 1) and counts["consumers"] == (111, 90, 21)


def test_two_key_shares_of_1e308_are_reject_rows(sample) -> None:
    rejects, counts = _checked(_with(sample, "producer_keys", "share", {0: 1e308, 1: 1e308}))
    assert rejects == [
        ("producer_keys", "share 1e+308 is more than 1e+09", _row(sample, "producer_keys", k, share=1e308))
        for k in (0, 1)
    ]
    assert counts["producer_keys"] == (60, 58, 2)


def test_a_producer_whose_key_shares_are_all_0_loses_its_keys_with_a_reject_row_each(sample) -> None:
    rejects, counts = _checked(_with(sample, "producer_keys", "share", dict.fromkeys(range(60), 0.0)))
    assert rejects == [
        ("producer_keys", SILENT_KEYS, _row(sample, "producer_keys", k, share=0.0)) for k in range(60)
    ]
    assert counts["producer_keys"] == (60, 0, 60) and counts["producers"] == (18, 18, 0)


def test_a_share_of_0_among_others_is_kept_and_a_topic_wide_key_is_judged_per_producer(tmp_path) -> None:
    """Producers a and b of topic t hash; a topic-wide key k0 (share 0) is a key of both. a also has
    k1 (share 2): a divides its messages by its shares, so k0 and k1 stay. b has k0 and k2, both 0:
    nothing divides b's messages, so k2 goes, and k0 with it (a loses nothing: k0 sent it none)."""
    path = make_snapshot(
        tmp_path / "s",
        brokers=[{"broker_name": "b", "broker_id": 0}],
        topic_queues=[
            {"topic": "t", "broker_name": "b", "read_queue_nums": 4, "write_queue_nums": 4, "perm": 6}
        ],
        consumers=[{"group": "g", "topic": "t", "client_id": "c"}],
        producers=[
            {"topic": "t", "producer_group": p, "msgs_per_s": 1.0, "selector": "HASH"}
            for p in ("a", "b", "c")
        ],
        producer_keys=[
            {"topic": "t", "producer_group": None, "key": "k0", "share": 0.0},
            {"topic": "t", "producer_group": "a", "key": "k1", "share": 2.0},
            {"topic": "t", "producer_group": "b", "key": "k2", "share": 0.0},
            {"topic": "t", "producer_group": "c", "key": "k3", "share": None},  # null: an equal share
        ],
    )
    rejects, counts = _checked(load_snapshot(None, path))
    assert [(s, r, row["key"]) for s, r, row in rejects] == [
        ("producer_keys", SILENT_KEYS, "k0"),
        ("producer_keys", SILENT_KEYS, "k2"),
    ]
    assert counts["producer_keys"] == (4, 2, 2)


# ------------------------------------------------------------------ at the bounds, end to end


def test_values_at_the_bounds_come_out_exact_and_the_ones_past_them_are_rejected(spark, tmp_path) -> None:
    """Topic t (4 queues on broker b, read by clients 1 and 2 of group g under AVG: queues 0, 1 and
    2, 3): four producers at the bound, 1e9 msgs/s each, and a HASH producer h at 8 msgs/s over keys
    k1 and k2 of share 1e9 each (the bound): 4e9 + 8 msgs/s, every part an exact double. Each
    client reads 2e9 and some of h's 8, over its capacity of 1e9 (the bound). Past the bounds: a
    producer at 1e10, a key of share 1e308, a client of capacity 1e13; on topic u, producer z's
    keys all have share 0, so z sends its 12 msgs/s evenly: 3 to each of u's 4 queues."""
    t_queues = {"broker_name": "b", "read_queue_nums": 4, "write_queue_nums": 4, "perm": 6}
    run = simulated(
        spark,
        tmp_path,
        sink="arrow",
        tables=dict(
            brokers=[{"broker_name": "b", "broker_id": 0}],
            topic_queues=[{"topic": "t", **t_queues}, {"topic": "u", **t_queues}],
            consumers=[
                {"group": "g", "topic": "t", "client_id": f"10.0.0.{i}@{i}", "capacity_msgs_per_s": c}
                for i, c in ((1, 1e9), (2, 1e9), (3, 1e13))
            ],
            producers=[
                *({"topic": "t", "producer_group": f"p{i}", "msgs_per_s": 1e9} for i in range(4)),
                {"topic": "t", "producer_group": "big", "msgs_per_s": BIG},
                {"topic": "t", "producer_group": "h", "msgs_per_s": 8.0, "selector": "HASH"},
                {"topic": "u", "producer_group": "z", "msgs_per_s": 12.0, "selector": "HASH"},
            ],
            producer_keys=[
                {"topic": "t", "producer_group": "h", "key": "k1", "share": 1e9},
                {"topic": "t", "producer_group": "h", "key": "k2", "share": 1e9},
                {"topic": "t", "producer_group": "h", "key": "k3", "share": 1e308},
                {"topic": "u", "producer_group": "z", "key": "a", "share": 0.0},
                {"topic": "u", "producer_group": "z", "key": "b", "share": 0.0},
            ],
        ),
        scenarios="scenarios:\n  - name: thousandfold\n    steps:\n      - set_traffic: {factor: 1000}\n",
    )
    assert sorted((r.source, r.reason, json.loads(r.row).get("key")) for r in run.rows("rejects")) == [
        ("consumers", "capacity_msgs_per_s 10000000000000.0 is more than 1e+09", None),
        ("producer_keys", SILENT_KEYS, "a"),
        ("producer_keys", SILENT_KEYS, "b"),
        ("producer_keys", "share 1e+308 is more than 1e+09", "k3"),
        ("producers", "msgs_per_s 10000000000.0 is more than 1e+09", None),
    ]
    assert {
        r["table"]: (r["rows_read"], r["rows_used"], r["rows_rejected"]) for r in run.result.reconciliation
    } == {
        "brokers": (1, 1, 0),
        "topic_queues": (2, 2, 0),
        "consumers": (3, 2, 1),
        "groups": (0, 0, 0),
        "producers": (7, 6, 1),
        "producer_keys": (5, 2, 3),
    }
    inflow_of = {}
    for r in run.rows("queue_traffic"):
        inflow_of.setdefault((r.phase, r.topic), []).append(r.in_msgs_per_s)
    # h's 8 msgs/s all arrive (shares 1e9 and 1e9 normalise to 1/2 each); phase 1 is 1000 times it.
    assert {k: sum(v) for k, v in inflow_of.items() if k[1] == "t"} == {
        (0, "t"): 4000000008.0,
        (1, "t"): 4000000008000.0,
    }
    assert inflow_of[(0, "u")] == [3.0] * 4 and inflow_of[(1, "u")] == [3000.0] * 4
    behind = {r.phase: r for r in run.rows("falling_behind")}
    # Phase 0: 4e9 + 8 read, capacity 2 x 1e9, growth (4e9 + 8) - 2e9; clients ceil(4.000000008) = 5.
    # Phase 1: 4e12 + 8000 read (millionths past 2^53: the sums are exact all the same), growth
    # (4e12 + 8000) - 2e9, clients ceil(4000.000008) = 4001.
    assert [
        (
            p,
            b.consumers,
            b.clients_over_capacity,
            b.msgs_per_s,
            b.capacity_msgs_per_s,
            b.lag_growth_msgs_per_s,
            b.clients_needed,
        )
        for p, b in sorted(behind.items())
    ] == [
        (0, 2, 2, 4000000008.0, 2e9, 2000000008.0, 5),
        (1, 2, 2, 4000000008000.0, 2e9, 3998000008000.0, 4001),
    ]
    summary = {r.phase: r for r in run.rows("summary")}
    assert [(summary[p].lag_growth_msgs_per_s, summary[p].unroutable_msgs_per_s) for p in (0, 1)] == [
        (2000000008.0, 0.0),
        (3998000008000.0, 0.0),
    ]
    # Java's hashCode: "k1" = 107 * 31 + 49 = 3366, "k2" = 3367; mod 4: queues 2 and 3, client 2's.
    # Phase 1: client 2 reads 1000 x (2e9 + 8), client 1 1000 x 2e9; the mean is 2000000004000.
    assert summary[1].fleet_max_msgs_per_s == 2000000008000.0
    assert summary[1].fleet_msgs_max_over_mean == 2000000008000.0 / 2000000004000.0


# ------------------------------------------------------------------ exact sums


def test_capacities_summed_past_int64_millionths_stay_exact() -> None:
    # 10,000 clients at the bound: 1e13 msgs/s, 1e19 millionths, past int64's 9.2e18 (where the
    # old int64 sum went negative). Each client reads 2e9: growth 1e9 each, 1e13 in all.
    n = 10_000
    keep = capacity.keeping(
        np.full(n, 2e9),
        np.zeros(n),
        np.full(n, 1e9),
        msgs_known=np.ones(n, bool),
        backlog_known=np.ones(n, bool),
    )
    behind = capacity.falling_behind(np.zeros(n, np.int64), keep, np.full(n, 2e9), np.ones(n, bool))
    assert (behind.capacity.tolist(), behind.msgs.tolist(), behind.growth.tolist()) == (
        [1e13],
        [2e13],
        [1e13],
    )


def test_clients_needed_past_what_a_long_holds_is_null() -> None:
    # 1e13 msgs/s against a mean capacity of 1e-6: 1e19 clients, past 2^63 - 1.
    need = capacity.clients_needed(
        np.zeros(1, np.int64), np.array([1e13]), np.zeros(1), np.zeros(1, np.int64), np.array([1e-6]), 3600.0
    )
    assert np.isnan(need).all()


MILLIONTHS = st.one_of(
    st.sampled_from([0.0, 5e-324, 1e-7, 5e-7, 1.5e-6, 1.0, 1e9, 9007199254.740993, 9.3e12, 1.8e13, 7e22]),
    st.floats(min_value=0.0, max_value=7e22, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(MILLIONTHS, min_size=1, max_size=40), st.data())
def test_the_exact_sums_are_the_integer_sums_of_the_millionths_rounded_once(values, data) -> None:
    v = np.array(values)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(v) - 1), max_size=5)) if len(v) > 1 else [])
    starts = np.array([0, *cuts], np.int64)
    got = capacity.from_limbs(np.add.reduceat(capacity.limbs(capacity.millionths(v)), starts, axis=1))
    whole = np.round(v * 1e6)
    bounds = [*starts.tolist(), len(v)]
    expected = [float(sum(int(x) for x in whole[a:b])) / 1e6 for a, b in zip(bounds, bounds[1:])]
    assert got.tolist() == expected
    assert capacity.exact_sums(v, starts).tolist() == expected  # one int64 sum where none can overflow


# ------------------------------------------------------------------ properties


EXTREME = st.one_of(
    st.sampled_from(
        [0.0, 5e-324, 2.2250738585072014e-308, 1e-6, 1.0, 1e9, 1e9 + 1, 1e13, 1e308, 1.7976931348623157e308]
    ),
    st.floats(min_value=0.0, max_value=1.7976931348623157e308, allow_nan=False, allow_infinity=False),
)
ANY = st.one_of(EXTREME, st.sampled_from([-1.0, -5e-324, float("nan"), float("inf"), float("-inf")]))
# What a reject of these columns may say (section 1): nothing else may reject them.
DOCUMENTED = re.compile(
    r"(msgs_per_s|share|capacity_msgs_per_s) (\S+ is more than 1e\+09|\S+ is above 0 but below 1e-06|"
    r"\S+ is negative|\S+ is not finite)|(msgs_per_s|share|capacity_msgs_per_s) is not a number"
)


def _fleet(path: Path, rates: list[float], shares: list[float], capacities: list[float]) -> Snapshot:
    """Topic t (4 queues) with a ROUND_ROBIN producer per rate but the last, a HASH one with a key
    per share; group g with a client per capacity (the last given as the group's)."""
    make_snapshot(
        path,
        brokers=[{"broker_name": "b", "broker_id": 0}],
        topic_queues=[
            {"topic": "t", "broker_name": "b", "read_queue_nums": 4, "write_queue_nums": 4, "perm": 6}
        ],
        consumers=[
            {"group": "g", "topic": "t", "client_id": f"10.0.0.{i}@{i}", "capacity_msgs_per_s": c}
            for i, c in enumerate([*capacities[:-1], None])
        ],
        groups=[{"group": "g", "capacity_msgs_per_s": capacities[-1]}],
        producers=[
            {
                "topic": "t",
                "producer_group": f"p{i}",
                "msgs_per_s": r,
                "selector": "HASH" if i == len(rates) - 1 else None,
            }
            for i, r in enumerate(rates)
        ],
        producer_keys=[
            {"topic": "t", "producer_group": f"p{len(rates) - 1}", "key": f"k{i}", "share": s}
            for i, s in enumerate(shares)
        ],
    )
    return load_snapshot(None, str(path))


def _finite_not_negative(values: np.ndarray) -> bool:
    """No value negative or infinite; NaN is a null figure (unknown), which is allowed."""
    known = values[~np.isnan(values)]
    return bool(np.isfinite(known).all() and (known >= 0).all())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rates=st.lists(ANY, min_size=1, max_size=4),
    shares=st.lists(ANY, min_size=1, max_size=3),
    capacities=st.lists(ANY, min_size=2, max_size=3),
)
def test_extreme_rates_shares_and_capacities_give_documented_rejects_or_finite_figures(
    rates, shares, capacities
) -> None:
    with tempfile.TemporaryDirectory() as where:
        snapshot = _fleet(Path(where) / "s", rates, shares, capacities)
    checked = check_snapshot(snapshot, configured_strategies=True)
    for reject in checked.rejects.to_pylist():
        assert (
            DOCUMENTED.fullmatch(reject["reason"])
            or reject["reason"] in (SILENT_KEYS, NO_HASH_PRODUCER)
            or (reject["reason"].startswith("group 'g' is not simulated: "))
        ), reject
    counts = reconciliation(snapshot, checked.snapshot, checked.rejects).to_pylist()
    assert all(c["rows_read"] == c["rows_used"] + c["rows_rejected"] for c in counts)
    kept = checked.snapshot
    sent = kept.producers["msgs_per_s"].to_numpy()
    assert ((sent >= 0) & (sent <= schemas.MAX_RATE)).all()
    # Where the messages go: every kept population's rate lands on t's queues, none lost or made.
    staged = apply.phased(kept, (parse.Scenario("baseline"),))
    traffic = inflow.traffic(
        brokers=staged.brokers,
        topic_queues=staged.topic_queues,
        producers=staged.producers,
        topic_routes=routes.topic_routes(staged.topic_queues, brokers=staged.brokers, by=schemas.PHASE),
        producer_keys=kept.producer_keys,
    )
    queues = np.array(traffic.queue_traffic["in_msgs_per_s"].to_pylist())
    assert _finite_not_negative(queues) and not np.isnan(queues).any()
    assert math.isclose(queues.sum(), sent.sum(), rel_tol=1e-12, abs_tol=1e-300)
    # What the clients must carry: the kept capacities (a client's own, else the group's).
    consumers = routes.with_group_capacities(kept.consumers, kept.groups)
    caps = np.array([np.nan if c is None else c for c in consumers["capacity_msgs_per_s"].to_pylist()])
    if not len(caps):
        return
    msgs = np.full(len(caps), queues.sum() / len(caps))
    keep = capacity.keeping(
        msgs,
        np.full(len(caps), 1e6),
        caps,
        msgs_known=np.ones(len(caps), bool),
        backlog_known=np.ones(len(caps), bool),
    )
    for figure in (keep.capacity, keep.load_over_capacity, keep.growth, keep.drain):
        assert _finite_not_negative(figure)
    behind = capacity.falling_behind(np.zeros(len(caps), np.int64), keep, msgs, np.ones(len(caps), bool))
    for figure in (behind.msgs, behind.capacity, behind.growth):
        assert _finite_not_negative(figure)
    need = capacity.clients_needed(
        np.zeros(1, np.int64),
        np.array([queues.sum()]),
        np.array([1e6]),
        np.zeros(len(caps), np.int64),
        keep.capacity,
        3600.0,
    )
    assert _finite_not_negative(need) and not (need >= 2.0**63).any()


STEP = st.tuples(st.sampled_from(["factor", "msgs_per_s"]), ANY, st.sampled_from(["all", ["t"]]))
PARSE_ERRORS = re.compile(
    r"s\.yml: scenario 'x', step \d+\.set_traffic\.(msgs_per_s|factor): ("
    r"expected a number, 0 or more, got \S+|must be at most (1000|1e\+09), got \S+|"
    r"with the factors of the steps before it, rates would grow \S+ times, more than 1000)"
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(STEP, min_size=1, max_size=4),
    st.lists(st.sampled_from([0.0, 5e-324, 1.0, 1e9]), min_size=1, max_size=3),
)
def test_extreme_set_traffic_steps_are_exit_code_2_or_keep_every_rate_finite_and_bounded(
    steps, rates
) -> None:
    text = yaml.safe_dump(
        {
            "scenarios": [
                {
                    "name": "x",
                    "steps": [
                        {"set_traffic": {key: value, "topics": topics}} for key, value, topics in steps
                    ],
                }
            ]
        }
    )
    try:
        [scenario] = parse.parse(text, source="s.yml")
    except InputError as e:
        assert PARSE_ERRORS.fullmatch(str(e)), str(e)
        return
    with tempfile.TemporaryDirectory() as where:
        snapshot = _fleet(Path(where) / "s", rates, [1.0], [1.0, 1.0])
    for phase in apply.phase_snapshots(snapshot, scenario):
        sent = phase.producers["msgs_per_s"].to_numpy()
        assert np.isfinite(sent).all() and (sent >= 0).all()
        assert (sent <= schemas.MAX_RATE * schemas.MAX_FACTOR * (1 + 1e-15)).all()  # a product's rounding
