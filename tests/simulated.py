"""How a test runs simulate: ``simulated(...)``, on the sink the ``sink`` fixture names
(conftest.py runs every test that takes it once per sink), into a directory of the test's own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, Row, SparkSession

from rmqsim import phases, schemas, simulate
from rmqsim.config import SimulateConfig
from rmqsim.reporting import results
from tests.builders import make_snapshot


@dataclass(frozen=True)
class Run:
    spark: SparkSession
    out: Path
    result: simulate.RunResult

    def table(self, name: str) -> DataFrame:
        """Table ``name``, every phase whole (later phases rebuilt from phase 0 and touched/)."""
        return whole(self.spark, self.out, name)

    def rows(self, name: str, where: str = "true") -> list[Row]:
        return self.table(name).where(where).collect()


def whole(spark: SparkSession, out: str | Path, name: str) -> DataFrame:
    """Table ``name`` of a run, every phase of every scenario whole: later phases rebuilt from
    phase 0 and touched/ (docs/CONTRACT.md, section 4), as --full-phases writes them."""
    touched = results.load_touched(out)
    if touched is not None and name in (*phases.PHASED_TABLES, "rejects"):
        if name == "rejects":
            last = phases.last_phases(results.load_table_arrow(out, "summary", ["scenario", "phase"]))
            table = phases.full_rejects(results.load_table_arrow(out, "rejects"), touched, last)
        else:
            table = results.phase_table(out, name)
        return spark.createDataFrame(table.to_pandas(), schema=schemas.OUTPUTS[name].schema)
    return spark.read.parquet(str(Path(out) / name))


def simulated(
    spark: SparkSession,
    where: Path,
    *,
    sink: str,
    snapshot: str | Path | None = None,
    tables: Mapping[str, object] | None = None,
    scenarios: str | None = None,
    strategies: Sequence[str] | None = ("AVG",),
    name: str = "out",
    **config: object,
) -> Run:
    """simulate over ``snapshot`` (a path), or one written from ``tables`` (make_snapshot's
    keywords), with ``scenarios`` (a scenarios file's text, or None), into ``where/name``.
    ``strategies`` None: each group's configured one."""
    if snapshot is None:
        snapshot = make_snapshot(where / f"{name}-snapshot", **(tables or {}))
    path = None
    if scenarios is not None:
        path = where / f"{name}-scenarios.yml"
        path.write_text(scenarios)
    out = where / name
    result = simulate.run(
        spark,
        SimulateConfig(
            snapshot=str(snapshot),
            out=str(out),
            strategies=None if strategies is None else tuple(strategies),
            scenarios=None if path is None else str(path),
            sink=sink,
            **config,
        ),
    )
    return Run(spark, out, result)
