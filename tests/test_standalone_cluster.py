"""The packaged job on a real Spark standalone cluster: a master and two workers, on 127.0.0.1 and
127.0.0.2 (two hosts to Spark, so that a speculative copy of a task may run: Spark never runs two
attempts of a task on one host), started from the installed pyspark, and `dist/simulate.py`
spark-submitted to it with the --py-files zip. The executors run in the workers' JVMs with their
own Python workers, whose Python (like the driver's here) has pyarrow, pandas and numpy but not
rmqsim: it comes from the zip.

Every run here must give exactly the tables of a local run of the same input: one where Spark runs
speculative copies of tasks, and one whose executor is killed while its Python workers run the
allocation stage. Neither may leave a task attempt or a temporary file in or beside its output.
"""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path

import pytest

from rmqsim import config, simulate
from tests.builders import ONE_SCENARIO
from tests.processes import (
    SPARK_HOME,
    ZIP,
    free_port,
    kill_first_executor_running_python,
    python_without_rmqsim,
    same_tables,
    spark_env,
    submit_job,
    wait_for,
)

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
HOSTS = ("127.0.0.1", "127.0.0.2")
STRATEGIES = "AVG,STICKY"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """(spark://127.0.0.1:PORT, a Python without rmqsim, the folder of the workers' work folders):
    a master and a 1-core, 2 GiB worker on each of HOSTS."""
    home = tmp_path_factory.mktemp("standalone")
    python = python_without_rmqsim(home / "python")
    port = free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    url = f"spark://127.0.0.1:{port}"
    started = []
    work = [home / f"work-{host}" for host in HOSTS]
    try:
        with open(home / "master.log", "w") as log:
            master = [spark_class, MASTER, "--host", "127.0.0.1", "--port", str(port)]
            master += ["--webui-port", str(free_port())]
            env = spark_env(SPARK_LOCAL_IP="127.0.0.1")
            started.append(subprocess.Popen(master, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=home))
        wait_for(home / "master.log", "New state: ALIVE")
        for host, folder in zip(HOSTS, work):
            with open(home / f"worker-{host}.log", "w") as log:
                worker = [spark_class, WORKER, url, "--host", host, "--cores", "1", "--memory", "2g"]
                worker += ["--webui-port", str(free_port()), "--work-dir", str(folder)]
                env = spark_env(SPARK_LOCAL_IP=host)
                process = subprocess.Popen(worker, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=home)
                started.append(process)
            wait_for(home / "master.log", f"Registering worker {host}")
        yield url, python, home
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=60)


def local_run(spark, home: Path, scenarios: Path | None) -> Path:
    """A local run of the sample (with ``scenarios`` where given) under STRATEGIES, into ``home``:
    what a cluster run of the same input must write."""
    out = home / "local"
    simulate.run(
        spark,
        config.SimulateConfig(
            snapshot=str(config.sample_snapshot()),
            out=str(out),
            strategies=tuple(STRATEGIES.split(",")),
            scenarios=str(scenarios) if scenarios else None,
        ),
    )
    return out


@pytest.fixture(scope="module")
def scenario_run(spark, tmp_path_factory) -> tuple[Path, Path]:
    """(a scenarios file of one step, the local run of the sample with it)."""
    home = tmp_path_factory.mktemp("clean")
    (home / "one.yml").write_text(ONE_SCENARIO)
    return home / "one.yml", local_run(spark, home, home / "one.yml")


def submit(standalone, packaged: Path, scenarios: Path | None, out: Path, *conf: str) -> tuple[int, str]:
    """The sample (with ``scenarios`` where given) run by spark-submit on the cluster into ``out``,
    with ``conf`` (KEY=VALUE) beside the cluster profile: its exit code and log."""
    url, python, _ = standalone
    options = [
        *("--properties-file", str(packaged / "spark-cluster.properties")),
        # The cluster profile's 4g executors would not fit these workers.
        *("--conf", "spark.executor.memory=1g", "--conf", "spark.executor.memoryOverhead=512m"),
        *("--conf", "spark.ui.enabled=false"),
    ]
    for setting in conf:
        options += ["--conf", setting]
    args = ["--snapshot", str(config.sample_snapshot())]
    args += ["--scenarios", str(scenarios)] if scenarios else []
    return submit_job(
        packaged,
        *args,
        *("--strategies", STRATEGIES, "--out", str(out)),
        master=url,
        options=options,
        env=spark_env(
            SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python)
        ),
        cwd=out.parent,
        timeout=900,
    )


def leftovers(folder: Path) -> list[str]:
    """What a run left in or beside its output that is not a table's data: staging folders,
    task attempts, Spark's _temporary."""
    names = ("_temporary", ".tmp-", "attempt", ".spark-staging")
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if any(n in p.name for n in names))


def test_spark_submit_to_a_standalone_cluster_gives_the_tables_of_a_local_run(
    standalone, packaged: Path, scenario_run, tmp_path: Path
) -> None:
    """With speculation on, at thresholds that make a task speculatable as soon as it has run
    10 ms (quantile and multiplier near 0; a stage of one task, for the sample, by the duration
    threshold): Spark runs second attempts of tasks on the other host, the output committer keeps
    one, and the tables still hold each row once."""
    scenarios, local = scenario_run
    url = standalone[0]
    code, log = submit(
        standalone,
        packaged,
        scenarios,
        tmp_path / "cluster",
        "spark.speculation=true",
        "spark.speculation.interval=50ms",
        "spark.speculation.task.duration.threshold=10ms",
        "spark.speculation.quantile=0.01",
        "spark.speculation.multiplier=0.01",
        "spark.speculation.minTaskRuntime=0ms",
        "spark.speculation.efficiency.enabled=false",
    )
    assert code == 0, log[-5000:]
    assert f"from {packaged / ZIP}/rmqsim/__init__.py" in log  # the driver's rmqsim: the zip
    assert "rmqsim.session: Spark " in log and f" on {url}\n" in log  # the session's INFO line
    # A second attempt ran beside the first and lost: Spark logs it as killed. The reason it logs
    # is a race inside Spark: the successful attempt's kill ("another attempt succeeded") or the
    # finished stage's ("Stage cancelled: Stage finished"), whichever reaches the executor first;
    # a fresh-clone run logged only the second. Either is an attempt that lost to its twin: a
    # stage finishes once each task has one success, so any attempt still running is a duplicate.
    lost = re.findall(
        r"Lost task \d+\.\d+ in stage \S+ .*TaskKilled "
        r"\((another attempt succeeded|Stage cancelled: Stage finished)\)",
        log,
    )
    assert lost, log[-5000:]
    compared = same_tables(local, tmp_path / "cluster")
    assert {"assignments", "movement", "comparison"} <= set(compared)
    assert leftovers(tmp_path) == []


def test_an_executor_killed_in_the_allocation_stage_costs_a_retry_not_the_run(
    standalone, packaged: Path, spark, tmp_path: Path
) -> None:
    """kill -9 of the executor JVM whose Python workers run the stage's first task: Spark marks
    the executor lost, the master starts another, and the task runs again from what Spark can
    recompute. Blocks kept where nothing can recompute them (a local checkpoint) would die with
    the executor: CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND on every retry, and the run would fail."""
    local = local_run(spark, tmp_path, None)  # no scenario: the stage is what is tried here
    # The kill lands a moment after the executor's first Python starts. On a loaded machine the
    # sample's first task may be done by then: an idle executor gone tests nothing, so the run
    # is tried again, up to three times, until a task was running there and was lost with it.
    for attempt in range(3):
        out = tmp_path / f"cluster-{attempt}"
        killed: list[str] = []
        # Either worker's executor may run the first task: both work folders are under the fixture's.
        killer = threading.Thread(
            target=lambda found=killed: found.append(
                kill_first_executor_running_python(standalone[2], timeout=600)
            ),
            daemon=True,
        )
        killer.start()
        code, log = submit(standalone, packaged, None, out)
        killer.join(timeout=60)
        assert killed and killed[0], "no executor was killed"
        assert code == 0, log[-8000:]
        same_tables(local, out)
        assert leftovers(tmp_path) == []
        if "ExecutorLostFailure" in log:
            break
    assert "ExecutorLostFailure" in log, log[-5000:]
