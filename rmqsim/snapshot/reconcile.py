"""Reconciliation: every table read is accounted for, rows read = rows used + rows rejected."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rmqsim.snapshot.load import Snapshot

TABLES = ("brokers", "topic_queues", "consumers", "groups", "offsets", "queue_config")


def reconciliation(snapshot: Snapshot, used_tables: Snapshot, rejects: DataFrame) -> DataFrame:
    """One row per table read: rows read (``snapshot``), rows used (``used_tables``) and rows
    rejected (``rejects``, by source), each counted on its own: read = used + rejected is what
    this shows, not what it assumes. One aggregation over a union: a count per table and kind
    would be a Spark job each."""
    present = [t for t in TABLES if getattr(snapshot, t) is not None]

    def tally(df: DataFrame, table: Column, kind: str) -> DataFrame:
        return df.select(table.alias("table"), *[F.lit(int(k == kind)).alias(k) for k in KINDS])

    parts = [tally(getattr(snapshot, t), F.lit(t), "rows_read") for t in present]
    parts += [tally(getattr(used_tables, t), F.lit(t), "rows_used") for t in present]
    parts.append(tally(rejects.where(F.col("source").isin(present)), F.col("source"), "rows_rejected"))
    # A row per table even when it is empty.
    parts.append(rejects.sparkSession.createDataFrame([(t, 0, 0, 0) for t in present], parts[0].schema))
    return (
        reduce(DataFrame.unionByName, parts)
        .groupBy("table")
        .agg(*[F.sum(k).cast("long").alias(k) for k in KINDS])
        .orderBy(F.array_position(F.array(*[F.lit(t) for t in TABLES]), F.col("table")))
    )


KINDS = ("rows_read", "rows_used", "rows_rejected")
