"""Designated machines (docs/CONTRACT.md, section 2d): a group that only the clients on
``groups.designated_ips`` may consume.

The designation lives in the client's strategy code: a designated-aware client computes the
group's strategy over cidAll filtered to the designated IPs (a client id's IP is the part before
``@``, compared as an address, not as text) and, if it is not on the list itself, holds nothing.
A client still on the stock code computes over the full cidAll, so during a rollout the two views
disagree: queues are read twice or by nobody, which group_metrics and the split-brain table then
count. Only CLUSTERING groups that balance on the client are designated: a broadcasting client
reads everything, and a broker or proxy computes without the client's code.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import as_objects, list_column, offsets, runs, take
from rmqsim.stage.allocated import Allocated, found
from rmqsim.stage.batches import balancing, broadcasting, client_designated_aware
from rmqsim.strategies import Allocation

# Route columns holding one entry per client id, filtered with it.
PER_CLIENT = (
    "client_ids",
    "client_rooms",
    "client_configs",
    "client_languages",
    "client_capacities",
    "client_designated_aware",
)
NO_DESIGNATED_CLIENT = (
    "no client of the group runs on groups.designated_ips {ips}: its designated-aware clients hold nothing"
)


def with_designation(
    rows: pa.RecordBatch,
    allocated: list[Allocated],
    allocate: Callable[[pa.RecordBatch], list[Allocated]],
) -> list[Allocated]:
    """The designated-aware clients of designated rows holding what they compute over the
    designated cidAll (``allocate``: the stage's allocation of route rows); the others unchanged."""
    if not allocated or "designated_ips" not in rows.schema.names:
        return allocated
    balanced = balancing(rows)
    designated = (
        rows.column("designated_ips").is_valid().to_numpy(zero_copy_only=False)
        & ~broadcasting(rows)
        & ~balanced.by_broker
        & ~balanced.by_proxy
    )
    if not designated.any():
        return allocated
    sel = np.flatnonzero(designated)
    client_offsets, client_ids = list_column(rows, "client_ids")
    on_list = designated_clients(rows, client_offsets, client_ids, sel)
    kept = rows.take(pa.array(sel, type=pa.int64()))
    filtered = allocate(only_clients(kept, on_list[_flat_clients(client_offsets, sel)]))
    by_name = {f.strategy: f for f in filtered}
    aware = client_designated_aware(rows, client_offsets)
    ips = rows.column("designated_ips")
    return [_designated(a, by_name.get(a.strategy), sel, designated, on_list, aware, ips) for a in allocated]


def client_ips(client_ids: pa.Array) -> np.ndarray:
    """Each client id's IP: the part before its first ``@`` (the whole id without one)."""
    parts = pc.split_pattern(client_ids, "@", max_splits=1)
    return as_objects(pc.list_element(parts, 0))


def ip_keys(texts: np.ndarray) -> np.ndarray:
    """Each IP text in one spelling, so that addresses compare as addresses: ``FE80:0:0::1`` is
    ``fe80::1``; an IPv4-mapped address (``::ffff:10.0.0.1``) is its IPv4 address, as Java's
    InetAddress reads it; an IPv6 address in brackets, as RocketMQ's client writes it into its
    id, is that address. A text that is no address stays itself. Each distinct text is parsed
    once: a fleet has far fewer machines than clients."""
    codes, uniques = pd.factorize(texts)  # a null: -1, the None added last
    return np.array([_address(t) for t in uniques] + [None], dtype=object)[codes]


def _address(text: str) -> str:
    bracketed = text.startswith("[") and text.endswith("]")
    try:
        address = ipaddress.ip_address(text[1:-1] if bracketed else text)
    except ValueError:
        return text
    if bracketed and address.version == 4:
        return text  # brackets hold only IPv6 addresses
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


def designated_clients(
    rows: pa.RecordBatch, client_offsets: np.ndarray, client_ids: pa.Array, sel: np.ndarray
) -> np.ndarray:
    """Per flat client, whether its row is among ``sel`` and its IP is on the row's list."""
    flat = _flat_clients(client_offsets, sel)
    row = np.repeat(sel, np.diff(client_offsets)[sel])
    ip_offsets, listed = list_column(rows.take(pa.array(sel, type=pa.int64())), "designated_ips")
    listed_row = np.repeat(sel, np.diff(ip_offsets))
    # The listed and the clients' IPs normalised together: most listed ones are clients' too.
    ips = ip_keys(np.concatenate([as_objects(listed), client_ips(take(client_ids, flat))]))
    key = pd.MultiIndex.from_arrays([listed_row, ips[: len(listed)]])
    out = np.zeros(int(client_offsets[-1]), dtype=bool)
    out[flat] = pd.MultiIndex.from_arrays([row, ips[len(listed) :]]).isin(key)
    return out


def only_clients(rows: pa.RecordBatch, keep: np.ndarray) -> pa.RecordBatch:
    """``rows`` with every per-client list cut to the flat clients where ``keep``."""
    counts = np.diff(list_column(rows, "client_ids")[0])
    row = np.repeat(np.arange(rows.num_rows, dtype=np.int64), counts)
    columns = []
    for name in rows.schema.names:
        column = rows.column(name)
        if name not in PER_CLIENT:
            columns.append(column)
            continue
        valid = pc.is_valid(column).to_numpy(zero_copy_only=False)
        kept = keep & valid[row]
        values = pc.list_flatten(column).filter(pa.array(kept[valid[row]]))
        new_offsets = offsets(np.bincount(row[kept], minlength=rows.num_rows)).astype(np.int32)
        columns.append(pa.ListArray.from_arrays(pa.array(new_offsets), values, mask=pa.array(~valid)))
    return pa.RecordBatch.from_arrays(columns, names=rows.schema.names)


def _flat_clients(client_offsets: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """The flat client indices of rows ``sel``, row by row."""
    return runs(client_offsets[sel], np.diff(client_offsets)[sel])


def _designated(
    a: Allocated,
    f: Allocated | None,
    sel: np.ndarray,
    designated: np.ndarray,
    on_list: np.ndarray,
    aware: np.ndarray,
    ips: pa.Array,
) -> Allocated:
    """``a`` with its aware callers of designated rows holding ``f``'s answer (f: the same
    strategy over the designated cidAll of rows ``sel``) or, off the list, nothing."""
    g, c = a.callers.group, a.callers.client
    replaced = np.flatnonzero(designated[g] & aware[c])
    if not len(replaced):
        return a
    errors = a.errors.copy()
    errors[replaced] = None
    if f is None:
        f_caller = np.full(len(replaced), -1, dtype=np.int64)
    else:
        f_ids = as_objects(take(f.batch.client_ids, f.callers.client))
        f_at = pd.Series(
            np.arange(len(f.callers), dtype=np.int64),
            index=pd.MultiIndex.from_arrays([sel[f.callers.group], f_ids]),
        )
        ids = as_objects(take(a.batch.client_ids, c[replaced]))
        f_caller = found(f_at, [g[replaced], ids])
        f_caller[~on_list[c[replaced]]] = -1
    k, source = replaced[f_caller >= 0], f_caller[f_caller >= 0]
    if len(k):
        errors[k] = f.errors[source]
    listed_count = np.bincount(g[np.flatnonzero(on_list[c])], minlength=a.batch.n_groups)
    nobody = np.flatnonzero(designated[g[replaced]] & (listed_count[g[replaced]] == 0))
    for i in nobody:  # designated groups without a designated client: a handful
        errors[replaced[i]] = NO_DESIGNATED_CLIENT.format(ips=ips[int(g[replaced[i]])].as_py())
    return replace(a, allocation=_moved_in(a, replaced, k, f, source, sel), errors=errors)


def _moved_in(
    a: Allocated,
    replaced: np.ndarray,
    k: np.ndarray,
    f: Allocated | None,
    source: np.ndarray,
    sel: np.ndarray,
) -> Allocation:
    """a's allocation without ``replaced``'s entries, plus ``f``'s entries of callers ``source``
    as callers ``k``; f's rows have a's rows' queues, so a queue maps by its place in its row."""
    alloc = a.allocation
    drop = np.zeros(len(a.callers), dtype=bool)
    drop[replaced] = True
    keep = ~drop[alloc.caller]
    if f is None or not len(k):
        return alloc.select_entries(keep)
    src = f.allocation
    as_k = np.full(len(f.callers), -1, dtype=np.int64)
    as_k[source] = k
    entries = np.flatnonzero(as_k[src.caller] >= 0)
    f_row = f.callers.group[src.caller[entries]]
    at = src.queue[entries]
    queue = np.where(at < 0, -1, a.batch.queue_offsets[sel[f_row]] + (at - f.batch.queue_offsets[f_row]))
    explicit = alloc.broker is not None or src.broker is not None
    return Allocation(
        np.concatenate([alloc.caller[keep], as_k[src.caller[entries]]]),
        np.concatenate([alloc.queue[keep], queue]),
        np.concatenate([as_objects(alloc.brokers(a.batch))[keep], as_objects(src.brokers(f.batch))[entries]])
        if explicit
        else None,
        np.concatenate(
            [
                alloc.queue_ids(a.batch).astype(np.int64)[keep],
                src.queue_ids(f.batch).astype(np.int64)[entries],
            ]
        )
        if explicit
        else None,
        alloc.null_result,
    )
