"""What a run writes of a scenario's later phases, and its full phases rebuilt from phase 0 and
what they wrote (docs/CONTRACT.md, section 4: "Later phases hold what changed").

Phase 0 is written once, as scenario ``baseline``; a later phase k of scenario S writes only the rows
of the (topic, group)s that ``touched/`` lists for (S, k). Every other row of (S, k) is phase 0's
with S and k put in. movement's phase-0 rows compare each (topic, group) of phase 0 with itself
(from_phase 0, to_phase 0): the row an untouched pair of phases repeats.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.stage import inflow

SNAPSHOT = "baseline"  # the scenario name phase 0 is written under
# What identifies a row's (topic, group) in each table rebuilt: a row is phase 0's unless touched/
# lists its key for the phase.
KEYS: dict[str, tuple[str, ...]] = {
    "assignments": ("topic", "group"),
    "group_metrics": ("topic", "group"),
    "consumer_load": ("group",),
    "falling_behind": ("group",),
    "movement": ("topic", "group"),
    "queue_traffic": ("topic",),
    "unroutable": ("topic",),
    "allocation_rejects": ("topic", "group"),
    "traffic_rejects": ("topic",),
}
PHASED_TABLES = (
    "assignments",
    "group_metrics",
    "consumer_load",
    "falling_behind",
    "movement",
    "queue_traffic",
)
# group_metrics' columns for what a group would get another way: looked at in phase 0 only
# (stage.alternatives), so null in the later phases that repeat phase 0's rows.
PHASE_0_ONLY = {
    "group_metrics": (
        "pop_idle_consumers",
        "pop_max_message_share",
        "one_library_multi_owned",
        "one_library_unassigned",
    )
}


# ------------------------------------------------------------------ what a run writes


def _written(table: pa.Table, listed: pa.Table, *columns: str) -> pa.ChunkedArray:
    """Per row: phase 0's (scenario SNAPSHOT), or of a (scenario, phase, ``columns``) that
    ``listed`` (touched/) names."""
    snapshot = pc.equal(table["scenario"], SNAPSHOT)
    named = pc.is_in(_key(table, columns), value_set=pc.unique(_key(listed, columns)))
    return pc.or_(snapshot, named)


def marked_written(group_routes: pa.Table, listed: pa.Table) -> pa.Table:
    """The routes with ``written`` set: the stage writes phase 0 once and a later phase's touched
    groups; a scenario's phase 0 and its untouched groups are there for the phases that compare."""
    written = _written(
        group_routes, listed.filter(pc.is_valid(listed["group"])), "scenario", "phase", "group"
    )
    i = group_routes.schema.get_field_index("written")
    return group_routes.set_column(i, group_routes.schema.field(i), written)


def written_traffic(traffic: inflow.Traffic, listed: pa.Table) -> inflow.Traffic:
    """Queue traffic, unroutable rates and traffic rejects of phase 0 and the touched topics."""

    def queues() -> pa.Table:
        table = traffic.queue_traffic
        return table.filter(_written(table, listed, "scenario", "phase", "topic"))

    unroutable = traffic.unroutable.filter(_written(traffic.unroutable, listed, "scenario", "phase", "topic"))
    rejects = traffic.rejects  # a few populations
    rejects = rejects.filter(_written(_reject_keys(rejects), listed, "scenario", "phase", "topic"))
    return replace(traffic, unroutable=unroutable, rejects=rejects, build_queue_traffic=queues)


# ------------------------------------------------------------------ full phases again


def last_phases(summary: pa.Table) -> dict[str, int]:
    """Each scenario's last phase, from a run's summary (it covers every phase of every scenario)."""
    out: dict[str, int] = {}
    for name, phase in zip(summary["scenario"].to_pylist(), summary["phase"].to_pylist()):
        out[name] = max(out.get(name, 0), phase)
    return out


def _key(table: pa.Table, columns: tuple[str, ...]) -> pa.ChunkedArray:
    if len(columns) == 1:
        return pc.fill_null(pc.cast(table[columns[0]], pa.string()), "\x00")
    parts = [pc.fill_null(pc.cast(table[c], pa.string()), "\x00") for c in columns]
    return pc.binary_join_element_wise(*parts, "\x1f")


def relabelled(rows: pa.Table, scenario: str, phase_columns: Mapping[str, int]) -> pa.Table:
    """``rows`` as ``scenario``'s, with ``phase_columns`` (column -> phase) set on every row."""
    out = rows.set_column(
        rows.schema.get_field_index("scenario"),
        rows.schema.field("scenario"),
        pa.repeat(pa.scalar(scenario, rows.schema.field("scenario").type), rows.num_rows),
    )
    for column, value in phase_columns.items():
        i = out.schema.get_field_index(column)
        out = out.set_column(
            i, out.schema.field(i), pa.repeat(pa.scalar(value, out.schema.field(i).type), rows.num_rows)
        )
    return out


def full(
    name: str,
    table: pa.Table,
    touched: pa.Table | None,
    last: Mapping[str, int],
    *,
    scenarios: tuple[str, ...] | None = None,
    phase: int | None = None,
) -> pa.Table:
    """``table`` (one of KEYS, as a run wrote it) with every phase of every scenario whole:
    what ``simulate --full-phases`` writes. ``touched``: the run's touched/ (None: the run wrote
    every phase whole, and ``table`` is returned as it is). ``last``: each scenario's last phase;
    ``scenarios``: only these; ``phase``: only this phase of theirs (movement: to it)."""
    if touched is None:
        return table
    at = "to_phase" if name == "movement" else "phase"
    snapshot = pc.equal(table["scenario"], SNAPSHOT)
    base = table.filter(pc.and_(snapshot, pc.equal(table[at], 0)))
    written = table.filter(pc.invert(snapshot))
    base_key = keyed(base, name)
    wanted = [s for s in last if s != SNAPSHOT and (scenarios is None or s in scenarios)]
    parts = [
        _untouched(name, base, base_key, touched, scenario, last[scenario], phase) for scenario in wanted
    ]
    if phase is not None:
        written = written.filter(pc.equal(written[at], phase))
    if scenarios is not None:
        written = written.filter(pc.is_in(written["scenario"], value_set=pa.array(wanted, pa.string())))
    elif not wanted:
        return table  # no scenario: phase 0 is the run
    return pa.concat_tables([p.cast(table.schema) for p in [*parts, written]])


def of_scenario(
    name: str,
    base: pa.Table,
    base_key: pa.ChunkedArray,
    written: pa.Table,
    touched: pa.Table,
    scenario: str,
    last: int,
    phase: int | None = None,
) -> pa.Table:
    """``full``'s rows of one scenario, from phase 0's rows (``base``, keyed by ``base_key``:
    ``keyed(base, name)``, so that many scenarios key them once) and the rows ``scenario`` wrote
    (``written``, its rows alone); ``last``: its last phase."""
    at = "to_phase" if name == "movement" else "phase"
    if phase is not None:
        written = written.filter(pc.equal(written[at], phase))
    parts = [_untouched(name, base, base_key, touched, scenario, last, phase), written]
    return pa.concat_tables([p.cast(base.schema) for p in parts])


def keyed(table: pa.Table, name: str) -> pa.ChunkedArray:
    """Each row's (topic, group) or whichever KEYS names for table ``name``: what touched/ lists."""
    return _key(table, KEYS[name])


def _untouched(
    name: str,
    base: pa.Table,
    base_key: pa.ChunkedArray,
    touched: pa.Table,
    scenario: str,
    last: int,
    phase: int | None,
) -> pa.Table:
    """Phase 0's rows as ``scenario``'s phases (``phase``: only that one) have them where its steps
    left them untouched."""
    movement = name == "movement"
    mine = touched.filter(pc.equal(touched["scenario"], scenario))
    parts = []
    if not movement and phase in (None, 0):
        parts.append(relabelled(base, scenario, {"phase": 0}))
    phase_of = mine["phase"].to_numpy()
    keys_of = keyed(mine, name)
    for k in range(1, last + 1) if phase is None else range(max(phase, 1), min(phase, last) + 1):
        listed = pc.unique(keys_of.filter(pa.array(phase_of == k)))
        kept = base.filter(pc.invert(pc.is_in(base_key, value_set=listed)))
        if movement:
            parts.append(relabelled(kept, scenario, {"from_phase": k - 1, "to_phase": k}))
            if k == last and k >= 2:
                parts.append(relabelled(kept, scenario, {"from_phase": 0, "to_phase": k}))
        else:
            parts.append(_later(relabelled(kept, scenario, {"phase": k}), name))
    return pa.concat_tables([p.cast(base.schema) for p in parts]) if parts else base.slice(0, 0)


def at_phase_0(name: str, base: pa.Table, touched: pa.Table, scenario: str) -> pa.Table:
    """Phase 0's rows (``base``) of the keys ``touched`` lists, as ``scenario``'s phase 0."""
    listed = pc.unique(_key(touched, KEYS[name]))
    return relabelled(base.filter(pc.is_in(_key(base, KEYS[name]), value_set=listed)), scenario, {"phase": 0})


def _later(rows: pa.Table, name: str) -> pa.Table:
    """Phase 0's rows as a later phase has them: PHASE_0_ONLY's columns null."""
    for column in PHASE_0_ONLY.get(name, ()):
        if column in rows.column_names:
            i = rows.schema.get_field_index(column)
            rows = rows.set_column(
                i, rows.schema.field(i), pa.nulls(rows.num_rows, rows.schema.field(i).type)
            )
    return rows


def full_rejects(rejects: pa.Table, touched: pa.Table | None, last: Mapping[str, int]) -> pa.Table:
    """rejects/ with the allocation's and the traffic's rows of every phase whole, as ``full``
    gives the other tables (their phase and names are read from each row's JSON)."""
    if touched is None:
        return rejects
    keyed = _reject_keys(rejects)
    keyed = keyed.append_column("_row", pa.array(range(keyed.num_rows), pa.int64()))
    phased = pc.is_valid(keyed["scenario"])
    parts = [rejects.filter(pc.invert(phased))]
    for source, name in (("allocation", "allocation_rejects"), ("traffic", "traffic_rejects")):
        of = keyed.filter(pc.and_(phased, pc.equal(rejects["source"], source)))
        whole = full(name, of, touched, last)
        # The rebuilt rows' JSON names their own scenario and phase.
        original = rejects.take(whole["_row"])
        parts.append(original.set_column(2, rejects.schema.field(2), _renamed(original["row"], whole)))
    return pa.concat_tables(parts)


def _reject_keys(rejects: pa.Table) -> pa.Table:
    """Each reject row's scenario, phase, topic and group, as its JSON names them (null where it
    names none: a snapshot row's)."""
    rows = [json.loads(r) if r is not None else {} for r in rejects["row"].to_pylist()]
    keys = {"scenario": pa.string(), "phase": pa.int32(), "topic": pa.string(), "group": pa.string()}
    return pa.table({c: pa.array([r.get(c) for r in rows], t) for c, t in keys.items()})


def _renamed(rows: pa.ChunkedArray, keys: pa.Table) -> pa.Array:
    out = []
    for text, scenario, phase in zip(
        rows.to_pylist(), keys["scenario"].to_pylist(), keys["phase"].to_pylist()
    ):
        row = json.loads(text)
        row["scenario"], row["phase"] = scenario, phase
        out.append(json.dumps(row, separators=(",", ":"), ensure_ascii=False))
    return pa.array(out, pa.string())
