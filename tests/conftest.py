"""One SparkSession for the whole test session (local[2], UI off, UTC), and snapshot builders."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from rmqsim import schemas
from rmqsim.generate import arrow_table, write_snapshot

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

# A scenarios file of one step on the sample snapshot, for the tests that check how a run is
# launched (spark-submit, Airflow) rather than what the bundled scenarios show.
ONE_SCENARIO = "scenarios:\n  - name: broker-b-down\n    steps:\n      - broker_down: {names: [broker-b]}\n"


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


@pytest.fixture(scope="session")
def sample_run(spark, tmp_path_factory) -> Path:
    """Every strategy and the bundled scenarios on the sample snapshot, simulated once for the
    tests that read a run's outputs (the notebook, the HTML report). Tests may add files to it
    (charts/, report.html) but must not change its tables."""
    from rmqsim import config, simulate

    out = tmp_path_factory.mktemp("sample_run") / "out"
    simulate.run(
        spark,
        config.SimulateConfig(
            snapshot=str(config.sample_snapshot()),
            out=str(out),
            strategies=config.parse_strategies("all"),
            scenarios=str(config.sample_scenarios()),
        ),
    )
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


def _columns(spec: schemas.TableSpec, rows: Iterable[Mapping[str, object]]) -> dict[str, list]:
    rows = list(rows)
    names = [c.name for c in spec.columns if any(c.name in r for r in rows)] or [
        c.name for c in spec.columns if c.required
    ]
    return {n: [r.get(n) for r in rows] for n in names}


def make_snapshot(
    path: Path,
    *,
    brokers: Iterable[Mapping[str, object]],
    topic_queues: Iterable[Mapping[str, object]],
    consumers: Iterable[Mapping[str, object]],
    groups: Iterable[Mapping[str, object]] | None = None,
    queue_config: Iterable[Mapping[str, object]] | None = None,
    offsets: Iterable[Mapping[str, object]] | None = None,
) -> str:
    """Write a snapshot from row dicts; absent optional columns stay absent in the Parquet."""
    tables = {
        "brokers": arrow_table(schemas.BROKERS, _columns(schemas.BROKERS, brokers)),
        "topic_queues": arrow_table(schemas.TOPIC_QUEUES, _columns(schemas.TOPIC_QUEUES, topic_queues)),
        "consumers": arrow_table(schemas.CONSUMERS, _columns(schemas.CONSUMERS, consumers)),
    }
    if groups is not None:
        tables["groups"] = arrow_table(schemas.GROUPS, _columns(schemas.GROUPS, groups))
    if queue_config is not None:
        tables["queue_config"] = arrow_table(
            schemas.QUEUE_CONFIG, _columns(schemas.QUEUE_CONFIG, queue_config)
        )
    if offsets is not None:
        tables["offsets"] = arrow_table(schemas.OFFSETS, _columns(schemas.OFFSETS, offsets))
    write_snapshot(tables, str(path))
    return str(path)


def queue_rows(topic: str, brokers: Mapping[str, int], perm: int = 6) -> list[dict]:
    return [
        {"topic": topic, "broker_name": b, "read_queue_nums": n, "write_queue_nums": n, "perm": perm}
        for b, n in brokers.items()
    ]


def consumer_rows(group: str, topic: str, client_ids: Iterable[str]) -> list[dict]:
    return [{"group": group, "topic": topic, "client_id": c} for c in client_ids]


def broker_rows(*names: str, alive: bool = True) -> list[dict]:
    return [{"broker_name": n, "broker_id": 0, "alive": alive} for n in names]
