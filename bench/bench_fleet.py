"""Benchmark: `rmqsim simulate` on a many-small-groups fleet, whole processes, against a process
that only reads and writes the run's assignments.

    .venv/bin/python bench/bench_fleet.py [--assignments 2000000] [--rounds 2] [--seed 3]
                                          [--workdir bench/data] [--producers] [--capacities]

The fleet is issue 23's shape: 24 brokers, topics of 8 to 96 queues on 2 to 6 of them, each read by
1 to 3 groups of 2 to 12 clients (``rmqsim generate --brokers 24 --queues-per-topic 8:96
--brokers-per-topic 2:6 --groups-per-topic 1:3 --clients-per-group 2:12``); 2,000,000 assignments
make about 57,000 groups. It is generated in this process, before any JVM starts, into
WORKDIR/fleet-<options>/snapshot and reused when it is there (it is deterministic for its options).
Each round times, as fresh processes started the way a user starts them:

* simulate: ``rmqsim simulate --snapshot S --out O --strategies AVG`` (the CLI, local profile);
* floor: a Python process that starts Spark as the CLI does (the local profile, local[*]), reads the
  simulate run's own O/assignments and writes it back as Parquet: start-up plus the least a Spark
  job writing that many assignment rows spends (simulate's tasks write theirs with pyarrow).

With ``--producers``, another process: the same simulate on the same fleet with producers on every
topic (``rmqsim generate --producers``: WORKDIR/fleet-<options>/snapshot-producers), so that the
cost of where the messages go (docs/CONTRACT.md, section 2c) reads as with / without. With
``--capacities``, likewise with producers and a capacity for every client (``rmqsim generate
--capacities``, section 2d: WORKDIR/fleet-<options>/snapshot-capacities).

With ``--prelude-given``, a third process (bench/prelude.py): simulate with its prelude (checks
and route building) read from a run of it kept before the rounds; simulate less it is what the
prelude costs.

The processes rotate which goes first (simulate in the first round, so the floor always has its
table).
Printed: per round the seconds and simulate / floor; then best of (fastest simulate / fastest floor)
and median (median simulate / median floor). WORKDIR/fleet-<options>/results.json keeps them,
beside the run's out/ and floor/ (not in WORKDIR itself, where bench_simulate.py writes its own).
No timing is asserted: these 2-core machines are noisy, and the ratio is the figure to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import prelude
import pyarrow.dataset as ds

from rmqsim.snapshot import synthetic, synthetic_traffic, write

SHAPE = {
    "brokers": 24,
    "queues_per_topic": (8, 96),
    "brokers_per_topic": (2, 6),
    "groups_per_topic": (1, 3),
    "clients_per_group": (2, 12),
}

FLOOR = """
import sys
from rmqsim import config, session
source, dest = sys.argv[1], sys.argv[2]
spark = session.build_session(
    app_name="rmqsim-floor", master="local[*]", conf=dict(config.load_profile("local").conf)
)
spark.read.parquet(source).write.mode("overwrite").parquet(dest)
spark.stop()
"""


def fleet_spec(assignments: int, seed: int) -> synthetic.FleetSpec:
    return synthetic.FleetSpec(seed=seed, assignments=assignments, **SHAPE)


def fleet_dir(workdir: Path, spec: synthetic.FleetSpec) -> Path:
    """WORKDIR/fleet-assignments2000000-seed3-brokers24-queuespertopic8-96-brokerspertopic2-6-...
    (each range as MIN-MAX: Hadoop paths refuse colons)."""
    ranges = [f"{name.replace('_', '')}{low}-{high}" for name, (low, high) in list(SHAPE.items())[1:]]
    options = [f"assignments{spec.assignments}", f"seed{spec.seed}", f"brokers{spec.brokers}", *ranges]
    return workdir / f"fleet-{'-'.join(options)}"


def ensure_fleet(
    snapshot: Path, spec: synthetic.FleetSpec, *, producers: bool = False, capacities: bool = False
) -> bool:
    """Generate the fleet (with ``producers``: and its producers; with ``capacities``: and its
    producers and capacities) unless it exists; True if
    generated. Written beside the destination and renamed, so an interrupted generation is never
    reused."""
    if snapshot.is_dir():
        return False
    staging = snapshot.with_name(snapshot.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    tables = synthetic.generate(spec)
    if producers or capacities:
        tables = synthetic_traffic.with_producers(tables, spec.seed)
    if capacities:
        tables = synthetic_traffic.with_capacities(tables, spec.seed)
    write.write_snapshot(tables, str(staging))
    staging.rename(snapshot)
    return True


def ran(argv: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    """The wall seconds of a process that must succeed, and what it printed."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"exit code {done.returncode}: {' '.join(argv[:2])} ...")
    return seconds, done


def timed(argv: list[str]) -> float:
    return ran(argv)[0]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--assignments", type=int, default=2_000_000, help="about this many queue assignments")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "data")
    p.add_argument("--prelude-given", action="store_true", help="also time simulate without its prelude")
    p.add_argument("--producers", action="store_true", help="also time simulate on the fleet with producers")
    p.add_argument(
        "--capacities",
        action="store_true",
        help="also time simulate on the fleet with producers and capacities",
    )
    args = p.parse_args()
    if args.assignments < 1 or args.rounds < 1:
        p.error("--assignments and --rounds must be positive")
    return args


def main() -> None:
    args = parse_args()
    spec = fleet_spec(args.assignments, args.seed)
    work = fleet_dir(args.workdir.resolve(), spec)
    snapshot, out, floor = work / "snapshot", work / "out", work / "floor"
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if ensure_fleet(snapshot, spec):
        print(f"generated {snapshot} in {time.perf_counter() - start:.1f} s")
    sizes = {t: ds.dataset(str(snapshot / t)).count_rows() for t in ("topic_queues", "consumers", "groups")}
    print("fleet: " + ", ".join(f"{table} {rows:,} rows" for table, rows in sizes.items()))

    simulate = ["simulate", "--snapshot", str(snapshot), "--strategies", "AVG"]
    jobs = {
        "simulate": [str(Path(sys.executable).parent / "rmqsim"), *simulate, "--out", str(out)],
        "floor": [sys.executable, "-c", FLOOR, str(out / "assignments"), str(floor)],
    }
    if args.producers:
        with_producers = work / "snapshot-producers"
        if ensure_fleet(with_producers, spec, producers=True):
            print(f"generated {with_producers}")
        flags = [
            "simulate",
            "--snapshot",
            str(with_producers),
            "--strategies",
            "AVG",
            "--out",
            str(work / "out-producers"),
        ]
        jobs["with producers"] = [str(Path(sys.executable).parent / "rmqsim"), *flags]
    if args.capacities:
        with_capacities = work / "snapshot-capacities"
        if ensure_fleet(with_capacities, spec, capacities=True):
            print(f"generated {with_capacities}")
        flags = ["simulate", "--snapshot", str(with_capacities), "--strategies", "AVG"]
        flags += ["--out", str(work / "out-capacities")]
        jobs["with capacities"] = [str(Path(sys.executable).parent / "rmqsim"), *flags]
    if args.prelude_given:
        prelude.save(work / "prelude", snapshot=snapshot, scenarios=None, strategies="AVG")
        jobs["prelude given"] = prelude.given(work / "prelude", [*simulate, "--out", str(work / "given")])
    rounds = []
    for i in range(args.rounds):
        order = list(jobs)[i % len(jobs) :] + list(jobs)[: i % len(jobs)]
        seconds = {name: timed(jobs[name]) for name in order}
        rounds.append({"first": order[0], **seconds, "ratio": seconds["simulate"] / seconds["floor"]})
        print(
            f"round {i + 1} ({order[0]} first): "
            + ", ".join(f"{name} {seconds[name]:.1f} s" for name in jobs)
            + f", ratio {rounds[-1]['ratio']:.2f}"
        )
    rows = ds.dataset(str(out / "assignments"), partitioning="hive").count_rows()
    best = {name: min(r[name] for r in rounds) for name in jobs}
    median = {name: statistics.median(r[name] for r in rounds) for name in jobs}
    print(f"assignment rows: {rows:,}")
    if args.prelude_given:
        print(
            f"median: prelude given {median['prelude given']:.1f} s, "
            f"prelude given / floor {median['prelude given'] / median['floor']:.2f}; "
            f"the prelude: {median['simulate'] - median['prelude given']:.1f} s of simulate's median"
        )
    if args.producers:
        print(
            f"median: with producers {median['with producers']:.1f} s, "
            f"with / without {median['with producers'] / median['simulate']:.2f}; "
            f"best of {len(rounds)}: {best['with producers'] / best['simulate']:.2f}"
        )
    if args.capacities:
        print(
            f"median: with capacities {median['with capacities']:.1f} s, "
            f"with / without {median['with capacities'] / median['simulate']:.2f}; "
            f"best of {len(rounds)}: {best['with capacities'] / best['simulate']:.2f}"
        )
    print(
        f"best of {len(rounds)}: simulate {best['simulate']:.1f} s, floor {best['floor']:.1f} s, "
        f"ratio {best['simulate'] / best['floor']:.2f}"
    )
    print(
        f"median: simulate {median['simulate']:.1f} s, floor {median['floor']:.1f} s, "
        f"ratio {median['simulate'] / median['floor']:.2f}"
    )
    results = {
        "fleet": {
            "snapshot": str(snapshot),
            "seed": spec.seed,
            "assignments_requested": spec.assignments,
            **{k: list(v) if isinstance(v, tuple) else v for k, v in SHAPE.items()},
            "rows": sizes,
        },
        "assignment_rows": rows,
        "rounds": rounds,
        "best": {**best, "ratio": best["simulate"] / best["floor"]},
        "median": {**median, "ratio": median["simulate"] / median["floor"]},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "node": platform.node()},
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"results in {work / 'results.json'}")


if __name__ == "__main__":
    main()
