"""Text as the snapshot's checks and routes read it: blank values, names compared trimmed and in
any case, and a row written out as JSON for a reject."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import combined


def blank(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Whether each value is null, empty or only white space (Unicode's)."""
    return pc.fill_null(pc.equal(pc.utf8_trim_whitespace(combined(values)), ""), True)


def normalised(names: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A name from the groups or consumers table as it is compared: trimmed of white space, in
    upper case (Python's: ß becomes SS). Names that are not all ASCII are upper-cased once per
    distinct name."""
    trimmed = pc.utf8_trim_whitespace(combined(names))
    if pc.all(pc.string_is_ascii(trimmed)).as_py() is not False:  # null: no name at all
        return pc.ascii_upper(trimmed)
    encoded = pc.dictionary_encode(trimmed)
    upper = pa.array([n.upper() for n in encoded.dictionary.to_pylist()], pa.string())
    return upper.take(encoded.indices)


def row_json(table: pa.Table) -> pa.Array:
    """Each row as a JSON object of every column, in column order, null as null (json.dumps,
    compact, non-ASCII text as it is). A double that is not a number, or infinite, is written as
    the string "NaN", "Infinity" or "-Infinity", which JSON has no number for."""
    rows = [{k: _json_value(v) for k, v in row.items()} for row in table.to_pylist()]
    return pa.array([json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows], pa.string())


def _json_value(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value
