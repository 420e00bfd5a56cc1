"""Loading a snapshot (docs/CONTRACT.md, section 1) as Arrow tables in the driver.

A snapshot on this machine is read by pyarrow: the files Spark would read, no Spark job. Elsewhere
(hdfs://, s3a://, or a Spark Connect server's paths) Spark reads each table and hands it over
as Arrow. Either way every table is conformed to the contract here: a missing required table or
column, a column whose type cannot hold what the contract says, two spellings of a column, a
folder without a data file, or a file that is not Parquet or whose footer is damaged, is an
InputError naming the table and the column or file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
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
            _check_files(spec, _local(table))


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


def _check_files(spec: TableSpec, path: str) -> None:
    """Every file Spark would read as the table is Parquet, whole, and there is one: a stray file (a
    note, a CSV export) or a truncated one otherwise fails the run only when the first job reaches
    it, as a Java stack trace. Reads eight bytes a file: the magic at both ends."""
    empty = True
    for file in data_files(path):
        size = os.path.getsize(file)
        if size == 0:
            continue  # Spark reads an empty file as no rows
        empty = False
        with open(file, "rb") as f:
            head = f.read(4)
            f.seek(max(size - 4, 0))
            tail = f.read(4)
        if size >= 12 and head in PARQUET_MAGIC and tail in PARQUET_MAGIC:
            continue
        name = os.path.relpath(file, os.path.dirname(path))
        if head in PARQUET_MAGIC:
            # Parquet's footer is written last: a copy cut short has the head and not the footer.
            raise InputError(spec.name, None, _damaged_footer(name))
        raise InputError(
            spec.name,
            None,
            f"{name} is not a Parquet file: remove it, or start its name with _ or . (Spark skips those)",
        )
    if empty:
        raise InputError(spec.name, None, _no_data_files(spec, path))


def _damaged_footer(name: str) -> str:
    """Not "remove it", as for a stray file: this one holds the table's rows."""
    return (
        f"cannot read {name}: a Parquet file whose footer is damaged or missing (truncated?): "
        "restore it or re-export the table"
    )


def _no_data_files(spec: TableSpec, path: str) -> str:
    """A folder without a part file is no table, not an empty one: Spark writes a table of no rows
    as a part file holding the schema, and cannot read a folder without one."""
    remedy = "re-export the table" + ("" if spec.required else ", or remove the folder to run without it")
    return f"{path} holds no data file (only empty files or names Spark skips, such as _SUCCESS): {remedy}"


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
        except (OSError, pa.ArrowException) as e:  # a footer with the magic but broken inside
            damaged = _unreadable_footer(_local(path))
            if damaged is not None:
                raise InputError(spec.name, None, _damaged_footer(damaged)) from None
            raise InputError(spec.name, None, f"cannot read {path} as Parquet: {_first_line(e)}") from None
        return _conformed(table, spec)
    for candidate in _candidates(snapshot, spec.name):
        table = _spark_table(spark, candidate, spec)
        if table is not None:
            return _conformed(table, spec)
    if spec.required:
        where = " or ".join(_candidates(snapshot, spec.name))
        raise InputError(spec.name, None, f"required table is missing: expected {where}")
    return None, set()


def _spark_table(spark: SparkSession, path: str, spec: TableSpec) -> pa.Table | None:
    """The table at ``path`` as Spark reads it, or None where nothing is there."""
    try:
        df = spark.read.parquet(path)
        _ = df.schema  # through Spark Connect reading is lazy: a missing path fails here
        return df.toArrow()  # a part file's footer is read only now where the schema came from another
    except AnalysisException as e:
        condition = e.getCondition()
        if condition == "PATH_NOT_FOUND":
            return None  # not there under this spelling: the caller tries the next
        if condition == "UNABLE_TO_INFER_SCHEMA":  # there, but without a data file
            raise InputError(spec.name, None, _no_data_files(spec, path)) from None
        if condition == "COLUMN_ALREADY_EXISTS":  # Spark matches names ignoring case as well
            name = re.search(r"column `([^`]*)`", str(e))
            problem = "columns of this name differ only in case (names are matched ignoring case): keep one"
            raise InputError(spec.name, name[1] if name else None, problem) from None
        raise
    except Exception as e:  # py4j's or Spark Connect's
        _raise_footer(spec, e)
        raise


# Spark's words for a file it cannot read the footer of: when inferring the schema, and in a
# task's failure (parquet-mr's own message, in the Java causes py4j's text includes).
SPARK_FOOTER = re.compile(
    r"CANNOT_READ_FILE_FOOTER\] Encountered error while reading file (\S+?)\.? |(\S+) is not a Parquet file"
)


def _raise_footer(spec: TableSpec, error: Exception) -> None:
    """An InputError where Spark could not read a file's footer. Spark does not tell a truncated
    Parquet file from a stray one: it names the file either way."""
    found = SPARK_FOOTER.search(str(error))
    if found is not None:
        problem = (
            f"cannot read {found[1] or found[2]}: a stray file, or a Parquet file whose footer is damaged or"
            " missing (truncated?): remove a stray file; restore a damaged one or re-export the table"
        )
        raise InputError(spec.name, None, problem) from None


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


def _unreadable_footer(path: str) -> str | None:
    """The first data file at ``path`` whose footer pyarrow cannot read, named as _check_files
    names files; looked for only once reading the table has failed."""
    for file in data_files(path):
        if os.path.getsize(file) == 0:
            continue
        try:
            pq.read_metadata(file)
        except (OSError, pa.ArrowException):
            return os.path.relpath(file, os.path.dirname(path))
    return None


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
    _check_case_twins(table.column_names, spec)
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


def _check_case_twins(names: list[str], spec: TableSpec) -> None:
    """Names are matched ignoring case, so two spellings of a contract column leave it ambiguous:
    either could be meant, and picking one silently changes the answer."""
    spellings: dict[str, list[str]] = {}
    for name in names:
        spellings.setdefault(name.lower(), []).append(name)
    for col in spec.columns:
        twins = spellings.get(col.name.lower(), [])
        if len(twins) > 1:  # the same name twice fails reading already: these differ in case
            listed = ", ".join(twins[:-1]) + " and " + twins[-1]
            problem = f"columns {listed} differ only in case (names are matched ignoring case): keep one"
            raise InputError(spec.name, col.name, problem)


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
