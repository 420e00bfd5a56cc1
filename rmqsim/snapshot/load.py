"""Loading a snapshot (docs/CONTRACT.md, section 1) as Arrow tables in the driver.

A snapshot on this machine is read by pyarrow: the files Spark would read, no Spark job. Elsewhere
(hdfs://, s3a://, or a Spark Connect server's paths) Spark reads each table and hands it over
as Arrow. Either way every table is conformed to the contract here: a missing required table or
column, or a column whose type cannot hold what the contract says, is an InputError naming the
table and the column.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type
from pyspark.sql.types import ArrayType, DataType, DoubleType, IntegerType, IntegralType, LongType, StringType

from rmqsim import schemas, session
from rmqsim.errors import InputError
from rmqsim.schemas import Column, TableSpec


@dataclass(frozen=True)
class Snapshot:
    brokers: pa.Table
    topic_queues: pa.Table
    consumers: pa.Table
    groups: pa.Table  # empty, with the contract's columns, when the snapshot has no groups table
    offsets: pa.Table | None = None
    queue_config: pa.Table | None = None
    observed_assignments: pa.Table | None = None  # read by `rmqsim validate` only
    producers: pa.Table | None = None  # where the messages go (docs/CONTRACT.md, section 2c)
    producer_keys: pa.Table | None = None
    order_topics: pa.Table | None = None
    observed_traffic: pa.Table | None = None  # read by `rmqsim validate` only
    queue_status: pa.Table | None = None  # read by `rmqsim validate` only
    # Optional columns the files have, as "table.column".
    given: frozenset[str] = frozenset()


def load_snapshot(spark: SparkSession | None, path: str) -> Snapshot:
    """Through Spark Connect the path is the server's: only Spark looks at it. A local path is read
    with pyarrow, without Spark (``spark`` may be None)."""
    local = is_local(path) and (spark is None or not session.is_remote(spark))
    if spark is None and not local:
        raise ValueError(f"{path} is not local: only Spark reads it")
    if local:
        check_layout(path)
    read = {spec.name: _load_table(spark, path, spec, local=local) for spec in schemas.SNAPSHOT_TABLES}
    tables = {name: table for name, (table, _) in read.items()}
    if tables["groups"] is None:
        tables["groups"] = schemas_table(schemas.GROUPS).schema.empty_table()
    return Snapshot(**tables, given=frozenset(c for _, given in read.values() for c in given))


def is_local(path: str) -> bool:
    """A path on this machine, which pyarrow reads without Spark."""
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
    if not is_local(snapshot):
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


def data_files(path: str) -> list[str]:
    """The files Spark reads as the table at ``path`` (a file, or a directory tree)."""
    if os.path.isfile(path):
        return [path]
    files = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        files += [os.path.join(root, n) for n in sorted(names) if not _hidden(n)]
    return files


def _check_files(table: str, path: str) -> None:
    """Every file Spark would read as ``table`` is Parquet: a stray file (a note, a CSV export)
    otherwise fails the run only when the first job reaches it, as a Java stack trace. Reads
    eight bytes a file: the magic at both ends."""
    for file in data_files(path):
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


def schemas_table(spec: TableSpec) -> pa.Table:
    """An empty table with ``spec``'s columns and Arrow types."""
    return pa.schema([pa.field(c.name, arrow_type(c.type)) for c in spec.columns]).empty_table()


def arrow_type(spark_type: DataType) -> pa.DataType:
    return to_arrow_type(spark_type)


def _load_table(
    spark: SparkSession, snapshot: str, spec: TableSpec, *, local: bool
) -> tuple[pa.Table | None, set[str]]:
    if local:
        path = _local_table(snapshot, spec.name)
        if path is None:
            return None, set()  # check_layout already stopped a missing required table
        try:
            table = _read_files(path)
        except (OSError, pa.ArrowException) as e:  # a file with a broken footer
            raise InputError(spec.name, None, f"cannot read {path} as Parquet: {_first_line(e)}") from None
        return _conformed(table, spec)
    for candidate in _candidates(snapshot, spec.name):
        try:
            df = spark.read.parquet(candidate)
            _ = df.schema  # through Spark Connect reading is lazy: a missing path fails here
        except AnalysisException:
            continue  # not there under this spelling: try the next
        return _conformed(df.toArrow(), spec)
    if spec.required:
        where = " or ".join(_candidates(snapshot, spec.name))
        raise InputError(spec.name, None, f"required table is missing: expected {where}")
    return None, set()


def _read_files(path: str) -> pa.Table:
    """The rows of the Parquet files Spark would read at ``path`` (a file, or a directory with
    key=value partition directories, whose values Spark reads as strings)."""
    base = path if os.path.isdir(path) else os.path.dirname(path)
    files = [f for f in data_files(path) if os.path.getsize(f) > 0]  # Spark reads an empty file as no rows
    keys = sorted(
        {part.split("=", 1)[0] for f in files for part in os.path.relpath(f, base).split(os.sep)[:-1]}
    )
    partitioning = (
        ds.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive") if keys else None
    )
    dataset = ds.dataset(files, format="parquet", partitioning=partitioning, partition_base_dir=base)
    return dataset.to_table()


def _first_line(error: Exception) -> str:
    """The Java cause where there is one: py4j's own message only names the call that failed."""
    java = getattr(error, "java_exception", None)
    text = java.toString() if java is not None else str(error)
    return (text.strip().splitlines() or [""])[0][:500]


def _conformed(table: pa.Table, spec: TableSpec) -> tuple[pa.Table, set[str]]:
    present = {name.lower() for name in table.column_names}
    given = {f"{spec.name}.{c.name}" for c in spec.columns if not c.required and c.name.lower() in present}
    return conform(table, spec), given


def conform(table: pa.Table, spec: TableSpec) -> pa.Table:
    """The contract's columns in its order, cast to its types; absent optional ones filled with
    their default."""
    present = {name.lower(): name for name in table.column_names}
    arrays: list[pa.ChunkedArray | pa.Array] = []
    for col in spec.columns:
        target = arrow_type(col.type)
        name = present.get(col.name.lower())
        if name is None:
            if col.required:
                found = ", ".join(sorted(table.column_names)) or "none"
                raise InputError(spec.name, col.name, f"required column is missing (found: {found})")
            arrays.append(pa.repeat(pa.scalar(col.default, target), table.num_rows))
            continue
        values = table.column(name)
        _check_type(spec.name, col, values.type)
        arrays.append(_cast(values, col.type, target))
    return pa.table(arrays, names=[c.name for c in spec.columns])


INT_BOUNDS = (-(2**31), 2**31 - 1)
LONG_BOUNDS = (-(2**63), 2**63 - 1)


def _cast(values: pa.ChunkedArray, expected: DataType, target: pa.DataType) -> pa.ChunkedArray:
    """A wider integer saturates at the contract's bounds, so the range rules reject the row
    (naming the column) where a plain cast would fail the whole run or wrap around."""
    if isinstance(expected, (IntegerType, LongType)) and pa.types.is_integer(values.type):
        low, high = INT_BOUNDS if isinstance(expected, IntegerType) else LONG_BOUNDS
        if pa.types.is_signed_integer(values.type):
            values = pc.min_element_wise(
                pc.max_element_wise(values.cast(pa.int64()), low, skip_nulls=False), high, skip_nulls=False
            )
        else:
            values = pc.min_element_wise(
                values.cast(pa.uint64()), pa.scalar(high, pa.uint64()), skip_nulls=False
            )
    return values.cast(target, safe=not isinstance(expected, DoubleType))


def _check_type(table: str, col: Column, found: pa.DataType) -> None:
    if _compatible(col.type, found):
        return
    raise InputError(table, col.name, f"expected {col.type.simpleString()}, found {_spark_name(found)}")


def _spark_name(found: pa.DataType) -> str:
    """The type as Spark names it, as the user's tools show it."""
    try:
        return from_arrow_type(found).simpleString()
    except Exception:  # a type Spark has no name for
        return str(found)


def _compatible(expected: DataType, found: pa.DataType) -> bool:
    if pa.types.is_null(found):  # a column of nulls only (pandas writes None columns so) fits any type
        return True
    # Integer widths vary with the exporter (pandas writes int64); see _cast for wider values.
    if isinstance(expected, IntegralType):
        return pa.types.is_integer(found)
    if isinstance(expected, DoubleType):
        return pa.types.is_integer(found) or pa.types.is_floating(found) or pa.types.is_decimal(found)
    if isinstance(expected, ArrayType):
        return (pa.types.is_list(found) or pa.types.is_large_list(found)) and _compatible(
            expected.elementType, found.value_type
        )
    if isinstance(expected, StringType):
        return pa.types.is_string(found) or pa.types.is_large_string(found) or pa.types.is_string_view(found)
    return to_arrow_type(expected) == found
