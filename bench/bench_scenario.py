"""Benchmark: a three-step scenario over the benchmark fleet, all six strategies, against its floor.

    .venv/bin/python bench/bench_scenario.py [--rows N] [--rounds 1] [--workdir bench/data]

One scenario (a broker goes down, a big topic halves its read queues, a group gains three
clients) is simulated in one run for every strategy: 4 phases x 6 strategies of assignments. The
floor is the same as bench_simulate.py's: read the run's assignments table and write it back. As
there, the figure to quote is the ratio, measured in one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from bench_simulate import MASTER, ensure_snapshot, floor_job, snapshot_dir, timed

from rmqsim import config, session, simulate
from rmqsim.strategies import ROCKETMQ_STRATEGIES


def write_scenario(snapshot: Path, path: Path) -> dict:
    """Three steps naming real parts of the generated fleet: its first broker, its biggest topic
    and its biggest group."""
    brokers = pq.read_table(snapshot / "brokers", columns=["broker_name"]).column(0).to_pylist()
    queues = pq.read_table(snapshot / "topic_queues").to_pandas()
    per_topic = queues.groupby("topic").read_queue_nums.max().sort_values(kind="stable")
    topic, most = per_topic.index[-1], int(per_topic.iloc[-1])
    groups = pq.read_table(snapshot / "consumers", columns=["group"]).to_pandas().group.value_counts()
    scenario = {
        "scenarios": [
            {
                "name": "bench-three-steps",
                "steps": [
                    {"broker_down": {"names": [sorted(brokers)[0]]}},
                    {"set_queue_nums": {"topics": [topic], "read_queue_nums": max(1, most // 2)}},
                    {"consumers_join": {"group": groups.index[0], "count": 3, "seed": 1}},
                ],
            }
        ]
    }
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return scenario


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="queue assignments per strategy and phase")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "data")
    args = p.parse_args()
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    snapshot = snapshot_dir(workdir, args.rows, args.seed)
    ensure_snapshot(snapshot, args.rows, args.seed)
    scenario_file = workdir / "bench-scenario.yml"
    scenario = write_scenario(snapshot, scenario_file)

    spark_conf = dict(config.load_profile("local").conf)
    spark = session.build_session(app_name="rmqsim-bench-scenario", master=MASTER, conf=spark_conf)
    out, floor_out = workdir / "scenario-out", workdir / "scenario-floor"
    cfg = config.SimulateConfig(
        snapshot=str(snapshot),
        out=str(out),
        strategies=ROCKETMQ_STRATEGIES,  # the six RocketMQ strategies (not rmqsim's own)
        scenarios=str(scenario_file),
    )
    floor = floor_job(spark, out / "assignments", floor_out)
    rounds = []
    try:
        for i in range(args.rounds + 1):  # the first is a warm-up
            sim_s = timed(lambda: simulate.run(spark, cfg))
            floor_s = timed(floor)
            if i:
                rounds.append((sim_s, floor_s))
            print(f"{'warm-up' if not i else f'round {i}'}: simulate {sim_s:.1f} s, floor {floor_s:.1f} s")
        rows = spark.read.parquet(str(out / "assignments")).count()
        moved = spark.read.parquet(str(out / "movement")).count()
    finally:
        spark.stop()
    sim = statistics.median(r[0] for r in rounds)
    flo = statistics.median(r[1] for r in rounds)
    print(f"scenario: {json.dumps(scenario['scenarios'][0]['steps'])}")
    print(f"assignment rows {rows}, movement rows {moved}")
    print(f"simulate {sim:.1f} s, floor {flo:.1f} s, ratio {sim / flo:.2f}")
    result = {
        "rows_requested": args.rows,
        "assignment_rows": rows,
        "movement_rows": moved,
        "rounds": rounds,
        "simulate_s": sim,
        "floor_s": flo,
        "ratio": sim / flo,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (workdir / "scenario-results.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
