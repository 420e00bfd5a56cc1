"""A long Spark job says how far it got (rmqsim.progress): a log line every few seconds when not
on a terminal, a short job nothing."""

from __future__ import annotations

import logging
import re

import pyarrow as pa

from rmqsim import progress


def test_a_long_job_logs_its_tasks_done_out_of_all(spark, caplog) -> None:
    def slowly(batches):  # each of the 4 partitions takes 0.6 s: on local[2], about 1.2 s in all
        import time

        for batch in batches:
            time.sleep(0.6)
            yield batch

    frame = spark.range(0, 4, 1, numPartitions=4).mapInArrow(slowly, "id long")
    with caplog.at_level(logging.INFO, logger="rmqsim.progress"):
        with progress.reported(spark.sparkContext, "slow job", every_s=0.2):
            assert len(frame.collect()) == 4  # one stage, no aggregation after it
    lines = [r.getMessage() for r in caplog.records if r.name == "rmqsim.progress"]
    assert lines, "no progress line for a job of over a second"
    counts = [
        tuple(map(int, re.fullmatch(r"slow job: (\d+) of (\d+) tasks done", m).groups())) for m in lines
    ]
    assert {total for _, total in counts} == {4}  # one task per partition
    done = [d for d, _ in counts]
    assert done == sorted(done) and len(set(done)) == len(done)  # a line only when it changed
    assert all(0 <= d <= 4 for d in done)


def test_a_short_job_says_nothing(spark, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="rmqsim.progress"):
        with progress.reported(spark.sparkContext, "quick job", every_s=30.0):
            assert spark.createDataFrame(pa.table({"x": [1, 2]}).to_pandas()).count() == 2
    assert [r for r in caplog.records if r.name == "rmqsim.progress"] == []


def test_no_running_stage_is_no_figure(spark) -> None:
    assert progress.tasks_done(spark.sparkContext) is None
