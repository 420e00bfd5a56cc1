"""A run's output directory, published all at once.

Tables are written into a staging directory beside the destination; only when every table is
complete is the staging directory renamed into place, so a killed run leaves the previous result
untouched. Renames are atomic on a local or POSIX-mounted file system; other URIs (hdfs://, s3a://)
and every path through Spark Connect (the server's file system) are written in place, which the
log says.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Sequence
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from rmqsim.arrays import combined
from rmqsim.errors import InputError

log = logging.getLogger(__name__)
MODES = ("overwrite", "error")
RUN_MARK = "summary"  # every run writes it


# The characters Spark escapes as %XX in a partition directory's value (ExternalCatalogUtils;
# on Linux): control characters and those that mean something in a path, a URI or a glob.
_ESCAPED = frozenset(map(chr, range(1, 32))) | frozenset("\"#%'*/:=?\\\x7f{[]^")


def _escaped(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def partition_directory(keys: Iterable[tuple[str, str]]) -> str:
    """The directory, relative to its table's, that Spark writes a partition's rows to:
    ``scenario=x/strategy=AVG``, each value escaped as Spark escapes it."""
    return "/".join(f"{column}={_escaped(value)}" for column, value in keys)


def partitions(rows: pa.Table | pa.RecordBatch, columns: Sequence[str]) -> Iterator[tuple[tuple, pa.Table]]:
    """``rows`` split by the values of ``columns`` (strings), each part in its input order."""
    encoded = [combined(pc.dictionary_encode(rows.column(c))) for c in columns]
    code = np.zeros(rows.num_rows, dtype=np.int64)
    for e in encoded:
        code = code * len(e.dictionary) + e.indices.to_numpy(zero_copy_only=False)
    for c in np.unique(code):
        key, rest = [], int(c)
        for e in reversed(encoded):
            rest, i = divmod(rest, len(e.dictionary))
            key.append(e.dictionary[i].as_py())
        yield tuple(reversed(key)), rows.filter(pa.array(code == c))


def _local_path(out: str) -> str | None:
    """``out`` as a local path (file: URIs included), or None for another file system."""
    parsed = urlparse(out)
    if parsed.scheme not in ("", "file"):
        return None
    return parsed.path if out.startswith("file:") else out


class RunOutput:
    @staticmethod
    def check_mode(out: str, mode: str) -> None:
        """--mode error refuses an existing destination, and overwrite replaces only an earlier
        run or an empty directory (never, say, the snapshot given as --out); checked before any work."""
        if mode not in MODES:
            raise InputError("arguments", "--mode", f"expected one of {', '.join(MODES)}, got {mode!r}")
        final = _local_path(out)
        if final is None or not os.path.exists(final):
            return
        if mode == "error":
            raise InputError("arguments", "--out", f"{out} exists and --mode is error")
        if not os.path.isdir(final) or (
            os.listdir(final) and not os.path.isdir(os.path.join(final, RUN_MARK))
        ):
            raise InputError(
                "arguments",
                "--out",
                f"{out} exists and is not an rmqsim output directory (no {RUN_MARK}/): "
                "overwrite replaces only an earlier run; choose another --out or remove it",
            )

    def __init__(self, out: str, *, mode: str = "overwrite", remote: bool = False) -> None:
        """``remote``: written by a Spark Connect server, whose file system ``out`` is on."""
        self.out = out.rstrip("/")
        final = None if remote else _local_path(self.out)
        if not remote:
            self.check_mode(out, mode)
        self.local = final is not None
        self._final = final or self.out
        if self.local:
            parent = os.path.dirname(os.path.abspath(self._final))
            os.makedirs(parent, exist_ok=True)
            self.staging = os.path.join(
                parent, f".{os.path.basename(self._final)}.tmp-{uuid.uuid4().hex[:8]}"
            )
        else:
            log.warning("%s is not a path of this machine: tables are written in place, not atomically", out)
            self.staging = self.out

    def table(self, name: str) -> str:
        return f"{self.staging}/{name}"

    def write_arrow(self, table: pa.Table, name: str, partition_by: Sequence[str] = ()) -> None:
        """``table`` as table ``name``, laid out as Spark lays out a table of one task: a directory
        with _SUCCESS and one Parquet file, or one in each partition's directory. Local outputs
        only: it is written by this process."""
        if not self.local:
            raise ValueError(f"{self.out} is not on this machine: write {name} through Spark")
        path = self.table(name)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        parts = partitions(table, partition_by) if partition_by else [((), table)]
        for key, rows in parts:
            where = os.path.join(path, partition_directory(zip(partition_by, key)))
            os.makedirs(where, exist_ok=True)
            pq.write_table(rows.drop_columns(list(partition_by)), os.path.join(where, "part-00000.parquet"))
        open(os.path.join(path, "_SUCCESS"), "w").close()

    def read_arrow(
        self, name: str, schema: pa.Schema, columns: Sequence[str], partition_by: Sequence[str] = ()
    ) -> pa.Table:
        """``columns`` of a table this run wrote, with ``schema``'s types, read by this process.
        Local outputs only."""
        if not self.local:
            raise ValueError(f"{self.out} is not on this machine: read {name} through Spark")
        keys = pa.schema([schema.field(c) for c in partition_by])
        hive = ds.partitioning(keys, flavor="hive") if partition_by else None
        # Hidden and _underscore files (_SUCCESS, Spark's .crc files) are not data: left out.
        found = ds.dataset(self.table(name), schema=schema, format="parquet", partitioning=hive)
        return found.to_table(columns=list(columns))

    def publish(self) -> str:
        """Move the finished run into place, replacing any previous one."""
        if not self.local:
            return self.out
        old = None
        if os.path.exists(self._final):
            old = f"{self.staging}.old"
            os.rename(self._final, old)
        os.rename(self.staging, self._final)
        if old:
            shutil.rmtree(old, ignore_errors=True)
        return self.out

    def abandon(self) -> None:
        if self.local:
            shutil.rmtree(self.staging, ignore_errors=True)
