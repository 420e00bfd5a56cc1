"""The simulation job: snapshot in, assignments, metrics and rejects out. The routes come from
rmqsim.build; here they go through the stage (a chunk of scenarios at a time where later phases
hold what changed), the sweeps are ranked, and the rollups written.

The tables it writes are docs/CONTRACT.md, section 4; its command, section 5.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from rmqsim import impact, phase_rollups, phases, rollups, schemas, session
from rmqsim.arrays import stacked
from rmqsim.build import (
    Staged,
    as_written,
    build_group_routes,
    chunked,
    completed,
    followed_by,
    load_file,
    with_detail,
    without_steps,
)
from rmqsim.config import SimulateConfig
from rmqsim.scenarios import parse
from rmqsim.scenarios import sweeps as sweep_scenarios
from rmqsim.sink import Sink, open_sink
from rmqsim.snapshot import reconcile
from rmqsim.stage import inflow, tasks

log = logging.getLogger(__name__)

# The recommendation's rows a run hands back to print: a fleet has tens of thousands of groups.
PRINTED_GROUPS = 20
# Python tasks per core of the fleet's stage, and of a chunk's (scenarios or sweep elements, staged
# beside the driver's build of the next). On the 2M fleet's 24 plain scenarios, chunks of two per
# core cost 1.5 CPU-s and 0.9 s more than of one; its sweep, 0.3 s more. The fleet alone was no
# faster on one per core.
TASKS_PER_CORE = 2
CHUNK_TASKS_PER_CORE = 1


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
    # What the findings name groups by (rmqsim.step_costs): per (scenario, phase, strategy) of a
    # step, per group behind in the snapshot (none without capacities), and per (topic, group)
    # the snapshot strands messages of.
    steps: list[dict] = field(default_factory=list)
    behind: list[dict] = field(default_factory=list)
    stranded: list[dict] = field(default_factory=list)


def allocation_partitions(spark: SparkSession, config: SimulateConfig, *, chunk: bool = False) -> int:
    """``--partitions``, else TASKS_PER_CORE per core (a ``chunk``'s: CHUNK_TASKS_PER_CORE)."""
    if config.partitions:
        return config.partitions
    if session.is_remote(spark):  # no SparkContext to ask for the cores
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    per_core = CHUNK_TASKS_PER_CORE if chunk else TASKS_PER_CORE
    return max(per_core, per_core * spark.sparkContext.defaultParallelism)


def stage_input(
    spark: SparkSession, built: Staged, config: SimulateConfig, *, chunk: bool = False
) -> tasks.StageInput:
    """The routes for the stage, with the partitions and tasks it runs on. ``chunk``: a chunk of
    scenarios or sweep elements, staged beside the driver's build of the next."""
    partitions = allocation_partitions(spark, config, chunk=chunk)
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
    after: Future | None = None,
) -> Swept | None:
    """Every element of every sweep through the stage, each cut to what it touches, in chunks of
    about as many route rows as the fleet has (so that the driver holds about one fleet's worth
    more); their rows back in the driver, summed per element, ranked. None without sweeps.
    ``strategies`` (every strategy the run computes) and ``fleet_rows`` (the fleet's route rows):
    where ``built`` no longer holds its routes. ``after``: a stage still running, which the first
    element's is to follow (its chunk is built beside it).

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
        for chunk, elements in chunked(config, built, [s for _, s in every], "sweep elements", fleet_rows):
            if after is not None:
                after.result()
            rows = stage.submit(
                sink.collect_stage, stage_input(spark, elements, config, chunk=True), impact.COLLECTED
            )
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
        counted = reconcile.reconciliation(built.loaded, built.checked, built.rejects)
        # The snapshot's tables and lists let go of: the rollups, the run's peak, reuse their memory.
        built = replace(built, loaded=None, checked=None, snapshot_clients=None)
        result = write_rollups(sink, built, counted, swept)
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
    if not first.later and not found.sweeps:  # no chunk to build from phase 0's client lists
        first = replace(first, snapshot_clients=None)
    capacities = "client_capacities" not in first.absent
    tables = stage_tables(replace(first, with_movement=True, with_capacities=capacities))
    strategies, fleet_rows = _strategies(first.group_routes), first.group_routes.num_rows
    record = _kept(first)
    chunks = chunked(config, record, list(record.later), "scenarios", fleet_rows)
    with ThreadPoolExecutor(1, thread_name_prefix="rmqsim-chunk-stage") as pool:
        # Phase 0's stage runs while this thread builds the first chunk (or the sweep's first),
        # on the core it leaves; so does each chunk's while this thread builds the next.
        running = pool.submit(_stage, spark, config, sink, first, tables)
        del first
        record, strategies, running = _staged_chunks(
            spark, config, sink, pool, chunks, tables, record, strategies, running
        )
        record = replace(
            record, later=(), last_phases={**record.last_phases, **without_steps(found.scenarios, record)}
        )
        swept = sweep_elements(
            spark,
            config,
            sink,
            record,
            found.sweeps,
            strategies=sorted(strategies),
            fleet_rows=fleet_rows,
            after=running,
        )
        running.result()
    detail = list(swept.detail) if swept is not None else []
    elements = chunked(config, record, detail, "detailed sweep elements", fleet_rows)
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
        with ThreadPoolExecutor(1, thread_name_prefix="rmqsim-chunk-stage") as pool:
            record, _, running = _staged_chunks(spark, config, sink, pool, elements, tables, record, set())
            if running is not None:
                running.result()
    for name in set(tables) - set(stage_tables(record)):
        sink.drop(name)
    return record, swept


def _staged_chunks(
    spark: SparkSession,
    config: SimulateConfig,
    sink: Sink,
    pool: ThreadPoolExecutor,
    chunks: Iterator[tuple[list[parse.Scenario], Staged]],
    tables: tuple[str, ...],
    record: Staged,
    strategies: set[str],
    running: Future | None = None,
) -> tuple[Staged, set[str], Future | None]:
    """Each chunk (chunks) through the stage on ``pool``, appended: while Spark runs one, this
    thread builds the next (numpy and pyarrow let go of the GIL). ``record`` and ``strategies``: of
    the stages before, returned with these chunks' too; ``running``: the stage before, if it may
    still run. The last stage is returned running: the caller may build more beside it."""
    for _, cut in chunks:
        marked = as_written(cut)
        del cut
        if running is not None:
            running.result()
        running = pool.submit(_stage, spark, config, sink, marked, tables, append=True)
        strategies |= _strategies(marked.group_routes)
        record = _kept(marked, record)
        del marked
    return record, strategies, running


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
        sink.run_stage(stage_input(spark, built, config, chunk=append), tables, append=append)
        written.result()


def _write_queue_traffic(sink: Sink, traffic: inflow.Traffic | None, append: bool) -> None:
    if traffic is not None:
        sink.write("queue_traffic", traffic.queue_traffic, append=append)


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
    return followed_by(before, staged, stacked(before.group_routes, skipped), traffic)


def _written_already() -> pa.Table:
    raise RuntimeError("queue_traffic was written with its stage")


def skipped_routes(group_routes: pa.Table) -> pa.Table:
    """The written routes (every route, where every phase is) whose strategies were skipped: what
    the allocation's rejects read of the routes (rollups.allocation_rejects)."""
    skips = pc.greater(pc.fill_null(pc.list_value_length(group_routes["skipped"]), 0), 0)
    written = pc.fill_null(group_routes["written"], True)
    kept = group_routes.filter(pc.and_(skips, written))
    return kept.select(["scenario", "phase", "topic", "group", "skipped", "written"])


def write_rollups(sink: Sink, built: Staged, counted: pa.Table, swept: Swept | None = None) -> RunResult:
    """The tables the driver computes from the stage's (rmqsim.rollups), and the rejects and the
    reconciliation (``counted``), written; what simulate prints of them. Where later phases hold
    what changed, the rollups see every phase whole (rmqsim.phases)."""
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
        _rows(rolled.steps),
        _rows(rolled.behind),
        _rows(rolled.stranded),
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
