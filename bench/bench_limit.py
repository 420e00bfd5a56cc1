"""Benchmark: `rmqsim simulate` against its limit, a bare Spark session plus the peer's arithmetic.

    .venv/bin/python bench/bench_limit.py [--sizes 2m,10m] [--rounds 2] [--linearity] [--check]
                                          [--workdir bench/data] [--no-warm-up]

Issue 35: a run on Spark cannot take less than a bare Spark session (bench/bare_session.py: start
as the CLI does, one tiny job, stop), and the assignments of the whole fleet take what bench/peer.py,
a one-process pyarrow + numpy script, takes on one core. So simulate / (bare session + peer) is how
far a run is from its limit. Each round times three fresh processes, started as a user starts them:

* simulate: ``rmqsim simulate --snapshot S --out O --strategies AVG`` (the CLI, local profile);
* peer: ``python bench/peer.py S O2`` (the same assignment rows, nothing else);
* bare session: ``python bench/bare_session.py``.

Rounds rotate which goes first (simulate in the first). Before the first round, one untimed bare
session (unless ``--no-warm-up``) reads Spark's jars into the page cache, which the first process
of a cold machine would otherwise pay alone.

The fleets are the many-small-groups shape of bench_fleet.py (24 brokers, topics of 8 to 96 queues
on 2 to 6 of them, 1 to 3 groups a topic, 2 to 12 clients a group), generated into WORKDIR as
bench_fleet.py does and reused:

* ``2m``: bench_fleet.py's default fleet (seed 3: 1,988,132 assignments, 57,371 groups). Issue 35's
  2,000,116 assignments in 59,170 groups come from issue 23's fleet, made before ``rmqsim generate``
  had this shape: no seed of today's generator gives those counts (seeds 1 to 5 give 57,319 to
  57,466 groups);
* ``10m``: ``rmqsim generate --assignments 10000000 --seed 5`` and the shape, issue 35's command;
* ``1m``: the same with ``--assignments 1000000``; ``--linearity`` adds it, for 10M time / 1M time;
* any other size (``100k``, ``500000``): seed 5.

Printed: per round the seconds and simulate / (bare session + peer); then best of (the fastest of
each) and median (the median of each). WORKDIR/fleet-<options>/limit-results.json keeps them
beside the fleet (bench_fleet.py's results.json is left alone); the 10M one also keeps the
linearity. ``--check`` then compares the peer's rows with simulate's (peer.check; not timed).
No timing is asserted: these 2-core machines are noisy, and the ratio is the figure to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import peer
import pyarrow.parquet as pq
from bench_fleet import SHAPE, ensure_fleet, fleet_dir, fleet_spec, timed

from rmqsim.snapshot import synthetic

BENCH = Path(__file__).resolve().parent
JOBS = ("simulate", "peer", "bare session")
# (assignments, seed) of the named fleets; any other size takes seed 5, as issue 35's command.
NAMED = {"2m": (2_000_000, 3), "10m": (10_000_000, 5), "1m": (1_000_000, 5)}
OTHER_SEED = 5
SUFFIXES = {"k": 1_000, "m": 1_000_000}


@dataclass(frozen=True)
class Fleet:
    label: str
    spec: synthetic.FleetSpec
    work: Path  # bench_fleet's directory for the spec: the snapshot and this benchmark's outputs

    @property
    def snapshot(self) -> Path:
        return self.work / "snapshot"

    @property
    def simulate_out(self) -> Path:
        return self.work / "limit-simulate"  # not bench_fleet's out/: the two may run in turn

    @property
    def peer_out(self) -> Path:
        return self.work / "limit-peer"

    @property
    def results(self) -> Path:
        return self.work / "limit-results.json"


def parse_size(text: str) -> tuple[int, int]:
    """(assignments, seed) of a --sizes entry: a named fleet, or a count such as 100k or 500000."""
    text = text.strip().lower()
    if text in NAMED:
        return NAMED[text]
    scale = SUFFIXES.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in SUFFIXES else text
    if not digits.isdigit() or int(digits) * scale < 1:
        raise argparse.ArgumentTypeError(f"size {text!r}: expected 2m, 10m, 1m or a count (100k, 500000)")
    return int(digits) * scale, OTHER_SEED


def fleet_labels(sizes: Sequence[str], linearity: bool) -> list[str]:
    """The sizes to run, 1m first where --linearity needs it beside 10m."""
    labels = [s.strip().lower() for s in sizes]
    if linearity and "1m" not in labels:
        labels.insert(0, "1m")
    return labels


def fleet(label: str, workdir: Path) -> Fleet:
    assignments, seed = parse_size(label)
    spec = fleet_spec(assignments, seed)
    return Fleet(label, spec, fleet_dir(workdir, spec))


def commands(f: Fleet) -> dict[str, list[str]]:
    """Each job as the process a user starts."""
    rmqsim = str(Path(sys.executable).parent / "rmqsim")
    flags = ["--snapshot", str(f.snapshot), "--out", str(f.simulate_out), "--strategies", "AVG"]
    return {
        "simulate": [rmqsim, "simulate", *flags],
        "peer": [sys.executable, str(BENCH / "peer.py"), str(f.snapshot), str(f.peer_out)],
        "bare session": [sys.executable, str(BENCH / "bare_session.py")],
    }


def rotated(names: Sequence[str], i: int) -> list[str]:
    """Round i's order: the names rotated by i, so each goes first in turn."""
    k = i % len(names)
    return [*names[k:], *names[:k]]


def limit_ratio(seconds: Mapping[str, float]) -> float:
    """simulate / (bare session + peer): 1 is the limit."""
    return seconds["simulate"] / (seconds["bare session"] + seconds["peer"])


def run_rounds(jobs: Mapping[str, list[str]], rounds: int) -> list[dict]:
    """Every job once per round, in rotated order; each round's seconds and ratio, printed."""
    done = []
    for i in range(rounds):
        order = rotated(list(jobs), i)
        seconds = {name: timed(jobs[name]) for name in order}
        done.append({"first": order[0], **seconds, "ratio": limit_ratio(seconds)})
        print(
            f"  round {i + 1} ({order[0]} first): "
            + ", ".join(f"{name} {seconds[name]:.1f} s" for name in jobs)
            + f", simulate / (bare + peer) {done[-1]['ratio']:.2f}"
        )
    return done


def summary(rounds: Sequence[Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Best of (each job's fastest) and median (each job's median), each with its ratio."""
    best = {name: min(r[name] for r in rounds) for name in JOBS}
    median = {name: statistics.median(r[name] for r in rounds) for name in JOBS}
    return {"best": {**best, "ratio": limit_ratio(best)}, "median": {**median, "ratio": limit_ratio(median)}}


def table_rows(path: Path) -> int:
    """Rows of a table's part files, from their footers (hidden and _ files are not data)."""
    files = [p for p in path.rglob("*.parquet") if not p.name.startswith(("_", "."))]
    return sum(pq.ParquetFile(p).metadata.num_rows for p in files)


def describe(figures: Mapping[str, Mapping[str, float]], rounds: int) -> list[str]:
    return [
        f"  {'best of ' + str(rounds) if kind == 'best' else 'median'}: "
        + ", ".join(f"{name} {figures[kind][name]:.1f} s" for name in JOBS)
        + f", simulate / (bare + peer) {figures[kind]['ratio']:.2f}"
        for kind in ("best", "median")
    ]


def linearity(results: Mapping[str, Mapping]) -> dict[str, float] | None:
    """10M simulate seconds / 1M simulate seconds (best and median), where both ran."""
    if "1m" not in results or "10m" not in results:
        return None
    small, large = results["1m"], results["10m"]
    return {kind: large[kind]["simulate"] / small[kind]["simulate"] for kind in ("best", "median")}


def measure(f: Fleet, rounds: int, check: bool) -> dict:
    """The rounds on one fleet, printed, with the fleet's figures; saved beside it."""
    sizes = {t: table_rows(f.snapshot / t) for t in ("topic_queues", "consumers", "groups")}
    print(f"{f.label}: {f.snapshot}\n  fleet: " + ", ".join(f"{t} {n:,} rows" for t, n in sizes.items()))
    done = run_rounds(commands(f), rounds)
    figures = summary(done)
    rows = {
        "simulate": table_rows(f.simulate_out / "assignments"),
        "peer": table_rows(f.peer_out / "assignments"),
    }
    print("\n".join(describe(figures, rounds)))
    print(f"  assignment rows: simulate {rows['simulate']:,}, peer {rows['peer']:,}")
    if rows["simulate"] != rows["peer"]:
        print("  the peer's row count differs from simulate's: the ratio compares different work")
    result = {
        "fleet": {
            "label": f.label,
            "snapshot": str(f.snapshot),
            "seed": f.spec.seed,
            "assignments_requested": f.spec.assignments,
            **{k: list(v) if isinstance(v, tuple) else v for k, v in SHAPE.items()},
            "rows": sizes,
        },
        "assignment_rows": rows,
        "rounds": done,
        **figures,
    }
    if check:
        result["same_rows"] = peer.check(str(f.peer_out), str(f.simulate_out))
    return result


def machine() -> dict[str, object]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "node": platform.node(),
        "load_average_at_end": load,
    }


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="2m,10m", help="comma-separated: 2m, 10m, 1m or a count (100k)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--linearity", action="store_true", help="also the 1M fleet: 10M time / 1M time")
    p.add_argument("--check", action="store_true", help="then compare the peer's rows with simulate's")
    p.add_argument("--no-warm-up", dest="warm_up", action="store_false", help="no untimed bare session first")
    p.add_argument("--workdir", type=Path, default=BENCH / "data")
    args = p.parse_args()
    args.sizes = [s for s in args.sizes.split(",") if s.strip()]
    if args.rounds < 1 or not args.sizes:
        p.error("--rounds must be positive and --sizes not empty")
    for size in args.sizes:
        try:
            parse_size(size)
        except argparse.ArgumentTypeError as e:
            p.error(str(e))
    if args.linearity and "10m" not in [s.strip().lower() for s in args.sizes]:
        p.error("--linearity compares with the 10m fleet: add 10m to --sizes")
    return args


def main() -> int:
    args = parse_args()
    fleets = [fleet(label, args.workdir.resolve()) for label in fleet_labels(args.sizes, args.linearity)]
    for f in fleets:  # every fleet before any JVM starts: numpy and Spark would share 2 cores
        f.work.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        if ensure_fleet(f.snapshot, f.spec):
            print(f"generated {f.snapshot} in {time.perf_counter() - start:.1f} s")
    if args.warm_up:
        subprocess.run(commands(fleets[0])["bare session"], capture_output=True, check=True)
    results = {f.label: measure(f, args.rounds, args.check) for f in fleets}
    growth = linearity(results)
    if growth:
        print(
            f"linearity, 10M simulate / 1M simulate: best of {args.rounds} {growth['best']:.2f}, "
            f"median {growth['median']:.2f} (at most 11 is linear)"
        )
        results["10m"]["linearity"] = growth
    finished = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for f in fleets:
        saved = {**results[f.label], "warm_up": args.warm_up, "machine": machine(), "finished_at": finished}
        f.results.write_text(json.dumps(saved, indent=2) + "\n")
        print(f"results in {f.results}")
    return 0 if all(r.get("same_rows", True) for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
