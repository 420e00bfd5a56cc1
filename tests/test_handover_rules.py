"""Section 2e's rules, each worked by hand (docs/CONTRACT.md): when clients apply a change, and what
each queue handed over costs. The clocks are recomputed here from BLAKE2b, not taken from the code
under test. No Spark."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from rmqsim.handover.clocks import SALTS, Clocks, at_or_after, at_or_before, unit
from rmqsim.handover.notice import HOST_LOSS, NOTIFY, ROUTES, applied_at, notice
from rmqsim.handover.queues import CRASHED, LEFT, PRESENT, Queues, Readers, costs
from rmqsim.scenarios import parse

T = 600.0  # the first step, after_s's default from T_0 = 0
INFLOW = 10.0  # msgs/s of the queue handed over


def u(seed: int, salt: str, client: str) -> float:
    digest = hashlib.blake2b(f"{seed}:{salt}:{client}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def test_each_clients_unit_is_the_contracts_hash_bit_for_bit():
    # Section 2e's U, one client at a time in Python's integers, against the vectorised reading;
    # ids of every length up to 200 characters, non-ASCII ones, and each client under two seeds.
    rng = np.random.default_rng(7)
    ids = [f"10.{i % 256}.0.{i // 256}@{rng.integers(1 << 62)}" + "ü" * (i % 90) for i in range(2000)]
    seeds = [0, 2**40 + 3] * 1000
    for salt in SALTS:
        got = unit(seeds, salt, ids)
        assert got.dtype == np.float64
        assert got.tolist() == [u(s, salt, c) for s, c in zip(seeds, ids)]
    assert unit([], "commit", []).tolist() == []


def one_queue(*readers: dict, orderly: bool = False, event: float = T) -> tuple:
    """A queue's readers, each a dict of before/after/applied/gone/first_pull_s/unlocks/last_commit."""
    d = dict(
        before=False,
        after=False,
        applied=event,
        gone=PRESENT,
        first_pull_s=0.5,
        unlocks=True,
        last_commit=event,
    )
    rows = [{**d, **r} for r in readers]
    col = lambda k, t: np.array([x[k] for x in rows], dtype=t)  # noqa: E731
    r = Readers(
        np.zeros(len(rows), np.int64),
        col("before", bool),
        col("after", bool),
        col("applied", float),
        col("gone", np.int64),
        col("first_pull_s", float),
        col("unlocks", bool),
        col("last_commit", float),
    )
    q = Queues(np.array([event]), np.array([orderly]), np.array([INFLOW]), np.array([60.0]))
    c = costs(r, q)
    return c.pause_s[0], c.overlap_s[0], c.settled_after_s[0], c.msgs_delayed[0], c.msgs_read_twice[0]


def test_a_graceful_leave_java_pauses_the_first_pull_delay():
    # b leaves gracefully at 600 (notified: a applies at 600) and a starts reading at 600 + 0.5:
    # unread 0.5 s, 10 msgs/s x 0.5 s = 5 messages delayed, nothing read twice (b committed).
    got = one_queue(dict(before=True, gone=LEFT), dict(after=True))
    assert got == (0.5, 0.0, 0.5, 5.0, 0.0)


def test_a_graceful_leave_go_hands_over_at_once():
    # A Go client pulls a newly owned queue at once (first-pull delay 0): no pause, no overlap.
    got = one_queue(dict(before=True, gone=LEFT, first_pull_s=0.0), dict(after=True, first_pull_s=0.0))
    assert got == (0.0, 0.0, 0.0, 0.0, 0.0)


def test_a_crash_with_its_connection_closed_rereads_what_it_had_not_committed():
    # c crashes at 600 and the brokers notify at once; a starts at 600.5. c's last commit at or
    # before 600: its clock is 5 s x U("commit", c), so 600 - last commit = (600 - off) mod 5.
    c = "10.0.0.3@77"
    off = 5.0 * u(0, "commit", c)
    last = off + 5.0 * math.floor((T - off) / 5.0)
    clocks = Clocks.of([c], parse.Timing())
    assert clocks.last_commit(np.array([T]))[0] == pytest.approx(last, abs=1e-9)
    got = one_queue(dict(before=True, gone=CRASHED, last_commit=last), dict(after=True))
    assert got[:4] == (0.5, 0.0, 0.5, 5.0)
    assert got[4] == pytest.approx(INFLOW * (T - last))
    assert 0 <= T - last < 5


def test_a_crash_without_its_connection_closing_waits_for_the_host_loss_and_the_next_tick():
    # Nobody is notified: the brokers notice at 600 + 120 = 720, and a applies at its first tick at
    # or after 720. a ticks at 20 s x U("rebalance", a) + 20 m; 720 = 36 x 20, so that is 720 + its
    # offset (offset > 0). a starts 0.5 s later: unread from 600 to 720 + offset + 0.5.
    a = "10.0.0.1@11"
    offset = 20.0 * u(0, "rebalance", a)
    assert 0 < offset < 20
    applied = applied_at(np.array([HOST_LOSS]), np.array([T]), Clocks.of([a], parse.Timing()))[0]
    assert applied == pytest.approx(720 + offset)
    pause = one_queue(dict(before=True, gone=CRASHED), dict(after=True, applied=applied))[0]
    assert pause == pytest.approx(120.5 + offset)
    assert notice(parse.Crash("g", tcp_closed=False)) == HOST_LOSS
    assert notice(parse.Crash("g")) == NOTIFY


@pytest.mark.parametrize("unlocks", [True, False], ids=["java", "go"])
def test_an_orderly_crash_waits_for_the_lock(unlocks):
    # The crashed owner never unlocks: its lock expires at 600 + 60, and a may start only then
    # (not at 600.5): unread 60 s, 600 messages delayed. Java or Go alike.
    got = one_queue(dict(before=True, gone=CRASHED, unlocks=unlocks), dict(after=True), orderly=True)
    assert got[:4] == (60.0, 0.0, 60.0, 600.0)


def test_an_orderly_graceful_leave_unlocks_in_java_and_not_in_go():
    # Java unlocks as it stops (600): a starts at 600.5. A Go client never unlocks on giving a
    # queue up: a waits for the expiry at 660.
    java = one_queue(dict(before=True, gone=LEFT), dict(after=True), orderly=True)
    go = one_queue(dict(before=True, gone=LEFT, unlocks=False), dict(after=True), orderly=True)
    assert (java[0], go[0]) == (0.5, 60.0)


def test_a_join_moves_a_queue_from_a_client_still_there():
    # d joins at 600, notified: a (still there) stops at 600 as d starts at 600.5.
    got = one_queue(dict(before=True, applied=T), dict(after=True, applied=T))
    assert got[:2] == (0.5, 0.0)


def test_a_reader_that_stays_covers_the_hand_over():
    # Under POP two clients share a queue: a keeps reading while b leaves and d arrives: never unread.
    got = one_queue(dict(before=True, after=True), dict(before=True, gone=LEFT), dict(after=True))
    assert got[:2] == (0.0, 0.0)


def test_a_broker_down_acts_on_route_polls_then_ticks():
    # broker_down at 600 changes routes only: each client applies at its first tick at or after
    # its first route poll at or after 600. Recomputed here from the hashes, seed 3.
    timing = parse.Timing(seed=3)
    old, new = "10.0.0.1@11", "10.0.0.2@12"

    def applies(c: str) -> float:
        poll = 30.0 * u(3, "route", c)
        polled = poll + 30.0 * max(math.ceil((T - poll) / 30.0), 0)
        tick = 20.0 * u(3, "rebalance", c)
        return tick + 20.0 * max(math.ceil((polled - tick) / 20.0), 0)

    clocks = Clocks.of([old, new], timing)
    got = applied_at(np.array([ROUTES, ROUTES]), np.array([T, T]), clocks)
    assert got == pytest.approx([applies(old), applies(new)])
    assert notice(parse.BrokerDown(("b",))) == ROUTES
    # The queue moves from old (stops when it applies) to new (starts 0.5 s after it applies):
    # unread between them, or read by both, by the difference.
    stop, start = applies(old), applies(new) + 0.5
    pause, overlap, settled = one_queue(
        dict(before=True, applied=stop), dict(after=True, applied=applies(new))
    )[:3]
    assert pause == pytest.approx(max(start - stop, 0))  # old reads until it stops
    assert overlap == pytest.approx(max(stop - start, 0))
    assert settled == pytest.approx(max(stop, start) - T)


def test_a_room_down_applies_once_both_the_routes_and_the_loss_are_known():
    # room_down: routes (poll then tick) and hosts lost (720, then tick): the later of the two.
    c = "10.0.0.1@11"
    clocks = Clocks.of([c], parse.Timing())
    both = applied_at(np.array([ROUTES | HOST_LOSS]), np.array([T]), clocks)[0]
    routes = applied_at(np.array([ROUTES]), np.array([T]), clocks)[0]
    lost = applied_at(np.array([HOST_LOSS]), np.array([T]), clocks)[0]
    assert both == max(routes, lost) == lost  # a route poll is at most 30 + 20 s away; 120 s is more
    assert notice(parse.RoomDown(("hz-b",))) == ROUTES | HOST_LOSS


def test_clocks_are_periodic_both_ways():
    # offset 3, period 5: at or after 12 is 13; at or before 12 is 8; before the start, at or
    # before 1 is -2 (the clock ran before the scenario), at or after 1 is 3.
    off = np.array([3.0])
    assert at_or_after(off, 5.0, np.array([12.0]))[0] == 13.0
    assert at_or_before(off, 5.0, np.array([12.0]))[0] == 8.0
    assert at_or_before(off, 5.0, np.array([1.0]))[0] == -2.0
    assert at_or_after(off, 5.0, np.array([1.0]))[0] == 3.0
    assert at_or_after(off, 5.0, np.array([13.0]))[0] == 13.0


def test_many_queues_in_one_pass_equal_each_alone():
    # The flat form over several queues gives each queue what it gives alone.
    alone = [
        one_queue(dict(before=True, gone=LEFT), dict(after=True)),
        one_queue(dict(before=True, gone=CRASHED), dict(after=True), orderly=True),
        one_queue(dict(before=True, applied=640.0), dict(after=True, applied=610.0)),
    ]
    r = Readers(
        np.array([0, 0, 1, 1, 2, 2]),
        np.array([1, 0, 1, 0, 1, 0], bool),
        np.array([0, 1, 0, 1, 0, 1], bool),
        np.array([T, T, T, T, 640.0, 610.0]),
        np.array([LEFT, PRESENT, CRASHED, PRESENT, PRESENT, PRESENT]),
        np.full(6, 0.5),
        np.ones(6, bool),
        np.full(6, T),
    )
    q = Queues(np.full(3, T), np.array([False, True, False]), np.full(3, INFLOW), np.full(3, 60.0))
    c = costs(r, q)
    together = list(zip(c.pause_s, c.overlap_s, c.settled_after_s, c.msgs_delayed, c.msgs_read_twice))
    assert together == [tuple(x) for x in alone]
    assert alone[2][:2] == (0.0, 29.5)  # the new reader starts at 610.5, the old stops at 640


def test_under_notification_no_java_queue_pauses_past_the_first_pull_and_no_orderly_queue_overlaps():
    # Property over random hand-overs notified at once: every client present applies at the event.
    rng = np.random.default_rng(7)
    for _ in range(200):
        n_q = int(rng.integers(1, 6))
        rows = int(rng.integers(n_q, 4 * n_q + 1))
        queue = np.r_[np.arange(n_q), rng.integers(0, n_q, rows - n_q)]
        kind = rng.integers(0, 3, rows)  # 0 both, 1 before only, 2 after only
        gone = np.where(kind == 1, rng.choice([PRESENT, LEFT, CRASHED], rows), PRESENT)
        orderly = rng.random(n_q) < 0.5
        r = Readers(
            queue,
            kind != 2,
            kind != 1,
            np.full(rows, T),
            gone,
            np.full(rows, 0.5),
            np.ones(rows, bool),
            np.full(rows, T),
        )
        c = costs(r, Queues(np.full(n_q, T), orderly, np.ones(n_q), np.full(n_q, 60.0)))
        crashed = np.bincount(queue, weights=(gone == CRASHED), minlength=n_q) > 0
        calm = ~orderly | ~crashed  # an orderly queue whose owner crashed waits for the lock
        assert (c.pause_s[calm] <= 0.5 + 1e-12).all()
        assert (c.overlap_s[orderly] == 0).all()
