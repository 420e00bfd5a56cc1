"""The packaged job as a cluster runs it: `make package`'s artefacts through the real spark-submit.

spark-submit runs from a directory outside the source tree with the --py-files zip, and the job
must have imported rmqsim from that zip: a module missing from the package fails the run.
"""

from __future__ import annotations

import shutil
import sys
import zipfile
from pathlib import Path

import pyarrow.dataset as ds

from tests.builders import ONE_SCENARIO
from tests.processes import ROOT, WHEEL, ZIP, spark_env, submit_job


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
    code, log = submit_job(
        packaged,
        *("--snapshot", "snapshot", "--out", "out", "--scenarios", "one.yml", "--strategies", "AVG,STICKY"),
        "--verbose",  # Spark's resolved configuration is logged at DEBUG
        master="local[2]",
        options=[
            "--properties-file",
            str(packaged / "spark-local.properties"),
            "--conf",
            "spark.ui.enabled=false",
        ],
        env=spark_env(PYSPARK_PYTHON=sys.executable),
        cwd=work,
        timeout=600,
    )
    assert code == 0, log[-4000:]
    assert f"from {packaged / ZIP}/rmqsim/__init__.py" in log  # not the checkout's rmqsim
    # The resolved configuration: spark-submit's master and the profile's settings.
    assert "  spark.master=local[2]" in log and "  spark.sql.shuffle.partitions=8" in log
    summary = ds.dataset(work / "out" / "summary", format="parquet").to_table().to_pandas()
    assert set(summary.strategy) == {"AVG", "STICKY"}
    # The sweep's two elements, each ranked per strategy; both within --sweep-detail's 3, so their
    # phases are in the tables too.
    sweep = ds.dataset(work / "out" / "sweep", format="parquet").to_table().to_pandas()
    assert sorted(zip(sweep.element, sweep.strategy)) == [
        (b, s) for b in ("broker-a", "broker-c") for s in ("AVG", "STICKY")
    ]
    assert set(sweep["rank"]) == {1, 2} and sweep.detailed.all()
    assert set(summary.scenario) == {"broker-b-down", "broker-loss/broker-a", "broker-loss/broker-c"}
    for table in ("assignments", "group_metrics", "consumer_load", "movement", "comparison", "rejects"):
        assert (work / "out" / table).is_dir(), table


def test_a_wheel_in_py_files_stops_the_job_before_any_spark_work(packaged: Path, tmp_path: Path) -> None:
    """Spark ships .zip, .egg and .py files to executors, not .whl: the job says so and exits 2
    rather than failing deep in a task on a cluster (on local[2] the wheel would even work)."""
    code, log = submit_job(
        packaged,
        *("--snapshot", str(ROOT / "conf" / "sample_snapshot"), "--out", str(tmp_path / "out")),
        master="local[2]",
        py_files=WHEEL,
        env=spark_env(PYSPARK_PYTHON=sys.executable),
        cwd=tmp_path,
        timeout=300,
    )
    assert code == 2, log[-3000:]
    assert "--py-files has a wheel" in log and WHEEL in log
    assert "rmqsim-VERSION.zip" in log and "pip install the wheel" in log
    assert not (tmp_path / "out").exists()  # nothing ran
