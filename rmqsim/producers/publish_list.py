"""The publish list (messageQueueList) a producer builds from each topic's route, many topics at once.

Java: MQClientInstance.topicRouteData2TopicPublishInfo (MQClientInstance.java:226-281 in 5.3.3,
:161-208 at rocketmq-all-4.9.8). Go: routeData2PublishInfo (rocketmq-client-go internal/route.go:472-531).

With an orderTopicConf (not null, not ""), the list is the conf's items (order_conf). Otherwise the
route's QueueDatas, stable-sorted by brokerName (Java: String.compareTo, UTF-16 code units; Go:
UTF-8 bytes), each with the write perm (perm & 2) and a master contributing queue ids
0 .. writeQueueNums-1. A master is brokerAddrs key 0 on the first BrokerData of that name; Java
checks only the key, Go also skips an empty address. Nothing is de-duplicated: a QueueData listed
twice gives its queues twice, and they get twice the traffic.

Layout: CSR. Topic t's entries are ``broker[offsets[t]:offsets[t+1]]`` with the same slice of
``queue_id``, in list order; a topic whose conf made the client fail has no entries and an error.
Each entry also names its source (the QueueData or conf item it comes from) as a number, so that
callers can work per source, a few rows, rather than per entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.arrays import combined, offsets, within_runs
from rmqsim.javaorder import java_order
from rmqsim.producers.order_conf import OrderTopicConf, parse_go, parse_java

PERM_WRITE = 2
# rmqsim's own guard, not a client's: a conf like "a:2000000000" would make the real client run
# out of memory, and would make the simulator do the same.
MAX_LIST_LENGTH = 1 << 20


@dataclass(frozen=True)
class PublishLists:
    offsets: np.ndarray  # int64, n_topics + 1
    source: np.ndarray  # int64 per entry, in list order: its QueueData (its index in the input) or
    # conf item (after them)
    source_broker: pa.Array  # string per source
    queue_id: np.ndarray  # int32, one per entry: 0, 1, ... within each run of one source
    order_topic: np.ndarray  # bool per topic: built from orderTopicConf (False where the client failed)
    error: pa.Array  # string per topic: the client's failure, null where the list was built

    @property
    def broker(self) -> pa.Array:
        """The broker name of every entry."""
        return self.source_broker.take(pa.array(self.source))

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def topic_list(self, topic: int) -> list[tuple[str, int]]:
        """One topic's list as (broker, queue id) pairs: for tests and reports, not the hot path."""
        start, end = int(self.offsets[topic]), int(self.offsets[topic + 1])
        return list(zip(self.broker[start:end].to_pylist(), self.queue_id[start:end].tolist()))


def java_publish_lists(
    *,
    n_topics: int,
    topic: np.ndarray,
    broker_name: pa.Array | np.ndarray | Sequence[str],
    write_queue_nums: np.ndarray,
    perm: np.ndarray,
    has_master: np.ndarray,
    order_topic_conf: pa.Array | Sequence[str | None] | None = None,
    max_list_length: int = MAX_LIST_LENGTH,
) -> PublishLists:
    """The Java producer's lists. One element per QueueData, in each route's order: ``topic``
    (int, 0 .. n_topics-1), ``broker_name``, ``write_queue_nums``, ``perm``, ``has_master`` (the
    first BrokerData of that name has brokerAddrs key "0"). ``order_topic_conf``: one per topic,
    null for none."""
    return _publish_lists(
        n_topics,
        topic,
        broker_name,
        write_queue_nums,
        perm,
        np.asarray(has_master, dtype=bool),
        order_topic_conf,
        max_list_length=max_list_length,
        client="java",
    )


def go_publish_lists(
    *,
    n_topics: int,
    topic: np.ndarray,
    broker_name: pa.Array | np.ndarray | Sequence[str],
    write_queue_nums: np.ndarray,
    perm: np.ndarray,
    has_master: np.ndarray,
    master_empty: np.ndarray,
    order_topic_conf: pa.Array | Sequence[str | None] | None = None,
    max_list_length: int = MAX_LIST_LENGTH,
) -> PublishLists:
    """The Go producer's lists: as java_publish_lists, plus ``master_empty`` (that master's
    address is ""), which Go skips."""
    usable = np.asarray(has_master, dtype=bool) & ~np.asarray(master_empty, dtype=bool)
    return _publish_lists(
        n_topics,
        topic,
        broker_name,
        write_queue_nums,
        perm,
        usable,
        order_topic_conf,
        max_list_length=max_list_length,
        client="go",
    )


def _strings(values: pa.Array | pa.ChunkedArray | np.ndarray | Sequence) -> pa.Array:
    if isinstance(values, pa.Array | pa.ChunkedArray):
        array = combined(values)
        return array if pa.types.is_string(array.type) else array.cast(pa.string())
    return pa.array(values if isinstance(values, np.ndarray) else list(values), type=pa.string())


def _parsed_confs(confs: pa.Array, client: str) -> tuple[np.ndarray, list[OrderTopicConf]]:
    """Per topic, the index of its parsed conf (-1: not an order topic), and the distinct parses:
    one parse per distinct conf string, however many topics share it."""
    encoded = pc.if_else(pc.equal(confs, ""), pa.scalar(None, pa.string()), confs).dictionary_encode()
    parse = parse_java if client == "java" else parse_go
    parsed = [parse(conf) for conf in encoded.dictionary.to_pylist()]
    return encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64), parsed


def _dense_rank(names: pa.Array) -> np.ndarray:
    """pc.rank(names, tiebreaker="dense") of a column of a few distinct names (a fleet's brokers):
    the distinct ones ranked, then looked up, instead of every row sorted."""
    encoded = pc.dictionary_encode(names)
    ranks = pc.rank(encoded.dictionary, tiebreaker="dense").to_numpy(zero_copy_only=False).astype(np.int64)
    return ranks[encoded.indices.to_numpy(zero_copy_only=False)]


def _publish_lists(
    n_topics: int,
    topic: np.ndarray,
    broker_name: pa.Array | np.ndarray | Sequence[str],
    write_queue_nums: np.ndarray,
    perm: np.ndarray,
    usable: np.ndarray,
    order_topic_conf: pa.Array | Sequence[str | None] | None,
    *,
    max_list_length: int,
    client: str,
) -> PublishLists:
    topic = np.asarray(topic, dtype=np.int64)
    if len(topic) and not 0 <= topic.min() <= topic.max() < n_topics:
        raise ValueError(f"QueueData topic indices must lie in 0 .. {n_topics - 1}")
    brokers = _strings(broker_name)
    if brokers.null_count:
        raise ValueError("a QueueData without a brokerName: Java's sort would throw NullPointerException")
    confs = _strings([None] * n_topics if order_topic_conf is None else order_topic_conf)
    if len(confs) != n_topics:
        raise ValueError(f"{len(confs)} orderTopicConf values for {n_topics} topics")
    conf_of, parsed = _parsed_confs(confs, client)
    is_order = conf_of >= 0

    # Route segments: kept QueueDatas, by topic, then broker name in the client's order, then route order.
    wanted = np.asarray(write_queue_nums, dtype=np.int64)
    kept = (np.asarray(perm, dtype=np.int64) & PERM_WRITE != 0) & usable & (wanted > 0) & ~is_order[topic]
    rank = _dense_rank(java_order(brokers) if client == "java" else brokers)
    rows = np.flatnonzero(kept)
    # One int64 key, sorted stably: rows keep their route order within a (topic, broker).
    rows = rows[np.argsort(topic[rows] * (int(rank.max(initial=0)) + 1) + rank[rows], kind="stable")]

    # Conf segments: each order topic's items; their broker names follow the route's in one array.
    item_counts = np.array([len(p.brokers) for p in parsed], dtype=np.int64)
    item_offsets = offsets(item_counts)
    order_topics = np.flatnonzero(is_order)
    items_per_topic = item_counts[conf_of[order_topics]]
    items = np.repeat(item_offsets[conf_of[order_topics]], items_per_topic) + within_runs(items_per_topic)
    conf_brokers = pa.array([b for p in parsed for b in p.brokers], type=pa.string())
    conf_sizes = np.array([n for p in parsed for n in p.queue_counts], dtype=np.int64)

    # One topic never has segments of both kinds, so a stable sort by topic keeps each list's order.
    segment_topic = np.concatenate([topic[rows], np.repeat(order_topics, items_per_topic)])
    segment_source = np.concatenate([rows, len(brokers) + items])
    segment_size = np.concatenate([wanted[rows], conf_sizes[items]])
    by_topic = np.argsort(segment_topic, kind="stable")
    segment_topic, segment_source, segment_size = (
        segment_topic[by_topic],
        segment_source[by_topic],
        segment_size[by_topic],
    )

    error_of_conf = pa.array([p.error for p in parsed] + [None], type=pa.string())
    errors = error_of_conf.take(pa.array(np.where(is_order, conf_of, len(parsed))))
    # Sizes clipped past the limit keep the int64 sums exact (Go's Atoi can give 2^63-1 queues).
    bounds = np.searchsorted(segment_topic, np.arange(n_topics + 1))
    running = offsets(np.minimum(segment_size, max_list_length + 1))
    length = running[bounds[1:]] - running[bounds[:-1]]
    too_long = length > max_list_length
    if too_long.any():  # rare: a Python pass over the topics is fine
        text = errors.to_pylist()
        for t in np.flatnonzero(too_long).tolist():
            total = sum(int(n) for n in segment_size[bounds[t] : bounds[t + 1]])
            text[t] = f"rmqsim: the publish list would hold {total} queues, more than {max_list_length}"
        errors = pa.array(text, type=pa.string())
    failed = errors.is_valid().to_numpy(zero_copy_only=False)
    keep = ~failed[segment_topic]
    segment_source, segment_size = segment_source[keep], segment_size[keep]

    return PublishLists(
        offsets=offsets(np.where(failed, 0, length)),
        source=np.repeat(segment_source, segment_size),
        source_broker=pa.concat_arrays([brokers, conf_brokers]),
        queue_id=within_runs(segment_size).astype(np.int32),
        order_topic=is_order & ~failed,
        error=errors,
    )
