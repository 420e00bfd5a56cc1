"""Every table's schema, defined once: the snapshot tables read (docs/CONTRACT.md, section 1) and the outputs.

Tests import these too, so a column renamed here is renamed everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema  # a type mapping only: no session, no job
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
)

STRING = StringType()
INT = IntegerType()
LONG = LongType()
DOUBLE = DoubleType()
BOOLEAN = BooleanType()
TIMESTAMP = TimestampNTZType()  # as mqadmin prints it: the local time of the machine that ran it


@dataclass(frozen=True)
class Column:
    name: str
    type: DataType
    required: bool = True
    default: object = None  # the value an absent optional column takes


@dataclass(frozen=True)
class TableSpec:
    name: str
    required: bool
    columns: tuple[Column, ...]

    @property
    def schema(self) -> StructType:
        return StructType([StructField(c.name, c.type, True) for c in self.columns])


BROKERS = TableSpec(
    "brokers",
    True,
    (
        Column("cluster", STRING, required=False),
        Column("broker_name", STRING),
        Column("broker_id", LONG, required=False, default=0),
        Column("address", STRING, required=False),
        Column("machine_room", STRING, required=False),
        Column("alive", BOOLEAN, required=False, default=True),
        # The send latency producers observe on this broker (docs/CONTRACT.md, section 2c).
        Column("send_latency_ms", DOUBLE, required=False),
    ),
)

TOPIC_QUEUES = TableSpec(
    "topic_queues",
    True,
    (
        Column("topic", STRING),
        Column("broker_name", STRING),
        Column("read_queue_nums", INT),
        Column("write_queue_nums", INT),
        Column("perm", INT),
    ),
)

CONSUMERS = TableSpec(
    "consumers",
    True,
    (
        Column("group", STRING),
        Column("topic", STRING),
        Column("client_id", STRING),
        Column("machine_room", STRING, required=False),
        Column("language", STRING, required=False),  # the client library; null: JAVA
        # What the client process consumes at most over all its topics in the group (section
        # 2d); null: the group's. Whether it runs the designated-machines code; null: it does.
        Column("capacity_msgs_per_s", DOUBLE, required=False),
        Column("designated_aware", BOOLEAN, required=False),
    ),
)

GROUPS = TableSpec(
    "groups",
    False,
    (
        Column("group", STRING),
        Column("strategy", STRING, required=False, default="AVG"),
        Column("virtual_node_cnt", INT, required=False, default=10),
        Column("consumer_idcs", ArrayType(STRING), required=False),
        Column("inner_strategy", STRING, required=False, default="AVG"),
        Column("message_model", STRING, required=False, default="CLUSTERING"),
        # Who computes the assignment (docs/CONTRACT.md, section 2b): client, broker or proxy.
        Column("rebalance", STRING, required=False),
        Column("request_mode", STRING, required=False),  # PULL or POP, with broker rebalancing
        Column("pop_share_queue_num", INT, required=False),
        Column("consume_orderly", BOOLEAN, required=False),
        # Section 2d: its clients' default capacity, and the machines (IPs) that may consume it.
        Column("capacity_msgs_per_s", DOUBLE, required=False),
        Column("designated_ips", ArrayType(STRING), required=False),
    ),
)

# RocketMQ PermName's bits (topic_queues.perm).
PERM_WRITE = 2
PERM_READ = 4

MESSAGE_MODELS = ("CLUSTERING", "BROADCASTING")  # groups.message_model, trimmed, any case
REBALANCES = ("CLIENT", "BROKER", "PROXY")  # groups.rebalance, trimmed, any case; null: CLIENT
REQUEST_MODES = ("PULL", "POP")  # groups.request_mode, trimmed, any case; null: PULL
# consumers.language, as mqadmin consumerConnection prints it: the libraries rmqsim simulates.
LANGUAGES = ("JAVA", "GO", "CPP", "PYTHON", "NODE_JS")

# Bounds on the numbers the message arithmetic takes (docs/CONTRACT.md, sections 1 and 3). Rates are
# summed in millionths as integers (stage.capacity): a row at most MAX_RATE is at most 1e15
# millionths, below 2^53, exact as a double and an int64; a scenario's factors multiply a rate by at
# most MAX_FACTOR, so a phase's producers row stays at most 1e18 millionths, below int64's 9.2e18
# (a topic without producers sends its queues' in_tps summed: a sum, which the limbs hold). A positive
# capacity below MIN_CAPACITY (the sums' resolution) would make a load over capacity infinite.
MAX_RATE = 1e9  # msgs/s: rates and capacities per row, set_traffic.msgs_per_s; producer_keys.share
MAX_FACTOR = 1e3  # set_traffic.factor, and the product of a run of them
MIN_CAPACITY = 1e-6  # a capacity is 0 or at least this

OFFSETS = TableSpec(
    "offsets",
    False,
    (
        Column("group", STRING),
        Column("topic", STRING),
        Column("broker_name", STRING),
        Column("queue_id", INT),
        Column("broker_offset", LONG),
        Column("consumer_offset", LONG),
        Column("in_tps", DOUBLE, required=False),
    ),
)

QUEUE_CONFIG = TableSpec(
    "queue_config",
    False,
    (
        Column("group", STRING),
        Column("client_id", STRING),
        Column("topic", STRING),
        Column("broker_name", STRING),
        Column("queue_id", INT),
    ),
)

# Who held each queue when the fleet was captured (rmqsim import-mqadmin fills it from
# consumerProgress): what `rmqsim validate` compares the simulation with.
OBSERVED_ASSIGNMENTS = TableSpec(
    "observed_assignments",
    False,
    (
        Column("group", STRING),
        Column("topic", STRING),
        Column("broker_name", STRING),
        Column("queue_id", INT),
        # The holder's client id; null where no client holds the queue, or where only its IP is
        # known and that IP is several clients (or none) of the group.
        Column("client_id", STRING),
        Column("client_ip", STRING, required=False),  # the holder as mqadmin prints it; null: no holder
    ),
)

# Where the messages go (docs/CONTRACT.md, section 2c): a producer population of a topic, the key
# mix of HASH producers, and the NameServer's orderTopicConf of ordered topics.
PRODUCERS = TableSpec(
    "producers",
    False,
    (
        Column("topic", STRING),
        Column("producer_group", STRING, required=False),
        Column("client_id", STRING, required=False),
        Column("msgs_per_s", DOUBLE),
        Column("language", STRING, required=False),  # null: JAVA
        Column("version", STRING, required=False),  # as producerConnection prints it; null: current
        Column("selector", STRING, required=False, default="ROUND_ROBIN"),
        Column("send_latency_fault_enable", BOOLEAN, required=False, default=False),
    ),
)
PRODUCER_KEYS = TableSpec(
    "producer_keys",
    False,
    (
        Column("topic", STRING),
        Column("producer_group", STRING, required=False),  # null: every HASH producer of the topic
        Column("key", STRING),
        Column("share", DOUBLE, required=False),  # null: equal
    ),
)
ORDER_TOPICS = TableSpec("order_topics", False, (Column("topic", STRING), Column("order_conf", STRING)))

# What the cluster measured, read by `rmqsim validate` only (docs/CONTRACT.md, section 2c):
# statsAll's rates per (topic, group), and topicStatus's offsets per queue.
OBSERVED_TRAFFIC = TableSpec(
    "observed_traffic",
    False,
    (
        Column("topic", STRING),
        Column("group", STRING, required=False),  # null: the topic has no consumer group (NO_CONSUMER)
        Column("in_tps", DOUBLE),  # messages per second into the topic
        Column("out_tps", DOUBLE, required=False),  # what the group consumed; null without a group
        Column("accumulation", LONG, required=False),  # the group's backlog; null before 4.0
    ),
)
QUEUE_STATUS = TableSpec(
    "queue_status",
    False,
    (
        Column("topic", STRING),
        Column("broker_name", STRING),
        Column("queue_id", INT),
        Column("min_offset", LONG),
        Column("max_offset", LONG),
        Column("last_updated", TIMESTAMP, required=False),  # null: never written
    ),
)

SELECTORS = ("ROUND_ROBIN", "HASH")  # producers.selector, trimmed, any case; null: ROUND_ROBIN

SNAPSHOT_TABLES = (
    BROKERS,
    TOPIC_QUEUES,
    CONSUMERS,
    GROUPS,
    OFFSETS,
    QUEUE_CONFIG,
    OBSERVED_ASSIGNMENTS,
    PRODUCERS,
    PRODUCER_KEYS,
    ORDER_TOPICS,
    OBSERVED_TRAFFIC,
    QUEUE_STATUS,
)

# The partition columns of the partitioned output tables, in directory order (docs/CONTRACT.md, 4).
PARTITIONED_BY = ("scenario", "strategy")
# The key of every table with a row per phase: which scenario, which phase of it.
PHASE = ("scenario", "phase")

# Keys every output row carries: which scenario, which phase of it, which strategy.
RUN_KEYS = (
    StructField("scenario", STRING, False),
    StructField("phase", INT, False),
    StructField("strategy", STRING, False),
)

# One row per (scenario, phase, topic, group): the allocation stage's input. The strategies to
# run are a list, so a route is shipped to Python once however many strategies are compared.
QUEUE_REF = StructType([StructField("broker_name", STRING, True), StructField("queue_id", INT, True)])
QUEUE_BACKLOG = StructType(
    [
        StructField("broker_name", STRING, True),
        StructField("queue_id", INT, True),
        StructField("backlog", LONG, True),
    ]
)
BALANCING = StructType(
    [
        StructField("rebalance", STRING, False),  # CLIENT, BROKER or PROXY
        StructField("pop", BOOLEAN, False),  # request_mode POP
        StructField("pop_share_queue_num", INT, False),
        StructField("consume_orderly", BOOLEAN, False),
    ]
)
# When and how the step that made a phase happened (docs/CONTRACT.md, section 2e), with its
# scenario's timing: what the stage times each hand-over by (rmqsim.handover). Every field is
# given; nullable, as Spark hands a null struct's fields over as nulls.
HANDOVER_EVENT = StructType(
    [
        StructField("event_s", DOUBLE, True),  # T_k: seconds from the scenario's start
        StructField("notice", INT, True),  # handover.notice's bits: how the clients learn of it
        StructField("departed", INT, True),  # how clients gone at this phase went: LEFT or CRASHED
        StructField("seed", LONG, True),
        StructField("rebalance_s", DOUBLE, True),
        StructField("route_poll_s", DOUBLE, True),
        StructField("commit_s", DOUBLE, True),
        StructField("first_pull_delay_s", DOUBLE, True),
        StructField("host_loss_s", DOUBLE, True),
        StructField("lock_expiry_s", DOUBLE, True),
        StructField("label", STRING, True),  # what made the phase (parse.Scenario.label)
    ]
)
GROUP_ROUTES = StructType(
    [
        StructField("scenario", STRING, False),
        StructField("phase", INT, False),
        StructField("strategies", ArrayType(STRING, True), False),
        StructField(
            "skipped",
            ArrayType(
                StructType([StructField("strategy", STRING, True), StructField("reason", STRING, True)]), True
            ),
            False,
        ),
        StructField("topic", STRING, False),
        StructField("group", STRING, False),
        StructField("broker_names", ArrayType(STRING, True), False),  # Java order
        StructField("read_queue_nums", ArrayType(INT, True), False),
        StructField("broker_rooms", ArrayType(STRING, True), False),
        StructField("client_ids", ArrayType(STRING, True), False),  # Java order, duplicates kept
        StructField("client_rooms", ArrayType(STRING, True), False),
        # Null for the whole row where the snapshot has no queue_config table.
        StructField("client_configs", ArrayType(ArrayType(QUEUE_REF, True), True), True),
        StructField("virtual_node_cnt", INT, False),
        StructField("consumer_idcs", ArrayType(STRING, True), True),
        StructField("inner_strategy", STRING, False),
        StructField("message_model", STRING, False),
        StructField("last_phase", INT, False),  # the scenario's last phase: movement compares 0 with it
        StructField("compare", BOOLEAN, False),  # strategies named on the command line, not configured
        # Messages not yet consumed per queue of the (topic, group): null without an offsets table.
        StructField("backlogs", ArrayType(QUEUE_BACKLOG, True), True),
        # A stale_view phase: these clients compute from phase view_phase's route (null otherwise).
        StructField("stale_clients", ArrayType(STRING, True), True),
        StructField("view_phase", INT, True),
        # Each client's library, trimmed and in upper case (null: JAVA; null for the whole row
        # where the consumers table has no language column).
        StructField("client_languages", ArrayType(STRING, True), True),
        # Who balances the group and how (null for the whole column where the groups table has no
        # rebalance, request_mode, pop_share_queue_num or consume_orderly column): normalised.
        StructField("balancing", BALANCING, True),
        # Per broker of the route, whether its master (id 0) is alive: the proxy's answer needs it.
        StructField("broker_masters", ArrayType(BOOLEAN, True), True),
        # Messages per second into each queue of mqAll, in mqAll order, and into the topic's
        # written queues outside mqAll (docs/CONTRACT.md, section 2c): null without traffic.
        StructField("queue_inflow", ArrayType(DOUBLE, True), True),
        StructField("stranded_inflow", DOUBLE, True),
        # Queues outside mqAll the group had a phase to drain (read, no longer written): their
        # backlog is not stranded. Null without traffic.
        StructField("drained_queues", ArrayType(QUEUE_REF, True), True),
        # Section 2d: each client's capacity (null list: none known in the run), the group's
        # designated IPs (null: no designation) and whether each client runs the designated
        # code (null list: all do), and the seconds a backlog should drain within.
        StructField("client_capacities", ArrayType(DOUBLE, True), True),
        StructField("designated_ips", ArrayType(STRING, True), True),
        StructField("client_designated_aware", ArrayType(BOOLEAN, True), True),
        StructField("drain_target_s", DOUBLE, True),
        # Whether the stage writes this row's outputs (section 4: a later phase writes what its
        # steps touched); null: it does.
        StructField("written", BOOLEAN, True),
        # The event that made this phase (null at phase 0): section 2e's hand-overs.
        StructField("handover_event", HANDOVER_EVENT, True),
    ]
)

OWNED_QUEUE = StructType([StructField("broker_name", STRING, False), StructField("queue_id", INT, False)])

ASSIGNMENTS = StructType(
    [
        *RUN_KEYS,
        StructField("topic", STRING, False),
        StructField("group", STRING, False),
        StructField("client_id", STRING, False),
        StructField("broker_name", STRING, False),
        StructField("queue_id", INT, False),
        StructField("computed_by", STRING, False),  # who computed the client's queues (PATHS)
    ]
)

# assignments.computed_by: the client itself, with its library's code (docs/CONTRACT.md, 2b).
PATHS = (
    *(f"client {language}" for language in LANGUAGES),
    "broker PULL",  # the broker's answer (QueryAssignmentProcessor)
    "broker POP",
    "broker kept",  # the broker answered null: the client keeps what it had
    "proxy",  # the 5.x proxy's answer (RouteActivity.queryAssignment)
    "proxy kept",  # the proxy's answer failed: the client keeps what it had
)

TOPIC_GROUP = (StructField("topic", STRING, False), StructField("group", STRING, False))

# What group_metrics says of one (topic, group); consumers are distinct client ids.
GROUP_METRIC_FIELDS = (
    StructField("queue_count", LONG, False),
    StructField("consumer_count", LONG, False),
    StructField("active_consumers", LONG, False),
    StructField("idle_consumers", LONG, False),
    StructField("min_queues", LONG, True),
    StructField("max_queues", LONG, True),
    StructField("mean_queues", DOUBLE, True),
    StructField("stddev_queues", DOUBLE, True),  # population
    StructField("max_over_mean", DOUBLE, True),  # null where the group has no queue
    StructField("unassigned_queues", LONG, False),
    StructField("multi_owned_queues", LONG, False),
    StructField("duplicate_client_ids", LONG, False),
    # What the real client throws, if it does, or why rmqsim does not simulate the group
    # (strategies.batch.RMQSIM_REFUSES starts such a message).
    StructField("error", STRING, True),
    # Backlog (messages not yet consumed, from offsets): null where the group has no offsets rows.
    StructField("backlog", LONG, True),  # over the group's queues in this topic
    StructField("min_backlog", LONG, True),  # per consumer, over the queues it owns
    StructField("max_backlog", LONG, True),
    StructField("mean_backlog", DOUBLE, True),
    StructField("stddev_backlog", DOUBLE, True),
    StructField("backlog_max_over_mean", DOUBLE, True),
    # Split-brain risk (a stale_view phase): clients computing from the old view, and the backlog
    # on the queues read twice and on those nobody reads (null without offsets).
    StructField("stale_clients", LONG, False),
    StructField("multi_owned_backlog", LONG, True),
    StructField("unassigned_backlog", LONG, True),
    # Shared ownership (docs/CONTRACT.md, section 2b): queues several clients read by design (the
    # broker's POP), counted apart from multi_owned_queues; and each client's share of the
    # messages, in queues (a queue read by k clients gives each 1/k of it).
    StructField("shared_queues", LONG, False),
    StructField("min_message_share", DOUBLE, True),
    StructField("max_message_share", DOUBLE, True),
    StructField("mean_message_share", DOUBLE, True),
    StructField("message_share_max_over_mean", DOUBLE, True),
    # What the group would get another way (phase 0, null where it does not apply): in POP with
    # pop_share_queue_num 1, where it has more clients than queues; every client on Java's code,
    # where its clients run different libraries.
    StructField("pop_idle_consumers", LONG, True),
    StructField("pop_max_message_share", DOUBLE, True),
    StructField("one_library_multi_owned", LONG, True),
    StructField("one_library_unassigned", LONG, True),
    # Where the messages go (docs/CONTRACT.md, section 2c), in messages per second; null without
    # traffic: written into the topic, into the queues the group owns, owns nobody, owns twice
    # against the design, and into written queues outside its mqAll; each client's messages.
    StructField("in_msgs_per_s", DOUBLE, True),
    StructField("owned_msgs_per_s", DOUBLE, True),
    StructField("unowned_msgs_per_s", DOUBLE, True),
    StructField("duplicated_msgs_per_s", DOUBLE, True),
    StructField("stranded_msgs_per_s", DOUBLE, True),
    StructField("min_msgs_per_s", DOUBLE, True),
    StructField("max_msgs_per_s", DOUBLE, True),
    StructField("mean_msgs_per_s", DOUBLE, True),
    StructField("msgs_max_over_mean", DOUBLE, True),
    # Backlog on queues of the topic outside its mqAll (offsets say they hold messages nobody
    # reads any more); null without offsets.
    StructField("stranded_backlog", LONG, True),
    # Whether its clients keep up (section 2d), null without capacities or traffic: clients over
    # capacity, the lag growth this topic causes, the highest load over capacity, the longest
    # time a client takes to drain its backlog (null: one never does, or unknown), and the
    # clients the whole group needs to keep up.
    StructField("clients_over_capacity", LONG, True),
    StructField("lag_growth_msgs_per_s", DOUBLE, True),
    StructField("max_load_over_capacity", DOUBLE, True),
    StructField("drain_seconds", DOUBLE, True),
    StructField("clients_needed", LONG, True),
    # Designated machines (section 2d): clients still computing over the full cidAll.
    StructField("unaware_clients", LONG, True),
)

GROUP_METRICS = StructType([*RUN_KEYS, *TOPIC_GROUP, *GROUP_METRIC_FIELDS])

# What the allocation stage hands a sink for assignments: one row per (scenario, phase, strategy,
# topic, group, client) that holds a queue, with its queues as a list in the order the strategy
# returned them. A sink explodes the lists into ASSIGNMENTS' rows (one per queue) itself: shipped
# out of Python one row per queue, they cost more than the allocation.
CLIENT_ASSIGNMENTS = StructType(
    [
        *RUN_KEYS,
        *TOPIC_GROUP,
        StructField("client_id", STRING, False),
        StructField("computed_by", STRING, False),
        StructField("owned", ArrayType(OWNED_QUEUE, False), False),
    ]
)

CONSUMER_LOAD = StructType(
    [
        *RUN_KEYS,
        StructField("group", STRING, False),
        StructField("client_id", STRING, False),
        StructField("topics", LONG, False),
        StructField("queues", LONG, False),
        StructField("backlog", LONG, True),  # null without offsets
        # Its share of the messages (in queues) and of the backlog: a queue k clients read gives
        # each 1/k (docs/CONTRACT.md, section 2b).
        StructField("message_share", DOUBLE, False),
        StructField("backlog_share", DOUBLE, True),
        # Messages per second it reads over those topics; null without traffic (section 2c).
        StructField("msgs_per_s", DOUBLE, True),
        # Whether it keeps up (section 2d): its capacity (null: unknown), messages over capacity,
        # above it, how fast its lag grows, and how long its backlog takes to drain (0: none; null:
        # never, or unknown).
        StructField("capacity_msgs_per_s", DOUBLE, True),
        StructField("load_over_capacity", DOUBLE, True),
        StructField("over_capacity", BOOLEAN, True),
        StructField("lag_growth_msgs_per_s", DOUBLE, True),
        StructField("drain_seconds", DOUBLE, True),
    ]
)

# group_metrics' rows with a stale client: the split-brain risk (rollups.split_brain).
SPLIT_BRAIN = StructType(
    [
        *RUN_KEYS,
        *TOPIC_GROUP,
        *(
            next(f for f in GROUP_METRIC_FIELDS if f.name == name)
            for name in (
                "stale_clients",
                "unaware_clients",
                "consumer_count",
                "queue_count",
                "multi_owned_queues",
                "unassigned_queues",
                "multi_owned_backlog",
                "unassigned_backlog",
            )
        ),
    ]
)

# One row per (scenario, phase, topic, group) a later phase's steps touched: its rows in the stage's
# tables and queue_traffic are written for that phase; every other row of the phase is phase 0's.
TOUCHED = StructType(
    [
        StructField("scenario", STRING, False),
        StructField("phase", INT, False),
        StructField("topic", STRING, False),
        StructField("group", STRING, True),  # null: a topic whose traffic changed, read by no group
    ]
)

# One row per (sweep, element, strategy): what that single failure does to the whole fleet, ranked
# (docs/CONTRACT.md, section 2f).
SWEEP = StructType(
    [
        StructField("sweep", STRING, False),
        StructField("element", STRING, False),
        StructField("strategy", STRING, False),
        StructField("groups_changed", LONG, True),
        StructField("queues_moved", LONG, True),
        StructField("queues_unread", LONG, True),
        StructField("stranded_msgs_per_s", DOUBLE, True),
        StructField("unroutable_msgs_per_s", DOUBLE, True),
        StructField("clients_over_capacity", LONG, True),
        StructField("lag_growth_msgs_per_s", DOUBLE, True),
        StructField("msgs_delayed", DOUBLE, True),
        StructField("msgs_read_twice", DOUBLE, True),
        StructField("rank", INT, False),
        StructField("detailed", BOOLEAN, False),  # its phases are in the other tables
    ]
)

# One row per (scenario, phase, strategy): the fleet at a glance (rollups.summary).
SUMMARY = StructType(
    [
        *RUN_KEYS,
        StructField("groups", LONG, True),
        StructField("consumers", LONG, True),  # null: a run in which every client left
        StructField("queues", LONG, True),
        StructField("fleet_max_queues", LONG, True),
        StructField("fleet_mean_queues", DOUBLE, True),
        StructField("fleet_max_over_mean", DOUBLE, True),
        StructField("worst_group_max_over_mean", DOUBLE, True),
        StructField("idle_consumers", LONG, True),
        StructField("idle_in_a_topic", LONG, True),
        StructField("unassigned_queues", LONG, True),
        StructField("multi_owned_queues", LONG, True),
        StructField("shared_queues", LONG, True),
        StructField("groups_with_errors", LONG, True),
        # Messages per second (section 2c), null without traffic: written into the fleet's
        # topics, and of those written where nobody in a group reads them (stranded), into
        # queues nobody owns, read twice against the design, sent nowhere (unroutable); the
        # busiest client's; clients that hold queues but get no message.
        StructField("in_msgs_per_s", DOUBLE, True),
        StructField("stranded_msgs_per_s", DOUBLE, True),
        StructField("unowned_msgs_per_s", DOUBLE, True),
        StructField("duplicated_msgs_per_s", DOUBLE, True),
        StructField("unroutable_msgs_per_s", DOUBLE, True),
        StructField("fleet_max_msgs_per_s", DOUBLE, True),
        StructField("clients_without_messages", LONG, True),
        StructField("stranded_backlog", LONG, True),  # null without offsets
        # Section 2d, null without capacities: clients over capacity, the lag growth summed, the
        # groups with a client over capacity; and skew by messages (busiest client over the mean).
        StructField("clients_over_capacity", LONG, True),
        StructField("lag_growth_msgs_per_s", DOUBLE, True),
        StructField("groups_behind", LONG, True),
        StructField("fleet_msgs_max_over_mean", DOUBLE, True),
    ]
)

# One row per (scenario, strategy, topic, group, from_phase, to_phase): see rmqsim.stage.movement.
MOVEMENT = StructType(
    [
        StructField("scenario", STRING, False),
        StructField("strategy", STRING, False),  # the to_phase's
        *TOPIC_GROUP,
        StructField("from_phase", INT, False),
        StructField("to_phase", INT, False),
        StructField("queues_before", LONG, False),
        StructField("queues_after", LONG, False),
        StructField("queues_in_both", LONG, False),
        StructField("moved", LONG, False),  # queues in both phases whose owners differ
        StructField("moved_fraction", DOUBLE, True),  # moved / queues_in_both
        StructField("min_moves", LONG, True),  # null where no one-owner assignment compares: movement.py
        StructField("consumers_before", LONG, False),
        StructField("consumers_after", LONG, False),
        StructField("consumers_changed", LONG, False),  # clients whose owned queues differ
        StructField("moved_backlog", LONG, True),  # backlog on the moved queues; null without offsets
    ]
)

# One row per (scenario, to_phase, strategy, topic, group) whose queues changed readers (section 2e).
HANDOVER = StructType(
    [
        StructField("scenario", STRING, False),
        StructField("strategy", STRING, False),
        *TOPIC_GROUP,
        StructField("from_phase", INT, False),
        StructField("to_phase", INT, False),
        StructField(
            "phase_label", STRING, False
        ),  # what made to_phase: its step, or its restart's leave or join
        StructField("event_s", DOUBLE, False),  # T_k: when that happened, from the scenario's start
        StructField("queues_handed_over", LONG, False),  # in mqAll at both phases, readers changed
        StructField("queues_paused", LONG, False),  # of those, unread for some time
        StructField("pause_s", DOUBLE, False),  # summed over the queues
        StructField("max_pause_s", DOUBLE, False),
        StructField("overlap_s", DOUBLE, False),  # summed over the queues
        StructField("msgs_delayed", DOUBLE, False),  # 0 without traffic
        StructField("msgs_read_twice", DOUBLE, False),
        StructField("settled_after_s", DOUBLE, False),  # from the event to the last start or stop
        # each time one of those queues went unread: from, until (seconds from the scenario's start)
        StructField("unread_from_s", ArrayType(DOUBLE, False), False),
        StructField("unread_until_s", ArrayType(DOUBLE, False), False),
    ]
)

# One row per (scenario, strategy): phase 0 against the scenario's last phase.
COMPARISON = StructType(
    [
        StructField("scenario", STRING, False),
        StructField("strategy", STRING, False),
        StructField("last_phase", INT, True),
        *[
            StructField(f"{name}_{when}", kind, True)
            for name, kind in (
                ("fleet_max_queues", LONG),
                ("fleet_mean_queues", DOUBLE),
                ("fleet_max_over_mean", DOUBLE),
                ("idle_consumers", LONG),
                ("unassigned_queues", LONG),
                ("multi_owned_queues", LONG),  # read twice, not by design
                ("shared_queues", LONG),  # read by several clients by design (POP)
            )
            for when in ("before", "after")
        ],
        StructField("queues_in_both", LONG, True),
        StructField("queues_moved", LONG, True),  # phase 0 against the last phase
        StructField("min_moves", LONG, True),
        StructField("moved_over_steps", LONG, True),  # summed over consecutive phases
        StructField("moved_backlog", LONG, True),  # on the queues moved from phase 0 to the last
        # Messages (section 2c), null without traffic; stranded_backlog null without offsets.
        *[
            StructField(f"{name}_{when}", kind, True)
            for name, kind in (
                ("fleet_max_msgs_per_s", DOUBLE),
                ("stranded_msgs_per_s", DOUBLE),
                ("stranded_backlog", LONG),
                ("clients_without_messages", LONG),
            )
            for when in ("before", "after")
        ],
        StructField("most_stranded_msgs_per_s", DOUBLE, True),  # in any phase of the scenario
        StructField("most_clients_without_messages", LONG, True),  # likewise: an idle tail
        StructField("advice", STRING, True),  # the safe order where a step strands messages
        # Whether the clients keep up (section 2d), null without capacities.
        *[
            StructField(f"{name}_{when}", kind, True)
            for name, kind in (
                ("clients_over_capacity", LONG),
                ("lag_growth_msgs_per_s", DOUBLE),
                ("groups_behind", LONG),
            )
            for when in ("before", "after")
        ],
        StructField("most_clients_over_capacity", LONG, True),  # in any phase after the snapshot
        # Section 2e: handover/ summed over every step (0 where no queue changed readers).
        StructField("queues_handed_over", LONG, True),
        StructField("queues_paused", LONG, True),
        StructField("pause_s", DOUBLE, True),
        StructField("max_pause_s", DOUBLE, True),
        StructField("overlap_s", DOUBLE, True),
        StructField("msgs_delayed", DOUBLE, True),
        StructField("msgs_read_twice", DOUBLE, True),
    ]
)

# One row per (scenario, strategy) with stale clients: rmqsim.rollups.exposure.
EXPOSURE = StructType(
    [
        StructField("scenario", STRING, False),
        StructField("strategy", STRING, False),
        StructField("topic_groups", LONG, False),  # (topic, group) runs with a stale client
        StructField("exposed", LONG, True),  # of them, with a queue read twice or by nobody
        StructField("multi_owned_queues", LONG, True),
        StructField("unassigned_queues", LONG, True),
        StructField("multi_owned_backlog", LONG, True),  # null without offsets
        StructField("unassigned_backlog", LONG, True),
        StructField("queues", LONG, True),
        StructField("at_risk_fraction", DOUBLE, True),  # (multi-owned + unassigned) / queues
    ]
)

# One row per group of a run with scenarios: rmqsim.rollups.recommendation.
RECOMMENDATION = StructType(
    [
        StructField("group", STRING, False),
        StructField("best_balance", STRING, True),  # null: no strategy ran everywhere without throwing
        StructField("best_max_over_mean", DOUBLE, True),  # rounded to 3 places
        StructField("fewest_moves", STRING, True),
        StructField("fewest_moved", LONG, True),
        StructField("consumers", LONG, True),  # in the snapshot
        StructField("useful_consumers", LONG, True),  # at most its biggest topic's queue count
        StructField("pop_share_queue_num", INT, True),
        StructField("pop_idle_consumers", LONG, True),
        StructField("pop_max_message_share", DOUBLE, True),
        StructField("one_library_multi_owned", LONG, True),  # the best_balance strategy's
        StructField("one_library_unassigned", LONG, True),
        # Where a scenario strands its messages (section 2c): the most in any phase, and the advice.
        StructField("most_stranded_msgs_per_s", DOUBLE, True),
        StructField("most_stranded_backlog", LONG, True),
        StructField("advice", STRING, True),
        # Section 2d, null without capacities: the clients the group needs in the snapshot, and
        # the strategy that keeps every client under capacity in every phase with the fewest moves.
        StructField("clients_needed", LONG, True),
        StructField("keeps_up", STRING, True),
        StructField("keeps_up_moved", LONG, True),
        # Section 2e, null where no step hands the group's queues over: the strategy whose
        # hand-overs delay or read twice the fewest messages over every step, and those messages.
        StructField("cheapest_deploy", STRING, True),
        StructField("cheapest_deploy_msgs", LONG, True),
    ]
)

# One row per (scenario, phase, strategy, group) with a client over capacity or a backlog that
# never drains (section 2d): the groups that fall behind.
FALLING_BEHIND = StructType(
    [
        *RUN_KEYS,
        StructField("group", STRING, False),
        StructField("consumers", LONG, False),
        StructField("clients_over_capacity", LONG, False),
        StructField("never_drain", LONG, False),  # clients with a backlog and no spare capacity
        StructField("msgs_per_s", DOUBLE, True),
        StructField("capacity_msgs_per_s", DOUBLE, True),  # its clients' known capacities, summed
        StructField("lag_growth_msgs_per_s", DOUBLE, True),
        StructField("max_load_over_capacity", DOUBLE, True),
        StructField("clients_needed", LONG, True),
    ]
)

# One row per (scenario, phase, topic, broker_name, queue_id) written or read: where the messages
# go (docs/CONTRACT.md, section 2c and 4).
QUEUE_TRAFFIC = StructType(
    [
        StructField("scenario", STRING, False),
        StructField("phase", INT, False),
        StructField("topic", STRING, False),
        StructField("broker_name", STRING, False),
        StructField("queue_id", INT, False),
        StructField("in_msgs_per_s", DOUBLE, False),
        StructField("written", BOOLEAN, False),  # in some producer's publish list
        StructField("read", BOOLEAN, False),  # in the consumers' mqAll
        StructField("backlog", LONG, True),  # the most any group's offsets give; null: none do
    ]
)

REJECTS = StructType(
    [
        StructField("source", STRING, False),
        StructField("reason", STRING, False),
        StructField("row", STRING, True),  # the offending row as JSON
    ]
)

# One row per snapshot table read: rows read = rows used + rows rejected.
RECONCILIATION = StructType(
    [
        StructField("table", STRING, False),
        StructField("rows_read", LONG, False),
        StructField("rows_used", LONG, False),
        StructField("rows_rejected", LONG, False),
    ]
)

# rmqsim validate, per (topic, group, broker_name, queue_id): the observed holder beside the
# simulated owners.
VALIDATION_QUEUES = StructType(
    [
        *TOPIC_GROUP,
        StructField("broker_name", STRING, False),
        StructField("queue_id", INT, False),
        StructField("observed_client_id", STRING, True),
        StructField("observed_client_ip", STRING, True),  # null: consumerProgress shows no holder
        StructField("simulated_client_ids", ArrayType(STRING, False), False),  # empty: no owner
        StructField(
            "in_progress", BOOLEAN, False
        ),  # false: simulated, but consumerProgress lists no such queue
        StructField("matched", BOOLEAN, False),
    ]
)

# rmqsim validate, per group: how much of the observed assignment the simulation reproduces, and why not.
VALIDATION = StructType(
    [
        StructField("group", STRING, False),
        StructField("strategy", STRING, False),  # the group's configured strategy
        StructField("topics", LONG, False),
        StructField("queues_compared", LONG, False),  # queues consumerProgress lists
        StructField("matched", LONG, False),
        StructField("match_rate", DOUBLE, True),  # null where nothing was compared
        StructField("queues_not_in_progress", LONG, False),
        StructField("causes", ArrayType(STRING, False), False),  # codes: see rmqsim.validate.diagnose
        StructField("details", ArrayType(STRING, False), False),  # one sentence per cause
    ]
)

# rmqsim validate, per (topic, broker_name, queue_id) modelled or observed: the phase 0 inflow the
# model gives the queue beside the rate the cluster measured, and the likely cause of a difference
# (codes: see rmqsim.validate.traffic).
VALIDATION_TRAFFIC = StructType(
    [
        StructField("topic", STRING, False),
        StructField("broker_name", STRING, False),
        StructField("queue_id", INT, False),
        StructField("written", BOOLEAN, False),  # in a modelled producer's publish list
        StructField("read", BOOLEAN, False),  # in the consumers' mqAll
        StructField("modelled_msgs_per_s", DOUBLE, False),  # 0: the model sends nothing there
        # offsets.in_tps (the largest of the queue's rows); 0 where queue_status says it was never
        # written; null: not observed.
        StructField("observed_msgs_per_s", DOUBLE, True),
        StructField("ever_written", BOOLEAN, True),  # queue_status: a last_updated; null: not listed
        StructField("difference", DOUBLE, True),  # observed - modelled
        StructField("tolerance", DOUBLE, False),  # the difference within which the two agree
        StructField("agrees", BOOLEAN, True),  # null: not observed
        StructField("cause", STRING, True),  # null where they agree or nothing was observed
    ]
)

# rmqsim validate, per topic modelled or observed: the modelled phase 0 total beside the observed one.
VALIDATION_TOPICS = StructType(
    [
        StructField("topic", STRING, False),
        StructField("rate_source", STRING, True),  # producers, offsets.in_tps; null: no rate
        StructField("requested_msgs_per_s", DOUBLE, False),  # what its producers send, routable or not
        StructField("modelled_msgs_per_s", DOUBLE, False),  # summed over its queues
        StructField("observed_msgs_per_s", DOUBLE, True),
        StructField("observed_from", STRING, True),  # observed_traffic, offsets.in_tps; null: neither
        StructField("difference", DOUBLE, True),  # observed - modelled
        StructField("tolerance", DOUBLE, False),
        StructField("agrees", BOOLEAN, True),  # null: not observed
        StructField("cause", STRING, True),  # null where the totals agree or nothing was observed
        StructField("queues", LONG, False),  # its validation_traffic rows
        StructField("queues_observed", LONG, False),
        StructField("queues_differing", LONG, False),
        StructField("queue_causes", ArrayType(STRING, False), False),  # its rows' causes, distinct, sorted
    ]
)


def arrow(schema: StructType) -> pa.Schema:
    """``schema`` as Arrow types: what Spark hands Python and what pyarrow writes."""
    return to_arrow_schema(schema)


GROUP_ROUTES_ARROW = arrow(GROUP_ROUTES)
REJECTS_ARROW = arrow(REJECTS)


@dataclass(frozen=True)
class OutputTable:
    """A table a run writes (docs/CONTRACT.md, section 4): its columns, and the columns whose values
    name its partition directories (``scenario=.../strategy=...``)."""

    name: str
    schema: StructType
    partitioned_by: tuple[str, ...] = ()


# Every output table, by name. The first six come out of the allocation stage's tasks; the
# others are computed by the driver from those (rollups), or by the checks and validate.
OUTPUTS = {
    t.name: t
    for t in (
        OutputTable("assignments", ASSIGNMENTS, PARTITIONED_BY),
        OutputTable("group_metrics", GROUP_METRICS, PARTITIONED_BY),
        OutputTable("consumer_load", CONSUMER_LOAD, PARTITIONED_BY),
        OutputTable("falling_behind", FALLING_BEHIND, PARTITIONED_BY),
        OutputTable("movement", MOVEMENT, PARTITIONED_BY),
        OutputTable("handover", HANDOVER, PARTITIONED_BY),
        OutputTable("queue_traffic", QUEUE_TRAFFIC, ("scenario",)),
        OutputTable("split_brain", SPLIT_BRAIN, PARTITIONED_BY),
        OutputTable("touched", TOUCHED),
        OutputTable("sweep", SWEEP),
        OutputTable("summary", SUMMARY),
        OutputTable("comparison", COMPARISON),
        OutputTable("recommendation", RECOMMENDATION),
        OutputTable("exposure", EXPOSURE),
        OutputTable("rejects", REJECTS),
        OutputTable("reconciliation", RECONCILIATION),
        OutputTable("validation", VALIDATION),
        OutputTable("validation_queues", VALIDATION_QUEUES),
        OutputTable("validation_traffic", VALIDATION_TRAFFIC),
        OutputTable("validation_topics", VALIDATION_TOPICS),
    )
}
# The tables the allocation stage's tasks write, in the order they are produced; falling_behind
# only where some client has a capacity, movement and handover only where a scenario has a second
# phase.
STAGE_TABLES = ("assignments", "group_metrics", "consumer_load", "falling_behind", "movement", "handover")
