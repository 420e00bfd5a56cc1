"""The simulation job: snapshot in, assignments, metrics and rejects out.

The tables it writes are docs/CONTRACT.md, section 4; its command, section 5.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from rmqsim import impact, phase_rollups, phases, rollups, schemas, session
from rmqsim.arrays import stacked
from rmqsim.config import SimulateConfig
from rmqsim.handover.events import events as handover_events
from rmqsim.scenarios import apply, names, parse, restarts
from rmqsim.scenarios import sweeps as sweep_scenarios
from rmqsim.sink import Sink, open_sink
from rmqsim.snapshot import checks, reconcile
from rmqsim.snapshot.load import Snapshot, load_snapshot, schemas_table
from rmqsim.stage import inflow, routes, tasks

log = logging.getLogger(__name__)

BASELINE = "baseline"
# Scenarios (or sweep elements) per chunk at first, and the fewest route rows a chunk may hold:
# the chunks after the first hold about as many route rows as the fleet, at least this many.
FIRST_CHUNK = 4
CHUNK_ROWS = 20_000
# The groups columns that say who balances a group (docs/CONTRACT.md, section 2b).
BALANCING_COLUMNS = ("rebalance", "request_mode", "pop_share_queue_num", "consume_orderly")
# The recommendation's rows a run hands back to print: a fleet has tens of thousands of groups.
PRINTED_GROUPS = 20


@dataclass(frozen=True)
class RunResult:
    out: str
    summary: list[dict]  # per (scenario, phase, strategy)
    comparison: list[dict] = field(default_factory=list)  # per (scenario, strategy), with scenarios
    # Per group, with scenarios: the groups a scenario strands messages of, then the others by
    # name, at most PRINTED_GROUPS of them (recommendation/ has every group, of recommended_groups).
    recommendation: list[dict] = field(default_factory=list)
    exposure: list[dict] = field(default_factory=list)  # per (scenario, strategy), with stale views
    reconciliation: list[dict] = field(default_factory=list)  # per table: read, used, rejected
    sweep: list[dict] = field(default_factory=list)  # per (sweep, element, strategy), with sweeps
    recommended_groups: int = 0  # recommendation/'s rows


def allocation_partitions(spark: SparkSession, config: SimulateConfig) -> int:
    if config.partitions:
        return config.partitions
    if session.is_remote(spark):  # no SparkContext to ask for the cores
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    return max(2, 2 * spark.sparkContext.defaultParallelism)


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
    loaded: Snapshot  # as read
    checked: Snapshot  # the rows that pass the checks
    absent: tuple[str, ...] = ()  # optional route columns null on every row of this run
    traffic: inflow.Traffic | None = None  # where the messages go, with producers or rates
    with_capacities: bool = False  # some client has a capacity (section 2d)
    # What each later phase's steps touched (section 4), None where every phase is written whole;
    # then phase 0 is scenario phases.SNAPSHOT's, and a scenario's rows hold only what changed.
    touched: pa.Table | None = None
    last_phases: dict[str, int] = field(default_factory=dict)  # every scenario's, as summary has them
    # The scenarios whose phases are still to build and stage, a chunk at a time (run).
    later: tuple[parse.Scenario, ...] = ()


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
    listed = None
    last_phase = {s.name: s.last_phase for s in runs}
    if elements:
        staged, listed = apply.phased_changes(valid, runs, snapshot_name=None)
    elif config.full_phases or not any(s.steps for s in runs):
        staged = apply.phased(valid, runs)
    else:
        staged, listed = apply.phased_changes(valid, runs, snapshot_name=phases.SNAPSHOT)
        last_phase[phases.SNAPSHOT] = 0
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
        some_capacity = capacities and consumers["capacity_msgs_per_s"].null_count < consumers.num_rows
        clients = routes.client_lists(
            consumers,
            queue_config=staged.queue_config,
            languages=languages,
            capacities=capacities,
            designation=designation,
            by=by,
        )
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
    )


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
    for _, cut in _chunks(config, built, list(later), "scenarios"):
        built = with_detail(built, cut)
    return replace(built, last_phases={**built.last_phases, **_without_steps(runs, built)})


def _without_steps(runs: tuple[parse.Scenario, ...], built: Staged) -> dict[str, int]:
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


def stage_input(spark: SparkSession, built: Staged, config: SimulateConfig) -> tasks.StageInput:
    """The routes for the stage, with the partitions and tasks it runs on."""
    partitions = allocation_partitions(spark, config)
    return tasks.StageInput(built.group_routes, built.absent, partitions, config.partitions)


def stage_tables(built: Staged) -> tuple[str, ...]:
    """The tables the stage writes: falling_behind only where some client has a capacity,
    movement and handover only where a scenario has a second phase."""
    left_out = {
        "falling_behind": not built.with_capacities,
        "movement": not built.with_movement,
        "handover": not built.with_movement,
    }
    return tuple(t for t in schemas.STAGE_TABLES if not left_out.get(t, False))


@dataclass(frozen=True)
class Swept:
    """The sweeps' elements ranked by what each changes (rmqsim.impact), and the worst ones, whose
    phases the run's other tables hold."""

    changes: pa.Table
    detail: tuple[parse.Scenario, ...]


def sweep_elements(
    spark: SparkSession,
    config: SimulateConfig,
    sink: Sink,
    built: Staged,
    sweeps: tuple[parse.Sweep, ...],
    *,
    strategies: list[str] | None = None,
    fleet_rows: int | None = None,
) -> Swept | None:
    """Every element of every sweep through the stage, each cut to what it touches, in chunks of
    about as many route rows as the fleet has (so that the driver holds about one fleet's worth
    more); their rows back in the driver, summed per element, ranked. None without sweeps.
    ``strategies`` (every strategy the run computes) and ``fleet_rows`` (the fleet's route rows):
    where ``built`` no longer holds its routes.

    While Spark runs a chunk, this thread sums the chunk before and builds the next (numpy and
    pyarrow let go of the GIL). The builds stay in this thread: its allocator has kept the memory
    the run's own build freed, and reuses it."""
    if not sweeps:
        return None
    found = sweep_scenarios.expand(sweeps, built.checked)
    every = [(sweep, s) for sweep, scenarios in found.items() for s in scenarios]
    # Every strategy the run computes: an element's row for one its touched groups never run is 0.
    strategies = sorted(strategies if strategies is not None else _strategies(built.group_routes))

    sweep_of = {scenario.name: sweep for sweep, scenario in every}

    def summed(chunk: list[parse.Scenario], elements: Staged, rows: Future) -> pa.Table:
        names: dict[str, list[str]] = {}
        for scenario in chunk:
            names.setdefault(sweep_of[scenario.name], []).append(scenario.name)
        unroutable = None if elements.traffic is None else elements.traffic.unroutable
        return impact.changes(names, rows.result(), strategies, unroutable)

    parts, running = [], None
    with ThreadPoolExecutor(1, thread_name_prefix="rmqsim-sweep-stage") as stage:
        for chunk, elements in _chunks(config, built, [s for _, s in every], "sweep elements", fleet_rows):
            rows = stage.submit(sink.collect_stage, stage_input(spark, elements, config), impact.COLLECTED)
            if running is not None:
                parts.append(summed(*running))
            running = (chunk, elements, rows)
            del elements, rows
        if running is not None:
            parts.append(summed(*running))
    changes = pa.concat_tables(parts)
    ranked, chosen = impact.ranked(changes, config.sweep_detail)
    log.info(
        "simulate: %d sweep elements in %d chunks, %d of them detailed", len(every), len(parts), len(chosen)
    )
    return Swept(ranked, tuple(s for _, s in every if s.name in chosen))


def _strategies(group_routes: pa.Table) -> set[str]:
    return set(pc.unique(pc.list_flatten(group_routes["strategies"])).to_pylist())


def _chunks(
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
    marked = _marked(detail)
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
    return replace(_followed_by(built, detail, stacked(ours, routes), traffic), absent=absent)


def _followed_by(
    before: Staged, after: Staged, group_routes: pa.Table, traffic: inflow.Traffic | None
) -> Staged:
    """``before`` with ``after``'s later phases after its own: their routes and traffic as given,
    touched/ and the last phases stacked, each flag set where either sets it."""
    touched = after.touched if before.touched is None else stacked(before.touched, after.touched)
    return replace(
        before,
        group_routes=group_routes,
        with_movement=True,
        with_stale_views=before.with_stale_views or after.with_stale_views,
        traffic=traffic,
        with_capacities=before.with_capacities or after.with_capacities,
        touched=touched,
        last_phases={**before.last_phases, **after.last_phases},
    )


def run(spark: SparkSession, config: SimulateConfig, ahead: list[Staged] | None = None) -> RunResult:
    """The whole job. ``ahead``: [build_group_routes(None, config, deferred=True)], where the
    caller built the routes before the session was up; a list the run empties, so that it holds
    the routes alone and lets go of phase 0's once they are staged."""
    log.info("simulate: %s", config.describe())
    sink = open_sink(spark, config.out, mode=config.mode, kind=config.sink)
    found = load_file(config)
    routes = ahead if ahead else [build_group_routes(spark, config, deferred=True)]
    try:
        if sink.appends and not config.full_phases:
            built, swept = _staged_in_chunks(spark, config, sink, routes, found)
        else:
            built, swept = _staged_whole(
                spark, config, sink, completed(config, routes.pop(), found.scenarios), found
            )
        result = write_rollups(sink, built, swept)
        sink.publish()
    except BaseException:
        sink.abandon()
        raise
    log.info("simulate: wrote %s with the %s sink", config.out, sink.kind)
    return result


def _staged_whole(
    spark: SparkSession, config: SimulateConfig, sink: Sink, built: Staged, found: parse.ScenarioFile
) -> tuple[Staged, Swept | None]:
    """Every phase through the stage at once (the sweeps' detailed elements stacked on): where the
    sink writes each table whole, or every phase is written whole."""
    swept = sweep_elements(spark, config, sink, built, found.sweeps)
    if swept is not None and swept.detail:
        detail = build_group_routes(spark, config, swept.detail, prepared=built, elements=True)
        if config.full_phases or (built.traffic is None) != (detail.traffic is None):
            runs = tuple(s for s in found.scenarios if s.steps) + swept.detail
            built = build_group_routes(spark, config, runs, prepared=built)
        else:
            built = with_detail(built, detail)
        del detail
    _stage(spark, config, sink, built, stage_tables(built))
    return built, swept


def _staged_in_chunks(
    spark: SparkSession,
    config: SimulateConfig,
    sink: Sink,
    routes: list[Staged],
    found: parse.ScenarioFile,
) -> tuple[Staged, Swept | None]:
    """Phase 0 (or every phase, where a step's traffic made the build whole) through the stage,
    then the scenarios left (``later``) and the sweeps' detailed elements a chunk at a time, each
    appended to the run's tables: the driver holds one chunk's routes at a time. ``routes``: [the
    build], emptied. Returned: what the rollups need of every chunk (_kept), and the sweeps.

    The first stage writes movement, and falling_behind where the snapshot has capacities, before
    the chunks say whether the run needs them; a table it turns out no phase needs is dropped."""
    first = routes.pop()
    capacities = "client_capacities" not in first.absent
    tables = stage_tables(replace(first, with_movement=True, with_capacities=capacities))
    _stage(spark, config, sink, first, tables)
    strategies, fleet_rows = _strategies(first.group_routes), first.group_routes.num_rows
    record = _kept(first)
    del first
    chunks = _chunks(config, record, list(record.later), "scenarios", fleet_rows)
    record, strategies = _staged_chunks(spark, config, sink, chunks, tables, record, strategies)
    record = replace(
        record, later=(), last_phases={**record.last_phases, **_without_steps(found.scenarios, record)}
    )
    swept = sweep_elements(
        spark, config, sink, record, found.sweeps, strategies=sorted(strategies), fleet_rows=fleet_rows
    )
    detail = list(swept.detail) if swept is not None else []
    elements = _chunks(config, record, detail, "detailed sweep elements", fleet_rows)
    first_detail = next(elements, None)
    if first_detail is not None and (first_detail[1].traffic is None) != (record.traffic is None):
        # The first stage has traffic a step gave it, the elements none: every phase again, whole.
        runs = tuple(s for s in found.scenarios if s.steps) + tuple(detail)
        whole = build_group_routes(spark, config, runs, prepared=record)
        for name in set(tables) - set(stage_tables(whole)):
            sink.drop(name)
        _stage(spark, config, sink, whole, stage_tables(whole))
        return whole, swept
    if first_detail is not None:
        elements = itertools.chain([first_detail], elements)
        del first_detail
        record, _ = _staged_chunks(spark, config, sink, elements, tables, record, set())
    for name in set(tables) - set(stage_tables(record)):
        sink.drop(name)
    return record, swept


def _staged_chunks(
    spark: SparkSession,
    config: SimulateConfig,
    sink: Sink,
    chunks: Iterator[tuple[list[parse.Scenario], Staged]],
    tables: tuple[str, ...],
    record: Staged,
    strategies: set[str],
) -> tuple[Staged, set[str]]:
    """Each chunk (_chunks) through the stage, appended: while Spark runs one, this thread builds
    the next (numpy and pyarrow let go of the GIL). ``record`` and ``strategies``: of the stages
    before, returned with these chunks' too."""
    running = None
    with ThreadPoolExecutor(1, thread_name_prefix="rmqsim-chunk-stage") as pool:
        for _, cut in chunks:
            marked = _marked(cut)
            del cut
            if running is not None:
                running.result()
            running = pool.submit(_stage, spark, config, sink, marked, tables, append=True)
            strategies |= _strategies(marked.group_routes)
            record = _kept(marked, record)
            del marked
        if running is not None:
            running.result()
    return record, strategies


def _stage(
    spark: SparkSession,
    config: SimulateConfig,
    sink: Sink,
    built: Staged,
    tables: tuple[str, ...],
    *,
    append: bool = False,
) -> None:
    """``built``'s routes through the stage, its ``tables`` and its queue_traffic written
    (``append``: beside an earlier stage's)."""
    # queue_traffic needs nothing of the stage's: written beside it, on the core its tasks leave.
    with ThreadPoolExecutor(1, thread_name_prefix="rmqsim-queue-traffic") as pool:
        written = pool.submit(_write_queue_traffic, sink, built.traffic, append)
        sink.run_stage(stage_input(spark, built, config), tables, append=append)
        written.result()


def _write_queue_traffic(sink: Sink, traffic: inflow.Traffic | None, append: bool) -> None:
    if traffic is not None:
        sink.write("queue_traffic", traffic.queue_traffic, append=append)


def _marked(cut: Staged) -> Staged:
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


def _kept(staged: Staged, before: Staged | None = None) -> Staged:
    """What the rollups need of a stage's build once it ran (``before``: of the stages before):
    as routes, only the rows whose strategies were skipped (the allocation's rejects); of the
    traffic, the unroutable rates and rejects; touched/, the last phases and the flags."""
    traffic = staged.traffic
    if traffic is not None:
        traffic = replace(
            traffic,
            topic_inflow=traffic.topic_inflow.slice(0, 0),
            build_queue_traffic=_written_already,
        )
    skipped = skipped_routes(staged.group_routes)
    if before is None:
        return replace(staged, group_routes=skipped, traffic=traffic)
    if before.traffic is not None and traffic is not None:
        traffic = replace(
            before.traffic,
            unroutable=stacked(before.traffic.unroutable, traffic.unroutable),
            rejects=stacked(before.traffic.rejects, traffic.rejects),
        )
    else:
        traffic = before.traffic
    return _followed_by(before, staged, stacked(before.group_routes, skipped), traffic)


def _written_already() -> pa.Table:
    raise RuntimeError("queue_traffic was written with its stage")


def skipped_routes(group_routes: pa.Table) -> pa.Table:
    """The written routes (every route, where every phase is) whose strategies were skipped: what
    the allocation's rejects read of the routes (rollups.allocation_rejects)."""
    skips = pc.greater(pc.fill_null(pc.list_value_length(group_routes["skipped"]), 0), 0)
    written = pc.fill_null(group_routes["written"], True)
    kept = group_routes.filter(pc.and_(skips, written))
    return kept.select(["scenario", "phase", "topic", "group", "skipped", "written"])


def write_rollups(sink: Sink, built: Staged, swept: Swept | None = None) -> RunResult:
    """The tables the driver computes from the stage's (rmqsim.rollups), and the rejects and the
    reconciliation, written; what simulate prints of them. Where later phases hold what changed,
    the rollups see every phase whole (rmqsim.phases)."""
    traffic = built.traffic

    wanted = (*rollups.GROUP_METRICS_COLUMNS, *rollups.SUMMARY_METRICS_COLUMNS)
    if built.with_stale_views:
        wanted = tuple(dict.fromkeys([*wanted, *schemas.SPLIT_BRAIN.fieldNames()]))
    if built.touched is not None:
        sink.write("touched", built.touched)
    rolled = phase_rollups.rolled_up(
        _written_rows(sink, built, wanted),
        built.touched,
        built.last_phases,
        stale_views=built.with_stale_views,
    )
    summary, comparison, advice, exposure = rolled.summary, rolled.comparison, rolled.recommendation, None
    sink.write("summary", summary)
    sweep = None
    if swept is not None:
        at_0 = summary.filter(pc.equal(summary["phase"], 0))
        at_0 = at_0.filter(pc.equal(at_0["scenario"], at_0["scenario"][0])) if at_0.num_rows else at_0
        sweep = impact.finished(swept.changes, at_0)
        sink.write("sweep", sweep)
    if built.with_movement:
        sink.write("comparison", comparison)
        sink.write("recommendation", advice)
        if built.with_stale_views:
            sink.write("split_brain", rolled.split_brain)
            exposure = rolled.exposure
            sink.write("exposure", exposure)
    not_simulated = rollups.allocation_rejects(skipped_routes(built.group_routes), rolled.thrown)
    unroutable = [] if traffic is None else [traffic.rejects.cast(built.rejects.schema)]
    sink.write(
        "rejects", pa.concat_tables([built.rejects, not_simulated.cast(built.rejects.schema), *unroutable])
    )
    counted = reconcile.reconciliation(built.loaded, built.checked, built.rejects)
    sink.write("reconciliation", counted)
    return RunResult(
        sink.directory.out,
        summary.to_pylist(),
        sorted(_rows(comparison), key=lambda r: (r["scenario"], r["strategy"])),
        _printed(advice),
        _rows(exposure),
        sorted(counted.to_pylist(), key=lambda r: reconcile.TABLES.index(r["table"])),
        _rows(sweep),
        0 if advice is None else advice.num_rows,
    )


def _written_rows(
    sink: Sink, built: Staged, metrics: tuple[str, ...]
) -> Callable[[str | None], phase_rollups.Written]:
    """What the rollups read of the stage's tables (``metrics``: group_metrics' columns), a
    scenario at a time (phase_rollups.rolled_up's ``read``): the arrow sink reads only that
    scenario's partitions; the Spark sink reads each table once (a Spark job each) and splits it."""
    unroutable = None if built.traffic is None else built.traffic.unroutable

    def read(scenario: str | None, name: str, columns: tuple[str, ...] = ()) -> pa.Table:
        """Table ``name``'s ``columns`` (all: none given) with what the rebuild keys rows by."""
        keys = [c for c in phases.KEYS.get(name, ()) if columns and c not in columns]
        return sink.read(name, (*columns, *keys), None if scenario is None else {"scenario": scenario})

    def written(scenario: str | None) -> phase_rollups.Written:
        rates = unroutable
        if rates is not None and scenario is not None:
            rates = rates.filter(pc.equal(rates["scenario"], scenario))
        return phase_rollups.Written(
            read(scenario, "group_metrics", metrics),
            read(scenario, "consumer_load", rollups.CONSUMER_LOAD_COLUMNS),
            read(scenario, "falling_behind", rollups.BEHIND_COLUMNS) if built.with_capacities else None,
            read(scenario, "movement", rollups.MOVEMENT_COLUMNS) if built.with_movement else None,
            rates,
            read(scenario, "handover", rollups.HANDOVER_COLUMNS) if built.with_movement else None,
        )

    if sink.kind == "arrow" or built.touched is None:
        return written
    return phase_rollups.by_scenario(written(None))


def _printed(advice: pa.Table | None) -> list[dict]:
    """The recommendation's PRINTED_GROUPS rows to print: advised groups first, each part by name."""
    if advice is None:
        return []
    stranded = pc.is_valid(advice["advice"]).to_numpy(zero_copy_only=False)
    keyed = advice.append_column("quiet", pa.array(~stranded))
    first = keyed.sort_by([("quiet", "ascending"), ("group", "ascending")]).slice(0, PRINTED_GROUPS)
    return first.drop_columns(["quiet"]).to_pylist()


def _rows(table: pa.Table | None) -> list[dict]:
    return [] if table is None else table.to_pylist()
