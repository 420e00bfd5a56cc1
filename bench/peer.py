"""rmqsim's peer: what a user could write instead of rmqsim for AVG, one process, pyarrow and numpy.

    .venv/bin/python bench/peer.py SNAPSHOT OUT [--check RUN]

It reads a snapshot (docs/CONTRACT.md, section 1: brokers, topic_queues, consumers and, for the
message model, groups) and writes OUT/assignments as ``rmqsim simulate --strategies AVG`` does:
the same columns, types and partition directory (scenario=baseline/strategy=AVG), one part file.
Every (topic, group) at once, in numpy (section 2):

* mqAll: each live broker's (an instance alive or null) readable QueueData (perm has the read bit
  4), queues 0 .. read_queue_nums - 1 (the largest count where a broker has several rows for the
  topic), brokers in Java's String order;
* cidAll: the group's client ids for the topic, duplicates kept, in Java's order; a duplicated id
  computes its first copy's share (cidAll.indexOf), so the later copy's share has no owner;
* AVG: RocketMQ's AllocateMessageQueueAveragely; a BROADCASTING group's clients read every queue.

What it leaves out, being the limit rather than rmqsim: every check and reject (a row rmqsim
rejects is used here), metrics and every other table, scenarios, the broker's and the proxy's
rebalancing, and the client libraries other than Java's (``computed_by`` is always client JAVA).

With ``--check RUN``, after writing (not part of what bench_limit.py times): whether OUT's
assignment rows and RUN's (a ``rmqsim simulate --strategies AVG`` run), as sets of (topic, group,
client_id, broker_name, queue_id), are equal; exit code 1 if not.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PARTITION = "scenario=baseline/strategy=AVG"  # no scenarios: baseline, phase 0
PART_FILE = "part-00000.snappy.parquet"
PERM_READ = 4
COMPUTED_BY = "client JAVA"
KEY = ["topic", "group", "client_id", "broker_name", "queue_id"]
# The file's columns as rmqsim's tasks write them; the partition columns are directory names.
# Repeated strings as dictionaries: the writer stores their indices instead of hashing each row's
# text. Not the client ids, nearly all distinct: their dictionary, as long as the consumers table,
# would be written again into every row group.
TEXT = pa.dictionary(pa.int32(), pa.string())
FILE_SCHEMA = pa.schema(
    [
        pa.field("phase", pa.int32(), False),
        pa.field("topic", TEXT, False),
        pa.field("group", TEXT, False),
        pa.field("client_id", pa.string(), False),
        pa.field("broker_name", TEXT, False),
        pa.field("queue_id", pa.int32(), False),
        pa.field("computed_by", TEXT, False),
    ]
)


def part_files(snapshot: str, name: str) -> list[str]:
    """A snapshot table's Parquet files: ``name``/'s (not _SUCCESS, .crc or empty ones), or
    ``name``.parquet; none if the table is absent."""
    path = os.path.join(snapshot, name)
    if not os.path.isdir(path):
        return [path + ".parquet"] if os.path.exists(path + ".parquet") else []
    return sorted(
        os.path.join(folder, file)
        for folder, _, files in os.walk(path)
        for file in files
        if not file.startswith(("_", ".")) and os.path.getsize(os.path.join(folder, file))
    )


def read(snapshot: str, name: str, columns: list[str]) -> pa.Table | None:
    """``columns`` of a snapshot table, those it has; None if absent. File by file rather than
    through pyarrow.dataset, whose import (pandas) costs a fifth of a second."""
    files = [pq.ParquetFile(path) for path in part_files(snapshot, name)]
    if not files:
        return None
    present = [c for c in columns if c in files[0].schema_arrow.names]
    return pa.concat_tables([f.read(columns=present) for f in files])


def java_keys(strings: pa.Array) -> pa.Array:
    """A key per string whose byte order is Java's String.compareTo (UTF-16 code units).

    UTF-8 bytes order by code point, which differs from UTF-16 only where a character beyond the
    BMP (4 UTF-8 bytes, led by 0xF0..0xF4) meets one in U+E000..U+FFFF (led by 0xEE or 0xEF):
    Java puts the surrogate pair first. Leading bytes 0xF5 and 0xF6 (never in UTF-8) instead of
    0xEE and 0xEF sort those last, in the same order among themselves. Most fleets have no such
    character, and then the strings are their own keys."""
    validity, offsets, data = strings.buffers()
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    if not (raw >= 0xF0).any():
        return strings
    moved = raw.copy()
    moved[moved == 0xEE] = 0xF5
    moved[moved == 0xEF] = 0xF6
    kind = pa.large_binary() if pa.types.is_large_string(strings.type) else pa.binary()
    return pa.Array.from_buffers(
        kind, len(strings), [validity, offsets, pa.py_buffer(moved)], offset=strings.offset
    )


def java_ranks(strings: pa.Array) -> np.ndarray:
    """Each string's place in Java's order of ``strings`` (a small, distinct list: broker names)."""
    ranks = np.empty(len(strings), dtype=np.int64)
    ranks[pc.sort_indices(java_keys(strings)).to_numpy()] = np.arange(len(strings))
    return ranks


def runs_starts(lengths: np.ndarray) -> np.ndarray:
    """Where each run of ``lengths`` starts in their concatenation."""
    return np.cumsum(lengths) - lengths


def within_runs(lengths: np.ndarray) -> np.ndarray:
    """0 .. n-1 for every run of length n, concatenated."""
    return np.arange(lengths.sum()) - np.repeat(runs_starts(lengths), lengths)


@dataclass(frozen=True)
class Queues:
    """Every topic's mqAll, concatenated topic by topic: ``start[t]`` and ``count[t]`` of topic
    code t (an index of ``topics``), each queue's broker (an index of ``brokers``) and id."""

    topics: pa.Array
    brokers: pa.Array
    start: np.ndarray
    count: np.ndarray
    broker: np.ndarray
    queue_id: np.ndarray


def live_brokers(brokers: pa.Table) -> pa.Array:
    """Broker names with an instance alive (null: alive); the others left the routes."""
    if "alive" not in brokers.column_names:
        return pc.unique(brokers["broker_name"])
    return pc.unique(brokers.filter(pc.fill_null(brokers["alive"], True))["broker_name"])


def mq_all(topic_queues: pa.Table, live: pa.Array) -> Queues:
    """The readable queues of every topic, brokers in Java order: mqAll (contract section 2)."""
    live_broker = pc.is_in(topic_queues["broker_name"], value_set=live)
    has_queues = pc.greater(topic_queues["read_queue_nums"], 0)
    read_bit = pc.not_equal(pc.bit_wise_and(topic_queues["perm"], PERM_READ), 0)
    readable = pc.and_(pc.and_(live_broker, has_queues), read_bit)
    rows = (
        topic_queues.filter(readable)
        .group_by(["topic", "broker_name"])  # one QueueData per broker: the widest
        .aggregate([("read_queue_nums", "max")])
    )
    topic = pc.dictionary_encode(rows["topic"]).combine_chunks()
    broker = pc.dictionary_encode(rows["broker_name"]).combine_chunks()
    t_code = topic.indices.to_numpy().astype(np.int64)
    b_code = broker.indices.to_numpy().astype(np.int64)
    order = np.lexsort((java_ranks(broker.dictionary)[b_code], t_code))
    t_code, b_code = t_code[order], b_code[order]
    n = rows["read_queue_nums_max"].to_numpy().astype(np.int64)[order]
    count = np.bincount(t_code, weights=n, minlength=len(topic.dictionary)).astype(np.int64)
    return Queues(
        topics=topic.dictionary,
        brokers=broker.dictionary,
        start=runs_starts(count),
        count=count,
        broker=np.repeat(b_code, n),
        queue_id=within_runs(n),
    )


@dataclass(frozen=True)
class CidAll:
    """Every (topic, group)'s cidAll, concatenated: per entry its topic code (-1: no readable
    queue), group code (an index of ``groups``), client id and place in its cidAll; whether it is
    a caller (the first copy of its id); and its cidAll's length."""

    topic: np.ndarray
    group: np.ndarray
    groups: pa.Array
    client_id: pa.Array
    index: np.ndarray
    caller: np.ndarray
    size: np.ndarray


def cid_all(consumers: pa.Table, topics: pa.Array) -> CidAll:
    """Consumers grouped by (topic, group), each group's client ids in Java order."""
    topic = pc.fill_null(pc.index_in(consumers["topic"], value_set=topics), -1).to_numpy()
    group = pc.dictionary_encode(consumers["group"]).combine_chunks()
    client_id = consumers["client_id"].combine_chunks()
    order = pc.sort_indices(
        pa.table({"t": topic, "g": group.indices, "c": java_keys(client_id)}),
        sort_keys=[("t", "ascending"), ("g", "ascending"), ("c", "ascending")],
    )
    topic = topic[order.to_numpy()].astype(np.int64)
    g_code = group.indices.take(order).to_numpy().astype(np.int64)
    client_id = client_id.take(order)
    first = np.ones(len(topic), dtype=bool)  # an entry that starts its (topic, group)
    first[1:] = (topic[1:] != topic[:-1]) | (g_code[1:] != g_code[:-1])
    repeat = np.zeros(len(topic), dtype=bool)  # the same id as the entry before: not a caller
    if len(topic) > 1:
        same = pc.equal(client_id.slice(1), client_id.slice(0, len(topic) - 1))
        repeat[1:] = pc.fill_null(same, False).to_numpy(zero_copy_only=False) & ~first[1:]
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, len(topic)))
    entry_group = np.cumsum(first) - 1
    return CidAll(
        topic=topic,
        group=g_code,
        groups=group.dictionary,
        client_id=client_id,
        index=np.arange(len(topic)) - starts[entry_group],
        caller=~repeat,
        size=sizes[entry_group],
    )


def broadcasting(groups: pa.Table | None) -> pa.Array:
    """The groups whose message model is BROADCASTING (trimmed, any case)."""
    if groups is None or "message_model" not in groups.column_names:
        return pa.array([], pa.string())
    model = pc.utf8_upper(pc.utf8_trim_whitespace(groups["message_model"]))
    return groups.filter(pc.fill_null(pc.equal(model, "BROADCASTING"), False))["group"].combine_chunks()


def avg_blocks(n: np.ndarray, c: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AllocateMessageQueueAveragely for the client at cidAll place ``i`` of ``c`` over ``n``
    queues: the first queue of its contiguous block in mqAll, and how many."""
    mod = n % c
    extra = (mod > 0) & (i < mod)  # the first n % c clients take one more
    size = np.where(n <= c, 1, np.where(extra, n // c + 1, n // c))
    start = np.where(extra, i * size, i * size + mod)
    return start, np.clip(np.minimum(size, n - start), 0, None)


def dictionary(indices: np.ndarray, values: pa.Array) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(indices.astype(np.int32)), values)


def assignments(queues: Queues, cids: CidAll, broadcast: pa.Array) -> pa.Table:
    """One row per (caller, queue it owns), in FILE_SCHEMA."""
    caller = np.flatnonzero(cids.caller & (cids.topic >= 0))
    topic = cids.topic[caller]
    n = queues.count[topic]
    start, count = avg_blocks(n, cids.size[caller], cids.index[caller])
    every = pc.is_in(cids.groups, value_set=broadcast).to_numpy(zero_copy_only=False)[cids.group[caller]]
    start, count = np.where(every, 0, start), np.where(every, n, count)
    owner = np.repeat(np.arange(len(caller)), count)  # the caller of every row
    # Row r of a caller's block is queue (block's first - block's first row) + r: a gather, not
    # another repeat per row.
    queue = (queues.start[topic] + start - runs_starts(count))[owner] + np.arange(len(owner))
    rows = len(queue)
    columns = [
        pa.array(np.zeros(rows, np.int32)),
        dictionary(topic[owner], queues.topics),
        dictionary(cids.group[caller][owner], cids.groups),
        cids.client_id.take(pa.array(caller[owner])),
        dictionary(queues.broker[queue], queues.brokers),
        pa.array(queues.queue_id[queue].astype(np.int32)),
        dictionary(np.zeros(rows, np.int64), pa.array([COMPUTED_BY])),
    ]
    return pa.Table.from_arrays(columns, schema=FILE_SCHEMA)


def write(rows: pa.Table, out: str) -> str:
    """OUT/assignments as rmqsim lays it out: one part file in the partition's directory, then
    _SUCCESS. Without the Arrow schema in the file, readers see plain strings, as in rmqsim's."""
    table = os.path.join(out, "assignments")
    shutil.rmtree(table, ignore_errors=True)
    os.makedirs(os.path.join(table, PARTITION))
    pq.write_table(rows, os.path.join(table, PARTITION, PART_FILE), compression="snappy", store_schema=False)
    open(os.path.join(table, "_SUCCESS"), "w").close()
    return table


def run(snapshot: str, out: str) -> int:
    """The snapshot's AVG assignments written to OUT/assignments; how many rows."""
    brokers = read(snapshot, "brokers", ["broker_name", "alive"])
    topic_queues = read(snapshot, "topic_queues", ["topic", "broker_name", "read_queue_nums", "perm"])
    consumers = read(snapshot, "consumers", ["group", "topic", "client_id"])
    groups = read(snapshot, "groups", ["group", "message_model"])
    if brokers is None or topic_queues is None or consumers is None:
        raise SystemExit(f"peer: {snapshot} lacks brokers, topic_queues or consumers (docs/CONTRACT.md, 1)")
    queues = mq_all(topic_queues, live_brokers(brokers))
    rows = assignments(queues, cid_all(consumers, queues.topics), broadcasting(groups))
    write(rows, out)
    return rows.num_rows


def assignment_rows(run_dir: str) -> pa.Table:
    """KEY of a run's phase-0 AVG assignments, strings plain."""
    import pyarrow.dataset as ds  # here: the run itself need not import it

    data = ds.dataset(os.path.join(run_dir, "assignments"), format="parquet", partitioning="hive")
    where = (ds.field("scenario") == "baseline") & (ds.field("strategy") == "AVG") & (ds.field("phase") == 0)
    return data.to_table(columns=KEY, filter=where)


def distinct_sorted(rows: pa.Table) -> pa.Table:
    """``rows`` sorted by KEY, each repeat of a row dropped: a set, in an order both sides share.
    Sorting rather than hashing: a 10M-row hash join of four string columns takes gigabytes."""
    rows = rows.take(pc.sort_indices(rows, sort_keys=[(c, "ascending") for c in KEY]))
    if rows.num_rows < 2:
        return rows
    repeat = None  # each row equal to the one before it in every column
    for c in KEY:
        same = pc.equal(rows[c].slice(1), rows[c].slice(0, rows.num_rows - 1))
        repeat = same if repeat is None else pc.and_(repeat, same)
    return rows.filter(pa.concat_arrays([pa.array([True]), pc.invert(repeat).combine_chunks()]))


def check(out: str, run_dir: str) -> bool:
    """Print whether OUT's and RUN's assignments are the same set of KEY rows; True if they are."""
    ours, theirs = assignment_rows(out), assignment_rows(run_dir)
    ours_set, theirs_set = distinct_sorted(ours), distinct_sorted(theirs)
    print(
        f"check: peer {ours.num_rows:,} rows ({ours_set.num_rows:,} distinct), "
        f"simulate {theirs.num_rows:,} rows ({theirs_set.num_rows:,} distinct)"
    )
    same = ours_set.equals(theirs_set)
    if not same:  # what differs, by a join: slow and large, but only when something is wrong
        for name, rows, other in (("peer", ours_set, theirs_set), ("simulate", theirs_set, ours_set)):
            extra = rows.join(other, keys=KEY, join_type="left anti")
            print(f"only in {name}: {extra.num_rows:,} rows, the first:")
            print(extra.slice(0, 5).to_pandas().to_string(index=False))
    print("check: the same rows" if same else "check: the rows differ")
    return same


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("snapshot")
    p.add_argument("out")
    p.add_argument("--check", metavar="RUN", help="compare with this rmqsim simulate --strategies AVG run")
    args = p.parse_args()
    start = time.perf_counter()
    rows = run(args.snapshot, args.out)
    seconds = time.perf_counter() - start
    print(f"{rows:,} assignments in {os.path.join(args.out, 'assignments')} ({seconds:.2f} s)")
    if args.check:
        return 0 if check(args.out, args.check) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
