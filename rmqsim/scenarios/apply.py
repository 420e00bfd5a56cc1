"""Scenario steps applied to a checked snapshot's Arrow tables (docs/CONTRACT.md, section 3).

Phase 0 of every scenario is the snapshot; phase k is phase k-1 with step k applied. ``phased``
stacks every phase of every scenario into one set of tables keyed by (scenario, phase). A null
proves nothing: a step drops a row only where its condition holds, and changes a value only where
its condition holds (a null condition keeps the old value).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import stacked
from rmqsim.errors import InputError
from rmqsim.scenarios import parse as sc
from rmqsim.scenarios import touched
from rmqsim.scenarios.seeded import seeded_order
from rmqsim.schemas import PHASE, PRODUCERS
from rmqsim.snapshot.load import Snapshot, schemas_table

PHASED = ("brokers", "topic_queues", "consumers", "groups", "producers")  # the tables a step may change
STALE_VIEWS = pa.schema(
    [
        pa.field("scenario", pa.string(), nullable=False),
        pa.field("phase", pa.int32(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("client_id", pa.string()),
        pa.field("view_phase", pa.int32(), nullable=False),
    ]
)
# client_lists columns null for a whole row where the snapshot has no data for them.
NULL_WHEN_ABSENT = ("client_configs", "client_languages")


# ------------------------------------------------------------------ column helpers


def _named(column: pa.ChunkedArray, names: tuple[str, ...] | str) -> pa.ChunkedArray | pa.Array:
    """SQL's ``column IN names`` (null where the column is null); every row for ``all``."""
    if names == sc.ALL:
        return pa.repeat(pa.scalar(True), len(column))
    found = pc.is_in(column, value_set=pa.array(list(names), column.type), skip_nulls=True)
    return pc.if_else(pc.is_valid(column), found, pa.scalar(None, pa.bool_()))


def _when(condition, value: pa.Scalar, column: pa.ChunkedArray) -> pa.ChunkedArray:
    """``F.when(condition, value).otherwise(column)``: a null condition keeps the column."""
    return pc.if_else(pc.fill_null(condition, False), value, column)


def _constant(value: object, type_: pa.DataType, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, type=type_), n)


def _with_column(table: pa.Table, name: str, values, *, every_row: bool = False) -> pa.Table:
    """``table`` with column ``name`` replaced. ``every_row``: the values are a constant that is
    not null on every row, so the column is not null either."""
    field = table.schema.field(name)
    return table.set_column(
        table.schema.get_field_index(name), field.with_nullable(field.nullable and not every_row), values
    )


def _rows(
    schema: pa.Schema, n: int, given: dict[str, object], not_null: frozenset[str] = frozenset()
) -> pa.Table:
    """``n`` rows of ``schema``: the ``given`` arrays, null in every other column. Every column is
    nullable but ``not_null`` (where the value given is a constant that is not null)."""
    fields = [f.with_nullable(f.name not in not_null) for f in schema]
    return pa.table(
        [given[f.name] if f.name in given else pa.nulls(n, f.type) for f in fields], schema=pa.schema(fields)
    )


def _not_null(schema: pa.Schema, *names: str) -> frozenset[str]:
    """The columns of ``names`` that ``schema`` holds not null."""
    return frozenset(n for n in names if not schema.field(n).nullable)


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Each row's index into the column's distinct values (null one of them), and those values."""
    encoded = pc.dictionary_encode(column.combine_chunks(), null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary


def _mode(codes: np.ndarray, groups: int, values: pa.ChunkedArray) -> pa.Array:
    """``F.mode(values, deterministic=True)`` per code: the most common non-null value, the
    smallest on a tie; null where a code has none."""
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    code = codes[valid]
    value = values.filter(values.is_valid()).to_numpy().astype(np.int64)
    modes = np.zeros(groups, dtype=np.int64)
    found = np.zeros(groups, dtype=bool)
    if len(code):
        pairs, counts = np.unique(np.stack([code, value]), axis=1, return_counts=True)
        order = np.lexsort((pairs[1], -counts, pairs[0]))
        ordered = pairs[:, order]
        first = np.r_[True, ordered[0, 1:] != ordered[0, :-1]]
        modes[ordered[0, first]] = ordered[1, first]
        found[ordered[0, first]] = True
    return pa.array(modes, mask=~found).cast(values.type)


# ------------------------------------------------------------------ steps


def _add_brokers(step: sc.AddBrokers, tables: Snapshot) -> Snapshot:
    brokers, queues = tables.brokers, tables.topic_queues
    n = len(step.names)
    values = {"cluster": step.cluster, "broker_id": 0, "machine_room": step.machine_room, "alive": True}
    # Rows made with the brokers' schema: its columns keep their nullability.
    new = _rows(
        brokers.schema,
        n,
        {
            f.name: pa.array(list(step.names), f.type)
            if f.name == "broker_name"
            else _constant(values.get(f.name), f.type, n)
            for f in brokers.schema
        },
        not_null=_not_null(brokers.schema, *brokers.schema.names),
    )
    # A new broker gets each topic's most common counts (the smaller on a tie), unless given.
    chosen = queues.filter(_named(queues["topic"], step.topics))
    codes, topics = _codes(chosen["topic"])
    counts = {c: _mode(codes, len(topics), chosen[c]) for c in ("read_queue_nums", "write_queue_nums")}
    given = {"read_queue_nums": step.read_queue_nums, "write_queue_nums": step.write_queue_nums}
    each = len(topics) * n  # every topic with every new broker
    columns = {
        "topic": topics.take(pa.array(np.repeat(np.arange(len(topics)), n))),
        "broker_name": pa.array(list(step.names) * len(topics), queues.schema.field("broker_name").type),
        "perm": _constant(step.perm, queues.schema.field("perm").type, each),
    }
    for name, modes in counts.items():
        type_ = queues.schema.field(name).type
        value = given[name]
        columns[name] = (
            _constant(value, type_, each)
            if value is not None
            else modes.cast(type_).take(pa.array(np.repeat(np.arange(len(topics)), n)))
        )
    literal = {"perm", *(c for c, v in given.items() if v is not None)}
    not_null = frozenset(literal) | _not_null(queues.schema, "topic")
    return replace(
        tables,
        brokers=stacked(brokers, new),
        topic_queues=stacked(queues, _rows(queues.schema, each, columns, not_null)),
    )


def _remove_brokers(step: sc.RemoveBrokers, tables: Snapshot) -> Snapshot:
    def keep(table: pa.Table) -> pa.Table:
        return table.filter(pc.invert(_named(table["broker_name"], step.names)))

    return replace(tables, brokers=keep(tables.brokers), topic_queues=keep(tables.topic_queues))


def _set_alive(alive: bool) -> Callable[[sc.BrokerDown | sc.BrokerUp, Snapshot], Snapshot]:
    def apply(step: sc.BrokerDown | sc.BrokerUp, tables: Snapshot) -> Snapshot:
        brokers = tables.brokers
        named = _named(brokers["broker_name"], step.names)
        value = pa.scalar(alive, brokers.schema.field("alive").type)
        return replace(tables, brokers=_with_column(brokers, "alive", _when(named, value, brokers["alive"])))

    return apply


def _set_queue_nums(step: sc.SetQueueNums, tables: Snapshot) -> Snapshot:
    queues = tables.topic_queues
    match = pc.and_kleene(_named(queues["topic"], step.topics), _named(queues["broker_name"], step.brokers))
    for column in ("read_queue_nums", "write_queue_nums"):
        value = getattr(step, column)
        if value is not None:
            literal = pa.scalar(value, queues.schema.field(column).type)
            queues = _with_column(queues, column, _when(match, literal, queues[column]))
    return replace(tables, topic_queues=queues)


def generated_client_ids(group: str, count: int, seed: int, start: int = 0) -> list[str]:
    """Deterministic ids shaped like RocketMQ's ip@pid#nanotime for clients a step adds: the
    ``start``-th to the (``start`` + ``count`` - 1)-th of the group's sequence for ``seed``."""
    out = []
    for i in range(start, start + count):
        h = hashlib.sha256(f"{seed}:{group}:{i}".encode()).digest()
        out.append(f"10.{200 + h[0] % 50}.{h[1]}.{h[2] % 254 + 1}@{1000 + int.from_bytes(h[3:5], 'big')}")
    return out


def _consumers_join(step: sc.ConsumersJoin, tables: Snapshot, *, first: Snapshot, start: int) -> Snapshot:
    """``start``: how many ids earlier steps of the scenario generated for the group and seed, so
    that two ``count`` steps add different clients. ``first``: the scenario's phase 0, whose topics
    of the group are its default even after every client of the group has left."""
    consumers = tables.consumers
    schema = consumers.schema
    ids = step.client_ids or tuple(generated_client_ids(step.group, step.count or 0, step.seed, start))
    if step.topics is not None:
        topics = pa.array(list(step.topics), schema.field("topic").type)
    else:
        known = [t.filter(pc.equal(t["group"], step.group))["topic"] for t in (consumers, first.consumers)]
        topics = pc.unique(pa.chunked_array([c for k in known for c in k.chunks], schema.field("topic").type))
    n = len(topics) * len(ids)  # every topic with every id
    given = {"group": step.group, "machine_room": step.machine_room, "language": step.language}
    columns = {
        "topic": topics.take(pa.array(np.repeat(np.arange(len(topics)), len(ids)))),
        "client_id": pa.array(list(ids) * len(topics), schema.field("client_id").type),
        **{c: _constant(v, schema.field(c).type, n) for c, v in given.items() if c in schema.names},
    }
    literal = {"group", *(c for c, v in given.items() if v is not None)}
    from_snapshot = _not_null(schema, "topic") & _not_null(first.consumers.schema, "topic")
    not_null = frozenset(literal) | (from_snapshot if step.topics is None else frozenset())
    return replace(tables, consumers=stacked(consumers, _rows(schema, n, columns, not_null)))


def _consumers_leave(step: sc.ConsumersLeave, tables: Snapshot) -> Snapshot:
    consumers = tables.consumers
    in_group = pc.equal(consumers["group"], step.group)
    ids = consumers["client_id"]
    if step.client_ids is not None:
        leaving = pa.array(list(step.client_ids), ids.type)
    else:
        # ``count`` of the group's clients, picked by a seeded hash: the same ones every run.
        clients = pc.unique(ids.filter(in_group))
        leaving = clients.take(pa.array(seeded_order(step.seed, clients)[: step.count or 0], pa.int64()))
    # A client leaves every topic of the group; a null id matches none (a join key).
    leaves = pc.is_in(ids, value_set=leaving, skip_nulls=True)
    return replace(tables, consumers=consumers.filter(pc.if_else(in_group, pc.invert(leaves), True)))


def _set_strategy(step: sc.SetStrategy, tables: Snapshot) -> Snapshot:
    updates = {
        "strategy": step.strategy.upper(),
        "virtual_node_cnt": step.virtual_node_cnt,
        "consumer_idcs": list(step.consumer_idcs) if step.consumer_idcs is not None else None,
        "inner_strategy": step.inner_strategy,
        "message_model": step.message_model,
    }
    return _set_group_columns(step.group, updates, tables)


def _set_rebalance(step: sc.SetRebalance, tables: Snapshot) -> Snapshot:
    updates = {
        "rebalance": step.rebalance,
        "request_mode": step.request_mode,
        "pop_share_queue_num": step.pop_share_queue_num,
    }
    return _set_group_columns(step.group, updates, tables)


def _designate(step: sc.Designate, tables: Snapshot) -> Snapshot:
    ips = None if step.ips is None else list(step.ips)
    return _set_group_columns(step.group, {"designated_ips": ips}, tables, nulls=step.ips is None)


def _set_group_columns(
    group: str, updates: dict[str, object], tables: Snapshot, *, nulls: bool = False
) -> Snapshot:
    """The groups rows of ``group`` (a name, or all) with ``updates`` (None: unchanged, or with
    ``nulls``, set to null)."""
    groups = tables.groups
    names = (group,) if group != sc.ALL else sc.ALL
    # Groups without a groups row run with the defaults: give the named ones a row to change.
    consumer_groups = pc.unique(tables.consumers["group"])
    named = consumer_groups.filter(_named(pa.chunked_array([consumer_groups]), names))
    had_row = pc.is_in(named, value_set=groups["group"].combine_chunks(), skip_nulls=True)
    missing = named.filter(pc.invert(had_row))
    new = _rows(groups.schema, len(missing), {"group": missing}, _not_null(tables.consumers.schema, "group"))
    groups = stacked(groups, new)
    chosen = _named(groups["group"], names)
    for column, value in updates.items():
        if (value is None and not nulls) or column not in groups.schema.names:
            continue
        literal = pa.scalar(value, groups.schema.field(column).type)
        groups = _with_column(
            groups, column, _when(chosen, literal, groups[column]), every_row=names == sc.ALL
        )
    return replace(tables, groups=groups)


# consumers_join also needs the scenario's earlier steps: phase_snapshots applies it.
def _set_traffic(step: sc.SetTraffic, tables: Snapshot) -> Snapshot:
    """Each named topic's producers at ``msgs_per_s`` in all (shared in their current proportions,
    evenly where they send nothing; a topic without producers gets one default population), or
    every named topic's producers times ``factor``."""
    producers = tables.producers
    if producers is None:
        producers = schemas_table(PRODUCERS)
    named = pc.fill_null(_named(producers["topic"], step.topics), False)
    rates = producers["msgs_per_s"]
    if step.factor is not None:
        scaled = pc.if_else(named, pc.multiply(rates, step.factor), rates)
        return replace(tables, producers=_with_column(producers, "msgs_per_s", scaled))
    total = pa.table(
        {
            "topic": producers["topic"],
            "rate": pc.fill_null(rates, 0.0),
            "one": pa.repeat(pa.scalar(1.0), producers.num_rows),
        }
    )
    sums = total.group_by("topic", use_threads=False).aggregate([("rate", "sum"), ("one", "sum")])
    at = pc.index_in(producers["topic"], value_set=sums["topic"])
    topic_rate, topic_count = sums["rate_sum"].take(at), sums["one_sum"].take(at)
    share = pc.if_else(
        pc.greater(topic_rate, 0),
        pc.divide(pc.fill_null(rates, 0.0), topic_rate),
        pc.divide(1.0, topic_count),
    )
    updated = _with_column(
        producers, "msgs_per_s", pc.if_else(named, pc.multiply(share, step.msgs_per_s), rates)
    )
    topics = pc.drop_null(pc.unique(tables.topic_queues["topic"]))
    wanted = topics if step.topics == sc.ALL else pa.array(list(step.topics), pa.string())
    missing = wanted.filter(pc.invert(pc.is_in(wanted, value_set=producers["topic"])))
    if len(missing):
        added = _rows(
            updated.schema,
            len(missing),
            {
                "topic": missing.cast(updated.schema.field("topic").type),
                "msgs_per_s": _constant(step.msgs_per_s, pa.float64(), len(missing)),
                "selector": _constant("ROUND_ROBIN", pa.string(), len(missing)),
                "send_latency_fault_enable": _constant(False, pa.bool_(), len(missing)),
            },
        )
        updated = stacked(updated, added)
    return replace(tables, producers=updated)


def _set_broker_latency(step: sc.SetBrokerLatency, tables: Snapshot) -> Snapshot:
    brokers = tables.brokers
    named = _named(brokers["broker_name"], step.names)
    value = pa.scalar(step.send_latency_ms, pa.float64())
    latency = pc.if_else(pc.fill_null(named, False), value, brokers["send_latency_ms"])
    return replace(tables, brokers=_with_column(brokers, "send_latency_ms", latency))


def _crash(step: sc.Crash, tables: Snapshot) -> Snapshot:
    """The clients stop: picked as consumers_leave picks them (the same ones for a seed), gone
    from every topic of the group. Whether the TCP connection closed changes only the timing."""
    leave = sc.ConsumersLeave(step.group, step.client_ids, step.count, step.seed)
    return _consumers_leave(leave, tables)


def _room_down(step: sc.RoomDown, tables: Snapshot) -> Snapshot:
    """Every broker instance in the rooms goes down and every consumer row in them goes, all
    groups; a null machine_room is in no room."""
    brokers, consumers = tables.brokers, tables.consumers
    down = _named(brokers["machine_room"], step.rooms)
    alive = _when(down, pa.scalar(False, brokers.schema.field("alive").type), brokers["alive"])
    in_rooms = pc.fill_null(_named(consumers["machine_room"], step.rooms), False)
    return replace(
        tables,
        brokers=_with_column(brokers, "alive", alive),
        consumers=consumers.filter(pc.invert(in_rooms)),
    )


def _rejoin(step: sc.Rejoin, tables: Snapshot) -> Snapshot:
    """A rolling restart's clients back with their new ids, as they were before they left."""
    return replace(tables, consumers=stacked(tables.consumers, step.rows))


APPLY: dict[type, Callable] = {
    sc.AddBrokers: _add_brokers,
    sc.RemoveBrokers: _remove_brokers,
    sc.BrokerDown: _set_alive(False),
    sc.BrokerUp: _set_alive(True),
    sc.SetQueueNums: _set_queue_nums,
    sc.ConsumersLeave: _consumers_leave,
    sc.SetStrategy: _set_strategy,
    sc.SetRebalance: _set_rebalance,
    sc.StaleView: lambda step, tables: tables,  # the state stays; only some clients' view differs
    sc.SetTraffic: _set_traffic,
    sc.SetBrokerLatency: _set_broker_latency,
    sc.Designate: _designate,
    sc.Crash: _crash,
    sc.RoomDown: _room_down,
    sc.Rejoin: _rejoin,
}


# ------------------------------------------------------------------ phases


def phase_snapshots(tables: Snapshot, scenario: sc.Scenario) -> list[Snapshot]:
    """Phase 0 (the snapshot) and the state after each step. A table a step leaves alone is the
    same object in the phases before and after it."""
    out = [tables]
    generated: dict[tuple[str, int], int] = {}
    for step in scenario.steps:
        if isinstance(step, sc.ConsumersJoin):
            key = (step.group, step.seed)
            start = generated.get(key, 0)
            out.append(_consumers_join(step, out[-1], first=tables, start=start))
            if not step.client_ids:
                generated[key] = start + (step.count or 0)
        else:
            out.append(APPLY[type(step)](step, out[-1]))
    return out


def phased(tables: Snapshot, scenarios: Sequence[sc.Scenario]) -> Snapshot:
    """Every phase of every scenario stacked into one snapshot keyed by (scenario, phase), those
    two columns first: each phase whole (``simulate --full-phases``). Offsets and CONFIG lists
    describe the fleet, not a phase: they stay.

    The key columns are not null where every phase's table names its own keys, and nullable in a
    table some of whose phases share one state."""
    if not scenarios:
        raise InputError("arguments", "--scenarios", "no scenario to run")
    return _stack(tables, [(s.name, phase_snapshots(tables, s)) for s in scenarios])


def phased_changes(
    tables: Snapshot,
    scenarios: Sequence[sc.Scenario],
    *,
    snapshot_name: str | None,
    lists_known: bool = False,
) -> tuple[Snapshot, pa.Table, list[tuple[str, int]]]:
    """Phase 0 once, whole, as scenario ``snapshot_name`` (None: left out); and each scenario's
    phases cut to the (topic, group)s its steps touch (scenarios.touched), its phase 0 among them
    (a later phase compares with it). With the touched table: what each later phase writes; and
    with ``lists_known`` (the caller has phase 0's client lists), the (scenario, phase)s whose
    consumers and groups are the snapshot's own, left without consumers rows in the stack."""
    runs = [] if snapshot_name is None else [(snapshot_name, [tables])]
    listed, known = [], []
    first_pairs, nobody = touched.pairs(tables.consumers), tables.consumers.slice(0, 0)
    for scenario in scenarios:
        snaps = phase_snapshots(_local(tables, scenario), scenario)
        same = [lists_known and s.consumers is tables.consumers and s.groups is tables.groups for s in snaps]
        cut = touched.restricted(snaps, scenario, first_pairs, consumers=not all(same))
        runs.append(
            (scenario.name, [replace(p, consumers=nobody) if k else p for p, k in zip(cut.phases, same)])
        )
        known += [(scenario.name, k) for k, s in enumerate(same) if s]
        listed.append(cut.touched)
    return _stack(tables, runs), pa.concat_tables([touched.TOUCHED.empty_table(), *listed]), known


# Steps that change only the group they name (not "all"): consumers and groups rows of it alone.
_ONE_GROUP = (
    sc.ConsumersJoin,
    sc.ConsumersLeave,
    sc.Crash,
    sc.Rejoin,
    sc.StaleView,
    sc.SetStrategy,
    sc.SetRebalance,
    sc.Designate,
)


def _local(tables: Snapshot, scenario: sc.Scenario) -> Snapshot:
    """``tables`` with consumers and groups cut to the groups the scenario's steps name, where
    every step changes only the group it names: its phases, once cut to what they touch, hold
    those groups alone, and a rolling restart's 80 phases then copy a group's rows, not the
    fleet's."""
    steps = scenario.steps
    if not steps or not all(isinstance(s, _ONE_GROUP) and s.group != sc.ALL for s in steps):
        return tables
    named = sorted({s.group for s in steps})

    def of(table: pa.Table) -> pa.Table:
        return table.filter(
            pc.is_in(table["group"], value_set=pa.array(named, table.schema.field("group").type))
        )

    return replace(tables, consumers=of(tables.consumers), groups=of(tables.groups))


def _stack(tables: Snapshot, runs: list[tuple[str, list[Snapshot]]]) -> Snapshot:
    """``runs``' phases (scenario name, phase snapshots) stacked keyed by (scenario, phase)."""
    phased_tables = [t for t in PHASED if getattr(tables, t) is not None]
    shared: dict[str, dict[int, tuple[pa.Table, list[tuple[str, int]]]]] = {t: {} for t in phased_tables}
    for name, snaps in runs:
        for k, snap in enumerate(snaps):
            for table_name, states in shared.items():
                table = getattr(snap, table_name)
                states.setdefault(id(table), (table, []))[1].append((name, k))
    return replace(tables, **{name: _stacked(list(states.values())) for name, states in shared.items()})


def _stacked(states: list[tuple[pa.Table, list[tuple[str, int]]]]) -> pa.Table:
    shared = any(len(keys) > 1 for _, keys in states)  # Spark cross joins it with keys that may be null
    keys = [pa.field("scenario", pa.string(), shared), pa.field("phase", pa.int32(), shared)]
    return stacked(
        *[
            pa.table(
                [
                    _constant(scenario, pa.string(), table.num_rows),
                    _constant(phase, pa.int32(), table.num_rows),
                ]
                + table.columns,
                schema=pa.schema([*keys, *table.schema]),
            )
            for table, phases in states
            for scenario, phase in phases
        ]
    )


def stale_views(tables: Snapshot, scenarios: Sequence[sc.Scenario]) -> pa.Table | None:
    """One row per (scenario, phase, group, stale client): the clients of each stale_view phase
    that still compute from ``view_phase`` (the phase before the change); None without any.

    ``fraction`` picks ceil(fraction x clients) of the group's clients by a seeded hash: the
    same ones every run."""
    parts = []
    for scenario in scenarios:
        views = scenario.stale_views()
        if not views:
            continue
        snaps = phase_snapshots(tables, scenario)
        for k, step in views:
            clients = _stale_clients(snaps[k - 1], step)
            n = len(clients)
            # Named clients come from a table of them; picked ones from the consumers table.
            nullable = (
                step.client_ids is not None or snaps[k - 1].consumers.schema.field("client_id").nullable
            )
            parts.append(
                pa.table(
                    [
                        _constant(scenario.name, pa.string(), n),
                        _constant(k, pa.int32(), n),
                        _constant(step.group, pa.string(), n),
                        clients.cast(pa.string()),
                        _constant(k - 2, pa.int32(), n),
                    ],
                    schema=STALE_VIEWS.set(3, STALE_VIEWS.field("client_id").with_nullable(nullable)),
                )
            )
    return stacked(*parts) if parts else None


def _stale_clients(current: Snapshot, step: sc.StaleView) -> pa.Array:
    if step.client_ids is not None:
        return pa.array(list(step.client_ids), pa.string())
    consumers = current.consumers
    clients = pc.unique(consumers["client_id"].filter(pc.equal(consumers["group"], step.group)))
    # Less a hair: 10 x 0.7 is 7.000000000000001 in floating point, and must pick 7.
    picked = math.ceil(len(clients) * float(step.fraction or 0) - 1e-9)
    return clients.take(pa.array(seeded_order(step.seed, clients)[: max(picked, 0)], pa.int64()))


def with_left_subscriptions(client_lists: pa.Table, scenarios: Sequence[sc.Scenario]) -> pa.Table:
    """``client_lists`` (routes.client_lists by phase) with an empty client list for each phase in
    which a (topic, group) has no client left but had one in an earlier phase of the scenario.

    The subscription outlives its consumers on the brokers: its queues still fill and nobody
    reads them, which group_metrics must show (every queue unassigned) rather than drop the
    group. Only groups a consumers_leave or crash step names, or any group in a scenario with a
    room_down, can lose every client."""
    steps = [s for run in scenarios for s in run.steps]
    leaving = sorted({s.group for s in steps if isinstance(s, (sc.ConsumersLeave, sc.Crash))})
    rooms_down = any(isinstance(s, sc.RoomDown) for s in steps)  # any group may lose every client
    if not leaving and not rooms_down:
        return client_lists
    key = [*PHASE, "topic", "group"]
    every_phase = pa.table(
        {
            "scenario": pa.array(
                [run.name for run in scenarios for _ in range(run.last_phase + 1)], pa.string()
            ),
            "phase": pa.array([k for run in scenarios for k in range(run.last_phase + 1)], pa.int32()),
        }
    )
    present = client_lists.select(key)
    if not rooms_down:
        present = present.filter(pc.is_in(present["group"], value_set=pa.array(leaving)))
    since = present.group_by(["scenario", "topic", "group"]).aggregate([("phase", "min")])
    left = (
        since.join(every_phase, "scenario", join_type="inner")
        .filter(pc.greater(pc.field("phase"), pc.field("phase_min")))
        .join(present, key, join_type="left anti")
    )
    n = left.num_rows
    schema = client_lists.schema
    empty = {
        f.name: _empty_lists(f.type, n)
        for f in schema
        if f.name not in key and f.name not in NULL_WHEN_ABSENT
    }
    # As Spark types the new rows: the phases come from a table of them, the lists are literals.
    not_null = _not_null(schema, "scenario", "topic", "group") | frozenset(empty)
    added = _rows(schema, n, {**{c: left[c].cast(schema.field(c).type) for c in key}, **empty}, not_null)
    return stacked(client_lists, added)


def _empty_lists(type_: pa.DataType, n: int) -> pa.Array:
    offsets = pa.array(np.zeros(n + 1, dtype=np.int64 if pa.types.is_large_list(type_) else np.int32))
    array_class = pa.LargeListArray if pa.types.is_large_list(type_) else pa.ListArray
    return array_class.from_arrays(offsets, pa.array([], type_.value_type), type=type_)
