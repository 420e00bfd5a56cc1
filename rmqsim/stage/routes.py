"""How a consumer sees its topic (docs/CONTRACT.md, section 2), built in the driver with pyarrow and
numpy, without a Spark job per step.

Routes stay compact: one row per topic with its brokers (in Java String order) and their read
queue counts, joined to one row per (topic, group) with its sorted client ids. Every list column is
one sort of the whole table by the row's keys and then the list's order, cut into runs of equal
keys. Joins go through row numbers, as Acero joins no table with a nested column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.arrays import combined, list_lengths
from rmqsim.arrays import offsets as csr_offsets
from rmqsim.javaorder import java_order
from rmqsim.schemas import PERM_READ, PHASE
from rmqsim.snapshot.text import normalised

ROUTES = schemas.GROUP_ROUTES_ARROW
QUEUE_REF = ROUTES.field("client_configs").type.value_type.value_type
BALANCING = ROUTES.field("balancing").type


def _list(value: pa.DataType, nullable: bool = True) -> pa.ListType:
    """A list type as the stage's tasks receive it: elements named ``element``, nullable or not."""
    return pa.list_(pa.field("element", value, nullable))


# The route columns' nested types, saying where a list holds no null.
CLIENT_CONFIG = _list(QUEUE_REF, nullable=False)
BACKLOGS = _list(
    pa.struct(
        [
            pa.field("broker_name", pa.string()),
            pa.field("queue_id", pa.int32()),
            pa.field("backlog", pa.int64(), nullable=False),
        ]
    ),
    nullable=False,
)
STRATEGIES = _list(pa.string(), nullable=False)


# ------------------------------------------------------------------ group, join


def _run_starts(rows: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """Where each run of equal ``keys`` starts (null equals null, as GROUP BY has it) in ``rows``,
    which are sorted by them."""
    new = np.zeros(rows.num_rows, dtype=bool)
    new[:1] = True
    for key in keys:
        column = combined(rows[key])
        after, before = column[1:], column[:-1]
        differs = pc.fill_null(pc.not_equal(after, before), pc.not_equal(after.is_null(), before.is_null()))
        new[1:] |= differs.to_numpy(zero_copy_only=False)
    return np.flatnonzero(new)


def _collect(
    table: pa.Table,
    keys: Sequence[str],
    lists: Mapping[str, str],
    *,
    order: Sequence[str] = (),
    keep: pa.Array | pa.ChunkedArray | None = None,
) -> pa.Table:
    """``keys`` once per distinct value (nulls equal) with ``lists``, output name to input column:
    the column's values in ``order``, ascending with nulls first (array_sort's order of a struct's
    fields). ``keep``: the rows whose values enter the lists; a group left without any keeps its
    row with empty lists, as collect_list gives it."""
    if keep is not None:
        table = table.append_column("_keep", keep)
    at = pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in (*keys, *order)])
    rows = table.select([*keys, *lists.values(), *(["_keep"] if keep is not None else [])]).take(at)
    starts = _run_starts(rows, keys)
    if keep is None:
        offsets = np.append(starts, rows.num_rows)
    else:
        kept = pc.fill_null(rows["_keep"], False).to_numpy(zero_copy_only=False)
        counts = np.add.reduceat(kept.astype(np.int64), starts) if len(starts) else np.zeros(0, np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)])
        rows = rows.filter(kept)
    out = table.select(keys).take(at.take(pa.array(starts, pa.int64())))
    for name, column in lists.items():
        values = combined(rows[column])
        out = out.append_column(
            name, pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, type=_list(values.type))
        )
    return out


def _left_join(left: pa.Table, right: pa.Table, keys: Sequence[str]) -> pa.Table:
    """SQL's LEFT JOIN USING ``keys``: each left row once per right row with equal keys (a null
    key equals none), or once with nulls; right's other columns after left's, in left's row order."""
    numbered = _numbered(right, keys, "_right")
    pairs = _numbered(left, keys, "_left").join(numbered, keys, join_type="left outer")
    pairs = pairs.sort_by([("_left", "ascending"), ("_right", "ascending")])
    # A left outer join keeps every left row: as many pairs as rows, and each row is there once.
    out = left if pairs.num_rows == left.num_rows else left.take(pairs["_left"])
    for field in right.schema:
        if field.name not in keys:
            out = out.append_column(field, right[field.name].take(pairs["_right"]))
    return out


def _numbered(table: pa.Table, keys: Sequence[str], name: str) -> pa.Table:
    return table.select(keys).append_column(name, pa.array(np.arange(table.num_rows), pa.int64()))


def _offsets(lengths: np.ndarray) -> pa.Array:
    return pa.array(csr_offsets(lengths), pa.int32())


def _or_empty(lists: pa.Array | pa.ChunkedArray, type: pa.ListType) -> pa.Array:
    """coalesce(lists, array()): a null list becomes an empty one."""
    lists = combined(lists)
    return pa.ListArray.from_arrays(_offsets(list_lengths(lists)), pc.list_flatten(lists), type=type)


def _repeated(values: Sequence[str], rows: int, type: pa.ListType) -> pa.Array:
    """The same list of strings on every row."""
    codes = np.tile(np.arange(len(values)), rows)
    flat = pa.array(list(values), pa.string()).take(pa.array(codes, pa.int64()))
    return pa.ListArray.from_arrays(_offsets(np.full(rows, len(values))), flat, type=type)


def _select(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table``'s columns of ``schema``, as its types. (Arrow casts no null struct to a struct
    whose fields hold no null, not even to its own type: an equal type is left alone.)"""
    columns = [combined(table[f.name]) for f in schema]
    return pa.Table.from_arrays(
        [c if c.type == f.type else c.cast(f.type) for c, f in zip(columns, schema)], schema=schema
    )


# ------------------------------------------------------------------ brokers and topics


def broker_facts(brokers: pa.Table, *, by: Sequence[str] = ()) -> pa.Table:
    """One row per broker_name: ``alive`` (an instance is up, so the NameServer still routes it;
    a null alive counts as up), ``master_alive`` (its master, id 0, is up: the proxy needs it) and
    ``machine_room`` (the master's where instances disagree; the greatest where rooms differ)."""
    alive = pc.fill_null(brokers["alive"], True)
    master = pc.equal(pc.fill_null(brokers["broker_id"], 0), 0)
    facts = pa.table(
        {
            **{k: brokers[k] for k in (*by, "broker_name")},
            "alive": alive,
            "master_alive": pc.and_(master, alive),
            "master_room": pc.if_else(master, brokers["machine_room"], pa.scalar(None, pa.string())),
            "machine_room": brokers["machine_room"],
        }
    ).group_by([*by, "broker_name"], use_threads=False)
    facts = facts.aggregate(
        [("alive", "any"), ("master_alive", "any"), ("master_room", "max"), ("machine_room", "max")]
    )
    room = pc.coalesce(facts["master_room_max"], facts["machine_room_max"])
    return pa.table(
        {
            **{k: facts[k] for k in (*by, "broker_name")},
            "alive": facts["alive_any"],
            "master_alive": facts["master_alive_any"],
            "machine_room": room,
        }
    )


def topic_routes(topic_queues: pa.Table, *, brokers: pa.Table, by: Sequence[str] = ()) -> pa.Table:
    """One row per topic (and ``by`` key, e.g. scenario and phase): ``broker_names`` in Java
    order, their ``read_queue_nums``, rooms and whether their masters are alive.

    A QueueData becomes queues when it has read permission and read queues on a live broker.
    mqAll is a set in the client, so repeated QueueData for one broker add no queues: a broker
    contributes queues 0..max(read_queue_nums)-1. A topic whose every QueueData is unreadable keeps
    its row with empty lists (the client then throws "mqAll is null or mqAll empty").
    """
    joined = _left_join(topic_queues, broker_facts(brokers, by=by), [*by, "broker_name"])
    can_read = pc.not_equal(pc.bit_wise_and(joined["perm"], PERM_READ), 0)
    readable = pc.and_kleene(
        pc.and_kleene(can_read, pc.greater(joined["read_queue_nums"], 0)),
        pc.fill_null(joined["alive"], False),
    )
    # A broker's facts hang on its name, so grouping by them too keeps one row per broker.
    per_broker = (
        joined.filter(pc.fill_null(readable, False))
        .group_by([*by, "topic", "broker_name", "machine_room", "master_alive"], use_threads=False)
        .aggregate([("read_queue_nums", "max")])
    )
    # Every topic once more, as a row that enters no list: a topic none of whose QueueData is
    # readable keeps its row (a join would lose a null topic, which GROUP BY keeps).
    topics = joined.group_by([*by, "topic"], use_threads=False).aggregate([])
    entries = pa.concat_tables(
        [
            per_broker.append_column("_entry", pa.array(np.ones(per_broker.num_rows, bool))),
            topics.append_column("_entry", pa.array(np.zeros(topics.num_rows, bool))),
        ],
        promote_options="default",  # the topic rows' other columns are null
    )
    entries = entries.append_column("_key", java_order(entries["broker_name"]))
    lists = {
        "broker_names": "broker_name",
        "read_queue_nums": "read_queue_nums_max",
        "broker_rooms": "machine_room",
        "broker_masters": "master_alive",
    }
    out = _collect(entries, [*by, "topic"], lists, order=["_key"], keep=entries["_entry"])
    return _select(out, _schema(out, {c: ROUTES.field(c).type for c in lists}))


def _schema(table: pa.Table, types: Mapping[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(f.name, types.get(f.name, f.type)) for f in table.schema])


# ------------------------------------------------------------------ clients


def configured_queues(queue_config: pa.Table) -> pa.Table:
    """One row per (group, topic, client_id): its CONFIG queue list, distinct, in mqAll order."""
    keys = ["group", "topic", "client_id"]
    entries = queue_config.group_by([*keys, "broker_name", "queue_id"], use_threads=False).aggregate([])
    queue = pa.StructArray.from_arrays(
        [combined(entries["broker_name"]), combined(entries["queue_id"])], fields=list(QUEUE_REF)
    )
    entries = entries.append_column("_queue", queue)
    entries = entries.append_column("_key", java_order(entries["broker_name"]))
    out = _collect(entries, keys, {"client_config": "_queue"}, order=["_key", "broker_name", "queue_id"])
    return _select(out, _schema(out, {"client_config": CLIENT_CONFIG}))


def client_lists(
    consumers: pa.Table,
    *,
    queue_config: pa.Table | None = None,
    languages: bool = False,
    capacities: bool = False,
    designation: bool = False,
    by: Sequence[str] = (),
) -> pa.Table:
    """One row per (topic, group) and ``by`` key: ``client_ids`` in Java order, duplicates kept
    as reported, with each client's machine room, CONFIG list (null without queue_config rows) and
    library (null unless ``languages``: the consumers table has a language column) alongside;
    with ``capacities``, each client's capacity (its column ``capacity_msgs_per_s``, the group's
    default already filled in: with_group_capacities), and with ``designation``, whether it runs
    the designated-machines code (null: it does).

    Without a queue_config table ``client_configs`` is null for the whole row, and so is
    ``client_languages`` without languages: a list of nulls per client costs more to hand to
    Python than the client ids themselves.
    """
    lists = {"client_ids": "client_id", "client_rooms": "machine_room"}
    # array_sort compares whole structs: the fields after the key break its ties. A client's
    # CONFIG list follows from its id, so only the room and the library can break a tie.
    order = ["_key", "client_id", "machine_room"]
    if queue_config is not None:
        consumers = _left_join(consumers, configured_queues(queue_config), ["group", "topic", "client_id"])
        lists["client_configs"] = "client_config"
    if languages:
        consumers = consumers.append_column("_language", normalised(consumers["language"]))
        lists["client_languages"] = "_language"
        order.append("_language")
    if capacities:
        lists["client_capacities"] = "capacity_msgs_per_s"
    if designation:
        consumers = consumers.append_column("_aware", pc.fill_null(consumers["designated_aware"], True))
        lists["client_designated_aware"] = "_aware"
    consumers = consumers.append_column("_key", java_order(consumers["client_id"]))
    out = _collect(consumers, [*by, "topic", "group"], lists, order=order)
    per_client = ("client_configs", "client_languages", "client_capacities", "client_designated_aware")
    types = {c: ROUTES.field(c).type for c in ("client_ids", "client_rooms", *per_client)}
    if queue_config is not None:
        # A client's CONFIG list holds no null entry.
        types["client_configs"] = _list(CLIENT_CONFIG)
    for absent in per_client:
        if absent not in lists:
            out = out.append_column(absent, pa.nulls(out.num_rows, types[absent]))
    keys = [out.schema.field(k) for k in (*by, "topic", "group")]
    return _select(out, pa.schema([*keys, *[pa.field(c, t) for c, t in types.items()]]))


# ------------------------------------------------------------------ strategies


def with_group_capacities(consumers: pa.Table, groups: pa.Table, by: Sequence[str] = ()) -> pa.Table:
    """consumers with each client's capacity: its own, else its group's (docs/CONTRACT.md, 2d)."""
    keys = [*by, "group"]
    own = combined(consumers["capacity_msgs_per_s"])
    # Only the rows without a capacity of their own look their group's up.
    absent = pc.is_null(own)
    missing = np.flatnonzero(absent.to_numpy(zero_copy_only=False))
    if not len(missing):
        return consumers
    asking = consumers.select(keys).take(pa.array(missing))
    defaults = pa.table({**{k: groups[k] for k in keys}, "_group_capacity": groups["capacity_msgs_per_s"]})
    # The checks keep one groups row per group, and steps only add rows for groups without one:
    # each consumer row finds at most one, so a lookup (a null key finds none).
    pairs = _numbered(asking, keys, "_left").join(_numbered(defaults, keys, "_right"), keys)
    if pairs.num_rows != asking.num_rows:
        raise ValueError("a group with more than one groups row")
    right = pairs.sort_by("_left")["_right"]
    filled = pc.replace_with_mask(own, absent, combined(defaults["_group_capacity"].take(right)))
    return consumers.set_column(
        consumers.column_names.index("capacity_msgs_per_s"), "capacity_msgs_per_s", filled
    )


def normalised_strategy(groups: pa.Table) -> pa.Array:
    return normalised(pc.coalesce(groups["strategy"], "AVG"))


def with_strategies(
    client_lists: pa.Table,
    *,
    groups: pa.Table,
    strategies: Sequence[str] | None,
    balancing: bool = False,
    by: Sequence[str] = (),
) -> pa.Table:
    """Add the group's parameters and the ``strategies`` to run: the group's configured one (None),
    or the named ones (narrowed by group_routes to those the group has the configuration for).
    ``balancing``: the groups table says who balances (schemas.BALANCING); else that is null."""
    params = pa.table(
        {
            **{k: groups[k] for k in (*by, "group")},
            "_strategy": normalised_strategy(groups),
            "_virtual_node_cnt": groups["virtual_node_cnt"],
            "_consumer_idcs": groups["consumer_idcs"],
            "_inner_strategy": normalised(groups["inner_strategy"]),
            "_message_model": normalised(groups["message_model"]),
            "_rebalance": normalised(groups["rebalance"]),
            "_request_mode": normalised(groups["request_mode"]),
            "_pop_share_queue_num": groups["pop_share_queue_num"],
            "_consume_orderly": groups["consume_orderly"],
            "_designated_ips": groups["designated_ips"],
        }
    )
    joined = _left_join(client_lists, params, [*by, "group"])
    rows = joined.num_rows
    if strategies is None:
        configured = combined(pc.coalesce(joined["_strategy"], "AVG"))
        requested = pa.ListArray.from_arrays(_offsets(np.ones(rows, np.int64)), configured, type=STRATEGIES)
    else:
        requested = _repeated(strategies, rows, STRATEGIES)
    added = {
        "strategies": requested,
        "compare": pa.array(np.full(rows, strategies is not None)),
        "virtual_node_cnt": pc.coalesce(joined["_virtual_node_cnt"], pa.scalar(10, pa.int32())),
        "consumer_idcs": joined["_consumer_idcs"],
        "inner_strategy": pc.coalesce(joined["_inner_strategy"], "AVG"),
        "message_model": pc.coalesce(joined["_message_model"], "CLUSTERING"),
        "balancing": _balancing(joined, null=not balancing),
        "designated_ips": joined["_designated_ips"],
    }
    out = joined.select(client_lists.column_names)
    for name, column in added.items():
        out = out.append_column(name, column)
    return out


def _balancing(joined: pa.Table, *, null: bool) -> pa.Array:
    """schemas.BALANCING with the contract's defaults: the client balances, PULL, -1, not orderly.
    ``null``: every row null, over fields that hold values (the schema says they hold no null)."""
    return pa.StructArray.from_arrays(
        [
            combined(pc.coalesce(joined["_rebalance"], "CLIENT")),
            combined(pc.fill_null(pc.equal(joined["_request_mode"], "POP"), False)),
            combined(pc.coalesce(joined["_pop_share_queue_num"], pa.scalar(-1, pa.int32()))),
            combined(pc.fill_null(joined["_consume_orderly"], False)),
        ],
        fields=list(BALANCING),
        mask=pa.array(np.full(joined.num_rows, null)),
    )


# ------------------------------------------------------------------ the allocation stage's input


def queue_backlogs(offsets: pa.Table) -> pa.Table:
    """One row per (group, topic): each queue's backlog, the messages not yet consumed, in mqAll
    order (the stage looks each queue up)."""
    behind = pc.subtract_checked(offsets["broker_offset"], offsets["consumer_offset"])
    backlog = pc.max_element_wise(behind, pa.scalar(0, pa.int64()), skip_nulls=True).cast(pa.int64())
    queue_id = combined(offsets["queue_id"].cast(pa.int32()))
    entry = pa.StructArray.from_arrays(
        [combined(offsets["broker_name"]), queue_id, combined(backlog)], fields=list(BACKLOGS.value_type)
    )
    entries = pa.table(
        {
            "group": offsets["group"],
            "topic": offsets["topic"],
            "_backlog": entry,
            "_key": java_order(offsets["broker_name"]),
            "_queue_id": queue_id,
            "_size": backlog,
        }
    )
    out = _collect(
        entries, ["group", "topic"], {"backlogs": "_backlog"}, order=["_key", "_queue_id", "_size"]
    )
    return _select(out, _schema(out, {"backlogs": BACKLOGS}))


# What a strategy needs to run on a (topic, group) when several strategies are compared, and the
# reject reason where it lacks it. (With --strategies configured it runs regardless, and the
# client's exception is reported instead.)
REASONS = {
    "CONFIG": "CONFIG needs queue_config rows for the group's clients on this topic",
    "MACHINE_ROOM": "MACHINE_ROOM needs groups.consumer_idcs",
    "MACHINE_ROOM_NEARBY": "MACHINE_ROOM_NEARBY needs a machine_room for every broker and client",
}


def _needs(df: pa.Table) -> dict[str, pa.Array]:
    """Per row, whether it has what each of REASONS' strategies needs (null where unknown)."""
    configs = combined(df["client_configs"])
    listed = pc.list_flatten(configs).is_valid().to_numpy(zero_copy_only=False)
    configured = np.bincount(pc.list_parent_indices(configs).to_numpy()[listed], minlength=len(configs)) > 0
    # A (topic, group) every client left (scenarios.apply.with_left_subscriptions) has none to configure.
    nobody = pc.equal(pc.list_value_length(df["client_ids"]), 0)
    rooms = pc.and_kleene(_all_rooms(df["broker_rooms"]), _all_rooms(df["client_rooms"]))
    return {
        "CONFIG": pc.or_kleene(pa.array(configured), nobody),
        "MACHINE_ROOM": df["consumer_idcs"].is_valid(),
        "MACHINE_ROOM_NEARBY": rooms,
    }


def _all_rooms(rooms: pa.Array | pa.ChunkedArray) -> pa.Array:
    """forall(rooms, r -> r is not null and r != ''); null for a null list."""
    rooms = combined(rooms)
    named = pc.fill_null(pc.not_equal(pc.list_flatten(rooms), ""), False).to_numpy(zero_copy_only=False)
    unnamed = np.bincount(pc.list_parent_indices(rooms).to_numpy()[~named], minlength=len(rooms))
    return pc.if_else(rooms.is_valid(), pa.array(unnamed == 0), pa.scalar(None, pa.bool_()))


def _split_strategies(df: pa.Table) -> tuple[pa.Array, pa.Array]:
    """(strategies, skipped): when strategies are compared, those the row lacks the configuration
    for leave ``strategies`` for ``skipped``, with the reason. A strategy whose test is null is in
    neither (no input here gives one)."""
    named = combined(df["strategies"])
    row = pc.list_parent_indices(named)
    flat = pc.list_flatten(named)
    runnable = pa.array(np.ones(len(flat), bool))
    for strategy, can in _needs(df).items():
        runnable = pc.if_else(
            pc.fill_null(pc.equal(flat, strategy), False), combined(can).take(row), runnable
        )
    skip = pc.and_kleene(combined(df["compare"]).take(row), pc.invert(runnable))
    reasons = pa.array(list(REASONS.values()), pa.string()).take(pc.index_in(flat, pa.array(list(REASONS))))
    entry = pa.StructArray.from_arrays([flat, reasons], fields=list(ROUTES.field("skipped").type.value_type))

    def where(keep: pa.Array, values: pa.Array) -> pa.Array:  # filter(strategies, keep)
        keep = pc.fill_null(keep, False)
        counts = np.bincount(row.to_numpy()[keep.to_numpy(zero_copy_only=False)], minlength=len(named))
        return pa.ListArray.from_arrays(_offsets(counts), values.filter(keep), mask=named.is_null())

    return where(pc.invert(skip), flat), where(skip, entry)


def _stale_per_group(stale_views: pa.Table) -> pa.Table:
    """One row per (scenario, phase, group): its stale clients, distinct and sorted (by UTF-8
    bytes: the stage looks them up), and the greatest view_phase."""
    keys = [*PHASE, "group"]
    # Distinct, without nulls; a group of null ids alone gets an empty list.
    distinct = stale_views.group_by([*keys, "client_id"], use_threads=False).aggregate([])
    ids = distinct["client_id"]
    clients = _collect(
        distinct, keys, {"stale_clients": "client_id"}, order=["client_id"], keep=ids.is_valid()
    )
    views = stale_views.group_by(keys, use_threads=False).aggregate([("view_phase", "max")])
    return _left_join(clients, views.rename_columns([*keys, "view_phase"]), keys)


def group_routes(
    client_lists: pa.Table,
    *,
    routes: pa.Table,
    last_phase: dict[str, int],
    offsets: pa.Table | None = None,
    stale_views: pa.Table | None = None,
    masters: bool = True,
    inflow: pa.Table | None = None,
    drain_target_s: float | None = None,
    events: pa.Table | None = None,
) -> pa.Table:
    """The allocation stage's input (schemas.GROUP_ROUTES), from phase-keyed client lists (with
    their strategies: with_strategies) and routes: a group's clients beside its topic's route;
    when strategies are compared, those the group lacks the configuration for are moved to
    ``skipped`` with the reason.

    A topic that a step left without any QueueData keeps its clients, with an empty route: the
    client then throws "mqAll is null or mqAll empty", which is what a user must see.
    ``stale_views`` (scenarios.apply.stale_views) names the clients of a phase that compute from
    an earlier one.
    ``masters``: keep ``broker_masters`` (null otherwise). ``inflow``: stage.inflow's topic_inflow,
    each (scenario, phase, topic)'s queue_inflow, stranded_inflow and drained_queues (null without
    traffic). ``drain_target_s``: the seconds a backlog should drain within (section 2d), on
    every row (null: no capacity figures). ``events``: handover.events, each later phase's
    ``handover_event`` (null without a step).
    """
    arrays = ("broker_names", "read_queue_nums", "broker_rooms", "broker_masters")
    df = _left_join(client_lists, routes.select([*PHASE, "topic", *arrays]), [*PHASE, "topic"])
    absent = {
        "backlogs",
        "stale_clients",
        "view_phase",
        "queue_inflow",
        "stranded_inflow",
        "drained_queues",
        "written",
        "handover_event",
    }
    if events is not None:
        df = _left_join(df, events, [*PHASE])
        absent -= {"handover_event"}
    if inflow is not None:
        df = _left_join(df, inflow, [*PHASE, "topic"])
        absent -= set(inflow.column_names)
    if offsets is not None:
        df = _left_join(df, queue_backlogs(offsets), ["group", "topic"])
        absent -= {"backlogs"}
    if stale_views is not None:
        df = _left_join(df, _stale_per_group(stale_views), [*PHASE, "group"])
        absent -= {"stale_clients", "view_phase"}
    columns = {name: df[name] for name in df.column_names}
    columns |= {c: pa.nulls(df.num_rows, ROUTES.field(c).type) for c in absent}
    columns |= {c: _or_empty(df[c], ROUTES.field(c).type) for c in arrays}
    columns["strategies"], columns["skipped"] = _split_strategies(pa.table(columns))
    scenarios = sorted(last_phase)
    at = pc.index_in(df["scenario"], pa.array(scenarios, pa.string()))
    columns["last_phase"] = pa.array([last_phase[s] for s in scenarios], pa.int32()).take(at)
    columns["drain_target_s"] = pa.repeat(pa.scalar(drain_target_s, pa.float64()), df.num_rows)
    if not masters:
        # Only the proxy reads whether a broker's master is up: null unless a group may need it.
        columns["broker_masters"] = pa.nulls(df.num_rows, ROUTES.field("broker_masters").type)
    return _select(pa.table(columns), ROUTES)
