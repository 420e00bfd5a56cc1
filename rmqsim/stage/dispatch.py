"""Which code computes each client's queues, for every (row, strategy) of a batch.

- a CLUSTERING group: every client computes its own share with its library's code
  (``consumers.language``): Java's strategies (strategies.registry), the Go client's
  (strategies.go), or AVG in Go's order for the clients built on rocketmq-client-cpp, whatever
  the group names. rmqsim's own strategies (STICKY, LAG_BALANCED) are the same function in any
  library. A library rmqsim does not simulate computes nothing, and says so.
- a group whose broker balances (``groups.rebalance`` broker, not orderly): the broker's answer
  (strategies.broker), whatever the client's library; where it answers null the client keeps
  what it had (stage.kept_answers);
- a group the 5.x proxy balances (``groups.rebalance`` proxy): every readable broker for every
  client (strategies.proxy); where the proxy's answer fails, the client keeps what it had;
- a BROADCASTING group: no balancing, every client reads every queue, whatever the strategy;
- STICKY: the strategy, phase after phase, from the assignment it made before (stage.sticky_memory);
- a designated group: the designated-aware clients compute over the designated machines only
  (stage.designated);
- a stale_view phase: the stale clients keep what they computed from their old view (stage.stale_views).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from rmqsim import schemas
from rmqsim.stage import sticky_memory
from rmqsim.stage.allocated import Allocated
from rmqsim.stage.batches import (
    Balancing,
    Libraries,
    balancing,
    broadcasting,
    client_libraries,
    queue_master_alive,
    rows_by_strategy,
    to_batch,
)
from rmqsim.stage.designated import with_designation
from rmqsim.stage.kept_answers import with_kept_answers
from rmqsim.stage.stale_views import with_stale_views
from rmqsim.strategies import (
    Allocation,
    Callers,
    GroupBatch,
    Strategy,
    broker,
    distinct_callers,
    proxy,
    registry,
    sticky,
)
from rmqsim.strategies.batch import RMQSIM_REFUSES, concat_allocations
from rmqsim.strategies.go import GO_STRATEGIES

JAVA = schemas.LANGUAGES.index("JAVA")
GO = schemas.LANGUAGES.index("GO")
BROKER_PULL, BROKER_POP, BROKER_KEPT, PROXY, PROXY_KEPT = (
    schemas.PATHS.index(p) for p in ("broker PULL", "broker POP", "broker kept", "proxy", "proxy kept")
)


def allocate_rows(rows: pa.RecordBatch) -> list[Allocated]:
    """Every strategy a row asks for, each run once over all the rows that ask for it, then
    what the clients keep, see of a designation, or remember of a stale view."""
    out = with_kept_answers(rows, _allocated(rows), answered_null=(BROKER_KEPT, PROXY_KEPT))
    out = with_designation(rows, out, _allocated)
    return with_stale_views(rows, out)


def _allocated(rows: pa.RecordBatch) -> list[Allocated]:
    """The route and client lists are expanded once per batch, whatever the number of strategies."""
    batch = to_batch(rows)
    everyone = distinct_callers(batch)
    libraries = client_libraries(rows, batch.client_offsets)
    balanced = balancing(rows)
    out = []
    for name, row_ids in rows_by_strategy(rows).items():
        callers = everyone.take(np.isin(everyone.group, row_ids))
        if (balanced.by_broker | balanced.by_proxy)[callers.group].any():
            out.append(_by_side(name, rows, batch, callers, libraries, balanced, row_ids))
        else:
            allocation, errors, computed_by = _on_clients(name, rows, batch, callers, libraries)
            out.append(Allocated(name, batch, callers, allocation, errors, row_ids, computed_by))
    return out


def _on_clients(
    name: str, rows: pa.RecordBatch, batch: GroupBatch, callers: Callers, libraries: Libraries
) -> tuple[Allocation, np.ndarray, np.ndarray]:
    """Every caller computing its own share: (allocation, errors, computed_by)."""
    library = libraries.code[callers.client]
    if name == sticky.NAME:
        allocation, errors = sticky_memory.sticky_by_phase(rows, batch, callers)
    else:
        allocation, errors = _by_library(name, batch, callers, broadcasting(rows)[callers.group], library)
    allocation, errors = _refuse_unknown(allocation, errors, callers, libraries)
    return allocation, errors, library


def _by_side(
    name: str,
    rows: pa.RecordBatch,
    batch: GroupBatch,
    callers: Callers,
    libraries: Libraries,
    balanced: Balancing,
    row_ids: np.ndarray,
) -> Allocated:
    """Callers of broker-balanced groups asking the broker, of proxied groups the proxy, the
    others computing their own share."""
    g = callers.group
    sides = {
        "client": np.flatnonzero(~balanced.by_broker[g] & ~balanced.by_proxy[g]),
        "broker": np.flatnonzero(balanced.by_broker[g]),
        "proxy": np.flatnonzero(balanced.by_proxy[g]),
    }
    errors = np.full(len(callers), None, dtype=object)
    computed_by = np.zeros(len(callers), dtype=np.int64)
    parts = []
    for side, k in sides.items():
        if not len(k):
            continue
        if side == "client":
            answered, errors[k], computed_by[k] = _on_clients(name, rows, batch, callers.take(k), libraries)
        elif side == "broker":
            answered, errors[k], computed_by[k] = _broker_answer(name, batch, callers.take(k), balanced)
        else:
            answered, errors[k], computed_by[k] = _proxy_answer(rows, batch, callers.take(k), balanced)
        parts.append(answered.select_callers(k, len(callers)))
    allocation = concat_allocations(parts, batch, len(callers))
    return Allocated(name, batch, callers, allocation, errors, row_ids, computed_by)


def _proxy_answer(
    rows: pa.RecordBatch, batch: GroupBatch, callers: Callers, balanced: Balancing
) -> tuple[Allocation, np.ndarray, np.ndarray]:
    """The 5.x proxy's answer, whatever the strategy: (allocation, why it failed, computed_by)."""
    allocation, reason = proxy.answer(
        batch, callers, orderly=balanced.orderly, master_alive=queue_master_alive(rows, batch)
    )
    computed_by = np.where(allocation.null_result, PROXY_KEPT, PROXY)
    errors = reason.copy()
    failed = ~np.equal(reason, None)
    errors[failed] = (proxy.ANSWERS_NULL + pd.Series(reason[failed], dtype=object)).to_numpy()
    return allocation, errors, computed_by


def _broker_answer(
    name: str, batch: GroupBatch, callers: Callers, balanced: Balancing
) -> tuple[Allocation, np.ndarray, np.ndarray]:
    """QueryAssignmentProcessor's answer: (allocation, why it answered null, computed_by)."""
    allocation, path, reason = broker.answer(
        batch,
        callers,
        strategy=np.full(batch.n_groups, name, dtype=object),
        pop=balanced.pop,
        pop_share_queue_num=balanced.pop_share_queue_num,
    )
    computed_by = np.select(
        [path == broker.NULL, np.isin(path, [broker.POP_ALL, broker.POP_SHARED, broker.POP_ONE])],
        [BROKER_KEPT, BROKER_POP],
        BROKER_PULL,
    )
    errors = reason.copy()
    null = ~np.equal(reason, None)
    errors[null] = (broker.ANSWERS_NULL + pd.Series(reason[null], dtype=object)).to_numpy()
    return allocation, errors, computed_by


def _by_library(
    name: str, batch: GroupBatch, callers: Callers, listening: np.ndarray, library: np.ndarray
) -> tuple[Allocation, np.ndarray]:
    """Strategy ``name`` as each caller's library computes it (a handful of libraries, each run
    once over all its callers)."""
    if (library == JAVA).all():  # every client Java: the usual fleet, no sort
        return allocate_or_broadcast(registry.get(name), batch, callers, listening)
    present = np.unique(library[library >= 0])
    if len(present) == 1 and (library >= 0).all():
        return allocate_or_broadcast(_code_of(name, int(present[0])), batch, callers, listening)
    parts, errors = [], np.full(len(callers), None, dtype=object)
    for code in present:
        these = np.flatnonzero(library == code)
        allocated, errors[these] = allocate_or_broadcast(
            _code_of(name, int(code)), batch, callers.take(these), listening[these]
        )
        parts.append(allocated.select_callers(these, len(callers)))
    return concat_allocations(parts, batch, len(callers)), errors


def _code_of(name: str, library: int) -> Strategy:
    """The code a client of ``library`` runs for the group's strategy ``name``."""
    if library == JAVA or name not in registry.ROCKETMQ_STRATEGIES:
        return registry.get(name)  # rmqsim's own strategies: one function, any library
    if library == GO:
        return GO_STRATEGIES[name]
    return GO_STRATEGIES["AVG"]  # rocketmq-client-cpp and the clients on it: AVG, sorted by bytes


def _refuse_unknown(
    allocation: Allocation, errors: np.ndarray, callers: Callers, libraries: Libraries
) -> tuple[Allocation, np.ndarray]:
    """Callers of a library rmqsim does not simulate hold nothing, and their error says why."""
    if not libraries.unknown:
        return allocation, errors
    refused = np.flatnonzero(libraries.code[callers.client] < 0)
    if not len(refused):
        return allocation, errors
    errors = errors.copy()
    for k in refused:  # only the callers of an unknown library, a handful
        language = libraries.unknown[int(callers.client[k])]
        errors[k] = (
            f"{RMQSIM_REFUSES} consumers.language '{language}': "
            f"the libraries it simulates are {', '.join(schemas.LANGUAGES)}"
        )
    keep = ~np.isin(allocation.caller, refused)
    return allocation.select_entries(keep), errors


def allocate_or_broadcast(
    strategy: Strategy, batch: GroupBatch, callers: Callers, listening: np.ndarray
) -> tuple[Allocation, np.ndarray]:
    """``strategy`` for the callers of CLUSTERING groups; every queue of its group for each
    caller where ``listening`` (a BROADCASTING group). Returns the allocation and each caller's
    error or None."""
    if not listening.any():
        return registry.allocate(strategy, batch, callers)
    clustering = np.flatnonzero(~listening)
    allocated, sub_errors = registry.allocate(strategy, batch, callers.take(clustering))
    everyone_reads = np.flatnonzero(listening)
    allocation = concat_allocations(
        [
            allocated.select_callers(clustering, len(callers)),
            Allocation.every_queue(batch, callers.group[everyone_reads]).select_callers(
                everyone_reads, len(callers)
            ),
        ],
        batch,
        len(callers),
    )
    errors = np.full(len(callers), None, dtype=object)
    errors[clustering] = sub_errors
    return allocation, errors
