"""What scenario steps refer to: every broker, topic, group, client and machine room a step names
must exist at that point of its scenario, or the run stops with an InputError before the
simulation starts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.errors import InputError
from rmqsim.scenarios.parse import (
    ALL,
    KIND_OF,
    AddBrokers,
    BrokerDown,
    BrokerUp,
    ConsumersJoin,
    ConsumersLeave,
    Crash,
    Designate,
    Rejoin,
    RemoveBrokers,
    RollingRestart,
    RoomDown,
    Scenario,
    SetBrokerLatency,
    SetQueueNums,
    SetRebalance,
    SetStrategy,
    SetTraffic,
    StaleView,
)
from rmqsim.snapshot.load import Snapshot


def existing_names(tables: Snapshot, wanted: Referenced, counted: frozenset[str] = frozenset()) -> Referenced:
    """The names of ``wanted`` that the snapshot holds, and how many distinct clients each
    ``counted`` group has. A machine room is there if a broker or a consumer is in it."""
    consumers = tables.consumers
    groups = _found(consumers["group"], wanted.groups) | _found(tables.groups["group"], wanted.groups)
    clients: frozenset[tuple[str, str]] = frozenset()
    if wanted.clients:
        # Only (group, client) pairs a step names: as few as the names, whatever the fleet's size.
        ids = pa.array(sorted({c for _, c in wanted.clients}), consumers["client_id"].type)
        named = consumers.filter(pc.is_in(consumers["client_id"], value_set=ids, skip_nulls=True))
        pairs = named.select(["group", "client_id"]).group_by(["group", "client_id"]).aggregate([])
        clients = frozenset(zip(pairs["group"].to_pylist(), pairs["client_id"].to_pylist())) & wanted.clients
    sizes = {g: 0 for g in counted}
    if counted:
        of_counted = consumers.filter(
            pc.is_in(consumers["group"], value_set=pa.array(sorted(counted), consumers["group"].type))
        )
        per_group = of_counted.group_by("group").aggregate(
            [("client_id", "count_distinct", pc.CountOptions(mode="all"))]
        )
        sizes.update(zip(per_group["group"].to_pylist(), per_group["client_id_count_distinct"].to_pylist()))
    return Referenced(
        brokers=_found(tables.brokers["broker_name"], wanted.brokers),
        topics=_found(tables.topic_queues["topic"], wanted.topics),
        groups=groups,
        clients=clients,
        sizes=sizes,
        rooms=_found(tables.brokers["machine_room"], wanted.rooms)
        | _found(consumers["machine_room"], wanted.rooms),
    )


def _found(column: pa.ChunkedArray, names: frozenset[str]) -> frozenset[str]:
    """The ``names`` the column holds."""
    if not names:
        return frozenset()
    value_set = pa.array(sorted(names), column.type)
    return frozenset(pc.unique(value_set.filter(pc.is_in(value_set, value_set=column))).to_pylist())


@dataclass(frozen=True)
class Referenced:
    """Every name the scenarios refer to, by kind: what the snapshot is asked about."""

    brokers: frozenset[str]
    topics: frozenset[str]
    groups: frozenset[str]
    clients: frozenset[tuple[str, str]]  # (group, client_id)
    # Clients per group, of the groups a ``count`` leave draws from (``counted_groups``).
    sizes: Mapping[str, int] = field(default_factory=dict, compare=False)
    rooms: frozenset[str] = frozenset()  # machine rooms


def referenced(scenarios: Iterable[Scenario]) -> Referenced:
    brokers: set[str] = set()
    topics: set[str] = set()
    groups: set[str] = set()
    clients: set[tuple[str, str]] = set()
    rooms: set[str] = set()
    for scenario in scenarios:
        for step in scenario.steps:
            if isinstance(step, RoomDown):
                rooms.update(step.rooms)
            brokers.update(_listed(getattr(step, "names", None)) + _listed(getattr(step, "brokers", None)))
            topics.update(_listed(getattr(step, "topics", None)))
            group = getattr(step, "group", None)
            if group is not None and group != ALL:
                groups.add(group)
            if isinstance(step, (ConsumersJoin, ConsumersLeave, Crash, StaleView)) and step.client_ids:
                clients.update((step.group, c) for c in step.client_ids)
    return Referenced(
        frozenset(brokers), frozenset(topics), frozenset(groups), frozenset(clients), rooms=frozenset(rooms)
    )


def counted_groups(scenarios: Iterable[Scenario]) -> frozenset[str]:
    """The groups a ``count`` leave or crash draws from: their client counts are checked against it."""
    return frozenset(
        step.group
        for scenario in scenarios
        for step in scenario.steps
        if isinstance(step, (ConsumersLeave, Crash)) and step.count is not None
    )


def _listed(value: object) -> list[str]:
    return list(value) if isinstance(value, tuple) else []


@dataclass
class _Names:
    brokers: set[str]
    topics: set[str]
    groups: set[str]
    clients: set[tuple[str, str]]
    sizes: dict[str, int]  # clients per group, for the counted groups
    rooms: set[str]  # machine rooms


def check_names(scenarios: Iterable[Scenario], existing: Referenced) -> None:
    """Walk each scenario's steps against the snapshot's names (``existing``: those of the
    referenced names that the snapshot holds, and the sizes of the counted groups), tracking what
    earlier steps add and remove."""
    for scenario in scenarios:
        names = _Names(
            set(existing.brokers),
            set(existing.topics),
            set(existing.groups),
            set(existing.clients),
            dict(existing.sizes),
            set(existing.rooms),
        )
        for k, step in enumerate(scenario.steps, 1):
            _CHECKS[type(step)](step, names, f"scenario '{scenario.name}', step {k}", KIND_OF[type(step)])


def _unknown(where: str, key: str, kind_name: str, missing: Iterable[str]) -> InputError:
    listed = ", ".join(repr(m) for m in sorted(missing))
    return InputError(where, key, f"no such {kind_name} in the snapshot at this step: {listed}")


def _require(have: set, wanted: Iterable, where: str, key: str, kind_name: str) -> None:
    missing = [w for w in wanted if w not in have]
    if missing:
        raise _unknown(where, key, kind_name, [m if isinstance(m, str) else m[1] for m in missing])


def _check_add(step: AddBrokers, names: _Names, where: str, kind: str) -> None:
    present = [n for n in step.names if n in names.brokers]
    if present:
        raise InputError(where, f"{kind}.names", f"broker(s) already in the snapshot: {present}")
    if step.topics != ALL:
        _require(names.topics, step.topics, where, f"{kind}.topics", "topic")
    names.brokers.update(step.names)
    if step.machine_room is not None:
        names.rooms.add(step.machine_room)


def _check_remove(step: RemoveBrokers, names: _Names, where: str, kind: str) -> None:
    _require(names.brokers, step.names, where, f"{kind}.names", "broker")
    names.brokers.difference_update(step.names)


def _check_brokers(step: BrokerDown | BrokerUp, names: _Names, where: str, kind: str) -> None:
    _require(names.brokers, step.names, where, f"{kind}.names", "broker")


def _check_queue_nums(step: SetQueueNums, names: _Names, where: str, kind: str) -> None:
    if step.topics != ALL:
        _require(names.topics, step.topics, where, f"{kind}.topics", "topic")
    if step.brokers != ALL:
        _require(names.brokers, step.brokers, where, f"{kind}.brokers", "broker")


def _check_traffic(step: SetTraffic, names: _Names, where: str, kind: str) -> None:
    if step.topics != ALL:
        _require(names.topics, step.topics, where, f"{kind}.topics", "topic")


def _check_join(step: ConsumersJoin, names: _Names, where: str, kind: str) -> None:
    _require(names.groups, [step.group], where, f"{kind}.group", "group")
    if step.topics is not None:
        _require(names.topics, step.topics, where, f"{kind}.topics", "topic")
    joining = {(step.group, c) for c in step.client_ids or ()} - names.clients
    if step.group in names.sizes:
        names.sizes[step.group] += len(joining) if step.client_ids else step.count or 0
    names.clients.update(joining)
    if step.machine_room is not None:
        names.rooms.add(step.machine_room)


def _check_leave(step: ConsumersLeave | Crash, names: _Names, where: str, kind: str) -> None:
    """A leave or crash: the group's named clients, or no more than its clients by count."""
    _require(names.groups, [step.group], where, f"{kind}.group", "group")
    if step.client_ids:
        wanted = [(step.group, c) for c in step.client_ids]
        _require(names.clients, wanted, where, f"{kind}.client_ids", f"client of group '{step.group}'")
        names.clients.difference_update(wanted)
    clients = names.sizes.get(step.group)
    if clients is None:
        return
    leaving = len(set(step.client_ids)) if step.client_ids else step.count or 0
    if leaving > clients:
        raise InputError(
            where,
            f"{kind}.count",
            f"{leaving} clients cannot {'crash in' if isinstance(step, Crash) else 'leave'} group "
            f"'{step.group}': it has {clients} at this step",
        )
    names.sizes[step.group] = clients - leaving


def _check_room_down(step: RoomDown, names: _Names, where: str, kind: str) -> None:
    # Its clients go too, but which ones only the data knows: later count checks keep their sizes.
    _require(names.rooms, step.rooms, where, f"{kind}.rooms", "machine room")


def _check_stale(step: StaleView, names: _Names, where: str, kind: str) -> None:
    _require(names.groups, [step.group], where, f"{kind}.group", "group")
    if step.client_ids:
        wanted = [(step.group, c) for c in step.client_ids]
        _require(names.clients, wanted, where, f"{kind}.client_ids", f"client of group '{step.group}'")


def _check_restart(step: RollingRestart, names: _Names, where: str, kind: str) -> None:
    """Every client of the group comes back with a new id: the old ones are no longer there."""
    _require(names.groups, [step.group], where, f"{kind}.group", "group")
    names.clients = {(g, c) for g, c in names.clients if g != step.group}


def _check_rejoin(step: Rejoin, names: _Names, where: str, kind: str) -> None:
    names.clients.update((step.group, c) for c in step.new_ids)


def _check_designate(step: Designate, names: _Names, where: str, kind: str) -> None:
    _require(names.groups, [step.group], where, f"{kind}.group", "group")


def _check_strategy(step: SetStrategy | SetRebalance, names: _Names, where: str, kind: str) -> None:
    if step.group != ALL:
        _require(names.groups, [step.group], where, f"{kind}.group", "group")


_CHECKS: dict[type, Callable] = {
    AddBrokers: _check_add,
    RemoveBrokers: _check_remove,
    BrokerDown: _check_brokers,
    BrokerUp: _check_brokers,
    SetQueueNums: _check_queue_nums,
    ConsumersJoin: _check_join,
    ConsumersLeave: _check_leave,
    SetStrategy: _check_strategy,
    SetRebalance: _check_strategy,
    StaleView: _check_stale,
    Designate: _check_designate,
    SetTraffic: _check_traffic,
    SetBrokerLatency: _check_brokers,
    Crash: _check_leave,
    RoomDown: _check_room_down,
    RollingRestart: _check_restart,
    Rejoin: _check_rejoin,
}
