"""What one hand-over costs each queue (docs/CONTRACT.md, section 2e), over flat arrays: a row per
(queue, reader before or after), every queue's readers in one pass.

A reader in both phases reads throughout. One only before stops when it applies the new assignment,
or at the event if it left or crashed. One only after starts when it applies it plus its library's
first-pull delay, and in an orderly group no earlier than the lock of every reader before is
released: when that reader stops if it is a Java client still there or gone gracefully, else (a
crash, a Go client, which never unlocks) once the lock expires, ``lock_expiry_s`` after the event
and never before the holder stops.

From the event on, a queue's readers rise and fall at those times: ``pause_s`` is how long nobody
reads it, ``overlap_s`` how long more read it than in either phase alone. Once every reader after
has started and every reader only before has stopped, it is settled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PRESENT, LEFT, CRASHED = 0, 1, 2  # what became of a reader before: still there, gone gracefully, crashed


@dataclass(frozen=True)
class Readers:
    """A row per (queue, client) reading the queue before or after the event."""

    queue: np.ndarray  # the queue's index in the per-queue arrays
    before: np.ndarray  # bool: reads it before the event (R0)
    after: np.ndarray  # bool: reads it after (R1)
    applied: np.ndarray  # when the client applies the new assignment (s); unused if it is gone
    gone: np.ndarray  # PRESENT, LEFT or CRASHED
    first_pull_s: np.ndarray  # its library's first-pull delay
    unlocks: np.ndarray  # bool: a Java client, which releases an orderly lock when it stops
    last_commit: np.ndarray  # its last offset commit at or before the event (s): what a crash rereads


@dataclass(frozen=True)
class Queues:
    """Per queue handed over: the event's time, whether its group is orderly, its inflow."""

    event: np.ndarray  # T_k (s)
    orderly: np.ndarray  # bool
    inflow: np.ndarray  # msgs/s at the phase after (0 without traffic)
    lock_expiry_s: np.ndarray


@dataclass(frozen=True)
class Costs:
    """Per queue: seconds unread and read twice from the event on, seconds until settled, and the
    messages those cost; per time a queue went unread (``unread``): the queue, from, until."""

    pause_s: np.ndarray
    overlap_s: np.ndarray
    settled_after_s: np.ndarray
    msgs_delayed: np.ndarray
    msgs_read_twice: np.ndarray
    unread: tuple[np.ndarray, np.ndarray, np.ndarray]


def costs(r: Readers, q: Queues) -> Costs:
    n = len(q.event)
    event = q.event[r.queue]
    only_before = r.before & ~r.after
    only_after = r.after & ~r.before
    stop = np.where(r.gone == PRESENT, r.applied, event)
    start = r.applied + r.first_pull_s
    # An orderly queue's new reader waits for every old reader's lock.
    kept_lock = r.unlocks & (r.gone != CRASHED)
    release = np.where(kept_lock, stop, np.maximum(stop, event + q.lock_expiry_s[r.queue]))
    released = q.event.copy()
    np.maximum.at(released, r.queue[only_before], release[only_before])
    start = np.where(q.orderly[r.queue], np.maximum(start, released[r.queue]), start)

    # Each queue's readers over time: +1 at a start, -1 at a stop, and a step of 0 at the event.
    moves = np.flatnonzero(only_before | only_after)
    queue = np.concatenate([np.arange(n), r.queue[moves]])
    at = np.concatenate([q.event, np.where(only_after[moves], start[moves], stop[moves])])
    step = np.concatenate([np.zeros(n, np.int64), np.where(only_after[moves], 1, -1)])
    # By queue, time, then step: one sort of an integer key, nearly in order already (the readers
    # come by queue), a fraction of a three-key lexsort's time.
    _, rank = np.unique(at, return_inverse=True)
    order = np.argsort((queue * (int(rank.max(initial=0)) + 1) + rank) * 3 + step + 1, kind="stable")
    queue, at, step = queue[order], at[order], step[order]
    first = np.flatnonzero(np.r_[True, queue[1:] != queue[:-1]])
    n_before = np.bincount(r.queue[r.before], minlength=n)
    n_after = np.bincount(r.queue[r.after], minlength=n)
    running = np.cumsum(step)
    readers = (
        n_before[queue] + running - np.repeat(running[first] - step[first], np.diff(np.r_[first, len(queue)]))
    )
    last = np.r_[queue[1:] != queue[:-1], True]
    length = np.where(last, 0.0, np.r_[at[1:], 0.0] - at)
    unread = (readers == 0) & (length > 0)
    pause = np.bincount(queue, weights=length * unread, minlength=n)
    crowded = readers > np.maximum(n_before, n_after)[queue]
    overlap = np.bincount(queue, weights=length * crowded, minlength=n)
    settled = at[last] - q.event  # the last start or stop, or the event itself

    crashed = r.before & (r.gone == CRASHED)
    uncommitted = np.bincount(r.queue[crashed], weights=(event - r.last_commit)[crashed], minlength=n)
    return Costs(
        pause,
        overlap,
        settled,
        q.inflow * pause,
        q.inflow * (overlap + uncommitted),
        (queue[unread], at[unread], at[unread] + length[unread]),
    )
