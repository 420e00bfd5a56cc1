"""rmqsim through Spark Connect: a real server started from the installed pyspark, whose Python
workers have pyarrow, pandas and numpy but not rmqsim (the client ships it as an artifact).

The bundled sample and scenarios, every strategy, run through the server must give the same tables
as the classic local run of the same input (conftest's sample_run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rmqsim import config
from tests.processes import SPARK_HOME, free_port, python_without_rmqsim, same_tables, spark_env, wait_for


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """sc://localhost:PORT: sbin/start-connect-server.sh on local[2], logs and pid in a temp folder."""
    home = tmp_path_factory.mktemp("connect")
    port = free_port()
    env = spark_env(
        PYSPARK_PYTHON=str(python_without_rmqsim(home / "python")),
        SPARK_LOG_DIR=str(home / "logs"),
        SPARK_PID_DIR=str(home / "pid"),
        SPARK_IDENT_STRING="rmqsim-test",
    )
    start = [
        str(SPARK_HOME / "sbin" / "start-connect-server.sh"),
        "--master",
        "local[2]",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.driver.memory=1g",
    ]
    subprocess.run(start, env=env, check=True, capture_output=True, cwd=home, timeout=120)
    try:
        (log,) = (home / "logs").glob("*SparkConnectServer*.out")
        wait_for(log, "Spark Connect server started")
        yield f"sc://localhost:{port}"
    finally:
        stop = SPARK_HOME / "sbin" / "stop-connect-server.sh"
        subprocess.run([str(stop)], env=env, capture_output=True, cwd=home, timeout=120)


def test_simulate_through_spark_connect_writes_the_tables_of_a_local_run(
    connect_server: str, sample_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    command = [
        str(Path(sys.executable).parent / "rmqsim"),
        "simulate",
        "--remote",
        connect_server,
        "--snapshot",
        str(config.sample_snapshot()),
        "--scenarios",
        str(config.sample_scenarios()),
        "--strategies",
        "all",
        "--out",
        str(out),  # the server's file system: here the same machine
    ]
    done = subprocess.run(command, env=spark_env(), capture_output=True, text=True, cwd=tmp_path, timeout=600)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    assert f"through Spark Connect at {connect_server}" in log
    assert {"assignments", "movement", "split_brain"} <= set(same_tables(sample_run, out))
