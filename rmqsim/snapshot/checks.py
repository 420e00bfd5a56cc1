"""Row checks in the driver, with pyarrow and numpy: rows that cannot be simulated go to rejects/
with a reason, the rest go on. Spark SQL's semantics where the rules were first written in it (a
null condition breaks no rule; concat of a null is null), without a Spark job per rule.

Each table is checked once; rules are listed in the order they are tried, and a row is rejected
for the first rule it breaks. A reject row carries the offending row as Spark's ``to_json`` writes
it, and that text also decides which of several repeated rows is kept, so it is built here byte
for byte as Spark's to_json builds it: Jackson's escapes, and doubles as Java prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import combined
from rmqsim.schemas import MESSAGE_MODELS, REBALANCES, REQUEST_MODES
from rmqsim.snapshot.load import Snapshot
from rmqsim.stage.routes import normalised
from rmqsim.strategies import STRATEGIES

REJECTS = pa.schema(
    [
        pa.field("source", pa.string(), nullable=False),
        pa.field("reason", pa.string()),
        pa.field("row", pa.string()),  # the offending row as JSON
    ]
)

MAX_QUEUES = 65535  # RocketMQ's own limit on a topic's queue count per broker
PERM_READ = 4  # RocketMQ PermName's read bit


@dataclass(frozen=True)
class Checked:
    snapshot: Snapshot  # only rows that can be simulated, in the order read
    rejects: pa.Table  # REJECTS


def check_snapshot(tables: Snapshot, *, configured_strategies: bool) -> Checked:
    """Split every table into rows to simulate and reject rows; later tables see only kept rows
    (but a group's consumers are looked for among all consumer rows)."""
    brokers = _check_brokers(tables.brokers)
    topic_queues = _check_topic_queues(tables.topic_queues, brokers=brokers.kept)
    groups, group_problems = _check_groups(
        tables.groups, consumers=tables.consumers, configured_strategies=configured_strategies
    )
    consumers = _check_consumers(
        tables.consumers, topic_queues=topic_queues.kept, group_problems=group_problems
    )
    splits = [brokers, topic_queues, groups, consumers]
    queue_config = offsets = None
    if tables.queue_config is not None:
        queue_config = _check_queue_config(tables.queue_config)
        splits.append(queue_config)
    if tables.offsets is not None:
        offsets = _check_offsets(tables.offsets, topic_queues=topic_queues.kept)
        splits.append(offsets)
    checked = replace(
        tables,
        brokers=brokers.kept,
        topic_queues=topic_queues.kept,
        consumers=consumers.kept,
        groups=groups.kept,
        queue_config=queue_config.kept if queue_config else None,
        offsets=offsets.kept if offsets else None,
    )
    return Checked(checked, pa.concat_tables([s.rejected for s in splits]))


# ------------------------------------------------------------------ tables


def _check_brokers(brokers: pa.Table) -> _Split:
    return _split(
        brokers,
        source="brokers",
        rules=[
            *_blank_rules(brokers, "broker_name"),
            _Repeat(
                ["broker_name", "broker_id"],
                "duplicate row for this broker_name and broker_id: "
                "the first good one (in JSON order) is used",
            ),
        ],
    )


def _check_topic_queues(topic_queues: pa.Table, *, brokers: pa.Table) -> _Split:
    """``brokers``: the kept broker rows."""
    read, perm = topic_queues["read_queue_nums"], topic_queues["perm"]
    readable = pc.and_kleene(pc.not_equal(pc.bit_wise_and(perm, PERM_READ), 0), pc.greater(read, 0))
    return _split(
        topic_queues,
        source="topic_queues",
        rules=[
            *_blank_rules(topic_queues, "topic", "broker_name"),
            (pc.is_null(read), "read_queue_nums is null"),
            *_count_rules(topic_queues, "read_queue_nums"),
            *_count_rules(topic_queues, "write_queue_nums"),
            (pc.is_null(perm), "perm is null"),
            (
                pc.or_kleene(pc.less(perm, 0), pc.greater(perm, 15)),
                _concat("perm ", _text(perm), " is outside 0 to 15"),
            ),
            (
                pc.invert(_known(topic_queues["broker_name"], brokers["broker_name"])),
                _concat("broker_name '", topic_queues["broker_name"], "' is not in brokers"),
            ),
            _Repeat(topic_queues.column_names, "duplicate row: an identical row is used"),
            # A NameServer keeps one QueueData per broker, so two rows for one broker are a broken
            # capture. The client puts the queues of every readable QueueData in one set: the
            # union, which is the readable row with the most read queues, the one kept.
            _Repeat(
                ["topic", "broker_name"],
                _concat(
                    "another row for this topic and broker_name (a NameServer keeps one QueueData "
                    "per broker): the client reads the union of their queues, the readable row "
                    "with the most read queues, which is used; this one has ",
                    _text(read),
                    " read queues and perm ",
                    _text(perm),
                ),
                prefer=[(combined(readable), "descending"), (combined(read), "descending")],
            ),
        ],
    )


def _check_groups(
    groups: pa.Table, *, consumers: pa.Table, configured_strategies: bool
) -> tuple[_Split, pa.Table]:
    """The groups split, and (group, problem) for each group whose first good row cannot run (its
    message model or balancing, or with configured strategies its strategy): its consumers go too."""
    problem = _group_problem(groups, configured_strategies=configured_strategies)
    # A row with a problem ranks after the good ones, so it never makes a good row a duplicate.
    later = _later(groups, ["group"], problem.is_valid().to_numpy(zero_copy_only=False))
    first = pc.and_(pa.array(~later), pc.invert(blank(groups["group"])))
    split = _split(
        groups,
        source="groups",
        rules=[
            *_blank_rules(groups, "group"),
            (pc.invert(first), "duplicate row for this group: the first good one (in JSON order) is used"),
            (
                pc.invert(_known(groups["group"], consumers["group"])),
                "group has no consumers in the snapshot",
            ),
            (pc.is_valid(problem), problem),
        ],
    )
    with_problem = pc.and_(first, pc.is_valid(problem))
    problems = pa.table(
        {"group": combined(groups["group"]).filter(with_problem), "problem": problem.filter(with_problem)}
    )
    return split, problems


def _check_consumers(consumers: pa.Table, *, topic_queues: pa.Table, group_problems: pa.Table) -> _Split:
    """``topic_queues``: the kept rows (every topic with one has a route, perhaps an empty one)."""
    at = pc.index_in(consumers["group"], value_set=combined(group_problems["group"]), skip_nulls=True)
    problem = combined(group_problems["problem"]).take(combined(at))
    return _split(
        consumers,
        source="consumers",
        rules=[
            *_blank_rules(consumers, "group", "topic", "client_id"),
            (
                pc.invert(_known(consumers["topic"], topic_queues["topic"])),
                _concat("topic '", consumers["topic"], "' has no route (no topic_queues row)"),
            ),
            (pc.is_valid(problem), _concat("group '", consumers["group"], "' is not simulated: ", problem)),
        ],
    )


def _check_queue_config(queue_config: pa.Table) -> _Split:
    return _split(
        queue_config,
        source="queue_config",
        rules=[
            *_blank_rules(queue_config, "group", "client_id", "topic", "broker_name"),
            *_queue_id_rules(queue_config),
            _Repeat(queue_config.column_names, "duplicate row: an identical row is used"),
        ],
    )


def _check_offsets(offsets: pa.Table, *, topic_queues: pa.Table) -> _Split:
    """``topic_queues``: the kept rows."""
    topic, broker, queue_id = offsets["topic"], offsets["broker_name"], offsets["queue_id"]
    return _split(
        offsets,
        source="offsets",
        rules=[
            *_blank_rules(offsets, "group", "topic", "broker_name"),
            *_queue_id_rules(offsets),
            (pc.is_null(offsets["broker_offset"]), "broker_offset is null"),
            (pc.is_null(offsets["consumer_offset"]), "consumer_offset is null"),
            (
                pc.fill_null(pc.greater_equal(queue_id, _queue_counts(offsets, topic_queues)), True),
                _concat(
                    "no such queue in topic_queues: topic '",
                    topic,
                    "', broker_name '",
                    broker,
                    "', queue_id ",
                    _text(queue_id),
                ),
            ),
            _Repeat(
                ["group", "topic", "broker_name", "queue_id"],
                "duplicate row for this queue: the first good one (in JSON order) is used",
            ),
        ],
    )


def _queue_counts(offsets: pa.Table, topic_queues: pa.Table) -> pa.ChunkedArray:
    """For each offsets row, how many queues its (topic, broker_name) has, or null: a queue
    exists below the larger of its read and write counts (writes may outnumber reads)."""
    read, write = topic_queues["read_queue_nums"], pc.fill_null(topic_queues["write_queue_nums"], 0)
    keys = topic_queues.select(["topic", "broker_name"]).append_column(
        "_queues", pc.max_element_wise(read, write)
    )
    queues = keys.group_by(["topic", "broker_name"], use_threads=False).aggregate([("_queues", "max")])
    rows = offsets.select(["topic", "broker_name"]).append_column(
        "_row", pa.array(np.arange(offsets.num_rows))
    )
    joined = rows.join(queues, ["topic", "broker_name"], join_type="left outer", use_threads=False)
    return joined.sort_by("_row")["_queues_max"]  # a join does not keep the order of its rows


# ------------------------------------------------------------------ groups' problems


def _group_problem(groups: pa.Table, *, configured_strategies: bool) -> pa.Array:
    """Why the group cannot be simulated as this row describes it, or null."""
    problems = [
        _unknown_value("message_model", groups["message_model"], MESSAGE_MODELS),
        _unknown_value("rebalance", groups["rebalance"], REBALANCES, lower=True),
        _unknown_value("request_mode", groups["request_mode"], REQUEST_MODES),
    ]
    if configured_strategies:
        strategy = normalised(pc.coalesce(groups["strategy"], "AVG"))
        known = pc.is_in(strategy, value_set=pa.array(list(STRATEGIES), pa.string()))
        problems.append(pc.if_else(known, _NULL, _concat("unknown strategy '", strategy, "'")))
    return combined(pc.coalesce(*problems))


def _unknown_value(name: str, value, allowed: Sequence[str], *, lower: bool = False) -> pa.Array:
    """Why a groups column's value is none of ``allowed`` (upper case; compared trimmed, in any
    case; null is the default), or null. ``lower``: the contract spells the values in lower case."""
    shown = [a.lower() for a in allowed] if lower else list(allowed)
    expected = ", ".join(shown[:-1]) + " or " + shown[-1]
    bad = pc.invert(pc.fill_null(pc.is_in(normalised(value), value_set=pa.array(allowed)), True))
    return pc.if_else(bad, _concat(f"unknown {name} '", value, f"': expected {expected}"), _NULL)


# ------------------------------------------------------------------ rules

Reason = str | pa.Array  # a fixed reason, or one per row
_NULL = pa.scalar(None, pa.string())


@dataclass(frozen=True)
class _Repeat:
    """A rule for repeated ``key`` values: all rows of a key but the first are rejected, ranked
    by the rules before it (a row breaking one ranks last, so a bad row never makes a good one a
    duplicate), then ``prefer`` (sort keys), then JSON order, so the choice is deterministic."""

    key: Sequence[str]
    reason: Reason
    prefer: Sequence[tuple[pa.Array, str]] = ()  # (values, "ascending" or "descending")


@dataclass(frozen=True)
class _Split:
    kept: pa.Table
    rejected: pa.Table  # REJECTS


def _split(table: pa.Table, *, source: str, rules: Sequence[tuple[pa.Array, Reason] | _Repeat]) -> _Split:
    reason = _reasons(table, rules)
    bad = pc.is_valid(reason)
    rejected = table.filter(bad)
    rows = pa.table(
        [pa.repeat(pa.scalar(source), rejected.num_rows), reason.filter(bad), row_json(rejected)],
        schema=REJECTS,
    )
    return _Split(table.filter(pc.invert(bad)), rows)


def _reasons(table: pa.Table, rules: Sequence[tuple[pa.Array, Reason] | _Repeat]) -> pa.Array:
    """The reason of the first rule each row breaks, null where it breaks none. A rule whose
    condition is null is not broken, and one whose reason is null gives way to the next, as in
    Spark's coalesce(when(bad, reason), ...)."""
    reason = pa.nulls(table.num_rows, pa.string())
    broken = np.zeros(table.num_rows, bool)  # by any rule so far, whatever its reason
    for rule in rules:
        if isinstance(rule, _Repeat):
            bad = pa.array(_later(table, rule.key, broken, rule.prefer))
            text = rule.reason
        else:
            bad, text = combined(pc.fill_null(rule[0], False)), rule[1]
        reason = pc.coalesce(reason, pc.if_else(bad, text, _NULL))
        broken |= bad.to_numpy(zero_copy_only=False)
    return combined(reason)


def _later(
    table: pa.Table, key: Sequence[str], broken: np.ndarray, prefer: Sequence[tuple[pa.Array, str]] = ()
) -> np.ndarray:
    """Whether each row comes after the first of its ``key`` (a null is a key value like any
    other, as in a Spark window): see _Repeat for the ranking."""
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
        "_json": row_json(table.take(index)),  # compared as bytes, as Spark compares strings
    }
    # Spark puts nulls last in a descending key (the prefer keys); no other key holds null.
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


def _blank_rules(table: pa.Table, *names: str) -> list[tuple[pa.Array, Reason]]:
    return [(blank(table[n]), f"{n} is null or empty") for n in names]


def _queue_id_rules(table: pa.Table) -> list[tuple[pa.Array, Reason]]:
    queue_id = table["queue_id"]
    return [(pc.is_null(queue_id), "queue_id is null"), (pc.less(queue_id, 0), "queue_id is negative")]


def _count_rules(table: pa.Table, column: str) -> list[tuple[pa.Array, Reason]]:
    value = table[column]
    return [
        (pc.less(value, 0), f"{column} is negative"),
        (pc.greater(value, MAX_QUEUES), _concat(f"{column} ", _text(value), f" is more than {MAX_QUEUES}")),
    ]


def _known(values, keys) -> pa.Array:
    """Whether each value is among ``keys``: a left join's match (a null one never is)."""
    return pc.is_in(values, value_set=combined(pc.unique(keys)), skip_nulls=True)


def _concat(*parts) -> pa.Array:
    """Spark's concat: null where any part is."""
    return pc.binary_join_element_wise(*parts, "")


def _text(values) -> pa.Array:
    """An integer as Spark's cast to string writes it."""
    return pc.cast(values, pa.string())


# ------------------------------------------------------------------ names


# Spark's rlike(r"^\s*$") is Java's find(): \s is [ \t\n\x0B\f\r] (RE2's lacks \x0B), and without
# MULTILINE, $ also matches before one final line terminator, which Java counts \x85, \u2028 and
# \u2029 among. RE2's $ is the end of the text only.
_BLANK = "^[ \\t\\n\\x0B\\f\\r]*[\\x{85}\\x{2028}\\x{2029}]?$"


def blank(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Whether each value is null or only white space: Java's ``^\\s*$`` (Spark's rlike): see _BLANK."""
    return pc.fill_null(pc.match_substring_regex(combined(values), _BLANK), True)


# ------------------------------------------------------------------ rows as Spark's to_json


def row_json(table: pa.Table) -> pa.Array:
    """Each row as Spark's ``to_json(struct(every column))``: fields in column order, null ones
    left out, strings with Jackson's escapes, doubles as Java writes them (_java_doubles)."""
    if table.num_rows == 0:
        return pa.array([], pa.string())
    # A field followed by a comma, null where its value is; joined with nulls as "", and the last
    # comma cut. (null_handling="skip" drops the rows whose every input is null, in pyarrow 26.)
    fields = [
        pc.binary_join_element_wise(f'"{name}":', _json_value(combined(column)), ",", "")
        for name, column in zip(table.column_names, table.columns)
    ]
    body = pc.binary_join_element_wise(*fields, "", null_handling="replace", null_replacement="")
    return pc.binary_join_element_wise("{", pc.utf8_slice_codeunits(body, 0, -1), "}", "")


def _json_value(values: pa.Array) -> pa.Array:
    kind = values.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _json_string(pc.cast(values, pa.string()))
    if pa.types.is_integer(kind):
        return pc.cast(values, pa.string())
    if pa.types.is_boolean(kind):
        return pc.if_else(values, "true", "false")
    if pa.types.is_floating(kind):
        return _json_double(pc.cast(values, pa.float64()))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        items = pc.fill_null(_json_value(pc.list_flatten(values)), "null")  # null elements are written
        lengths = pc.fill_null(pc.list_value_length(values), 0).to_numpy(zero_copy_only=False)
        starts = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
        lists = pa.ListArray.from_arrays(starts, items, mask=pc.is_null(values))
        return pc.binary_join_element_wise("[", pc.binary_join(lists, ","), "]", "")
    raise TypeError(f"no JSON for a {kind} column")


# Jackson's escapes: a short one where JSON has it, else \u00XX in upper-case hex.
_SHORT_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"}
_ESCAPES = [("\\", "\\\\"), ('"', '\\"')] + [
    (chr(c), _SHORT_ESCAPES.get(c, f"\\u{c:04X}")) for c in range(0x20)
]


def _json_string(values: pa.Array) -> pa.Array:
    """Quoted and escaped; non-ASCII characters, / and DEL are written as they are."""
    escaped = values
    if pc.any(pc.match_substring_regex(values, '[\\x00-\\x1f"\\\\]')).as_py():
        for plain, escape in _ESCAPES:  # the backslash first: later escapes write backslashes
            escaped = pc.replace_substring(escaped, plain, escape)
    return pc.binary_join_element_wise('"', escaped, '"', "")


def _json_double(values: pa.Array) -> pa.Array:
    """Jackson writes a double as Java's Double.toString, quoting NaN and the infinities."""
    numbers = pc.fill_null(values, 0.0).to_numpy(zero_copy_only=False)
    text = pa.array(_java_doubles(numbers), pa.string())
    quoted = pc.if_else(pa.array(np.isfinite(numbers)), text, pc.binary_join_element_wise('"', text, '"', ""))
    return pc.if_else(pc.is_valid(values), quoted, _NULL)


# ------------------------------------------------------------------ doubles as Java prints them

_STR = np.dtypes.StringDType()
_ZERO = np.array("0", _STR)  # a str literal fails numpy on no rows


def _java_doubles(values: np.ndarray) -> np.ndarray:
    """Java's Double.toString of each value: the shortest digits that read back as the value, in
    Java's layout (plain from 0.001 to 10^7, else d.dddEn).

    That is Java 19 and later. Java 17 writes other digits for a few values (2e23 as
    1.9999999999999998E23, integers past 2^53, some powers of two below 1, subnormal numbers):
    there, Spark's JSON of such a double differs from this in its last digits. Only rejected and
    repeated offsets rows are written so, and a rate rarely is such a value."""
    v = np.asarray(values, np.float64)
    size = np.abs(v)
    finite = np.isfinite(v) & (size != 0)
    digits = np.full(len(v), "0", _STR)  # the value is 0.DIGITS x 10^EXPONENT; 0 is "0", 1
    exponent = np.ones(len(v), np.int64)
    digits[finite], exponent[finite] = _shortest_digits(size[finite])
    out = _java_layout(digits, exponent)
    out[np.signbit(v)] = np.strings.add("-", out[np.signbit(v)])
    out[np.isnan(v)] = "NaN"
    out[np.isinf(v)] = np.where(v[np.isinf(v)] > 0, "Infinity", "-Infinity")
    return out


def _shortest_digits(size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The shortest digits, from numpy's repr ("123.45", "0.00012", "1.5e-07", "1e+16")."""
    mantissa, _, power = np.strings.partition(size.astype(_STR), np.array("e", _STR))
    whole, _, fraction = np.strings.partition(mantissa, np.array(".", _STR))
    both = np.strings.add(whole, fraction)
    significant = np.strings.lstrip(both, "0")
    leading = np.strings.str_len(both) - np.strings.str_len(significant)
    power = np.where(power == "", "0", power).astype(np.int64)
    return np.strings.rstrip(significant, "0"), np.strings.str_len(whole) - leading + power


def _java_layout(digits: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """FloatingDecimal's getChars for 0.DIGITS x 10^EXPONENT: plain digits (with ".0" where none
    follow the point) for an exponent of 1 to 7, "0.00ddd" for -2 to 0, else "d.dddEn"."""
    out = np.empty(len(digits), _STR)
    n = np.strings.str_len(digits)
    plain = (exponent > 0) & (exponent < 8)
    fills = plain & (n <= exponent)  # the digits end at or before the point
    out[fills] = np.strings.add(
        np.strings.add(digits[fills], np.strings.multiply(_ZERO, exponent[fills] - n[fills])), ".0"
    )
    cut = plain & ~fills
    d, e = digits[cut], exponent[cut]
    out[cut] = np.strings.add(np.strings.add(np.strings.slice(d, 0, e), "."), np.strings.slice(d, e, n[cut]))
    small = (exponent > -3) & (exponent <= 0)
    out[small] = np.strings.add(
        np.strings.add("0.", np.strings.multiply(_ZERO, -exponent[small])), digits[small]
    )
    wide = ~plain & ~small
    d, k = digits[wide], n[wide]
    rest = np.where(k > 1, np.strings.slice(d, 1, k), "0")
    point = np.strings.add(np.strings.add(np.strings.slice(d, 0, 1), "."), rest)
    out[wide] = np.strings.add(np.strings.add(point, "E"), (exponent[wide] - 1).astype(_STR))
    return out
