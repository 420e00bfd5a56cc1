"""Row checks in the driver, with pyarrow and numpy: rows that cannot be simulated go to rejects/
with a reason, the rest go on. A rule whose condition is null is not broken (a comparison with a
missing value proves nothing), and a reason built from a null value is no reason.

Each table is checked once; rules are listed in the order they are tried, and a row is rejected
for the first it breaks. A reject row carries the offending row as JSON (snapshot.text.row_json),
and that text also decides which of several repeated rows is kept. How a rule is written and
applied: snapshot.check_rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import combined, row_codes
from rmqsim.producers.versions import classify_versions
from rmqsim.scenarios.step_values import is_ip
from rmqsim.schemas import (
    LANGUAGES,
    MAX_RATE,
    MESSAGE_MODELS,
    MIN_CAPACITY,
    PERM_READ,
    PRODUCERS,
    REBALANCES,
    REQUEST_MODES,
    SELECTORS,
)
from rmqsim.snapshot.check_rules import (
    NULL,
    AmongKept,
    Objects,
    Repeat,
    Rows,
    Split,
    after_first,
    blank_rules,
    count_rules,
    is_known,
    number_of,
    per_row,
    queue_id_rules,
    rate_rules,
    split_rows,
    text_of,
)
from rmqsim.snapshot.load import Snapshot, schemas_table
from rmqsim.snapshot.text import blank, normalised, row_json
from rmqsim.strategies import STRATEGIES


@dataclass(frozen=True)
class Checked:
    snapshot: Snapshot  # only rows that can be simulated, in the order read
    rejects: pa.Table  # schemas.REJECTS


def check_snapshot(tables: Snapshot, *, configured_strategies: bool) -> Checked:
    """Split every table into rows to simulate and reject rows; later tables see only kept rows
    (but a group's consumers are looked for among all consumer rows)."""
    given = tables.given
    brokers = _check_brokers(Rows(tables.brokers, "brokers", given))
    topic_queues = _check_topic_queues(Rows(tables.topic_queues, "topic_queues", given), brokers=brokers.kept)
    # The producers' side needs nothing of the consumers': checked beside them, in a thread.
    with ThreadPoolExecutor(1, thread_name_prefix="rmqsim-checks") as pool:
        producer_side = pool.submit(_check_producer_side, tables, topic_queues=topic_queues.kept)
        groups, group_problems = _check_groups(
            Rows(tables.groups, "groups", given),
            consumers=tables.consumers,
            configured_strategies=configured_strategies,
        )
        consumers = _check_consumers(
            Rows(tables.consumers, "consumers", given),
            topic_queues=topic_queues.kept,
            group_problems=group_problems,
        )
        queue_config = offsets = None
        if tables.queue_config is not None:
            queue_config = _check_queue_config(Rows(tables.queue_config, "queue_config", given))
        if tables.offsets is not None:
            offsets = _check_offsets(Rows(tables.offsets, "offsets", given), topic_queues=topic_queues.kept)
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
) -> tuple[Split | None, Split | None, Split | None]:
    """producers, producer_keys and order_topics, each checked where the snapshot has it."""
    given = tables.given
    producers = producer_keys = order_topics = None
    if tables.producers is not None:
        producers = _check_producers(Rows(tables.producers, "producers", given), topic_queues=topic_queues)
    if tables.producer_keys is not None:
        hashing = producers.kept if producers else schemas_table(PRODUCERS)
        producer_keys = _check_producer_keys(
            Rows(tables.producer_keys, "producer_keys", given), producers=hashing
        )
    if tables.order_topics is not None:
        order_topics = _check_order_topics(Rows(tables.order_topics, "order_topics", given))
    return producers, producer_keys, order_topics


# ------------------------------------------------------------------ tables


def _check_brokers(rows: Rows) -> Split:
    brokers = rows.table
    return split_rows(
        rows,
        rules=[
            *blank_rules(brokers, "broker_name"),
            *rate_rules(brokers, "send_latency_ms"),
            Repeat(
                ["broker_name", "broker_id"],
                "duplicate row for this broker_name and broker_id: "
                "the first good one (in JSON order) is used",
            ),
        ],
    )


def _check_topic_queues(rows: Rows, *, brokers: pa.Table) -> Split:
    """``brokers``: the kept broker rows."""
    topic_queues = rows.table
    read, perm = topic_queues["read_queue_nums"], topic_queues["perm"]
    readable = pc.and_kleene(pc.not_equal(pc.bit_wise_and(perm, PERM_READ), 0), pc.greater(read, 0))
    return split_rows(
        rows,
        rules=[
            *blank_rules(topic_queues, "topic", "broker_name"),
            (pc.is_null(read), "read_queue_nums is null"),
            *count_rules(topic_queues, "read_queue_nums"),
            *count_rules(topic_queues, "write_queue_nums"),
            (pc.is_null(perm), "perm is null"),
            (
                pc.or_kleene(pc.less(perm, 0), pc.greater(perm, 15)),
                text_of("perm ", number_of(perm), " is outside 0 to 15"),
            ),
            (
                pc.invert(is_known(topic_queues["broker_name"], brokers["broker_name"])),
                text_of("broker_name '", topic_queues["broker_name"], "' is not in brokers"),
            ),
            Repeat(topic_queues.column_names, "duplicate row: an identical row is used"),
            # A NameServer keeps one QueueData per broker, so two rows for one broker are a broken
            # capture. The client puts the queues of every readable QueueData in one set: the
            # union, which is the readable row with the most read queues, the one kept.
            Repeat(
                ["topic", "broker_name"],
                text_of(
                    "another row for this topic and broker_name (a NameServer keeps one QueueData "
                    "per broker): the client reads the union of their queues, the readable row "
                    "with the most read queues, which is used; this one has ",
                    number_of(read),
                    " read queues and perm ",
                    number_of(perm),
                ),
                prefer=[(combined(readable), "descending"), (combined(read), "descending")],
            ),
        ],
    )


def _check_groups(rows: Rows, *, consumers: pa.Table, configured_strategies: bool) -> tuple[Split, pa.Table]:
    """The groups split, and (group, problem) for each group whose first good row cannot run (its
    message model or balancing, or with configured strategies its strategy): its consumers go too."""
    groups = rows.table
    problem = _group_problem(groups, configured_strategies=configured_strategies)
    # A row with a problem ranks after the good ones, so it never makes a good row a duplicate.
    later = after_first(
        groups, ["group"], problem.is_valid().to_numpy(zero_copy_only=False), shown=rows.shown
    )
    first = pc.and_(pa.array(~later), pc.invert(blank(groups["group"])))
    split = split_rows(
        rows,
        rules=[
            *blank_rules(groups, "group"),
            (pc.invert(first), "duplicate row for this group: the first good one (in JSON order) is used"),
            (
                pc.invert(is_known(groups["group"], consumers["group"])),
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


def _check_consumers(rows: Rows, *, topic_queues: pa.Table, group_problems: pa.Table) -> Split:
    """``topic_queues``: the kept rows (every topic with one has a route, perhaps an empty one)."""
    consumers = rows.table
    at = pc.index_in(consumers["group"], value_set=combined(group_problems["group"]), skip_nulls=True)
    problem = combined(group_problems["problem"]).take(combined(at))
    # Only a client on more than one row (several topics) can disagree with itself.
    shared = _repeated(consumers, ["group", "client_id"])
    return split_rows(
        rows,
        rules=[
            *blank_rules(consumers, "group", "topic", "client_id"),
            (
                pc.invert(is_known(consumers["topic"], topic_queues["topic"])),
                text_of("topic '", consumers["topic"], "' has no route (no topic_queues row)"),
            ),
            (pc.is_valid(problem), text_of("group '", consumers["group"], "' is not simulated: ", problem)),
            *rate_rules(consumers, "capacity_msgs_per_s", most=MAX_RATE, least=MIN_CAPACITY),
            # Among the rows kept: a row rejected for its own value sets no value to agree with.
            *(
                AmongKept(lambda kept, c=c: _disagreeing(rows, c, shared & kept))
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


def _disagreeing(rows: Rows, column: str, shared: np.ndarray) -> tuple[pa.Array, Objects]:
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
    return pa.array(reason != None), Objects(reason)  # noqa: E711


def _joined(table: pa.Table, columns: list[str]) -> np.ndarray:
    parts = [pc.fill_null(pc.cast(combined(table[c]), pa.string()), "\x01") for c in columns]
    return pc.binary_join_element_wise(*parts, "\x00").to_numpy(zero_copy_only=False)


def _check_queue_config(rows: Rows) -> Split:
    queue_config = rows.table
    return split_rows(
        rows,
        rules=[
            *blank_rules(queue_config, "group", "client_id", "topic", "broker_name"),
            *queue_id_rules(queue_config),
            Repeat(queue_config.column_names, "duplicate row: an identical row is used"),
        ],
    )


def _check_offsets(rows: Rows, *, topic_queues: pa.Table) -> Split:
    """``topic_queues``: the kept rows."""
    offsets = rows.table
    topic, broker, queue_id = offsets["topic"], offsets["broker_name"], offsets["queue_id"]
    return split_rows(
        rows,
        rules=[
            *blank_rules(offsets, "group", "topic", "broker_name"),
            *queue_id_rules(offsets),
            (pc.is_null(offsets["broker_offset"]), "broker_offset is null"),
            (pc.is_null(offsets["consumer_offset"]), "consumer_offset is null"),
            *rate_rules(offsets, "in_tps", most=MAX_RATE),
            (
                pc.fill_null(pc.greater_equal(queue_id, _queue_counts(offsets, topic_queues)), True),
                text_of(
                    "no such queue in topic_queues: topic '",
                    topic,
                    "', broker_name '",
                    broker,
                    "', queue_id ",
                    number_of(queue_id),
                ),
            ),
            Repeat(
                ["group", "topic", "broker_name", "queue_id"],
                "duplicate row for this queue: the first good one (in JSON order) is used",
            ),
        ],
    )


def _check_producers(rows: Rows, *, topic_queues: pa.Table) -> Split:
    """``topic_queues``: the kept rows (a topic with none has no route at all)."""
    producers = rows.table
    selector = normalised(pc.coalesce(producers["selector"], "ROUND_ROBIN"))
    language = normalised(pc.coalesce(producers["language"], "JAVA"))
    _, version_problem = classify_versions(combined(producers["version"]))
    return split_rows(
        rows,
        rules=[
            *blank_rules(producers, "topic"),
            (pc.is_null(producers["msgs_per_s"]), "msgs_per_s is null"),
            *rate_rules(producers, "msgs_per_s", most=MAX_RATE),
            (
                pc.invert(pc.is_in(selector, value_set=pa.array(SELECTORS))),
                text_of("unknown selector '", producers["selector"], "': expected ROUND_ROBIN or HASH"),
            ),
            (
                pc.invert(pc.is_in(language, value_set=pa.array(LANGUAGES))),
                text_of(
                    "unknown language '",
                    producers["language"],
                    f"': the libraries rmqsim simulates are {', '.join(LANGUAGES)}",
                ),
            ),
            (pc.is_valid(version_problem), text_of("unknown version: ", version_problem)),
            (
                pc.invert(is_known(producers["topic"], topic_queues["topic"])),
                text_of("topic '", producers["topic"], "' has no route (no topic_queues row)"),
            ),
        ],
    )


def _check_producer_keys(rows: Rows, *, producers: pa.Table) -> Split:
    """``producers``: the kept rows; a key mixes the traffic of HASH producers only."""
    keys = rows.table
    hashing = producers.filter(
        pc.equal(normalised(pc.coalesce(producers["selector"], "ROUND_ROBIN")), "HASH")
    )
    pairs = _KeyPairs.of(keys, hashing)
    known = pc.if_else(
        pc.is_null(keys["producer_group"]),
        is_known(keys["topic"], hashing["topic"]),
        pc.is_in(pairs.key, value_set=pairs.producer),
    )
    return split_rows(
        rows,
        rules=[
            *blank_rules(keys, "topic"),
            (pc.is_null(keys["key"]), "key is null"),
            *rate_rules(keys, "share", most=MAX_RATE),
            (
                pc.invert(pc.fill_null(known, False)),
                "no HASH producer of this topic (and producer_group) sends with this key",
            ),
            Repeat(
                ["topic", "producer_group", "key"],
                "duplicate row for this key: the first good one (in JSON order) is used",
            ),
            AmongKept(lambda kept: (_silent_keys(keys, hashing, pairs, kept), SILENT_KEYS)),
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
        by_group = is_known(producer_pair, pair.filter(pa.array(rows & named)))
        return pc.or_(by_group, is_known(producer_topic, topic.filter(pa.array(rows & ~named))))

    silent = pc.and_(keyed(kept), pc.invert(keyed(kept & (share > 0))))
    of_group = is_known(pair, producer_pair.filter(silent)).to_numpy(zero_copy_only=False)
    of_topic = is_known(topic, producer_topic.filter(silent)).to_numpy(zero_copy_only=False)
    return pa.array(kept & (share == 0) & np.where(named, of_group, of_topic))


def _check_order_topics(rows: Rows) -> Split:
    order_topics = rows.table
    return split_rows(
        rows,
        rules=[
            *blank_rules(order_topics, "topic"),
            (pc.is_null(order_topics["order_conf"]), "order_conf is null"),
            Repeat(["topic"], "duplicate row for this topic: the first good one (in JSON order) is used"),
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
            pc.if_else(bad, per_row(reason, groups.num_rows), NULL)
            for bad, reason in rate_rules(groups, "capacity_msgs_per_s", most=MAX_RATE, least=MIN_CAPACITY)
        ),
        _not_ips(groups["designated_ips"]),
    ]
    if configured_strategies:
        strategy = normalised(pc.coalesce(groups["strategy"], "AVG"))
        known = pc.is_in(strategy, value_set=pa.array(list(STRATEGIES), pa.string()))
        unknown = text_of("unknown strategy '", strategy, "'")
        problems.append(pc.if_else(known, NULL, per_row(unknown, groups.num_rows)))
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
    reason = text_of(f"unknown {name} '", value, f"': expected {expected}")
    return pc.if_else(bad, per_row(reason, len(value)), NULL)
