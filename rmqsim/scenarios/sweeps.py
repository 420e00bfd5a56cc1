"""Sweeps (docs/CONTRACT.md, section 2f): a family of one-step scenarios, one per element of the
snapshot, so that failures can be ranked against each other.

An element's scenario is named ``<sweep>/<element>``: a broker name (``broker_down``), a machine
room (``room_down``), or ``<group>:<client_id>`` (``crash``, one client of one group). Elements
come in sorted order (UTF-8 bytes, as Arrow sorts); a listed name the snapshot does not hold is an
InputError naming the sweep and the name.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.errors import InputError
from rmqsim.scenarios.parse import ALL, ELEMENT, BrokerDown, Crash, RoomDown, Scenario, Step, Sweep
from rmqsim.snapshot.load import Snapshot


def expand(sweeps: Iterable[Sweep], snapshot: Snapshot) -> dict[str, tuple[Scenario, ...]]:
    """Each sweep's element scenarios, by sweep name."""
    return {sweep.name: elements(sweep, snapshot) for sweep in sweeps}


def elements(sweep: Sweep, snapshot: Snapshot) -> tuple[Scenario, ...]:
    """One single-step scenario per element of ``sweep``, in sorted element order."""
    if sweep.each == "broker_down":
        brokers = _chosen(sweep, _distinct(snapshot.brokers["broker_name"]), "broker")
        return _scenarios(sweep, brokers, [BrokerDown(names=(b,)) for b in brokers.to_pylist()])
    if sweep.each == "room_down":
        both = [snapshot.brokers["machine_room"], snapshot.consumers["machine_room"]]
        rooms = _chosen(sweep, _distinct(*both), "machine room")
        return _scenarios(sweep, rooms, [RoomDown(rooms=(r,)) for r in rooms.to_pylist()])
    if sweep.each == "crash":
        return _crashes(sweep, snapshot.consumers)
    raise ValueError(f"sweep '{sweep.name}': no sweep of {sweep.each!r}")  # parse allows none other


def _crashes(sweep: Sweep, consumers: pa.Table) -> tuple[Scenario, ...]:
    """One client of one of the sweep's groups crashing, per (group, client_id) of the consumers."""
    groups = _chosen(sweep, _distinct(consumers["group"]), "consumer group")
    of_groups = consumers.filter(pc.is_in(consumers["group"], value_set=groups, skip_nulls=True))
    pairs = (
        pa.table(
            {
                "group": of_groups["group"].cast(pa.string()),
                "client_id": of_groups["client_id"].cast(pa.string()),
            }
        )
        .filter(pc.is_valid(pc.field("client_id")))
        .group_by(["group", "client_id"], use_threads=False)
        .aggregate([])
    )
    text = pc.binary_join_element_wise(pairs["group"], pairs["client_id"], ":")
    order = pc.sort_indices(text)
    texts, groups_of, clients = (a.take(order) for a in (text, pairs["group"], pairs["client_id"]))
    steps = [
        Crash(group=g, client_ids=(c,))
        for g, c in zip(groups_of.to_pylist(), clients.to_pylist(), strict=True)
    ]
    return _scenarios(sweep, texts, steps)


def _scenarios(sweep: Sweep, names: pa.Array | pa.ChunkedArray, steps: list[Step]) -> tuple[Scenario, ...]:
    return tuple(
        Scenario(f"{sweep.name}{ELEMENT}{name}", (step,))
        for name, step in zip(names.to_pylist(), steps, strict=True)
    )


def _distinct(*columns: pa.ChunkedArray) -> pa.Array:
    """The sorted distinct non-null values of the columns, as strings."""
    chunks = [chunk.cast(pa.string()) for column in columns for chunk in column.chunks]
    values = pc.drop_null(pc.unique(pa.chunked_array(chunks, pa.string())))
    return values.take(pc.sort_indices(values))


def _chosen(sweep: Sweep, existing: pa.Array, kind: str) -> pa.Array:
    """``existing`` for ``of: all``, else the listed names (sorted), each of which must exist."""
    if sweep.of == ALL:
        return existing
    listed = pa.array(sorted(sweep.of), pa.string())
    missing = listed.filter(pc.invert(pc.is_in(listed, value_set=existing)))
    if len(missing):
        names = ", ".join(repr(m) for m in missing.to_pylist())
        raise InputError(f"sweep '{sweep.name}'", "of", f"no such {kind} in the snapshot: {names}")
    return listed
