"""`rmqsim import-mqadmin`: the fixtures' directories turned into snapshots (no Spark), and the
errors a user meets: each names the file and the line."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rmqsim.cli import main
from rmqsim.errors import InputError
from rmqsim.mqadmin import flags, importer

DATA = Path(__file__).resolve().parent / "data" / "mqadmin"
T_LONG4 = "settlement_ledger_reconciliation_events_from_payment_gateway_v2_region_eu"
B_LONG4 = "broker-hz-finance-settlement-primary-01"
T_LONG5 = "warehouse_inventory_snapshot_changes_from_erp_connector_partition_set_A"
B_LONG5 = "rmq-prod-broker-shanghai-zone-a-0001"


def _rows(imported: importer.Imported, table: str) -> list[dict]:
    return imported.tables[table].to_pylist()


def _import(name: str, **strategies: str) -> importer.Imported:
    return importer.to_tables(importer.read_capture(str(DATA / name)), strategies=strategies)


def test_4_9_capture() -> None:
    imported = _import("v4_9", cg_audit="AVG_BY_CIRCLE")
    assert imported.formats == {
        "clusterList": ("4.x",),
        "topicRoute": ("4.9.0 and later",),
        "consumerConnection": ("before 4.9.3",),
        "consumerProgress": ("before 5.1",),
    }
    brokers = {
        (b["broker_name"], b["broker_id"]): (b["address"], b["alive"]) for b in _rows(imported, "brokers")
    }
    assert brokers[("broker-a", 1)] == ("10.1.0.12:10911", True)  # the slave
    assert len(brokers) == 5
    queues = {
        (q["topic"], q["broker_name"]): (q["read_queue_nums"], q["perm"])
        for q in _rows(imported, "topic_queues")
    }
    assert queues[(T_LONG4, "broker-c")] == (2, 4)  # read-only
    assert queues[("%RETRY%cg_orders", "broker-a")] == (1, 6)
    assert len(queues) == 7
    # The client id connected twice is kept twice: the broker's cidAll has it twice.
    dup = [
        c["client_id"]
        for c in _rows(imported, "consumers")
        if (c["group"], c["topic"]) == ("cg_dup", "orders")
    ]
    assert sorted(dup) == ["10.2.0.31@1", "10.2.0.32@1", "10.2.0.32@1", "10.2.0.33@1"]
    groups = {g["group"]: (g["strategy"], g["message_model"]) for g in _rows(imported, "groups")}
    assert groups == {
        "cg_audit": ("AVG_BY_CIRCLE", "CLUSTERING"),
        "cg_dup": (None, "CLUSTERING"),
        "cg_orders": (None, "CLUSTERING"),
    }
    # Names consumerProgress cut at 64 and 32 characters, back to the routes' full names.
    observed = {
        (o["group"], o["topic"], o["broker_name"], o["queue_id"]): o
        for o in _rows(imported, "observed_assignments")
    }
    long = observed[("cg_audit", T_LONG4, B_LONG4, 1)]
    assert (long["client_id"], long["client_ip"]) == ("10.2.0.21@1204", "10.2.0.21")
    no_holder = observed[("cg_dup", "orders", "broker-b", 0)]
    assert (no_holder["client_id"], no_holder["client_ip"]) == (None, None)
    assert len(observed) == 25  # %RETRY%cg_dup's two queues are left out: its route was not saved
    offsets = {
        (o["group"], o["topic"], o["broker_name"], o["queue_id"]): o for o in _rows(imported, "offsets")
    }
    assert (
        offsets[("cg_dup", "orders", "broker-b", 0)]["broker_offset"],
        offsets[("cg_dup", "orders", "broker-b", 0)]["consumer_offset"],
    ) == (14987, 11230)
    assert len(imported.warnings) == 2
    assert all("%RETRY%cg_dup" in w for w in imported.warnings)
    assert "consumerConnection/cg_dup.txt:8 subscribes %RETRY%cg_dup" in imported.warnings[0]


def test_5_x_capture() -> None:
    imported = _import("v5", cg_stock="AVG_BY_CIRCLE")
    assert imported.formats["consumerConnection"] == ("4.9.3 and later",)
    assert imported.formats["consumerProgress"] == ("5.1 and later",)
    brokers = {(b["broker_name"], b["broker_id"]): b for b in _rows(imported, "brokers")}
    # broker-w is only in inventory's route: taken from there, alive, and the import says so.
    assert brokers[("broker-w", 0)]["address"] == "10.4.0.21:10911" and brokers[("broker-w", 0)]["alive"]
    assert [w for w in imported.warnings if "broker-w" in w and "not in clusterList.txt" in w]
    observed = {
        (o["group"], o["topic"], o["broker_name"], o["queue_id"]): o
        for o in _rows(imported, "observed_assignments")
    }
    assert observed[("cg_stock", T_LONG5, B_LONG5, 3)]["client_id"] == "10.5.0.22@1#5512093411002"
    # Two clients on 10.5.0.13: the IP alone cannot say which holds the queue.
    shared = observed[("cg_pay", "payments", "broker-z", 0)]
    assert (shared["client_id"], shared["client_ip"]) == (None, "10.5.0.13")
    # 10.5.0.33 is not in consumerConnection: kept by IP.
    unlisted = observed[("cg_missing", "payments", "broker-y", 3)]
    assert (unlisted["client_id"], unlisted["client_ip"]) == (None, "10.5.0.33")
    assert len(observed) == 40


def test_import_writes_a_snapshot(tmp_path) -> None:
    out = tmp_path / "snap"
    code = main(
        [
            "import-mqadmin",
            "--in",
            str(DATA / "v5"),
            "--out",
            str(out),
            "--strategy",
            "cg_stock=avg_by_circle",
        ]
    )
    assert code == 0
    for table in ("brokers", "topic_queues", "consumers", "groups", "offsets", "observed_assignments"):
        assert (out / table / "part-00000.parquet").exists()
    groups = pq.read_table(out / "groups").to_pylist()
    assert {g["group"]: g["strategy"] for g in groups}["cg_stock"] == "AVG_BY_CIRCLE"


def test_strategy_arguments() -> None:
    assert flags.parse_strategies(["AVG_BY_CIRCLE", "g=avg"]) == ("AVG_BY_CIRCLE", {"g": "AVG"})
    with pytest.raises(InputError, match=r"arguments\.--strategy: unknown strategy 'NOPE'"):
        flags.parse_strategies(["g=nope"])
    with pytest.raises(InputError, match="no consumerConnection/<group>.txt for group"):
        _import("v5", cg_nope="AVG")


def test_the_language_column_becomes_consumers_language() -> None:
    # languages/: cg_old.txt (before 4.9.3) and cg_new.txt (#Language header), both on orders.
    consumers = _rows(_import("languages"), "consumers")
    got = sorted((c["group"], c["topic"], c["client_id"], c["language"]) for c in consumers)
    assert got == [
        ("cg_new", "orders", "10.3.0.21@1#3312000000021", "NODE_JS"),
        ("cg_new", "orders", "10.3.0.22@88", "PYTHON"),
        ("cg_new", "orders", "10.3.0.23@4242", "GO"),
        ("cg_old", "orders", "10.3.0.11@27", "CPP"),
        ("cg_old", "orders", "10.3.0.12@4711", "GO"),
        ("cg_old", "orders", "10.3.0.13@30115", "JAVA"),
    ]
    # The Java fixtures' clients say JAVA, once per connection.
    v4 = _rows(_import("v4_9"), "consumers")
    assert {c["language"] for c in v4} == {"JAVA"} and all("language" in c for c in v4)


def test_without_the_flags_groups_has_no_balancing_columns() -> None:
    groups = _import("languages").tables["groups"]
    assert groups.column_names == ["group", "strategy", "message_model"]


def test_rebalance_and_request_mode_flags_fill_the_groups_columns(tmp_path, capsys) -> None:
    out = tmp_path / "snap"
    code = main(
        [
            "import-mqadmin",
            "--in",
            str(DATA / "languages"),
            "--out",
            str(out),
            "--rebalance",
            "BROKER",  # every group but cg_new
            "--rebalance",
            "cg_new=client",
            "--request-mode",
            "cg_old=pop:2",
            "--request-mode",
            "cg_new=PULL",
        ]
    )
    assert code == 0
    groups = {g["group"]: g for g in pq.read_table(out / "groups").to_pylist()}
    got = {
        name: (g["rebalance"], g["request_mode"], g["pop_share_queue_num"])
        for name, g in sorted(groups.items())
    }
    assert got == {"cg_new": ("client", "PULL", None), "cg_old": ("broker", "POP", 2)}
    consumers = pq.read_table(out / "consumers").to_pylist()
    assert {c["client_id"]: c["language"] for c in consumers}["10.3.0.11@27"] == "CPP"
    assert "warning" not in capsys.readouterr().out  # POP only where the broker balances


def test_pop_where_the_broker_does_not_balance_is_imported_with_a_warning() -> None:
    # cg_old is balanced by the proxy, cg_new by its clients: POP counts for neither.
    imported = importer.to_tables(
        importer.read_capture(str(DATA / "languages")),
        rebalance=flags.parse_rebalances(["cg_old=proxy"]),
        request_mode=flags.parse_request_modes(["POP"]),
    )
    assert imported.tables["groups"].column_names == [
        "group",
        "strategy",
        "message_model",
        "rebalance",
        "request_mode",
    ]
    got = {g["group"]: (g["rebalance"], g["request_mode"]) for g in _rows(imported, "groups")}
    assert got == {"cg_new": (None, "POP"), "cg_old": ("proxy", "POP")}
    assert [w for w in imported.warnings if "--request-mode" in w] == [
        "--request-mode POP for cg_new, cg_old, which the broker does not balance: the request mode "
        "counts only with --rebalance GROUP=broker, so it is ignored there"
    ]


def test_rebalance_and_request_mode_arguments() -> None:
    rebalance = flags.parse_rebalances(["Broker", "g= proxy "])
    assert (rebalance.default, dict(rebalance.by_group)) == ("broker", {"g": "proxy"})
    modes = flags.parse_request_modes(["pop", "g=POP:-1", "h=POP:0", "k=pull"])
    assert modes.default == importer.RequestMode("POP", None)
    assert dict(modes.by_group) == {
        "g": importer.RequestMode("POP", -1),
        "h": importer.RequestMode("POP", 0),
        "k": importer.RequestMode("PULL", None),
    }


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        (
            "--rebalance",
            "g=brokers",
            r"arguments\.--rebalance: unknown rebalance 'brokers' in 'g=brokers'; choose",
        ),
        (
            "--rebalance",
            "=broker",
            r"arguments\.--rebalance: expected GROUP=client\|broker\|proxy or .*'=broker'",
        ),
        ("--request-mode", "g=PUSH", r"arguments\.--request-mode: unknown request mode 'PUSH' in 'g=PUSH'"),
        (
            "--request-mode",
            "g=POP:two",
            r"arguments\.--request-mode: POP:N takes a whole number N .*'two' in 'g=POP:two'",
        ),
        (
            "--request-mode",
            "g=POP:",
            r"arguments\.--request-mode: POP:N takes a whole number N .*'' in 'g=POP:'",
        ),
        (
            "--request-mode",
            "g=PULL:3",
            r"arguments\.--request-mode: only POP takes a number \(POP:N\), got 'g=PULL:3'",
        ),
        ("--request-mode", "POP:99999999999", r"arguments\.--request-mode: POP:N takes a whole number"),
    ],
)
def test_bad_flag_values_are_exit_code_2_naming_flag_and_value(
    tmp_path, capsys, flag, value, message
) -> None:
    code = main(
        ["import-mqadmin", "--in", str(DATA / "languages"), "--out", str(tmp_path / "s"), flag, value]
    )
    assert code == 2
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "s").exists()


def test_flags_naming_a_group_without_a_capture_are_errors() -> None:
    capture = importer.read_capture(str(DATA / "languages"))
    with pytest.raises(
        InputError, match=r"arguments\.--rebalance: no consumerConnection/<group>\.txt for group\(s\) cg_x"
    ):
        importer.to_tables(capture, rebalance=flags.parse_rebalances(["cg_x=broker"]))
    with pytest.raises(
        InputError, match=r"arguments\.--request-mode: no consumerConnection/<group>\.txt .* cg_y"
    ):
        importer.to_tables(capture, request_mode=flags.parse_request_modes(["cg_y=POP"]))


def test_an_indented_capture_imports_as_the_saved_one(tmp_path) -> None:
    # Every file of v4_9/ pasted from a web page: each line behind 8 spaces.
    capture = _copy(tmp_path, "v4_9")
    for path in capture.rglob("*.txt"):
        path.write_text("".join(f"        {line}\n" for line in path.read_text().splitlines()))
    indented = importer.to_tables(
        importer.read_capture(str(capture)), strategies={"cg_audit": "AVG_BY_CIRCLE"}
    )
    saved = _import("v4_9", cg_audit="AVG_BY_CIRCLE")
    assert {n: t.to_pylist() for n, t in indented.tables.items()} == {
        n: t.to_pylist() for n, t in saved.tables.items()
    }


def _copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(DATA / name, tmp_path / name))


def test_a_cut_topic_that_two_routes_start_with_is_an_error_naming_file_and_line(tmp_path) -> None:
    capture = _copy(tmp_path, "v5")
    route = capture / "topicRoute" / f"{T_LONG5}.txt"
    shutil.copy(route, capture / "topicRoute" / f"{T_LONG5[:64]}_B.txt")
    with pytest.raises(InputError, match=r"consumerProgress/cg_stock\.txt:7: topic '.*' is cut at 64") as e:
        importer.to_tables(importer.read_capture(str(capture)))
    assert T_LONG5 in str(e.value) and f"{T_LONG5[:64]}_B" in str(e.value)


def test_a_malformed_file_is_exit_code_2_naming_file_and_line(tmp_path, capsys) -> None:
    capture = _copy(tmp_path, "v4_9")
    path = capture / "consumerProgress" / "cg_orders.txt"
    lines = path.read_text().splitlines()
    lines[5] = lines[5][:110]  # a line cut short by a bad copy
    path.write_text("\n".join(lines) + "\n")
    code = main(["import-mqadmin", "--in", str(capture), "--out", str(tmp_path / "snap")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"rmqsim: bad input: {path}:6: expected 7 columns" in err


def test_missing_folders_are_named(tmp_path) -> None:
    (tmp_path / "c" / "topicRoute").mkdir(parents=True)
    with pytest.raises(InputError, match=r"c/topicRoute: empty"):
        importer.read_capture(str(tmp_path / "c"))
    with pytest.raises(InputError, match=r"arguments\.--in: .* is not a directory"):
        importer.read_capture(str(tmp_path / "nope"))
