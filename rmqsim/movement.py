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
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema

from rmqsim import schemas
from rmqsim.allocation import allocate_rows, rows_by_strategy, whole_groups
from rmqsim.strategies.batch import as_objects, distinct_callers, factorize

MOVEMENT_ARROW = to_arrow_schema(schemas.MOVEMENT)
_I64 = np.int64


def _codes(column: pa.Array) -> np.ndarray:
    return pc.dictionary_encode(column).indices.to_numpy(zero_copy_only=False).astype(_I64)


def _units(rows: pa.RecordBatch, strategies: list[str]) -> pd.DataFrame:
    """One row per (input row, strategy it runs): unit id u, row g, strategy, what pairs it."""
    runs = rows_by_strategy(rows)
    g = np.concatenate([runs.get(s, np.zeros(0, _I64)) for s in strategies]).astype(_I64)
    s = np.concatenate([np.full(len(runs.get(name, ())), i, _I64) for i, name in enumerate(strategies)])
    compare = rows.column("compare").to_numpy(zero_copy_only=False)
    key = pc.binary_join_element_wise(
        rows.column("scenario"), rows.column("group"), rows.column("topic"), "\x00"
    )
    # With --strategies configured, a phase's strategy may differ from the last one's: pair anyway.
    entity = _codes(key)[g] * (len(strategies) + 1) + np.where(compare[g], s + 1, 0)
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

    broker, brokers = pd.factorize(as_objects(batch.queue_broker))
    queue_key = (broker.astype(_I64) << 32) | batch.queue_id.astype(_I64)
    client_code = factorize(batch.client_ids)

    # Owners of every mqAll queue, per unit.
    owned = []
    for i, a in enumerate(allocated):
        inside = a.allocation.queue >= 0  # CONFIG may return queues that are not in mqAll
        caller = a.allocation.caller[inside]
        g = a.callers.group[caller]
        owned.append(
            pd.DataFrame(
                {
                    "u": unit_of[i][g],
                    "q": queue_key[a.allocation.queue[inside]],
                    "c": client_code[a.callers.client[caller]],
                }
            ).drop_duplicates()
        )
    owners = pd.concat(owned, ignore_index=True)
    signature = owners.groupby(["u", "q"]).c.agg(["size", "min", "max"])
    multi = signature["size"] > 2  # rare (CONFIG): the exact set, coded
    signature["set"] = 0
    if multi.any():
        sets = owners.merge(signature[multi].reset_index()[["u", "q"]], on=["u", "q"])
        exact = sets.sort_values("c").groupby(["u", "q"]).c.agg(tuple)
        signature.loc[exact.index, "set"] = pd.factorize(exact)[0] + 1
    signature = signature.reset_index()

    # Every unit's mqAll.
    counts = batch.queue_counts[units.g.to_numpy()]
    queues = pd.DataFrame(
        {
            "u": np.repeat(units.u.to_numpy(), counts),
            "q": queue_key[_runs(batch.queue_offsets[units.g.to_numpy()], counts)],
        }
    ).merge(signature, on=["u", "q"], how="left")
    queues[["size", "min", "max", "set"]] = queues[["size", "min", "max", "set"]].fillna(0).astype(_I64)

    before = pairs[["p", "u_a"]].merge(queues, left_on="u_a", right_on="u").drop(columns=["u", "u_a"])
    after = pairs[["p", "u_b"]].merge(queues, left_on="u_b", right_on="u").drop(columns=["u", "u_b"])
    common = before.merge(after, on=["p", "q"], suffixes=("_a", "_b"))
    same = (
        (common.size_a == common.size_b)
        & (common.min_a == common.min_b)
        & (common.max_a == common.max_b)
        & (common.set_a == common.set_b)
    )
    n_pairs = len(pairs)
    in_both = np.bincount(common.p, minlength=n_pairs)
    moved = np.bincount(common.p, weights=~same, minlength=n_pairs).astype(_I64)
    moved_backlog, has_offsets = _moved_backlog(rows, brokers, common[~same], pairs)
    was_owned = np.bincount(common.p, weights=common.size_a > 0, minlength=n_pairs).astype(_I64)

    # Distinct clients of every row: who is there to keep a queue.
    everyone = distinct_callers(batch)
    clients = pd.DataFrame({"g": everyone.group, "c": client_code[everyone.client]})
    consumers = np.bincount(everyone.group, minlength=rows.num_rows)
    n_after = batch.queue_counts[pairs.g_b.to_numpy()]
    m_after = consumers[pairs.g_b.to_numpy()]
    keepable = common[common.size_a == 1][["p", "q", "min_a"]].rename(columns={"min_a": "c"})
    keepable = keepable.merge(pairs[["p", "g_b"]], on="p").merge(
        clients, left_on=["g_b", "c"], right_on=["g", "c"]
    )
    k = keepable.groupby(["p", "c"]).size().rename("k").reset_index()
    lo, hi = _bounds(owners, pairs, n_after, m_after)
    cap = np.minimum(k.k.to_numpy(), hi[k.p.to_numpy()])  # what c can keep at most
    k_lo = lo[k.p.to_numpy()]
    free = np.bincount(k.p, weights=np.minimum(cap, k_lo), minlength=n_pairs)
    beyond = np.bincount(k.p, weights=np.maximum(cap - k_lo, 0), minlength=n_pairs)
    budget = n_after - m_after * lo  # queues that may go to clients beyond their minimum
    kept = (free + np.minimum(budget, beyond)).astype(_I64)
    min_moves = np.where(m_after > 0, in_both - kept, was_owned).astype(_I64)
    # A BROADCASTING group has one possible assignment (everyone reads everything): no better one.
    broadcasting = pc.equal(rows.column("message_model"), "BROADCASTING").to_numpy(zero_copy_only=False)
    min_moves = np.where(broadcasting[pairs.g_b.to_numpy()], moved, min_moves)
    # Where the after assignment leaves a queue with no owner or two (CONFIG, MACHINE_ROOM, duplicate
    # client ids), it is no one-owner assignment to measure against: min_moves is null there.
    odd = np.bincount(after.p, weights=after["size"] != 1, minlength=n_pairs) > 0
    no_minimum = odd & ~broadcasting[pairs.g_b.to_numpy()]

    # Clients whose owned queues differ.
    held_a = pairs[["p", "u_a"]].merge(owners, left_on="u_a", right_on="u")[["p", "c", "q"]]
    held_b = pairs[["p", "u_b"]].merge(owners, left_on="u_b", right_on="u")[["p", "c", "q"]]
    diff = held_a.merge(held_b, on=["p", "c", "q"], how="outer", indicator=True)
    changed = diff[diff._merge != "both"][["p", "c"]].drop_duplicates()
    consumers_changed = np.bincount(changed.p, minlength=n_pairs).astype(_I64)

    g_a, g_b = pairs.g_a.to_numpy(), pairs.g_b.to_numpy()
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
        pa.array(moved_backlog, mask=~has_offsets, type=pa.int64()),
    ]
    return [pa.RecordBatch.from_arrays(columns, schema=MOVEMENT_ARROW)]


def map_movement(batches):
    for rows in whole_groups(batches):
        yield from movement_batches(rows)


def _moved_backlog(
    rows: pa.RecordBatch, brokers: pd.Index, moved: pd.DataFrame, pairs: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, the backlog on its moved queues, and whether its (topic, group) has offsets."""
    n_pairs = len(pairs)
    column = rows.column("backlogs")
    has = pc.is_valid(column).to_numpy(zero_copy_only=False)[pairs.g_b.to_numpy()]
    flat = pc.list_flatten(column)
    if len(flat) == 0 or moved.empty:
        return np.zeros(n_pairs, _I64), has
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy().astype(_I64)
    code = pd.Index(brokers).get_indexer(as_objects(flat.field("broker_name")))
    queue_id = pc.fill_null(flat.field("queue_id"), -1).to_numpy().astype(_I64)
    entries = pd.DataFrame(
        {
            "g": np.repeat(np.arange(rows.num_rows, dtype=_I64), lengths),
            "q": (code.astype(_I64) << 32) | queue_id,
            "backlog": pc.fill_null(flat.field("backlog"), 0).to_numpy().astype(_I64),
        }
    )[code >= 0].drop_duplicates(["g", "q"])  # a queue reported twice is one backlog
    # Offsets are the fleet's, not a phase's: the after row's (topic, group) names them.
    hit = (
        moved[["p", "q"]]
        .merge(pairs[["p", "g_b"]], on="p")
        .merge(entries, left_on=["g_b", "q"], right_on=["g", "q"])
    )
    return np.bincount(hit.p, weights=hit.backlog, minlength=n_pairs).astype(_I64), has


def _bounds(
    owners: pd.DataFrame, pairs: pd.DataFrame, n_after: np.ndarray, m_after: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, the fewest and most queues per client that an assignment as balanced as the
    after one may give: the after assignment's own range, widened to floor(n/m)..ceil(n/m)."""
    m = np.maximum(m_after, 1)
    floor, ceil = n_after // m, -(-n_after // m)
    per_client = owners.groupby(["u", "c"]).size().rename("n").reset_index()
    by_unit = per_client.groupby("u").n.agg(["size", "min", "max"])
    after = by_unit.reindex(pairs.u_b.to_numpy())
    owning = after["size"].fillna(0).to_numpy()
    # A client that owns nothing makes the after assignment's minimum 0.
    low = np.where(owning >= m_after, after["min"].fillna(0).to_numpy(), 0).astype(_I64)
    high = after["max"].fillna(0).to_numpy().astype(_I64)
    return np.minimum(floor, low), np.maximum(ceil, high)


def _runs(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """first[0], first[0]+1, ... (count[0] of them), then the same for every run."""
    count = count.astype(_I64)
    starts = np.repeat(first.astype(_I64) - np.concatenate([[0], np.cumsum(count)[:-1]]), count)
    return starts + np.arange(int(count.sum()), dtype=_I64)
