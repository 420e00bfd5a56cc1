"""How a test runs simulate: ``simulated(...)``, on the sink the ``sink`` fixture names
(conftest.py runs every test that takes it once per sink), into a directory of the test's own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, Row, SparkSession

from rmqsim import simulate
from rmqsim.config import SimulateConfig
from tests.builders import make_snapshot


@dataclass(frozen=True)
class Run:
    spark: SparkSession
    out: Path
    result: simulate.RunResult

    def table(self, name: str) -> DataFrame:
        return self.spark.read.parquet(str(self.out / name))

    def rows(self, name: str, where: str = "true") -> list[Row]:
        return self.table(name).where(where).collect()


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
