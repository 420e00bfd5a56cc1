"""Where the messages go, every phase (docs/CONTRACT.md, section 2c): each producer population's
rate shared over its publish list, summed per queue, from that phase's brokers, routes and rates.

In the driver, with pyarrow and numpy, for every (scenario, phase) at once: the publish lists of
every (phase, topic) and client family are built in one call, and each population takes its
topic's list and its share rule (stage.publish; latency fault tolerance: stage.latency_folding).
What comes out: each queue's inflow (stage.queue_traffic), the inflow of every queue of a
topic's mqAll in mqAll order plus what is written outside it (for the allocation stage's
metrics), and the rows nobody could send (unroutable).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.stage import latency_folding, publish
from rmqsim.stage import queue_traffic as queues
from rmqsim.stage.route_keys import route_keys


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
    keys = route_keys(topic_queues, producers)
    facts = publish.broker_facts(brokers)
    pops = publish.populations(producers, keys)
    go_keys = publish.go_keys(pops, keys)
    lists = publish.publish_lists(topic_queues, facts, keys, order_topics, go_keys=go_keys)
    runs = publish.lists_as_runs(keys, lists)
    targets = latency_folding.targets_of(keys, runs, facts)
    rules = latency_folding.avoiding_rules(pops, targets)
    rate = publish.entry_rates(pops, lists, targets.key, rules, producer_keys)
    topic_routes = topic_routes() if callable(topic_routes) else topic_routes
    mq_all = queues.mq_all_of(topic_routes, keys)
    space = queues.queue_space_of(runs, mq_all)
    sent = targets.master  # only an orderTopicConf can list a broker whose master is down
    # Each queue's sends summed in entry order: the same bits every run.
    inflow = np.bincount(space.entry_slot[sent], weights=rate[sent], minlength=space.slots)
    written = queues.written_queues(space, targets, lists, pops)
    read = np.zeros(space.slots, dtype=bool)
    read[space.mq_slot] = True

    def build() -> pa.Table:
        return queues.queue_rows(keys, space, inflow, written, read, offsets)

    # Only a second phase has drained queues, and only they need the table before the stage.
    queue_traffic = build() if len(keys) and pc.max(keys.table["phase"]).as_py() > 0 else None
    return Traffic(
        topic_inflow=queues.with_drained(
            queues.against_mq_all(keys, space, inflow, read, mq_all, topic_routes), queue_traffic
        ),
        unroutable=publish.unroutable(pops, keys, lists, failed=(targets.key[~sent], rate[~sent])),
        rejects=publish.unroutable_rejects(pops, keys, lists),
        build_queue_traffic=build if queue_traffic is None else lambda: queue_traffic,
    )
