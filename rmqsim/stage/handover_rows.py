"""The hand-overs of a batch (docs/CONTRACT.md, section 2e): per pair of consecutive phases whose
after row carries the event that made it (``handover_event``), every queue in mqAll at both
phases whose readers changed, timed by rmqsim.handover, summed per (scenario, to_phase, strategy,
topic, group): schemas.HANDOVER.

A client's readers before and after come from movement's pairing (stage.movement.paired); whether
a reader before is still there, from the after row's clients; how the ones gone went, from the
event. A step that reaches a (topic, group) two ways (a room down: routes and lost hosts) is
applied once both reached it, and only by the ways that changed that (topic, group).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.arrays import as_objects, lookup_sorted, runs, take, union_sorted
from rmqsim.handover.clocks import SALTS, Clocks, unit
from rmqsim.handover.notice import HOST_LOSS, NOTIFY, ROUTES, applied_at
from rmqsim.handover.queues import CRASHED, PRESENT, Queues, Readers, costs
from rmqsim.stage.batches import balancing, client_libraries, queue_inflow
from rmqsim.stage.movement import Paired, present_clients

HANDOVER_ARROW = schemas.arrow(schemas.HANDOVER)
JAVA = schemas.LANGUAGES.index("JAVA")
_I64 = np.int64


def handover_rows(
    rows: pa.RecordBatch, p: Paired | None, *, flowing_only: bool = False
) -> list[pa.RecordBatch]:
    """schemas.HANDOVER's rows of the pairs ``p`` (stage.movement.paired of ``rows``).
    ``flowing_only``: only the queues messages flow into, whose costs in messages are all a sum of
    them needs (each queue is timed on its own, and one without inflow delays and doubles none)."""
    if p is None or rows.column("handover_event").null_count == rows.num_rows:
        return []
    event = _Events(rows)
    pairs, common = p.pairs, p.common
    g_a, g_b = pairs.g_a.to_numpy(), pairs.g_b.to_numpy()
    consecutive = pairs.phase_b.to_numpy() == pairs.phase_a.to_numpy() + 1
    timed = consecutive & event.known[g_b]
    # Queues in both phases of a timed pair whose readers changed, each pair's in mqAll order. One
    # left with no reader is unread (the phase's own metrics), not handed over.
    handed = p.differ & timed[common.pair] & (p.after[0] > 0)
    inflow = queue_inflow(rows, p.batch)
    if flowing_only:
        handed &= inflow[common.flat_after] != 0
    hand = np.flatnonzero(handed)
    hand = hand[np.lexsort((common.flat_after[hand], common.pair[hand]))]
    if not len(hand):
        return []
    pair = common.pair[hand]
    readers = _readers(p, hand)
    q = readers.queue
    row_b = g_b[pair[q]]  # the after row of each reader's queue
    everyone = present_clients(p.batch, p.codes)
    present = lookup_sorted(everyone, row_b * p.codes.n_c + readers.client)[1]
    bits = _notice(p, everyone, event.notice[row_b], pair[q], g_a, g_b)
    flat = _a_flat_client(p)[readers.client]
    gone = np.where(present, PRESENT, event.departed[row_b])
    clocks = Clocks.scaled(
        _units(p, flat, event.seed[row_b], readers.client, _clocks_read(bits, present, readers.before, gone)),
        event.rebalance_s[row_b],
        event.route_poll_s[row_b],
        event.commit_s[row_b],
        event.host_loss_s[row_b],
    )
    at = event.event_s[row_b]
    java = client_libraries(rows, p.batch.client_offsets).code[flat] == JAVA
    costs_ = costs(
        Readers(
            q,
            readers.before,
            readers.after,
            applied_at(bits, at, clocks),
            gone,
            np.where(java, event.first_pull_delay_s[row_b], 0.0),
            java,
            clocks.last_commit(at),
        ),
        Queues(
            event.event_s[g_b[pair]],
            balancing(rows).orderly[g_b[pair]],
            inflow[common.flat_after[hand]],
            event.lock_expiry_s[g_b[pair]],
        ),
    )
    return [_summed(rows, p, pair, costs_, event)]


class _Events:
    """handover_event's fields per row, as numpy (known: the row has one)."""

    def __init__(self, rows: pa.RecordBatch):
        column = rows.column("handover_event")
        self.known = column.is_valid().to_numpy(zero_copy_only=False)
        for field in schemas.HANDOVER_EVENT.fieldNames():
            if field == "label":
                self.label = pc.struct_field(column, field)
                continue
            values = pc.fill_null(pc.struct_field(column, field), 0).to_numpy(zero_copy_only=False)
            setattr(self, field, values)


@dataclass(frozen=True)
class _Flat:
    """A row per (handed-over queue, reader): the queue's index into ``hand``, the client's code."""

    queue: np.ndarray
    client: np.ndarray
    before: np.ndarray
    after: np.ndarray


def _readers(p: Paired, hand: np.ndarray) -> _Flat:
    """The readers before (the pair's before unit's owners) and after of each handed-over queue."""
    owners, n_q, n_c = p.owners, p.owners.n_q, p.codes.n_c
    keys = owners.unit * n_q + owners.queue  # sorted, as the owners are
    queue = p.common.queue[hand]

    def of(units: np.ndarray) -> np.ndarray:
        wanted = units[p.common.pair[hand]] * n_q + queue
        lo, hi = np.searchsorted(keys, wanted, "left"), np.searchsorted(keys, wanted, "right")
        at = runs(lo, hi - lo)
        i = np.repeat(np.arange(len(hand), dtype=_I64), hi - lo)
        return i * n_c + owners.client[at]  # sorted: by queue, then client

    both, before, after = union_sorted(of(p.pairs.u_a.to_numpy()), of(p.pairs.u_b.to_numpy()))
    return _Flat(both // n_c, both % n_c, before, after)


def _clocks_read(
    bits: np.ndarray, present: np.ndarray, before: np.ndarray, gone: np.ndarray
) -> dict[str, np.ndarray]:
    """Per salt (handover.clocks.SALTS), the readers whose clock of it the costs read: a reader
    still there applies the change at its next tick, after its next route poll where the routes
    told it (handover.notice.applied_at); a crashed reader's last commit says what is read again."""
    lost_or_routes = (bits & (ROUTES | HOST_LOSS)) != 0
    return {
        "rebalance": present & lost_or_routes,
        "route": present & ((bits & ROUTES) != 0),
        "commit": before & (gone == CRASHED),
    }


def _units(
    p: Paired, flat: np.ndarray, seed: np.ndarray, client: np.ndarray, read: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """handover.clocks.unit of each reader whose clock of a salt is ``read`` (0 for the others),
    hashed once per (seed, client)."""
    seeds, seed_code = np.unique(seed, return_inverse=True)
    key = seed_code * p.codes.n_c + client
    anyone = np.logical_or.reduce([read[salt] for salt in SALTS])
    keys, first, back = np.unique(key[anyone], return_index=True, return_inverse=True)
    ids = as_objects(take(p.batch.client_ids, flat[anyone][first]))
    of = seeds[keys // p.codes.n_c]
    out = {}
    for salt in SALTS:
        wanted = np.zeros(len(keys), dtype=bool)
        wanted[back[read[salt][anyone]]] = True
        k = np.flatnonzero(wanted)
        units = np.zeros(len(keys))
        units[k] = unit(of[k], salt, ids[k])
        out[salt] = np.zeros(len(key))
        out[salt][anyone] = units[back]
    return out


def _a_flat_client(p: Paired) -> np.ndarray:
    """Per client code, one flat client of the batch with that code: its id and library."""
    out = np.zeros(p.codes.n_c, dtype=_I64)
    out[p.codes.client] = np.arange(len(p.codes.client), dtype=_I64)
    return out


def _notice(
    p: Paired, everyone: np.ndarray, bits: np.ndarray, pair: np.ndarray, g_a: np.ndarray, g_b: np.ndarray
) -> np.ndarray:
    """A step's notice bits as they reach each (topic, group): of a step that reaches clients two
    ways, only the ways that changed the pair's mqAll or members (``everyone``: present_clients)."""
    two_ways = ((bits & ROUTES) != 0) & ((bits & (NOTIFY | HOST_LOSS)) != 0)
    if not two_ways.any():
        return bits
    counts = p.batch.queue_counts
    in_both = np.bincount(p.common.pair, minlength=len(p.pairs))
    routes_same = (counts[g_a] == in_both) & (counts[g_b] == in_both)
    members_same = _same_members(p, everyone, g_a, g_b)
    out = np.where(two_ways & routes_same[pair], bits & ~ROUTES, bits)
    return np.where(two_ways & members_same[pair], out & ~(NOTIFY | HOST_LOSS), out)


def _same_members(p: Paired, everyone: np.ndarray, g_a: np.ndarray, g_b: np.ndarray) -> np.ndarray:
    """Per pair, whether its rows have the same client ids (``everyone``: present_clients)."""
    n_c = p.codes.n_c
    row_of, client = everyone // n_c, everyone % n_c
    start = np.searchsorted(row_of, np.arange(p.batch.n_groups + 1))

    def members(rows_: np.ndarray) -> np.ndarray:
        counts = start[rows_ + 1] - start[rows_]
        at = runs(start[rows_], counts)
        return np.repeat(np.arange(len(rows_), dtype=_I64), counts) * n_c + client[at]

    a, b = members(g_a), members(g_b)
    size_a = np.bincount(a // n_c, minlength=len(g_a))
    size_b = np.bincount(b // n_c, minlength=len(g_a))
    shared = np.bincount(np.intersect1d(a, b, assume_unique=True) // n_c, minlength=len(g_a))
    return (size_a == shared) & (size_b == shared)


def _summed(rows: pa.RecordBatch, p: Paired, pair: np.ndarray, c, event: _Events) -> pa.RecordBatch:
    """A row per pair with a queue handed over: its queues' costs summed in mqAll order."""
    pairs_with = np.unique(pair)
    slot = np.searchsorted(pairs_with, pair)
    n = len(pairs_with)

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(slot, weights=values, minlength=n)

    most = np.zeros(n)
    np.maximum.at(most, slot, c.pause_s)
    settled = np.zeros(n)
    np.maximum.at(settled, slot, c.settled_after_s)
    g_b = p.pairs.g_b.to_numpy()[pairs_with]
    after = pa.array(g_b, type=pa.int64())
    strategy = np.asarray(p.strategies, dtype=object)[p.pairs.s_b.to_numpy()[pairs_with]]
    columns = [
        rows.column("scenario").take(after),
        pa.array(strategy, type=pa.string()),
        rows.column("topic").take(after),
        rows.column("group").take(after),
        pa.array(p.pairs.phase_a.to_numpy()[pairs_with], type=pa.int32()),
        pa.array(p.pairs.phase_b.to_numpy()[pairs_with], type=pa.int32()),
        event.label.take(after),
        pa.array(event.event_s[g_b], type=pa.float64()),
        pa.array(np.bincount(slot, minlength=n).astype(_I64), type=pa.int64()),
        pa.array(np.bincount(slot, weights=c.pause_s > 0, minlength=n).astype(_I64), type=pa.int64()),
        pa.array(total(c.pause_s), type=pa.float64()),
        pa.array(most, type=pa.float64()),
        pa.array(total(c.overlap_s), type=pa.float64()),
        pa.array(total(c.msgs_delayed), type=pa.float64()),
        pa.array(total(c.msgs_read_twice), type=pa.float64()),
        pa.array(settled, type=pa.float64()),
        *_unread(c.unread, slot, n),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=HANDOVER_ARROW)


def _unread(unread: tuple[np.ndarray, np.ndarray, np.ndarray], slot: np.ndarray, n: int) -> list[pa.Array]:
    """Per row (``slot``: each handed-over queue's), the times its queues went unread, from and
    until, in mqAll order."""
    queue, start, end = unread
    offsets = pa.array(np.searchsorted(slot[queue], np.arange(n + 1)).astype(np.int32))
    kind = HANDOVER_ARROW.field("unread_from_s").type
    return [
        pa.ListArray.from_arrays(offsets, pa.array(t, type=pa.float64()), type=kind) for t in (start, end)
    ]
