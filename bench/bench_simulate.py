"""Benchmark: `rmqsim.simulate.run` against the Parquet I/O floor of its own output.

What is measured, per round, in one process and one SparkSession (local[2], the `local` profile):

* simulate: wall time of ``simulate.run`` on a synthetic fleet (strategies AVG and AVG_BY_CIRCLE),
  everything from reading the snapshot to publishing the output directory;
* floor: wall time of a Spark job that reads the run's ``assignments`` table and writes it back as
  Parquet elsewhere: the least a Spark job producing that many rows with those columns spends;
* the run's own I/O floor: the floor, plus every snapshot table the run reads, scanned, and every
  other table it wrote, written again from memory: the least a job reading those inputs and
  writing those outputs with Spark spends. (On a local output simulate's tasks write their tables
  with pyarrow, which costs less than Spark's writes: there simulate can come in under these
  floors.)
* the pyarrow floor: the run's assignments read and written back by pyarrow in this process, the
  floor for that comparison.

The figure to track is the ratio simulate / floor, not the seconds: these 2-core machines are noisy,
and a baseline measured in the same run, on the same data and JVM, cancels most of that noise.
A warm-up round keeps JVM, JIT and Python worker start-up out of the figures; the order of the two
jobs alternates between rounds so neither always profits from the other's warm caches.

    .venv/bin/python bench/bench_simulate.py [--rows N] [--rounds 3] [--workdir bench/data]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
from pyspark.sql import SparkSession

from rmqsim import build, config, schemas, session, simulate
from rmqsim.sink import open_sink
from rmqsim.snapshot import synthetic, write
from rmqsim.stage import tasks

MASTER = "local[2]"
STRATEGIES = ("AVG", "AVG_BY_CIRCLE")
Job = Callable[[], object]


@dataclass(frozen=True)
class Round:
    first: str  # which job ran first in this round
    simulate_s: float
    floor_s: float
    assignment_rows: int
    assignments_only_s: float  # the same run, writing only the client rows' tables
    allocation_s: float  # of which the allocation stage: checkpointed routes to written assignments
    run_floor_s: float  # the floor, every input table read, every other output written: run_floor_job
    arrow_floor_s: float  # the assignments read and written back by pyarrow in this process: arrow_floor_job

    @property
    def ratio(self) -> float:
        return self.simulate_s / self.floor_s


def snapshot_dir(workdir: Path, rows: int, seed: int) -> Path:
    return workdir / f"snapshot-v2-rows{rows}-seed{seed}"


def ensure_snapshot(path: Path, rows: int, seed: int) -> bool:
    """Generate the fleet unless it exists (it is deterministic for rows and seed); True if generated.

    Written beside the destination and renamed, so an interrupted generation is never reused."""
    if path.is_dir():
        return False
    staging = path.with_name(path.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    # Room-prefixed broker names and queue_config lists, so that MACHINE_ROOM and CONFIG have work.
    spec = synthetic.FleetSpec(seed=seed, assignments=rows, room_broker_names=True, queue_config=True)
    write.write_snapshot(synthetic.generate(spec), str(staging))
    staging.rename(path)
    return True


def timed(job: Job) -> float:
    start = time.perf_counter()
    job()
    return time.perf_counter() - start


def simulate_job(spark: SparkSession, snapshot: Path, out: Path, strategies: tuple[str, ...]) -> Job:
    cfg = config.SimulateConfig(snapshot=str(snapshot), out=str(out), strategies=strategies)
    return lambda: simulate.run(spark, cfg)


def assignments_only_job(
    spark: SparkSession, snapshot: Path, out: Path, strategies: tuple[str, ...]
) -> Callable[[], tuple[float, float]]:
    """Snapshot to the client rows' tables (assignments, group_metrics, consumer_load), no
    summary, rejects or rollups, timed in two parts: the checks and routes up to the checkpointed
    allocation input, then the allocation stage alone (the Python pass over the checkpointed
    routes and its tasks' writes): the part item 6 of issue 2 compares with the floor."""
    cfg = config.SimulateConfig(snapshot=str(snapshot), out=str(out), strategies=strategies)

    def job() -> tuple[float, float]:
        start = time.perf_counter()
        built = build.build_group_routes(spark, cfg)
        routed = time.perf_counter()
        write_client_tables(spark, simulate.stage_input(spark, built, cfg), out)
        return routed - start, time.perf_counter() - routed

    return job


def write_client_tables(spark: SparkSession, stage: tasks.StageInput, out: Path) -> None:
    """The allocation stage as simulate runs it on a local output: the routes handed to the tasks
    as files, each task writing its assignments, group_metrics and consumer_load into ``out`` (the
    arrow sink), in one Spark job."""
    sink = open_sink(spark, str(out), staged=False)
    sink.run_stage(stage, ("assignments", "group_metrics", "consumer_load"))


def local_conf(overrides: Sequence[str]) -> dict[str, str]:
    """The local profile's Spark settings, with ``KEY=VALUE`` overrides."""
    return {**config.load_profile("local").conf, **dict(c.split("=", 1) for c in overrides)}


def floor_job(spark: SparkSession, source: Path, dest: Path) -> Job:
    # Reads whichever run published last: every run of a snapshot writes the same rows.
    return lambda: spark.read.parquet(str(source)).write.mode("overwrite").parquet(str(dest))


def arrow_floor_job(source: Path, dest: Path) -> Job:
    """The assignments table read and written back partitioned by pyarrow, in this process: a floor
    for runs whose tasks write their tables with pyarrow, as simulate's do on a local output."""

    def job() -> None:
        hive = ds.partitioning(pa.schema([(c, pa.string()) for c in schemas.PARTITIONED_BY]), flavor="hive")
        table = ds.dataset(str(source), format="parquet", partitioning=hive).to_table()
        ds.write_dataset(
            table, str(dest), format="parquet", partitioning=hive, existing_data_behavior="delete_matching"
        )

    return job


def run_floor_job(
    spark: SparkSession, cfg: config.SimulateConfig, out: Path, dest: Path
) -> Callable[[], float]:
    """The I/O floor of the whole run, not only of its largest table, in seconds: the assignments
    floor (measured in the same round and added by run_round) plus reading every snapshot table
    the run reads, as the run reads it (pyarrow, for a local snapshot), and a write of every other
    table the run wrote, from memory (cached before the clock starts, so reading them back is not
    counted), one Spark job per table as the contract's separate tables need: the least a job
    writing the contract's outputs with Spark spends."""

    def job() -> float:
        others = [p.name for p in sorted(out.iterdir()) if p.is_dir() and p.name != "assignments"]
        tables = {name: spark.read.parquet(str(out / name)).cache() for name in others}
        try:
            for df in tables.values():
                df.count()
            start = time.perf_counter()
            build.snapshot_read(spark, cfg)  # every table the run reads, read as the run reads it
            for name, df in tables.items():
                df.write.mode("overwrite").parquet(str(dest / name))
            return time.perf_counter() - start
        finally:
            for df in tables.values():
                df.unpersist()

    return job


def run_round(
    index: int,
    sim: Job,
    floor: Job,
    assign: Callable[[], tuple[float, float]],
    count: Callable[[], int],
    run_floor: Callable[[], float],
    arrow_floor: Job,
) -> Round:
    if index % 2 == 0:
        sim_s = timed(sim)
        floor_s = timed(floor)
    else:
        floor_s = timed(floor)
        sim_s = timed(sim)
    rows = count()
    routes_s, allocation_s = assign()
    return Round(
        "simulate" if index % 2 == 0 else "floor",
        sim_s,
        floor_s,
        rows,
        routes_s + allocation_s,
        allocation_s,
        floor_s + run_floor(),
        timed(arrow_floor),
    )


def summarize(rounds: Sequence[Round]) -> dict[str, float]:
    sim = statistics.median(r.simulate_s for r in rounds)
    floor = statistics.median(r.floor_s for r in rounds)
    assign = statistics.median(r.assignments_only_s for r in rounds)
    stage = statistics.median(r.allocation_s for r in rounds)
    run_floor = statistics.median(r.run_floor_s for r in rounds)
    arrow_floor = statistics.median(r.arrow_floor_s for r in rounds)
    return {
        "simulate_s": sim,
        "floor_s": floor,
        "ratio": sim / floor,
        "assignments_only_s": assign,
        "assignments_only_ratio": assign / floor,
        "allocation_s": stage,
        "allocation_ratio": stage / floor,
        "run_floor_s": run_floor,
        "run_floor_ratio": run_floor / floor,
        "simulate_over_run_floor": sim / run_floor,
        "arrow_floor_s": arrow_floor,
        "simulate_over_arrow_floor": sim / arrow_floor,
    }


def format_table(rounds: Sequence[Round], median: dict[str, float], rows: int) -> str:
    lines = [f"{'round':<8}{'first':<10}{'simulate s':>12}{'floor s':>10}{'ratio':>8}"]
    lines += [
        f"{i:<8}{r.first:<10}{r.simulate_s:>12.2f}{r.floor_s:>10.2f}{r.ratio:>8.2f}"
        for i, r in enumerate(rounds, 1)
    ]
    lines.append(f"{'median':<18}{median['simulate_s']:>12.2f}{median['floor_s']:>10.2f}")
    lines.append(f"ratio of medians: {median['ratio']:.2f}")
    lines.append(
        f"assignments only (snapshot to the client tables): {median['assignments_only_s']:.2f} s, "
        f"{median['assignments_only_ratio']:.2f} x the floor"
    )
    lines.append(
        f"of which the allocation stage (checkpointed routes to written assignments): "
        f"{median['allocation_s']:.2f} s, {median['allocation_ratio']:.2f} x the floor"
    )
    lines.append(
        f"the run's own I/O floor (the floor, every input read, every other output written): "
        f"{median['run_floor_s']:.2f} s, "
        f"{median['run_floor_ratio']:.2f} x the floor; simulate / run I/O floor: "
        f"{median['simulate_over_run_floor']:.2f}"
    )
    lines.append(
        f"the pyarrow floor (the assignments read and written back by pyarrow): "
        f"{median['arrow_floor_s']:.2f} s; "
        f"simulate / pyarrow floor: {median['simulate_over_arrow_floor']:.2f}"
    )
    lines.append(f"assignment rows:  {rows}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="queue assignments per strategy")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated, or all")
    p.add_argument("--each", action="store_true", help="one measurement per strategy, not one for all")
    p.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "data")
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting over the local profile",
    )
    args = p.parse_args(argv)
    if args.rows < 1 or args.rounds < 1:
        p.error("--rows and --rounds must be positive")
    args.strategies = config.parse_strategies(args.strategies)
    return args


def measure(
    spark: SparkSession, snapshot: Path, workdir: Path, strategies: tuple[str, ...], rounds: int
) -> dict:
    out, floor_out = workdir / "out", workdir / "floor"
    sim = simulate_job(spark, snapshot, out, strategies)
    floor = floor_job(spark, out / "assignments", floor_out)
    assign = assignments_only_job(spark, snapshot, workdir / "assignments-only", strategies)
    cfg = config.SimulateConfig(snapshot=str(snapshot), out=str(out), strategies=strategies)
    run_floor = run_floor_job(spark, cfg, out, workdir / "run-floor")
    arrow_floor = arrow_floor_job(out / "assignments", workdir / "arrow-floor")

    def count() -> int:
        return spark.read.parquet(str(out / "assignments")).count()

    run_round(0, sim, floor, assign, count, run_floor, arrow_floor)  # warm-up, not reported
    measured = [run_round(i, sim, floor, assign, count, run_floor, arrow_floor) for i in range(rounds)]
    rows = measured[-1].assignment_rows
    if any(r.assignment_rows != rows for r in measured):
        raise SystemExit(f"assignment rows changed between rounds: {[r.assignment_rows for r in measured]}")
    median = summarize(measured)
    print(f"\nstrategies: {','.join(strategies)}")
    print(format_table(measured, median, rows))
    return {
        "strategies": list(strategies),
        "assignment_rows": rows,
        "rounds": [{**asdict(r), "ratio": r.ratio} for r in measured],
        "median": median,
    }


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    workdir: Path = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    snapshot = snapshot_dir(workdir, args.rows, args.seed)
    # Generate before Spark starts: numpy and the JVM would otherwise compete for the 2 cores.
    if ensure_snapshot(snapshot, args.rows, args.seed):
        print(f"generated {snapshot}")

    spark_conf = local_conf(args.conf)
    spark = session.build_session(app_name="rmqsim-bench", master=MASTER, conf=spark_conf)
    sets = [(s,) for s in args.strategies] if args.each else [args.strategies]
    try:
        measurements = [measure(spark, snapshot, workdir, strategies, args.rounds) for strategies in sets]
        spark_version = spark.version
    finally:
        spark.stop()

    if len(measurements) > 1:
        print(
            "\nper strategy: simulate / floor, assignments only / floor, allocation stage / floor (medians)"
        )
        for m in measurements:
            med = m["median"]
            print(
                f"  {m['strategies'][0]:<22}{med['ratio']:>6.2f}{med['assignments_only_ratio']:>8.2f}"
                f"{med['allocation_ratio']:>8.2f}"
            )
    results = {
        "rows_requested": args.rows,
        "seed": args.seed,
        "measurements": measurements,
        "spark": {"version": spark_version, "master": MASTER, "conf": spark_conf},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "node": platform.node()},
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (workdir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"results in {workdir / 'results.json'}")


if __name__ == "__main__":
    main()
