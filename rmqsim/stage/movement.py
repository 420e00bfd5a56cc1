"""Movement between phases (docs/CONTRACT.md, section 4): which queues change owner, against the
fewest possible.

The allocation stage hands this module whole groups, every phase and topic of a (scenario, group)
in one Arrow batch (stage.batches.whole_groups). A *unit* is one (row, strategy) allocation: a
(scenario, phase, topic, group) route run with one strategy. Units of the same (scenario, topic,
group) and strategy in two phases are compared; with ``--strategies configured`` a group runs one
strategy per phase, which a set_strategy step may change, so there units pair whatever their strategy.

For a pair (before, after), over the queues present in both phases' mqAll:

- ``moved``: queues whose set of owners differs (a queue whose owner left has moved; so has one
  that gains or loses a second owner);
- ``min_moves``: the fewest of those queues that any assignment *as balanced as the after one*
  could have moved, giving every queue one owner and every client between lo and hi of the n
  queues (m distinct clients). lo..hi is the after assignment's own range of queues per client,
  widened to floor(n/m)..ceil(n/m): for AVG and the other balanced strategies it is exactly
  "within one queue per client". A queue can stay only with its sole old owner, if that client
  is still there; client c could keep k_c queues, at most hi; keeping up to lo each is free, and
  beyond that the n - m*lo queues left over are the budget, so the most that stay is
  sum(min(k_c, hi, lo)) + min(n - m*lo, sum(max(min(k_c, hi) - lo, 0)));
  (a BROADCASTING group has only one possible assignment, and a broker-balanced group gets the
  broker's, so there min_moves is moved; where
  the after assignment leaves a queue unowned or owned twice, min_moves is null);
- ``consumers_changed``: distinct clients (of either phase) whose owned queues differ.

All of it is numpy and pandas over the whole batch: no loop runs per group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from rmqsim import schemas
from rmqsim.arrays import lookup_sorted, runs, runs_of, unique_counts
from rmqsim.stage.allocated import Allocated
from rmqsim.stage.batches import balancing, broadcasting, has_offsets, phases_of, row_codes, rows_by_strategy
from rmqsim.stage.dispatch import allocate_rows
from rmqsim.strategies import GroupBatch, distinct_callers
from rmqsim.strategies.batch import read_pairs

MOVEMENT_ARROW = schemas.arrow(schemas.MOVEMENT)
_I64 = np.int64


def _units(rows: pa.RecordBatch, strategies: list[str]) -> pd.DataFrame:
    """One row per (input row, strategy it runs): unit id u, row g, strategy, what pairs it."""
    runs = rows_by_strategy(rows)
    g = np.concatenate([runs.get(s, np.zeros(0, _I64)) for s in strategies]).astype(_I64)
    s = np.concatenate([np.full(len(runs.get(name, ())), i, _I64) for i, name in enumerate(strategies)])
    compare = rows.column("compare").to_numpy(zero_copy_only=False)
    # With --strategies configured, a phase's strategy may differ from the last one's: pair anyway.
    entity = row_codes(rows, "scenario", "group", "topic")[g] * (len(strategies) + 1)
    entity += np.where(compare[g], s + 1, 0)
    phase = phases_of(rows)
    last = rows.column("last_phase").to_numpy(zero_copy_only=False).astype(_I64)
    return pd.DataFrame(
        {"u": np.arange(len(g)), "g": g, "s": s, "entity": entity, "phase": phase[g], "last": last[g]}
    )


def _pairs(units: pd.DataFrame, written: np.ndarray | None = None) -> pd.DataFrame:
    """(before unit, after unit) for consecutive phases, and phase 0 against the scenario's last.
    A run's phase 0 alone (a last phase of 0) is compared with itself: the movement row a later
    phase that leaves the (topic, group) untouched repeats (docs/CONTRACT.md, section 4)."""
    entity, phase, last = units.entity.to_numpy(), units.phase.to_numpy(), units["last"].to_numpy()
    g, s = units.g.to_numpy(), units.s.to_numpy()
    # Every (a, b) of one entity's units: each of them as a, against each in turn as b.
    order = np.argsort(entity, kind="stable")
    _, first, size = runs_of(entity[order])
    each = np.repeat(size, size)
    a = np.repeat(order, each)
    b = order[runs(np.repeat(first, size), each)]
    consecutive = phase[b] == phase[a] + 1
    whole = (phase[a] == 0) & (phase[b] == last[b]) & ((last[b] >= 2) | (last[b] == 0))
    wanted = consecutive | whole
    if written is not None:
        wanted &= written[g[b]]
    a, b = a[wanted], b[wanted]
    by_a = np.lexsort((b, a))  # a merge's order: by the before unit, then the after
    a, b = a[by_a], b[by_a]
    columns = {
        "u_a": a,
        "u_b": b,
        "g_a": g[a],
        "g_b": g[b],
        "s_b": s[b],
        "phase_a": phase[a],
        "phase_b": phase[b],
    }
    return pd.DataFrame({"p": np.arange(len(a), dtype=_I64), **columns})


@dataclass(frozen=True)
class Codes:
    """Dense codes of a batch's queues (broker, queue id) and client ids: every (unit or pair,
    queue, client) becomes one int64 key, and every join below is a sort or a binary search."""

    queue: np.ndarray  # per flat queue
    client: np.ndarray  # per flat client
    n_q: int
    n_c: int

    @staticmethod
    def of(batch: GroupBatch) -> Codes:
        broker = batch.broker_codes
        queue_code, queue_keys = pd.factorize((broker.astype(_I64) << 32) | batch.queue_id.astype(_I64))
        client_code = batch.client_codes
        return Codes(
            queue_code.astype(_I64), client_code, max(len(queue_keys), 1), int(client_code.max(initial=0)) + 1
        )


@dataclass(frozen=True)
class Owners:
    """The owners of every mqAll queue per unit, as sorted (unit, queue, client) keys with
    duplicates dropped, and each (unit, queue)'s owner set: its size, smallest and largest client
    (exact up to 2 owners) and, for larger sets, a code of the exact set."""

    unit: np.ndarray
    queue: np.ndarray
    client: np.ndarray
    set_key: np.ndarray  # unit * n_q + queue, sorted, one per owned (unit, queue)
    size: np.ndarray
    smallest: np.ndarray
    largest: np.ndarray
    exact: np.ndarray
    n_q: int

    @staticmethod
    def of(allocated: list[Allocated], unit_of: dict[int, np.ndarray], codes: Codes) -> Owners:
        parts_u, parts_q, parts_c = [], [], []
        for i, a in enumerate(allocated):
            # The queues in mqAll each client reads: CONFIG may return queues that are not in
            # mqAll, and a POP client's (broker, -1) reads every queue of that broker.
            caller, queue = read_pairs(a.allocation, a.batch, a.callers.group)
            parts_u.append(unit_of[i][a.callers.group[caller]])
            parts_q.append(codes.queue[queue])
            parts_c.append(codes.client[a.callers.client[caller]])
        n_q, n_c = codes.n_q, codes.n_c
        key, _ = unique_counts(
            (np.concatenate(parts_u) * n_q + np.concatenate(parts_q)) * n_c + np.concatenate(parts_c)
        )
        unit_queue, client = key // n_c, key % n_c
        set_key, first, size = runs_of(unit_queue)  # key is sorted, so unit_queue is
        exact = np.zeros(len(set_key), _I64)
        if (size > 2).any():  # rare (CONFIG): code the exact set
            multi = np.flatnonzero(size > 2)
            sets = [tuple(client[first[k] : first[k] + size[k]]) for k in multi]
            exact[multi] = pd.factorize(pd.Series(sets, dtype=object))[0] + 1
        return Owners(
            unit_queue // n_q,
            unit_queue % n_q,
            client,
            set_key,
            size,
            client[first],
            client[first + size - 1],
            exact,
            n_q,
        )

    def signature(
        self, unit: np.ndarray, q: np.ndarray, *, size_only: bool = False
    ) -> tuple[np.ndarray, ...]:
        """(size, min, max, set) of the owners of (unit, queue); size 0 where none (``size_only``:
        (size,)). A figure 0 for every set is not looked up: the set's code, but where a queue has
        more than two owners."""
        at, hit = lookup_sorted(self.set_key, unit * self.n_q + q)
        wanted = (self.size,) if size_only else (self.size, self.smallest, self.largest, self.exact)
        return tuple(np.where(hit, v[at], 0) if v.any() else np.zeros(len(unit), _I64) for v in wanted)


@dataclass(frozen=True)
class Paired:
    """A batch's units paired across phases, and every queue in both phases of a pair with its
    owners before and after: what movement and the hand-overs (stage.handover_rows) read."""

    batch: GroupBatch
    strategies: list[str]
    units: pd.DataFrame
    pairs: pd.DataFrame
    codes: Codes
    owners: Owners
    common: Common
    before: tuple[np.ndarray, ...]  # the owners' signature of each common queue before...
    after: tuple[np.ndarray, ...]  # ...and after

    @property
    def differ(self) -> np.ndarray:
        """Per common queue, whether its owners changed."""
        out = np.zeros(len(self.common.pair), bool)
        for x, y in zip(self.before, self.after):
            out |= x != y
        return out


def paired(
    rows: pa.RecordBatch, allocated: list[Allocated], written: np.ndarray | None = None
) -> Paired | None:
    """The pairs of ``rows``' units (allocated: allocate_rows(rows)) whose after row is
    ``written`` (None: all are); None where there is none."""
    if not allocated:
        return None
    batch = allocated[0].batch
    strategies = [a.strategy for a in allocated]
    units = _units(rows, strategies)
    pairs = _pairs(units, written)
    if pairs.empty:
        return None
    codes = Codes.of(batch)
    owners = Owners.of(allocated, _unit_lookup(units, len(strategies), rows.num_rows), codes)
    common = _common_queues(batch, pairs, codes)
    before = owners.signature(pairs.u_a.to_numpy()[common.pair], common.queue)
    after = owners.signature(pairs.u_b.to_numpy()[common.pair], common.queue)
    return Paired(batch, strategies, units, pairs, codes, owners, common, before, after)


def movement_batches(
    rows: pa.RecordBatch, allocated: list[Allocated] | None = None, written: np.ndarray | None = None
) -> list[pa.RecordBatch]:
    """One row per (scenario, strategy, topic, group, from_phase, to_phase): schemas.MOVEMENT.
    ``allocated``: allocate_rows(rows), where the caller has it already. ``written``: per input
    row, whether rows to its phase are wanted (None: all are)."""
    if allocated is None:
        allocated = allocate_rows(rows) if rows.num_rows else []
    return movement_rows(rows, paired(rows, allocated, written))


def movement_rows(rows: pa.RecordBatch, p: Paired | None) -> list[pa.RecordBatch]:
    """movement_batches' rows of the pairs ``p``."""
    if p is None:
        return []
    batch, pairs, codes, owners, common, before = p.batch, p.pairs, p.codes, p.owners, p.common, p.before
    differ = p.differ
    n_pairs = len(pairs)
    in_both = np.bincount(common.pair, minlength=n_pairs)
    moved = np.bincount(common.pair, weights=differ, minlength=n_pairs).astype(_I64)
    # Offsets are the fleet's, not a phase's: the after row's (topic, group) names them.
    moved_backlog = np.zeros(n_pairs, _I64)
    np.add.at(moved_backlog, common.pair[differ], batch.params.queue_backlog[common.flat_after[differ]])
    everyone = distinct_callers(batch)
    consumers = np.bincount(everyone.group, minlength=rows.num_rows)
    compared = Compared(
        rows,
        batch,
        pairs,
        owners,
        common,
        codes,
        before,
        consumers=consumers,
        present=_present(everyone, codes),
    )
    min_moves, no_minimum = _min_moves(compared, moved, in_both)
    figures = {
        "in_both": in_both.astype(_I64),
        "moved": moved,
        "min_moves": min_moves,
        "no_minimum": no_minimum,
        "consumers_changed": _consumers_changed(pairs, owners, len(p.units), codes),
        "moved_backlog": moved_backlog,
    }
    return [_movement_rows(rows, batch, pairs, p.strategies, figures, consumers)]


def present_clients(batch: GroupBatch, codes: Codes) -> np.ndarray:
    """Sorted (row, client code) keys: the clients of each row, who are there to keep a queue."""
    return _present(distinct_callers(batch), codes)


def _present(everyone, codes: Codes) -> np.ndarray:
    return np.sort(everyone.group * codes.n_c + codes.client[everyone.client])


@dataclass(frozen=True)
class Common:
    """The queues in both phases of each pair: its pair, queue code and flat index after; and
    every queue after, by pair and queue code."""

    pair: np.ndarray
    queue: np.ndarray
    flat_after: np.ndarray
    pair_after: np.ndarray
    queue_after: np.ndarray


def _pair_queues(batch: GroupBatch, rows_of_pair: np.ndarray, codes: Codes) -> tuple[np.ndarray, ...]:
    """(pair, queue code, flat queue index) of every queue of each pair's row."""
    counts = batch.queue_counts[rows_of_pair]
    p = np.repeat(np.arange(len(rows_of_pair), dtype=_I64), counts)
    flat = runs(batch.queue_offsets[rows_of_pair], counts)
    return p, codes.queue[flat], flat


def _common_queues(batch: GroupBatch, pairs: pd.DataFrame, codes: Codes) -> Common:
    p_a, q_a, _ = _pair_queues(batch, pairs.g_a.to_numpy(), codes)
    p_b, q_b, flat_b = _pair_queues(batch, pairs.g_b.to_numpy(), codes)
    n_q = codes.n_q
    common, _, at_b = np.intersect1d(
        p_a * n_q + q_a, p_b * n_q + q_b, assume_unique=True, return_indices=True
    )
    return Common(common // n_q, common % n_q, flat_b[at_b], p_b, q_b)


@dataclass(frozen=True)
class Compared:
    """The pairs of units of a batch, and what min_moves measures them on."""

    rows: pa.RecordBatch
    batch: GroupBatch
    pairs: pd.DataFrame
    owners: Owners
    common: Common
    codes: Codes
    before: tuple[np.ndarray, ...]  # the before owners' signature of each common queue
    consumers: np.ndarray  # distinct clients per row
    present: np.ndarray  # sorted (row, client) keys: who is there to keep a queue


def _min_moves(c: Compared, moved: np.ndarray, in_both: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(min_moves per pair, where it is null): see the module docstring."""
    rows, batch, pairs, owners, common, before = c.rows, c.batch, c.pairs, c.owners, c.common, c.before
    n_pairs, n_c = len(pairs), c.codes.n_c
    g_b, u_b = pairs.g_b.to_numpy(), pairs.u_b.to_numpy()
    cp = common.pair
    n_after = batch.queue_counts[g_b]
    m_after = c.consumers[g_b]
    sole = np.flatnonzero(before[0] == 1)  # a queue can stay only with its sole old owner...
    wanted = g_b[cp[sole]] * n_c + before[1][sole]
    still_there = sole[lookup_sorted(c.present, wanted)[1]]  # ...if still there
    kp_c, k = unique_counts(cp[still_there] * n_c + before[1][still_there])
    k_p = kp_c // n_c
    lo, hi = _bounds(owners.unit, owners.client, u_b, n_after, m_after)
    cap = np.minimum(k, hi[k_p])  # what each client can keep at most
    free = np.bincount(k_p, weights=np.minimum(cap, lo[k_p]), minlength=n_pairs)
    beyond = np.bincount(k_p, weights=np.maximum(cap - lo[k_p], 0), minlength=n_pairs)
    budget = n_after - m_after * lo  # queues that may go to clients beyond their minimum
    kept = (free + np.minimum(budget, beyond)).astype(_I64)
    was_owned = np.bincount(cp, weights=before[0] > 0, minlength=n_pairs).astype(_I64)
    min_moves = np.where(m_after > 0, in_both - kept, was_owned).astype(_I64)
    # A BROADCASTING group has one possible assignment (everyone reads everything), and the
    # broker's answer is the broker's, not the clients' to choose: no better one to compare with.
    balanced = balancing(rows)
    listens = broadcasting(rows) | balanced.by_broker | balanced.by_proxy
    min_moves = np.where(listens[g_b], moved, min_moves)
    # Where the after assignment leaves a queue with no owner or two (CONFIG, MACHINE_ROOM, duplicate
    # client ids), it is no one-owner assignment to measure against: min_moves is null there.
    p_b = common.pair_after
    after_all = owners.signature(u_b[p_b], common.queue_after, size_only=True)[0]
    odd = np.bincount(p_b, weights=after_all != 1, minlength=n_pairs) > 0
    return min_moves, odd & ~listens[g_b]


def _consumers_changed(pairs: pd.DataFrame, owners: Owners, n_units: int, codes: Codes) -> np.ndarray:
    """Per pair, the clients whose owned queues differ: (pair, client, queue) held on one side only."""
    n_pairs, n_q, n_c = len(pairs), codes.n_q, codes.n_c
    unit_start = np.searchsorted(owners.unit, np.arange(n_units + 1))

    def held(units_of_pair: np.ndarray) -> np.ndarray:
        counts = unit_start[units_of_pair + 1] - unit_start[units_of_pair]
        i = runs(unit_start[units_of_pair], counts)
        p = np.repeat(np.arange(n_pairs, dtype=_I64), counts)
        return (p * n_c + owners.client[i]) * n_q + owners.queue[i]

    one_side = np.setxor1d(held(pairs.u_a.to_numpy()), held(pairs.u_b.to_numpy()), assume_unique=True)
    changed, _ = unique_counts(one_side // n_q)
    return np.bincount(changed // n_c, minlength=n_pairs).astype(_I64)


def _movement_rows(
    rows: pa.RecordBatch,
    batch: GroupBatch,
    pairs: pd.DataFrame,
    strategies: list[str],
    figures: dict[str, np.ndarray],
    consumers: np.ndarray,
) -> pa.RecordBatch:
    g_a, g_b = pairs.g_a.to_numpy(), pairs.g_b.to_numpy()
    in_both, moved = figures["in_both"], figures["moved"]
    rows_after = pa.array(g_b, type=pa.int64())
    fraction = np.divide(moved, in_both, out=np.zeros(len(pairs)), where=in_both > 0)
    columns = [
        rows.column("scenario").take(rows_after),
        pa.array(np.asarray(strategies, dtype=object)[pairs.s_b.to_numpy()], type=pa.string()),
        rows.column("topic").take(rows_after),
        rows.column("group").take(rows_after),
        pa.array(pairs.phase_a.to_numpy(), type=pa.int32()),
        pa.array(pairs.phase_b.to_numpy(), type=pa.int32()),
        pa.array(batch.queue_counts[g_a].astype(_I64), type=pa.int64()),
        pa.array(batch.queue_counts[g_b].astype(_I64), type=pa.int64()),
        pa.array(in_both, type=pa.int64()),
        pa.array(moved, type=pa.int64()),
        pa.array(fraction, mask=in_both == 0, type=pa.float64()),
        pa.array(figures["min_moves"], mask=figures["no_minimum"], type=pa.int64()),
        pa.array(consumers[g_a].astype(_I64), type=pa.int64()),
        pa.array(consumers[g_b].astype(_I64), type=pa.int64()),
        pa.array(figures["consumers_changed"], type=pa.int64()),
        pa.array(figures["moved_backlog"], mask=~has_offsets(rows)[g_b], type=pa.int64()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=MOVEMENT_ARROW)


def _unit_lookup(units: pd.DataFrame, n_strategies: int, n_rows: int) -> dict[int, np.ndarray]:
    """Per strategy index, each input row's unit (-1 where the row does not run it)."""
    unit_of = {}
    for i in range(n_strategies):
        mine = units[units.s == i]
        lookup = np.full(n_rows, -1, _I64)
        lookup[mine.g.to_numpy()] = mine.u.to_numpy()
        unit_of[i] = lookup
    return unit_of


def _bounds(
    owner_u: np.ndarray, owner_c: np.ndarray, units: np.ndarray, n_after: np.ndarray, m_after: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per pair (its after ``units``), the fewest and most queues per client that an assignment as
    balanced as the after one may give: its own range, widened to floor(n/m)..ceil(n/m)."""
    m = np.maximum(m_after, 1)
    floor, ceil = n_after // m, -(-n_after // m)
    n_c = int(owner_c.max(initial=0)) + 1
    held, per_client = unique_counts(owner_u * n_c + owner_c)
    unit_of = held // n_c
    n_units = int(max(units.max(initial=-1), unit_of.max(initial=-1))) + 1
    owning = np.bincount(unit_of, minlength=n_units)
    most = np.zeros(n_units, _I64)
    np.maximum.at(most, unit_of, per_client)
    least = np.full(n_units, np.iinfo(_I64).max)
    np.minimum.at(least, unit_of, per_client)
    # A client that owns nothing makes the after assignment's minimum 0.
    low = np.where(owning[units] >= m_after, least[units], 0)
    low = np.where(owning[units] > 0, low, 0)
    return np.minimum(floor, low), np.maximum(ceil, most[units])
