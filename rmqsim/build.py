"""What a run hands the allocation stage (Staged): the snapshot read and checked, the scenarios'
steps applied phase by phase, and each (scenario, phase, topic, group)'s route built, with its
traffic. Built in the driver with pyarrow; where later phases hold what changed (section 4), phase
0 first and then the scenarios a chunk at a time, each cut to what its steps touched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from rmqsim import phases, schemas
from rmqsim.arrays import stacked
from rmqsim.config import SimulateConfig
from rmqsim.handover.events import events as handover_events
from rmqsim.scenarios import apply, names, parse, restarts, touched
from rmqsim.snapshot import checks
from rmqsim.snapshot.load import Snapshot, load_snapshot, schemas_table
from rmqsim.stage import inflow, routes

log = logging.getLogger(__name__)

BASELINE = "baseline"
# Scenarios (or sweep elements) per chunk at first, and the fewest route rows a chunk may hold:
# the chunks after the first hold about as many route rows as the fleet, at least this many.
FIRST_CHUNK = 4
CHUNK_ROWS = 20_000
# The groups columns that say who balances a group (docs/CONTRACT.md, section 2b).
BALANCING_COLUMNS = ("rebalance", "request_mode", "pop_share_queue_num", "consume_orderly")


def load_file(config: SimulateConfig) -> parse.ScenarioFile:
    """The scenarios file's scenarios (without any, the snapshot alone as scenario ``baseline``)
    and sweeps."""
    found = parse.load_file(config.scenarios) if config.scenarios else parse.ScenarioFile()
    return found if found.scenarios else replace(found, scenarios=(parse.Scenario(BASELINE),))


def load_scenarios(config: SimulateConfig) -> tuple[parse.Scenario, ...]:
    """The scenarios to run: the file's, or the snapshot alone as scenario ``baseline``."""
    return load_file(config).scenarios


@dataclass(frozen=True)
class Staged:
    group_routes: pa.Table  # every phase of every scenario: the allocation stage's input
    rejects: pa.Table  # the snapshot's reject rows (schemas.REJECTS)
    with_movement: bool  # a scenario has a second phase
    with_stale_views: bool
    # As read, and the rows that pass the checks; None once every phase is staged (run lets them
    # go before the rollups, which need only the reconciliation's counts of them).
    loaded: Snapshot | None
    checked: Snapshot | None
    absent: tuple[str, ...] = ()  # optional route columns null on every row of this run
    traffic: inflow.Traffic | None = None  # where the messages go, with producers or rates
    with_capacities: bool = False  # some client has a capacity (section 2d)
    # What each later phase's steps touched (section 4), None where every phase is written whole;
    # then phase 0 is scenario phases.SNAPSHOT's, and a scenario's rows hold only what changed.
    touched: pa.Table | None = None
    last_phases: dict[str, int] = field(default_factory=dict)  # every scenario's, as summary has them
    # The scenarios whose phases are still to build and stage, a chunk at a time (run).
    later: tuple[parse.Scenario, ...] = ()
    # Phase 0's client lists, which a chunk's phases that keep the snapshot's consumers take
    # rather than sort again; None once no chunk is left to build.
    snapshot_clients: SnapshotClients | None = None


@dataclass(frozen=True)
class SnapshotClients:
    """routes.client_lists of the snapshot's consumers (without scenario and phase), and what
    they were built with (languages, capacities, designation): a build with other ones builds
    its own."""

    lists: pa.Table
    built_with: tuple[bool, bool, bool]

    def of(self, keys: list[tuple[str, int]], listed: pa.Table) -> list[pa.Table]:
        """The lists of ``keys`` (scenario, phase), each cut as apply.phased_changes cuts the
        scenario's consumers (touched.cut_groups of its rows of touched/'s ``listed``)."""
        parts, cut = [], {}
        for scenario, phase in keys:
            if scenario not in cut:
                groups = touched.cut_groups(listed.filter(pc.equal(listed["scenario"], scenario)))
                groups = groups.cast(self.lists.schema.field("group").type)
                cut[scenario] = self.lists.filter(pc.is_in(self.lists["group"], value_set=groups))
            rows = cut[scenario]
            keyed = {
                "scenario": pa.repeat(pa.scalar(scenario, pa.string()), rows.num_rows),
                "phase": pa.repeat(pa.scalar(phase, pa.int32()), rows.num_rows),
            }
            parts.append(pa.table({**keyed, **{c: rows[c] for c in rows.column_names}}))
        return parts


def snapshot_read(spark: SparkSession | None, config: SimulateConfig) -> Snapshot:
    """The snapshot's tables that this run reads."""
    snapshot = load_snapshot(spark, config.snapshot)
    if config.strategies is not None and "CONFIG" not in config.strategies:
        # CONFIG lists are as long as the assignments: a run without CONFIG neither reads nor checks them.
        snapshot = replace(snapshot, queue_config=None)
    return snapshot


def with_traffic(snapshot: Snapshot, runs: tuple[parse.Scenario, ...]) -> Snapshot:
    """The snapshot with its producers, where it has traffic (producers, offsets' in_tps, or a
    set_traffic step): a topic without producers rows sends its queues' in_tps (stage.inflow)."""
    set_traffic = any(isinstance(s, parse.SetTraffic) for run in runs for s in run.steps)
    rated = snapshot.offsets is not None and snapshot.offsets["in_tps"].null_count < snapshot.offsets.num_rows
    if snapshot.producers is None and not rated and not set_traffic:
        return snapshot
    producers = inflow.default_producers(snapshot.producers, snapshot.offsets, snapshot.topic_queues["topic"])
    return replace(
        snapshot, producers=producers if producers is not None else schemas_table(schemas.PRODUCERS)
    )


def build_group_routes(
    spark: SparkSession | None,
    config: SimulateConfig,
    runs: tuple[parse.Scenario, ...] | None = None,
    *,
    prepared: Staged | None = None,
    elements: bool = False,
    whole: bool = False,
    deferred: bool = False,
) -> Staged:
    """Load and check the snapshot, apply the scenarios' steps, build each (topic, group)'s route:
    in this process, with pyarrow (a fleet's metadata is small, and every Spark job costs a fixed
    overhead whatever its size). A local snapshot needs no Spark (``spark`` None): the CLI builds
    the routes while the JVM starts.

    ``runs``: these scenarios, not the file's. ``prepared``: a build whose loaded and checked
    snapshot this one reuses. ``elements``: sweep elements, each cut to what it touches, its phase
    0 among them and every row written, without phase 0's fleet (rmqsim.impact); ``touched``
    lists what each touched. ``whole``: every scenario at once, not a chunk at a time.
    ``deferred``: where the scenarios go a chunk at a time, phase 0 alone, the scenarios left in
    ``later`` for run to build and stage a chunk at a time."""
    runs = runs or load_scenarios(config)
    if not whole and _in_chunks(config, runs, elements=elements):
        return _built_in_chunks(spark, config, runs, prepared, deferred=deferred)
    if prepared is None:
        snapshot = snapshot_read(spark, config)
        checked = checks.check_snapshot(snapshot, configured_strategies=config.strategies is None)
    else:
        snapshot, checked = prepared.loaded, checks.Checked(prepared.checked, prepared.rejects)
    valid = with_traffic(checked.snapshot, runs)
    runs = _named_and_expanded(runs, valid)
    # Optional route columns: shipped to Python only where the snapshot or a step gives them.
    steps = [step for run in runs for step in run.steps]
    languages = "consumers.language" in snapshot.given or any(
        isinstance(s, parse.ConsumersJoin) and s.language is not None for s in steps
    )
    balancing = any(f"groups.{c}" in snapshot.given for c in BALANCING_COLUMNS) or any(
        isinstance(s, parse.SetRebalance) for s in steps
    )
    capacities = bool({"consumers.capacity_msgs_per_s", "groups.capacity_msgs_per_s"} & snapshot.given)
    designation = "groups.designated_ips" in snapshot.given or any(
        isinstance(s, parse.Designate) for s in steps
    )
    built_with = (languages, capacities, designation)
    known = prepared.snapshot_clients if elements and prepared is not None else None
    known = known if known is not None and known.built_with == built_with else None
    listed, as_snapshot = None, []
    last_phase = {s.name: s.last_phase for s in runs}
    if elements:
        staged, listed, as_snapshot = apply.phased_changes(
            valid, runs, snapshot_name=None, lists_known=known is not None
        )
    elif config.full_phases or not any(s.steps for s in runs):
        staged = apply.phased(valid, runs)
    else:
        staged, listed, _ = apply.phased_changes(valid, runs, snapshot_name=phases.SNAPSHOT)
        last_phase[phases.SNAPSHOT] = 0
    by = schemas.PHASE
    events = handover_events(runs)
    # Where the messages go needs no client, and the topics' routes only at its end: both worked
    # in threads beside the client lists (numpy and pyarrow let go of the GIL), on the cores the
    # JVM leaves once it is up.
    with ThreadPoolExecutor(2, thread_name_prefix="rmqsim-routes") as pool:
        routing = pool.submit(routes.topic_routes, staged.topic_queues, brokers=staged.brokers, by=by)
        flows = pool.submit(_traffic, staged, valid, routing.result, runs)
        consumers = staged.consumers
        if capacities:
            consumers = routes.with_group_capacities(consumers, staged.groups, by=by)
        clients = routes.client_lists(
            consumers,
            queue_config=staged.queue_config,
            languages=languages,
            capacities=capacities,
            designation=designation,
            by=by,
        )
        if as_snapshot:
            clients = _in_phase_order(clients, known.of(as_snapshot, listed), as_snapshot)
        some_capacity = capacities and _some_capacity(clients)
        snapshot_clients = None
        if not elements and len(runs) == 1 and not runs[0].steps:
            snapshot_clients = SnapshotClients(clients.drop_columns(list(by)), built_with)
        clients = apply.with_left_subscriptions(clients, runs)
        clients = routes.with_strategies(
            clients, groups=staged.groups, strategies=config.strategies, balancing=balancing, by=by
        )
        stale_views = apply.stale_views(valid, runs)
        topic_routes = routing.result()
        traffic, topic_inflow = flows.result()
    group_routes = routes.group_routes(
        clients,
        routes=topic_routes,
        last_phase=last_phase,
        offsets=staged.offsets,
        stale_views=stale_views,
        masters=balancing,
        inflow=topic_inflow,
        drain_target_s=config.drain_target_s if capacities else None,
        events=events,
    )
    if listed is not None and not elements:
        group_routes = phases.marked_written(group_routes, listed)
        if traffic is not None:
            traffic = phases.written_traffic(traffic, listed)
    absent = {
        "backlogs": staged.offsets is None,
        "client_configs": staged.queue_config is None,
        "stale_clients": stale_views is None,
        "view_phase": stale_views is None,
        "client_languages": not languages,
        "balancing": not balancing,
        "broker_masters": not balancing,
        "queue_inflow": traffic is None,
        "stranded_inflow": traffic is None,
        "drained_queues": topic_inflow is None,
        "client_capacities": not capacities,
        "drain_target_s": not capacities,
        "designated_ips": not designation,
        "client_designated_aware": not designation,
        "written": listed is None,
        "handover_event": events is None,
    }
    return Staged(
        group_routes,
        checked.rejects,
        with_movement=any(s.steps for s in runs),
        # A half-done designation rollout is a split brain too (section 2d).
        with_stale_views=any(s.stale_views() for s in runs) or designation,
        loaded=snapshot,
        checked=checked.snapshot,
        absent=tuple(c for c, none in absent.items() if none),
        traffic=traffic,
        with_capacities=some_capacity,
        touched=listed,
        last_phases={s.name: s.last_phase for s in runs},
        snapshot_clients=snapshot_clients,
    )


def _in_phase_order(clients: pa.Table, known: list[pa.Table], keys: list[tuple[str, int]]) -> pa.Table:
    """Client lists built (``clients``) and taken from phase 0's (``known``, of ``keys``) as
    routes.client_lists orders them: by scenario and phase, then (as each phase's come) by topic
    and group. Where every list is taken, in order, they are in order already."""
    together = stacked(clients, *known)
    if not clients.num_rows and keys == sorted(keys):
        return together
    return together.sort_by([("scenario", "ascending"), ("phase", "ascending")])


def _some_capacity(clients: pa.Table) -> bool:
    """Whether some client of the lists has a capacity."""
    values = pc.list_flatten(clients["client_capacities"])
    return values.null_count < len(values)


def _named_and_expanded(runs: Sequence[parse.Scenario], tables: Snapshot) -> tuple[parse.Scenario, ...]:
    """``runs`` once every name their steps give is found at its step (an InputError otherwise),
    with each rolling restart expanded into its phases. A scenario expanded already was checked
    before: its restarts name clients by ids that earlier steps may have generated."""
    fresh = [run for run in runs if not restarts.is_expanded(run)]
    wanted = names.referenced(fresh)
    names.check_names(fresh, names.existing_names(tables, wanted, names.counted_groups(fresh)))
    return restarts.expanded(runs, tables)


def _in_chunks(config: SimulateConfig, runs: tuple[parse.Scenario, ...], *, elements: bool) -> bool:
    """Whether a run's scenarios are built a few at a time onto phase 0's (later phases hold what
    changed)."""
    return not elements and not config.full_phases and any(s.steps for s in runs)


def _built_in_chunks(
    spark: SparkSession | None,
    config: SimulateConfig,
    runs: tuple[parse.Scenario, ...],
    prepared: Staged | None,
    *,
    deferred: bool,
) -> Staged:
    """Phase 0 built once, then (unless ``deferred``) the scenarios a chunk at a time, each cut
    to what it touches and stacked onto it (completed): the driver holds one chunk's intermediate
    tables at a time, not every scenario's."""
    snapshot_alone = (parse.Scenario(BASELINE),)
    built = build_group_routes(spark, config, snapshot_alone, prepared=prepared)
    if built.traffic is None and any(
        isinstance(step, parse.SetTraffic) for run in runs for step in run.steps
    ):
        # A step gives traffic to a snapshot without it: phase 0 then has some too, all at once.
        return build_group_routes(spark, config, runs, prepared=built, whole=True)
    later = replace(built, later=_named_and_expanded([s for s in runs if s.steps], built.checked))
    return later if deferred else completed(config, later, runs)


def completed(config: SimulateConfig, built: Staged, runs: tuple[parse.Scenario, ...]) -> Staged:
    """``built`` with its ``later`` scenarios stacked onto it, a chunk at a time (with_detail),
    and the scenarios of ``runs`` without steps: phase 0 alone, they have summary rows as every
    scenario has."""
    if not built.later:
        return built
    later, built = built.later, replace(built, later=())
    for _, cut in chunked(config, built, list(later), "scenarios"):
        built = with_detail(built, cut)
    return replace(built, last_phases={**built.last_phases, **without_steps(runs, built)})


def without_steps(runs: tuple[parse.Scenario, ...], built: Staged) -> dict[str, int]:
    return {s.name: 0 for s in runs if not s.steps and s.name not in built.last_phases}


def _traffic(
    staged: Snapshot,
    valid: Snapshot,
    topic_routes: Callable[[], pa.Table],
    runs: tuple[parse.Scenario, ...],
) -> tuple[inflow.Traffic | None, pa.Table | None]:
    """The run's traffic (None without producers or rates), and the per-topic inflow the routes
    carry: with offsets but no rates, still the queues each phase drained (stranded_backlog).
    ``topic_routes`` waits for the routes (inflow.traffic asks for them late)."""
    sent = dict(brokers=staged.brokers, topic_queues=staged.topic_queues, topic_routes=topic_routes)
    if staged.producers is not None:
        traffic = inflow.traffic(
            **sent,
            producers=staged.producers,
            producer_keys=valid.producer_keys,
            order_topics=valid.order_topics,
            offsets=valid.offsets,
        )
        return traffic, traffic.topic_inflow
    if staged.offsets is not None and any(s.steps for s in runs):
        # Without rates, which queues producers write still follows from the routes: enough to
        # tell a tail queue its readers drained from one left holding messages (stranded_backlog).
        writes = inflow.traffic(**sent, producers=inflow.no_producers(), order_topics=valid.order_topics)
        return None, writes.topic_inflow.select([*schemas.PHASE, "topic", "drained_queues"])
    return None, None


def chunked(
    config: SimulateConfig,
    built: Staged,
    scenarios: list[parse.Scenario],
    what: str,
    fleet_rows: int | None = None,
) -> Iterator[tuple[list[parse.Scenario], Staged]]:
    """``scenarios`` in chunks, each with its routes cut to what its scenarios touch
    (build_group_routes(elements=True)): the first FIRST_CHUNK scenarios, then as many as the
    last chunk says fill the fleet's route rows (``fleet_rows``, else ``built``'s), at least
    CHUNK_ROWS."""
    budget = max(built.group_routes.num_rows if fleet_rows is None else fleet_rows, CHUNK_ROWS)
    done, size = 0, FIRST_CHUNK
    while done < len(scenarios):
        chunk = scenarios[done : done + size]
        cut = build_group_routes(None, config, tuple(chunk), prepared=built, elements=True)
        done += len(chunk)
        log.info(
            "simulate: %s %d to %d of %d: %d route rows",
            what,
            done - len(chunk) + 1,
            done,
            len(scenarios),
            cut.group_routes.num_rows,
        )
        size = max(1, int(budget // max(cut.group_routes.num_rows / len(chunk), 1.0)))
        yield chunk, cut


def with_detail(built: Staged, detail: Staged) -> Staged:
    """``built`` (phase 0, and the scenarios stacked so far) with ``detail``'s phases (scenarios
    or detailed sweep elements: build_group_routes(elements=True)), each written where its steps
    touched: the fleet's routes are not built again."""
    marked = as_written(detail)
    routes = marked.group_routes
    ours = built.group_routes
    i = ours.schema.get_field_index("written")
    ours = ours.set_column(i, ours.schema.field(i), pc.fill_null(ours["written"], True))
    traffic = built.traffic
    if traffic is not None and marked.traffic is not None:
        theirs = marked.traffic
        before = traffic

        def queues() -> pa.Table:
            return stacked(before.queue_traffic, theirs.queue_traffic)

        traffic = replace(
            traffic,
            unroutable=stacked(traffic.unroutable, theirs.unroutable),
            rejects=stacked(traffic.rejects, theirs.rejects),
            build_queue_traffic=queues,
        )
    absent = tuple(c for c in built.absent if c in detail.absent and c != "written")
    return replace(followed_by(built, detail, stacked(ours, routes), traffic), absent=absent)


def followed_by(
    before: Staged, after: Staged, group_routes: pa.Table, traffic: inflow.Traffic | None
) -> Staged:
    """``before`` with ``after``'s later phases after its own: their routes and traffic as given,
    touched/ and the last phases stacked, each flag set where either sets it."""
    listed = after.touched if before.touched is None else stacked(before.touched, after.touched)
    return replace(
        before,
        group_routes=group_routes,
        with_movement=True,
        with_stale_views=before.with_stale_views or after.with_stale_views,
        traffic=traffic,
        with_capacities=before.with_capacities or after.with_capacities,
        touched=listed,
        last_phases={**before.last_phases, **after.last_phases},
    )


def as_written(cut: Staged) -> Staged:
    """A chunk's build (build_group_routes(elements=True)) as the run writes it: its routes and
    traffic written where its steps touched (phases.marked_written)."""
    listed = cut.touched
    traffic = None if cut.traffic is None else phases.written_traffic(cut.traffic, listed)
    return replace(
        cut,
        group_routes=phases.marked_written(cut.group_routes, listed),
        traffic=traffic,
        absent=tuple(c for c in cut.absent if c != "written"),
    )
