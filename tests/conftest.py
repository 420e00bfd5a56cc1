"""Fixtures: one SparkSession for the whole test session of each pytest-xdist worker (local[2], UI
off, UTC), the demo's run, `make package`'s artefacts. The builders of test inputs are in
tests/builders.py."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rmqsim.sink import KINDS

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# Every JVM the tests start (this session's, and spark-submit's, Spark Connect's, a standalone
# cluster's) compiles with C1 alone: their work is many small queries, each new generated code,
# and C2 spent half the JVM's CPU compiling it (52 of 95 CPU-s over test_scenarios, test_capacity
# and test_broker_balancing; with C1 alone, 79 CPU-s against 129 for the machine, 68 s against
# 79 s of wall time). Runs outside the tests keep the JVM's default.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")


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


@pytest.fixture(params=KINDS)
def sink(request) -> str:
    """Who writes a test's run (rmqsim.sink): every simulate-level test runs on both."""
    return request.param


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """`rmqsim demo --out DIR/out` run once as a user runs it, from a directory outside the source
    tree (DIR): every strategy and the bundled scenarios on the sample snapshot. Its process, for
    test_cli's look at what it printed; its tables, for the tests that read a run (sample_run).
    Once for the whole session: under xdist, the first worker to ask runs it, in the folder the
    workers share, and the others wait for it and read what it printed."""
    from tests.processes import run_cli

    if "PYTEST_XDIST_WORKER" not in os.environ:
        where = tmp_path_factory.mktemp("demo")
        return where / "out", run_cli("demo", "--out", str(where / "out"), cwd=where, timeout=900)
    where = tmp_path_factory.getbasetemp().parent / "demo"
    printed = where.with_name("demo.json")
    with open(where.with_name("demo.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not printed.exists():
            where.mkdir(exist_ok=True)  # left by a worker whose run raised: run it again
            done = run_cli("demo", "--out", str(where / "out"), cwd=where, timeout=900)
            fields = {
                "args": done.args,
                "returncode": done.returncode,
                "stdout": done.stdout,
                "stderr": done.stderr,
            }
            partial = printed.with_suffix(".tmp")
            partial.write_text(json.dumps(fields))
            partial.rename(printed)
    return where / "out", subprocess.CompletedProcess(**json.loads(printed.read_text()))


@pytest.fixture(scope="session")
def sample_run(demo_run) -> Path:
    """The demo's outputs, for the tests that read a run's tables (the notebook, the HTML report,
    the results API, the Spark Connect comparison). Read only: the workers share it (a test
    that writes beside the tables, as the HTML report does, writes into a copy)."""
    out, done = demo_run
    assert done.returncode == 0, done.stderr[-3000:]
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
