"""The command line as users run it: real processes, exit codes and messages."""

from __future__ import annotations

import json
import logging
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rmqsim.cli import main
from tests.builders import broker_rows, consumer_rows, make_snapshot, queue_rows
from tests.processes import run_cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "conf" / "sample_snapshot"


def _java_hash_index(key: str, n: int) -> int:
    """SelectMessageQueueByHash: |key.hashCode() % n|, String.hashCode over UTF-16 units in int32."""
    h = 0
    for unit in range(0, len(key.encode("utf-16-be")), 2):
        h = (31 * h + int.from_bytes(key.encode("utf-16-be")[unit : unit + 2], "big")) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return abs(signed) % n  # |a % n| in Java's truncating remainder is |a| mod n


def _order_keys() -> dict[str, float]:
    keys = pq.read_table(SAMPLE / "producer_keys").to_pandas()
    return dict(zip(keys.key, keys.share))


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd)


def _one_queue(tmp_path: Path) -> str:
    """A snapshot of one client on one queue: the tests below break it in one place each."""
    return make_snapshot(
        tmp_path / "s",
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 1}),
        consumers=consumer_rows("g", "t", ["a"]),
    )


def test_missing_snapshot_is_exit_code_2_before_spark_starts(tmp_path) -> None:
    done = _run("simulate", "--snapshot", str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "snapshot: " in done.stderr and "is not a directory" in done.stderr
    assert "SparkContext" not in done.stderr


def test_a_bad_scenarios_file_is_exit_code_2_before_spark_starts(tmp_path) -> None:
    snapshot = _one_queue(tmp_path)
    bad = tmp_path / "s.yml"
    bad.write_text("scenarios: [{name: x, steps: [{explode: {}}]}]")
    done = _run("simulate", "--snapshot", snapshot, "--out", str(tmp_path / "out"), "--scenarios", str(bad))
    assert done.returncode == 2
    assert "unknown step kind" in done.stderr
    assert "rmqsim.session: Spark" not in done.stderr  # session.build_session's log line


def test_a_stray_file_in_a_table_is_exit_code_2_before_spark_starts(tmp_path) -> None:
    snapshot = _one_queue(tmp_path)
    (tmp_path / "s" / "consumers" / "part-00001.csv").write_text("group,topic,client_id\ng,t,b\n")
    done = _run("simulate", "--snapshot", snapshot, "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "consumers: consumers/part-00001.csv is not a Parquet file" in done.stderr
    assert "rmqsim.session: Spark" not in done.stderr


def test_partitions_below_one_is_exit_code_2(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "--snapshot", "s", "--out", "o", "--partitions", "0"])
    assert exited.value.code == 2
    assert "--partitions: expected a positive integer, got 0" in capsys.readouterr().err


@pytest.mark.parametrize("remote", ["--remote", "SPARK_REMOTE"])
def test_a_master_and_a_spark_connect_server_together_are_exit_code_2(remote, monkeypatch, capsys) -> None:
    # Either names where the job runs: both is a contradiction, refused before any connection.
    args = ["simulate", "--snapshot", "s", "--out", "o", "--master", "local[1]"]
    if remote == "SPARK_REMOTE":
        monkeypatch.setenv("SPARK_REMOTE", "sc://localhost:1")
    else:
        args += ["--remote", "sc://localhost:1"]
    assert main(args) == 2
    assert "give --master or --remote (SPARK_REMOTE), not both" in capsys.readouterr().err


def test_unknown_strategy_argument_is_exit_code_2(tmp_path) -> None:
    snapshot = _one_queue(tmp_path)
    done = _run(
        "simulate", "--snapshot", snapshot, "--out", str(tmp_path / "out"), "--strategies", "AVG,NOPE"
    )
    assert done.returncode == 2
    assert "arguments.--strategies" in done.stderr and "NOPE" in done.stderr


def test_wrong_column_type_is_exit_code_2_naming_table_and_column(spark, tmp_path, capsys) -> None:
    snapshot = _one_queue(tmp_path)
    pq.write_table(
        pa.table({"broker_name": ["b"], "alive": ["yes"]}), f"{snapshot}/brokers/part-00000.parquet"
    )
    code = main(["simulate", "--snapshot", snapshot, "--out", str(tmp_path / "out"), "--master", "local[2]"])
    assert code == 2
    assert "brokers.alive: expected boolean, found string" in capsys.readouterr().err


def test_demo_runs_on_the_bundled_sample_from_any_directory(demo_run, tmp_path) -> None:
    out, done = demo_run  # run from a temporary directory: conftest.py
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert any(line.startswith("strategy") and "max/mean" in line for line in lines)
    names = {
        "AVG",
        "AVG_BY_CIRCLE",
        "CONFIG",
        "CONSISTENT_HASH",
        "MACHINE_ROOM",
        "MACHINE_ROOM_NEARBY",
        "STICKY",
        "LAG_BALANCED",
    }
    assert {line.split()[0] for line in lines if line.split() and line.split()[0] in names} == names
    for table in ("assignments", "group_metrics", "consumer_load", "rejects", "summary"):
        assert (out / table).is_dir(), table
    assert not list(out.parent.glob(".out.tmp-*"))  # staging renamed into place

    # The bundled scenarios: each printed, compared, and charted by `rmqsim report`.
    scenarios = (
        "scale-out-two-brokers",
        "broker-b-restart",
        "shrink-orders-16-to-8",
        "shrink-orders-unsafe",
        "broker-b-slow",
        "pay-consumer-8-to-12",
        "pay-consumer-split-brain",
        "go-clients-join-risk-engine",
        "sms-sender-to-pop",
        "designate-risk-engine",
        "orders-peak",
        "pay-consumer-rolling-deploy",
        "order-consumer-host-lost",
    )
    # A row each in the table of scenarios (every strategy folded into it).
    table = lines[lines.index("scenarios, phase 0 against the last: fewest-most over the strategies") :]
    for scenario in scenarios:
        assert any(line.split()[:1] == [scenario] for line in table), scenario
    # The bundled sweeps: every broker and room of the sample (5 brokers, rooms hz-a and hz-b),
    # each sweep's worst elements printed first; the worst 3 per strategy have their phases.
    assert "sweep broker-loss: the worst 3 of 5 elements" in lines
    assert "sweep room-loss: the worst 2 of 2 elements" in lines
    comparison = pq.read_table(out / "comparison").to_pandas()
    elements = comparison.scenario.str.contains("/")
    assert set(comparison.scenario[~elements]) == set(scenarios)
    sweep = pq.read_table(out / "sweep").to_pandas()
    assert set(comparison.scenario[elements]) == set((sweep.sweep + "/" + sweep.element)[sweep.detailed])
    comparison = comparison[~elements]
    # Left out: a stale view, clients of two libraries, POP and a half-done designation, which all
    # leave queues read twice.
    unsettled = [
        "pay-consumer-split-brain",
        "go-clients-join-risk-engine",
        "sms-sender-to-pop",
        "designate-risk-engine",
    ]
    settled = comparison[~comparison.scenario.isin(unsettled)]
    one_owner = settled[settled.strategy.isin(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"])]
    assert len(one_owner) == 3 * (len(scenarios) - len(unsettled))
    assert (one_owner.queues_moved >= one_owner.min_moves).all()
    # The shrinks of orders (16 write and read queues on each of brokers a, b, c; the 48-entry
    # list carries order-backfill's 300 msgs/s round robin and order-service's 900 by key hash).
    # The unsafe order's first step leaves queues 8..15 written and read by nobody: for each of
    # the three groups reading orders, what lands there is stranded, on top of clicks' 250
    # (written to 8 queues of each of its two brokers, read from 4: 500 / 2). The backlog
    # order-consumer's offsets show in those queues is never read.
    tail = 300 * 24 / 48 + 900 * sum(
        share for key, share in _order_keys().items() if _java_hash_index(key, 48) % 16 >= 8
    ) / sum(_order_keys().values())
    offsets = pq.read_table(SAMPLE / "offsets").to_pandas()
    left = offsets[
        (offsets.group == "order-consumer") & (offsets.topic == "orders") & (offsets.queue_id >= 8)
    ]
    by = comparison.set_index(["scenario", "strategy"])
    safe, unsafe = by.loc[("shrink-orders-16-to-8", "AVG")], by.loc[("shrink-orders-unsafe", "AVG")]
    assert unsafe.stranded_msgs_per_s_before == 250.0
    assert unsafe.most_stranded_msgs_per_s == pytest.approx(250 + 3 * tail)
    assert (
        unsafe.stranded_backlog_after == (left.broker_offset - left.consumer_offset).clip(lower=0).sum() > 0
    )
    assert "lower write_queue_nums first" in unsafe.advice
    # The safe order: after its first step nobody writes to 8..15, which order-archiver's AVG
    # hands to three of its six clients (a8..15, b8..15, c8..15): an idle tail. The readers
    # drain those queues during that step, so the second step strands nothing.
    assert safe.most_clients_without_messages == 3 and safe.advice is None
    assert (safe.most_stranded_msgs_per_s, safe.stranded_backlog_after) == (250.0, 0)
    # The advice once (the recommendation's, which the comparison's repeats), wrapped to the width.
    assert sum(line.startswith("advice: ") for line in lines) == 1
    assert any("stranded/s" in line for line in lines)
    # The split-brain scenario: a risk table, and its stale phase doubles or strands queues.
    risk_table = lines[
        lines.index("split-brain risk: queues of the stale phase, the most exposed strategy") :
    ]
    assert any(line.startswith("pay-consumer-split-brain ") for line in risk_table)
    split = pq.read_table(out / "split_brain").to_pandas()
    risk = split[split.scenario == "pay-consumer-split-brain"]
    assert set(risk.group) == {"pay-consumer"} and set(risk.phase) == {2} and (risk.stale_clients == 3).all()
    assert (risk.multi_owned_queues + risk.unassigned_queues).sum() > 0
    # Two Go clients join risk-engine (Java, CONSISTENT_HASH): the two rings disagree, so queues
    # become read twice and read by nobody; under AVG, computed alike by both libraries, nothing
    # changes there. sms-sender's 6 clients on 4 queues: POP hands each a queue, so its 2 idle
    # clients go to work (AVG and AVG_BY_CIRCLE, the two strategies the broker has).
    go = by.loc[("go-clients-join-risk-engine", "CONSISTENT_HASH")]
    assert go.multi_owned_queues_after > go.multi_owned_queues_before
    assert go.unassigned_queues_after > go.unassigned_queues_before
    for strategy in ("AVG", "AVG_BY_CIRCLE"):
        pop = by.loc[("sms-sender-to-pop", strategy)]
        assert pop.idle_consumers_before - pop.idle_consumers_after == 2 and pop.shared_queues_after > 0
    # After one step STICKY moves exactly the fewest queues a balanced assignment could.
    sticky = comparison[(comparison.strategy == "STICKY") & (comparison.scenario == "scale-out-two-brokers")]
    assert sticky.queues_moved.tolist() == sticky.min_moves.tolist()
    advice = pq.read_table(out / "recommendation").to_pandas().set_index("group")
    # notify-consumer: 6 clients on notifications, which has 4 queues (broker-c): 2 always idle.
    assert (advice.loc["notify-consumer"].consumers, advice.loc["notify-consumer"].useful_consumers) == (6, 4)
    # Capacity (section 2d). order-consumer's five pods consume 600, 600, 300, 150 and 150 msgs/s
    # (in client id order), analytics' clients their group's 1500.
    load = pq.read_table(out / "consumer_load").to_pandas()
    pods = load[load.group == "order-consumer"]
    sizes = dict(zip(sorted(pods.client_id.unique()), [600.0, 600.0, 300.0, 150.0, 150.0]))
    assert (pods.capacity_msgs_per_s == pods.client_id.map(sizes)).all()
    assert (load[load.group == "analytics"].capacity_msgs_per_s == 1500.0).all()
    assert (pods.over_capacity == (pods.msgs_per_s > pods.capacity_msgs_per_s)).all()
    growth = (pods.msgs_per_s - pods.capacity_msgs_per_s).clip(lower=0)
    assert np.allclose(pods.lag_growth_msgs_per_s, growth)
    # orders at 1.25 times: 1.25 x (900 + 300) + inventory's 300 + the retry topic's 3 = 1803
    # msgs/s, above the pods' 1800: whatever the strategy, the group's lag grows by 3 msgs/s or more.
    peak = load[(load.scenario == "orders-peak") & (load.phase == 1) & (load.group == "order-consumer")]
    per_strategy = peak.groupby("strategy", observed=True)
    assert np.allclose(per_strategy.msgs_per_s.sum(), 1803.0)
    assert (per_strategy.lag_growth_msgs_per_s.sum() >= 3.0 - 1e-6).all()
    # In the snapshot, 1503 msgs/s and the backlog offsets give, over the mean pod's 360 msgs/s,
    # to drain within the default hour: ceil((1503 + backlog / 3600) / 360) pods.
    backlog = offsets[offsets.group == "order-consumer"]
    behind = (backlog.broker_offset - backlog.consumer_offset).clip(lower=0).sum()
    assert advice.loc["order-consumer"].clients_needed == math.ceil((1503 + behind / 3600) / 360)
    # The demo prints them beside the queue counts.
    assert any("over cap" in line and "lag" in line for line in lines)
    # designate-risk-engine: risk-engine's hz-b pods (10.0.4.3 and .4) are not designated-aware yet.
    rollout = split[split.scenario == "designate-risk-engine"]
    assert set(rollout.group) == {"risk-engine"} and (rollout.unaware_clients == 2).all()
    assert (rollout.groupby("strategy", observed=True).multi_owned_queues.sum() > 0).all()
    # The report writes into the run it reads: a copy, without what other tests added to the demo's.
    run = shutil.copytree(out, tmp_path / "out", ignore=shutil.ignore_patterns("charts", "report.html"))
    charts = _run("report", "--run", str(run), cwd=tmp_path)
    assert charts.returncode == 0, charts.stderr[-3000:]
    pngs = sorted((run / "charts").glob("*.png"))
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    # Moves, one group's queues per client and, the sample having producers, its messages per
    # client and the messages stranded per scenario.
    # With capacities, each client's messages against its capacity: one chart per scenario.
    kinds = {p.name.split("_")[0] for p in pngs}
    capacity = {p.name for p in pngs if p.name.startswith("capacity_")}
    detailed = sweep[sweep.detailed]
    charted = [*scenarios, *(detailed.sweep + "_" + detailed.element.str.replace("@", "_"))]
    assert capacity == {f"capacity_{n}.png" for n in charted}
    # The sample's hand-overs leave queues unread for a while: their timeline too.
    assert "unread_over_time.png" in {p.name for p in pngs}
    assert len(pngs) == 6 + len(capacity)
    assert kinds == {"moved", "load", "messages", "stranded", "capacity", "sweep", "unread"}


def test_the_session_starts_in_its_own_thread_and_its_failure_reaches_the_caller() -> None:
    # The CLI builds the routes while the JVM starts: the session comes from another thread, and a
    # session that cannot start fails the run where it waits for it, not silently in that thread.
    import threading

    from rmqsim.session import Starting

    def start():
        assert threading.current_thread() is not threading.main_thread()
        raise RuntimeError("no JVM here")

    with pytest.raises(RuntimeError, match="no JVM here"):
        Starting(start).result()
    assert Starting(lambda: "a session").result() == "a session"


def test_simulate_builds_a_local_snapshot_s_routes_without_spark(tmp_path, monkeypatch) -> None:
    # Spark is not asked for until the routes are built: a JVM that never comes up leaves the
    # routes built (and bad input found) all the same.
    from rmqsim import build

    built = []
    real = build.build_group_routes
    monkeypatch.setattr(
        build, "build_group_routes", lambda spark, cfg, **kw: built.append(spark) or real(spark, cfg, **kw)
    )
    monkeypatch.setattr("rmqsim.cli._session", lambda args: (_ for _ in ()).throw(RuntimeError("no JVM")))
    assert main(["simulate", "--snapshot", _one_queue(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert built == [None]


def test_json_prints_the_run_s_results_as_one_document(tmp_path, capsys) -> None:
    # One client on one queue, one strategy: phase 0 of scenario baseline only.
    out = tmp_path / "out"
    code = main(
        ["simulate", "--snapshot", _one_queue(tmp_path), "--out", str(out), "--strategies", "AVG", "--json"]
    )
    printed = capsys.readouterr().out
    assert code == 0
    doc = json.loads(printed)  # the whole of stdout: no table before or after it
    assert doc["out"] == str(out)
    [row] = doc["summary"]
    assert (row["scenario"], row["phase"], row["strategy"]) == ("baseline", 0, "AVG")
    assert row["queues"] == 1 and row["consumers"] == 1
    for table in doc["reconciliation"]:  # nothing silently dropped: rows in = used + rejected
        assert table["rows_read"] == table["rows_used"] + table["rows_rejected"]
    assert {t["table"] for t in doc["reconciliation"]} >= {"brokers", "topic_queues", "consumers"}


def test_quiet_prints_nothing_and_still_writes_the_run(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    code = main(
        ["simulate", "--snapshot", _one_queue(tmp_path), "--out", str(out), "--strategies", "AVG", "--quiet"]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == ""
    assert pq.read_table(out / "summary").num_rows == 1  # (baseline, phase 0, AVG)


def test_quiet_and_json_together_is_exit_code_2(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "--snapshot", "s", "--out", "o", "--quiet", "--json"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_spark_s_configuration_is_logged_at_debug_and_one_line_at_info(spark, caplog) -> None:
    from rmqsim.session import build_session

    line = f"Spark {spark.version} on {spark.sparkContext.master}"
    with caplog.at_level(logging.INFO, logger="rmqsim.session"):
        build_session(master="local[2]")  # the tests' session, got again
    assert [r.getMessage() for r in caplog.records] == [line]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="rmqsim.session"):
        build_session(master="local[2]")
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == line
    assert messages[1].startswith("resolved configuration:\n")
    assert f"  spark.master={spark.sparkContext.master}" in messages[1]


def test_demo_opens_with_findings_in_100_lines_of_100_columns(demo_run) -> None:
    out, done = demo_run
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) <= 100 and max(len(line) for line in lines) <= 100
    block = lines[: lines.index("")]
    assert block[0].startswith("findings") and len(block) <= 15
    found = [line.strip() for line in block[1:] if not line.strip().startswith("... ")]

    def table(name: str):
        rows = pq.read_table(out / name).to_pandas()
        return rows.astype({c: str for c in rows.columns if rows[c].dtype == "category"})

    summary, behind, handover, sweep = (
        table("summary"),
        table("falling_behind"),
        table("handover"),
        table("sweep"),
    )
    names = (
        set(table("recommendation").group)
        | set(summary.scenario)
        | set(sweep.element)
        | set(table("queue_traffic").topic)
    )
    for line in found:  # each names its subject: a group, scenario, sweep element or topic of the run
        assert any(name in line.replace(",", " ").replace("@", " ").split() for name in names), line
    strategies = summary.strategy.nunique()

    # Behind in the snapshot: the groups with a client over capacity at phase 0, under the most
    # strategies first.
    at_0 = behind[(behind.phase == 0) & (behind.clients_over_capacity > 0)]
    at_0 = at_0[at_0.scenario == at_0.scenario.min()]
    counts = at_0.groupby("group").strategy.nunique().sort_values(ascending=False)
    [now] = [line for line in found if line.startswith("behind in the snapshot: ")]
    assert now.startswith(
        f"behind in the snapshot: {counts.index[0]} ({counts.iloc[0]} of {strategies} strategies"
    )

    # Stranded in the snapshot: clicks is written to 8 queues on each of its two brokers and read
    # from 4, so half its 500 msgs/s (250) lands where analytics, its one reader, never reads.
    assert "stranded in the snapshot: 250 msgs/s of analytics@clicks" in found

    # Each sweep's worst element: the lowest mean rank over the strategies.
    for name, rows in sweep.groupby("sweep"):
        worst = rows.groupby("element")["rank"].mean().sort_values(kind="stable").index[0]
        assert any(line.startswith(f"sweep {name}: {worst} hurts most") for line in found), name

    # A scenario's step: the group it puts behind (not behind at phase 0 under that strategy) with
    # its lag growth, else the messages its hand-overs delay or double and whose most.
    steps = [line for line in found if ": " in line and line.split(",")[0] in set(summary.scenario)]
    assert steps
    for line in steps:
        head, what = line.split(": ", 1)
        scenario, strategy = head.split(", ")[0], head.split(", ")[-1]
        if " falls behind, +" in what:
            group, lag = what.split(" falls behind, +")
            later = behind[
                (behind.scenario == scenario) & (behind.strategy == strategy) & (behind.group == group)
            ]
            was = at_0[(at_0.strategy == strategy) & (at_0.group == group)]
            assert was.empty and (later.clients_over_capacity > 0).any(), line
            assert round(later.lag_growth_msgs_per_s.max()) == int(lag.split()[0]), line
        else:
            msgs, group = what.split(" msgs of ")[0], what.split(" msgs of ")[1].split(" late")[0]
            mine = handover[(handover.scenario == scenario) & (handover.strategy == strategy)]
            cost = (mine.msgs_delayed + mine.msgs_read_twice).groupby([mine.to_phase, mine.group]).sum()
            phase = cost.groupby(level=0).sum().idxmax()
            assert round(cost.loc[phase].sum()) == int(msgs), line
            assert cost.loc[phase].idxmax() == group, line


def test_wide_prints_every_table_whole_and_the_default_the_findings_first(tmp_path, capsys) -> None:
    # One client on one queue, one strategy, no scenario: nothing to find, phase 0's summary.
    snapshot = _one_queue(tmp_path)
    args = ["simulate", "--snapshot", snapshot, "--strategies", "AVG"]
    assert main([*args, "--out", str(tmp_path / "wide"), "--wide"]) == 0
    wide = capsys.readouterr().out.splitlines()
    assert wide[0] == "scenario baseline, phase 0"
    assert wide[1].split("  ")[:3] == ["strategy", "groups", "consumers"] and "fleet max/mean" in wide[1]
    assert main([*args, "--out", str(tmp_path / "compact")]) == 0
    compact = capsys.readouterr().out.splitlines()
    assert compact[:2] == [
        "findings (the worst over the strategies run)",
        "  nothing: no group behind, no message stranded, no step with a cost",
    ]
    # 1 group, 1 client, 1 queue: AVG's max q 1, nobody idle, nothing unread.
    assert compact[3] == "the snapshot: 1 groups, 1 clients, 1 queues"
    assert compact[6].split()[:6] == ["AVG", "1", "1", "1.00", "0", "0"]
    assert max(len(line) for line in compact) <= 100
