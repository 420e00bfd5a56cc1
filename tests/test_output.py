"""Runs are deterministic and published whole: a failed run leaves the previous result intact."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from rmqsim import simulate
from rmqsim.config import SimulateConfig, sample_snapshot
from rmqsim.errors import InputError
from rmqsim.output import RunOutput

TABLES = ("assignments", "group_metrics", "consumer_load", "rejects", "summary")


def _config(out, **kw) -> SimulateConfig:
    return SimulateConfig(
        snapshot=str(sample_snapshot()),
        out=str(out),
        strategies=("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG"),
        **kw,
    )


def test_same_input_same_tables(spark, tmp_path) -> None:
    simulate.run(spark, _config(tmp_path / "a"))
    simulate.run(spark, _config(tmp_path / "b", partitions=3))  # another task layout, same answer
    for table in TABLES:
        a = spark.read.parquet(str(tmp_path / "a" / table))
        b = spark.read.parquet(str(tmp_path / "b" / table))
        assert_df_equality(a, b, ignore_row_order=True, ignore_column_order=True)


def test_a_run_that_fails_midway_leaves_the_previous_result(spark, tmp_path, monkeypatch) -> None:
    out = tmp_path / "out"
    simulate.run(spark, _config(out))
    before = sorted(p.relative_to(out) for p in out.rglob("*.parquet"))

    real_write = simulate._write

    def fail_on_metrics(output, df, name, *by):
        if name == "group_metrics":
            raise RuntimeError("killed")
        real_write(output, df, name, *by)

    monkeypatch.setattr(simulate, "_write", fail_on_metrics)
    with pytest.raises(RuntimeError, match="killed"):
        simulate.run(spark, _config(out))
    assert sorted(p.relative_to(out) for p in out.rglob("*.parquet")) == before
    assert not list(tmp_path.glob(".out.tmp-*"))  # the half-written staging directory is gone


def test_mode_error_refuses_an_existing_destination(tmp_path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(InputError, match="exists and --mode is error"):
        RunOutput(str(tmp_path / "out"), mode="error")
