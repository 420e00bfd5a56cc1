"""The one place that builds the SparkSession."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession

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
    *, app_name: str = "rmqsim", master: str | None = None, conf: Mapping[str, str] | None = None
) -> SparkSession:
    """local[*] unless a master comes from the CLI, the profile or spark-submit."""
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
    try:
        spark.sparkContext.setLogLevel("WARN")
    except Exception:  # Spark Connect has no SparkContext; its server sets the level
        pass
    log.info("Spark %s; resolved configuration:\n%s", spark.version, describe_conf(resolved_conf(spark)))
    return spark


SECRET_WORDS = ("secret", "password", "token", "credential", "key.private")


def resolved_conf(spark: SparkSession) -> dict[str, str]:
    """The session's effective spark.* settings, whatever set them (spark-submit, profile, --conf);
    secrets redacted."""
    try:
        pairs = spark.sparkContext.getConf().getAll()
    except Exception:  # Spark Connect: only the runtime configuration is visible
        pairs = spark.conf.getAll.items() if hasattr(spark.conf, "getAll") else []
    return {
        k: ("*****" if any(w in k.lower() for w in SECRET_WORDS) else v)
        for k, v in sorted(pairs)
        if k.startswith("spark.")
    }


def describe_conf(conf: Mapping[str, str]) -> str:
    return "\n".join(f"  {k}={v}" for k, v in conf.items())


@contextmanager
def job_description(spark: SparkSession, text: str) -> Iterator[None]:
    """Name the Spark jobs run inside: the Spark UI, its REST API and bench/profile_jobs.py show it."""
    try:
        context = spark.sparkContext
    except Exception:  # Spark Connect: no SparkContext, and no local properties to set
        yield
        return
    context.setJobDescription(text)
    try:
        yield
    finally:
        context.setJobDescription(None)  # type: ignore[arg-type]


def checkpoint(df: DataFrame) -> DataFrame:
    """``df`` computed now and kept on the executors, as a plan with no lineage.

    Every later query's plan starts here instead of at the snapshot: on a run with scenarios,
    analysing the stacked phases again for each output cost more than running the outputs. The
    price: an executor lost before the run ends fails the run (there is no lineage to recompute
    from). Free it with ``release``."""
    return df.localCheckpoint(eager=True)


def release(df: DataFrame) -> None:
    """Free a ``checkpoint``'s blocks now rather than when the JVM collects it (unpersist does not
    reach them). Through the JVM plan: PySpark has no call for it."""
    plan = df._jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)
