"""Benchmark: the two sinks on one fleet, in one session: the arrow sink (a local run's path) and
the Spark sink (the path of a cluster, Spark Connect or a remote output), alternated.

    .venv/bin/python bench/bench_sinks.py [--assignments 1000000] [--rounds 3] [--seed 3]
                                          [--workdir bench/data]

The fleet is bench_fleet.py's (generated into WORKDIR and reused). Each round runs
``simulate.run`` with ``--strategies AVG`` once per sink, in a session built as the CLI builds it
(the local profile, local[*]), the first sink rotating. Printed: each run's seconds, and per sink
the median; spark / arrow of the medians is the figure to compare between commits (run this
script at each, e.g. with PYTHONPATH=<a worktree of the other commit>): what the Spark sink's
hand-over and writes cost against the local path, which both share every other step with.
No timing is asserted: these 2-core machines are noisy.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

import bench_fleet

from rmqsim import config, session, simulate

SINKS = ("arrow", "spark")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--assignments", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "data")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    spec = bench_fleet.fleet_spec(args.assignments, args.seed)
    work = bench_fleet.fleet_dir(args.workdir.resolve(), spec)
    snapshot = work / "snapshot"
    bench_fleet.ensure_fleet(snapshot, spec)
    spark = session.build_session(
        app_name="rmqsim-bench-sinks", master="local[*]", conf=dict(config.load_profile("local").conf)
    )
    seconds: dict[str, list[float]] = {sink: [] for sink in SINKS}
    for round_ in range(args.rounds):
        order = SINKS[round_ % 2 :] + SINKS[: round_ % 2]
        for sink in order:
            out = work / f"sinks-{sink}"
            shutil.rmtree(out, ignore_errors=True)
            run = config.SimulateConfig(snapshot=str(snapshot), out=str(out), strategies=("AVG",), sink=sink)
            start = time.perf_counter()
            simulate.run(spark, run)
            seconds[sink].append(time.perf_counter() - start)
            print(f"round {round_ + 1} {sink}: {seconds[sink][-1]:.2f} s", flush=True)
    medians = {sink: statistics.median(values) for sink, values in seconds.items()}
    for sink in SINKS:
        print(f"{sink}: median {medians[sink]:.2f} s ({', '.join(f'{s:.2f}' for s in seconds[sink])})")
    print(f"spark / arrow (medians): {medians['spark'] / medians['arrow']:.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
