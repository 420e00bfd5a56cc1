"""Benchmark: a small what-if, whole processes, against a process that only reads and writes.

    .venv/bin/python bench/bench_small.py [--rounds 3] [--workdir bench/data/small]

The what-if is the size of the tests' scenario fleets: 3 brokers, 2 groups (one AVG, one
CONSISTENT_HASH), 7 consumer rows, and a scenario of three steps (a broker goes down and returns,
a client joins). Each round times, as fresh processes started the way a user starts them:

* simulate: ``rmqsim simulate --snapshot S --scenarios F --out O`` (the CLI, local profile);
* floor: a Python process that starts Spark with the same profile, reads the snapshot's four
  tables and writes each back as Parquet: start-up plus the least I/O any run of this snapshot does;
* contract floor: the floor, plus what any Spark implementation of the contract must add on this
  run whatever its logic: a Python (Arrow) task, and as many output tables as simulate writes (nine
  here: the four tables, the Python task's output, and a row count of each of the four).

With ``--prelude-given``, a fourth process (bench/prelude.py): simulate with its prelude (checks,
scenario steps, route building) read from a run of it kept before the rounds, so that simulate less
it is what the prelude costs.

The processes rotate which goes first. The figure to quote is the ratio of the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import prelude
import yaml

from rmqsim import schemas
from rmqsim.snapshot import write

TABLES = ("brokers", "topic_queues", "consumers", "groups")

FLOOR = """
import sys
from rmqsim import config, session
snapshot, out = sys.argv[1], sys.argv[2]
spark = session.build_session(
    app_name="rmqsim-floor", master="local[*]", conf=dict(config.load_profile("local").conf)
)
for table in {tables!r}:
    spark.read.parquet(f"{{snapshot}}/{{table}}").write.mode("overwrite").parquet(f"{{out}}/{{table}}")
spark.stop()
"""

CONTRACT_FLOOR = """
import sys
from pyspark.sql import functions as F
from rmqsim import config, session
snapshot, out = sys.argv[1], sys.argv[2]
spark = session.build_session(
    app_name="rmqsim-contract-floor", master="local[*]", conf=dict(config.load_profile("local").conf)
)
for table in {tables!r}:
    df = spark.read.parquet(f"{{snapshot}}/{{table}}")
    df.write.mode("overwrite").parquet(f"{{out}}/{{table}}")
    df.agg(F.count(F.lit(1)).alias("rows")).write.mode("overwrite").parquet(f"{{out}}/{{table}}_rows")
consumers = spark.read.parquet(f"{{snapshot}}/consumers")
passed = consumers.mapInArrow(lambda batches: batches, consumers.schema)
passed.write.mode("overwrite").parquet(f"{{out}}/python_pass")
spark.stop()
"""

SCENARIO = {
    "scenarios": [
        {
            "name": "broker-a-restarts-and-a-client-joins",
            "steps": [
                {"broker_down": {"names": ["broker-a"]}},
                {"broker_up": {"names": ["broker-a"]}},
                {"consumers_join": {"group": "orders-consumer", "client_ids": ["10.0.0.9@9"]}},
            ],
        }
    ]
}


def write_small(snapshot: Path) -> None:
    brokers = ["broker-a", "broker-b", "broker-c"]
    clients = {
        "orders-consumer": ["10.0.0.1@1", "10.0.0.2@2", "10.0.0.3@3"],
        "audit-consumer": ["10.0.1.1@1", "10.0.1.2@2", "10.0.1.3@3", "10.0.1.4@4"],
    }
    topics = {"orders-consumer": "orders", "audit-consumer": "audit"}
    queue_rows = [(t, b) for t in ("orders", "audit") for b in brokers]
    consumer_rows = [(g, topics[g], c) for g, cs in clients.items() for c in cs]
    tables = {
        "brokers": write.arrow_table(
            schemas.BROKERS,
            {"broker_name": brokers, "broker_id": [0] * 3, "machine_room": ["hz-a"] * 3, "alive": [True] * 3},
        ),
        "topic_queues": write.arrow_table(
            schemas.TOPIC_QUEUES,
            {
                "topic": [t for t, _ in queue_rows],
                "broker_name": [b for _, b in queue_rows],
                "read_queue_nums": [4] * len(queue_rows),
                "write_queue_nums": [4] * len(queue_rows),
                "perm": [6] * len(queue_rows),
            },
        ),
        "consumers": write.arrow_table(
            schemas.CONSUMERS,
            {
                "group": [r[0] for r in consumer_rows],
                "topic": [r[1] for r in consumer_rows],
                "client_id": [r[2] for r in consumer_rows],
            },
        ),
        "groups": write.arrow_table(
            schemas.GROUPS, {"group": list(clients), "strategy": ["AVG", "CONSISTENT_HASH"]}
        ),
    }
    write.write_snapshot(tables, str(snapshot))


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "data" / "small")
    p.add_argument("--prelude-given", action="store_true", help="also time simulate without its prelude")
    args = p.parse_args()
    work = args.workdir.resolve()
    snapshot, scenarios = work / "snapshot", work / "scenarios.yml"
    work.mkdir(parents=True, exist_ok=True)
    write_small(snapshot)
    scenarios.write_text(yaml.safe_dump(SCENARIO, sort_keys=False))
    rmqsim = str(Path(sys.executable).parent / "rmqsim")
    simulate = ["simulate", "--snapshot", str(snapshot), "--scenarios", str(scenarios)]
    jobs = {
        "simulate": [rmqsim, *simulate, "--out", str(work / "out")],
        "floor": [sys.executable, "-c", FLOOR.format(tables=TABLES), str(snapshot), str(work / "floor")],
        "contract floor": [
            sys.executable,
            "-c",
            CONTRACT_FLOOR.format(tables=TABLES),
            str(snapshot),
            str(work / "contract-floor"),
        ],
    }
    if args.prelude_given:
        prelude.save(work / "prelude", snapshot=snapshot, scenarios=scenarios, strategies="configured")
        jobs["prelude given"] = prelude.given(work / "prelude", [*simulate, "--out", str(work / "given")])
    rounds = []
    for i in range(args.rounds):
        order = list(jobs)[i % len(jobs) :] + list(jobs)[: i % len(jobs)]
        seconds = {name: timed(jobs[name]) for name in order}
        rounds.append(seconds)
        print(
            f"round {i + 1}: "
            + ", ".join(f"{n} {seconds[n]:.1f} s" for n in jobs)
            + f", simulate / floor {seconds['simulate'] / seconds['floor']:.2f}"
        )
    medians = {n: statistics.median(r[n] for r in rounds) for n in jobs}
    print("medians: " + ", ".join(f"{n} {s:.1f} s" for n, s in medians.items()))
    print(
        f"simulate / floor {medians['simulate'] / medians['floor']:.2f}, "
        f"contract floor / floor {medians['contract floor'] / medians['floor']:.2f}"
    )
    if args.prelude_given:
        print(
            f"prelude given / floor {medians['prelude given'] / medians['floor']:.2f}; "
            f"the prelude: {medians['simulate'] - medians['prelude given']:.1f} s of simulate's median"
        )
    result = {"rounds": rounds, "medians": medians, "ratio": medians["simulate"] / medians["floor"]}
    (work / "results.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
