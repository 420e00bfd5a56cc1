"""The producer side's mqadmin outputs read back: statsAll, producerConnection and topicStatus, in the
layouts of tests/data/mqadmin/traffic/ (written as RocketMQ's printf formats print them; the README
there says which version wrote which), damaged copies whose error names the file and the line, and the
matching of a topic name mqadmin cut short to the route's full name. Expected values are read off
the fixtures by hand. No Spark."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from rmqsim.errors import InputError
from rmqsim.mqadmin import producer_connection, stats_all, topic_match, topic_status

DATA = Path(__file__).resolve().parent / "data" / "mqadmin" / "traffic"
SLR = "settlement_ledger_reconciliation_events"  # 39 characters
SLR_GROUP = "cg_settlement_ledger_reconciliation_worker"  # 42
T_LONG4 = "settlement_ledger_reconciliation_events_from_payment_gateway_v2_region_eu"  # 73
T_LONG5 = "warehouse_inventory_snapshot_changes_from_erp_connector_partition_set_A"  # 71
G_LONG5 = "GID_warehouse_inventory_snapshot_changes_consumer_for_erp_connector_set_A"  # 73
EXACT32 = "inventory_reservation_events_v02"  # exactly 32: whole, but as wide as the 32 column
SLR_32 = "settlement_ledger_reconciliation"  # SLR and T_LONG4 both, cut at 32
SUBCOMMAND_FAILED = (
    "org.apache.rocketmq.tools.command.SubCommandException: {command} command failed\n"
    "\tat org.apache.rocketmq.tools.command.MQAdminStartup.main0(MQAdminStartup.java:148)\n"
    "Caused by: org.apache.rocketmq.client.exception.MQClientException: CODE: 17  DESC: No topic route info "
    "in name server for the topic: orderz\n"
    "See http://rocketmq.apache.org/docs/faq/ for further details.\n"
)


def _parse(module, name: str):
    path = DATA / name
    return module.parse(path.read_text(), source=str(path))


def _fails(module, text: str, match: str, source: str = "f.txt") -> InputError:
    with pytest.raises(InputError, match=match) as e:
        module.parse(text, source=source)
    return e.value


def _lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def _replace_line(name: str, number: int, new: str) -> str:
    """The fixture with its line ``number`` (1-based) replaced by ``new``."""
    lines = _lines(name)
    lines[number - 1] = new
    return "\n".join(lines) + "\n"


def _row(r: stats_all.TopicGroupStats) -> tuple:
    return (
        r.line,
        r.topic,
        r.topic_may_be_cut,
        r.group,
        r.group_may_be_cut,
        r.accumulation,
        r.in_tps,
        r.out_tps,
        r.in_msg_24h,
        r.out_msg_24h,
    )


# ------------------------------------------------------------------------------------ statsAll


def test_stats_all_before_4_0_has_no_accumulation_and_cuts_names_at_32() -> None:
    # statsAll_3_5_8.txt: two HotSpot warnings, the header on line 3, twelve topics' lines.
    stats = _parse(stats_all, "statsAll_3_5_8.txt")
    assert (stats.format, stats.name_width, stats.has_accumulation) == ("before 4.0", 32, False)
    assert len(stats.rows) == 12
    by_line = {r.line: _row(r) for r in stats.rows}
    assert by_line[4] == (4, "TBW102", False, None, False, None, 0.0, None, 0, None)
    assert by_line[5] == (5, "orders", False, "cg_orders", False, None, 52.17, 51.90, 3913520, 3911877)
    assert by_line[6] == (6, "orders", False, "cg_audit", False, None, 52.17, 0.0, 3913520, 3290011)
    # SLR and SLR_GROUP are wider than 32: cut, and marked.
    assert by_line[7] == (
        7,
        "settlement_ledger_reconciliation",
        True,
        "cg_settlement_ledger_reconciliat",
        True,
        None,
        8.40,
        8.35,
        725112,
        725101,
    )
    # Exactly 32 characters: whole, but mqadmin would print a longer name so too.
    assert by_line[9] == (9, EXACT32, True, "cg_stock", False, None, 3.05, 3.05, 263520, 263518)
    # A topic with traffic and no consumer group.
    assert by_line[11] == (11, "audit_log_archive", False, None, False, None, 1.25, None, 108004, None)
    assert [r.topic for r in stats.rows if not r.has_consumer] == [
        "TBW102",
        "SELF_TEST_TOPIC",
        "DefaultCluster",
        "audit_log_archive",
        "broker-a",
        "OFFSET_MOVED_EVENT",
        "BenchmarkTest",
        "broker-b",
    ]


def test_stats_all_4_0_to_4_9_2_adds_accumulation_still_32_wide() -> None:
    # statsAll_4_9_2.txt: `statsAll -a` by mqadmin 4.9.2, only the lines with traffic in the last day.
    stats = _parse(stats_all, "statsAll_4_9_2.txt")
    assert (stats.format, stats.name_width, stats.has_accumulation) == ("4.0 to 4.9.2", 32, True)
    assert [_row(r) for r in stats.rows] == [
        (4, "orders", False, "cg_orders", False, 12, 120.43, 118.90, 9861204, 9861190),
        (5, SLR_32, True, "cg_audit", False, 9, 44.80, 44.10, 3870711, 3870702),  # T_LONG4, cut
        (6, "orders", False, "cg_dup", False, 0, 120.43, 118.87, 9861204, 9861204),
        (7, SLR_32, True, "cg_settlement_ledger_reconciliat", True, 5402, 8.40, 2.15, 725112, 719710),
        (8, "audit_log_archive", False, None, False, 0, 1.25, None, 108004, None),  # NO_CONSUMER: 0
        (9, EXACT32, True, "cg_stock", False, 0, 3.05, 3.05, 263520, 263520),
        (10, "orders", False, "cg_legacy_billing", False, 1523344, 120.43, 0.0, 9861204, 0),
    ]


def test_stats_all_from_4_9_3_is_64_wide() -> None:
    stats = _parse(stats_all, "statsAll_5_1_4.txt")
    assert (stats.format, stats.name_width, stats.has_accumulation) == ("4.9.3 and later", 64, True)
    assert len(stats.rows) == 21 and sum(r.has_consumer for r in stats.rows) == 8
    by_line = {r.line: _row(r) for r in stats.rows}
    # Longer than 64: cut, and marked.
    assert by_line[5] == (
        5,
        "warehouse_inventory_snapshot_changes_from_erp_connector_partitio",
        True,
        "GID_warehouse_inventory_snapshot_changes_consumer_for_erp_connec",
        True,
        17,
        12.60,
        12.55,
        1088640,
        1088623,
    )
    assert by_line[9][:3] == (9, "settlement_ledger_reconciliation_events_from_payment_gateway_v2_", True)
    # Longer than 32, shorter than 64: whole now; and the 32-character name is not at the width.
    assert by_line[7] == (7, SLR, False, SLR_GROUP, False, 0, 8.40, 8.40, 725112, 725112)
    assert by_line[11][:3] == (11, EXACT32, False)
    assert by_line[12] == (12, "SCHEDULE_TOPIC_XXXX", False, None, False, 0, 0.35, None, 30240, None)
    assert by_line[22][1:4] == ("rmq-prod-broker-shanghai-zone-a-0001", False, None)


def test_stats_all_pasted_indented_with_t() -> None:
    # statsAll_4_9_8_pasted.txt: `statsAll -t orders`, copied from a wiki with every line indented 4.
    stats = _parse(stats_all, "statsAll_4_9_8_pasted.txt")
    assert stats.format == "4.9.3 and later"
    assert [(r.line, r.topic, r.group, r.accumulation, r.out_tps) for r in stats.rows] == [
        (4, "orders", "cg_orders", 12, 118.90),
        (5, "orders", "cg_dup", 0, 118.87),
        (6, "orders", "cg_legacy_billing", 1523344, 0.0),
    ]


def test_stats_all_never_lists_a_retry_topic() -> None:
    # `statsAll -t %RETRY%cg_pay`: retry topics are skipped before -t is looked at; the header alone.
    stats = _parse(stats_all, "statsAll_5_1_4_retry.txt")
    assert stats.rows == () and stats.name_width == 64


def test_stats_all_reads_tps_written_with_a_decimal_comma() -> None:
    # A JVM whose locale writes decimals with a comma (de_DE, fr_FR, ...) prints %.2f so.
    text = "\n".join(
        line.replace("120.43", "120,43").replace("118.90", "118,90") for line in _lines("statsAll_4_9_2.txt")
    )
    first = stats_all.parse(text, source="f.txt").rows[0]
    assert (first.in_tps, first.out_tps) == (120.43, 118.90)


def test_stats_all_damaged_lines_name_file_and_line() -> None:
    name = "statsAll_4_9_2.txt"
    line7 = _lines(name)[6]
    error = _fails(stats_all, _replace_line(name, 7, line7[:90]), r"s\.txt:7: expected 7 fields", "s.txt")
    assert "found 4" in str(error)
    # A NO_CONSUMER line whose last column was lost.
    line8 = _lines(name)[7]
    _fails(
        stats_all,
        _replace_line(name, 8, line8[: line8.index("NO_CONSUMER")]),
        r"s\.txt:8: expected 7",
        "s.txt",
    )
    _fails(
        stats_all,
        _replace_line(name, 5, _lines(name)[4].replace("44.10", "44.1O")),
        r"s\.txt:5: OutTPS is not a number with decimals: '44\.1O'",
        "s.txt",
    )
    _fails(
        stats_all,
        _replace_line(name, 7, line7.replace(" 5402", "5.4k ")),
        r"s\.txt:7: accumulation is not a whole number: '5\.4k'",
        "s.txt",
    )
    # In the 32-wide layout, a name wider than 32 was not printed by that mqadmin.
    _fails(
        stats_all,
        _replace_line(name, 4, _lines(name)[3].replace("orders  ", SLR + "  ", 1)),
        r"s\.txt:4: topic 'settlement_ledger_reconciliation_events' is longer than the 32 characters",
        "s.txt",
    )


def test_stats_all_header_missing_or_retyped() -> None:
    name = "statsAll_4_9_2.txt"
    without = _replace_line(name, 3, "")  # the header lost: the first line left is a topic's, line 4
    _fails(stats_all, without, r"s\.txt:4: expected the statsAll header", "s.txt")
    retyped = "#Topic #Consumer Group #Accumulation #InTPS #OutTPS #InMsg24Hour #OutMsg24Hour\n"
    error = _fails(stats_all, retyped + "orders cg_orders 12 120.43 118.90 9861204 9861190\n", r"f\.txt:1: ")
    assert "#Consumer Group starts at character 8" in str(error)
    _fails(
        stats_all,
        SUBCOMMAND_FAILED.format(command="StatsAllSubCommand"),
        r"f\.txt:1: mqadmin statsAll failed",
    )
    _fails(stats_all, "RocketMQLog:WARN Please initialize the logger system properly.\n", r"f\.txt: empty")


# ----------------------------------------------------------------------------- producerConnection


def _clients(parsed: producer_connection.ProducerConnection) -> list[tuple]:
    return [(c.line, c.client_id, c.client_addr, c.language, c.version) for c in parsed.connections]


def test_producer_connection_4_9_with_java_go_and_cpp_clients() -> None:
    parsed = _parse(producer_connection, "producerConnection/pg_orders__orders.txt")
    assert (parsed.online, parsed.no_connection, parsed.format) == (True, None, "3.x to 5.x")
    assert _clients(parsed) == [
        (3, "10.6.0.12@20815#2871038412551", "10.6.0.12:51332", "JAVA", "V4_9_8"),
        (4, "10.6.0.21@4711", "10.6.0.21:40122", "GO", "V4_5_2"),
        # Wider than its 32-character column (a unit name): the rest of the line moves right.
        (5, "10.6.0.13@20907#2871102291870@unit-hz", "10.6.0.13:51876", "JAVA", "V4_9_8"),
        (6, "10.6.0.31@23117", "10.6.0.31:38871", "CPP", "V4_6_0"),
        (7, "10.6.0.11@20733#2870998120332", "10.6.0.11:51207", "JAVA", "V4_9_8"),
    ]
    assert parsed.connections[2].ip == "10.6.0.13" and parsed.connections[2].addr_ip == "10.6.0.13"


def test_producer_connection_5_x_prints_the_same_layout() -> None:
    parsed = _parse(producer_connection, "producerConnection/pg_payments__payments.txt")
    assert _clients(parsed) == [
        (1, "10.7.0.11@1#9912093311201", "10.7.0.11:36110", "JAVA", "V5_1_4"),
        (2, "10.7.0.22@88", "10.7.0.22:43120", "GO", "V4_5_2"),
        (3, "10.7.0.12@1#9912093411877", "10.7.0.12:36254", "JAVA", "V4_9_8"),
        (4, "10.7.0.31@311", "10.7.0.31:39017", "CPP", "V4_6_0"),
        (5, "10.7.0.13@1#9912094100230", "10.7.0.13:36391", "JAVA", "V5_3_1"),
    ]


def test_producer_connection_without_producers_is_read_as_offline() -> None:
    # 4.x: the broker knows the group, whose producers have all gone.
    offline = _parse(producer_connection, "producerConnection/pg_offline__orders.txt")
    assert (offline.connections, offline.online) == ((), False)
    assert offline.no_connection == "Not found the producer group connection"
    # 5.x drops a group with its last producer (and any broker that never saw it says so too).
    gone = _parse(producer_connection, "producerConnection/pg_gone__payments.txt")
    assert gone.connections == () and gone.no_connection == "the producer group[pg_gone] not exist"
    # 4.0.0-incubating printed the exception itself, not wrapped in a SubCommandException.
    text = (
        "org.apache.rocketmq.client.exception.MQClientException: Not found the producer group connection\n"
        "For more information, please visit the url, http://rocketmq.apache.org/docs/faq/\n"
    )
    assert producer_connection.parse(text, source="p.txt").no_connection == (
        "Not found the producer group connection"
    )


def test_producer_connection_other_exceptions_and_damage_name_file_and_line() -> None:
    _fails(
        producer_connection,
        SUBCOMMAND_FAILED.format(command="ProducerConnectionSubCommand"),
        r"p\.txt:1: mqadmin producerConnection failed when this was saved",
        "p.txt",
    )
    name = "producerConnection/pg_orders__orders.txt"
    short = _replace_line(name, 4, "0002  10.6.0.21@4711                   10.6.0.21:40122        GO")
    _fails(producer_connection, short, r"p\.txt:4: expected a producer line", "p.txt")
    lost = _replace_line(name, 4, "")  # 0002 lost, the lines after it keep their numbers
    error = _fails(producer_connection, lost, r"p\.txt:5: numbered 0003 where 0002 comes next", "p.txt")
    assert "lost in the copy" in str(error)
    # 3.x prints nothing for a group whose producers have gone: no different from a file never written.
    hotspot = _lines("statsAll_3_5_8.txt")[0] + "\n"  # the JVM's warning, and nothing else
    _fails(
        producer_connection,
        hotspot,
        r"p\.txt: empty: save the output of `mqadmin producerConnection",
        "p.txt",
    )
    statsall = (DATA / "statsAll_4_9_2.txt").read_text()
    _fails(producer_connection, statsall, r"p\.txt:3: expected a producer line", "p.txt")


# ----------------------------------------------------------------------------------- topicStatus


def _queues(parsed: topic_status.TopicStatus) -> list[tuple]:
    return [
        (q.line, q.broker_name, q.broker_may_be_cut, q.queue_id, q.min_offset, q.max_offset, q.last_updated)
        for q in parsed.queues
    ]


def test_topic_status_4_9() -> None:
    parsed = _parse(topic_status, "topicStatus/orders.txt")
    assert (parsed.format, parsed.put_tps, parsed.broker_cut) == ("before 5.3.3", None, 32)
    got = _queues(parsed)
    assert len(got) == 8
    assert got[0] == (4, "broker-a", False, 0, 0, 15234, datetime(2024, 5, 13, 10, 21, 7, 118000))
    assert got[5] == (9, "broker-b", False, 1, 4096, 15210, datetime(2024, 5, 13, 10, 21, 6, 904000))
    assert [(q[1], q[3]) for q in got] == [(b, i) for b in ("broker-a", "broker-b") for i in range(4)]


def test_topic_status_cuts_broker_names_at_32() -> None:
    parsed = _parse(topic_status, f"topicStatus/{T_LONG4}.txt")
    assert [(q.broker_name, q.broker_may_be_cut, q.queue_id) for q in parsed.queues] == [
        ("broker-c", False, 0),
        ("broker-c", False, 1),
        ("broker-hz-finance-settlement-pri", True, 0),
        ("broker-hz-finance-settlement-pri", True, 1),
        ("broker-hz-finance-settlement-pri", True, 2),
        ("broker-hz-finance-settlement-pri", True, 3),
    ]
    assert parsed.queues[3].max_offset == 2187
    assert parsed.queues[1].last_updated == datetime(2024, 5, 9, 18, 2, 44, 297000)
    parsed = _parse(topic_status, f"topicStatus/{T_LONG5}.txt")
    assert parsed.format == "before 5.3.3"  # 5.1.4
    cut = [q.broker_name for q in parsed.queues if q.broker_may_be_cut]
    assert cut == ["rmq-prod-broker-shanghai-zone-a-"] * 4


def test_topic_status_5_3_3_prints_the_topic_put_tps() -> None:
    parsed = _parse(topic_status, "topicStatus/payments.txt")
    assert (parsed.format, parsed.put_tps) == ("5.3.3 and later", 0.0)
    got = _queues(parsed)
    assert len(got) == 10
    assert got[-1] == (11, "broker-z", False, 1, 0, 45098, datetime(2025, 2, 27, 9, 14, 49, 987000))
    assert {q[4] for q in got if q[1] == "broker-y"} == {11500}


def test_topic_status_of_a_queue_never_written_has_no_time() -> None:
    # topicStatus/%RETRY%cg_orders.txt, saved by mqadmin 3.5.8: broker-b's queue holds nothing.
    parsed = _parse(topic_status, "topicStatus/%RETRY%cg_orders.txt")
    assert _queues(parsed) == [
        (4, "broker-a", False, 0, 0, 37, datetime(2016, 9, 14, 16, 42, 5, 771000)),
        (5, "broker-b", False, 0, 0, 0, None),
    ]


def test_topic_status_damage_names_file_and_line() -> None:
    name = "topicStatus/orders.txt"
    line6 = _lines(name)[5]
    _fails(topic_status, _replace_line(name, 6, line6[:40]), r"t\.txt:6: expected a queue", "t.txt")
    _fails(
        topic_status,
        _replace_line(name, 7, _lines(name)[6].replace("15260", "15z60")),
        r"t\.txt:7: expected a queue: .*found 'broker-a +3 +0 +15z60",
        "t.txt",
    )
    _fails(
        topic_status,
        _replace_line(name, 8, _lines(name)[7].replace(",156", "")),
        r"t\.txt:8: expected a queue: .*yyyy-MM-dd HH:mm:ss,SSS",
        "t.txt",
    )
    _fails(
        topic_status,
        _replace_line(name, 9, _lines(name)[8].replace("2024-05-13", "2024-13-05")),
        r"t\.txt:9: last updated '2024-13-05 10:21:06,904' is not a date and time",
        "t.txt",
    )
    without = _replace_line(name, 3, "")
    _fails(topic_status, without, r"t\.txt:4: expected the topicStatus header", "t.txt")
    tps = (DATA / "topicStatus" / "payments.txt").read_text()
    _fails(topic_status, tps + "surprise\n", r"t\.txt:14: unexpected line after Topic Put TPS", "t.txt")
    _fails(
        topic_status,
        tps.replace("TPS: 0.0", "TPS: fast"),
        r"t\.txt:13: Topic Put TPS is not a number",
        "t.txt",
    )
    _fails(
        topic_status, SUBCOMMAND_FAILED.format(command="TopicStatusSubCommand"), r"mqadmin topicStatus failed"
    )


# ---------------------------------------------------------------- every capture, pasted indented

FIXTURES = [
    (stats_all, "statsAll_3_5_8.txt"),
    (stats_all, "statsAll_4_9_2.txt"),
    (stats_all, "statsAll_5_1_4.txt"),
    (stats_all, "statsAll_4_9_8_pasted.txt"),
    (producer_connection, "producerConnection/pg_orders__orders.txt"),
    (producer_connection, "producerConnection/pg_payments__payments.txt"),
    (producer_connection, "producerConnection/pg_offline__orders.txt"),
    (topic_status, "topicStatus/orders.txt"),
    (topic_status, "topicStatus/payments.txt"),
    (topic_status, "topicStatus/%RETRY%cg_orders.txt"),
]


def _indented(text: str, margin: str) -> str:
    return "\n".join(margin + line for line in text.splitlines()) + "\n"


@pytest.mark.parametrize("margin", ["    ", "        ", "\t"], ids=["4 spaces", "8 spaces", "a tab"])
@pytest.mark.parametrize(("module", "name"), FIXTURES, ids=[name for _, name in FIXTURES])
def test_output_indented_alike_reads_as_the_saved_file(module, name: str, margin: str) -> None:
    text = (DATA / name).read_text()
    assert module.parse(_indented(text, margin), source="f.txt") == module.parse(text, source="f.txt")


def test_a_damaged_indented_table_still_names_its_line() -> None:
    name = "statsAll_5_1_4.txt"
    cut = _replace_line(name, 6, _lines(name)[5][:150])  # cg_missing's line, cut after its accumulation
    _fails(stats_all, _indented(cut, "    "), r"s\.txt:6: expected 7 fields", "s.txt")
    name = "topicStatus/payments.txt"
    cut = _replace_line(name, 3, _lines(name)[2][:45])
    _fails(topic_status, _indented(cut, "        "), r"t\.txt:3: expected a queue", "t.txt")


# ------------------------------------------------------------------- cut topic names matched back


def test_a_whole_name_matches_itself_and_a_cut_one_the_only_name_it_starts() -> None:
    routes = {"orders", "payments", T_LONG5, EXACT32}
    whole = topic_match.match_topic("orders", 64, routes)
    assert (whole.topic, whole.may_be_cut, whole.reason, whole.matched) == ("orders", False, None, True)
    printed = "warehouse_inventory_snapshot_changes_from_erp_connector_partitio"
    cut = topic_match.match_topic(printed, 64, routes)
    assert (cut.topic, cut.candidates, cut.may_be_cut) == (T_LONG5, (T_LONG5,), True)
    exact = topic_match.match_topic(EXACT32, 32, routes)  # as wide as the column, and whole
    assert (exact.topic, exact.may_be_cut) == (EXACT32, True)


def test_a_name_that_can_be_no_topic_or_several_says_why() -> None:
    routes = {"orders", SLR, T_LONG4}
    absent = topic_match.match_topic("audit_log_archive", 64, routes)
    assert (absent.topic, absent.reason, absent.candidates) == (None, topic_match.NO_CANDIDATE, ())
    assert absent.explanation == "no topic is named 'audit_log_archive'"
    absent_cut = topic_match.match_topic(SLR_32, 32, {"orders"})
    assert absent_cut.reason == "no candidate" and absent_cut.may_be_cut
    assert absent_cut.explanation == f"no topic starts with '{SLR_32}' (cut at 32 characters)"
    several = topic_match.match_topic(SLR_32, 32, routes)
    assert (several.topic, several.reason, several.candidates) == (None, "several candidates", (SLR, T_LONG4))
    assert several.explanation == (
        f"'settlement_ledger_reconciliation' is cut at 32 characters and could be any of {SLR}, {T_LONG4}"
    )


def test_stats_all_topics_matched_to_the_routes() -> None:
    # The import's use: each statsAll line's topic, by the layout's width, against the routes' topics.
    routes = {"orders", "payments", "inventory", SLR, T_LONG4, T_LONG5, EXACT32}
    old = _parse(stats_all, "statsAll_4_9_2.txt")
    got = {r.line: topic_match.match_topic(r.topic, old.name_width, routes) for r in old.rows}
    assert {line: (m.topic, m.reason) for line, m in got.items()} == {
        4: ("orders", None),
        5: (None, "several candidates"),  # SLR or T_LONG4: 32 characters cannot tell
        6: ("orders", None),
        7: (None, "several candidates"),
        8: (None, "no candidate"),  # audit_log_archive has no route here
        9: (EXACT32, None),
        10: ("orders", None),
    }
    new = _parse(stats_all, "statsAll_5_1_4.txt")
    matched = {r.line: topic_match.match_topic(r.topic, new.name_width, routes).topic for r in new.rows}
    assert (matched[5], matched[7], matched[9], matched[11]) == (T_LONG5, SLR, T_LONG4, EXACT32)
