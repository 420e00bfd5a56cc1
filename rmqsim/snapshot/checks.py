"""Row checks in the driver, with pyarrow and numpy: rows that cannot be simulated go to rejects/
with a reason, the rest go on. A rule whose condition is null is not broken (a comparison with a
missing value proves nothing), and a reason built from a null value is no reason.

Each table is checked once; rules are listed in the order they are tried, and a row is rejected
for the first it breaks. A reject row carries the offending row as JSON (snapshot.text.row_json),
and that text also decides which of several repeated rows is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import combined, row_codes
from rmqsim.producers.versions import classify_versions
from rmqsim.scenarios.parse import is_ip
from rmqsim.schemas import (
    LANGUAGES,
    MAX_RATE,
    MESSAGE_MODELS,
    MIN_CAPACITY,
    PERM_READ,
    PRODUCERS,
    REBALANCES,
    REJECTS_ARROW,
    REQUEST_MODES,
    SELECTORS,
    SNAPSHOT_TABLES,
)
from rmqsim.snapshot.load import Snapshot, schemas_table
from rmqsim.snapshot.text import blank, normalised, row_json
from rmqsim.strategies import STRATEGIES

MAX_QUEUES = 65535  # RocketMQ's own limit on a topic's queue count per broker


@dataclass(frozen=True)
class Checked:
    snapshot: Snapshot  # only rows that can be simulated, in the order read
    rejects: pa.Table  # schemas.REJECTS


def check_snapshot(tables: Snapshot, *, configured_strategies: bool) -> Checked:
    """Split every table into rows to simulate and reject rows; later tables see only kept rows
    (but a group's consumers are looked for among all consumer rows)."""
    given = tables.given
    brokers = _check_brokers(_Rows(tables.brokers, "brokers", given))
    topic_queues = _check_topic_queues(
        _Rows(tables.topic_queues, "topic_queues", given), brokers=brokers.kept
    )
    # The producers' side needs nothing of the consumers': checked beside them, in a thread.
    with ThreadPoolExecutor(1, thread_name_prefix="rmqsim-checks") as pool:
        producer_side = pool.submit(_check_producer_side, tables, topic_queues=topic_queues.kept)
        groups, group_problems = _check_groups(
            _Rows(tables.groups, "groups", given),
            consumers=tables.consumers,
            configured_strategies=configured_strategies,
        )
        consumers = _check_consumers(
            _Rows(tables.consumers, "consumers", given),
            topic_queues=topic_queues.kept,
            group_problems=group_problems,
        )
        queue_config = offsets = None
        if tables.queue_config is not None:
            queue_config = _check_queue_config(_Rows(tables.queue_config, "queue_config", given))
        if tables.offsets is not None:
            offsets = _check_offsets(_Rows(tables.offsets, "offsets", given), topic_queues=topic_queues.kept)
        producers, producer_keys, order_topics = producer_side.result()
    every = [brokers, topic_queues, groups, consumers, queue_config, offsets]
    splits = [s for s in [*every, producers, producer_keys, order_topics] if s is not None]
    checked = replace(
        tables,
        brokers=brokers.kept,
        topic_queues=topic_queues.kept,
        consumers=consumers.kept,
        groups=groups.kept,
        queue_config=queue_config.kept if queue_config else None,
        offsets=offsets.kept if offsets else None,
        producers=producers.kept if producers else None,
        producer_keys=producer_keys.kept if producer_keys else None,
        order_topics=order_topics.kept if order_topics else None,
    )
    return Checked(checked, pa.concat_tables([s.rejected for s in splits]))


def _check_producer_side(
    tables: Snapshot, *, topic_queues: pa.Table
) -> tuple[_Split | None, _Split | None, _Split | None]:
    """producers, producer_keys and order_topics, each checked where the snapshot has it."""
    given = tables.given
    producers = producer_keys = order_topics = None
    if tables.producers is not None:
        producers = _check_producers(_Rows(tables.producers, "producers", given), topic_queues=topic_queues)
    if tables.producer_keys is not None:
        hashing = producers.kept if producers else schemas_table(PRODUCERS)
        producer_keys = _check_producer_keys(
            _Rows(tables.producer_keys, "producer_keys", given), producers=hashing
        )
    if tables.order_topics is not None:
        order_topics = _check_order_topics(_Rows(tables.order_topics, "order_topics", given))
    return producers, producer_keys, order_topics


@dataclass(frozen=True)
class _Rows:
    """A snapshot table to check, and the columns its files have: a reject row shows those."""

    table: pa.Table
    source: str
    given: frozenset[str]

    @property
    def shown(self) -> list[str]:
        spec = next(t for t in SNAPSHOT_TABLES if t.name == self.source)
        return [c.name for c in spec.columns if c.required or f"{self.source}.{c.name}" in self.given]


# ------------------------------------------------------------------ tables


def _check_brokers(rows: _Rows) -> _Split:
    brokers = rows.table
    return _split(
        rows,
        rules=[
            *_blank_rules(brokers, "broker_name"),
            *_rate_rules(brokers, "send_latency_ms"),
            _Repeat(
                ["broker_name", "broker_id"],
                "duplicate row for this broker_name and broker_id: "
                "the first good one (in JSON order) is used",
            ),
        ],
    )


def _check_topic_queues(rows: _Rows, *, brokers: pa.Table) -> _Split:
    """``brokers``: the kept broker rows."""
    topic_queues = rows.table
    read, perm = topic_queues["read_queue_nums"], topic_queues["perm"]
    readable = pc.and_kleene(pc.not_equal(pc.bit_wise_and(perm, PERM_READ), 0), pc.greater(read, 0))
    return _split(
        rows,
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
    rows: _Rows, *, consumers: pa.Table, configured_strategies: bool
) -> tuple[_Split, pa.Table]:
    """The groups split, and (group, problem) for each group whose first good row cannot run (its
    message model or balancing, or with configured strategies its strategy): its consumers go too."""
    groups = rows.table
    problem = _group_problem(groups, configured_strategies=configured_strategies)
    # A row with a problem ranks after the good ones, so it never makes a good row a duplicate.
    later = _later(groups, ["group"], problem.is_valid().to_numpy(zero_copy_only=False), shown=rows.shown)
    first = pc.and_(pa.array(~later), pc.invert(blank(groups["group"])))
    split = _split(
        rows,
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


def _check_consumers(rows: _Rows, *, topic_queues: pa.Table, group_problems: pa.Table) -> _Split:
    """``topic_queues``: the kept rows (every topic with one has a route, perhaps an empty one)."""
    consumers = rows.table
    at = pc.index_in(consumers["group"], value_set=combined(group_problems["group"]), skip_nulls=True)
    problem = combined(group_problems["problem"]).take(combined(at))
    # Only a client on more than one row (several topics) can disagree with itself.
    shared = _repeated(consumers, ["group", "client_id"])
    return _split(
        rows,
        rules=[
            *_blank_rules(consumers, "group", "topic", "client_id"),
            (
                pc.invert(_known(consumers["topic"], topic_queues["topic"])),
                _concat("topic '", consumers["topic"], "' has no route (no topic_queues row)"),
            ),
            (pc.is_valid(problem), _concat("group '", consumers["group"], "' is not simulated: ", problem)),
            *_rate_rules(consumers, "capacity_msgs_per_s", most=MAX_RATE, least=MIN_CAPACITY),
            # Among the rows kept: a row rejected for its own value sets no value to agree with.
            *(
                _AmongKept(lambda kept, c=c: _disagreeing(rows, c, shared & kept))
                for c in ("capacity_msgs_per_s", "designated_aware")
            ),
        ],
    )


def _repeated(table: pa.Table, columns: list[str]) -> np.ndarray:
    """Whether each row's values of ``columns`` (null a value like any other) are on another row."""
    code = row_codes([table[c] for c in columns])
    order = np.argsort(code, kind="stable")
    same = code[order][1:] == code[order][:-1]
    repeated = np.zeros(table.num_rows, bool)
    repeated[order[1:][same]] = repeated[order[:-1][same]] = True
    return repeated


def _disagreeing(rows: _Rows, column: str, shared: np.ndarray) -> tuple[pa.Array, _Objects]:
    """A rule for a per-process value (section 2d) that rows of one (group, client_id) must agree
    on: each row whose given value differs from the first given one (in JSON order) is rejected,
    naming both; a client's value is never averaged or picked silently. ``shared``: the rows whose
    client is on another row too, the only ones looked at; only the clients whose rows disagree
    are put in JSON order: nearly every client agrees with itself."""
    table = rows.table
    n = table.num_rows
    given = pc.fill_null(pc.is_valid(table[column]), False).to_numpy(zero_copy_only=False)
    reason = np.full(n, None, dtype=object)
    at = np.flatnonzero(given & shared)
    if len(at) > 1:
        client = ["group", "client_id"]
        sub = table.select([*client, column]).take(pa.array(at)).append_column("_at", pa.array(at))
        distinct = sub.group_by(client, use_threads=False).aggregate([(column, "count_distinct")])
        torn = distinct.filter(pc.greater(distinct[f"{column}_count_distinct"], 1)).select(client)
        at = np.sort(sub.join(torn, client, join_type="inner", use_threads=False)["_at"].to_numpy())
    if len(at) > 1:
        sub = table.take(pa.array(at))
        order = pc.sort_indices(
            pa.table(
                {
                    "group": sub["group"],
                    "client_id": sub["client_id"],
                    "_json": row_json(sub.select(rows.shown)),
                }
            ),
            sort_keys=[("group", "ascending"), ("client_id", "ascending"), ("_json", "ascending")],
        ).to_numpy()
        key = _joined(sub.take(pa.array(order)), ["group", "client_id"])
        start = np.r_[True, key[1:] != key[:-1]]
        first = order[np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))]
        values = combined(sub[column]).to_numpy(zero_copy_only=False)
        differ = values[order] != values[first]
        texts = combined(sub[column]).to_pylist()
        for i, f in zip(order[differ], first[differ]):  # only the rows rejected
            reason[at[i]] = (
                f"{column} {texts[i]!r} disagrees with {texts[f]!r} on another row of this client "
                "in this group: it is the process's, over all its topics"
            )
    return pa.array(reason != None), _Objects(reason)  # noqa: E711


def _joined(table: pa.Table, columns: list[str]) -> np.ndarray:
    parts = [pc.fill_null(pc.cast(combined(table[c]), pa.string()), "\x01") for c in columns]
    return pc.binary_join_element_wise(*parts, "\x00").to_numpy(zero_copy_only=False)


def _check_queue_config(rows: _Rows) -> _Split:
    queue_config = rows.table
    return _split(
        rows,
        rules=[
            *_blank_rules(queue_config, "group", "client_id", "topic", "broker_name"),
            *_queue_id_rules(queue_config),
            _Repeat(queue_config.column_names, "duplicate row: an identical row is used"),
        ],
    )


def _check_offsets(rows: _Rows, *, topic_queues: pa.Table) -> _Split:
    """``topic_queues``: the kept rows."""
    offsets = rows.table
    topic, broker, queue_id = offsets["topic"], offsets["broker_name"], offsets["queue_id"]
    return _split(
        rows,
        rules=[
            *_blank_rules(offsets, "group", "topic", "broker_name"),
            *_queue_id_rules(offsets),
            (pc.is_null(offsets["broker_offset"]), "broker_offset is null"),
            (pc.is_null(offsets["consumer_offset"]), "consumer_offset is null"),
            *_rate_rules(offsets, "in_tps", most=MAX_RATE),
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


def _check_producers(rows: _Rows, *, topic_queues: pa.Table) -> _Split:
    """``topic_queues``: the kept rows (a topic with none has no route at all)."""
    producers = rows.table
    selector = normalised(pc.coalesce(producers["selector"], "ROUND_ROBIN"))
    language = normalised(pc.coalesce(producers["language"], "JAVA"))
    _, version_problem = classify_versions(combined(producers["version"]))
    return _split(
        rows,
        rules=[
            *_blank_rules(producers, "topic"),
            (pc.is_null(producers["msgs_per_s"]), "msgs_per_s is null"),
            *_rate_rules(producers, "msgs_per_s", most=MAX_RATE),
            (
                pc.invert(pc.is_in(selector, value_set=pa.array(SELECTORS))),
                _concat("unknown selector '", producers["selector"], "': expected ROUND_ROBIN or HASH"),
            ),
            (
                pc.invert(pc.is_in(language, value_set=pa.array(LANGUAGES))),
                _concat(
                    "unknown language '",
                    producers["language"],
                    f"': the libraries rmqsim simulates are {', '.join(LANGUAGES)}",
                ),
            ),
            (pc.is_valid(version_problem), _concat("unknown version: ", version_problem)),
            (
                pc.invert(_known(producers["topic"], topic_queues["topic"])),
                _concat("topic '", producers["topic"], "' has no route (no topic_queues row)"),
            ),
        ],
    )


def _check_producer_keys(rows: _Rows, *, producers: pa.Table) -> _Split:
    """``producers``: the kept rows; a key mixes the traffic of HASH producers only."""
    keys = rows.table
    hashing = producers.filter(
        pc.equal(normalised(pc.coalesce(producers["selector"], "ROUND_ROBIN")), "HASH")
    )
    pairs = _KeyPairs.of(keys, hashing)
    known = pc.if_else(
        pc.is_null(keys["producer_group"]),
        _known(keys["topic"], hashing["topic"]),
        pc.is_in(pairs.key, value_set=pairs.producer),
    )
    return _split(
        rows,
        rules=[
            *_blank_rules(keys, "topic"),
            (pc.is_null(keys["key"]), "key is null"),
            *_rate_rules(keys, "share", most=MAX_RATE),
            (
                pc.invert(pc.fill_null(known, False)),
                "no HASH producer of this topic (and producer_group) sends with this key",
            ),
            _Repeat(
                ["topic", "producer_group", "key"],
                "duplicate row for this key: the first good one (in JSON order) is used",
            ),
            _AmongKept(lambda kept: (_silent_keys(keys, hashing, pairs, kept), SILENT_KEYS)),
        ],
    )


SILENT_KEYS = (
    "share 0, as every key of a HASH producer it is for: nothing says how that producer's messages "
    "divide, so it sends as one without keys, evenly over its publish list"
)


@dataclass(frozen=True)
class _KeyPairs:
    """(topic, producer_group) of each key row and of each HASH producer, as one text (null where
    the producer_group is)."""

    key: pa.Array
    producer: pa.Array

    @staticmethod
    def of(keys: pa.Table, hashing: pa.Table) -> _KeyPairs:
        def pair(t: pa.Table) -> pa.Array:
            return combined(pc.binary_join_element_wise(t["topic"], t["producer_group"], "\x00"))

        return _KeyPairs(pair(keys), pair(hashing))


def _silent_keys(keys: pa.Table, hashing: pa.Table, pairs: _KeyPairs, kept: np.ndarray) -> pa.Array:
    """The ``kept`` key rows of share 0 for a HASH producer all of whose kept keys have share 0 (a
    key with a null producer_group is for every HASH producer of its topic). Such a producer has
    no shares to normalise (section 2c): its keys go, and it sends as one without keys."""
    share = pc.fill_null(keys["share"], 1.0).to_numpy(zero_copy_only=False)  # null: an equal share
    named = pc.is_valid(keys["producer_group"]).to_numpy(zero_copy_only=False)
    pair, producer_pair = pairs.key, pairs.producer
    topic = combined(keys["topic"])
    producer_topic = combined(hashing["topic"])

    def keyed(rows: np.ndarray) -> pa.Array:
        """Per HASH producer, whether any of ``rows`` is a key of it."""
        by_group = _known(producer_pair, pair.filter(pa.array(rows & named)))
        return pc.or_(by_group, _known(producer_topic, topic.filter(pa.array(rows & ~named))))

    silent = pc.and_(keyed(kept), pc.invert(keyed(kept & (share > 0))))
    of_group = _known(pair, producer_pair.filter(silent)).to_numpy(zero_copy_only=False)
    of_topic = _known(topic, producer_topic.filter(silent)).to_numpy(zero_copy_only=False)
    return pa.array(kept & (share == 0) & np.where(named, of_group, of_topic))


def _check_order_topics(rows: _Rows) -> _Split:
    order_topics = rows.table
    return _split(
        rows,
        rules=[
            *_blank_rules(order_topics, "topic"),
            (pc.is_null(order_topics["order_conf"]), "order_conf is null"),
            _Repeat(["topic"], "duplicate row for this topic: the first good one (in JSON order) is used"),
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
        *(
            pc.if_else(bad, _per_row(reason, groups.num_rows), _NULL)
            for bad, reason in _rate_rules(groups, "capacity_msgs_per_s", most=MAX_RATE, least=MIN_CAPACITY)
        ),
        _not_ips(groups["designated_ips"]),
    ]
    if configured_strategies:
        strategy = normalised(pc.coalesce(groups["strategy"], "AVG"))
        known = pc.is_in(strategy, value_set=pa.array(list(STRATEGIES), pa.string()))
        unknown = _concat("unknown strategy '", strategy, "'")
        problems.append(pc.if_else(known, _NULL, _per_row(unknown, groups.num_rows)))
    return combined(pc.coalesce(*problems))


def _not_ips(lists) -> pa.Array:
    """Why a designated_ips list holds a null or something that is not an IP address (its first
    such entry; a null one by its place, from 1, having no text to show), or null."""
    lists = combined(lists)
    flat = pc.list_flatten(lists)
    row = pc.list_parent_indices(lists).to_numpy()
    encoded = pc.dictionary_encode(flat)  # each distinct text parsed once; a null takes the False added
    parsed = np.array([is_ip(t) for t in encoded.dictionary.to_pylist()] + [False], dtype=bool)
    bad = np.flatnonzero(~parsed[pc.fill_null(encoded.indices, len(parsed) - 1).to_numpy()])
    rows, first = np.unique(row[bad], return_index=True)  # entries run in row order: each row's first
    at = bad[first]
    place = at - np.searchsorted(row, rows) + 1
    reason = np.full(len(lists), None, dtype=object)
    reason[rows] = [
        f"designated_ips entry {n} is null"
        if text is None
        else f"designated_ips entry {text!r} is not an IP address"
        for n, text in zip(place.tolist(), flat.take(pa.array(at, pa.int64())).to_pylist(), strict=True)
    ]
    return pa.array(reason, pa.string())


def _unknown_value(name: str, value, allowed: Sequence[str], *, lower: bool = False) -> pa.Array:
    """Why a groups column's value is none of ``allowed`` (upper case; compared trimmed, in any
    case; null is the default), or null. ``lower``: the contract spells the values in lower case."""
    shown = [a.lower() for a in allowed] if lower else list(allowed)
    expected = ", ".join(shown[:-1]) + " or " + shown[-1]
    bad = pc.invert(pc.fill_null(pc.is_in(normalised(value), value_set=pa.array(allowed)), True))
    reason = _concat(f"unknown {name} '", value, f"': expected {expected}")
    return pc.if_else(bad, _per_row(reason, len(value)), _NULL)


# ------------------------------------------------------------------ rules


@dataclass(frozen=True)
class _Text:
    """A reason per row, its parts (text, columns, numbers) joined only for the rows asked
    for: null where any part is. Most rows break no rule, and strings for every row of a large
    table cost more than the checks themselves."""

    parts: tuple

    def at(self, rows: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise(*(_part_at(p, rows) for p in self.parts), "")


@dataclass(frozen=True)
class _Number:
    """A number as Python writes it (an integer in decimal)."""

    values: pa.Array | pa.ChunkedArray

    def at(self, rows: np.ndarray) -> pa.Array:
        values = combined(self.values).take(pa.array(rows))
        if not pa.types.is_floating(values.type):
            return pc.cast(values, pa.string())
        return pa.array([None if v is None else repr(v) for v in values.to_pylist()], pa.string())


@dataclass(frozen=True)
class _Objects:
    """A reason per row, already written (None: none)."""

    texts: np.ndarray  # of str or None

    def at(self, rows: np.ndarray) -> pa.Array:
        return pa.array(self.texts[rows], pa.string())


Reason = str | pa.Array | _Text | _Number | _Objects  # a fixed reason, or one per row
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
class _AmongKept:
    """A rule about the rows no rule before it breaks (``kept``): ``rule(kept)`` gives whether
    each row breaks it (an array) and the reason."""

    rule: Callable[[np.ndarray], tuple[pa.Array, Reason]]


@dataclass(frozen=True)
class _Split:
    kept: pa.Table
    rejected: pa.Table  # schemas.REJECTS


def _split(rows: _Rows, *, rules: Sequence[tuple[pa.Array, Reason] | _Repeat | _AmongKept]) -> _Split:
    table, source = rows.table, rows.source
    at, reason = _reasons(table, rules, shown=rows.shown)
    bad = np.zeros(table.num_rows, bool)
    bad[at] = True
    rejected = table.take(pa.array(at))
    rows = pa.table(
        [pa.repeat(pa.scalar(source), len(at)), reason, row_json(rejected.select(rows.shown))],
        schema=REJECTS_ARROW,
    )
    return _Split(table.filter(pa.array(~bad)), rows)


def _reasons(
    table: pa.Table, rules: Sequence[tuple[pa.Array, Reason] | _Repeat | _AmongKept], *, shown: list[str]
) -> tuple[np.ndarray, pa.Array]:
    """The rows that break a rule (ascending) and the reason of the first each breaks. A rule
    whose condition is null is not broken, and one whose reason is null gives way to the next.
    A reason is worked out only for the rows its rule is the first to reject: few rows are."""
    unset = np.ones(table.num_rows, bool)  # no reason yet
    broken = np.zeros(table.num_rows, bool)  # by any rule so far, whatever its reason
    found: list[tuple[np.ndarray, pa.Array]] = []
    for rule in rules:
        if isinstance(rule, _Repeat):
            bad, text = _later(table, rule.key, broken, rule.prefer, shown=shown), rule.reason
        else:
            condition, text = rule.rule(~broken) if isinstance(rule, _AmongKept) else rule
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


def _later(
    table: pa.Table,
    key: Sequence[str],
    broken: np.ndarray,
    prefer: Sequence[tuple[pa.Array, str]] = (),
    *,
    shown: list[str],
) -> np.ndarray:
    """Whether each row comes after the first of its ``key`` (a null is a key value like any
    other): see _Repeat for the ranking; ``shown``: the columns a row's JSON shows."""
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


def _rate_rules(
    table: pa.Table, column: str, *, most: float | None = None, least: float | None = None
) -> list[tuple[pa.Array, Reason]]:
    """A rate or a latency: a number, not negative (null passes: the column's own rule says
    whether it may be); with ``most``, at most that; with ``least``, 0 or at least that (section
    1's bounds, which keep the sums of rates exact and every figure finite)."""
    value = table[column]
    infinite, negative = pc.is_inf(value), pc.less(value, 0)
    rules = [
        (pc.is_nan(value), f"{column} is not a number"),
        (infinite, _concat(f"{column} ", _text(value), " is not finite")),
        (negative, _concat(f"{column} ", _text(value), " is negative")),
    ]
    if most is not None:
        above = _concat(f"{column} ", _text(value), f" is more than {most:g}")
        rules.append((pc.greater(value, most), above))
    if least is not None:
        tiny = pc.and_(pc.greater(value, 0), pc.less(value, least))
        rules.append((tiny, _concat(f"{column} ", _text(value), f" is above 0 but below {least:g}")))
    return rules


def _known(values, keys) -> pa.Array:
    """Whether each value is among ``keys``: a left join's match (a null one never is)."""
    return pc.is_in(values, value_set=combined(pc.unique(keys)), skip_nulls=True)


def _part_at(part, rows: np.ndarray):
    return part if isinstance(part, str) else _reason_at(part, rows)


def _reason_at(reason: Reason, rows: np.ndarray) -> pa.Array:
    """``reason`` at ``rows``: a fixed one repeated, or each row's."""
    if isinstance(reason, str):
        return pa.repeat(pa.scalar(reason), len(rows))
    if isinstance(reason, (_Text, _Number, _Objects)):
        return reason.at(rows)
    return combined(reason).take(pa.array(rows))


def _per_row(reason: Reason, n: int) -> pa.Array:
    """``reason`` for every one of ``n`` rows (a groups problem is a column of its own)."""
    return _reason_at(reason, np.arange(n))


def _concat(*parts) -> _Text:
    return _Text(parts)


def _text(values) -> _Number:
    return _Number(values)
