"""What a run costs without its prelude: the snapshot's checks, the scenarios' names and steps and
route building, everything before the allocation stage.

``save`` runs the prelude once (not timed) and keeps its result: the allocation stage's input
(group_routes), the rejects and the flags simulate reads from them. ``given`` is then a command
that runs `rmqsim simulate` with the same arguments in a fresh process, its prelude replaced by
reading what ``save`` kept: the allocation, every output table and the printout, as a user waits
for them. simulate's whole-process seconds less those are what the prelude costs, and the most that
any faster prelude could save. bench_small.py and bench_fleet.py time it beside their runs with
``--prelude-given``.

Replacing build.build_group_routes is a measurement device, not a product path: reconciliation/
then counts the rows read as the rows used, and the tables are not compared.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SAVE = """
import json, os, sys
import pyarrow.parquet as pq
from rmqsim import build, config, session
saved, snapshot, scenarios, strategies = sys.argv[1:5]
spark = session.build_session(
    app_name="rmqsim-prelude", master="local[*]", conf=dict(config.load_profile("local").conf)
)
cfg = config.SimulateConfig(
    snapshot=snapshot,
    out=saved + "/unused",
    scenarios=scenarios or None,
    strategies=config.parse_strategies(strategies),
)
built = build.build_group_routes(spark, cfg)
os.makedirs(saved, exist_ok=True)
pq.write_table(built.group_routes, saved + "/group_routes.parquet")
pq.write_table(built.rejects, saved + "/rejects.parquet")
flags = {"with_movement": built.with_movement, "with_stale_views": built.with_stale_views}
with open(saved + "/staged.json", "w") as f:
    json.dump({**flags, "absent": list(built.absent)}, f)
spark.stop()
"""

GIVEN = """
import json, sys
import pyarrow.parquet as pq
from rmqsim import build, cli, simulate
saved = sys.argv[1]
with open(saved + "/staged.json") as f:
    staged = json.load(f)

def build_group_routes(spark, config, **deferred):  # the saved routes, whole
    snapshot = build.snapshot_read(spark, config)
    return build.Staged(
        pq.read_table(saved + "/group_routes.parquet"),
        pq.read_table(saved + "/rejects.parquet"),
        with_movement=staged["with_movement"],
        with_stale_views=staged["with_stale_views"],
        loaded=snapshot,
        checked=snapshot,
        absent=tuple(staged["absent"]),
    )

build.build_group_routes = simulate.build_group_routes = build_group_routes
sys.exit(cli.main(sys.argv[2:]))
"""


def save(saved: Path, *, snapshot: Path, scenarios: Path | None, strategies: str) -> None:
    """Run the prelude once and keep its result in ``saved``."""
    argv = [sys.executable, "-c", SAVE, str(saved), str(snapshot), str(scenarios or ""), strategies]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"saving the prelude failed: exit code {done.returncode}")


def given(saved: Path, simulate_args: list[str]) -> list[str]:
    """The command: `rmqsim` with ``simulate_args``, its prelude read from ``saved``."""
    return [sys.executable, "-c", GIVEN, str(saved), *simulate_args]
