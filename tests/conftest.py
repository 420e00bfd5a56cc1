"""Fixtures: one SparkSession for the whole test session (local[2], UI off, UTC), a sample run,
`make package`'s artefacts. The builders of test inputs are in tests/builders.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from rmqsim.session import build_session

    session = build_session(
        app_name="rmqsim-tests",
        master="local[2]",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": "2g",
        },
    )
    yield session  # never stopped or rebuilt by a test


@pytest.fixture(scope="session")
def sample_run(spark, tmp_path_factory) -> Path:
    """Every strategy and the bundled scenarios on the sample snapshot, simulated once for the
    tests that read a run's outputs (the notebook, the HTML report). Tests may add files to it
    (charts/, report.html) but must not change its tables."""
    from rmqsim import config, simulate

    out = tmp_path_factory.mktemp("sample_run") / "out"
    simulate.run(
        spark,
        config.SimulateConfig(
            snapshot=str(config.sample_snapshot()),
            out=str(out),
            strategies=config.parse_strategies("all"),
            scenarios=str(config.sample_scenarios()),
        ),
    )
    return out


@pytest.fixture(scope="session")
def packaged(tmp_path_factory) -> Path:
    """`make package`'s artefacts (scripts/package.py), built once, from outside the source tree."""
    import subprocess

    out = tmp_path_factory.mktemp("dist")
    root = Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, str(root / "scripts" / "package.py"), "--out", str(out)],
        check=True,
        capture_output=True,
        cwd=tmp_path_factory.mktemp("elsewhere"),
        timeout=300,
    )
    return out
