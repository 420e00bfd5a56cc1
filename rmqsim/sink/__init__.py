"""One way out: every table of a run is written, and read back, through the run's sink, chosen once.

- ArrowSink (sink.arrow_sink): a local master and a path of this machine; the stage's tasks and
  the driver write with pyarrow.
- SparkSink (sink.spark_sink): anywhere else (a cluster, Spark Connect, hdfs:// or s3a://); Spark
  writes.

Both write every table of schemas.OUTPUTS in the same layout, with the same columns and types, and
neither makes a table visible before every row of it is written (sink.directory publishes the run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import pyarrow as pa
from pyspark.sql import SparkSession

from rmqsim import session
from rmqsim.sink.arrow_sink import ArrowSink
from rmqsim.sink.directory import RunDirectory
from rmqsim.sink.spark_sink import SparkSink
from rmqsim.stage.tasks import StageInput

KINDS = ("arrow", "spark")


class Sink(Protocol):
    kind: str
    directory: RunDirectory
    appends: bool  # whether run_stage and write take append=True, and drop is there

    def run_stage(self, stage: StageInput, tables: Sequence[str], *, append: bool = False) -> None:
        """The allocation stage over ``stage``'s routes, its ``tables`` (of schemas.STAGE_TABLES)
        written; each sink hands the routes to the tasks its own way."""

    def collect_stage(self, stage: StageInput, tables: Sequence[str]) -> dict[str, pa.Table]:
        """The stage's ``tables`` over ``stage``'s routes, back in the driver, never in the run
        (a sweep's elements: rmqsim.impact)."""

    def write(self, name: str, table: pa.Table, *, append: bool = False) -> None:
        """A table the driver holds, written as table ``name`` of schemas.OUTPUTS."""

    def drop(self, name: str) -> None:
        """A table written before removed from the run (only where ``appends``)."""

    def read(
        self, name: str, columns: Sequence[str] = (), where: Mapping[str, object] | None = None
    ) -> pa.Table:
        """A table this sink wrote (or found), as Arrow with its schema's types."""

    def publish(self) -> str: ...

    def abandon(self) -> None: ...


def open_sink(
    spark: SparkSession, out: str, *, mode: str = "overwrite", staged: bool = True, kind: str | None = None
) -> Sink:
    """The sink for a run into ``out``: ``kind`` if given (``arrow`` only where it can write),
    else the ArrowSink where the output and the executors are on this machine, the SparkSink
    elsewhere. ``staged``: written beside ``out`` and published at once (sink.directory)."""
    directory = RunDirectory(out, mode=mode, remote=session.is_remote(spark), staged=staged)
    here = directory.local and session.executors_here(spark)
    if kind not in (None, *KINDS):
        raise ValueError(f"sink {kind!r}: expected one of {', '.join(KINDS)}")
    if kind == "arrow" and not here:
        raise ValueError(f"the arrow sink writes only local outputs under a local master, not {out}")
    if kind == "arrow" or (kind is None and here):
        return ArrowSink(spark, directory)
    return SparkSink(spark, directory)
