"""Benchmark: a sweep of every broker's loss, and the same losses as plain scenarios, against the
fleet alone (issue 44; docs/CONTRACT.md, sections 2f and 4). Whole processes, alternated.

    .venv/bin/python bench/bench_sweep.py [--assignments 2000000] [--brokers 24] [--rounds 2]
                                          [--seed 3] [--workdir bench/data] [--no-plain]

The fleet is bench_fleet.py's many-small-groups shape with ``--brokers`` brokers (generated once
into WORKDIR and reused). Each round runs, as fresh processes, `rmqsim simulate --strategies AVG`:

* fleet alone: no scenarios;
* sweep: a scenarios file with one sweep, ``{name: broker-loss, each: broker_down, of: all}``;
* plain: one scenario per broker, each a single ``broker_down`` (left out with --no-plain).

Each is timed (wall) and its peak memory measured two ways: the driver's Python process alone
(``ru_maxrss`` of the process that runs rmqsim's CLI; the JVM and the Python workers are its
children) and the largest process of the run (GNU time's %M: the JVM, usually). Printed: per
round, then best of the rounds and each run's ratio to the fleet alone. No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path

import bench_fleet
import pyarrow.dataset as ds

# Runs rmqsim's CLI in this process and prints the process's own peak RSS (children excluded).
DRIVER = """
import resource, sys
from rmqsim import cli
code = cli.main(sys.argv[1:])
print("driver_peak_kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def measured(argv: list[str]) -> dict[str, float]:
    """Wall seconds, the driver's peak RSS and the largest process's peak RSS (GB) of one run."""
    seconds, done = bench_fleet.ran(argv)
    driver = next(
        int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("driver_peak_kb")
    )
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest so far, any run
    return {"wall_s": seconds, "driver_gb": driver / 2**20, "largest_so_far_gb": children / 2**20}


def fleet(assignments: int, seed: int, workdir: Path) -> tuple[Path, Path]:
    """bench_fleet's fleet of this size and seed (bench_fleet.SHAPE), generated once: its
    directory and its snapshot."""
    spec = bench_fleet.fleet_spec(assignments, seed)
    work = bench_fleet.fleet_dir(workdir.resolve(), spec)
    snapshot = work / "snapshot"
    work.mkdir(parents=True, exist_ok=True)
    if bench_fleet.ensure_fleet(snapshot, spec):
        print(f"generated {snapshot}")
    return work, snapshot


def alternated(jobs: dict[str, list[str]], rounds: int) -> tuple[list[dict], dict[str, dict[str, float]]]:
    """Each job run ``rounds`` times as a fresh process, the order rotated every round (each
    round printed); every round's figures, and each job's best wall time and driver peak."""
    out = []
    for i in range(rounds):
        order = list(jobs)[i % len(jobs) :] + list(jobs)[: i % len(jobs)]
        figures = {name: measured(jobs[name]) for name in order}
        out.append(figures)
        print(
            f"round {i + 1} ({order[0]} first): "
            + ", ".join(
                f"{n} {figures[n]['wall_s']:.1f} s, driver {figures[n]['driver_gb']:.2f} GB" for n in jobs
            ),
            flush=True,
        )
    best = {name: {k: min(r[name][k] for r in out) for k in ("wall_s", "driver_gb")} for name in jobs}
    return out, best


def print_best(best: dict[str, dict[str, float]]) -> None:
    """Each job's best against the first job's (the fleet alone)."""
    alone = next(iter(best.values()))
    for name, figures in best.items():
        print(
            f"  {name:<12} {figures['wall_s']:6.1f} s ({figures['wall_s'] / alone['wall_s']:.2f}x), "
            f"driver peak {figures['driver_gb']:.2f} GB ({figures['driver_gb'] / alone['driver_gb']:.2f}x)"
        )


def scenario_files(work: Path, brokers: list[str]) -> tuple[Path, Path]:
    sweep = work / "sweep-brokers.yml"
    sweep.write_text("sweeps:\n  - {name: broker-loss, each: broker_down, of: all}\n")
    plain = work / "plain-brokers.yml"
    plain.write_text(
        "scenarios:\n"
        + "".join(f"  - name: down-{b}\n    steps:\n      - broker_down: {{names: [{b}]}}\n" for b in brokers)
    )
    return sweep, plain


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--assignments", type=int, default=2_000_000)
    p.add_argument("--brokers", type=int, default=24)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "data")
    p.add_argument("--no-plain", action="store_true", help="leave out the plain scenarios")
    args = p.parse_args()
    bench_fleet.SHAPE["brokers"] = args.brokers
    work, snapshot = fleet(args.assignments, args.seed, args.workdir)
    brokers = sorted(
        set(
            ds.dataset(str(snapshot / "brokers")).to_table(columns=["broker_name"])["broker_name"].to_pylist()
        )
    )
    sweep, plain = scenario_files(work, brokers)
    base = [sys.executable, "-c", DRIVER, "simulate", "--snapshot", str(snapshot), "--strategies", "AVG"]
    jobs = {
        "fleet alone": [*base, "--out", str(work / "out-alone")],
        "sweep": [*base, "--scenarios", str(sweep), "--out", str(work / "out-sweep")],
    }
    if not args.no_plain:
        jobs["plain"] = [*base, "--scenarios", str(plain), "--out", str(work / "out-plain")]
    rounds, best = alternated(jobs, args.rounds)
    print(f"{len(brokers)} brokers; best of {len(rounds)}:")
    print_best(best)
    largest = max(f["largest_so_far_gb"] for figures in rounds for f in figures.values())
    print(f"  largest process of any run: {largest:.2f} GB")
    out = {"brokers": len(brokers), "assignments": args.assignments, "rounds": rounds, "best": best}
    (work / "sweep-results.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"results in {work / 'sweep-results.json'}")


if __name__ == "__main__":
    main()
