"""Writing a snapshot without Spark: pyarrow tables in the layout of docs/CONTRACT.md, section 1.

Used by the synthetic fleet generator, the mqadmin importer and the tests.
"""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import ArrayType

from rmqsim import schemas


def arrow_table(spec: schemas.TableSpec, columns: dict[str, object]) -> pa.Table:
    fields = {f.name: f for f in spec.schema.fields}
    arrays, names = [], []
    for name, values in columns.items():
        arrays.append(pa.array(values, type=_arrow_type(fields[name].dataType)))
        names.append(name)
    return pa.table(arrays, names=names)


def _arrow_type(spark_type: object) -> pa.DataType:
    if isinstance(spark_type, ArrayType):
        return pa.list_(_arrow_type(spark_type.elementType))
    return {
        schemas.STRING: pa.string(),
        schemas.INT: pa.int32(),
        schemas.LONG: pa.int64(),
        schemas.BOOLEAN: pa.bool_(),
        schemas.DOUBLE: pa.float64(),
        schemas.TIMESTAMP: pa.timestamp("us"),  # Spark's TimestampNTZ: no time zone
    }[spark_type]


def write_snapshot(tables: dict[str, pa.Table], out: str) -> dict[str, int]:
    """Write each table as out/<table>/part-00000.parquet; returns row counts."""
    for name, table in tables.items():
        path = os.path.join(out, name)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        pq.write_table(table, os.path.join(path, "part-00000.parquet"))
    return {name: t.num_rows for name, t in tables.items()}
