"""How a table lies on disk: a directory of Parquet part files, one subdirectory per partition
(``scenario=x/strategy=AVG``), as Spark lays out a partitioned table, so that Spark, pyarrow and
pandas read what either sink wrote."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import combined

SUCCESS = "_SUCCESS"  # a table is complete: every file of it is in place

# The characters a partition directory's value writes as %XX: control characters and those that
# mean something in a path, a URI or a glob. (Spark's own list, on Linux: Spark reads pyarrow's
# directories back as the values they were.)
_ESCAPED = frozenset(map(chr, range(1, 32))) | frozenset("\"#%'*/:=?\\\x7f{[]^")


def _escaped(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def partition_directory(keys: Iterable[tuple[str, str]]) -> str:
    """The directory, relative to its table's, that holds a partition's rows:
    ``scenario=x/strategy=AVG``, each value escaped."""
    return "/".join(f"{column}={_escaped(value)}" for column, value in keys)


def part_file(task: int) -> str:
    """The name of the file a task (or, for task 0, the driver) writes into each partition."""
    return f"part-{task:05d}.snappy.parquet"


def parquet_options(schema: pa.Schema) -> dict:
    """How a part file of ``schema`` is encoded: snappy, and dictionary pages for every column
    but the floating-point ones. Rates and ratios seldom repeat: the writer would hash each value
    only to give up on the dictionary and write it plain."""
    kept = [path for field in schema for path, type in _leaves(field) if not pa.types.is_floating(type)]
    return {"compression": "snappy", "use_dictionary": kept}


def _leaves(field: pa.Field, parent: str = "") -> Iterator[tuple[str, pa.DataType]]:
    """The Parquet column paths under ``field`` (as pyarrow names them), with their types."""
    path, type = parent + field.name, field.type
    if pa.types.is_list(type) or pa.types.is_large_list(type):
        yield from _leaves(pa.field("element", type.value_type), path + ".list.")
    elif pa.types.is_struct(type):
        for child in type:
            yield from _leaves(child, path + ".")
    elif pa.types.is_map(type):
        yield from _leaves(pa.field("key", type.key_type), path + ".key_value.")
        yield from _leaves(pa.field("value", type.item_type), path + ".key_value.")
    else:
        yield path, type


def partitions(rows: pa.Table | pa.RecordBatch, columns: Sequence[str]) -> Iterator[tuple[tuple, pa.Table]]:
    """``rows`` split by the values of ``columns`` (strings), each part in its input order."""
    encoded = [combined(pc.dictionary_encode(rows.column(c))) for c in columns]
    code = np.zeros(rows.num_rows, dtype=np.int64)
    for e in encoded:
        code = code * len(e.dictionary) + e.indices.to_numpy(zero_copy_only=False)
    # The codes are few and small (a product of a few distinct values): counted, not sorted.
    present = np.flatnonzero(np.bincount(code)) if len(code) else code
    for c in present:
        key, rest = [], int(c)
        for e in reversed(encoded):
            rest, i = divmod(rest, len(e.dictionary))
            key.append(e.dictionary[i].as_py())
        yield tuple(reversed(key)), rows if len(present) == 1 else rows.filter(pa.array(code == c))
