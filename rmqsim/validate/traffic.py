"""The modelled phase 0 inflow beside what the cluster measured, per queue and per topic, with the
likely cause of each difference (docs/CONTRACT.md, section 2c: where the messages go).

Observed:
- a queue's rate: ``offsets.in_tps``, the largest of the queue's rows (every group's row repeats
  it); 0 where ``queue_status`` has no ``last_updated`` (never written) and no rate is given;
- a topic's total: ``observed_traffic.in_tps`` (statsAll; the largest of the topic's rows, which
  repeat it per group), else the sum of its queues' ``in_tps`` where every queue the model writes
  is measured (a partial sum is no total: the topic is then not compared, its queues are).
A topic without a producers row gets its modelled rate from the in_tps sum (stage.inflow), so its
totals agree by construction unless observed_traffic says otherwise.

Tolerance: mqadmin's rates are one-minute averages of random sends. A queue agrees where
``|observed - modelled| <= 1 msg/s + 5% of the topic's mean queue rate`` (the larger of the
topic's modelled and observed totals over its queues that are written or show inflow); a topic
where ``|observed - modelled| <= 1 msg/s + 5% of the larger total``. At 100 msgs/s per queue the
band is 6 msgs/s, about four standard deviations of a minute's Poisson count.

Causes, for a row that does not agree (a queue row with nothing observed has none). A queue row
takes the first that holds:
1. NOT_IN_PUBLISH_LIST: inflow observed on a queue no modelled producer writes.
2. The topic's rate cause (below), where the queue's share is right: the topic's scale (its
   observed over its modelled inflow, summed over its written queues with an in_tps) is off 1 by
   more than 5%, and observed is within the tolerance of modelled x scale: only the total differs.
3. WRITE_ABOVE_READ: the queue is written but outside mqAll (its messages are stranded), and it
   shows inflow (a stranded queue that shows none goes on down the list).
4. AVOIDED_BROKER: a Java ROUND_ROBIN producer of the topic has send_latency_fault_enable, and the
   queue's broker is avoided: by the model (its send_latency_ms maps to a non-zero
   notAvailableDuration in the producer's version's table) or by the cluster (its measured written
   queues show less than half their modelled inflow, short by more than a queue's tolerance); or
   such a broker is elsewhere in the topic and no HASH producer explains the rest (5.1.4 and
   later share an avoided broker's part over the others, before 5.1.4 each avoided run folds
   onto the next entry).
5. HASH_PRODUCER: the topic has a HASH producer: the key mix decides (give producer_keys).
6. NO_OBSERVED_TRAFFIC: modelled inflow where the queue shows none (within the tolerance of 0).
7. UNEVEN_SENDS: round robin modelled, uneven observed, and nothing in the snapshot says why.
A topic row whose totals differ takes its rate cause, the first that holds:
1. UNROUTABLE: the model cannot send part of the topic's producers' rate (a simulate run's
   rejects/ names why).
2. NO_OBSERVED_TRAFFIC: the topic shows no inflow (within 1 msg/s).
3. NOT_IN_PUBLISH_LIST: inflow observed on queues outside the publish list (where the rate is
   summed from offsets.in_tps, the model spreads it over the written queues).
4. WRITE_ABOVE_READ: the rate is summed from offsets.in_tps and the topic writes queues outside
   mqAll that have none (consumerProgress lists read queues only): the sum misses them.
5. RATE_SOURCE: the model's rate (producers.msgs_per_s, the in_tps sum, or none) is not the
   observed total (observed_traffic.in_tps, or the in_tps sum): stale producers rows, a different
   source, or a topic the snapshot gives no rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.arrays import combined
from rmqsim.producers.latency import LATENCY_4X, LATENCY_5X, not_available_duration
from rmqsim.producers.versions import classify_versions
from rmqsim.snapshot.text import blank, normalised
from rmqsim.stage.inflow import default_producers

KEYS = ["topic", "broker_name", "queue_id"]
RELATIVE_TOLERANCE = 0.05  # of the topic's mean queue rate (a queue) or of its total (a topic)
ABSOLUTE_TOLERANCE = 1.0  # msgs/s
SHORT_BROKER = 0.5  # a broker whose queues show less than this part of their modelled inflow

# Every cause code, in the order a topic's queue_causes lists them, with what it means.
CAUSES = {
    "UNROUTABLE": "the model cannot send part of the topic's producers' rate: no writable queue on "
    "a live master, or an orderTopicConf the client fails on (a simulate run's rejects/ names it)",
    "NOT_IN_PUBLISH_LIST": "inflow observed where no modelled producer writes: a broker alive only "
    "through a slave, the write perm off, fewer write queues in the snapshot than in the cluster, "
    "or a route that changed since the capture",
    "WRITE_ABOVE_READ": "the topic writes queues outside mqAll: their messages are stranded, and "
    "offsets (consumerProgress lists read queues) do not measure them, so a rate summed from "
    "offsets.in_tps misses them",
    "AVOIDED_BROKER": "a Java producer with sendLatencyFaultEnable: the model avoids a broker for "
    "its send_latency_ms and the cluster writes it, or the cluster avoids one the snapshot's latency "
    "does not (before 5.1.4 an avoided run's share lands on the next queue)",
    "HASH_PRODUCER": "the topic has a HASH producer: its key mix decides which queues get the "
    "messages (give producer_keys, or bring them up to date)",
    "NO_OBSERVED_TRAFFIC": "modelled inflow where the cluster shows none: producers stopped, or "
    "the snapshot lists producers the cluster no longer has",
    "RATE_SOURCE": "the share is right but the topic's total is not: the model's rate "
    "(producers.msgs_per_s, the sum of offsets.in_tps, or none) is not what the cluster receives",
    "UNEVEN_SENDS": "round robin modelled, uneven observed, and nothing in the snapshot says why "
    "(a short measuring window, restarted producers, failed sends retried elsewhere)",
}
_CODES = pa.array([None, *CAUSES], pa.string())  # a cause number's code; 0 is none
(
    UNROUTABLE,
    NOT_IN_PUBLISH_LIST,
    WRITE_ABOVE_READ,
    AVOIDED_BROKER,
    HASH_PRODUCER,
    NO_OBSERVED_TRAFFIC,
    RATE_SOURCE,
    UNEVEN_SENDS,
) = range(1, len(CAUSES) + 1)


@dataclass(frozen=True)
class Comparison:
    queues: pa.Table  # schemas.VALIDATION_TRAFFIC, by topic, broker_name, queue_id
    topics: pa.Table  # schemas.VALIDATION_TOPICS, by topic


def has_observations(
    offsets: pa.Table | None, observed_traffic: pa.Table | None, queue_status: pa.Table | None
) -> bool:
    """Whether the snapshot measured any traffic: an in_tps, a statsAll row or a topicStatus row."""
    rated = offsets is not None and offsets["in_tps"].null_count < offsets.num_rows
    return rated or any(t is not None and t.num_rows > 0 for t in (observed_traffic, queue_status))


def compare(
    queue_traffic: pa.Table,
    *,
    topics: pa.Array | pa.ChunkedArray,
    brokers: pa.Table,
    producers: pa.Table | None = None,
    offsets: pa.Table | None = None,
    observed_traffic: pa.Table | None = None,
    queue_status: pa.Table | None = None,
) -> Comparison:
    """``queue_traffic``: schemas.QUEUE_TRAFFIC's rows of one phase (the snapshot's). ``topics``:
    the snapshot's routed topics (topic_queues'); observations of other topics are left out.
    ``brokers``, ``producers`` (its own rows, without the default populations) and ``offsets``:
    the snapshot's checked rows. ``observed_traffic`` and ``queue_status`` as loaded: rows without
    a key or a usable rate are left out here."""
    known = combined(pc.unique(combined(topics)))
    rows = _queue_rows(queue_traffic, known, offsets, queue_status)
    totals = _observed_totals(observed_traffic, known)
    requested = _requested(producers, offsets, known)
    names = _topic_names(rows["topic"], totals["topic"], requested["topic"])
    q = _queues(rows, names)
    t = _topics(q, names, totals, requested, _producer_kinds(producers, names))
    v = _queue_verdicts(q, t, _avoided(rows, q, t, brokers))
    return Comparison(queues=_queue_table(rows, q, v), topics=_topic_table(names, q, t, v))


# ------------------------------------------------------------------ inputs


def _queue_rows(
    queue_traffic: pa.Table, known: pa.Array, offsets: pa.Table | None, queue_status: pa.Table | None
) -> pa.Table:
    """Every queue modelled or observed, of a known topic: keys, in_msgs_per_s, written, read,
    in_tps, ever_written (nulls where a side has no row), sorted by the keys."""
    modelled = queue_traffic.select([*KEYS, "in_msgs_per_s", "written", "read"])
    key_types = modelled.select(KEYS).schema
    rows = modelled.join(_queue_rates(offsets, key_types), KEYS, join_type="full outer")
    rows = rows.join(_queue_status(queue_status, key_types), KEYS, join_type="full outer")
    rows = rows.filter(pc.is_in(rows["topic"], value_set=known))
    return rows.sort_by([(k, "ascending") for k in KEYS])


def _keyed(table: pa.Table) -> pa.Array:
    """Rows whose topic and broker name are not blank and whose queue id is not negative."""
    named = pc.invert(pc.or_(blank(table["topic"]), blank(table["broker_name"])))
    return pc.and_(named, pc.fill_null(pc.greater_equal(table["queue_id"], 0), False))


def _queue_rates(offsets: pa.Table | None, key_types: pa.Schema) -> pa.Table:
    """(keys, in_tps): each queue's rate once, the largest its rows give."""
    schema = pa.schema([*key_types, pa.field("in_tps", pa.float64())])
    if offsets is None:
        return schema.empty_table()
    rated = offsets.filter(pc.and_(pc.is_valid(offsets["in_tps"]), _keyed(offsets)))
    per_queue = rated.group_by(KEYS, use_threads=False).aggregate([("in_tps", "max")])
    return per_queue.rename_columns([*KEYS, "in_tps"]).select(schema.names).cast(schema)


def _queue_status(queue_status: pa.Table | None, key_types: pa.Schema) -> pa.Table:
    """(keys, ever_written): whether topicStatus shows a last write (any of the queue's rows)."""
    schema = pa.schema([*key_types, pa.field("ever_written", pa.bool_())])
    if queue_status is None:
        return schema.empty_table()
    keyed = queue_status.filter(_keyed(queue_status))
    written = keyed.select(KEYS).append_column("ever_written", pc.is_valid(keyed["last_updated"]))
    per_queue = written.group_by(KEYS, use_threads=False).aggregate([("ever_written", "any")])
    return per_queue.rename_columns([*KEYS, "ever_written"]).select(schema.names).cast(schema)


def _observed_totals(observed_traffic: pa.Table | None, known: pa.Array) -> pa.Table:
    """(topic, in_tps): statsAll's rate of each known topic (repeated per group: the largest)."""
    if observed_traffic is None:
        return pa.table({"topic": pa.array([], pa.string()), "in_tps": pa.array([], pa.float64())})
    rate = observed_traffic["in_tps"]
    usable = pc.and_(pc.is_valid(rate), pc.invert(pc.is_nan(rate)))
    usable = pc.and_(pc.and_(usable, pc.greater_equal(rate, 0)), pc.invert(pc.is_inf(rate)))
    usable = pc.and_(usable, pc.is_in(observed_traffic["topic"], value_set=known))
    rows = observed_traffic.filter(usable).select(["topic", "in_tps"])
    return (
        rows.group_by("topic", use_threads=False)
        .aggregate([("in_tps", "max")])
        .rename_columns(["topic", "in_tps"])
    )


def _requested(producers: pa.Table | None, offsets: pa.Table | None, known: pa.Array) -> pa.Table:
    """(topic, requested, from_producers): what the model's populations send, and whether a
    producers row gave it (else a default population sends the topic's in_tps sum)."""
    every = default_producers(producers, offsets, known)
    if every is None:
        return pa.table(
            {
                "topic": pa.array([], pa.string()),
                "requested": pa.array([], pa.float64()),
                "from_producers": pa.array([], pa.bool_()),
            }
        )
    summed = every.group_by("topic", use_threads=False).aggregate([("msgs_per_s", "sum")])
    given = pa.array([], pa.string()) if producers is None else combined(producers["topic"])
    return pa.table(
        {
            "topic": summed["topic"],
            "requested": summed["msgs_per_s_sum"],
            "from_producers": pc.is_in(summed["topic"], value_set=given),
        }
    )


def _topic_names(*columns: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Every topic of the comparison, sorted: its index is the topic's number below."""
    every = pa.chunked_array([c for column in columns for c in _chunks(column)], pa.string())
    return pc.unique(every).sort()


def _chunks(column: pa.ChunkedArray | pa.Array) -> list[pa.Array]:
    return list(column.chunks) if isinstance(column, pa.ChunkedArray) else [column]


def _numbers(values: pa.ChunkedArray | pa.Array, names: pa.Array) -> np.ndarray:
    """Each value's index in ``names`` (-1 where absent)."""
    at = pc.index_in(combined(values), value_set=names)
    return pc.fill_null(at, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def _numpy(values: pa.ChunkedArray | pa.Array, fill: object) -> np.ndarray:
    return pc.fill_null(combined(values), fill).to_numpy(zero_copy_only=False)


# ------------------------------------------------------------------ facts


@dataclass(frozen=True)
class _Queues:
    """The queue rows as numpy arrays."""

    topic: np.ndarray  # the topic's number
    modelled: np.ndarray
    observed: np.ndarray  # nan where not observed
    rated: np.ndarray  # observed by an in_tps (not by queue_status alone)
    written: np.ndarray
    read: np.ndarray
    n_topics: int

    @property
    def seen(self) -> np.ndarray:
        return ~np.isnan(self.observed)

    def per_topic(self, values: np.ndarray, where: np.ndarray) -> np.ndarray:
        """``values`` summed per topic over the rows ``where`` holds."""
        return np.bincount(self.topic, weights=np.where(where, values, 0.0), minlength=self.n_topics)

    def count(self, where: np.ndarray) -> np.ndarray:
        """Rows per topic where ``where`` holds."""
        return np.bincount(self.topic[where], minlength=self.n_topics)


def _queues(rows: pa.Table, names: pa.Array) -> _Queues:
    in_tps = _numpy(rows["in_tps"], np.nan).astype(np.float64)
    never = ~_numpy(rows["ever_written"], True).astype(bool)
    return _Queues(
        topic=_numbers(rows["topic"], names),
        modelled=_numpy(rows["in_msgs_per_s"], 0.0).astype(np.float64),
        observed=np.where(np.isnan(in_tps) & never, 0.0, in_tps),
        rated=~np.isnan(in_tps),
        written=_numpy(rows["written"], False).astype(bool),
        read=_numpy(rows["read"], False).astype(bool),
        n_topics=len(names),
    )


@dataclass(frozen=True)
class _Producers:
    """Per topic number, what its producers rows say."""

    hashing: np.ndarray  # a HASH producer
    avoid_4x: np.ndarray  # a Java ROUND_ROBIN producer with latency avoidance, before 5.1.4
    avoid_5x: np.ndarray  # the same, 5.1.4 or later


def _producer_kinds(producers: pa.Table | None, names: pa.Array) -> _Producers:
    """A selector picks its queue itself: a HASH producer avoids no broker, whatever it enables."""
    none = np.zeros(len(names), dtype=bool)
    if producers is None or producers.num_rows == 0:
        return _Producers(none, none, none)
    topic = _numbers(producers["topic"], names)
    hashing = pc.equal(normalised(pc.coalesce(producers["selector"], "ROUND_ROBIN")), "HASH")
    java = pc.equal(normalised(pc.coalesce(producers["language"], "JAVA")), "JAVA")
    enabled = pc.fill_null(producers["send_latency_fault_enable"], False)
    avoids = pc.and_(pc.and_(java, enabled), pc.invert(hashing)).to_numpy(zero_copy_only=False)
    before, _ = classify_versions(combined(producers["version"]))

    def any_of(where: np.ndarray) -> np.ndarray:
        return np.bincount(topic[where & (topic >= 0)], minlength=len(names)) > 0

    return _Producers(
        hashing=any_of(hashing.to_numpy(zero_copy_only=False)),
        avoid_4x=any_of(avoids & before),
        avoid_5x=any_of(avoids & ~before),
    )


@dataclass(frozen=True)
class _Topics:
    """Per topic number: the totals, the tolerances, and why its total differs if it does."""

    modelled: np.ndarray
    observed: np.ndarray  # nan where not observed
    observed_from: pa.Array
    requested: np.ndarray
    rate_source: pa.Array
    tolerance: np.ndarray  # of the total
    queue_tolerance: np.ndarray  # of each of its queues
    scale: np.ndarray  # observed over modelled on its rated written queues; nan: none
    rate_cause: np.ndarray  # the cause number a difference in its total takes
    producers: _Producers

    @property
    def differs(self) -> np.ndarray:
        return np.abs(self.observed - self.modelled) > self.tolerance  # false where not observed


def _topics(
    q: _Queues, names: pa.Array, totals: pa.Table, requested: pa.Table, producers: _Producers
) -> _Topics:
    modelled = q.per_topic(q.modelled, np.ones(len(q.topic), dtype=bool))
    stats = _spread(totals["in_tps"], totals["topic"], names, np.nan)
    complete = (q.count(q.rated) > 0) & (q.count(q.written & ~q.seen) == 0)
    summed = np.where(complete, q.per_topic(q.observed, q.rated), np.nan)
    observed = np.where(np.isnan(stats), summed, stats)
    asked = _spread(requested["requested"], requested["topic"], names, 0.0)
    given = _spread(pc.cast(requested["from_producers"], pa.float64()), requested["topic"], names, np.nan)
    larger = np.fmax(modelled, observed)  # a nan observed leaves the modelled
    busy = q.count(q.written | (q.seen & (q.observed > 0)))
    tolerance = ABSOLUTE_TOLERANCE + RELATIVE_TOLERANCE * larger
    on = q.rated & q.written
    base = q.per_topic(q.modelled, on)
    scale = np.divide(q.per_topic(q.observed, on), base, out=np.full(len(names), np.nan), where=base > 0)
    unmeasured_stranded = q.count(q.written & ~q.read & ~q.seen) > 0
    rate_cause = np.select(
        [
            asked - modelled > tolerance,
            observed <= ABSOLUTE_TOLERANCE,
            q.per_topic(q.observed, q.seen & ~q.written) > tolerance,
            unmeasured_stranded & (given == 0),
        ],
        [UNROUTABLE, NO_OBSERVED_TRAFFIC, NOT_IN_PUBLISH_LIST, WRITE_ABOVE_READ],
        RATE_SOURCE,
    )
    source = np.where(given == 1, "producers", np.where(given == 0, "offsets.in_tps", None))
    came_from = np.where(
        ~np.isnan(stats), "observed_traffic", np.where(np.isnan(summed), None, "offsets.in_tps")
    )
    return _Topics(
        modelled=modelled,
        observed=observed,
        observed_from=pa.array(came_from, pa.string()),
        requested=asked,
        rate_source=pa.array(source, pa.string()),
        tolerance=tolerance,
        queue_tolerance=ABSOLUTE_TOLERANCE + RELATIVE_TOLERANCE * larger / np.maximum(busy, 1),
        scale=scale,
        rate_cause=rate_cause,
        producers=producers,
    )


def _spread(values: pa.ChunkedArray, topics: pa.ChunkedArray, names: pa.Array, fill: float) -> np.ndarray:
    """Per number of ``names``, the value of its row in (topics, values), ``fill`` where none."""
    out = np.full(len(names), fill, dtype=np.float64)
    at = _numbers(topics, names)
    out[at[at >= 0]] = _numpy(values, fill).astype(np.float64)[at >= 0]
    return out


def _avoided(rows: pa.Table, q: _Queues, t: _Topics, brokers: pa.Table) -> np.ndarray:
    """Per queue row: written, of a topic with a latency-avoiding producer, on a broker the
    model avoids (its send latency, by the producer's version's table) or the cluster seems to
    (its rated written queues show less than SHORT_BROKER of their modelled inflow, short by more
    than a queue's tolerance)."""
    latency = _broker_latency(brokers)
    at = _numbers(rows["broker_name"], combined(latency["broker_name"]))
    ms = np.append(_numpy(latency["send_latency_ms"], 0.0).astype(np.float64), 0.0)[at]  # -1: the 0
    p = t.producers
    by_model = (p.avoid_4x[q.topic] & (not_available_duration(ms, table=LATENCY_4X) > 0)) | (
        p.avoid_5x[q.topic] & (not_available_duration(ms, table=LATENCY_5X) > 0)
    )
    pair = (
        pc.dictionary_encode(
            pc.binary_join_element_wise(combined(rows["topic"]), combined(rows["broker_name"]), "\x00")
        )
        .indices.to_numpy(zero_copy_only=False)
        .astype(np.int64)
    )
    n_pairs = int(pair.max()) + 1 if len(pair) else 0
    on = q.rated & q.written
    seen = np.bincount(pair, weights=np.where(on, q.observed, 0.0), minlength=n_pairs)
    expected = np.bincount(pair, weights=np.where(on, q.modelled, 0.0), minlength=n_pairs)
    topic_of_pair = np.zeros(n_pairs, dtype=np.int64)
    topic_of_pair[pair] = q.topic
    short = (seen < SHORT_BROKER * expected) & (expected - seen > t.queue_tolerance[topic_of_pair])
    avoiding = p.avoid_4x[q.topic] | p.avoid_5x[q.topic]
    return avoiding & q.written & (by_model | short[pair])


def _broker_latency(brokers: pa.Table) -> pa.Table:
    """(broker_name, send_latency_ms): the master's (id 0, alive), else the largest of its
    instances', as stage.inflow takes it."""
    alive = pc.fill_null(brokers["alive"], True)
    master = pc.and_(pc.equal(pc.fill_null(brokers["broker_id"], 0), 0), alive)
    rows = pa.table(
        {
            "broker_name": brokers["broker_name"],
            "master": pc.if_else(master, brokers["send_latency_ms"], pa.scalar(None, pa.float64())),
            "any": brokers["send_latency_ms"],
        }
    )
    per = rows.group_by("broker_name", use_threads=False).aggregate([("master", "max"), ("any", "max")])
    return pa.table(
        {"broker_name": per["broker_name"], "send_latency_ms": pc.coalesce(per["master_max"], per["any_max"])}
    )


# ------------------------------------------------------------------ causes


@dataclass(frozen=True)
class _Verdicts:
    tolerance: np.ndarray
    differs: np.ndarray  # observed, and outside the tolerance
    cause: np.ndarray  # cause number; 0 where it does not differ


def _queue_verdicts(q: _Queues, t: _Topics, avoided: np.ndarray) -> _Verdicts:
    """Each queue row's cause, the first that holds, ranked as the module says."""
    tolerance = t.queue_tolerance[q.topic]
    differs = q.seen & (np.abs(q.observed - q.modelled) > tolerance)
    scale = t.scale[q.topic]
    off = np.abs(np.nan_to_num(scale, nan=1.0) - 1.0) > RELATIVE_TOLERANCE
    share_right = off & (np.abs(q.observed - q.modelled * np.nan_to_num(scale)) <= tolerance)
    avoiding = q.count(avoided) > 0
    hashing = t.producers.hashing[q.topic]
    cause = np.select(
        [
            ~q.written & (q.observed > q.modelled),
            share_right,
            q.written & ~q.read & (q.observed > tolerance),
            avoided | (avoiding[q.topic] & ~hashing),
            hashing,
            q.observed <= tolerance,
        ],
        [
            NOT_IN_PUBLISH_LIST,
            t.rate_cause[q.topic],
            WRITE_ABOVE_READ,
            AVOIDED_BROKER,
            HASH_PRODUCER,
            NO_OBSERVED_TRAFFIC,
        ],
        UNEVEN_SENDS,
    )
    return _Verdicts(tolerance, differs, np.where(differs, cause, 0))


# ------------------------------------------------------------------ tables


def _queue_table(rows: pa.Table, q: _Queues, v: _Verdicts) -> pa.Table:
    unseen = ~q.seen
    return pa.table(
        {
            **{k: rows[k] for k in KEYS},
            "written": pa.array(q.written),
            "read": pa.array(q.read),
            "modelled_msgs_per_s": pa.array(q.modelled, pa.float64()),
            "observed_msgs_per_s": pa.array(q.observed, pa.float64(), mask=unseen),
            "ever_written": rows["ever_written"],
            "difference": pa.array(q.observed - q.modelled, pa.float64(), mask=unseen),
            "tolerance": pa.array(v.tolerance, pa.float64()),
            "agrees": pa.array(~v.differs, pa.bool_(), mask=unseen),
            "cause": _CODES.take(pa.array(v.cause, pa.int64())),
        }
    ).cast(schemas.arrow(schemas.VALIDATION_TRAFFIC))


def _topic_table(names: pa.Array, q: _Queues, t: _Topics, v: _Verdicts) -> pa.Table:
    unseen = np.isnan(t.observed)
    differs = t.differs
    return pa.table(
        {
            "topic": names,
            "rate_source": t.rate_source,
            "requested_msgs_per_s": pa.array(t.requested, pa.float64()),
            "modelled_msgs_per_s": pa.array(t.modelled, pa.float64()),
            "observed_msgs_per_s": pa.array(t.observed, pa.float64(), mask=unseen),
            "observed_from": t.observed_from,
            "difference": pa.array(t.observed - t.modelled, pa.float64(), mask=unseen),
            "tolerance": pa.array(t.tolerance, pa.float64()),
            "agrees": pa.array(~differs, pa.bool_(), mask=unseen),
            "cause": _CODES.take(pa.array(np.where(differs, t.rate_cause, 0), pa.int64())),
            "queues": pa.array(q.count(np.ones(len(q.topic), dtype=bool)), pa.int64()),
            "queues_observed": pa.array(q.count(q.seen), pa.int64()),
            "queues_differing": pa.array(q.count(v.differs), pa.int64()),
            "queue_causes": _causes_per_topic(q, v, len(names)),
        }
    ).cast(schemas.arrow(schemas.VALIDATION_TOPICS))


def _causes_per_topic(q: _Queues, v: _Verdicts, n_topics: int) -> pa.Array:
    """Each topic's distinct queue causes, in CAUSES' order."""
    k = len(_CODES)
    pairs = np.unique(q.topic[v.cause > 0] * k + v.cause[v.cause > 0])
    per_topic = np.bincount(pairs // k, minlength=n_topics)
    offsets = np.concatenate([[0], np.cumsum(per_topic)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), _CODES.take(pa.array(pairs % k, pa.int64())))
