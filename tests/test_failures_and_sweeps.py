"""crash, room_down, every step's after_s, a scenario's timing, and sweeps (docs/CONTRACT.md,
sections 2e, 2f and 3): parsed, checked against a snapshot's names, applied to its Arrow tables and
expanded into one-step scenarios, without Spark.

The snapshot, worked by hand:

    brokers       broker-a id 0 in hz-a, broker-a id 1 in hz-b, broker-b in hz-b, broker-c (no room)
    consumers     pay   (topics orders, refunds): p1 hz-a, p2 hz-b, p3 no room, p4 hz-a
                  audit (topic orders):           a1 hz-c, a2 hz-a
                  8 pay rows (4 clients x 2 topics) + 2 audit rows = 10
"""

from __future__ import annotations

import hashlib

import pyarrow.compute as pc
import pytest

from rmqsim.errors import InputError
from rmqsim.scenarios import apply, names, parse, sweeps
from rmqsim.scenarios.parse import BrokerDown, Crash, RoomDown, Scenario, Sweep, Timing
from rmqsim.snapshot.load import Snapshot, load_snapshot
from tests.builders import make_snapshot, queue_rows

PAY = {"p1": "hz-a", "p2": "hz-b", "p3": None, "p4": "hz-a"}
AUDIT = {"a1": "hz-c", "a2": "hz-a"}


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Snapshot:
    brokers = [
        {"broker_name": "broker-a", "broker_id": 0, "machine_room": "hz-a", "alive": True},
        {"broker_name": "broker-a", "broker_id": 1, "machine_room": "hz-b", "alive": True},
        {"broker_name": "broker-b", "broker_id": 0, "machine_room": "hz-b", "alive": True},
        {"broker_name": "broker-c", "broker_id": 0, "machine_room": None, "alive": True},
    ]
    consumers = [
        {"group": "pay", "topic": t, "client_id": c, "machine_room": r}
        for t in ("orders", "refunds")
        for c, r in PAY.items()
    ] + [{"group": "audit", "topic": "orders", "client_id": c, "machine_room": r} for c, r in AUDIT.items()]
    path = make_snapshot(
        tmp_path_factory.mktemp("failures") / "snap",
        brokers=brokers,
        topic_queues=queue_rows("orders", {"broker-a": 4, "broker-b": 4, "broker-c": 4})
        + queue_rows("refunds", {"broker-a": 2}),
        consumers=consumers,
    )
    return load_snapshot(None, path)


def _one(step: str, **scenario: str) -> Scenario:
    extra = "".join(f", {k}: {v}" for k, v in scenario.items())
    [run] = parse.parse(f"scenarios: [{{name: x, steps: [{step}]{extra}}}]")
    return run


def _clients(snap: Snapshot) -> set[tuple[str, str, str]]:
    c = snap.consumers
    return set(zip(c["group"].to_pylist(), c["topic"].to_pylist(), c["client_id"].to_pylist(), strict=True))


# ------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    "text, problem",
    [
        ("scenarios: [{name: x, steps: [{crash: {count: 1}}]}]", "crash: missing key(s) ['group']"),
        (
            "scenarios: [{name: x, steps: [{crash: {group: g, client_ids: [c], count: 1}}]}]",
            "crash.client_ids: give either client_ids or count",
        ),
        ("scenarios: [{name: x, steps: [{crash: {group: g, count: 0}}]}]", "crash.count: must be at least 1"),
        (
            "scenarios: [{name: x, steps: [{crash: {group: g, count: 1, tcp_closed: 1}}]}]",
            "crash.tcp_closed: expected true or false, got 1",
        ),
        (
            "scenarios: [{name: x, steps: [{room_down: {rooms: [r], tcp_closed: 'no'}}]}]",
            "room_down.tcp_closed: expected true or false",
        ),
        ("scenarios: [{name: x, steps: [{room_down: {}}]}]", "room_down: missing key(s) ['rooms']"),
        (
            "scenarios: [{name: x, steps: [{room_down: {rooms: []}}]}]",
            "room_down.rooms: expected a non-empty",
        ),
        (
            "scenarios: [{name: x, steps: [{broker_down: {names: [a], after_s: -1}}]}]",
            "broker_down.after_s: expected a number, 0 or more",
        ),
        (
            "scenarios: [{name: x, steps: [{set_traffic: {factor: 2, after_s: '60'}}]}]",
            "set_traffic.after_s: expected a number",
        ),
        (
            "scenarios: [{name: x, steps: [{rolling_restart: {group: g, batch: 0}}]}]",
            "rolling_restart.batch: must be",
        ),
        (
            "scenarios: [{name: x, steps: [{rolling_restart: {group: g, interval_s: 0}}]}]",
            "rolling_restart.interval_s: must be above 0",
        ),
        (
            "scenarios: [{name: x, steps: [{rolling_restart: {group: g, graceful: 'yes'}}]}]",
            "rolling_restart.graceful: expected true or false",
        ),
        (
            "scenarios: [{name: x, steps: [{rolling_restart: {batch: 2}}]}]",
            "rolling_restart: missing key(s) ['group']",
        ),
        (
            "scenarios: [{name: x, timing: {rebalance_s: 0}, steps: [{broker_down: {names: [a]}}]}]",
            "timing.rebalance_s: a clock's period must be above 0",
        ),
        (
            "scenarios: [{name: x, timing: {host_loss_s: -5}, steps: [{broker_down: {names: [a]}}]}]",
            "timing.host_loss_s: expected a number, 0 or more",
        ),
        (
            "scenarios: [{name: x, timing: {seed: 1.5}, steps: [{broker_down: {names: [a]}}]}]",
            "timing.seed: expected an integer",
        ),
        (
            "scenarios: [{name: x, timing: {jitter_s: 1}, steps: [{broker_down: {names: [a]}}]}]",
            "timing: unknown key(s) ['jitter_s']",
        ),
        (
            "scenarios: [{name: x, timing: 5, steps: [{broker_down: {names: [a]}}]}]",
            "timing: expected a mapping",
        ),
        (  # a misspelt timing: would be lost silently
            "scenarios: [{name: x, timming: {seed: 1}, steps: [{broker_down: {names: [a]}}]}]",
            "scenario 'x'.timming: unknown key(s) ['timming']",
        ),
        ("other: 1", "'scenarios:' list or 'sweeps:' list"),
        ("sweeps: []", "sweeps: expected a top-level 'sweeps:' list"),
        (
            "{sweeps: [{name: s, each: broker_down, of: all}], scenarios: []}",
            "scenarios: expected a top-level 'scenarios:' list",
        ),
        ("sweeps: [{name: s, each: broker_up, of: all}]", "sweep 's'.each: expected one of broker_down"),
        ("sweeps: [{name: s, each: crash}]", "sweep 's'.of: missing"),
        ("sweeps: [{name: s, each: crash, of: []}]", "sweep 's'.of: expected a non-empty list"),
        ("sweeps: [{name: s, each: crash, of: all, seed: 1}]", "sweep 's'.sweep: unknown key(s) ['seed']"),
        ("sweeps: [{each: crash, of: all}]", "sweep 1.name: every sweep needs a non-empty name"),
        (
            "sweeps: [{name: s, each: crash, of: all}, {name: s, each: room_down, of: all}]",
            "sweep 's'.name: two sweeps have this name",
        ),
        (
            "scenarios: [{name: baseline, steps: [{broker_down: {names: [a]}}]}]",
            "scenario 'baseline'.name: 'baseline' is reserved",
        ),
        (
            "scenarios: [{name: a/b, steps: [{broker_down: {names: [a]}}]}]",
            "scenario 1 'a/b'.name: a scenario name may not hold '/'",
        ),
        ("sweeps: [{name: a/b, each: crash, of: all}]", "sweep 1 'a/b'.name: a sweep name may not hold '/'"),
    ],
)
def test_malformed_failures_timings_and_sweeps_are_errors_naming_the_key(text: str, problem: str) -> None:
    with pytest.raises(InputError) as raised:
        parse.parse_file(text)
    assert problem in str(raised.value)


def test_new_steps_every_after_s_and_timing_parse_to_their_values_and_defaults() -> None:
    run = _one(
        "{crash: {group: g, count: 2, seed: 7, after_s: 30}}, {room_down: {rooms: [hz-a, hz-b]}}, "
        "{broker_down: {names: [a]}}",
        timing="{seed: 3, rebalance_s: 10, first_pull_delay_s: 0}",
    )
    assert run.steps == (
        Crash(group="g", count=2, seed=7, tcp_closed=True, after_s=30.0),
        RoomDown(rooms=("hz-a", "hz-b"), tcp_closed=False, after_s=600.0),
        BrokerDown(names=("a",), after_s=600.0),
    )
    assert run.timing == Timing(seed=3, rebalance_s=10.0, first_pull_delay_s=0.0)
    assert (run.timing.route_poll_s, run.timing.commit_s, run.timing.host_loss_s) == (30.0, 5.0, 120.0)
    assert run.timing.lock_expiry_s == 60.0
    assert _one("{broker_down: {names: [a]}}").timing == Timing()


def test_a_stale_view_may_follow_a_crash_or_a_room_down() -> None:
    for change in ("{crash: {group: g, count: 1}}", "{room_down: {rooms: [r]}}"):
        run = _one(f"{change}, {{stale_view: {{group: g, fraction: 0.5}}}}")
        assert [k for k, _ in run.stale_views()] == [2]
    with pytest.raises(InputError, match="must come right after a change step"):
        _one("{set_traffic: {factor: 2}}, {stale_view: {group: g, fraction: 0.5}}")


def test_a_sweeps_only_file_has_no_scenarios_and_both_kinds_load_together(tmp_path) -> None:
    text = """
sweeps:
  - {name: broker-loss, each: broker_down, of: all}
  - {name: pod-crash, each: crash, of: [pay, audit]}
"""
    assert parse.parse(text) == ()
    assert parse.parse_file(text).sweeps == (
        Sweep("broker-loss", "broker_down", "all"),
        Sweep("pod-crash", "crash", ("pay", "audit")),
    )
    path = tmp_path / "s.yml"
    path.write_text(text + "scenarios: [{name: x, steps: [{room_down: {rooms: [hz-a]}}]}]\n")
    both = parse.load_file(str(path))
    assert [s.name for s in both.scenarios] == [s.name for s in parse.load(str(path))] == ["x"]
    assert [s.name for s in both.sweeps] == ["broker-loss", "pod-crash"]


# ------------------------------------------------------------------ applying


def _rank(seed: int, client: str) -> int:
    """seeded.py's rule restated: BLAKE2b-64 of "<seed>:<client_id>", big-endian."""
    return int.from_bytes(hashlib.blake2b(f"{seed}:{client}".encode(), digest_size=8).digest(), "big")


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 11])
def test_crash_by_count_picks_the_clients_consumers_leave_picks_for_the_seed(snapshot, seed) -> None:
    crashed = apply.APPLY[Crash](Crash(group="pay", count=2, seed=seed), snapshot)
    left = apply.APPLY[parse.ConsumersLeave](parse.ConsumersLeave(group="pay", count=2, seed=seed), snapshot)
    assert _clients(crashed) == _clients(left)
    # The two pay clients first in the seed's order go from both topics; audit keeps both.
    gone = set(sorted(PAY, key=lambda c: _rank(seed, c))[:2])
    expected = {(g, t, c) for g, t, c in _clients(snapshot) if not (g == "pay" and c in gone)}
    assert _clients(crashed) == expected
    assert len(expected) == 10 - 4


def test_crash_by_client_ids_removes_the_client_from_every_topic_of_that_group_only(snapshot) -> None:
    crashed = apply.APPLY[Crash](Crash(group="pay", client_ids=("p2",)), snapshot)
    assert _clients(snapshot) - _clients(crashed) == {("pay", "orders", "p2"), ("pay", "refunds", "p2")}
    assert crashed.brokers is snapshot.brokers


def test_room_down_downs_the_rooms_brokers_and_removes_its_consumers_in_every_group(snapshot) -> None:
    down = apply.APPLY[RoomDown](RoomDown(rooms=("hz-a",)), snapshot)
    # Brokers: only broker-a's id-0 instance is in hz-a; its slave (hz-b), broker-b (hz-b) and
    # broker-c (no room) stay up.
    alive = {
        (b, i): a
        for b, i, a in zip(
            *(down.brokers[c].to_pylist() for c in ("broker_name", "broker_id", "alive")), strict=True
        )
    }
    assert alive == {
        ("broker-a", 0): False,
        ("broker-a", 1): True,
        ("broker-b", 0): True,
        ("broker-c", 0): True,
    }
    # Consumers: hz-a holds p1 and p4 (2 topics each: 4 rows) and a2 (1 row): 10 - 5 = 5 rows stay,
    # p2 (hz-b) and p3 (no room) on both topics and a1 (hz-c).
    assert _clients(down) == {
        ("pay", "orders", "p2"),
        ("pay", "refunds", "p2"),
        ("pay", "orders", "p3"),
        ("pay", "refunds", "p3"),
        ("audit", "orders", "a1"),
    }
    assert down.consumers.num_rows == 5
    both = apply.APPLY[RoomDown](RoomDown(rooms=("hz-a", "hz-b")), snapshot)
    assert pc.sum(pc.invert(both.brokers["alive"])).as_py() == 3  # all but broker-c
    assert {c for _, _, c in _clients(both)} == {"p3", "a1"}


def test_phases_of_a_scenario_apply_crash_then_room_down(snapshot) -> None:
    run = _one("{crash: {group: audit, client_ids: [a1]}}, {room_down: {rooms: [hz-b]}}")
    phases = apply.phase_snapshots(snapshot, run)
    # Phase 1: a1 gone (9 rows). Phase 2: p2 (hz-b, 2 rows) gone too: 7.
    assert [p.consumers.num_rows for p in phases] == [10, 9, 7]
    assert pc.sum(pc.invert(phases[2].brokers["alive"])).as_py() == 2  # broker-a id 1, broker-b


# ------------------------------------------------------------------ names


@pytest.mark.parametrize(
    "steps, problem",
    [
        (
            "{crash: {group: nobody, count: 1}}",
            "crash.group: no such group in the snapshot at this step: 'nobody'",
        ),
        ("{crash: {group: pay, client_ids: [a1]}}", "crash.client_ids: no such client of group 'pay'"),
        ("{crash: {group: pay, count: 5}}", "crash.count: 5 clients cannot crash in group 'pay': it has 4"),
        (
            "{crash: {group: pay, client_ids: [p1]}}, {crash: {group: pay, client_ids: [p1]}}",
            "step 2.crash.client_ids: no such client of group 'pay'",
        ),
        (
            "{crash: {group: pay, count: 1}}, {consumers_leave: {group: pay, count: 4}}",
            "step 2.consumers_leave.count: 4 clients cannot leave group 'pay': it has 3",
        ),
        (
            "{room_down: {rooms: [hz-a, hz-z]}}",
            "room_down.rooms: no such machine room in the snapshot at this step: 'hz-z'",
        ),
    ],
)
def test_failures_naming_what_the_snapshot_lacks_are_input_errors(snapshot, steps: str, problem: str) -> None:
    runs = parse.parse(f"scenarios: [{{name: x, steps: [{steps}]}}]")
    existing = names.existing_names(snapshot, names.referenced(runs), names.counted_groups(runs))
    with pytest.raises(InputError) as raised:
        names.check_names(runs, existing)
    assert problem in str(raised.value)


def test_rooms_of_consumers_only_or_of_added_brokers_and_clients_may_go_down(snapshot) -> None:
    runs = parse.parse(
        """
scenarios:
  - name: x
    steps:
      - room_down: {rooms: [hz-c]}
      - add_brokers: {names: [broker-d], machine_room: hz-d}
      - consumers_join: {group: pay, count: 1, machine_room: hz-e}
      - room_down: {rooms: [hz-d, hz-e]}
      - crash: {group: pay, client_ids: [p1]}
"""
    )
    existing = names.existing_names(snapshot, names.referenced(runs), names.counted_groups(runs))
    assert existing.rooms == {"hz-c"}  # hz-d and hz-e only exist once a step adds them
    names.check_names(runs, existing)


# ------------------------------------------------------------------ sweeps


def _expanded(snapshot: Snapshot, sweep: Sweep) -> list[tuple[str, tuple]]:
    return [(s.name, s.steps) for s in sweeps.elements(sweep, snapshot)]


def test_broker_down_sweeps_one_scenario_per_broker_name(snapshot) -> None:
    # broker-a's two instances are one element: broker_down downs a name.
    assert _expanded(snapshot, Sweep("b", "broker_down", "all")) == [
        ("b/broker-a", (BrokerDown(names=("broker-a",)),)),
        ("b/broker-b", (BrokerDown(names=("broker-b",)),)),
        ("b/broker-c", (BrokerDown(names=("broker-c",)),)),
    ]
    assert [n for n, _ in _expanded(snapshot, Sweep("b", "broker_down", ("broker-c", "broker-a")))] == [
        "b/broker-a",
        "b/broker-c",
    ]


def test_room_down_sweeps_the_rooms_of_brokers_and_consumers_but_no_null_room(snapshot) -> None:
    # hz-a and hz-b hold brokers, hz-c only audit's a1; broker-c and p3 have no room.
    assert _expanded(snapshot, Sweep("r", "room_down", "all")) == [
        ("r/hz-a", (RoomDown(rooms=("hz-a",)),)),
        ("r/hz-b", (RoomDown(rooms=("hz-b",)),)),
        ("r/hz-c", (RoomDown(rooms=("hz-c",)),)),
    ]


def test_crash_sweeps_one_client_of_one_group_at_a_time(snapshot) -> None:
    assert _expanded(snapshot, Sweep("c", "crash", ("pay",))) == [
        (f"c/pay:{c}", (Crash(group="pay", client_ids=(c,)),)) for c in ("p1", "p2", "p3", "p4")
    ]
    every = sweeps.expand([Sweep("c", "crash", "all"), Sweep("r", "room_down", ("hz-c",))], snapshot)
    assert [s.name for s in every["c"]] == [f"c/audit:{c}" for c in ("a1", "a2")] + [
        f"c/pay:{c}" for c in ("p1", "p2", "p3", "p4")
    ]
    assert [s.name for s in every["r"]] == ["r/hz-c"]


@pytest.mark.parametrize(
    "sweep, problem",
    [
        (
            Sweep("b", "broker_down", ("broker-a", "broker-z")),
            "sweep 'b'.of: no such broker in the snapshot: 'broker-z'",
        ),
        (Sweep("r", "room_down", ("hz-q",)), "sweep 'r'.of: no such machine room in the snapshot: 'hz-q'"),
        (
            Sweep("c", "crash", ("pay", "nobody")),
            "sweep 'c'.of: no such consumer group in the snapshot: 'nobody'",
        ),
    ],
)
def test_a_sweep_listing_what_the_snapshot_lacks_names_the_sweep_and_the_name(
    snapshot, sweep, problem
) -> None:
    with pytest.raises(InputError) as raised:
        sweeps.elements(sweep, snapshot)
    assert problem in str(raised.value)
