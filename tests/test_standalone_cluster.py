"""The packaged job on a real Spark standalone cluster: a master and one worker on 127.0.0.1,
started from the installed pyspark, and `dist/simulate.py` spark-submitted to it with the
--py-files zip. The executors run in the worker's JVMs with their own Python workers, whose
Python (like the driver's here) has pyarrow, pandas and numpy but not rmqsim: it comes from the zip.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rmqsim import config, simulate
from tests.builders import ONE_SCENARIO
from tests.processes import (
    SPARK_HOME,
    ZIP,
    free_port,
    python_without_rmqsim,
    same_tables,
    spark_env,
    submit_job,
    wait_for,
)

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """(spark://127.0.0.1:PORT, a Python without rmqsim): a master and a 2-core, 2 GiB worker."""
    home = tmp_path_factory.mktemp("standalone")
    python = python_without_rmqsim(home / "python")
    port = free_port()
    env = spark_env(SPARK_LOCAL_IP="127.0.0.1")
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    url = f"spark://127.0.0.1:{port}"
    started = []
    try:
        with open(home / "master.log", "w") as log:
            master = [spark_class, MASTER, "--host", "127.0.0.1", "--port", str(port)]
            master += ["--webui-port", str(free_port())]
            started.append(subprocess.Popen(master, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=home))
        wait_for(home / "master.log", "New state: ALIVE")
        with open(home / "worker.log", "w") as log:
            worker = [spark_class, WORKER, url, "--host", "127.0.0.1", "--cores", "2", "--memory", "2g"]
            worker += ["--webui-port", str(free_port()), "--work-dir", str(home / "work")]
            started.append(subprocess.Popen(worker, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=home))
        wait_for(home / "master.log", "Registering worker")
        yield url, python
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=60)


def test_spark_submit_to_a_standalone_cluster_gives_the_tables_of_a_local_run(
    standalone, packaged: Path, spark, tmp_path: Path
) -> None:
    url, python = standalone
    (tmp_path / "one.yml").write_text(ONE_SCENARIO)
    args = ["--snapshot", str(config.sample_snapshot()), "--scenarios", str(tmp_path / "one.yml")]
    args += ["--strategies", "AVG,STICKY,CONSISTENT_HASH"]
    code, log = submit_job(
        packaged,
        *args,
        *("--out", str(tmp_path / "cluster")),
        master=url,
        options=[
            *("--properties-file", str(packaged / "spark-cluster.properties")),
            # The cluster profile's 4g executors would not fit this worker.
            *("--conf", "spark.executor.memory=1g", "--conf", "spark.executor.memoryOverhead=512m"),
            *("--conf", "spark.ui.enabled=false"),
        ],
        env=spark_env(
            SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python)
        ),
        cwd=tmp_path,
        timeout=900,
    )
    assert code == 0, log[-5000:]
    assert f"from {packaged / ZIP}/rmqsim/__init__.py" in log  # the driver's rmqsim: the zip
    assert f"spark.master={url}" in log
    simulate.run(
        spark,
        config.SimulateConfig(
            snapshot=str(config.sample_snapshot()),
            out=str(tmp_path / "local"),
            strategies=("AVG", "STICKY", "CONSISTENT_HASH"),
            scenarios=str(tmp_path / "one.yml"),
        ),
    )
    compared = same_tables(tmp_path / "local", tmp_path / "cluster")
    assert {"assignments", "movement", "comparison"} <= set(compared)
