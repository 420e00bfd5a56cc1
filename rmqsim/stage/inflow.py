"""Where the messages go, every phase (docs/CONTRACT.md, section 2c): each producer population's
rate shared over its publish list, summed per queue, from that phase's brokers, routes and rates.

In the driver, with pyarrow and numpy, for every (scenario, phase) at once: the publish lists of
every (phase, topic) and client family are built in one call (rmqsim.producers.publish_list), and
each population takes its topic's list and its share rule (rmqsim.producers.shares). What comes
out: each queue's inflow (queue_traffic), the inflow of every queue of a topic's mqAll in mqAll
order plus what is written outside it (for the allocation stage's metrics), and the rows nobody
could send (unroutable).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.arrays import (
    combined,
    lookup_sorted,
    offsets,
    row_codes,
    runs,
    runs_of,
    sorted_unique,
    within_runs,
)
from rmqsim.producers import hashing, shares
from rmqsim.producers.latency import LATENCY_4X, LATENCY_5X, not_available_duration
from rmqsim.producers.publish_list import PublishLists, go_publish_lists, java_publish_lists
from rmqsim.producers.versions import classify_versions
from rmqsim.schemas import PHASE
from rmqsim.snapshot.text import normalised, row_json

ROUTE_KEY = [*PHASE, "topic"]
QUEUE_TRAFFIC = schemas.arrow(schemas.QUEUE_TRAFFIC)
# queue_traffic's names, dictionary-encoded: a gather of indices per queue instead of a copy of
# each name (a 10M-assignment fleet has 6M queues). Its readers see strings.
NAMES = ("scenario", "topic", "broker_name")
QUEUE_TRAFFIC_NAMES = pa.schema(
    [f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in NAMES else f for f in QUEUE_TRAFFIC]
)
# The C++ core (and the Python and Node.js clients built on it) mirrors the Java client's route
# handling; only the Go client builds its list its own way.
GO = "GO"


@dataclass(frozen=True)
class Traffic:
    # Per (scenario, phase, topic) of the routes: queue_inflow (list<double>, mqAll order) and
    # stranded_inflow (written outside mqAll).
    topic_inflow: pa.Table
    unroutable: pa.Table  # per (scenario, phase, topic): unroutable_msgs_per_s
    rejects: pa.Table  # schemas.REJECTS, source "traffic": populations nobody could send for
    # schemas.QUEUE_TRAFFIC, its names dictionary-encoded (QUEUE_TRAFFIC_NAMES), built when first
    # asked for: a row per queue, wanted by the stage only where a run has a second phase, so it
    # can be built while the stage runs.
    build_queue_traffic: Callable[[], pa.Table] = field(repr=False, compare=False)

    @functools.cached_property
    def queue_traffic(self) -> pa.Table:
        return self.build_queue_traffic()


def no_producers() -> pa.Table:
    """A phased producers table without rows: traffic() over it still says which queues each
    phase's producers would write (the Java list of every topic), at no rate."""
    fields = [pa.field("scenario", pa.string()), pa.field("phase", pa.int32())]
    return pa.schema([*fields, *schemas.arrow(schemas.PRODUCERS.schema)]).empty_table()


def default_producers(
    producers: pa.Table | None, offsets: pa.Table | None, topics: pa.Array
) -> pa.Table | None:
    """``producers`` with one default population (Java, ROUND_ROBIN) for each topic that has none
    and whose queues have an ``offsets.in_tps``: the sum over its queues, each queue's rate taken
    once whatever the group (the largest reported). None where neither gives a rate."""
    defaults = None
    if offsets is not None and offsets["in_tps"].null_count < offsets.num_rows:
        rated = offsets.filter(pc.is_valid(offsets["in_tps"]))
        per_queue = (
            rated.group_by(["topic", "broker_name", "queue_id"], use_threads=False)
            .aggregate([("in_tps", "max")])
            .sort_by([("topic", "ascending"), ("broker_name", "ascending"), ("queue_id", "ascending")])
        )
        per_topic = per_queue.group_by("topic", use_threads=False).aggregate([("in_tps_max", "sum")])
        if producers is not None:
            per_topic = per_topic.filter(
                pc.invert(pc.is_in(per_topic["topic"], value_set=producers["topic"]))
            )
        per_topic = per_topic.filter(pc.is_in(per_topic["topic"], value_set=topics))
        n = per_topic.num_rows
        spec = schemas.PRODUCERS
        defaults = pa.table(
            {
                c.name: per_topic["topic"]
                if c.name == "topic"
                else per_topic["in_tps_max_sum"]
                if c.name == "msgs_per_s"
                else pa.repeat(pa.scalar(c.default, schemas.arrow(spec.schema).field(c.name).type), n)
                for c in spec.columns
            },
            schema=schemas.arrow(spec.schema),
        )
    if producers is None:
        return defaults
    if defaults is None:
        return producers
    return pa.concat_tables([producers.cast(defaults.schema), defaults])


def traffic(
    *,
    brokers: pa.Table,
    topic_queues: pa.Table,
    producers: pa.Table,
    topic_routes: pa.Table | Callable[[], pa.Table],
    producer_keys: pa.Table | None = None,
    order_topics: pa.Table | None = None,
    offsets: pa.Table | None = None,
) -> Traffic:
    """Every phase's traffic. The tables are keyed by (scenario, phase) (scenarios.apply.phased)
    but for the keys, the order confs and the offsets, which describe the fleet; ``topic_routes``
    is routes.topic_routes' of ``topic_queues`` (the consumers' mqAll of every phase and topic),
    or a function that returns it: it is wanted only once every population's sends are worked
    out, so it can be built meanwhile.

    Rates are summed in an order of their own (populations and keys sorted), so the same fleet
    gives the same figures to the last bit, whatever the order of its rows."""
    producers = producers.sort_by([(c, "ascending") for c in producers.column_names])
    if producer_keys is not None:
        producer_keys = producer_keys.sort_by([(c, "ascending") for c in producer_keys.column_names])
    keys = _route_keys(topic_queues, producers)
    facts = _broker_facts(brokers)
    pops = _populations(producers, keys)
    lists = _publish_lists(topic_queues, facts, keys, order_topics, go_keys=_go_keys(pops, keys))
    list_runs = _list_runs(keys, lists)
    targets = _targets(keys, list_runs, facts)
    rate = _entry_rates(pops, lists, targets, producer_keys)
    topic_routes = topic_routes() if callable(topic_routes) else topic_routes
    mq_all = _mq_all(topic_routes, keys)
    space = _queue_space(list_runs, mq_all)
    sent = targets.master  # only an orderTopicConf can list a broker whose master is down
    # Each queue's sends summed in entry order: the same bits every run.
    inflow = np.bincount(space.entry_slot[sent], weights=rate[sent], minlength=space.slots)
    written = _written_queues(space, targets, lists, pops)
    read = np.zeros(space.slots, dtype=bool)
    read[space.mq_slot] = True

    def build() -> pa.Table:
        return _queue_traffic(keys, space, inflow, written, read, offsets)

    # Only a second phase has drained queues, and only they need the table before the stage.
    queue_traffic = build() if len(keys) and pc.max(keys.table["phase"]).as_py() > 0 else None
    return Traffic(
        topic_inflow=_with_drained(
            _against_mq_all(keys, space, inflow, read, mq_all, topic_routes), queue_traffic
        ),
        unroutable=_unroutable(pops, keys, lists, failed=(targets.key[~sent], rate[~sent])),
        rejects=_unroutable_rejects(pops, keys, lists),
        build_queue_traffic=build if queue_traffic is None else lambda: queue_traffic,
    )


# ------------------------------------------------------------------ keys


@dataclass(frozen=True)
class RouteKeys:
    """Every (scenario, phase, topic) of the run, numbered; ``code(table)`` finds a table's rows'."""

    table: pa.Table  # scenario, phase, topic: one row per key
    topic_queues: np.ndarray  # each topic_queues row's key number
    producers: np.ndarray  # each producers row's

    def code(self, table: pa.Table) -> np.ndarray:
        """Each row's key number (-1 where the run has no such key)."""
        return _lookup(self.table, table, ROUTE_KEY)

    def __len__(self) -> int:
        return self.table.num_rows


def _joined_key(table: pa.Table, columns: list[str]) -> pa.Array:
    parts = [pc.cast(combined(table[c]), pa.string()) for c in columns]
    return pc.binary_join_element_wise(*parts, "\x00")


def _lookup(keys: pa.Table, table: pa.Table, columns: list[str]) -> np.ndarray:
    """Each row of ``table``'s index in ``keys`` (whose rows are distinct) by ``columns``; -1 where
    none. A null matches a null."""
    n = keys.num_rows
    code = row_codes(
        [
            pa.concat_arrays([combined(keys[c]), combined(table[c]).cast(keys.schema.field(c).type)])
            for c in columns
        ]
    )
    order = np.argsort(code[:n], kind="stable")
    at, found = lookup_sorted(code[:n][order], code[n:])
    return np.where(found, order[at], -1).astype(np.int64)


def _route_keys(topic_queues: pa.Table, producers: pa.Table) -> RouteKeys:
    """The keys of the topic_queues and producers rows, numbered as they first appear: the
    routes' are the topic_queues'."""
    every = pa.concat_tables(
        [t.select(ROUTE_KEY).cast(topic_queues.select(ROUTE_KEY).schema) for t in (topic_queues, producers)]
    )
    # Numbered by hashing: each key's number is how many distinct keys came before it.
    number = pc.dictionary_encode(pa.array(row_codes([every[c] for c in ROUTE_KEY]))).indices
    number = number.to_numpy(zero_copy_only=False).astype(np.int64)
    first = np.flatnonzero(number > np.maximum.accumulate(np.concatenate([[-1], number[:-1]])))
    n = topic_queues.num_rows
    return RouteKeys(every.take(pa.array(first)), topic_queues=number[:n], producers=number[n:])


# ------------------------------------------------------------------ brokers and lists


@dataclass(frozen=True)
class BrokerFacts:
    """Per (scenario, phase, broker_name): what the NameServer routes, and its send latency."""

    table: pa.Table  # scenario, phase, broker_name, routed, has_master, master_empty, send_latency_ms


def _broker_facts(brokers: pa.Table) -> BrokerFacts:
    """A broker name is routed while an instance is alive; its BrokerData has a master while
    its master (id 0) is alive; Go skips a master whose address is empty. A master's latency
    counts, else the largest of its instances'."""
    alive = pc.fill_null(brokers["alive"], True)
    master = pc.and_(pc.equal(pc.fill_null(brokers["broker_id"], 0), 0), alive)
    empty = pc.and_(master, pc.fill_null(pc.equal(brokers["address"], ""), False))
    latency = pc.if_else(master, brokers["send_latency_ms"], pa.scalar(None, pa.float64()))
    grouped = pa.table(
        {
            **{c: brokers[c] for c in (*PHASE, "broker_name")},
            "alive": alive,
            "master": master,
            "empty": empty,
            "master_latency": latency,
            "latency": brokers["send_latency_ms"],
        }
    ).group_by([*PHASE, "broker_name"], use_threads=False)
    facts = grouped.aggregate(
        [("alive", "any"), ("master", "any"), ("empty", "any"), ("master_latency", "max"), ("latency", "max")]
    )
    return BrokerFacts(
        pa.table(
            {
                **{c: facts[c] for c in (*PHASE, "broker_name")},
                "routed": facts["alive_any"],
                "has_master": facts["master_any"],
                "master_empty": facts["empty_any"],
                "send_latency_ms": pc.coalesce(facts["master_latency_max"], facts["latency_max"]),
            }
        )
    )


@dataclass(frozen=True)
class Lists:
    """The publish lists of every route key, one per client family (Java and the C++ core; Go)."""

    java: PublishLists
    go: PublishLists


def _go_keys(pops: Populations, keys: RouteKeys) -> np.ndarray:
    """The route keys some Go population sends to: the only ones whose Go list is needed."""
    wanted = np.zeros(len(keys), dtype=bool)
    wanted[pops.key[pops.go]] = True
    return wanted


def _publish_lists(
    topic_queues: pa.Table,
    facts: BrokerFacts,
    keys: RouteKeys,
    order_topics: pa.Table | None,
    *,
    go_keys: np.ndarray,
) -> Lists:
    """Both families' lists of every route key; the Go list only where ``go_keys`` (elsewhere
    empty, and never read)."""
    at = _lookup(facts.table, topic_queues, [*PHASE, "broker_name"])
    found = at >= 0
    taken = facts.table.take(pa.array(np.maximum(at, 0)))

    def fact(name: str) -> np.ndarray:
        return found & pc.fill_null(taken[name], False).to_numpy(zero_copy_only=False)

    routed = fact("routed")  # a QueueData of a broker nobody answers for is gone from the route
    rows = topic_queues.filter(pa.array(routed))
    topic = keys.topic_queues[routed]
    conf = None
    if order_topics is not None:
        at_conf = pc.index_in(keys.table["topic"], value_set=order_topics["topic"])
        conf = order_topics["order_conf"].take(at_conf)
    common = dict(
        n_topics=len(keys),
        topic=topic,
        broker_name=rows["broker_name"],
        write_queue_nums=pc.fill_null(rows["write_queue_nums"], 0).to_numpy(zero_copy_only=False),
        perm=rows["perm"].to_numpy(zero_copy_only=False),
        has_master=fact("has_master")[routed],
        order_topic_conf=conf,
    )
    go_rows = go_keys[topic]
    go = {
        **common,
        "topic": topic[go_rows],
        "broker_name": rows["broker_name"].filter(pa.array(go_rows)),
        "write_queue_nums": common["write_queue_nums"][go_rows],
        "perm": common["perm"][go_rows],
        "has_master": common["has_master"][go_rows],
        "order_topic_conf": None if conf is None else pc.if_else(pa.array(go_keys), conf, None),
    }
    return Lists(
        java=java_publish_lists(**common),
        go=go_publish_lists(**go, master_empty=fact("master_empty")[routed][go_rows]),
    )


# ------------------------------------------------------------------ populations


@dataclass(frozen=True)
class Populations:
    rows: pa.Table  # the producers rows, phased
    key: np.ndarray  # route key (every producers row has one: _route_keys)
    go: np.ndarray  # builds and selects as the Go client
    hash: np.ndarray  # selector HASH
    avoids: np.ndarray  # Java with sendLatencyFaultEnable
    before_5_1_4: np.ndarray  # runs the 4.x latency-fault selection
    rate: np.ndarray


def _populations(producers: pa.Table, keys: RouteKeys) -> Populations:
    language = normalised(pc.coalesce(producers["language"], "JAVA"))
    java = pc.equal(language, "JAVA").to_numpy(zero_copy_only=False)
    before, _ = classify_versions(combined(producers["version"]))
    selector = normalised(pc.coalesce(producers["selector"], "ROUND_ROBIN"))
    enabled = pc.fill_null(producers["send_latency_fault_enable"], False).to_numpy(zero_copy_only=False)
    return Populations(
        rows=producers,
        key=keys.producers,
        go=pc.equal(language, GO).to_numpy(zero_copy_only=False),
        hash=pc.equal(selector, "HASH").to_numpy(zero_copy_only=False),
        avoids=java & enabled,
        before_5_1_4=np.asarray(before, dtype=bool),
        rate=pc.fill_null(producers["msgs_per_s"], 0.0).to_numpy(zero_copy_only=False).astype(np.float64),
    )


def _family(pops: Populations, lists: Lists) -> tuple[np.ndarray, np.ndarray]:
    """Per population, (its list's first entry, its length) in the concatenation of the Java and
    the Go entries (Go's after Java's)."""
    java_n, go_n = np.diff(lists.java.offsets), np.diff(lists.go.offsets)
    first = np.where(
        pops.go, len(lists.java.queue_id) + lists.go.offsets[:-1][pops.key], lists.java.offsets[:-1][pops.key]
    )
    return first, np.where(pops.go, go_n[pops.key], java_n[pops.key])


def _entry_rates(
    pops: Populations, lists: Lists, targets: Targets, producer_keys: pa.Table | None
) -> np.ndarray:
    """Per entry of the concatenated lists, the messages per second its populations send it.
    Outside HASH, a share depends on the list and the population's rule alone: each rule's
    shares are worked once per list some population of that rule sends to, and multiplied by
    the rate of that rule's populations on the list, summed first (in population order). Per
    entry the rules add in one order (round robin, 4.x, 5.x, HASH): the same bits every run."""
    n_java = len(lists.java.queue_id)
    n_keys = len(lists.java.offsets) - 1
    rate = np.zeros(len(targets.key))
    families = ((lists.java, ~pops.go, 0), (lists.go, pops.go, n_java))

    def spread_evenly(chosen: np.ndarray, only: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """1/N of the chosen populations' rate to each entry of their lists (where ``only``
        marks the list, per family): every list of a family at once, zeros where nobody sends."""
        for (family, in_family, base), wanted in zip(families, only or (None, None)):
            length = np.diff(family.offsets)
            sending = chosen & in_family
            per_key = np.bincount(pops.key[sending], weights=pops.rate[sending], minlength=n_keys)
            if wanted is not None:
                per_key = np.where(wanted, per_key, 0.0)
            rate[base : base + int(length.sum())] += np.repeat(
                per_key * (1.0 / np.maximum(length, 1)), length
            )

    def with_avoided(avoided: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per family, the lists with an entry ``avoided``."""
        entries = np.flatnonzero(avoided)
        marked = []
        for in_family in (entries < n_java, entries >= n_java):
            flags = np.zeros(n_keys, dtype=bool)
            flags[targets.key[entries[in_family]]] = True
            marked.append(flags)
        return marked[0], marked[1]

    spread_evenly(~pops.avoids & ~pops.hash)  # round robin
    # Java only avoids brokers: the Go client and the C++ core have no latency fault tolerance.
    # A list none of whose brokers is avoided is round robin too: worked whole, like it.
    avoids = pops.avoids & ~pops.hash
    rules = (
        (
            avoids & pops.before_5_1_4,
            targets.avoided_4x,
            lambda lists, e: shares.folded_latency_shares(lists, ~targets.avoided_4x[e]),
        ),
        (
            avoids & ~pops.before_5_1_4,
            targets.avoided_5x,
            lambda lists, e: shares.latency_avoiding_shares(lists, ~targets.avoided_5x[e]),
        ),
    )
    for chosen, avoided, rule in rules:
        if not chosen.any():
            continue
        dirty = with_avoided(avoided)
        spread_evenly(chosen, only=(~dirty[0], ~dirty[1]))
        java = chosen & ~pops.go & dirty[0][pops.key]
        go = chosen & pops.go & dirty[1][pops.key]
        if java.any() or go.any():
            entries, worked = _rule_shares(lists, pops.key[java], pops.key[go], rule)
            per_key = [np.bincount(pops.key[f], weights=pops.rate[f], minlength=n_keys) for f in (java, go)]
            key = targets.key[entries]
            rate[entries] += np.where(entries < n_java, per_key[0][key], per_key[1][key]) * worked
    if pops.hash.any():
        hashed = np.flatnonzero(pops.hash)
        first, length = _family(pops, lists)
        entry = runs(first[hashed], length[hashed])
        sent = np.repeat(pops.rate[hashed], length[hashed])
        sent *= _hash_shares(pops, hashed, length[hashed], producer_keys)
        rate += np.bincount(entry, weights=sent, minlength=len(rate))
    return rate


def _rule_shares(
    lists: Lists,
    java_keys: np.ndarray,
    go_keys: np.ndarray,
    rule: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """The entries of the concatenated lists of the Java lists of ``java_keys`` and the Go lists
    of ``go_keys`` (each list once), and the share ``rule(offsets, entries)`` gives each within
    its list."""
    parts = []
    for family, keys, base in ((lists.java, java_keys, 0), (lists.go, go_keys, len(lists.java.queue_id))):
        wanted = np.zeros(len(family.offsets) - 1, dtype=bool)
        wanted[keys] = True
        chosen = np.flatnonzero(wanted)
        parts.append((base + family.offsets[:-1][chosen], np.diff(family.offsets)[chosen]))
    length = np.concatenate([n for _, n in parts])
    entries = runs(np.concatenate([f for f, _ in parts]), length)
    return entries, rule(offsets(length), entries)


def _hash_shares(
    pops: Populations, hashed: np.ndarray, length: np.ndarray, producer_keys: pa.Table | None
) -> np.ndarray:
    """The shares of the HASH populations ``hashed`` (lists of ``length``), flat: each key's part
    to the entry its hash picks (Java's hashCode or Go's fnv32a, modulo the list's length); 1/N
    where no key is given (or, for Go, an empty key, which the Go client sends to a random queue)."""
    lists = offsets(length)
    if producer_keys is None or producer_keys.num_rows == 0:
        return shares.round_robin_shares(lists)
    hashing_pops = np.flatnonzero(length > 0)  # positions in ``hashed``
    rows = pops.rows.take(pa.array(hashed[hashing_pops]))
    # A key row names its topic and group, or its topic alone (every HASH producer of it).
    named = producer_keys.filter(pc.is_valid(producer_keys["producer_group"]))
    anyone = producer_keys.filter(pc.is_null(producer_keys["producer_group"]))
    probe = pa.table({"topic": rows["topic"], "producer_group": rows["producer_group"]})
    parts = []
    for table, columns in ((named, ["topic", "producer_group"]), (anyone, ["topic"])):
        if not table.num_rows:
            continue
        joined = pa.table({c: table[c] for c in columns}).append_column(
            "_key", pa.array(np.arange(table.num_rows))
        )
        matched = probe.append_column("_pop", pa.array(np.arange(probe.num_rows))).join(joined, columns)
        # The join is a left one: a population without keys here (another's keys, or all its
        # shares 0 and rejected) matches none, and sends 1/N per entry (shares.hash_shares).
        matched = matched.filter(pc.is_valid(matched["_key"]))
        parts.append((matched["_pop"].to_numpy(), table.take(matched["_key"])))
    if not parts:
        return shares.round_robin_shares(lists)
    pop = np.concatenate([p for p, _ in parts])
    keyed = pa.concat_tables([t.select(["key", "share"]) for _, t in parts])
    population = hashing_pops[pop]
    n = length[population]
    go = pops.go[hashed[population]]
    index = np.where(
        go,
        hashing.go_hash_index(hashing.fnv32a(keyed["key"]), n),
        hashing.java_hash_index(hashing.java_string_hash(keyed["key"]), n),
    )
    weight = pc.fill_null(keyed["share"], 1.0).to_numpy(zero_copy_only=False).astype(np.float64)
    # Go sends an empty key to a random queue: its part as one pseudo-key per entry of the list.
    spread = go & pc.equal(keyed["key"], "").to_numpy(zero_copy_only=False)
    if spread.any():
        k = np.flatnonzero(spread)
        copies = n[k]
        population = np.concatenate([population[~spread], np.repeat(population[k], copies)])
        index = np.concatenate([index[~spread], within_runs(copies)])
        weight = np.concatenate([weight[~spread], np.repeat(weight[k] / copies, copies)])
    return shares.hash_shares(lists, population, index, weight)


# ------------------------------------------------------------------ per queue


@dataclass(frozen=True)
class ListRuns:
    """The concatenated Java and Go lists (Go's entries after Java's) as runs of entries from one
    QueueData or conf item, whose queue ids count 0, 1, ... from the run's start."""

    entry_key: np.ndarray  # per entry, its route key
    start: np.ndarray  # per run, its first entry
    size: np.ndarray
    broker: pa.Array  # per run, its broker's name

    @property
    def key(self) -> np.ndarray:
        return self.entry_key[self.start]


def _list_runs(keys: RouteKeys, lists: Lists) -> ListRuns:
    entry_key = np.concatenate(
        [
            np.repeat(np.arange(len(keys)), np.diff(lists.java.offsets)),
            np.repeat(np.arange(len(keys)), np.diff(lists.go.offsets)),
        ]
    )
    source = np.concatenate([lists.java.source, len(lists.java.source_broker) + lists.go.source])
    queue_id = np.concatenate([lists.java.queue_id, lists.go.queue_id])
    start = np.flatnonzero(queue_id == 0)
    brokers = pa.concat_arrays([lists.java.source_broker, lists.go.source_broker])
    return ListRuns(
        entry_key=entry_key,
        start=start,
        size=np.diff(np.append(start, len(queue_id))),
        broker=brokers.take(pa.array(source[start])),
    )


@dataclass(frozen=True)
class Targets:
    """Per entry of the concatenated lists: its route key, whether its broker's master takes
    sends, and whether its send latency makes a fault-tolerant producer avoid it (by the 4.x
    table and by the 5.x one)."""

    key: np.ndarray
    master: np.ndarray
    avoided_4x: np.ndarray
    avoided_5x: np.ndarray


def _targets(keys: RouteKeys, list_runs: ListRuns, facts: BrokerFacts) -> Targets:
    """Broker facts by (scenario, phase) and broker, found per run, then spread over its entries."""
    run_phase = keys.table.select(list(PHASE)).take(pa.array(list_runs.key))
    at = _lookup(
        facts.table, run_phase.append_column("broker_name", list_runs.broker), [*PHASE, "broker_name"]
    )
    hit, row = at >= 0, np.maximum(at, 0)
    master = hit & pc.fill_null(facts.table["has_master"], False).to_numpy(zero_copy_only=False)[row]
    # Per broker and phase first (a few rows), then per run, then per entry.
    latency = pc.fill_null(facts.table["send_latency_ms"], 0.0).to_numpy(zero_copy_only=False)
    avoided_4x = hit & (not_available_duration(latency, table=LATENCY_4X) > 0)[row]
    avoided_5x = hit & (not_available_duration(latency, table=LATENCY_5X) > 0)[row]
    return Targets(
        key=list_runs.entry_key,
        master=np.repeat(master, list_runs.size),
        avoided_4x=np.repeat(avoided_4x, list_runs.size),
        avoided_5x=np.repeat(avoided_5x, list_runs.size),
    )


@dataclass(frozen=True)
class QueueSpace:
    """Every queue the run writes or reads, numbered densely: each (route key, broker) pair,
    brokers numbered by name, holds as many slots as its highest queue id + 1, the pairs in
    (key, broker) order. Slot order is thus (key, broker, queue id) order, and queues are summed,
    matched and flagged by indexing arrays, not by sorting or searching. Per entry of the
    concatenated Java and Go lists, its slot; per queue of mqAll (MqAll's order), its slot."""

    brokers: pa.Array  # the names, by number (sorted)
    pair: np.ndarray  # per pair: route key * len(brokers) + broker number, ascending
    base: np.ndarray  # per pair, its first slot; then the number of slots
    entry_slot: np.ndarray
    mq_slot: np.ndarray

    @property
    def slots(self) -> int:
        return int(self.base[-1])

    @functools.cached_property
    def slot_pair(self) -> np.ndarray:
        """Per slot, its pair."""
        return np.repeat(np.arange(len(self.pair)), np.diff(self.base))

    def key_of(self, slot: np.ndarray) -> np.ndarray:
        return self.pair[self.slot_pair[slot]] // len(self.brokers)

    def broker_of(self, slot: np.ndarray) -> np.ndarray:
        """Each slot's broker, by number (``brokers``' index)."""
        return (self.pair[self.slot_pair[slot]] % len(self.brokers)).astype(np.int32)

    def queue_of(self, slot: np.ndarray) -> np.ndarray:
        return (slot - self.base[self.slot_pair[slot]]).astype(np.int32)


def _queue_space(list_runs: ListRuns, mq_all: MqAll) -> QueueSpace:
    names = pa.concat_arrays([list_runs.broker, mq_all.broker]).unique()
    names = names.take(pc.sort_indices(names))
    n_b = len(names)

    def number(values: pa.Array) -> np.ndarray:
        return pc.index_in(values, value_set=names).to_numpy(zero_copy_only=False).astype(np.int64)

    # Pairs: every run's and every mqAll broker's, each as long as its longest run.
    segment_pair = np.concatenate(
        [list_runs.key * n_b + number(list_runs.broker), mq_all.key * n_b + number(mq_all.broker)]
    )
    segment_size = np.concatenate([list_runs.size, mq_all.size])
    order = np.argsort(segment_pair, kind="stable")
    pair, starts, count = runs_of(segment_pair[order])
    base = offsets(np.maximum.reduceat(segment_size[order], starts) if len(order) else count)
    segment_base = np.empty(len(order), dtype=np.int64)
    segment_base[order] = np.repeat(base[:-1], count)
    n_runs = len(list_runs.start)
    return QueueSpace(
        brokers=names,
        pair=pair,
        base=base,
        entry_slot=runs(segment_base[:n_runs], list_runs.size),
        mq_slot=runs(segment_base[n_runs:], mq_all.size),
    )


def _written_queues(space: QueueSpace, targets: Targets, lists: Lists, pops: Populations) -> np.ndarray:
    """Per slot, whether a topic's producers write to it (their lists'), or a Java producer
    would where the topic has none."""
    n_keys = len(lists.java.offsets) - 1
    produced_go = np.zeros(n_keys, dtype=bool)
    produced_go[pops.key[pops.go]] = True
    produced_java = np.zeros(n_keys, dtype=bool)
    produced_java[pops.key[~pops.go]] = True
    use_java = produced_java | ~produced_go
    n_java = len(lists.java.queue_id)
    family = np.r_[use_java[targets.key[:n_java]], produced_go[targets.key[n_java:]]]
    written = np.zeros(space.slots, dtype=bool)
    written[space.entry_slot[family]] = True
    return written


@dataclass(frozen=True)
class MqAll:
    """Every route key's mqAll, per broker of it in mqAll order: its route key, name and
    read_queue_nums (its queues are ids 0 .. size-1)."""

    key: np.ndarray
    broker: pa.Array
    size: np.ndarray
    offsets: np.ndarray  # per topic_routes row, its first queue; then the number of queues
    route_key: np.ndarray  # per topic_routes row


def _mq_all(topic_routes: pa.Table, keys: RouteKeys) -> MqAll:
    route_key = keys.code(topic_routes)
    if (route_key < 0).any():
        raise ValueError("topic_routes has a (scenario, phase, topic) that topic_queues has not")
    names = combined(topic_routes["broker_names"])
    nums = (
        pc.list_flatten(combined(topic_routes["read_queue_nums"]))
        .to_numpy(zero_copy_only=False)
        .astype(np.int64)
    )
    brokers_per_row = pc.list_value_length(names).to_numpy(zero_copy_only=False).astype(np.int64)
    broker_row = np.repeat(np.arange(len(brokers_per_row)), brokers_per_row)
    per_row = np.bincount(broker_row, weights=nums, minlength=len(brokers_per_row)).astype(np.int64)
    return MqAll(
        key=route_key[broker_row],
        broker=combined(pc.list_flatten(names)),
        size=nums,
        offsets=offsets(per_row),
        route_key=route_key,
    )


def _against_mq_all(
    keys: RouteKeys,
    space: QueueSpace,
    inflow: np.ndarray,
    read: np.ndarray,
    mq_all: MqAll,
    topic_routes: pa.Table,
) -> pa.Table:
    """Per topic_routes row, its mqAll queues' inflow (list, mqAll order) and the inflow written
    outside its mqAll."""
    outside = np.flatnonzero(~read)
    stranded = np.bincount(space.key_of(outside), weights=inflow[outside], minlength=len(keys))
    lists = pa.ListArray.from_arrays(
        pa.array(mq_all.offsets.astype(np.int32)), pa.array(inflow[space.mq_slot], pa.float64())
    )
    return pa.table(
        {
            **{c: topic_routes[c] for c in ROUTE_KEY},
            "queue_inflow": lists,
            "stranded_inflow": pa.array(stranded[mq_all.route_key], pa.float64()),
        }
    )


def _queue_traffic(
    keys: RouteKeys,
    space: QueueSpace,
    inflow: np.ndarray,
    written: np.ndarray,
    read: np.ndarray,
    offsets: pa.Table | None,
) -> pa.Table:
    """A row per queue written or read, per (scenario, phase, topic): QUEUE_TRAFFIC_NAMES."""
    slot = np.flatnonzero(written | read)
    key = space.key_of(slot)

    def per_queue(column: str) -> pa.DictionaryArray:
        names = pc.dictionary_encode(combined(keys.table[column]))
        return pa.DictionaryArray.from_arrays(names.indices.take(pa.array(key)), names.dictionary)

    queues = pa.table(
        {
            "topic": per_queue("topic"),
            "broker_name": pa.DictionaryArray.from_arrays(space.broker_of(slot), combined(space.brokers)),
            "queue_id": pa.array(space.queue_of(slot), pa.int32()),
        }
    )
    out = pa.table(
        {
            "scenario": per_queue("scenario"),
            "phase": combined(keys.table["phase"]).take(pa.array(key)),
            **{c: queues[c] for c in queues.column_names},
            "in_msgs_per_s": pa.array(inflow[slot], pa.float64()),
            "written": pa.array(written[slot]),
            "read": pa.array(read[slot]),
            "backlog": _backlogs(queues, offsets),
        }
    )
    return out.cast(QUEUE_TRAFFIC_NAMES)


def drained(queue_traffic: pa.Table) -> pa.Table:
    """The queues each (scenario, phase, topic) has had a phase to drain: read (in mqAll) while
    no producer wrote them, and not written since. drained(0) is empty and
    drained(k) = not written(k-1) and (read(k-1) or drained(k-1)): the safe shrink's wait between
    lowering write_queue_nums and lowering read_queue_nums. One row per queue; only those outside
    the phase's mqAll, the ones whose backlog could otherwise be stranded."""
    qt = queue_traffic
    if not qt.num_rows or pc.max(qt["phase"]).as_py() == 0:
        return pa.table({"scenario": pa.array([], pa.string())})  # one phase: nothing to drain yet
    # Each (scenario, topic, broker) numbered densely, and a row that names it.
    _, named_at, place = np.unique(row_codes([qt[c] for c in NAMES]), return_index=True, return_inverse=True)
    queue = place.astype(np.int64) * (1 << 32) + combined(qt["queue_id"]).to_numpy(zero_copy_only=False)
    phase = combined(qt["phase"]).to_numpy(zero_copy_only=False)
    written = combined(qt["written"]).to_numpy(zero_copy_only=False)
    read = combined(qt["read"]).to_numpy(zero_copy_only=False)
    held = np.empty(0, dtype=np.int64)
    rows = []
    for k in range(1, int(phase.max(initial=0)) + 1):
        before = phase == k - 1
        kept = held[~lookup_sorted(sorted_unique(queue[before & written]), held)[1]]
        held = sorted_unique(np.concatenate([kept, queue[before & read & ~written]]))
        now_read = queue[(phase == k) & read]
        rows.append((k, held[~lookup_sorted(sorted_unique(now_read), held)[1]]))
    if not rows or not sum(len(q) for _, q in rows):
        return pa.table({"scenario": pa.array([], pa.string())})
    ks = np.concatenate([np.full(len(q), k, dtype=np.int32) for k, q in rows])
    qs = np.concatenate([q for _, q in rows])
    names = qt.select(NAMES).take(pa.array(named_at[qs >> 32]))
    names = names.cast(pa.schema([QUEUE_TRAFFIC.field(c) for c in NAMES]))
    return pa.table(
        {
            "scenario": names["scenario"],
            "phase": pa.array(ks, pa.int32()),
            "topic": names["topic"],
            "broker_name": names["broker_name"],
            "queue_id": pa.array((qs & ((1 << 32) - 1)).astype(np.int32), pa.int32()),
        }
    )


def _with_drained(topic_inflow: pa.Table, queue_traffic: pa.Table | None) -> pa.Table:
    """topic_inflow with each (scenario, phase, topic)'s drained queues as a list (null: none);
    ``queue_traffic`` None: the run has one phase, and nothing has been drained."""
    target = schemas.GROUP_ROUTES_ARROW.field("drained_queues").type
    queues = drained(queue_traffic) if queue_traffic is not None else pa.table({})
    if "phase" not in queues.column_names:
        return topic_inflow.append_column("drained_queues", pa.nulls(topic_inflow.num_rows, target))
    queues = queues.sort_by([(c, "ascending") for c in (*ROUTE_KEY, "broker_name", "queue_id")])
    ref = pa.StructArray.from_arrays(
        [combined(queues["broker_name"]), combined(queues["queue_id"])], names=["broker_name", "queue_id"]
    )
    # Sorted by route key: each run of equal keys is one list.
    key = _joined_key(queues, ROUTE_KEY).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    lists = queues.take(pa.array(starts)).select(ROUTE_KEY)
    refs = pa.ListArray.from_arrays(pa.array(np.r_[starts, len(key)].astype(np.int32)), ref)
    at = _lookup(lists, topic_inflow, ROUTE_KEY)
    values = refs.take(pa.array(np.maximum(at, 0)))
    values = pc.if_else(pa.array(at >= 0), values, pa.scalar(None, values.type))
    return topic_inflow.append_column("drained_queues", values.cast(target))


def _backlogs(queues: pa.Table, offsets: pa.Table | None) -> pa.Array:
    """Per queue, the largest backlog any group's offsets give (null: none do)."""
    if offsets is None:
        return pa.nulls(queues.num_rows, pa.int64())
    behind = pc.max_element_wise(
        pc.subtract_checked(offsets["broker_offset"], offsets["consumer_offset"]), pa.scalar(0, pa.int64())
    )
    per_queue = (
        pa.table(
            {
                "topic": offsets["topic"],
                "broker_name": offsets["broker_name"],
                "queue_id": offsets["queue_id"],
                "b": behind,
            }
        )
        .group_by(["topic", "broker_name", "queue_id"], use_threads=False)
        .aggregate([("b", "max")])
    )
    at = _lookup(per_queue, queues, ["topic", "broker_name", "queue_id"])
    values = per_queue["b_max"].take(pa.array(np.maximum(at, 0)))
    return pc.if_else(pa.array(at >= 0), values, pa.scalar(None, pa.int64()))


# ------------------------------------------------------------------ unroutable


def _unroutable_mask(pops: Populations, lists: Lists) -> tuple[np.ndarray, pa.Array]:
    """Per population: whether its list is empty or failed, and the client's error (or None)."""
    _, length = _family(pops, lists)
    error = pa.array(
        np.where(
            pops.go,
            np.asarray(lists.go.error.to_pylist(), dtype=object)[pops.key],
            np.asarray(lists.java.error.to_pylist(), dtype=object)[pops.key],
        )
        if len(pops.key)
        else [],
        pa.string(),
    )
    return (length == 0) | error.is_valid().to_numpy(zero_copy_only=False), error


def _unroutable(
    pops: Populations, keys: RouteKeys, lists: Lists, *, failed: tuple[np.ndarray, np.ndarray]
) -> pa.Table:
    """Per (scenario, phase, topic): the messages per second of populations nobody can send for, and
    of the sends that fail (to an order topic's queue on a broker that is down): ``failed`` is
    (their route keys, their rates)."""
    lost, _ = _unroutable_mask(pops, lists)
    key, rate = failed
    route = keys.table.take(pa.array(key))
    rates = pa.table(
        {
            "scenario": pa.concat_arrays([combined(pops.rows["scenario"]), combined(route["scenario"])]),
            "phase": pa.concat_arrays([combined(pops.rows["phase"]), combined(route["phase"])]),
            "topic": pa.concat_arrays(
                [combined(pops.rows["topic"]).cast(pa.string()), combined(route["topic"]).cast(pa.string())]
            ),
            "rate": pa.array(np.concatenate([np.where(lost, pops.rate, 0.0), rate]), pa.float64()),
        }
    )
    per = rates.group_by([*PHASE, "topic"], use_threads=False).aggregate([("rate", "sum")])
    return per.rename_columns({"rate_sum": "unroutable_msgs_per_s"})


def _unroutable_rejects(pops: Populations, keys: RouteKeys, lists: Lists) -> pa.Table:
    lost, error = _unroutable_mask(pops, lists)
    rows = pops.rows.filter(pa.array(lost))
    why = error.filter(pa.array(lost))
    reason = pc.if_else(
        why.is_valid(),
        pc.binary_join_element_wise("unroutable: the producer throws: ", why, ""),
        "unroutable: no writable queue (no QueueData with the write perm on a broker whose master is up)",
    )
    shown = rows.select([*PHASE, "topic", "producer_group", "client_id", "msgs_per_s"])
    return pa.table(
        [pa.repeat(pa.scalar("traffic"), rows.num_rows), reason, row_json(shown)],
        schema=schemas.REJECTS_ARROW,
    )
