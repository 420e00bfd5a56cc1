"""Test inputs built from keyword arguments: route rows (the allocation stage's input batches,
schemas.GROUP_ROUTES) and snapshots written as Parquet.

A route row is a dict keyed by GROUP_ROUTES' field names; `route` fills in every field a test does
not name, so a test says only what it is about. `route_batch` turns such rows into the Arrow batch
the stage functions (stage.outputs.stage_outputs, movement_batches) take, and `staged` runs the
stage over them: the tables a run writes, as pandas frames.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa

from rmqsim import schemas
from rmqsim.sink.arrow_sink import assignment_rows
from rmqsim.snapshot.write import arrow_table, write_snapshot
from rmqsim.stage.outputs import stage_outputs

# A scenarios file of one step on the sample snapshot, for the tests that check how a run is
# launched (spark-submit, Airflow) rather than what the bundled scenarios show.
# One scenario of one step, and a sweep of two brokers (docs/CONTRACT.md, section 2f).
ONE_SCENARIO = (
    "scenarios:\n  - name: broker-b-down\n    steps:\n      - broker_down: {names: [broker-b]}\n"
    "sweeps:\n  - {name: broker-loss, each: broker_down, of: [broker-a, broker-c]}\n"
)

# ------------------------------------------------------------------ route rows (GROUP_ROUTES)

ROUTES = schemas.GROUP_ROUTES_ARROW


class _NullPerClient:
    """route's default client_configs: a null list for every client (None: the whole row null)."""

    def __repr__(self) -> str:
        return "NULL_PER_CLIENT"


NULL_PER_CLIENT = _NullPerClient()


def route(
    *,
    topic: str = "t",
    group: str = "g",
    brokers: Mapping[str, int] | None = None,
    clients: Sequence[str] = (),
    strategies: Sequence[str] = ("AVG",),
    scenario: str = "s",
    phase: int = 0,
    skipped: Sequence[Mapping[str, str]] = (),
    broker_rooms: Sequence[str | None] | None = None,
    client_rooms: Sequence[str | None] | None = None,
    client_configs: Sequence[Sequence[Mapping[str, object]] | None] | None | _NullPerClient = NULL_PER_CLIENT,
    virtual_node_cnt: int = 10,
    consumer_idcs: Sequence[str] | None = None,
    inner_strategy: str = "AVG",
    message_model: str = "CLUSTERING",
    last_phase: int = 0,
    compare: bool = False,
    backlogs: Sequence[Mapping[str, object]] | None = None,
    stale_clients: Sequence[str] | None = None,
    view_phase: int | None = None,
    client_languages: Sequence[str | None] | None = None,
    balancing: Mapping[str, object] | None = None,
    broker_masters: Sequence[bool] | None = None,
    queue_inflow: Sequence[float] | None = None,
    stranded_inflow: float | None = None,
    drained_queues: Sequence[tuple[str, int]] | None = None,
    client_capacities: Sequence[float | None] | None = None,
    designated_ips: Sequence[str] | None = None,
    client_designated_aware: Sequence[bool | None] | None = None,
    drain_target_s: float | None = None,
    handover_event: Mapping[str, object] | None = None,
) -> dict:
    """One GROUP_ROUTES row of (topic, group).

    brokers maps each broker name to its read queue count, in route (Java) order; clients are the
    client ids in cidAll order, duplicates kept. broker_rooms and client_rooms default to a null
    room per broker and per client; client_configs to a null CONFIG list per client (None makes
    the whole column null for the row, as in a snapshot without queue_config); client_languages
    to null for the row (every client JAVA, as in a consumers table without a language column);
    balancing (schemas.BALANCING: rebalance, pop, pop_share_queue_num, consume_orderly) to null
    (the client balances); broker_masters (whether each broker's master is alive) to null;
    queue_inflow (messages per second into each queue of mqAll, in mqAll order) and
    stranded_inflow (into written queues outside it) to null (no traffic), and drained_queues
    ((broker, queue id) outside mqAll its readers drained) to null; client_capacities (one per
    client), designated_ips, client_designated_aware (one per client) and drain_target_s to null
    (section 2d: no capacity, no designation).
    """
    brokers = dict(brokers or {})
    clients = list(clients)
    return {
        "scenario": scenario,
        "phase": phase,
        "strategies": list(strategies),
        "skipped": [dict(s) for s in skipped],
        "topic": topic,
        "group": group,
        "broker_names": list(brokers),
        "read_queue_nums": list(brokers.values()),
        "broker_rooms": [None] * len(brokers) if broker_rooms is None else list(broker_rooms),
        "client_ids": clients,
        "client_rooms": [None] * len(clients) if client_rooms is None else list(client_rooms),
        "client_configs": (
            [None] * len(clients)
            if client_configs is NULL_PER_CLIENT
            else None
            if client_configs is None
            else [None if c is None else list(c) for c in client_configs]
        ),
        "virtual_node_cnt": virtual_node_cnt,
        "consumer_idcs": None if consumer_idcs is None else list(consumer_idcs),
        "inner_strategy": inner_strategy,
        "message_model": message_model,
        "last_phase": last_phase,
        "compare": compare,
        "backlogs": None if backlogs is None else [dict(b) for b in backlogs],
        "stale_clients": None if stale_clients is None else list(stale_clients),
        "view_phase": view_phase,
        "client_languages": None if client_languages is None else list(client_languages),
        "balancing": None if balancing is None else dict(balancing),
        "broker_masters": None if broker_masters is None else list(broker_masters),
        "queue_inflow": None if queue_inflow is None else list(queue_inflow),
        "stranded_inflow": stranded_inflow,
        "drained_queues": None
        if drained_queues is None
        else [{"broker_name": b, "queue_id": q} for b, q in drained_queues],
        "client_capacities": None if client_capacities is None else list(client_capacities),
        "designated_ips": None if designated_ips is None else list(designated_ips),
        "client_designated_aware": None if client_designated_aware is None else list(client_designated_aware),
        "drain_target_s": drain_target_s,
        "written": None,
        "handover_event": None if handover_event is None else dict(handover_event),
    }


def route_batch(rows: Iterable[Mapping[str, object]]) -> pa.RecordBatch:
    """Route rows as one RecordBatch of the GROUP_ROUTES schema (no rows: an empty batch)."""
    rows = list(rows)
    for row in rows:
        assert list(row) == ROUTES.names, f"not a GROUP_ROUTES row: {sorted(row)}"
    return pa.RecordBatch.from_pylist(rows, schema=ROUTES)


def phase_routes(
    phases: Sequence[tuple[Mapping[str, int], Sequence[str]]], strategy: str, **common: object
) -> pa.RecordBatch:
    """One route of (topic t, group g) per phase k of a scenario, from (brokers, clients) pairs:
    last_phase is the last k, client_configs null for every row; `common` (route's keywords) goes
    into every row."""
    common = {"client_configs": None, **common}
    last = len(phases) - 1
    return route_batch(
        route(phase=k, last_phase=last, strategies=[strategy], brokers=b, clients=c, **common)
        for k, (b, c) in enumerate(phases)
    )


@dataclass(frozen=True)
class Staged:
    """What the stage computes from route rows, as the tables a run writes (pandas)."""

    assignments: pd.DataFrame  # schemas.ASSIGNMENTS: a row per queue a client holds
    lists: pd.DataFrame  # schemas.CLIENT_ASSIGNMENTS: each client that holds a queue, its queues as a list
    group_metrics: pd.DataFrame
    consumer_load: pd.DataFrame
    falling_behind: pd.DataFrame
    movement: pd.DataFrame
    arrow: dict[str, pa.Table]  # the same tables as Arrow, with their schemas' types

    def queues(self, **where: object) -> dict[str, int]:
        """Queues per client_id among the assignment rows with ``where``'s column values."""
        rows = self.assignments
        for column, value in where.items():
            rows = rows[rows[column] == value]
        return rows.groupby("client_id").size().to_dict()


def staged(rows: pa.RecordBatch | Iterable[Mapping[str, object]]) -> Staged:
    """The stage over route rows (a batch, or `route` dicts): every table of schemas.STAGE_TABLES."""
    batch = rows if isinstance(rows, pa.RecordBatch) else route_batch(rows)
    out = stage_outputs(batch, schemas.STAGE_TABLES)

    tables = {
        name: pa.Table.from_batches(out[name], schema=schemas.arrow(schemas.OUTPUTS[name].schema))
        for name in ("group_metrics", "consumer_load", "falling_behind", "movement")
    }

    def frame(name: str, schema: pa.Schema) -> pd.DataFrame:
        return tables[name].to_pandas()

    lists = pa.Table.from_batches(out["assignments"], schema=schemas.arrow(schemas.CLIENT_ASSIGNMENTS))
    tables["assignments"] = assignment_rows(lists)
    return Staged(
        assignments=assignment_rows(lists)
        .to_pandas()
        .astype({c: object for c in ("topic", "group", "client_id", "computed_by")}),
        lists=lists.to_pandas(),
        group_metrics=frame("group_metrics", schemas.arrow(schemas.GROUP_METRICS)),
        consumer_load=frame("consumer_load", schemas.arrow(schemas.CONSUMER_LOAD)),
        falling_behind=frame("falling_behind", schemas.arrow(schemas.FALLING_BEHIND)),
        movement=frame("movement", schemas.arrow(schemas.MOVEMENT)),
        arrow=tables,
    )


# ------------------------------------------------------------------ snapshots


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
    **optional: Iterable[Mapping[str, object]] | None,
) -> str:
    """Write a snapshot from row dicts; ``optional``: any other snapshot table by name (groups,
    offsets, producers, ...). Absent optional columns stay absent in the Parquet."""
    specs = {spec.name: spec for spec in schemas.SNAPSHOT_TABLES}
    unknown = set(optional) - set(specs)
    assert not unknown, f"not snapshot tables: {sorted(unknown)}"
    given = {"brokers": brokers, "topic_queues": topic_queues, "consumers": consumers, **optional}
    tables = {
        name: arrow_table(specs[name], _columns(specs[name], rows))
        for name, rows in given.items()
        if rows is not None
    }
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
