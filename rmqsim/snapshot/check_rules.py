"""How the snapshot's checks are written (snapshot.checks): a rule is a condition per row and a
reason (fixed, or one per row, joined only for the rows it rejects); Repeat ranks repeated keys
and AmongKept judges the rows no rule before it broke. split_rows applies a table's rules in order
and gives its kept rows and its reject rows, each with the reason of the first rule it breaks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import combined
from rmqsim.schemas import REJECTS_ARROW, SNAPSHOT_TABLES
from rmqsim.snapshot.text import blank, row_json

MAX_QUEUES = 65535  # RocketMQ's own limit on a topic's queue count per broker


@dataclass(frozen=True)
class Rows:
    """A snapshot table to check, and the columns its files have: a reject row shows those."""

    table: pa.Table
    source: str
    given: frozenset[str]

    @property
    def shown(self) -> list[str]:
        spec = next(t for t in SNAPSHOT_TABLES if t.name == self.source)
        return [c.name for c in spec.columns if c.required or f"{self.source}.{c.name}" in self.given]


@dataclass(frozen=True)
class Text:
    """A reason per row, its parts (text, columns, numbers) joined only for the rows asked
    for: null where any part is. Most rows break no rule, and strings for every row of a large
    table cost more than the checks themselves."""

    parts: tuple

    def at(self, rows: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise(*(_part_at(p, rows) for p in self.parts), "")


@dataclass(frozen=True)
class Number:
    """A number as Python writes it (an integer in decimal)."""

    values: pa.Array | pa.ChunkedArray

    def at(self, rows: np.ndarray) -> pa.Array:
        values = combined(self.values).take(pa.array(rows))
        if not pa.types.is_floating(values.type):
            return pc.cast(values, pa.string())
        return pa.array([None if v is None else repr(v) for v in values.to_pylist()], pa.string())


@dataclass(frozen=True)
class Objects:
    """A reason per row, already written (None: none)."""

    texts: np.ndarray  # of str or None

    def at(self, rows: np.ndarray) -> pa.Array:
        return pa.array(self.texts[rows], pa.string())


Reason = str | pa.Array | Text | Number | Objects  # a fixed reason, or one per row
NULL = pa.scalar(None, pa.string())


@dataclass(frozen=True)
class Repeat:
    """A rule for repeated ``key`` values: all rows of a key but the first are rejected, ranked
    by the rules before it (a row breaking one ranks last, so a bad row never makes a good one a
    duplicate), then ``prefer`` (sort keys), then JSON order, so the choice is deterministic."""

    key: Sequence[str]
    reason: Reason
    prefer: Sequence[tuple[pa.Array, str]] = ()  # (values, "ascending" or "descending")


@dataclass(frozen=True)
class AmongKept:
    """A rule about the rows no rule before it breaks (``kept``): ``rule(kept)`` gives whether
    each row breaks it (an array) and the reason."""

    rule: Callable[[np.ndarray], tuple[pa.Array, Reason]]


@dataclass(frozen=True)
class Split:
    kept: pa.Table
    rejected: pa.Table  # schemas.REJECTS


def split_rows(rows: Rows, *, rules: Sequence[tuple[pa.Array, Reason] | Repeat | AmongKept]) -> Split:
    table, source = rows.table, rows.source
    at, reason = _reasons(table, rules, shown=rows.shown)
    bad = np.zeros(table.num_rows, bool)
    bad[at] = True
    rejected = table.take(pa.array(at))
    rows = pa.table(
        [pa.repeat(pa.scalar(source), len(at)), reason, row_json(rejected.select(rows.shown))],
        schema=REJECTS_ARROW,
    )
    return Split(table.filter(pa.array(~bad)), rows)


def _reasons(
    table: pa.Table, rules: Sequence[tuple[pa.Array, Reason] | Repeat | AmongKept], *, shown: list[str]
) -> tuple[np.ndarray, pa.Array]:
    """The rows that break a rule (ascending) and the reason of the first each breaks. A rule
    whose condition is null is not broken, and one whose reason is null gives way to the next.
    A reason is worked out only for the rows its rule is the first to reject: few rows are."""
    unset = np.ones(table.num_rows, bool)  # no reason yet
    broken = np.zeros(table.num_rows, bool)  # by any rule so far, whatever its reason
    found: list[tuple[np.ndarray, pa.Array]] = []
    for rule in rules:
        if isinstance(rule, Repeat):
            bad, text = after_first(table, rule.key, broken, rule.prefer, shown=shown), rule.reason
        else:
            condition, text = rule.rule(~broken) if isinstance(rule, AmongKept) else rule
            bad = combined(pc.fill_null(condition, False)).to_numpy(zero_copy_only=False)
        at = np.flatnonzero(bad & unset)
        if len(at):
            values = _reason_at(text, at)
            given = values.is_valid().to_numpy(zero_copy_only=False)
            found.append((at[given], values.filter(pa.array(given))))
            unset[at[given]] = False
        broken |= bad
    if not found:
        return np.empty(0, np.int64), pa.array([], pa.string())
    at = np.concatenate([a for a, _ in found])
    order = np.argsort(at, kind="stable")
    return at[order], pa.concat_arrays([v for _, v in found]).take(pa.array(order))


def after_first(
    table: pa.Table,
    key: Sequence[str],
    broken: np.ndarray,
    prefer: Sequence[tuple[pa.Array, str]] = (),
    *,
    shown: list[str],
) -> np.ndarray:
    """Whether each row comes after the first of its ``key`` (a null is a key value like any
    other): see Repeat for the ranking; ``shown``: the columns a row's JSON shows."""
    later = np.zeros(table.num_rows, bool)
    keyed = table.select(list(key)).append_column("_row", pa.array(np.arange(table.num_rows)))
    if set(key) >= set(table.column_names):
        # The key is the whole row, so its copies are identical and any one is kept: the first.
        first = keyed.group_by(list(key), use_threads=False).aggregate([("_row", "min")])["_row_min"]
        later[:] = True
        later[first.to_numpy()] = False
        return later
    rows = keyed.group_by(list(key), use_threads=False).aggregate([("_row", "list")])["_row_list"]
    rows = rows.filter(pc.greater(pc.list_value_length(rows), 1))  # only repeated keys are ranked
    if len(rows) == 0:
        return later
    index = pc.list_flatten(rows)
    ranked = {
        "_key": pc.list_parent_indices(rows),
        "_broken": pa.array(broken[index.to_numpy()]),
        **{f"_prefer{i}": values.take(index) for i, (values, _) in enumerate(prefer)},
        "_json": row_json(table.select(shown).take(index)),  # compared as UTF-8 bytes
    }
    # Nulls last in a descending key (the prefer keys); no other key holds null.
    order = pc.sort_indices(
        pa.table(ranked),
        sort_keys=[
            ("_key", "ascending", "at_end"),
            ("_broken", "ascending", "at_end"),
            *((f"_prefer{i}", direction, "at_end") for i, (_, direction) in enumerate(prefer)),
            ("_json", "ascending", "at_end"),
        ],
    )
    keys = ranked["_key"].take(order).to_numpy()
    ordered = index.take(order).to_numpy()
    later[ordered[1:][keys[1:] == keys[:-1]]] = True
    return later


def blank_rules(table: pa.Table, *names: str) -> list[tuple[pa.Array, Reason]]:
    return [(blank(table[n]), f"{n} is null or empty") for n in names]


def queue_id_rules(table: pa.Table) -> list[tuple[pa.Array, Reason]]:
    queue_id = table["queue_id"]
    return [(pc.is_null(queue_id), "queue_id is null"), (pc.less(queue_id, 0), "queue_id is negative")]


def count_rules(table: pa.Table, column: str) -> list[tuple[pa.Array, Reason]]:
    value = table[column]
    return [
        (pc.less(value, 0), f"{column} is negative"),
        (
            pc.greater(value, MAX_QUEUES),
            text_of(f"{column} ", number_of(value), f" is more than {MAX_QUEUES}"),
        ),
    ]


def rate_rules(
    table: pa.Table, column: str, *, most: float | None = None, least: float | None = None
) -> list[tuple[pa.Array, Reason]]:
    """A rate or a latency: a number, not negative (null passes: the column's own rule says
    whether it may be); with ``most``, at most that; with ``least``, 0 or at least that (section
    1's bounds, which keep the sums of rates exact and every figure finite)."""
    value = table[column]
    infinite, negative = pc.is_inf(value), pc.less(value, 0)
    rules = [
        (pc.is_nan(value), f"{column} is not a number"),
        (infinite, text_of(f"{column} ", number_of(value), " is not finite")),
        (negative, text_of(f"{column} ", number_of(value), " is negative")),
    ]
    if most is not None:
        above = text_of(f"{column} ", number_of(value), f" is more than {most:g}")
        rules.append((pc.greater(value, most), above))
    if least is not None:
        tiny = pc.and_(pc.greater(value, 0), pc.less(value, least))
        rules.append((tiny, text_of(f"{column} ", number_of(value), f" is above 0 but below {least:g}")))
    return rules


def is_known(values, keys) -> pa.Array:
    """Whether each value is among ``keys``: a left join's match (a null one never is)."""
    return pc.is_in(values, value_set=combined(pc.unique(keys)), skip_nulls=True)


def _part_at(part, rows: np.ndarray):
    return part if isinstance(part, str) else _reason_at(part, rows)


def _reason_at(reason: Reason, rows: np.ndarray) -> pa.Array:
    """``reason`` at ``rows``: a fixed one repeated, or each row's."""
    if isinstance(reason, str):
        return pa.repeat(pa.scalar(reason), len(rows))
    if isinstance(reason, (Text, Number, Objects)):
        return reason.at(rows)
    return combined(reason).take(pa.array(rows))


def per_row(reason: Reason, n: int) -> pa.Array:
    """``reason`` for every one of ``n`` rows (a groups problem is a column of its own)."""
    return _reason_at(reason, np.arange(n))


def text_of(*parts) -> Text:
    return Text(parts)


def number_of(values) -> Number:
    return Number(values)
