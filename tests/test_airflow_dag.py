"""The Airflow DAG (dags/rmqsim_daily.py) in a real Airflow: a DagBag, and one `airflow dags test`
run against local Spark on the sample snapshot.

Airflow lives in its own virtual environment (.venv-airflow, from dags/requirements.txt, built by
`make test`): its pins clash with rmqsim's. Without it these tests skip, unless
RMQSIM_REQUIRE_AIRFLOW is set, as `make test` sets it, so that CI cannot skip them silently.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import ONE_SCENARIO

ROOT = Path(__file__).resolve().parent.parent
DAG_ID = "rmqsim_daily"

DAGBAG = """
import json, sys
from airflow.models import DagBag
bag = DagBag(dag_folder=sys.argv[1])
dag = bag.dags.get("rmqsim_daily")
print(json.dumps({
    "import_errors": {str(k): str(v) for k, v in bag.import_errors.items()},
    "dag_ids": sorted(bag.dags),
    "tasks": {t.task_id: [type(t).__name__, sorted(t.downstream_task_ids)] for t in dag.tasks} if dag else {},
    "schedule": str(dag.schedule) if dag else None,
    "params": sorted(dag.params) if dag else [],
    "heavy": [m for m in ("pyspark", "pandas", "numpy", "pyarrow", "rmqsim") if m in sys.modules],
}))
"""


def _airflow_python() -> Path:
    python = Path(
        os.environ.get("RMQSIM_AIRFLOW_PYTHON", ROOT / ".venv-airflow" / "bin" / "python")
    ).absolute()
    if not python.exists():
        message = f"no Airflow environment at {python}: `make test` builds it"
        if os.environ.get("RMQSIM_REQUIRE_AIRFLOW"):
            pytest.fail(message)
        pytest.skip(message)
    return python


def _env(home: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_RMQSIM_SPARK": json.dumps({"conn_type": "spark", "host": "local[2]"}),
    }
    for name in ("PYTHONPATH", "PYSPARK_PYTHON", "VIRTUAL_ENV"):
        env.pop(name, None)  # the tasks must find their interpreters from the DAG's params
    return env


def test_the_dagbag_loads_the_dag_with_its_tasks_in_order_and_nothing_heavy(tmp_path: Path) -> None:
    python = _airflow_python()
    done = subprocess.run(
        [str(python), "-c", DAGBAG, str(ROOT / "dags")],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    bag = json.loads(done.stdout.strip().splitlines()[-1])
    assert bag["import_errors"] == {}
    assert bag["dag_ids"] == [DAG_ID]
    assert bag["tasks"] == {
        "snapshot": ["_PythonDecoratedOperator", ["simulate"]],
        "simulate": ["SparkSubmitOperator", ["report"]],
        "report": ["BashOperator", []],
    }
    assert bag["schedule"] == "@daily"
    assert {"snapshot_root", "out_root", "dist", "scenarios", "strategies", "python"} <= set(bag["params"])
    assert bag["heavy"] == []  # the scheduler parses the file often


SNAPSHOT_TASK = """
import json, sys
from airflow.models import DagBag
task = DagBag(dag_folder=sys.argv[1]).dags["rmqsim_daily"].get_task("snapshot")
settings = json.loads(sys.argv[2])
outcomes = {}
for case, root in settings["roots"].items():
    try:
        picked = task.python_callable(snapshot_root=root, ds="2026-11-20", **settings["rest"])
        outcomes[case] = {"snapshot": picked["snapshot"]}
    except Exception as e:
        outcomes[case] = {"raised": type(e).__name__, "message": str(e)}
print(json.dumps(outcomes))
"""


def test_the_snapshot_task_fails_when_the_days_snapshot_is_missing(packaged: Path, tmp_path: Path) -> None:
    """The DAG's own snapshot task, from a DagBag: a missing day under a set snapshot_root fails
    it rather than publishing the sample as that day's result; the sample is for an empty root."""
    python = _airflow_python()
    root = tmp_path / "snapshots"
    (root / "2026-11-20" / "topic_queues").mkdir(parents=True)
    (tmp_path / "empty-root").mkdir()
    sample = ROOT / "conf" / "sample_snapshot"
    settings = {
        "roots": {"day present": str(root), "day missing": str(tmp_path / "empty-root"), "no root": ""},
        "rest": {
            "sample_snapshot": str(sample),
            "out_root": str(tmp_path / "runs"),
            "dist": str(packaged),
            "python": sys.executable,
        },
    }
    done = subprocess.run(
        [str(python), "-c", SNAPSHOT_TASK, str(ROOT / "dags"), json.dumps(settings)],
        env=_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcomes["day present"] == {"snapshot": str(root / "2026-11-20")}
    missing = outcomes["day missing"]
    assert missing["raised"] == "FileNotFoundError" and "2026-11-20" in missing["message"], missing
    assert outcomes["no root"] == {"snapshot": str(sample)}


def test_airflow_dags_test_runs_the_dag_on_local_spark(packaged: Path, tmp_path: Path) -> None:
    python = _airflow_python()
    airflow = python.parent / "airflow"
    env = _env(tmp_path / "home")
    migrate = subprocess.run(
        [str(airflow), "db", "migrate"], env=env, capture_output=True, text=True, timeout=300
    )
    assert migrate.returncode == 0, migrate.stdout[-3000:] + migrate.stderr[-3000:]
    out_root = tmp_path / "runs"
    scenarios = tmp_path / "one.yml"
    scenarios.write_text(ONE_SCENARIO)  # the DAG's default, the bundled five, would only add run time
    conf = {
        "dist": str(packaged),
        "out_root": str(out_root),
        "scenarios": str(scenarios),
        "strategies": "AVG,STICKY",
        "python": sys.executable,  # rmqsim and pyspark: this environment
    }
    done = subprocess.run(
        [str(airflow), "dags", "test", DAG_ID, "2026-11-20", "-c", json.dumps(conf)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-5000:]
    assert f"DagRun Finished: dag_id={DAG_ID}" in log and "state=success" in log, log[-5000:]
    run = out_root / "2026-11-20"
    for table in ("assignments", "group_metrics", "movement", "comparison", "summary"):
        assert (run / table).is_dir(), table
    assert (run / "report.html").is_file()  # the report task ran after the simulation
    # The run's conf reached spark-submit: only the two strategies asked for.
    assert {p.name for p in (run / "assignments").glob("scenario=*/strategy=*")} == {
        "strategy=AVG",
        "strategy=STICKY",
    }
