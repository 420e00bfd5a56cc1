"""Where a simulate run spends its time: every Spark job of one warm run, from Spark's REST API.

    .venv/bin/python bench/profile_jobs.py [--rows N] [--strategies AVG,AVG_BY_CIRCLE]

Runs one warm-up and one profiled ``simulate.run`` on the benchmark's fleet (bench_simulate.py
generates it) with the Spark UI on, then prints each job's wall time, stage count and call site,
and the share of the run that no job covers (driver-side planning and file commits).
"""

from __future__ import annotations

import argparse
import json
import re
import time
import urllib.request
from pathlib import Path

from bench_simulate import MASTER, STRATEGIES, ensure_snapshot, snapshot_dir

from rmqsim import config, session, simulate


def _get(url: str) -> list[dict]:
    with urllib.request.urlopen(url) as response:
        return json.load(response)


def _seconds(stamp: str) -> float:
    # Spark's REST API: 2026-11-21T15:25:57.123GMT
    return time.mktime(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) + int(stamp[20:23]) / 1000


def _stage_records(api: str, stage_id: int) -> tuple[int, int]:
    """(rows read from files or shuffles, rows written to files or shuffles) of a stage's attempts."""
    attempts = _get(f"{api}/stages/{stage_id}")
    first = attempts[0] if attempts else {}
    read = first.get("inputRecords", 0) + first.get("shuffleReadRecords", 0)
    return read, first.get("outputRecords", 0) + first.get("shuffleWriteRecords", 0)


def _stage_names(api: str, job: dict) -> str:
    """The plan nodes a job's stages scan: which tables it reads is what tells jobs apart."""
    names = []
    for stage_id in job["stageIds"]:
        for attempt in _get(f"{api}/stages/{stage_id}")[:1]:
            details = attempt.get("details", "")
            names += re.findall(r"rmqsim/(\w+)\.py:(\d+)", details)[:1]
    return " ".join(f"{m}:{n}" for m, n in names) or job["name"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "data")
    p.add_argument("--scenarios", help="scenarios file (bench_scenario.py writes one)")
    p.add_argument("--snapshot", type=Path, help="a snapshot directory instead of the generated fleet")
    p.add_argument("--no-warm-up", action="store_true", help="profile the first run")
    args = p.parse_args()
    snapshot = args.snapshot or snapshot_dir(args.workdir, args.rows, args.seed)
    if not args.snapshot:
        ensure_snapshot(snapshot, args.rows, args.seed)

    conf = {**config.load_profile("local").conf, "spark.ui.enabled": "true"}
    spark = session.build_session(app_name="rmqsim-profile", master=MASTER, conf=conf)
    cfg = config.SimulateConfig(
        snapshot=str(snapshot),
        out=str(args.workdir / "out"),
        strategies=config.parse_strategies(args.strategies),
        scenarios=args.scenarios,
    )
    sim = lambda: simulate.run(spark, cfg)  # noqa: E731
    if not args.no_warm_up:
        sim()
    api = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{spark.sparkContext.applicationId}"
    before = {j["jobId"] for j in _get(f"{api}/jobs")}
    start = time.perf_counter()
    sim()
    total = time.perf_counter() - start
    jobs = sorted((j for j in _get(f"{api}/jobs") if j["jobId"] not in before), key=lambda j: j["jobId"])
    covered = 0.0
    print(f"{'job':>4} {'seconds':>8} {'stages':>6} {'rows in':>10} {'rows out':>10}  what")
    for j in jobs:
        seconds = _seconds(j["completionTime"]) - _seconds(j["submissionTime"])
        covered += seconds
        stages = len(j["stageIds"]) - j.get("numSkippedStages", 0)
        records = [_stage_records(api, sid) for sid in j["stageIds"]]
        rin = sum(r[0] for r in records)
        rout = sum(r[1] for r in records)
        what = j.get("description") or _stage_names(api, j)
        print(f"{j['jobId']:>4} {seconds:>8.2f} {stages:>6} {rin:>10} {rout:>10}  {what[:80]}")
    print(
        f"run {total:.2f} s, {len(jobs)} jobs covering {covered:.2f} s, outside jobs {total - covered:.2f} s"
    )
    spark.stop()


if __name__ == "__main__":
    main()
