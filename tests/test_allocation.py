"""The functions behind mapInArrow, called on local Arrow batches without Spark."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from rmqsim import schemas
from rmqsim.allocation import assignment_batches, client_queue_batches


def _routes(rows: list[tuple]) -> pa.RecordBatch:
    columns = list(zip(*[("s", 0, [s], *rest) for s, *rest in rows])) or [[] for _ in schemas.GROUP_ROUTES]
    return pa.RecordBatch.from_arrays(
        [pa.array(list(c), type=f.type) for c, f in zip(columns, to_arrow_schema(schemas.GROUP_ROUTES))],
        schema=to_arrow_schema(schemas.GROUP_ROUTES),
    )


def _pandas(batches: list[pa.RecordBatch], schema):
    return pa.Table.from_batches(batches, schema=to_arrow_schema(schema)).to_pandas()


def assignment_rows(rows: pa.RecordBatch):
    return _pandas(assignment_batches(rows), schemas.ASSIGNMENTS)


def client_queue_rows(rows: pa.RecordBatch):
    return _pandas(client_queue_batches(rows), schemas.CLIENT_QUEUES)


def test_mixed_strategies_and_groups_in_one_batch() -> None:
    pdf = _routes(
        [
            ("AVG", "t1", "g", ["a", "b"], [2, 1], ["x", "y"]),  # mqAll a0 a1 b0: x gets a0 a1, y gets b0
            ("AVG_BY_CIRCLE", "t1", "g", ["a", "b"], [2, 1], ["x", "y"]),  # x: a0 b0, y: a1
            ("AVG", "t2", "h", [], [], ["z"]),  # no readable queue: the client throws, nothing owned
            ("AVG_BY_CIRCLE", "t3", "k", ["c"], [1], ["p", "q"]),  # q idle
        ]
    )
    got = assignment_rows(pdf)
    assert list(got.columns) == schemas.ASSIGNMENTS.fieldNames()
    assert sorted(
        map(tuple, got[["strategy", "topic", "client_id", "broker_name", "queue_id"]].values.tolist())
    ) == [
        ("AVG", "t1", "x", "a", 0),
        ("AVG", "t1", "x", "a", 1),
        ("AVG", "t1", "y", "b", 0),
        ("AVG_BY_CIRCLE", "t1", "x", "a", 0),
        ("AVG_BY_CIRCLE", "t1", "x", "b", 0),
        ("AVG_BY_CIRCLE", "t1", "y", "a", 1),
        ("AVG_BY_CIRCLE", "t3", "p", "c", 0),
    ]
    assert got.queue_id.dtype == np.int32

    summary = client_queue_rows(pdf).set_index(["strategy", "topic", "client_id"])
    assert summary.loc[("AVG", "t2", "z")].error == "mqAll is null or mqAll empty"
    assert summary.loc[("AVG", "t2", "z")].queues == 0
    assert summary.loc[("AVG_BY_CIRCLE", "t3", "q")].queues == 0
    assert summary.loc[("AVG", "t1", "x")].queues == 2
    assert summary.error.isna().sum() == 6  # every client but z


def test_duplicate_ids_leave_the_second_copys_share_unowned() -> None:
    pdf = _routes([("AVG", "t", "g", ["b"], [6], ["a", "a", "c"])])  # a: 0 1, (a): 2 3, c: 4 5
    got = assignment_rows(pdf)
    assert sorted(zip(got.client_id, got.queue_id)) == [("a", 0), ("a", 1), ("c", 4), ("c", 5)]
    summary = client_queue_rows(pdf)
    assert summary.unassigned_queues.tolist() == [2, 2]
    assert summary.duplicate_client_ids.tolist() == [1, 1]


def test_empty_batch() -> None:
    got = assignment_rows(_routes([]))
    assert got.empty and list(got.columns) == schemas.ASSIGNMENTS.fieldNames()
