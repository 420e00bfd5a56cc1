"""The driver's tables over every phase of every scenario (rmqsim.rollups), from what the stage
wrote: where later phases hold only what changed (rmqsim.phases), a scenario at a time, so that
the driver never holds more than one copy of the fleet.

summary and split_brain are per phase: phase 0's, the snapshot in every scenario, are computed once
and named for each scenario; a later phase's from phase 0's figures and what the phase wrote
(rmqsim.phase_summary), at the cost of what it touched. comparison is per
scenario, from its summary and its movement. The recommendation is per group over every scenario
and phase: it reads phase 0 once, as a scenario of its own whose movement to a phase 1 moves
nothing, and each scenario's rows of the groups it touched. Every figure it takes (a maximum, a
sum of moves, a later phase against phase 0) is the same over those rows as over every phase
whole, since an untouched phase repeats phase 0's rows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import movement_sums, phase_summary, phases, recommendation, rollups, step_costs
from rmqsim.arrays import combined
from rmqsim.scenarios.parse import ELEMENT

# Written's tables of which later phases hold what changed, and of those the ones rebuilt whole (the
# rest are summed by phase_summary).
TABLES = ("group_metrics", "consumer_load", "falling_behind", "movement", "unroutable")
REBUILT = ("movement", "unroutable")
SPLIT = (*TABLES, "handover")  # Written's
UNTOUCHED = f"{ELEMENT}untouched"  # no scenario has this name: ELEMENT is refused in names
# What the recommendation reads of a scenario (_touched_rows): group_metrics, group loads, movement
# and handover (None: none written).
Advised = tuple[pa.Table, pa.Table, pa.Table, pa.Table | None]
# The recommendation's rows of this many fleets' group_metrics make one part. Two held the 2M
# fleet's plain run's driver at 0.54 to 0.56 GB where one holds it at 0.50, in the same time.
PART_ROWS = 1
# Scenarios rolled up at once. Two ran the 2M fleet's 24 plain scenarios' rollups in 2.2 s against
# 3.2 s (the run 1.1 s shorter); three, 2.1 s, and 40 MB more of the driver's peak (bench_sweep).
IN_FLIGHT = 2


@dataclass(frozen=True)
class Written:
    """The stage's tables as the run wrote them (the rollups' columns), and the unroutable rates."""

    group_metrics: pa.Table
    consumer_load: pa.Table
    falling_behind: pa.Table | None = None
    movement: pa.Table | None = None
    unroutable: pa.Table | None = None
    handover: pa.Table | None = None  # only what changed in every run: never rebuilt


@dataclass(frozen=True)
class Rollups:
    summary: pa.Table
    comparison: pa.Table | None = None
    recommendation: pa.Table | None = None
    split_brain: pa.Table | None = None
    exposure: pa.Table | None = None
    thrown: pa.Table | None = None  # group_metrics' rows with an error (rollups.allocation_rejects)
    steps: pa.Table | None = None  # step_costs.step_costs of every scenario
    behind: pa.Table | None = None  # step_costs.snapshot_behind: None without capacities
    stranded: pa.Table | None = None  # step_costs.snapshot_stranded


def rolled_up(
    read: Callable[[str | None], Written],
    touched: pa.Table | None,
    last: Mapping[str, int],
    *,
    stale_views: bool,
) -> Rollups:
    """The rollups of a run. ``read(scenario)``: the written tables' rows of that scenario
    (phases.SNAPSHOT: phase 0's; None: every row); ``touched`` None where every phase was written
    whole; ``last``: each scenario's last phase; ``stale_views``: split_brain and exposure wanted.
    Where later phases hold what changed, one scenario's rows are read at a time."""
    if touched is None:
        written = read(None)
        behind = step_costs.behind_rows(written.falling_behind)
        at_0 = None if behind is None else _first_at_0(behind)
        return replace(
            _of(written, stale_views=stale_views, recommend=True),
            thrown=_thrown(written),
            steps=step_costs.step_costs(written.handover, behind, at_0),
            behind=step_costs.snapshot_behind(at_0),
            stranded=step_costs.snapshot_stranded(_first_at_0(written.group_metrics)),
        )
    scenarios = sorted(s for s in last if s != phases.SNAPSHOT)
    rolling = _Rolling(read(phases.SNAPSHOT), touched, last, scenarios[0], stale_views=stale_views)

    def of(scenario: str) -> _Rolled:
        rows = read(scenario)
        return rolling.rolled(scenario, rows, *rolling.summarised(scenario, rows))

    # IN_FLIGHT scenarios rolled up at once, on as many threads (Arrow and numpy let go of the
    # GIL), each kept in order as it is done: the next submitted first, so that IN_FLIGHT run
    # while this thread keeps one (a fold of the recommendation's parts takes a tenth of a second).
    with ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="rmqsim-rollups") as pool:
        running: deque[Future[_Rolled]] = deque()
        for scenario in scenarios:
            done = running.popleft().result() if len(running) == IN_FLIGHT else None
            running.append(pool.submit(of, scenario))
            if done is not None:
                rolling.kept(done)
            del done
        while running:
            rolling.kept(running.popleft().result())
    return rolling.finished()


class _Rolling:
    """The rollups of a run whose later phases hold what changed, a scenario at a time: from phase
    0's rows (``base``), keyed once, and each scenario's own."""

    def __init__(
        self, base: Written, touched: pa.Table, last: Mapping[str, int], first: str, *, stale_views: bool
    ) -> None:
        self.base, self.touched, self.last, self.stale_views = base, touched, last, stale_views
        # Phase 0's rows of the tables rebuilt whole (movement at a scenario's last phase, and the
        # few unroutable topics), keyed once for every scenario.
        self.keys = {n: phases.keyed(getattr(base, n), n) for n in REBUILT if getattr(base, n) is not None}
        # Phase 0 is the snapshot in every scenario: rolled up once, then named for each. Its
        # summary and its figures on two threads, the recommendation's part of it on this one.
        at_0 = _each(
            replace(base, movement=None), lambda n, table: phases.relabelled(table, first, {"phase": 0})
        )
        with ThreadPoolExecutor(2, thread_name_prefix="rmqsim-phase-0") as pool:
            rolled = pool.submit(_of, at_0, stale_views=stale_views, recommend=False)
            figures = pool.submit(
                phase_summary.phase_0, base.group_metrics, base.consumer_load, base.falling_behind
            )
            # The recommendation weighs each group's load: phase 0's taken once.
            self.load = None if base.movement is None else rollups.group_load(base.consumer_load)
            untouched = None if self.load is None else _untouched(base, self.load, touched.slice(0, 0))
            self.at_0, self.figures = rolled.result(), figures.result()
        if stale_views:
            self.brain = rollups.split_brain(base.group_metrics)
            self.brain_key = phases.keyed(self.brain, "group_metrics")
        self.summaries: list[pa.Table] = []
        self.comparisons: list[pa.Table] = []
        self.brains: list[pa.Table] = []
        self.thrown = [_thrown(base)]
        self.behind_at_0 = step_costs.behind_rows(base.falling_behind)
        self.steps: list[pa.Table] = []
        self.advised = [] if untouched is None else [untouched]
        self.pending: list[Advised] = []  # rows not in a part yet

    def summarised(self, scenario: str, rows: Written) -> tuple[pa.Table, list[pa.Table]]:
        """A scenario's summary rows and split_brain parts: its later phases' from phase 0's
        figures and its own rows (rmqsim.phase_summary)."""
        last = self.last[scenario]
        mine = self.touched.filter(pc.equal(self.touched["scenario"], scenario))
        unroutable = None
        if self.base.unroutable is not None:
            key = self.keys["unroutable"]
            unroutable = phases.of_scenario(
                "unroutable", self.base.unroutable, key, rows.unroutable, mine, scenario, last
            )
        later = phase_summary.summary(
            self.figures,
            rows.group_metrics,
            rows.consumer_load,
            rows.falling_behind,
            mine,
            scenario,
            last,
            unroutable,
        )
        at_0 = _named(self.at_0, scenario)
        summary = pa.concat_tables([at_0.summary, later])
        if not self.stale_views:
            return summary, []
        return summary, [at_0.split_brain, *self._brains(scenario, rows, mine, last)]

    def _brains(self, scenario: str, rows: Written, mine: pa.Table, last: int) -> list[pa.Table]:
        """split_brain's rows of each later phase: phase 0's where untouched, and the scenario's own."""
        written = rollups.split_brain(rows.group_metrics)
        return [
            phases.of_scenario("group_metrics", self.brain, self.brain_key, written, mine, scenario, last, k)
            for k in range(1, last + 1)
        ]

    def rolled(self, scenario: str, rows: Written, summary: pa.Table, brains: list[pa.Table]) -> _Rolled:
        """The rest of a scenario's rollups, from its rows, its summary and phase 0's rows."""
        base = self.base
        steps = step_costs.step_costs(
            rows.handover, step_costs.behind_rows(rows.falling_behind), self.behind_at_0
        )
        if base.movement is None or self.load is None:
            return _Rolled(summary, brains, _thrown(rows), steps)
        # comparison sums every (topic, group)'s movement from phase 0 to the last, and what each
        # step moved: the untouched ones' are phase 0's rows against themselves, summed per
        # strategy rather than written out at the last phase.
        written = movement_sums.of(rows.movement, summary)
        moves = movement_sums.added([written, self._untouched_moves(scenario, self.last[scenario])])
        advised = _touched_rows(base, self.load, rows, self.touched, scenario)
        compared = rollups.comparison(summary, None, rows.handover, moves=moves)
        return _Rolled(summary, brains, _thrown(rows), steps, compared, advised)

    def _untouched_moves(self, scenario: str, last: int) -> pa.Table:
        """movement_sums.unmoved of phase 0's movement rows of the (topic, group)s ``scenario`` left
        untouched at its last phase (phases.of_scenario's)."""
        movement = self.base.movement
        if last < 1:  # no later phase: nothing left untouched
            return movement_sums.unmoved(movement.slice(0, 0), scenario)
        mine = self.touched.filter(
            pc.and_(pc.equal(self.touched["scenario"], scenario), pc.equal(self.touched["phase"], last))
        )
        listed = pc.unique(phases.keyed(mine, "movement"))
        kept = movement.filter(pc.invert(pc.is_in(self.keys["movement"], value_set=listed)))
        return movement_sums.unmoved(kept, scenario)

    def kept(self, done: _Rolled) -> None:
        """A scenario's rollups added to the run's, in the order of the scenarios."""
        self.summaries.append(done.summary)
        self.brains.extend(done.brains)
        self.thrown.append(done.thrown)
        self.steps.append(done.steps)
        if done.comparison is None or done.advised is None:
            return
        self.comparisons.append(done.comparison)
        self.pending.append(done.advised)
        if sum(p[0].num_rows for p in self.pending) >= PART_ROWS * self.base.group_metrics.num_rows:
            self.advised = recommendation.folded([*self.advised, _part(self.pending)])
            self.pending = []

    def finished(self) -> Rollups:
        summary = _sorted(pa.concat_tables(self.summaries), ["scenario", "phase", "strategy"])
        thrown = pa.concat_tables(self.thrown)
        steps = pa.concat_tables(self.steps) if self.steps else step_costs.STEP_COSTS.empty_table()
        behind = step_costs.snapshot_behind(self.behind_at_0)
        stranded = step_costs.snapshot_stranded(self.base.group_metrics)
        if self.base.movement is None:
            return Rollups(summary, thrown=thrown, steps=steps, behind=behind, stranded=stranded)
        comparison = _sorted(pa.concat_tables(self.comparisons), ["scenario", "strategy"])
        brain = pa.concat_tables(self.brains) if self.stale_views else None
        exposure = rollups.exposure(brain) if self.stale_views else None
        parts = [*self.advised, _part(self.pending)] if self.pending else self.advised
        advice = recommendation.merged(parts)
        return Rollups(summary, comparison, advice, brain, exposure, thrown, steps, behind, stranded)


@dataclass(frozen=True)
class _Rolled:
    """One scenario's rollups: its summary rows, split_brain parts and rows with errors; with
    movement, its comparison and what the recommendation reads of it (_touched_rows)."""

    summary: pa.Table
    brains: list[pa.Table]
    thrown: pa.Table
    steps: pa.Table  # step_costs.step_costs
    comparison: pa.Table | None = None
    advised: Advised | None = None


def _thrown(written: Written) -> pa.Table:
    """group_metrics' rows with an error: the allocation's rejects (rollups.allocation_rejects)."""
    metrics = written.group_metrics
    return metrics.filter(pc.is_valid(metrics["error"]))


def _untouched(base: Written, load: pa.Table, nothing: pa.Table) -> recommendation.Part:
    """The recommendation's figures of every group no step touches: phase 0 as scenario UNTOUCHED,
    phases 0 and 1, and its movement from 0 to 1 (module doc). ``load``: phase 0's group loads;
    ``nothing``: touched/, no row."""

    def whole(name: str, table: pa.Table) -> pa.Table:
        return phases.full(name, table, nothing, {UNTOUCHED: 1})

    return recommendation.part(
        whole("group_metrics", base.group_metrics),
        whole("consumer_load", load),
        whole("movement", base.movement),
    )


def _touched_rows(base: Written, load: pa.Table, rows: Written, touched: pa.Table, scenario: str) -> Advised:
    """What the recommendation reads of ``scenario`` (group_metrics, group loads, movement,
    handover): the rows it wrote, with phase 0's rows of what it touched as its phase 0 (module
    doc). ``load``: phase 0's group loads."""
    mine = touched.filter(pc.equal(touched["scenario"], scenario))

    def with_phase_0(name: str, at_0: pa.Table, written: pa.Table) -> pa.Table:
        at_0 = phases.at_phase_0(name, at_0, mine, scenario)
        return pa.concat_tables([at_0.cast(written.schema), written])

    metrics = with_phase_0("group_metrics", base.group_metrics, rows.group_metrics)
    loads = with_phase_0("consumer_load", load, rollups.group_load(rows.consumer_load))
    return metrics, loads, rows.movement, rows.handover


def _part(rows: list[Advised]) -> recommendation.Part:
    """One part over several scenarios' rows (_touched_rows): each costs a few fixed-cost Arrow
    plans, whatever its rows."""
    handovers = [r[3] for r in rows if r[3] is not None]
    handover = pa.concat_tables(handovers) if handovers else None
    return recommendation.part(*(pa.concat_tables([r[i] for r in rows]) for i in range(3)), handover)


def _first_at_0(rows: pa.Table) -> pa.Table:
    """``rows`` of phase 0 of one scenario (the first by name): phase 0 is the snapshot in each."""
    at_0 = rows.filter(pc.equal(rows["phase"], 0))
    return at_0.filter(pc.equal(at_0["scenario"], pc.min(at_0["scenario"]))) if at_0.num_rows else at_0


def _sorted(table: pa.Table, keys: list[str]) -> pa.Table:
    return table.sort_by([(k, "ascending") for k in keys])


def _of(tables: Written, *, stale_views: bool, recommend: bool) -> Rollups:
    """rollups over ``tables``, every phase whole (comparison: only where they have movement)."""
    summary = rollups.summary(
        tables.group_metrics, tables.consumer_load, tables.unroutable, tables.falling_behind
    )
    brain = rollups.split_brain(tables.group_metrics) if stale_views else None
    if tables.movement is None:
        return Rollups(summary, split_brain=brain)
    comparison = rollups.comparison(summary, tables.movement, tables.handover)
    advice = None
    if recommend:
        load = rollups.group_load(tables.consumer_load)
        advice = recommendation.recommendation(tables.group_metrics, load, tables.movement, tables.handover)
    exposure = rollups.exposure(brain) if stale_views and recommend else None
    return Rollups(summary, comparison, advice, brain, exposure)


def _named(rolled: Rollups, scenario: str) -> Rollups:
    """Phase 0's summary and split_brain as ``scenario``'s."""

    brain = rolled.split_brain
    return Rollups(
        phases.relabelled(rolled.summary, scenario, {}),
        split_brain=None if brain is None else phases.relabelled(brain, scenario, {}),
    )


def _each(written: Written, rebuild) -> Written:
    def of(name: str) -> pa.Table | None:
        table = getattr(written, name)
        return None if table is None else rebuild(name, table)

    return Written(*(of(n) for n in TABLES))


def by_scenario(written: Written) -> Callable[[str | None], Written]:
    """rolled_up's ``read`` over tables read whole: each scenario's rows (phases.SNAPSHOT: phase
    0's; None: every row), the tables split once, each scenario's rows taken when asked for, in
    the order written."""
    split: dict[str, tuple[pa.Table, np.ndarray, dict[str, int]] | None] = {}
    for name in SPLIT:
        table = getattr(written, name)
        if table is None:
            split[name] = None
            continue
        encoded = pc.dictionary_encode(combined(table["scenario"]))
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        split[name] = (table, codes, {v: i for i, v in enumerate(encoded.dictionary.to_pylist())})

    def of(scenario: str | None) -> Written:
        if scenario is None:
            return written
        tables: dict[str, pa.Table | None] = {}
        for name, parts in split.items():
            if parts is None:
                tables[name] = None
                continue
            table, codes, code = parts
            tables[name] = table.take(pa.array(np.flatnonzero(codes == code.get(scenario, -1))))
        return Written(**tables)

    return of
