"""The route-row builder fills in exactly the defaults the tests rely on, in GROUP_ROUTES' order."""

from __future__ import annotations

from pyspark.sql.pandas.types import to_arrow_schema

from rmqsim import schemas
from tests.builders import phase_routes, route, route_batch


def test_a_route_row_names_every_field_with_its_default() -> None:
    row = route(topic="t1", group="g1", brokers={"b1": 2, "b2": 3}, clients=["x", "y", "x"])
    assert row == {
        "scenario": "s",
        "phase": 0,
        "strategies": ["AVG"],
        "skipped": [],
        "topic": "t1",
        "group": "g1",
        "broker_names": ["b1", "b2"],
        "read_queue_nums": [2, 3],
        "broker_rooms": [None, None],
        "client_ids": ["x", "y", "x"],
        "client_rooms": [None, None, None],
        "client_configs": [None, None, None],
        "virtual_node_cnt": 10,
        "consumer_idcs": None,
        "inner_strategy": "AVG",
        "message_model": "CLUSTERING",
        "last_phase": 0,
        "compare": False,
        "backlogs": None,
        "stale_clients": None,
        "view_phase": None,
        "client_languages": None,
        "balancing": None,
        "broker_masters": None,
        "queue_inflow": None,
        "stranded_inflow": None,
        "drained_queues": None,
        "client_capacities": None,
        "designated_ips": None,
        "client_designated_aware": None,
        "drain_target_s": None,
        "written": None,
        "handover_event": None,
    }
    assert list(row) == schemas.GROUP_ROUTES.fieldNames()
    assert route(clients=["x"], client_configs=None)["client_configs"] is None  # the whole row null


def test_route_batches_have_the_stage_schema() -> None:
    schema = to_arrow_schema(schemas.GROUP_ROUTES)
    empty = route_batch([])
    assert empty.num_rows == 0 and empty.schema.equals(schema)
    two = route_batch([route(topic="t"), route(topic="u", brokers={"b": 1}, clients=["c"])])
    assert two.schema.equals(schema) and two.column("topic").to_pylist() == ["t", "u"]
    assert two.column("client_configs").to_pylist() == [[], [None]]


def test_phase_routes_number_the_phases_of_one_scenario() -> None:
    rows = phase_routes([({"b": 2}, ["x"]), ({"b": 3}, ["x", "y"])], "STICKY").to_pylist()
    assert [(r["phase"], r["last_phase"], r["strategies"]) for r in rows] == [
        (0, 1, ["STICKY"]),
        (1, 1, ["STICKY"]),
    ]
    assert [r["client_configs"] for r in rows] == [None, None]
    assert [r["read_queue_nums"] for r in rows] == [[2], [3]]
