"""The client rows' tables (docs/CONTRACT.md, section 4) as Spark writes them, from one row per
(topic, group, distinct client): where the output or the executors are not on this machine. (Where
both are, the Python tasks write the same rows themselves: stage.task_tables.)

The allocation stage already counted each client's queues and each group's unowned and
multi-owned queues, so no metric touches the (much larger) assignment rows.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rmqsim import schemas

# The tables that are row filters of the client rows (schemas.CLIENT_QUEUES): the flag that keeps
# a row, and the client rows' columns that the table's columns of another name come from. Spark
# (below) and the Python tasks that write them (stage.task_tables) both read it.
CLIENT_ROW_TABLES = {
    "group_metrics": ("first_in_group", {}),
    "consumer_load": (
        "first_in_client",
        {
            "topics": "client_topics",
            "queues": "client_queues",
            "backlog": "client_backlog",
            "message_share": "client_message_share",
            "backlog_share": "client_backlog_share",
        },
    ),
}
TABLE_SCHEMAS = {"group_metrics": schemas.GROUP_METRICS, "consumer_load": schemas.CONSUMER_LOAD}


def assignments(client_queues: DataFrame) -> DataFrame:
    """One row per (scenario, phase, strategy, topic, group, client, queue it owns):
    schemas.ASSIGNMENTS, each client's owned list exploded in the JVM (shipping one Arrow row per
    queue out of Python cost more than the allocation itself)."""
    keys = [f for f in schemas.ASSIGNMENTS.fieldNames() if f not in schemas.OWNED_QUEUE.fieldNames()]
    return client_queues.select(*keys, F.inline("owned")).select(*schemas.ASSIGNMENTS.fieldNames())


def group_metrics(client_queues: DataFrame) -> DataFrame:
    """One row per (scenario, phase, strategy, topic, group): schemas.GROUP_METRICS.

    Consumers are distinct client ids; stddev_queues is the population standard deviation over
    them; max_over_mean is null where the group has no queue. Computed by the allocation stage
    (rmqsim.skew), so this is a row filter.
    """
    return _flagged(client_queues, "group_metrics")


def consumer_load(client_queues: DataFrame) -> DataFrame:
    """One row per (scenario, phase, strategy, group, client_id): queues summed over its topics.

    AVG gives the extra queue of every topic to the first-sorted clients, so a client can be the
    busiest of every topic it reads: fleet skew that no single topic's metrics show.
    """
    return _flagged(client_queues, "consumer_load")


def _flagged(client_queues: DataFrame, table: str) -> DataFrame:
    flag, renamed = CLIENT_ROW_TABLES[table]
    names = TABLE_SCHEMAS[table].fieldNames()
    return client_queues.where(F.col(flag)).select(*(F.col(renamed.get(n, n)).alias(n) for n in names))
