"""Loading a snapshot (docs/CONTRACT.md, section 1): one Parquet dataset per table, checked before
any heavy work.

Only Parquet footers are read here. A missing required table or column, or a column whose type
cannot hold what the contract says, is an InputError naming the table and the column.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlparse

from pyspark.errors import AnalysisException
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    IntegerType,
    IntegralType,
    LongType,
    NumericType,
    StringType,
)

from rmqsim import schemas, session
from rmqsim.errors import InputError
from rmqsim.schemas import Column, TableSpec


@dataclass(frozen=True)
class Snapshot:
    brokers: DataFrame
    topic_queues: DataFrame
    consumers: DataFrame
    groups: DataFrame  # empty, with the contract's columns, when the snapshot has no groups table
    offsets: DataFrame | None = None
    queue_config: DataFrame | None = None
    observed_assignments: DataFrame | None = None  # read by `rmqsim validate` only
    # Optional columns the files have, as "table.column": an absent one holds its default on every
    # row, and the stage need not ship it to Python.
    given: frozenset[str] = frozenset()


def load_snapshot(spark: SparkSession, path: str) -> Snapshot:
    """Through Spark Connect the path is the server's: only Spark looks at it."""
    local = _is_local(path) and not session.is_remote(spark)
    if local:
        check_layout(path)
    read = {spec.name: _load_table(spark, path, spec, local=local) for spec in schemas.SNAPSHOT_TABLES}
    tables = {name: df for name, (df, _) in read.items()}
    groups = tables["groups"]
    if groups is None:
        groups = spark.createDataFrame([], schemas.GROUPS.schema)
    return Snapshot(
        brokers=tables["brokers"],
        topic_queues=tables["topic_queues"],
        consumers=tables["consumers"],
        groups=groups,
        offsets=tables["offsets"],
        queue_config=tables["queue_config"],
        observed_assignments=tables["observed_assignments"],
        given=frozenset(c for _, given in read.values() for c in given),
    )


def _is_local(path: str) -> bool:
    return urlparse(path).scheme in ("", "file")


def _local(path: str) -> str:
    return urlparse(path).path if path.startswith("file:") else path


def _candidates(snapshot: str, table: str) -> list[str]:
    base = snapshot.rstrip("/")
    return [f"{base}/{table}", f"{base}/{table}.parquet"]


def check_layout(snapshot: str) -> None:
    """Without Spark: the snapshot directory and its required tables exist (local paths only).

    Lets the CLI fail in a second on a mistyped path instead of after the JVM starts.
    """
    if not _is_local(snapshot):
        return
    if not os.path.isdir(_local(snapshot)):
        raise InputError("snapshot", None, f"{snapshot} is not a directory")
    for spec in schemas.SNAPSHOT_TABLES:
        table = _local_table(snapshot, spec.name)
        if table is None and spec.required:
            where = " or ".join(_candidates(snapshot, spec.name))
            raise InputError(spec.name, None, f"required table is missing: expected {where}")
        if table is not None:
            _check_files(spec.name, _local(table))


PARQUET_MAGIC = (b"PAR1", b"PARE")  # plain and encrypted footers


def _hidden(name: str) -> bool:
    """Names Spark's file listing skips (its rule for data files, partition directories kept)."""
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")


def _check_files(table: str, path: str) -> None:
    """Every file Spark would read as ``table`` is Parquet: a stray file (a note, a CSV export)
    otherwise fails the run only when the first job reaches it, as a Java stack trace. Reads
    eight bytes a file: the magic at both ends."""
    if os.path.isfile(path):
        files = [path]
    else:
        files = []
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not _hidden(d))
            files += [os.path.join(root, n) for n in sorted(names) if not _hidden(n)]
    for file in files:
        size = os.path.getsize(file)
        if size == 0:
            continue  # Spark reads an empty file as no rows
        with open(file, "rb") as f:
            head = f.read(4)
            f.seek(max(size - 4, 0))
            tail = f.read(4)
        if size < 12 or head not in PARQUET_MAGIC or tail not in PARQUET_MAGIC:
            name = os.path.relpath(file, os.path.dirname(path))
            raise InputError(
                table,
                None,
                f"{name} is not a Parquet file: remove it, or start its name with _ or . (Spark skips those)",
            )


def _local_table(snapshot: str, table: str) -> str | None:
    return next((c for c in _candidates(snapshot, table) if os.path.exists(_local(c))), None)


def _load_table(
    spark: SparkSession, snapshot: str, spec: TableSpec, *, local: bool
) -> tuple[DataFrame | None, set[str]]:
    """The table conformed to ``spec`` (None where an optional table is absent), and the optional
    columns its files have. ``local``: the snapshot is on this machine's file system."""
    if local:
        path = _local_table(snapshot, spec.name)
        if path is None:
            return None, set()  # check_layout already stopped a missing required table
        try:
            return _conformed(spark.read.parquet(path), spec)
        except InputError:
            raise
        except Exception as e:  # AnalysisException; a Java error for a Parquet file with a broken footer
            raise InputError(spec.name, None, f"cannot read {path} as Parquet: {_first_line(e)}") from None
    for candidate in _candidates(snapshot, spec.name):
        try:
            df = spark.read.parquet(candidate)
            _ = df.schema  # through Spark Connect reading is lazy: a missing path fails here
        except AnalysisException:
            continue  # not there under this spelling: try the next
        return _conformed(df, spec)
    if spec.required:
        where = " or ".join(_candidates(snapshot, spec.name))
        raise InputError(spec.name, None, f"required table is missing: expected {where}")
    return None, set()


def _conformed(df: DataFrame, spec: TableSpec) -> tuple[DataFrame, set[str]]:
    present = {f.name.lower() for f in df.schema.fields}
    given = {f"{spec.name}.{c.name}" for c in spec.columns if not c.required and c.name.lower() in present}
    return conform(df, spec), given


def _first_line(error: Exception) -> str:
    """The Java cause where there is one: py4j's own message only names the call that failed."""
    java = getattr(error, "java_exception", None)
    text = java.toString() if java is not None else str(error)
    return (text.strip().splitlines() or [""])[0][:500]


def conform(df: DataFrame, spec: TableSpec) -> DataFrame:
    """Select the contract's columns in its order, cast to its types, fill absent optional ones."""
    present = {f.name.lower(): f for f in df.schema.fields}
    out: list[SparkColumn] = []
    for col in spec.columns:
        field = present.get(col.name.lower())
        if field is None:
            if col.required:
                found = ", ".join(sorted(f.name for f in df.schema.fields)) or "none"
                raise InputError(spec.name, col.name, f"required column is missing (found: {found})")
            out.append(F.lit(col.default).cast(col.type).alias(col.name))
            continue
        _check_type(spec.name, col, field.dataType)
        out.append(
            _narrowed(F.col(f"`{field.name}`"), col.type, field.dataType).cast(col.type).alias(col.name)
        )
    return df.select(*out)


_INT_BOUNDS = (-(2**31), 2**31 - 1)


def _narrowed(value: SparkColumn, expected: DataType, found: DataType) -> SparkColumn:
    """A wider integer saturates at the contract's int bounds, so the range rules reject the row
    (naming the column) where a plain cast would fail the whole run (ANSI) or wrap around."""
    if isinstance(expected, IntegerType) and isinstance(found, LongType):
        low, high = _INT_BOUNDS
        return F.least(F.greatest(value, F.lit(low)), F.lit(high))
    return value


def _check_type(table: str, col: Column, found: DataType) -> None:
    if _compatible(col.type, found):
        return
    raise InputError(table, col.name, f"expected {col.type.simpleString()}, found {found.simpleString()}")


def _compatible(expected: DataType, found: DataType) -> bool:
    # Integer widths vary with the exporter (pandas writes int64); see _narrowed for wider values.
    if isinstance(expected, IntegralType):
        return isinstance(found, IntegralType)
    if isinstance(expected, DoubleType):
        return isinstance(found, NumericType)
    if isinstance(expected, ArrayType):
        return isinstance(found, ArrayType) and _compatible(expected.elementType, found.elementType)
    if isinstance(expected, StringType):
        return isinstance(found, StringType)
    return type(expected) is type(found)
