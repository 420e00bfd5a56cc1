"""The one place that builds the SparkSession."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from rmqsim import progress

log = logging.getLogger(__name__)

DEFAULTS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Partitioned writes (by scenario and strategy) keep one open file per partition instead of
    # sorting every output row by the partition columns first; past this many it falls back to sorting.
    "spark.sql.maxConcurrentOutputFileWriters": "32",
    # A run's tables are read back partitioned by scenario and strategy, which are names: inferred,
    # scenario=07 and scenario=7 would both become the integer 7 and merge.
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
}


def under_spark_submit() -> bool:
    # spark-submit starts the Python driver with a gateway to its already configured JVM.
    return "PYSPARK_GATEWAY_PORT" in os.environ


def quiet_logs() -> dict[str, str]:
    """Point a JVM that this process starts at conf/log4j2.properties (spark-submit has its own)."""
    from rmqsim.config import conf_dir

    path = conf_dir() / "log4j2.properties"
    if under_spark_submit() or not path.exists():
        return {}
    return {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={path.as_uri()}"}


def build_session(
    *,
    app_name: str = "rmqsim",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    remote: str | None = None,
) -> SparkSession:
    """A Spark Connect session where ``remote`` (or SPARK_REMOTE) names a server; else local[*]
    unless a master comes from the CLI, the profile or spark-submit."""
    remote = remote_url(remote)
    if remote:
        return connect_session(remote, app_name=app_name, conf=conf)
    # Workers must run this interpreter, or Arrow UDFs fail with "No module named pyarrow".
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # The progress bar (stages longer than 0.5 s) helps at a terminal and litters CI logs.
    progress = {"spark.ui.showConsoleProgress": str(sys.stderr.isatty()).lower()}
    settings = {**DEFAULTS, **progress, **quiet_logs(), **(conf or {})}
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not under_spark_submit() and "spark.master" not in settings:
        builder = builder.master("local[*]")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    log.info("Spark %s on %s", spark.version, spark.sparkContext.master)
    if log.isEnabledFor(logging.DEBUG):  # --verbose: every setting, whatever set it
        log.debug("resolved configuration:\n%s", describe_conf(resolved_conf(spark)))
    return spark


class Starting:
    """A SparkSession being built in a thread of its own, so that the driver's work that needs no
    JVM (reading and checking a local snapshot, building the routes) runs while the JVM starts:
    the JVM waits on its own process and pyarrow releases the GIL, so the two overlap. A daemon
    thread: a run that stops on bad input exits at once, and the JVM goes with its parent."""

    def __init__(self, start: Callable[[], SparkSession]) -> None:
        self._session: SparkSession | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(start,), name="rmqsim-session", daemon=True)
        self._thread.start()

    def _run(self, start: Callable[[], SparkSession]) -> None:
        try:
            self._session = start()
        except BaseException as e:  # raised again in the thread that waits for the session
            self._error = e

    def result(self) -> SparkSession:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._session is not None
        return self._session


def remote_url(remote: str | None = None) -> str | None:
    """The Spark Connect server to use: ``remote``, else the SPARK_REMOTE environment variable."""
    return remote or os.environ.get("SPARK_REMOTE") or None


def connect_session(remote: str, *, app_name: str, conf: Mapping[str, str] | None) -> SparkSession:
    """A session on the Spark Connect server at ``remote`` (sc://HOST:PORT), with rmqsim shipped
    to the server's Python workers, which need pyarrow, pandas and numpy but not rmqsim.

    A client can set runtime SQL settings only: the server's own configuration rules the rest,
    and those given here are logged as ignored."""
    settings = {**DEFAULTS, **(conf or {})}
    sql = {k: v for k, v in settings.items() if k.startswith("spark.sql.")}
    builder = SparkSession.builder.remote(remote).appName(app_name)
    for key, value in sql.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    ignored = sorted(set(settings) - set(sql) - set(DEFAULTS))
    if ignored:
        log.warning("Spark Connect: not settable from a client, ignored: %s", ", ".join(ignored))
    ship_package(spark)
    # The connection string's parameters may hold a token: the log gets the address only.
    log.info("Spark %s through Spark Connect at %s", spark.version, remote.split(";")[0].rstrip("/"))
    return spark


def ship_package(spark: SparkSession) -> None:
    """Add rmqsim to the session's Python artifacts: the server's workers import it from there."""
    import rmqsim
    from rmqsim.packaging import write_zip

    with tempfile.TemporaryDirectory() as folder:
        path = write_zip(Path(folder) / f"rmqsim-{rmqsim.__version__}.zip")
        spark.addArtifacts(str(path), pyfile=True)


def is_remote(spark: SparkSession) -> bool:
    """A Spark Connect session: no SparkContext, no JVM in this process, and paths are the server's."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def executors_here(spark: SparkSession) -> bool:
    """Whether the executors run on this machine (a local master): then what a task writes to a
    local path is where this process reads it. On a cluster a path without a scheme may be on the
    executors' own disks, or on the cluster's default file system (HDFS): Spark must write it."""
    return not is_remote(spark) and spark.sparkContext.master.startswith("local")


SECRET_WORDS = ("secret", "password", "token", "credential", "key.private")


def resolved_conf(spark: SparkSession) -> dict[str, str]:
    """The session's effective spark.* settings, whatever set them (spark-submit, profile, --conf);
    secrets redacted."""
    if is_remote(spark):  # only the runtime configuration is visible
        pairs = spark.conf.getAll.items()
    else:
        pairs = spark.sparkContext.getConf().getAll()
    return {
        k: ("*****" if any(w in k.lower() for w in SECRET_WORDS) else v)
        for k, v in sorted(pairs)
        if k.startswith("spark.")
    }


def describe_conf(conf: Mapping[str, str]) -> str:
    return "\n".join(f"  {k}={v}" for k, v in conf.items())


@contextmanager
def job_description(spark: SparkSession, text: str) -> Iterator[None]:
    """Name the Spark jobs run inside: the Spark UI, its REST API and bench/profile_jobs.py show it;
    and say how far they got (rmqsim.progress)."""
    if is_remote(spark):  # no SparkContext, and no local properties to set
        yield
        return
    context = spark.sparkContext
    context.setJobDescription(text)
    try:
        with progress.reported(context, text):
            yield
    finally:
        context.setJobDescription(None)  # type: ignore[arg-type]


def from_arrow(
    spark: SparkSession, table: pa.Table, schema: StructType | None = None, *, reused: bool = False
) -> DataFrame:
    """``table`` as a DataFrame (of ``schema``'s types where given). Its chunks combined first:
    PySpark 4.3's createDataFrame loses every row of a table whose first two chunks are empty.

    ``reused``: several queries will start from it. Through Spark Connect it is then sent once and
    named by its hash in each query's plan, as Connect does by itself only above 64 MB: inlined,
    every query would carry it again. The server keeps it in its driver, where a lost executor's
    tasks read it again."""
    if reused and is_remote(spark):
        key = "spark.sql.session.localRelationCacheThreshold"
        threshold = spark.conf.get(key)
        spark.conf.set(key, "0")
        try:
            return spark.createDataFrame(table.combine_chunks(), schema)
        finally:
            spark.conf.set(key, threshold)
    return spark.createDataFrame(table.combine_chunks(), schema)


def last_job(spark: SparkSession) -> int:
    """The highest id of the jobs Spark has started so far (-1: none, or through Spark Connect)."""
    if is_remote(spark):
        return -1
    return max(spark.sparkContext.statusTracker().getJobIdsForGroup(None), default=-1)


def wait_for_stopped_tasks(spark: SparkSession, *, after: int = -1, timeout: float = 120.0) -> bool:
    """Wait until no task of the jobs after job ``after`` runs; False if some still does at ``timeout``.

    A job ends once every partition has one successful attempt. A speculative attempt still
    running then is told to stop, and may write a little more before its executor reports it
    stopped: an empty _temporary folder in a table Spark has already committed. Spark's status
    store learns of tasks a little late, so first the jobs must be seen ended (their stages' last
    counts are stored by then), then their stages without a running task. Jobs without a job group
    only (rmqsim sets none). Through Spark Connect the client sees no tasks: True at once."""
    if is_remote(spark):
        return True
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout
    while True:
        if not any(job > after for job in tracker.getActiveJobsIds()):
            jobs = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup(None) if job > after]
            stages = [tracker.getStageInfo(stage) for job in jobs if job for stage in job.stageIds]
            if not any(stage.numActiveTasks for stage in stages if stage):
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
