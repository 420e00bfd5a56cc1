"""The allocation stage: strategies run over Arrow batches of (topic, group) rows via mapInPandas.

Each input row (schemas.GROUP_ROUTES) carries one group's compact route and sorted client list.
The functions behind mapInPandas are plain module-level functions over pandas DataFrames, so tests
can call them without Spark. Every step inside is a numpy operation over the whole batch: no
Python loop over groups or queues.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame

from rmqsim import schemas
from rmqsim import strategies as registry
from rmqsim.strategies import Allocation, Callers, GroupBatch, distinct_callers
from rmqsim.strategies.batch import duplicate_client_counts, group_errors


def _offsets(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def _flatten(column: pd.Series, dtype: object) -> tuple[np.ndarray, np.ndarray]:
    """A pandas column of arrays as (offsets, flat values)."""
    arrays = column.to_numpy()
    lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
    flat = np.concatenate(arrays).astype(dtype, copy=False) if lengths.sum() else np.empty(0, dtype)
    return _offsets(lengths), flat


def to_batch(pdf: pd.DataFrame) -> GroupBatch:
    broker_offsets, broker_names = _flatten(pdf["broker_names"], object)
    _, read_queue_nums = _flatten(pdf["read_queue_nums"], np.int64)
    client_offsets, client_ids = _flatten(pdf["client_ids"], object)
    return GroupBatch.from_routes(
        topics=pdf["topic"].to_numpy(dtype=object),
        broker_offsets=broker_offsets,
        broker_names=broker_names,
        read_queue_nums=read_queue_nums,
        client_offsets=client_offsets,
        client_ids=client_ids,
    )


@dataclass(frozen=True)
class Allocated:
    """One batch allocated: the callers (distinct clients), their queues, and per-caller errors."""

    batch: GroupBatch
    callers: Callers
    allocation: Allocation
    errors: np.ndarray


def allocate_rows(pdf: pd.DataFrame) -> Allocated:
    """Run each row's strategy; rows of different strategies share one batch."""
    batch = to_batch(pdf)
    callers = distinct_callers(batch)
    errors = np.full(len(callers), None, dtype=object)
    parts: list[Allocation] = []
    strategy_of_caller = pdf["strategy"].to_numpy(dtype=object)[callers.group]
    for name in pd.unique(pdf["strategy"]):
        picked = np.flatnonzero(strategy_of_caller == name)
        sub, sub_errors = registry.allocate(registry.get(name), batch, callers.take(picked))
        errors[picked] = sub_errors
        parts.append(Allocation(picked[sub.caller], sub.queue))
    allocation = Allocation(
        np.concatenate([p.caller for p in parts]) if parts else np.zeros(0, np.int64),
        np.concatenate([p.queue for p in parts]) if parts else np.zeros(0, np.int64),
    )
    return Allocated(batch, callers, allocation, errors)


_KEYS = ["scenario", "phase", "strategy", "topic", "group"]


def assignment_rows(pdf: pd.DataFrame) -> pd.DataFrame:
    """One row per (client, queue) it owns: schemas.ASSIGNMENTS."""
    a = allocate_rows(pdf)
    group = a.callers.group[a.allocation.caller]
    out = {k: pdf[k].to_numpy()[group] for k in _KEYS}
    out["client_id"] = a.batch.client_ids[a.callers.client[a.allocation.caller]]
    out["broker_name"] = a.batch.queue_broker[a.allocation.queue]
    out["queue_id"] = a.batch.queue_id[a.allocation.queue].astype(np.int32)
    return pd.DataFrame(out, columns=schemas.ASSIGNMENTS.fieldNames())


def client_queue_rows(pdf: pd.DataFrame) -> pd.DataFrame:
    """One row per (group, distinct client) with its queue count and its group's totals:
    schemas.CLIENT_QUEUES, which the metrics aggregate without touching assignment rows."""
    a = allocate_rows(pdf)
    batch, callers = a.batch, a.callers
    n_queues = len(batch.queue_id)
    owners = np.bincount(a.allocation.queue, minlength=n_queues)
    queue_group = batch.queue_group
    unassigned = np.bincount(queue_group, weights=owners == 0, minlength=batch.n_groups)
    multi_owned = np.bincount(queue_group, weights=owners > 1, minlength=batch.n_groups)
    g = callers.group
    out = {k: pdf[k].to_numpy()[g] for k in _KEYS}
    out["client_id"] = batch.client_ids[callers.client]
    out["queues"] = np.bincount(a.allocation.caller, minlength=len(callers)).astype(np.int64)
    out["queue_count"] = batch.queue_counts[g].astype(np.int64)
    out["duplicate_client_ids"] = duplicate_client_counts(batch, callers)[g].astype(np.int64)
    out["unassigned_queues"] = unassigned[g].astype(np.int64)
    out["multi_owned_queues"] = multi_owned[g].astype(np.int64)
    errors = group_errors(batch)[g]
    out["error"] = np.where(np.equal(errors, None), a.errors, errors)
    return pd.DataFrame(out, columns=schemas.CLIENT_QUEUES.fieldNames())


def map_assignments(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    for pdf in batches:
        yield assignment_rows(pdf)


def map_client_queues(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    for pdf in batches:
        yield client_queue_rows(pdf)


def partition_by_group(group_routes: DataFrame, *, partitions: int) -> DataFrame:
    """Spread (topic, group) rows over a fixed number of Python tasks (adaptive execution would
    coalesce them onto fewer cores than the machine has)."""
    return group_routes.repartition(partitions, "topic", "group")


def assignments(group_routes: DataFrame) -> DataFrame:
    return group_routes.mapInPandas(map_assignments, schemas.ASSIGNMENTS)


def client_queues(group_routes: DataFrame) -> DataFrame:
    return group_routes.mapInPandas(map_client_queues, schemas.CLIENT_QUEUES)
