"""Who sends where, every phase (docs/CONTRACT.md, section 2c): the brokers' facts, the publish
lists of every route key for each client family (rmqsim.producers.publish_list), the producer
populations, each population's share of its list per rule (rmqsim.producers.shares) summed into
a rate per list entry, and the populations nobody can send for (unroutable).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.arrays import combined, offsets, runs, within_runs
from rmqsim.producers import hashing, shares
from rmqsim.producers.publish_list import PublishLists, go_publish_lists, java_publish_lists
from rmqsim.producers.versions import classify_versions
from rmqsim.schemas import PHASE
from rmqsim.snapshot.text import normalised, row_json
from rmqsim.stage.route_keys import RouteKeys, lookup

if TYPE_CHECKING:
    from rmqsim.stage.latency_folding import AvoidingRule

# The C++ core (and the Python and Node.js clients built on it) mirrors the Java client's route
# handling; only the Go client builds its list its own way.
GO = "GO"


@dataclass(frozen=True)
class BrokerFacts:
    """Per (scenario, phase, broker_name): what the NameServer routes, and its send latency."""

    table: pa.Table  # scenario, phase, broker_name, routed, has_master, master_empty, send_latency_ms


def broker_facts(brokers: pa.Table) -> BrokerFacts:
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


def go_keys(pops: Populations, keys: RouteKeys) -> np.ndarray:
    """The route keys some Go population sends to: the only ones whose Go list is needed."""
    wanted = np.zeros(len(keys), dtype=bool)
    wanted[pops.key[pops.go]] = True
    return wanted


def publish_lists(
    topic_queues: pa.Table,
    facts: BrokerFacts,
    keys: RouteKeys,
    order_topics: pa.Table | None,
    *,
    go_keys: np.ndarray,
) -> Lists:
    """Both families' lists of every route key; the Go list only where ``go_keys`` (elsewhere
    empty, and never read)."""
    at = lookup(facts.table, topic_queues, [*PHASE, "broker_name"])
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


def populations(producers: pa.Table, keys: RouteKeys) -> Populations:
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


def population_lists(pops: Populations, lists: Lists) -> tuple[np.ndarray, np.ndarray]:
    """Per population, (its list's first entry, its length) in the concatenation of the Java and
    the Go entries (Go's after Java's)."""
    java_n, go_n = np.diff(lists.java.offsets), np.diff(lists.go.offsets)
    first = np.where(
        pops.go, len(lists.java.queue_id) + lists.go.offsets[:-1][pops.key], lists.java.offsets[:-1][pops.key]
    )
    return first, np.where(pops.go, go_n[pops.key], java_n[pops.key])


def entry_rates(
    pops: Populations,
    lists: Lists,
    entry_key: np.ndarray,
    rules: Sequence[AvoidingRule],
    producer_keys: pa.Table | None,
) -> np.ndarray:
    """Per entry of the concatenated lists (``entry_key``: its route key), the messages per
    second its populations send it. Outside HASH, a share depends on the list and the
    population's rule alone: each rule's shares are worked once per list some population of
    that rule sends to, and multiplied by the rate of that rule's populations on the list, summed
    first (in population order). Per entry the rules add in one order (round robin, then
    ``rules``: latency_folding.avoiding_rules' 4.x and 5.x, then HASH): the same bits every run."""
    n_java = len(lists.java.queue_id)
    n_keys = len(lists.java.offsets) - 1
    rate = np.zeros(len(entry_key))
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
            flags[entry_key[entries[in_family]]] = True
            marked.append(flags)
        return marked[0], marked[1]

    spread_evenly(~pops.avoids & ~pops.hash)  # round robin
    # A list none of whose brokers is avoided is round robin too: worked whole, like it.
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
            key = entry_key[entries]
            rate[entries] += np.where(entries < n_java, per_key[0][key], per_key[1][key]) * worked
    if pops.hash.any():
        hashed = np.flatnonzero(pops.hash)
        first, length = population_lists(pops, lists)
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


def lists_as_runs(keys: RouteKeys, lists: Lists) -> ListRuns:
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


def _unroutable_mask(pops: Populations, lists: Lists) -> tuple[np.ndarray, pa.Array]:
    """Per population: whether its list is empty or failed, and the client's error (or None)."""
    _, length = population_lists(pops, lists)
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


def unroutable(
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


def unroutable_rejects(pops: Populations, keys: RouteKeys, lists: Lists) -> pa.Table:
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
