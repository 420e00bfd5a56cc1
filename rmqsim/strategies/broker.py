"""Broker-side balancing: what QueryAssignmentProcessor answers a client that asks for its queues.

Reproduces the CLUSTERING branch of ``QueryAssignmentProcessor.doLoadBalance`` with
``allocate4Pop`` and its private ``allocate`` (apache/rocketmq 8fc57f1, broker module), used by
remoting PushConsumers with ``clientRebalance`` off. The broker sorts mqAll and cidAll as a client
does (Java order), so a batch is built exactly as for the client-side strategies. Per caller:

- ``serverLoadBalancerEnable`` off: the topic's whole queue set, whatever the strategy or mode.
- A strategy other than AVG and AVG_BY_CIRCLE (the only two the broker registers): null, even
  for POP. The client keeps what it had.
- PULL: the strategy's share, as on the client. Retry topics (``%RETRY%``) are always PULL.
- POP with ``pop_share_queue_num`` <= 0 or >= len(cidAll) - 1: one ``(broker, -1)`` per broker of
  mqAll (the Java list holds one per queue, and the Set keeps one per broker): the client pops
  from every queue of every broker. No argument is checked on this path, so a blank client id or
  an empty mqAll is not an error here.
- POP otherwise, len(cidAll) <= len(mqAll): the client's own share, then the shares of the next
  ``pop_share_queue_num`` cidAll positions (wrapping). A position's share is that of its id's
  first occurrence (``indexOf``), so a duplicated id repeats a share (the Set drops the copy)
  and the duplicate position's own share is read by nobody.
- POP otherwise, len(cidAll) > len(mqAll): exactly ``mqAll[index % len(mqAll)]``.

Quirks kept: wherever a strategy call throws, the broker catches it and answers null. That
includes a caller whose POP window holds an empty client id (the call made for that neighbour
throws), and, on the last path, a whitespace-only id (that path uses ``isBlank``, the strategies
``isEmpty``). A caller absent from cidAll gets an empty answer (not null) on the PULL and POP
share paths. LMQ topics (a single queue of the answering broker) and a topic the broker does not
know (null) are not modelled.

Order: the broker answers a ``HashSet``, whose order means nothing (and the client decodes it
into another set), so none is reproduced. Each caller's queues come in the order of the Java list
before it became the set: the strategy's order, own share first, shares in cidAll order, each
queue at its first occurrence. Compare sorted against the conformance records.

Each path's callers are computed at once over the whole batch; a (caller, window position) pair
becomes a caller of the inner strategies, so they run unchanged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import Strings, as_objects, null_or_empty, offsets, take, within_runs
from rmqsim.strategies import avg, avg_by_circle
from rmqsim.strategies.batch import (
    EMPTY_CID_ALL,
    EMPTY_CURRENT_CID,
    EMPTY_MQ_ALL,
    Allocation,
    Callers,
    GroupBatch,
    caller_errors,
    concat_allocations,
)

# The strategies the broker registers (name2LoadStrategy); any other name is answered null.
INNER = {avg.NAME: avg.allocate, avg_by_circle.NAME: avg_by_circle.allocate}
RETRY_TOPIC_PREFIX = "%RETRY%"

# How the broker computes a caller's answer (answer_paths).
EVERY_QUEUE = 0  # serverLoadBalancerEnable off: the whole queue set
NULL = 1  # unsupported strategy, or the allocation threw
PULL = 2  # the strategy's share
POP_ALL = 3  # (broker, -1) per broker
POP_SHARED = 4  # own share plus the next pop_share_queue_num positions' shares
POP_ONE = 5  # mqAll[index % len(mqAll)]

# How group_metrics.error reports a null answer: the client keeps what it had (stage.kept_answers).
ANSWERS_NULL = "the broker answers null, so the client keeps what it had: "
UNSUPPORTED_STRATEGY = "the broker has no strategy "
THREW = "the broker's allocate threw IllegalArgumentException: "

# Character.isWhitespace, which StringUtils.isBlank uses: Unicode space separators except the
# non-breaking ones (U+00A0, U+2007, U+202F), line and paragraph separators, and these controls.
_JAVA_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2008\u2009\u200a\u2028\u2029\u205f\u3000"
)

_I64 = np.int64


def allocate(
    batch: GroupBatch,
    callers: Callers,
    *,
    strategy: np.ndarray,
    pop: np.ndarray | None = None,
    pop_share_queue_num: np.ndarray | None = None,
    server_load_balancer_enable: np.ndarray | None = None,
) -> Allocation:
    """The broker's answer to every caller: its queues, or ``null_result`` where it answers null.

    Per group: ``strategy`` (object, the strategy name the client sends), ``pop`` (bool, request
    mode POP; default PULL), ``pop_share_queue_num`` (int64, default -1) and
    ``server_load_balancer_enable`` (bool, default True). ``(broker, -1)`` answers carry their
    broker and queue id explicitly with ``queue`` -1, as CONFIG's queues outside mqAll do.
    """
    return answer(
        batch,
        callers,
        strategy=strategy,
        pop=pop,
        pop_share_queue_num=pop_share_queue_num,
        server_load_balancer_enable=server_load_balancer_enable,
    )[0]


def answer(
    batch: GroupBatch,
    callers: Callers,
    *,
    strategy: np.ndarray,
    pop: np.ndarray | None = None,
    pop_share_queue_num: np.ndarray | None = None,
    server_load_balancer_enable: np.ndarray | None = None,
) -> tuple[Allocation, np.ndarray, np.ndarray]:
    """allocate's answer, with each caller's path (answer_paths) and the reason of a null."""
    path, reason = answer_paths(
        batch,
        callers,
        strategy=strategy,
        pop=pop,
        pop_share_queue_num=pop_share_queue_num,
        server_load_balancer_enable=server_load_balancer_enable,
    )
    names = as_objects(strategy)[callers.group]
    share = _per_group(pop_share_queue_num, -1, batch.n_groups)[callers.group]
    builders = {
        EVERY_QUEUE: lambda sub, _: Allocation.every_queue(batch, sub.group),
        PULL: lambda sub, k: _shares(batch, sub, names[k], np.zeros(len(k), _I64)),
        POP_ALL: lambda sub, _: every_broker(batch, sub),
        POP_SHARED: lambda sub, k: _shares(batch, sub, names[k], share[k]),
        POP_ONE: lambda sub, _: _one_queue(batch, sub),
    }
    parts = []
    for code, build in builders.items():
        k = np.flatnonzero(path == code)
        if len(k):
            parts.append(build(callers.take(k), k).select_callers(k, len(callers)))
    merged = concat_allocations(parts, batch, len(callers))
    order = np.argsort(merged.caller, kind="stable")
    allocation = Allocation(
        merged.caller[order],
        merged.queue[order],
        None if merged.broker is None else merged.broker[order],
        None if merged.queue_id is None else merged.queue_id[order],
        np.asarray(path == NULL),
    )
    return allocation, path, reason


def answer_paths(
    batch: GroupBatch,
    callers: Callers,
    *,
    strategy: np.ndarray,
    pop: np.ndarray | None = None,
    pop_share_queue_num: np.ndarray | None = None,
    server_load_balancer_enable: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per caller, how the broker computes its answer (EVERY_QUEUE, NULL, PULL, POP_ALL,
    POP_SHARED, POP_ONE) and, for NULL, why (None otherwise). Arguments as ``allocate``'s."""
    g = callers.group
    n = batch.queue_counts[g]
    c = batch.client_counts[g]
    share = _per_group(pop_share_queue_num, -1, batch.n_groups)[g]
    enabled = _per_group(server_load_balancer_enable, True, batch.n_groups)[g]
    is_pop = request_pop(batch.topics, _per_group(pop, False, batch.n_groups))[g]
    names = as_objects(strategy)[g]
    supported = pd.Series(names, dtype=object).isin(list(INNER)).to_numpy(dtype=bool)
    path = np.select(
        [~enabled, ~supported, ~is_pop, (share <= 0) | (share >= c - 1), c <= n],
        [EVERY_QUEUE, NULL, PULL, POP_ALL, POP_SHARED],
        POP_ONE,
    ).astype(_I64)

    reason = np.full(len(callers), None, dtype=object)
    unsupported = path == NULL
    reason[unsupported] = UNSUPPORTED_STRATEGY + pd.Series(names[unsupported], dtype=object).astype(str)
    # The strategies' own check (isEmpty), then, on POP_SHARED, the call for each neighbour.
    checked = np.isin(path, [PULL, POP_SHARED])
    reason[checked] = caller_errors(batch, callers.take(np.flatnonzero(checked)))
    neighbour = (path == POP_SHARED) & np.equal(reason, None) & (callers.index >= 0)
    neighbour[neighbour] = _empty_ids_in_window(batch, callers.take(neighbour), share[neighbour]) > 0
    reason[neighbour] = EMPTY_CURRENT_CID
    one = path == POP_ONE
    reason[one] = _private_allocate_errors(batch, callers.take(one))
    threw = np.flatnonzero(~np.equal(reason, None) & ~unsupported)
    reason[threw] = THREW + reason[threw]
    path[threw] = NULL
    return path, reason


def request_pop(topics: Strings, pop: np.ndarray) -> np.ndarray:
    """Per group, whether the broker serves it in POP mode: ``pop`` except on retry topics.

    The broker defaults a retry topic to PULL and refuses to set its mode, so a retry topic is
    PULL whatever the group's mode. (The conformance records have no retry topic.)
    """
    if isinstance(topics, pa.Array):
        retry = pc.fill_null(pc.starts_with(topics, RETRY_TOPIC_PREFIX), False).to_numpy(zero_copy_only=False)
    else:
        retry = (
            pd.Series(topics, dtype=object).str.startswith(RETRY_TOPIC_PREFIX, na=False).to_numpy(dtype=bool)
        )
    return np.asarray(pop, dtype=bool) & ~retry


def _per_group(values: np.ndarray | None, default: object, n_groups: int) -> np.ndarray:
    if values is None:
        return np.full(n_groups, default)
    return np.asarray(values).astype(type(default))


def _shares(batch: GroupBatch, callers: Callers, names: np.ndarray, extra: np.ndarray) -> Allocation:
    """Caller k's own share, then the shares of the next ``extra[k]`` cidAll positions (wrapping),
    each position by its id's first occurrence, a repeated share dropped: the inner strategy runs
    once per (caller, distinct first occurrence), in window order."""
    g = callers.group
    width = np.where(callers.index >= 0, extra + 1, 0).astype(_I64)
    k = np.repeat(np.arange(len(callers), dtype=_I64), width)
    position = (callers.index[k] + within_runs(width)) % np.maximum(batch.client_counts[g[k]], 1)
    flat = batch.client_offsets[g[k]] + position
    if extra.any():
        flat = _first_occurrence(batch)[flat]
        # Equal (caller, first occurrence) pairs keep the first: the Set has the share already.
        key = k * (int(batch.client_counts.max()) + 1) + (flat - batch.client_offsets[g[k]])
        _, keep = np.unique(key, return_index=True)
        keep = np.sort(keep)
        k, flat = k[keep], flat[keep]
    pairs = Callers(g[k], flat, flat - batch.client_offsets[g[k]])
    pair, queue = [], []
    for name, inner in INNER.items():
        mine = np.flatnonzero(names[k] == name)
        part = inner(batch, pairs.take(mine))
        pair.append(mine[part.caller])
        queue.append(part.queue)
    pair_of, queue_of = np.concatenate(pair), np.concatenate(queue)
    order = np.argsort(pair_of, kind="stable")  # pairs are in caller then window order
    return Allocation(k[pair_of[order]], queue_of[order])


def _first_occurrence(batch: GroupBatch) -> np.ndarray:
    """Per flat client, the flat index of its id's first occurrence in its group's cidAll."""
    group = np.repeat(np.arange(batch.n_groups, dtype=_I64), batch.client_counts)
    codes = batch.client_codes
    key = group * (int(codes.max(initial=0)) + 1) + codes
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first[inverse.ravel()].astype(_I64)


def every_broker(batch: GroupBatch, callers: Callers) -> Allocation:
    """One (broker, -1) per distinct broker of the caller's mqAll, in mqAll order."""
    queue_group = batch.queue_group
    codes = batch.broker_codes
    key = queue_group * (int(codes.max(initial=0)) + 1) + codes
    first = np.sort(np.unique(key, return_index=True)[1]).astype(_I64)
    per_group = np.bincount(queue_group[first], minlength=batch.n_groups).astype(_I64)
    runs = Allocation.from_runs(offsets(per_group)[callers.group], per_group[callers.group])
    none = np.full(len(runs.caller), -1, dtype=_I64)
    broker = as_objects(take(batch.queue_broker, first[runs.queue]))
    return Allocation(runs.caller, none, broker, none.copy())


def _one_queue(batch: GroupBatch, callers: Callers) -> Allocation:
    """mqAll[index % len(mqAll)]; a caller absent from cidAll gets nothing."""
    k = np.flatnonzero(callers.index >= 0)
    g = callers.group[k]
    return Allocation(k, batch.queue_offsets[g] + callers.index[k] % batch.queue_counts[g])


def _empty_ids_in_window(batch: GroupBatch, callers: Callers, extra: np.ndarray) -> np.ndarray:
    """How many empty client ids sit at cidAll positions index+1 .. index+extra (wrapping): a
    cyclic prefix count, so no window is expanded."""
    empty = offsets(null_or_empty(batch.client_ids).astype(_I64))
    start = batch.client_offsets[callers.group]
    c = np.maximum(batch.client_counts[callers.group], 1)
    total = empty[start + c] - empty[start]

    def before(x: np.ndarray) -> np.ndarray:  # empty ids among the first x positions, cyclically
        return (x // c) * total + empty[start + x % c] - empty[start]

    return before(callers.index + extra + 1) - before(callers.index + 1)


def _private_allocate_errors(batch: GroupBatch, callers: Callers) -> np.ndarray:
    """The messages of the broker's own allocate: isBlank(currentCID), then mqAll, then cidAll."""
    errors = np.full(len(callers), None, dtype=object)
    errors[batch.client_counts[callers.group] == 0] = EMPTY_CID_ALL
    errors[batch.queue_counts[callers.group] == 0] = EMPTY_MQ_ALL
    errors[_java_blank(take(batch.client_ids, callers.client))] = EMPTY_CURRENT_CID
    return errors


def _java_blank(values: Strings) -> np.ndarray:
    """StringUtils.isBlank: null, empty, or only Character.isWhitespace characters."""
    if isinstance(values, pa.Array):
        trimmed = pc.utf8_trim(values, characters=_JAVA_WHITESPACE)
        return pc.fill_null(pc.equal(pc.utf8_length(trimmed), 0), True).to_numpy(zero_copy_only=False)
    return pd.Series(values, dtype=object).fillna("").str.strip(_JAVA_WHITESPACE).eq("").to_numpy(dtype=bool)
