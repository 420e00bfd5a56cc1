"""rmqsim, daily: pick up the day's fleet snapshot, simulate it with spark-submit, write the report.

    snapshot  ->  simulate (SparkSubmitOperator)  ->  report (charts and report.html)

Every setting is a DAG param, which an Airflow Variable of the same name prefixed ``rmqsim_``
overrides (``rmqsim_snapshot_root``, ``rmqsim_out_root``, ...), and a triggered run's conf
overrides both. The defaults run this repository's sample locally: `make package` builds dist/,
`make demo`/`make test` build .venv, and the Spark connection ``rmqsim_spark`` names the master
(``AIRFLOW_CONN_RMQSIM_SPARK='{"conn_type": "spark", "host": "local[2]"}'``; on a cluster, its
host is ``yarn``, ``k8s://https://...`` or ``spark://host:7077``).

Nothing heavy is imported here: the scheduler parses this file often. rmqsim and Spark run in
the processes the tasks start.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, Param, task

REPO = Path(__file__).resolve().parent.parent

DEFAULTS = {
    # The day's snapshot is SNAPSHOT_ROOT/YYYY-MM-DD (a missing day fails the task); empty: the sample.
    "snapshot_root": "",
    "sample_snapshot": str(REPO / "conf" / "sample_snapshot"),
    "out_root": str(REPO / "out" / "airflow"),  # a run writes OUT_ROOT/YYYY-MM-DD
    "dist": str(REPO / "dist"),  # `make package` output
    "scenarios": str(REPO / "conf" / "scenarios" / "sample.yml"),
    "strategies": "all",
    "spark_profile": "local",  # dist/spark-PROFILE.properties
    "python": str(REPO / ".venv" / "bin" / "python"),  # has rmqsim, pyspark and its deps installed
}


def setting(name: str) -> str:
    """A param, unless the Airflow Variable rmqsim_NAME is set (read when the task runs)."""
    return f"{{{{ var.value.get('rmqsim_{name}', params.{name}) }}}}"


@task
def snapshot(
    snapshot_root: str, sample_snapshot: str, out_root: str, dist: str, python: str, ds=None
) -> dict:
    """The day's snapshot directory (the sample when snapshot_root is empty), where to write, the
    packaged job's zip, and the SPARK_HOME of the Python that runs rmqsim (pyspark's bundled Spark).

    A missing day fails the task, so Airflow's retries and alerts take over: publishing the sample
    as that day's result would pass for a simulated fleet."""
    import subprocess

    chosen = Path(snapshot_root) / ds if snapshot_root else Path(sample_snapshot)
    if snapshot_root and not chosen.is_dir():
        raise FileNotFoundError(f"no snapshot for {ds}: {chosen} is not a directory")
    if not (chosen / "topic_queues").is_dir():
        raise FileNotFoundError(f"{chosen} is not an rmqsim snapshot (no topic_queues/)")
    spark_home = subprocess.run(
        [python, "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    zips = sorted(Path(dist).glob("rmqsim-*.zip"))
    if not zips:
        raise FileNotFoundError(f"no rmqsim-*.zip in {dist}: run `make package`")
    return {
        "snapshot": str(chosen),
        "out": str(Path(out_root) / ds),
        "py_files": str(zips[-1]),
        "spark_home": spark_home,
    }


with DAG(
    dag_id="rmqsim_daily",
    description="RocketMQ consumer-queue allocation: every strategy and scenario on the day's snapshot",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    params={name: Param(value, type="string") for name, value in DEFAULTS.items()},
    tags=["rmqsim", "rocketmq", "spark"],
) as dag:
    picked = snapshot(
        snapshot_root=setting("snapshot_root"),
        sample_snapshot=setting("sample_snapshot"),
        out_root=setting("out_root"),
        dist=setting("dist"),
        python=setting("python"),
    )
    run = "ti.xcom_pull(task_ids='snapshot')"
    simulate = SparkSubmitOperator(
        task_id="simulate",
        conn_id="rmqsim_spark",
        name="rmqsim-{{ ds }}",
        application=setting("dist") + "/simulate.py",
        py_files=f"{{{{ {run}['py_files'] }}}}",
        properties_file=setting("dist") + "/spark-" + setting("spark_profile") + ".properties",
        application_args=[
            "--snapshot",
            f"{{{{ {run}['snapshot'] }}}}",
            "--out",
            f"{{{{ {run}['out'] }}}}",
            "--scenarios",
            setting("scenarios"),
            "--strategies",
            setting("strategies"),
        ],
        env_vars={
            # spark-submit is looked up on this PATH: pyspark's own, unless the worker has one.
            "PATH": f"{{{{ {run}['spark_home'] }}}}/bin:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "SPARK_HOME": f"{{{{ {run}['spark_home'] }}}}",
            "PYSPARK_PYTHON": setting("python"),
            "PYSPARK_DRIVER_PYTHON": setting("python"),
        },
    )
    report = BashOperator(
        task_id="report",
        bash_command=f'"{setting("python")}" -m rmqsim.cli report --run "{{{{ {run}["out"] }}}}" --html',
    )
    picked >> simulate >> report
