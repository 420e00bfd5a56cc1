"""`rmqsim import-mqadmin` with the producer side's captures: statsAll.txt, producerConnection/<producer
group>/<topic>.txt and topicStatus/<topic>.txt, added to the v4_9 and v5 captures in a temporary
directory. Expected values are worked by hand from the fixtures (tests/data/mqadmin/README.md). One
test simulates the imported snapshot (Spark); the others need none."""

from __future__ import annotations

import re
import shutil
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rmqsim.cli import main
from rmqsim.errors import InputError
from rmqsim.mqadmin import flags, importer

DATA = Path(__file__).resolve().parent / "data" / "mqadmin"
TRAFFIC = DATA / "traffic"
T_LONG4 = "settlement_ledger_reconciliation_events_from_payment_gateway_v2_region_eu"  # 73
B_LONG4 = "broker-hz-finance-settlement-primary-01"  # 39
T_LONG5 = "warehouse_inventory_snapshot_changes_from_erp_connector_partition_set_A"  # 71
B_LONG5 = "rmq-prod-broker-shanghai-zone-a-0001"  # 36
SLR = "settlement_ledger_reconciliation_events"  # 39: cut at 32 as T_LONG4 is
SLR_GROUP = "cg_settlement_ledger_reconciliation_worker"
STATS_HEADER = (TRAFFIC / "statsAll_5_1_4.txt").read_text().splitlines()[0]  # names 64 wide, #Accumulation


def _stats_line(
    topic: str, group: str | None, in_tps: float, out_tps: float = 0.0, accumulation: int = 0
) -> str:
    """A statsAll line as 4.9.3 and later print it (the parser reads the lines by white space)."""
    if group is None:
        return (
            f"{topic:<64}  {'':<64} {accumulation:>14} {in_tps:>11.2f} {'':>11} {0:>14} {'NO_CONSUMER':>14}"
        )
    return (
        f"{topic:<64}  {group:<64} {accumulation:>14} {in_tps:>11.2f} {out_tps:>11.2f} {1000:>14} {990:>14}"
    )


def _stats_all(*lines: str) -> str:
    return "\n".join([STATS_HEADER, *lines]) + "\n"


def _producer_lines(*clients: tuple[str, str, str]) -> str:
    """producerConnection's lines for (client id, language, version) clients."""
    return "".join(
        f"{n:04d}  {cid:<32} {cid.split('@')[0] + ':5' + str(n).zfill(4):<22} {lang:<8} {version}\n"
        for n, (cid, lang, version) in enumerate(clients, start=1)
    )


def _capture(
    tmp_path: Path,
    base: str,
    *,
    stats: str | None = None,
    producers: dict[tuple[str, str], str] | None = None,
    status: dict[str, str] | None = None,
) -> Path:
    """``base``'s capture copied, with statsAll.txt, producerConnection/<group>/<topic>.txt and
    topicStatus/<topic>.txt added; each value a fixture of traffic/ or, with a line break, the text."""
    root = Path(shutil.copytree(DATA / base, tmp_path / base))

    def put(path: Path, source: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source if "\n" in source else (TRAFFIC / source).read_text())

    if stats is not None:
        put(root / "statsAll.txt", stats)
    for (group, topic), source in (producers or {}).items():
        put(root / "producerConnection" / group / f"{topic}.txt", source)
    for topic, source in (status or {}).items():
        put(root / "topicStatus" / f"{topic}.txt", source)
    return root


def _imported(root: Path, **flags) -> importer.Imported:
    return importer.to_tables(importer.read_capture(str(root)), **flags)


def _rows(imported: importer.Imported, table: str) -> list[dict]:
    return imported.tables[table].to_pylist()


def _written(snapshot: Path, table: str) -> list[dict]:
    return pq.read_table(snapshot / table).to_pylist()


def _populations(rows: list[dict]) -> dict[tuple, float]:
    return {(p["topic"], p["producer_group"], p["language"], p["version"]): p["msgs_per_s"] for p in rows}


def _v4_9_with_traffic(tmp_path: Path) -> Path:
    return _capture(
        tmp_path,
        "v4_9",
        stats="statsAll_4_9_2.txt",
        producers={
            ("pg_orders", "orders"): "producerConnection/pg_orders__orders.txt",
            ("pg_offline", "orders"): "producerConnection/pg_offline__orders.txt",
        },
        status={
            "orders": "topicStatus/orders.txt",
            T_LONG4: f"topicStatus/{T_LONG4}.txt",
            "%RETRY%cg_orders": "topicStatus/%RETRY%cg_orders.txt",
        },
    )


# ------------------------------------------------------------------------------- producers


def test_a_topic_rate_is_shared_over_its_populations_per_connection(tmp_path) -> None:
    # payments: InTPS 300 on both of its lines; pg_pay has two JAVA V4_9_8 clients and one GO client.
    root = _capture(
        tmp_path,
        "v5",
        stats=_stats_all(
            _stats_line("payments", "cg_pay", 300.0), _stats_line("payments", "cg_missing", 300.0)
        ),
        producers={
            ("pg_pay", "payments"): _producer_lines(
                ("10.7.0.11@1", "JAVA", "V4_9_8"),
                ("10.7.0.22@88", "GO", "V4_5_2"),
                ("10.7.0.12@1", "JAVA", "V4_9_8"),
            )
        },
    )
    producers = _rows(_imported(root), "producers")
    # 3 connections: JAVA 300 * 2/3 = 200, GO 300 * 1/3 = 100.
    assert sorted((p["language"], p["version"], p["client_id"], p["msgs_per_s"]) for p in producers) == [
        ("GO", "V4_5_2", "10.7.0.22@88", 100.0),  # a population of one connection keeps its client id
        ("JAVA", "V4_9_8", None, 200.0),
    ]
    assert {p["producer_group"] for p in producers} == {"pg_pay"}
    # mqadmin shows neither: without the flags the columns are left out (ROUND_ROBIN, false).
    assert "selector" not in producers[0] and "send_latency_fault_enable" not in producers[0]


def test_the_4_9_capture_with_its_traffic(tmp_path) -> None:
    imported = _imported(_v4_9_with_traffic(tmp_path), strategies={"cg_audit": "AVG_BY_CIRCLE"})
    assert {c: imported.formats[c] for c in ("statsAll", "producerConnection", "topicStatus")} == {
        "statsAll": ("4.0 to 4.9.2",),
        "producerConnection": ("3.x to 5.x",),
        "topicStatus": ("before 5.3.3",),
    }
    # statsAll's 7 lines; 4 populations (below); queues: orders 8, T_LONG4 2 + 4, %RETRY%cg_orders 2.
    counts = imported.counts
    assert (counts["observed_traffic"], counts["producers"], counts["queue_status"]) == (7, 4, 16)
    # orders: 120.43 over pg_orders's 5 connections (3 JAVA V4_9_8, 1 GO, 1 CPP; pg_offline has none):
    # JAVA 120.43 * 3/5 = 72.258, GO and CPP 120.43 / 5 = 24.086 each.
    # T_LONG4: no producerConnection: one default population with the whole rate, 44.80 (the larger
    # of its lines' 44.80 and 8.40: line 7 is settlement_ledger_reconciliation_events's, cut alike,
    # whose route this capture lacks).
    assert _populations(_rows(imported, "producers")) == pytest.approx(
        {
            ("orders", "pg_orders", "CPP", "V4_6_0"): 24.086,
            ("orders", "pg_orders", "GO", "V4_5_2"): 24.086,
            ("orders", "pg_orders", "JAVA", "V4_9_8"): 72.258,
            (T_LONG4, None, None, None): 44.80,
        }
    )
    warnings = "\n".join(imported.warnings)
    assert f"topic {T_LONG4}'s InTPS differs between its lines (8.40 (line 7); 44.80 (line 5))" in warnings
    assert "whose first 32 characters agree" in warnings
    assert "no producer of pg_offline online (Not found the producer group connection)" in warnings
    assert "names 2 topic(s) without a topicRoute/ file, so no producers row: audit_log_archive, " in warnings
    # Every statsAll line, as printed but for the names matched: the cut topic to its route's full name.
    traffic = {(t["topic"], t["group"]): t for t in _rows(imported, "observed_traffic")}
    assert traffic[("orders", "cg_legacy_billing")] == {
        "topic": "orders",
        "group": "cg_legacy_billing",
        "in_tps": 120.43,
        "out_tps": 0.0,
        "accumulation": 1523344,
    }
    assert traffic[(T_LONG4, "cg_audit")]["out_tps"] == 44.10
    # NO_CONSUMER: no group, no OutTPS; the accumulation as printed (0).
    no_consumer = traffic[("audit_log_archive", None)]
    assert (no_consumer["in_tps"], no_consumer["out_tps"], no_consumer["accumulation"]) == (1.25, None, 0)
    # A 32-character group no file names: kept as printed, with a warning.
    assert (T_LONG4, "cg_settlement_ledger_reconciliat") in traffic
    assert "group 'cg_settlement_ledger_reconciliat' is 32 characters" in warnings


def test_topic_status_becomes_queue_status_with_full_broker_names(tmp_path) -> None:
    queues = {
        (q["topic"], q["broker_name"], q["queue_id"]): q
        for q in _rows(_imported(_v4_9_with_traffic(tmp_path)), "queue_status")
    }
    # broker-hz-finance-settlement-pri (32) is the start of one broker only: clusterList's B_LONG4.
    long = queues[(T_LONG4, B_LONG4, 3)]
    assert (long["min_offset"], long["max_offset"]) == (0, 2199)
    assert long["last_updated"] == datetime(2024, 5, 13, 10, 20, 57, 932000)
    assert {k[1] for k in queues if k[0] == T_LONG4} == {"broker-c", B_LONG4}
    # Never written: max offset 0 and no time.
    never = queues[("%RETRY%cg_orders", "broker-b", 0)]
    assert (never["max_offset"], never["last_updated"]) == (0, None)
    assert queues[("orders", "broker-b", 1)]["min_offset"] == 4096


def test_before_4_0_the_accumulation_is_null(tmp_path) -> None:
    imported = _imported(_capture(tmp_path, "v4_9", stats="statsAll_3_5_8.txt"))
    traffic = {(t["topic"], t["group"]): t for t in _rows(imported, "observed_traffic")}
    assert len(traffic) == 12 and {t["accumulation"] for t in traffic.values()} == {None}
    assert traffic[("orders", "cg_audit")]["out_tps"] == 0.0
    assert traffic[("TBW102", None)]["out_tps"] is None  # system topics kept, as printed
    # 3.5.8 cut the settlement topic at 32: the one route that starts so.
    assert traffic[(T_LONG4, "cg_settlement_ledger_reconciliat")]["in_tps"] == 8.40
    assert _populations(_rows(imported, "producers")) == {
        ("orders", None, None, None): 52.17,
        (T_LONG4, None, None, None): 8.40,
    }
    assert imported.formats["statsAll"] == ("before 4.0",)


def test_a_name_cut_at_64_is_matched_to_its_route(tmp_path) -> None:
    imported = _imported(_capture(tmp_path, "v5", stats="statsAll_5_1_4.txt"))
    traffic = {(t["topic"], t["group"]): t for t in _rows(imported, "observed_traffic")}
    # Line 5: T_LONG5 cut at 64 (the route's name); its group, 73 characters, cut too and unknown.
    cut_group = "GID_warehouse_inventory_snapshot_changes_consumer_for_erp_connec"
    assert traffic[(T_LONG5, cut_group)]["accumulation"] == 17
    assert any(f"group '{cut_group}' is 64 characters" in w for w in imported.warnings)
    # inventory's two lines: 5.10 once; payments 310.25; T_LONG5 12.60; all default populations.
    assert _populations(_rows(imported, "producers")) == {
        ("inventory", None, None, None): 5.10,
        ("payments", None, None, None): 310.25,
        (T_LONG5, None, None, None): 12.60,
    }
    assert imported.formats["statsAll"] == ("4.9.3 and later",)


def test_a_cut_topic_two_routes_start_with_is_told_by_its_group_or_refused(tmp_path, capsys) -> None:
    # The v4_9 capture plus a route for SLR: "settlement_ledger_reconciliation" (32) can be either.
    root = _capture(tmp_path, "v4_9", stats="statsAll_4_9_2.txt")
    shutil.copy(root / "topicRoute" / f"{T_LONG4}.txt", root / "topicRoute" / f"{SLR}.txt")
    # Line 5's cg_audit subscribes to T_LONG4 only, which tells; line 7's group has no file.
    code = main(["import-mqadmin", "--in", str(root), "--out", str(tmp_path / "snap")])
    assert code == 2
    err = capsys.readouterr().err
    assert (
        f"rmqsim: bad input: {root}/statsAll.txt:7: topic 'settlement_ledger_reconciliation' is cut at 32 "
        f"characters and could be any of {SLR}, {T_LONG4}, and no consumerConnection file says the group "
        "subscribes to one of them: delete the line"
    ) in err
    assert not (tmp_path / "snap").exists()
    # With the consumerConnection of SLR's group, whose 42-character name line 7 cuts at 32, both lines tell.
    audit = (root / "consumerConnection" / "cg_audit.txt").read_text()
    (root / "consumerConnection" / f"{SLR_GROUP}.txt").write_text(audit.replace(T_LONG4, SLR))
    imported = _imported(root)
    traffic = {(t["topic"], t["group"]): t["in_tps"] for t in _rows(imported, "observed_traffic")}
    assert traffic[(T_LONG4, "cg_audit")] == 44.80 and traffic[(SLR, SLR_GROUP)] == 8.40
    assert not [w for w in imported.warnings if "InTPS differs" in w]
    # A NO_CONSUMER line names no group to tell which.
    (root / "statsAll.txt").write_text(
        (TRAFFIC / "statsAll_4_9_2.txt").read_text().rstrip("\n")
        + "\nsettlement_ledger_reconciliation                                              0        0.50"
        "                       40    NO_CONSUMER\n"
    )
    with pytest.raises(InputError, match=r"statsAll\.txt:11: topic .* the line names no group to tell which"):
        _imported(root)


def test_lines_of_one_topic_that_disagree_give_the_largest_rate(tmp_path) -> None:
    root = _capture(
        tmp_path,
        "v5",
        stats=_stats_all(
            _stats_line("inventory", "cg_stock", 5.10, 5.05, 7),
            _stats_line("inventory", "cg_circle", 5.30, 5.20, 3),
            _stats_line("TBW102", None, 0.0),
        ),
    )
    imported = _imported(root)
    assert _populations(_rows(imported, "producers")) == {("inventory", None, None, None): 5.30}
    # observed_traffic keeps each line's own InTPS; TBW102 (no route, no group) too, without OutTPS.
    assert [tuple(t.values()) for t in _rows(imported, "observed_traffic")] == [
        ("inventory", "cg_stock", 5.10, 5.05, 7),
        ("inventory", "cg_circle", 5.30, 5.20, 3),
        ("TBW102", None, 0.0, None, 0),
    ]
    assert (
        f"{root}/statsAll.txt names 1 topic(s) without a topicRoute/ file, so no producers row: TBW102"
        in (imported.warnings)
    )
    assert [w for w in imported.warnings if "InTPS differs" in w] == [
        f"{root}/statsAll.txt: topic inventory's InTPS differs between its lines (5.10 (line 2); "
        "5.30 (line 3)): the rates moved while statsAll ran; the largest, 5.30, is the topic's rate"
    ]
    # payments and T_LONG5 have routes but no line: unknown rates, said once.
    assert any(f"has no line for 2 routed topic(s): payments, {T_LONG5}" in w for w in imported.warnings)


def test_producers_of_a_topic_without_a_rate_send_0_with_a_warning(tmp_path) -> None:
    # statsAll -t orders (pasted, indented 4): no line for T_LONG4, whose producers are then unknown.
    root = _capture(
        tmp_path,
        "v4_9",
        stats="statsAll_4_9_8_pasted.txt",
        producers={
            ("pg_orders", "orders"): "producerConnection/pg_orders__orders.txt",
            ("pg_ledger", T_LONG4): _producer_lines(("10.8.0.1@7", "JAVA", "V5_1_4")),
            ("pg_ledger", "no_such_topic"): _producer_lines(("10.8.0.1@7", "JAVA", "V5_1_4")),
        },
    )
    imported = _imported(root)
    populations = _populations(_rows(imported, "producers"))
    assert populations[(T_LONG4, "pg_ledger", "JAVA", "V5_1_4")] == 0.0
    assert populations[("orders", "pg_orders", "JAVA", "V4_9_8")] == pytest.approx(120.43 * 3 / 5)
    assert len(populations) == 4  # no_such_topic has no route: left out
    path = root / "producerConnection" / "pg_ledger"
    assert (
        f"{path}/{T_LONG4}.txt: {root}/statsAll.txt has no line for {T_LONG4}, so its rate is unknown"
        in "\n".join(imported.warnings)
    )
    assert (
        f"{path}/no_such_topic.txt: no topicRoute/no_such_topic.txt: its producers are left out"
        in imported.warnings
    )


def test_without_stats_all_no_producers_table(tmp_path) -> None:
    root = _capture(
        tmp_path, "v4_9", producers={("pg_orders", "orders"): "producerConnection/pg_orders__orders.txt"}
    )
    imported = _imported(root)
    assert "producers" not in imported.tables and "observed_traffic" not in imported.tables
    assert any(w.startswith("no statsAll.txt: the topics' rates are unknown") for w in imported.warnings)
    assert imported.formats["producerConnection"] == ("3.x to 5.x",)


def test_stats_all_of_a_retry_topic_lists_nothing(tmp_path) -> None:
    imported = _imported(_capture(tmp_path, "v5", stats="statsAll_5_1_4_retry.txt"))
    assert imported.counts["observed_traffic"] == 0
    assert "producers" not in imported.tables  # an empty table would say that nothing is sent


def test_a_producer_connection_file_outside_a_group_folder_is_refused(tmp_path) -> None:
    root = _capture(tmp_path, "v4_9", stats="statsAll_4_9_2.txt")
    (root / "producerConnection").mkdir()
    shutil.copy(TRAFFIC / "producerConnection" / "pg_orders__orders.txt", root / "producerConnection")
    with pytest.raises(InputError, match=r"producerConnection/pg_orders__orders\.txt: expected a folder per"):
        importer.read_capture(str(root))


# ----------------------------------------------------------------------------------- flags


def test_selector_and_send_latency_fault_flags(tmp_path) -> None:
    root = _v4_9_with_traffic(tmp_path)
    out = tmp_path / "snap"
    code = main(
        [
            "import-mqadmin",
            "--in",
            str(root),
            "--out",
            str(out),
            "--selector",
            "pg_orders=hash",
            "--send-latency-fault",
            "pg_orders=True",
            "--send-latency-fault",
            "false",  # every other group's: the default population's
        ]
    )
    assert code == 0
    got = {
        (p["topic"], p["language"]): (p["selector"], p["send_latency_fault_enable"])
        for p in _written(out, "producers")
    }
    assert got == {
        ("orders", "CPP"): ("HASH", True),
        ("orders", "GO"): ("HASH", True),
        ("orders", "JAVA"): ("HASH", True),
        (T_LONG4, None): (None, False),  # no bare --selector: null, ROUND_ROBIN
    }


def test_selector_and_send_latency_fault_arguments() -> None:
    selector = flags.parse_selectors(["round_robin", "g= Hash "])
    assert (selector.default, dict(selector.by_group)) == ("ROUND_ROBIN", {"g": "HASH"})
    fault = flags.parse_send_latency_faults(["TRUE", "g=false"])
    assert (fault.default, dict(fault.by_group), fault.get(None), fault.get("h")) == (
        True,
        {"g": False},
        True,
        True,
    )


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--selector", "g=RANDOM", r"arguments\.--selector: unknown selector 'RANDOM' in 'g=RANDOM'; choose"),
        ("--selector", "=HASH", r"arguments\.--selector: expected GROUP=HASH\|ROUND_ROBIN or "),
        (
            "--send-latency-fault",
            "g=yes",
            r"arguments\.--send-latency-fault: expected true or false, got 'yes'",
        ),
        (
            "--selector",
            "pg_nope=HASH",
            r"arguments\.--selector: no producerConnection/<producer_group>/ folder for .*\(s\) pg_nope",
        ),
    ],
)
def test_bad_producer_flags_are_exit_code_2(tmp_path, capsys, flag, value, message) -> None:
    root = _v4_9_with_traffic(tmp_path)
    code = main(["import-mqadmin", "--in", str(root), "--out", str(tmp_path / "s"), flag, value])
    assert code == 2
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "s").exists()


# -------------------------------------------------------------------------- topicStatus names


def test_a_cut_broker_name_is_matched_refused_when_several_fit_and_unknown_ones_left_out(tmp_path) -> None:
    root = _capture(tmp_path, "v5", status={T_LONG5: f"topicStatus/{T_LONG5}.txt"})
    queues = _rows(_imported(root), "queue_status")
    assert sorted({q["broker_name"] for q in queues}) == ["broker-y", B_LONG5]
    # Another broker that starts with the same 32 characters: the cut name could be either
    # (consumerProgress, which cuts it too, left out to reach topicStatus).
    shutil.rmtree(root / "consumerProgress")
    route = (root / "topicRoute" / f"{T_LONG5}.txt").read_text()
    (root / "topicRoute" / "other.txt").write_text(route.replace(B_LONG5, B_LONG5[:-1] + "2"))
    with pytest.raises(
        InputError,
        match=rf"topicStatus/{T_LONG5}\.txt:4: broker name 'rmq-prod-broker-shanghai-zone-a-' is cut",
    ):
        _imported(root)
    # A broker no route and no clusterList knows: its queues left out, with the lines.
    (root / "topicRoute" / "other.txt").unlink()
    text = (TRAFFIC / "topicStatus" / "payments.txt").read_text().replace("broker-z ", "broker-q ")
    (root / "topicStatus" / "payments.txt").write_text(text)  # broker-z's queues, lines 10 and 11
    imported = _imported(root)
    payments = [q for q in _rows(imported, "queue_status") if q["topic"] == "payments"]
    assert {q["broker_name"] for q in payments} == {"broker-x", "broker-y"} and len(payments) == 8
    assert (
        f"{root}/topicStatus/payments.txt:10 and 1 more line(s): broker broker-q is in no route and not in "
        "clusterList.txt: left out"
    ) in imported.warnings


# ------------------------------------------------------------------- pastes and damaged files


def test_indented_pastes_import_as_the_saved_files(tmp_path) -> None:
    saved = _imported(_v4_9_with_traffic(tmp_path / "saved"))
    root = _v4_9_with_traffic(tmp_path / "pasted")
    for path in [
        root / "statsAll.txt",
        *(root / "producerConnection").rglob("*.txt"),
        *(root / "topicStatus").rglob("*.txt"),
    ]:
        path.write_text("".join(f"        {line}\n" for line in path.read_text().splitlines()))
    pasted = _imported(root)
    for table in ("observed_traffic", "producers", "queue_status"):
        assert _rows(pasted, table) == _rows(saved, table)
    # statsAll_4_9_8_pasted.txt came indented by 4 from a wiki: read as saved.
    wiki = _imported(_capture(tmp_path / "wiki", "v4_9", stats="statsAll_4_9_8_pasted.txt"))
    assert [(t["group"], t["accumulation"]) for t in _rows(wiki, "observed_traffic")] == [
        ("cg_orders", 12),
        ("cg_dup", 0),
        ("cg_legacy_billing", 1523344),
    ]


@pytest.mark.parametrize(
    ("file", "line", "damage", "message"),
    [
        ("statsAll.txt", 7, lambda text: text[:90], "expected 7 fields"),
        (
            "producerConnection/pg_orders/orders.txt",
            5,
            lambda text: text.replace("0003", "0004"),
            "numbered 0004",
        ),
        (f"topicStatus/{T_LONG4}.txt", 6, lambda text: text[:45], "expected a queue"),
    ],
)
def test_a_damaged_file_is_exit_code_2_naming_file_and_line(
    tmp_path, capsys, file, line, damage, message
) -> None:
    root = _v4_9_with_traffic(tmp_path)
    path = root / file
    lines = path.read_text().splitlines()
    lines[line - 1] = damage(lines[line - 1])
    path.write_text("\n".join(lines) + "\n")
    assert main(["import-mqadmin", "--in", str(root), "--out", str(tmp_path / "snap")]) == 2
    assert f"rmqsim: bad input: {path}:{line}: {message}" in capsys.readouterr().err


# ------------------------------------------------------------------------- import, then simulate


def test_an_imported_snapshot_simulates_its_statsall_rates(spark, tmp_path, capsys) -> None:
    root, snap, run = _v4_9_with_traffic(tmp_path), tmp_path / "snap", tmp_path / "run"
    assert main(["import-mqadmin", "--in", str(root), "--out", str(snap)]) == 0
    printed = capsys.readouterr().out
    assert "observed_traffic: 7 rows, producers: 4 rows, queue_status: 16 rows" in printed
    assert "statsAll 4.0 to 4.9.2; producerConnection 3.x to 5.x; topicStatus before 5.3.3" in printed
    assert main(["simulate", "--snapshot", str(snap), "--out", str(run), "--master", "local[2]"]) == 0
    traffic = pq.read_table(run / "queue_traffic").to_pylist()
    assert {q["phase"] for q in traffic} == {0}
    inflow: dict[str, float] = {}
    for q in traffic:
        inflow[q["topic"]] = inflow.get(q["topic"], 0.0) + q["in_msgs_per_s"]
    # The routed topics' statsAll rates: orders 120.43 (its three populations: 72.258 + 24.086 +
    # 24.086), T_LONG4 44.80 (all on broker-hz's 4 queues: broker-c is read-only, perm 4); the retry
    # topics have no statsAll line and no producers. In all 120.43 + 44.80 = 165.23.
    assert (inflow["orders"], inflow[T_LONG4]) == pytest.approx((120.43, 44.80))
    assert sum(inflow.values()) == pytest.approx(165.23)
    long = {(q["broker_name"], q["queue_id"]): q["in_msgs_per_s"] for q in traffic if q["topic"] == T_LONG4}
    assert long == pytest.approx(
        {("broker-c", 0): 0.0, ("broker-c", 1): 0.0, **{(B_LONG4, i): 11.2 for i in range(4)}}
    )
