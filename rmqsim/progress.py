"""How far a long Spark job has got. Where Spark draws its own bar (spark.ui.showConsoleProgress:
session.build_session turns it on at a terminal) that is it; elsewhere (a scheduled run's log, CI)
a log line every few seconds says how many of the running stages' tasks are done. A job shorter
than that says nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark import SparkContext

log = logging.getLogger(__name__)

EVERY_S = 10.0  # seconds between two lines about one job


def tasks_done(context: SparkContext) -> tuple[int, int] | None:
    """(tasks done, tasks in all) over the stages running now; None when none runs."""
    tracker = context.statusTracker()
    done = total = 0
    for stage in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage)
        if info is not None:  # a stage may end between the two calls
            done, total = done + info.numCompletedTasks, total + info.numTasks
    return (done, total) if total else None


@contextmanager
def reported(context: SparkContext, what: str, *, every_s: float = EVERY_S) -> Iterator[None]:
    """While the block runs (a Spark job named ``what``), a line every ``every_s`` seconds with
    its tasks done, when it changed; nothing where Spark's own bar shows it."""
    if _bar_shown(context) or not log.isEnabledFor(logging.INFO):
        yield
        return
    finished = threading.Event()

    def watch() -> None:
        said = None
        while not finished.wait(every_s):
            now = tasks_done(context)
            if now is not None and now != said:
                log.info("%s: %d of %d tasks done", what, *now)
                said = now

    watcher = threading.Thread(target=watch, name="rmqsim-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        finished.set()
        watcher.join()


def _bar_shown(context: SparkContext) -> bool:
    """Whether Spark draws its console progress bar: the session's setting, whoever set it."""
    return context.getConf().get("spark.ui.showConsoleProgress", "false").strip().lower() == "true"
