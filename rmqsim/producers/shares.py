"""The steady-state share of a producer's sends that each publish-list entry gets, many lists at once.

Lists are CSR: list i's entries are positions ``offsets[i] .. offsets[i+1]-1`` and every function
returns one float64 share per entry, summing to 1 over each non-empty list. A queue listed twice
(a duplicated QueueData, a repeated orderTopicConf item) has two entries and gets both shares.

The rules hold for one sending thread, many messages and a fixed set of unavailable brokers, away
from the int wrap of its counter (once every 2^31 increments); retries are just more calls.

- round_robin_shares: every entry 1/N. Java with sendLatencyFaultEnable false (the default), and
  the Go client's default selector.
- latency_avoiding_shares (5.1.4 and later, MQFaultStrategy.java:137-162): every probe advances the
  counter, so the available entries share evenly; with none available, the reachable ones; with
  none reachable either, all of them.
- folded_latency_shares (before 5.1.4, 4.9.8 MQFaultStrategy.java:58-91): one increment per call,
  then a scan for the next available entry, so each run of unavailable entries folds onto the
  single next available one: (1 + U(p)) / N. With every entry unavailable the real client picks
  through pickOneAtLeast from the producer's whole fault table, which a list alone cannot tell;
  this returns 1/N there.
- hash_shares: SelectMessageQueueByHash / Go's hash selector; each key's traffic goes to the entry
  its hash picks (hashing.java_hash_index / go_hash_index), and a list without keys gets 1/N.

The Go client and the C++ core have no latency fault avoidance: callers give them round_robin_shares
whatever the brokers' state.
"""

from __future__ import annotations

import numpy as np


def _list_of_entries(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(which list each entry belongs to, each list's length)."""
    lengths = np.diff(np.asarray(offsets, dtype=np.int64))
    return np.repeat(np.arange(len(lengths)), lengths), lengths


def round_robin_shares(offsets: np.ndarray) -> np.ndarray:
    owner, lengths = _list_of_entries(offsets)
    return 1.0 / lengths[owner]


def _even_over(owner: np.ndarray, lengths: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shares even over the chosen entries of each list, and which lists chose none."""
    count = np.bincount(owner, weights=chosen, minlength=len(lengths))
    shares = np.where(chosen, 1.0 / np.maximum(count, 1)[owner], 0.0)
    return shares, count[owner] == 0


def latency_avoiding_shares(
    offsets: np.ndarray, available: np.ndarray, reachable: np.ndarray | None = None
) -> np.ndarray:
    """5.1.4 and later with sendLatencyFaultEnable. ``available`` (and ``reachable``, default all):
    bool per entry, from its broker's fault item."""
    owner, lengths = _list_of_entries(offsets)
    even = 1.0 / lengths[owner]
    shares, none_available = _even_over(owner, lengths, np.asarray(available, dtype=bool))
    if reachable is None:  # all reachable: with none available, all of them
        return np.where(none_available, even, shares)
    fallback, none_reachable = _even_over(owner, lengths, np.asarray(reachable, dtype=bool))
    shares = np.where(none_available, fallback, shares)
    return np.where(none_available & none_reachable, even, shares)


def folded_latency_shares(offsets: np.ndarray, available: np.ndarray) -> np.ndarray:
    """Before 5.1.4 with sendLatencyFaultEnable: share(p) = (1 + U(p)) / N for an available entry p,
    U(p) the unavailable entries directly before p, counted cyclically within its list."""
    available = np.asarray(available, dtype=bool)
    offsets = np.asarray(offsets, dtype=np.int64)
    owner, lengths = _list_of_entries(offsets)
    entries = np.arange(len(owner))
    open_at = np.flatnonzero(available)
    if len(open_at) == 0:
        return round_robin_shares(offsets)
    # Every entry sends its 1/N to the first available entry at or after it in its list, else to
    # its list's first available entry (the run wraps round); a list with none keeps 1/N each.
    last = len(open_at) - 1
    list_first = open_at[np.minimum(np.searchsorted(open_at, offsets[:-1]), last)]
    has_open = (list_first >= offsets[:-1]) & (list_first < offsets[1:])
    after = np.searchsorted(open_at, entries)
    following = open_at[np.minimum(after, last)]
    target = np.where((after <= last) & (following < offsets[owner + 1]), following, list_first[owner])
    target = np.where(has_open[owner], target, entries)
    return np.bincount(target, weights=1.0 / lengths[owner], minlength=len(owner))


def hash_shares(
    offsets: np.ndarray, key_list: np.ndarray, key_index: np.ndarray, key_weight: np.ndarray | None = None
) -> np.ndarray:
    """Keys: ``key_list`` (int, the list a key's messages go to), ``key_index`` (int, the entry
    its hash picks within that list) and ``key_weight`` (its part of that list's messages,
    normalised per list; default equal). Lists without keys get 1/N per entry."""
    offsets = np.asarray(offsets, dtype=np.int64)
    key_list = np.asarray(key_list, dtype=np.int64)
    weight = np.ones(len(key_list)) if key_weight is None else np.asarray(key_weight, dtype=np.float64)
    owner, lengths = _list_of_entries(offsets)
    total = np.bincount(key_list, weights=weight, minlength=len(lengths))
    key_index = np.asarray(key_index, dtype=np.int64)
    if ((key_index < 0) | (key_index >= lengths[key_list])).any():
        raise ValueError("a key_index outside its list")
    entry = offsets[key_list] + key_index
    keyed = np.bincount(entry, weights=weight / np.where(total > 0, total, 1)[key_list], minlength=len(owner))
    return np.where(total[owner] > 0, keyed, round_robin_shares(offsets))
