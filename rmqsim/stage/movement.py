"""Movement between phases (SPEC section 4): which queues change owner, against the fewest possible.

The allocation stage hands this module whole groups, every phase and topic of a (scenario, group)
in one Arrow batch (allocation.whole_groups). A *unit* is one (row, strategy) allocation: a
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
  (a BROADCASTING group has only one possible assignment, so there min_moves is moved; where
  the after assignment leaves a queue unowned or owned twice, min_moves is null);
- ``consumers_changed``: distinct clients (of either phase) whose owned queues differ.

All of it is numpy and pandas over the whole batch: no loop runs per group.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from rmqsim import schemas
from rmqsim.allocation import (
    allocate_rows,
    broadcasting,
    queue_backlogs,
    row_codes,
    rows_by_strategy,
    whole_groups,
    with_absent_columns,
)
from rmqsim.strategies.batch import as_objects, distinct_callers, factorize, lookup_sorted

MOVEMENT_ARROW = to_arrow_schema(schemas.MOVEMENT)
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
    phase = rows.column("phase").to_numpy(zero_copy_only=False).astype(_I64)
    last = rows.column("last_phase").to_numpy(zero_copy_only=False).astype(_I64)
    return pd.DataFrame(
        {"u": np.arange(len(g)), "g": g, "s": s, "entity": entity, "phase": phase[g], "last": last[g]}
    )


def _pairs(units: pd.DataFrame) -> pd.DataFrame:
    """(before unit, after unit) for consecutive phases, and phase 0 against the scenario's last."""
    both = units.merge(units, on="entity", suffixes=("_a", "_b"))
    consecutive = both.phase_b == both.phase_a + 1
    whole = (both.phase_a == 0) & (both.phase_b == both.last_b) & (both.last_b >= 2)
    pairs = both[consecutive | whole][["u_a", "u_b", "g_a", "g_b", "s_b", "phase_a", "phase_b"]]
    return pairs.reset_index(drop=True).rename_axis("p").reset_index()


def movement_batches(rows: pa.RecordBatch) -> list[pa.RecordBatch]:
    """One row per (scenario, strategy, topic, group, from_phase, to_phase): schemas.MOVEMENT."""
    allocated = allocate_rows(rows) if rows.num_rows else []
    if not allocated:
        return []
    batch = allocated[0].batch
    strategies = [a.strategy for a in allocated]
    units = _units(rows, strategies)
    pairs = _pairs(units)
    if pairs.empty:
        return []
    unit_of = {}  # strategy index -> (input row -> unit)
    for i in range(len(strategies)):
        mine = units[units.s == i]
        lookup = np.full(rows.num_rows, -1, _I64)
        lookup[mine.g.to_numpy()] = mine.u.to_numpy()
        unit_of[i] = lookup

    broker, _ = pd.factorize(as_objects(batch.queue_broker))
    # Dense codes: every (unit or pair, queue, client) becomes one int64 key, and every join
    # below is a sort or a binary search over those keys.
    queue_code, queue_keys = pd.factorize((broker.astype(_I64) << 32) | batch.queue_id.astype(_I64))
    queue_code = queue_code.astype(_I64)
    n_q = max(len(queue_keys), 1)
    client_code = factorize(batch.client_ids)
    n_c = int(client_code.max(initial=0)) + 1
    n_pairs = len(pairs)
    g_a, g_b = pairs.g_a.to_numpy(), pairs.g_b.to_numpy()
    u_a, u_b = pairs.u_a.to_numpy(), pairs.u_b.to_numpy()

    # Owners of every mqAll queue, per unit, sorted by (unit, queue, client), duplicates dropped.
    parts_u, parts_q, parts_c = [], [], []
    for i, a in enumerate(allocated):
        inside = a.allocation.queue >= 0  # CONFIG may return queues that are not in mqAll
        caller = a.allocation.caller[inside]
        parts_u.append(unit_of[i][a.callers.group[caller]])
        parts_q.append(queue_code[a.allocation.queue[inside]])
        parts_c.append(client_code[a.callers.client[caller]])
    owner_key = _unique(
        (np.concatenate(parts_u) * n_q + np.concatenate(parts_q)) * n_c + np.concatenate(parts_c)
    )
    owner_uq, owner_c = owner_key // n_c, owner_key % n_c
    owner_u, owner_q = owner_uq // n_q, owner_uq % n_q
    # Each (unit, queue)'s owner set: its size, smallest and largest client (exact up to 2 owners).
    sig_key, first, size = _runs_of(owner_uq)  # owner_key is sorted, so owner_uq is
    sig_min, sig_max = owner_c[first], owner_c[first + size - 1]
    sig_set = np.zeros(len(sig_key), _I64)
    if (size > 2).any():  # rare (CONFIG): code the exact set
        multi = np.flatnonzero(size > 2)
        sets = [tuple(owner_c[first[k] : first[k] + size[k]]) for k in multi]
        sig_set[multi] = pd.factorize(pd.Series(sets, dtype=object))[0] + 1

    def signature(unit: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, ...]:
        """(size, min, max, set) of the owners of (unit, queue); size 0 where none."""
        key = unit * n_q + q
        at, hit = lookup_sorted(sig_key, key)
        return tuple(
            np.where(hit, v[at], 0) if len(v) else np.zeros(len(key), _I64)
            for v in (size, sig_min, sig_max, sig_set)
        )

    # Each pair's queues before and after, and those in both.
    def pair_queues(rows_of_pair: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(pair, queue code, flat queue index) of every queue of each pair's row."""
        counts = batch.queue_counts[rows_of_pair]
        p = np.repeat(np.arange(n_pairs, dtype=_I64), counts)
        flat = _runs(batch.queue_offsets[rows_of_pair], counts)
        return p, queue_code[flat], flat

    p_a, q_a, _ = pair_queues(g_a)
    p_b, q_b, flat_b = pair_queues(g_b)
    common, _, at_b = np.intersect1d(
        p_a * n_q + q_a, p_b * n_q + q_b, assume_unique=True, return_indices=True
    )
    cp, cq = common // n_q, common % n_q
    before = signature(u_a[cp], cq)
    after = signature(u_b[cp], cq)
    differ = np.zeros(len(common), bool)
    for x, y in zip(before, after):
        differ |= x != y
    in_both = np.bincount(cp, minlength=n_pairs)
    moved = np.bincount(cp, weights=differ, minlength=n_pairs).astype(_I64)
    # Offsets are the fleet's, not a phase's: the after row's (topic, group) names them.
    queue_backlog, has_offsets = queue_backlogs(rows, batch)
    moved_backlog = np.zeros(n_pairs, _I64)
    np.add.at(moved_backlog, cp[differ], queue_backlog[flat_b[at_b[differ]]])
    was_owned = np.bincount(cp, weights=before[0] > 0, minlength=n_pairs).astype(_I64)

    # Distinct clients of every row: who is there to keep a queue.
    everyone = distinct_callers(batch)
    present = np.sort(everyone.group * n_c + client_code[everyone.client])
    consumers = np.bincount(everyone.group, minlength=rows.num_rows)
    n_after = batch.queue_counts[g_b]
    m_after = consumers[g_b]
    sole = np.flatnonzero(before[0] == 1)  # a queue can stay only with its sole old owner...
    wanted = g_b[cp[sole]] * n_c + before[1][sole]
    still_there = sole[lookup_sorted(present, wanted)[1]]  # ...if still there
    kp_c, k = _unique(cp[still_there] * n_c + before[1][still_there], counts=True)
    k_p = kp_c // n_c
    lo, hi = _bounds(owner_u, owner_c, u_b, n_after, m_after)
    cap = np.minimum(k, hi[k_p])  # what c can keep at most
    free = np.bincount(k_p, weights=np.minimum(cap, lo[k_p]), minlength=n_pairs)
    beyond = np.bincount(k_p, weights=np.maximum(cap - lo[k_p], 0), minlength=n_pairs)
    budget = n_after - m_after * lo  # queues that may go to clients beyond their minimum
    kept = (free + np.minimum(budget, beyond)).astype(_I64)
    min_moves = np.where(m_after > 0, in_both - kept, was_owned).astype(_I64)
    # A BROADCASTING group has one possible assignment (everyone reads everything): no better one.
    listens = broadcasting(rows)
    min_moves = np.where(listens[g_b], moved, min_moves)
    # Where the after assignment leaves a queue with no owner or two (CONFIG, MACHINE_ROOM, duplicate
    # client ids), it is no one-owner assignment to measure against: min_moves is null there.
    after_all = signature(u_b[p_b], q_b)[0]
    odd = np.bincount(p_b, weights=after_all != 1, minlength=n_pairs) > 0
    no_minimum = odd & ~listens[g_b]

    # Clients whose owned queues differ: (pair, client, queue) held on one side only.
    unit_start = np.searchsorted(owner_u, np.arange(len(units) + 1))

    def held(units_of_pair: np.ndarray) -> np.ndarray:
        counts = unit_start[units_of_pair + 1] - unit_start[units_of_pair]
        i = _runs(unit_start[units_of_pair], counts)
        p = np.repeat(np.arange(n_pairs, dtype=_I64), counts)
        return (p * n_c + owner_c[i]) * n_q + owner_q[i]

    one_side = np.setxor1d(held(u_a), held(u_b), assume_unique=True)
    changed = _unique(one_side // n_q)
    consumers_changed = np.bincount(changed // n_c, minlength=n_pairs).astype(_I64)

    take = pa.array(g_b, type=pa.int64())
    fraction = np.divide(moved, in_both, out=np.zeros(n_pairs), where=in_both > 0)
    columns = [
        rows.column("scenario").take(take),
        pa.array(np.asarray(strategies, dtype=object)[pairs.s_b.to_numpy()], type=pa.string()),
        rows.column("topic").take(take),
        rows.column("group").take(take),
        pa.array(pairs.phase_a.to_numpy(), type=pa.int32()),
        pa.array(pairs.phase_b.to_numpy(), type=pa.int32()),
        pa.array(batch.queue_counts[g_a].astype(_I64), type=pa.int64()),
        pa.array(n_after.astype(_I64), type=pa.int64()),
        pa.array(in_both.astype(_I64), type=pa.int64()),
        pa.array(moved, type=pa.int64()),
        pa.array(fraction, mask=in_both == 0, type=pa.float64()),
        pa.array(min_moves, mask=no_minimum, type=pa.int64()),
        pa.array(consumers[g_a].astype(_I64), type=pa.int64()),
        pa.array(m_after.astype(_I64), type=pa.int64()),
        pa.array(consumers_changed, type=pa.int64()),
        pa.array(moved_backlog, mask=~has_offsets[g_b], type=pa.int64()),
    ]
    return [pa.RecordBatch.from_arrays(columns, schema=MOVEMENT_ARROW)]


def map_movement(batches):
    for rows in whole_groups(batches):
        yield from movement_batches(with_absent_columns(rows))


def _bounds(
    owner_u: np.ndarray, owner_c: np.ndarray, units: np.ndarray, n_after: np.ndarray, m_after: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per pair (its after ``units``), the fewest and most queues per client that an assignment as
    balanced as the after one may give: its own range, widened to floor(n/m)..ceil(n/m)."""
    m = np.maximum(m_after, 1)
    floor, ceil = n_after // m, -(-n_after // m)
    n_c = int(owner_c.max(initial=0)) + 1
    held, per_client = _unique(owner_u * n_c + owner_c, counts=True)
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


def _runs_of(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct keys, index of each one's first, its count) of an already sorted array: a sort
    and a diff, several times faster here than numpy's hash-based unique."""
    if len(sorted_keys) == 0:
        return sorted_keys, np.zeros(0, _I64), np.zeros(0, _I64)
    starts = np.flatnonzero(np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]]))
    return sorted_keys[starts], starts, np.diff(np.append(starts, len(sorted_keys)))


def _unique(keys: np.ndarray, *, counts: bool = False):
    values, _, n = _runs_of(np.sort(keys))
    return (values, n) if counts else values


def _runs(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """first[0], first[0]+1, ... (count[0] of them), then the same for every run."""
    count = count.astype(_I64)
    starts = np.repeat(first.astype(_I64) - np.concatenate([[0], np.cumsum(count)[:-1]]), count)
    return starts + np.arange(int(count.sum()), dtype=_I64)
