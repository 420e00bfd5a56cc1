"""Benchmark: how simulate scales, and one huge group with Spark's default memory.

1. Linear growth: ``simulate.run`` on synthetic fleets of 1M and 10M queue assignments per strategy
   (strategies AVG and AVG_BY_CIRCLE, as bench_simulate.py), each beside its Parquet I/O floor, in
   one SparkSession (local[2], the ``local`` profile), after a warm-up on the 1M fleet. The figures
   to quote are the ratios: 10M / 1M time (at most 11 is the target), and each size against its floor.
2. One huge group: one topic with 200,000 queues (100 brokers x 2,000) read by one group of 2,000
   clients, simulated by `rmqsim simulate` in a subprocess with Spark's default driver memory
   (1g: in local mode the driver is the executor) under AVG, AVG_BY_CIRCLE, CONSISTENT_HASH and
   STICKY; the peak resident memory of the whole process tree (JVM and Python workers) is sampled
   from /proc.

    .venv/bin/python bench/bench_scale.py [--small 1000000] [--large 10000000] [--skip-linear] [--skip-huge]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_simulate import MASTER, STRATEGIES, ensure_snapshot, floor_job, simulate_job, snapshot_dir, timed

from rmqsim import config, schemas, session
from rmqsim.snapshot import write

HUGE_BROKERS, HUGE_QUEUES_PER_BROKER, HUGE_CLIENTS = 100, 2_000, 2_000
HUGE_STRATEGIES = "AVG,AVG_BY_CIRCLE,CONSISTENT_HASH,STICKY"


def linear(workdir: Path, sizes: Sequence[int]) -> dict:
    for rows in sizes:  # generated before Spark starts: numpy and the JVM would share 2 cores
        if ensure_snapshot(snapshot_dir(workdir, rows, 1), rows, 1):
            print(f"generated {snapshot_dir(workdir, rows, 1)}")
    spark = session.build_session(
        app_name="rmqsim-bench-scale", master=MASTER, conf=dict(config.load_profile("local").conf)
    )
    figures = {}
    try:
        out = workdir / "scale-out"
        warm = snapshot_dir(workdir, sizes[0], 1)
        timed(simulate_job(spark, warm, out, STRATEGIES))  # warm-up: JVM, JIT, Python workers
        for rows in sizes:
            sim_s = timed(simulate_job(spark, snapshot_dir(workdir, rows, 1), out, STRATEGIES))
            floor_s = timed(floor_job(spark, out / "assignments", workdir / "scale-floor"))
            count = spark.read.parquet(str(out / "assignments")).count()
            figures[rows] = {"simulate_s": sim_s, "floor_s": floor_s, "assignment_rows": count}
            print(
                f"{rows:>11,} requested: {count:>11,} rows  simulate {sim_s:7.1f} s  floor {floor_s:6.1f} s  "
                f"ratio {sim_s / floor_s:5.2f}"
            )
    finally:
        spark.stop()
    small, large = figures[sizes[0]], figures[sizes[-1]]
    growth = large["simulate_s"] / small["simulate_s"]
    rows_growth = large["assignment_rows"] / small["assignment_rows"]
    print(f"time grows {growth:.2f} x for {rows_growth:.2f} x the rows (target: at most 11 x for 10 x)")
    return {"sizes": figures, "time_growth": growth, "rows_growth": rows_growth}


def huge_snapshot(path: Path) -> Path:
    if path.is_dir():
        return path
    brokers = [f"broker-{i:03d}" for i in range(HUGE_BROKERS)]
    clients = [f"10.{i // 250}.{i % 250}.1@{4000 + i}" for i in range(HUGE_CLIENTS)]
    tables = {
        "brokers": write.arrow_table(
            schemas.BROKERS,
            {"broker_name": brokers, "broker_id": [0] * len(brokers), "alive": [True] * len(brokers)},
        ),
        "topic_queues": write.arrow_table(
            schemas.TOPIC_QUEUES,
            {
                "topic": ["huge"] * len(brokers),
                "broker_name": brokers,
                "read_queue_nums": [HUGE_QUEUES_PER_BROKER] * len(brokers),
                "write_queue_nums": [HUGE_QUEUES_PER_BROKER] * len(brokers),
                "perm": [6] * len(brokers),
            },
        ),
        "consumers": write.arrow_table(
            schemas.CONSUMERS,
            {
                "group": ["huge-consumer"] * len(clients),
                "topic": ["huge"] * len(clients),
                "client_id": clients,
            },
        ),
    }
    staging = path.with_name(path.name + ".tmp")
    write.write_snapshot(tables, str(staging))
    staging.rename(path)
    return path


def _tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def huge(workdir: Path) -> dict:
    snapshot = huge_snapshot(workdir / "snapshot-huge-group")
    out = workdir / "huge-out"
    command = [sys.executable, "-m", "rmqsim.cli", "simulate", "--snapshot", str(snapshot), "--out", str(out)]
    command += ["--strategies", HUGE_STRATEGIES, "--master", MASTER, "--conf", "spark.driver.memory=1g"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    start = time.perf_counter()
    run = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0
    while run.poll() is None:
        peak = max(peak, _tree_rss(run.pid))
        time.sleep(0.2)
    seconds = time.perf_counter() - start
    log = run.stdout.read()
    if run.returncode != 0:
        raise SystemExit(f"huge group run failed:\n{log[-4000:]}")
    print(
        f"huge group: {HUGE_BROKERS * HUGE_QUEUES_PER_BROKER:,} queues, {HUGE_CLIENTS:,} clients, "
        f"{HUGE_STRATEGIES}: {seconds:.1f} s, peak RSS of the process tree {peak / 2**20:,.0f} MiB "
        "(driver memory 1g)"
    )
    return {"seconds": seconds, "peak_rss_mib": peak / 2**20, "strategies": HUGE_STRATEGIES}


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", type=int, default=1_000_000)
    p.add_argument("--large", type=int, default=10_000_000)
    p.add_argument("--skip-linear", action="store_true")
    p.add_argument("--skip-huge", action="store_true")
    p.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "data")
    args = p.parse_args(argv)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = {}
    if not args.skip_huge:
        results["huge_group"] = huge(workdir)
    if not args.skip_linear:
        results["linear"] = linear(workdir, [args.small, args.large])
    (workdir / "bench_scale.json").write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
