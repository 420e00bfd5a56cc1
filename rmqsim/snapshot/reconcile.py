"""Reconciliation: every table read is accounted for, rows read = rows used + rows rejected."""

from __future__ import annotations

import pyarrow as pa

from rmqsim import schemas
from rmqsim.snapshot.load import Snapshot

TABLES = (
    "brokers",
    "topic_queues",
    "consumers",
    "groups",
    "offsets",
    "queue_config",
    "producers",
    "producer_keys",
    "order_topics",
)
SCHEMA = schemas.arrow(schemas.RECONCILIATION)


def reconciliation(read: Snapshot, used: Snapshot, rejects: pa.Table) -> pa.Table:
    """One row per table read, in TABLES order: rows read (``read``), rows used (``used``) and
    rows rejected (``rejects``, by source), each counted on its own: read = used + rejected is
    what this shows, not what it assumes."""
    present = [t for t in TABLES if getattr(read, t) is not None]
    counts = rejects.group_by("source").aggregate([([], "count_all")])
    rejected = dict(zip(counts["source"].to_pylist(), counts["count_all"].to_pylist()))
    rows = {
        "table": present,
        "rows_read": [getattr(read, t).num_rows for t in present],
        "rows_used": [getattr(used, t).num_rows for t in present],
        "rows_rejected": [rejected.get(t, 0) for t in present],
    }
    return pa.table(rows, schema=SCHEMA)
