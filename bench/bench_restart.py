"""Benchmark: a rolling restart of one 40-client group against the fleet alone (issue 45;
docs/CONTRACT.md, section 2e). Whole processes, alternated.

    .venv/bin/python bench/bench_restart.py [--assignments 2000000] [--clients 40] [--rounds 2]
                                            [--seed 3] [--workdir bench/data]

The fleet is bench_fleet.py's many-small-groups shape (generated once into WORKDIR and reused). Its
groups have at most 12 clients, so the scenario first grows the largest group to ``--clients`` with
a ``consumers_join`` (at 0 s), then restarts it one client at a time: 2 x 40 + 1 = 81 phases, each
touching that group alone. Each round runs, as fresh processes, `rmqsim simulate --strategies AVG`
without scenarios and with that one; timed and measured as bench_sweep.py does. No figure is
asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow.dataset as ds
from bench_sweep import DRIVER, alternated, fleet, print_best


def largest_group(snapshot: Path) -> tuple[str, int]:
    consumers = ds.dataset(str(snapshot / "consumers")).to_table(columns=["group", "client_id"])
    sizes = consumers.group_by("group").aggregate([("client_id", "count_distinct")])
    top = sizes.sort_by([("client_id_count_distinct", "descending"), ("group", "ascending")]).slice(0, 1)
    return top["group"][0].as_py(), top["client_id_count_distinct"][0].as_py()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--assignments", type=int, default=2_000_000)
    p.add_argument("--clients", type=int, default=40)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "data")
    args = p.parse_args()
    work, snapshot = fleet(args.assignments, args.seed, args.workdir)
    group, size = largest_group(snapshot)
    scenarios = work / "restart.yml"
    scenarios.write_text(
        "scenarios:\n  - name: deploy\n    steps:\n"
        f"      - consumers_join: {{group: {group}, count: {args.clients - size}, seed: 1, after_s: 0}}\n"
        f"      - rolling_restart: {{group: {group}}}\n"
    )
    base = [sys.executable, "-c", DRIVER, "simulate", "--snapshot", str(snapshot), "--strategies", "AVG"]
    jobs = {
        "fleet alone": [*base, "--out", str(work / "out-alone")],
        "restart": [*base, "--scenarios", str(scenarios), "--out", str(work / "out-restart")],
    }
    rounds, best = alternated(jobs, args.rounds)
    print(f"{group} grown to {args.clients} clients and restarted; best of {len(rounds)}:")
    print_best(best)
    out = {"group": group, "clients": args.clients, "rounds": rounds, "best": best}
    (work / "restart-results.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"results in {work / 'restart-results.json'}")


if __name__ == "__main__":
    main()
