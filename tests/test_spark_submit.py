"""The packaged job as a cluster runs it: `make package`'s artefacts through the real spark-submit.

spark-submit runs from a directory outside the source tree with the --py-files zip, and the job
must have imported rmqsim from that zip: a module missing from the package fails the run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow.dataset as ds

from tests.builders import ONE_SCENARIO
from tests.processes import SPARK_HOME, WHEEL, ZIP, spark_env

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "rmqsim").rglob("*.py")}


def test_the_zip_and_the_wheel_hold_every_module_of_the_package(packaged: Path) -> None:
    assert set(zipfile.ZipFile(packaged / ZIP).namelist()) == _modules()
    assert _modules() <= set(zipfile.ZipFile(packaged / WHEEL).namelist())
    for name in ("simulate.py", "spark-local.properties", "spark-cluster.properties", "scenarios/sample.yml"):
        assert (packaged / name).is_file(), name
    # The profiles' spark.* keys, as spark-submit's --properties-file reads them.
    assert "spark.sql.shuffle.partitions 8" in (packaged / "spark-local.properties").read_text().splitlines()


def test_spark_submit_runs_the_packaged_job_from_outside_the_source_tree(
    packaged: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    shutil.copytree(ROOT / "conf" / "sample_snapshot", work / "snapshot")
    # One scenario of one step: enough for every table, and the bundled file's five would only
    # add run time (make package's own copy of it is checked above).
    (work / "one.yml").write_text(ONE_SCENARIO)
    env = spark_env(PYSPARK_PYTHON=sys.executable)
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master",
        "local[2]",
        "--properties-file",
        str(packaged / "spark-local.properties"),
        "--conf",
        "spark.ui.enabled=false",
        "--py-files",
        str(packaged / ZIP),
        str(packaged / "simulate.py"),
        "--snapshot",
        "snapshot",
        "--out",
        "out",
        "--scenarios",
        "one.yml",
        "--strategies",
        "AVG,STICKY",
    ]
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    assert f"from {packaged / ZIP}/rmqsim/__init__.py" in log  # not the checkout's rmqsim
    # The resolved configuration: spark-submit's master and the profile's settings.
    assert "  spark.master=local[2]" in log and "  spark.sql.shuffle.partitions=8" in log
    summary = ds.dataset(work / "out" / "summary", format="parquet").to_table().to_pandas()
    assert set(summary.strategy) == {"AVG", "STICKY"}
    assert set(summary.scenario) == {"broker-b-down"}
    for table in ("assignments", "group_metrics", "consumer_load", "movement", "comparison", "rejects"):
        assert (work / "out" / table).is_dir(), table


def test_a_wheel_in_py_files_stops_the_job_before_any_spark_work(packaged: Path, tmp_path: Path) -> None:
    """Spark ships .zip, .egg and .py files to executors, not .whl: the job says so and exits 2
    rather than failing deep in a task on a cluster (on local[2] the wheel would even work)."""
    env = spark_env(PYSPARK_PYTHON=sys.executable)
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master",
        "local[2]",
        "--py-files",
        str(packaged / WHEEL),
        str(packaged / "simulate.py"),
        "--snapshot",
        str(ROOT / "conf" / "sample_snapshot"),
        "--out",
        str(tmp_path / "out"),
    ]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    log = done.stdout + done.stderr  # spark-submit prints its Python's stderr on its stdout
    assert done.returncode == 2, log[-3000:]
    assert "--py-files has a wheel" in log and WHEEL in log
    assert "rmqsim-VERSION.zip" in log and "pip install the wheel" in log
    assert not (tmp_path / "out").exists()  # nothing ran
