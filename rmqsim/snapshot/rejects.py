"""Splitting a table into the rows that can be simulated and the rows that go to rejects/.

Nothing is silently dropped: every row leaves here either kept or as a reject row that names its
source table, the reason and the row itself as JSON.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

REASON = "_reject_reason"


def with_reject_reason(df: DataFrame, *, rules: Sequence[tuple[Column, Column | str]]) -> DataFrame:
    """Add the reason of the first rule a row breaks (null where it breaks none)."""
    reasons = [F.when(bad, reason if isinstance(reason, Column) else F.lit(reason)) for bad, reason in rules]
    return df.withColumn(REASON, F.coalesce(*reasons) if reasons else F.lit(None).cast("string"))


def kept(df: DataFrame) -> DataFrame:
    return df.where(F.col(REASON).isNull()).drop(REASON)


def rejected(df: DataFrame, *, source: str, columns: Sequence[str]) -> DataFrame:
    """The rejected rows in the rejects/ schema: source, reason, row as JSON."""
    row = F.to_json(F.struct(*[F.col(f"`{c}`") for c in columns]))
    return df.where(F.col(REASON).isNotNull()).select(
        F.lit(source).alias("source"), F.col(REASON).alias("reason"), row.alias("row")
    )


def blank(name: str) -> Column:
    """A key column that is null or only white space."""
    # rlike, not trim: Spark's trim strips only spaces, and a tab is no name either.
    return F.col(f"`{name}`").isNull() | F.col(f"`{name}`").rlike(r"^\s*$")
