"""Each mqadmin command's saved output, read back: the 4.9 and 5.x fixtures (tests/data/mqadmin/,
written in the layouts of RocketMQ's printf formats), the variants users meet, and malformed files
whose error names the file and the line. No Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqsim.errors import InputError
from rmqsim.mqadmin import cluster_list, consumer_connection, consumer_progress, fastjson, names, topic_route

DATA = Path(__file__).resolve().parent / "data" / "mqadmin"
T_LONG4 = "settlement_ledger_reconciliation_events_from_payment_gateway_v2_region_eu"
B_LONG4 = "broker-hz-finance-settlement-primary-01"
T_LONG5 = "warehouse_inventory_snapshot_changes_from_erp_connector_partition_set_A"
B_LONG5 = "rmq-prod-broker-shanghai-zone-a-0001"


def _parse(module, path: Path):
    return module.parse(path.read_text(), source=str(path))


def _fails(module, text: str, match: str, source: str = "f.txt") -> InputError:
    with pytest.raises(InputError, match=match) as e:
        module.parse(text, source=source)
    return e.value


# ---------------------------------------------------------------------------------- clusterList


def test_cluster_list_4_9_skips_log_noise_and_reads_an_overflowing_broker_name() -> None:
    parsed = _parse(cluster_list, DATA / "v4_9" / "clusterList.txt")
    assert parsed.format == "4.x"
    got = [(b.cluster, b.broker_name, b.broker_id, b.address) for b in parsed.instances]
    assert got == [
        ("DefaultCluster", "broker-a", 0, "10.1.0.11:10911"),
        ("DefaultCluster", "broker-a", 1, "10.1.0.12:10911"),  # the slave
        ("DefaultCluster", "broker-b", 0, "10.1.0.13:10911"),
        ("DefaultCluster", "broker-c", 0, "10.1.0.14:10911"),
        ("DefaultCluster", B_LONG4, 0, "10.1.0.15:10911"),  # wider than its 22-character column
    ]
    assert parsed.instances[0].line == 4  # two RocketMQLog lines and the header come first


def test_cluster_list_5_x_has_spaces_inside_values() -> None:
    parsed = _parse(cluster_list, DATA / "v5" / "clusterList.txt")
    assert parsed.format == "5.x"
    assert [(b.broker_name, b.broker_id) for b in parsed.instances] == [
        ("broker-x", 0),
        ("broker-x", 1),
        ("broker-y", 0),
        ("broker-z", 0),
        (B_LONG5, 0),
    ]
    assert {b.cluster for b in parsed.instances} == {"rmq-prod"}


def test_cluster_list_with_a_cluster_name_that_has_a_space_is_read_by_layout() -> None:
    fmt = "%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s\n"
    text = fmt % (
        "#Cluster Name",
        "#Broker Name",
        "#BID",
        "#Addr",
        "#Version",
        "#InTPS(LOAD)",
        "#OutTPS(LOAD)",
        "#PCWait(ms)",
        "#Hour",
        "#SPACE",
    )
    text += fmt % (
        "Default Cluster",
        "broker-a",
        0,
        "10.0.0.1:10911",
        "V4_9_4",
        "0.00(0,0ms)",
        "0.00(0,0ms)",
        0,
        "1.00",
        "0.1000",
    )
    (only,) = cluster_list.parse(text, source="c.txt").instances
    assert (only.cluster, only.broker_name, only.address) == ("Default Cluster", "broker-a", "10.0.0.1:10911")


def test_cluster_list_errors_name_file_and_line() -> None:
    good = (DATA / "v4_9" / "clusterList.txt").read_text().splitlines()
    bad = "\n".join([*good[:4], "DefaultCluster    broker-b   zero   nowhere", *good[5:]])
    error = _fails(cluster_list, bad, r"clusterList\.txt:5: expected a broker line", "clusterList.txt")
    assert "broker id (a number)" in str(error)
    _fails(
        cluster_list,
        "#Cluster Name     #Broker Name   #InTotalYest\n",
        r"f\.txt:1: saved with `clusterList -m`",
    )
    _fails(cluster_list, "hello\n", r"f\.txt:1: expected the clusterList header")
    _fails(cluster_list, "RocketMQLog:WARN x\n\n", r"f\.txt: empty")


def test_a_file_holding_mqadmin_s_exception_says_the_command_failed() -> None:
    text = (
        "org.apache.rocketmq.tools.command.SubCommandException: TopicRouteSubCommand command failed\n"
        "\tat org.apache.rocketmq.tools.command.topic.TopicRouteSubCommand.execute(TopicRoute...)\n"
    )
    _fails(topic_route, text, r"f\.txt:1: mqadmin topicRoute failed when this was saved")


# ----------------------------------------------------------------------------------- topicRoute


def test_topic_route_4_9_with_bare_numeric_broker_ids() -> None:
    route = _parse(topic_route, DATA / "v4_9" / "topicRoute" / "orders.txt")
    assert route.format == "4.9.0 and later"
    assert {b.broker_name: b.addresses for b in route.brokers} == {
        "broker-a": ((0, "10.1.0.11:10911"), (1, "10.1.0.12:10911")),
        "broker-b": ((0, "10.1.0.13:10911"),),
    }
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queues] == [
        ("broker-a", 4, 4, 6),
        ("broker-b", 4, 4, 6),
    ]


def test_topic_route_5_x_read_only_broker() -> None:
    route = _parse(topic_route, DATA / "v5" / "topicRoute" / "payments.txt")
    assert {q.broker_name: q.perm for q in route.queues} == {"broker-x": 6, "broker-y": 6, "broker-z": 4}
    assert {b.cluster for b in route.brokers} == {"rmq-prod"}


def test_topic_route_before_4_9_0_spells_the_flag_topicSynFlag() -> None:
    text = "\n".join(
        [
            "{",
            '\t"brokerDatas":[',
            "\t\t{",
            '\t\t\t"brokerAddrs":{0:"10.0.0.1:10911"',
            "\t\t\t},",
            '\t\t\t"brokerName":"b"',
            "\t\t}",
            "\t],",
            '\t"filterServerTable":{},',
            '\t"queueDatas":[',
            "\t\t{",
            '\t\t\t"brokerName":"b",',
            '\t\t\t"perm":6,',
            '\t\t\t"readQueueNums":8,',
            '\t\t\t"topicSynFlag":0,',
            '\t\t\t"writeQueueNums":8',
            "\t\t}",
            "\t]",
            "}",
        ]
    )
    route = topic_route.parse(text, source="r.txt")
    assert route.format == "before 4.9.0"
    assert route.brokers[0].cluster is None  # early 4.x left the cluster out
    assert route.queues[0].read_queue_nums == 8


def test_topic_route_errors_name_file_and_line() -> None:
    good = (DATA / "v5" / "topicRoute" / "inventory.txt").read_text()
    _fails(
        topic_route, good.replace('"perm":6,', "", 1), r"r\.txt:20: queueDatas\[0\]\.perm is missing", "r.txt"
    )
    _fails(
        topic_route,
        good.replace('"readQueueNums":2,', '"readQueueNums":"two",', 1),
        r"r\.txt:20: .*readQueueNums is not a whole number: 'two'",
        "r.txt",
    )
    _fails(
        topic_route,
        good.replace('"brokerName":"broker-w",\n', '"brokerName":"broker-w"\n', 1),
        r"r\.txt:14: not JSON",
        "r.txt",
    )
    _fails(topic_route, "#ClusterName   #BrokerName   #BrokerAddrs\n", r"saved with `topicRoute -l`")


def test_fastjson_reader() -> None:
    value = fastjson.loads('{"a":{0:"x",12:"y"},"b":[1,-2.5,true,null,"q\\"s"]}', source="s")
    assert value == {"a": {"0": "x", "12": "y"}, "b": [1, -2.5, True, None, 'q"s']}
    with pytest.raises(InputError, match=r"s:3: not JSON as mqadmin prints it: expected '}'"):
        fastjson.loads('{\n"a":1\n"b":2}', source="s")


# ---------------------------------------------------------------------------- consumerConnection


def test_consumer_connection_before_4_9_3_has_an_index_column() -> None:
    cc = _parse(consumer_connection, DATA / "v4_9" / "consumerConnection" / "cg_dup.txt")
    assert cc.format == "before 4.9.3"
    assert [(c.client_id, c.client_addr, c.language) for c in cc.connections] == [
        ("10.2.0.32@1", "10.2.0.32:40377", "JAVA"),
        ("10.2.0.31@1", "10.2.0.31:40112", "JAVA"),
        ("10.2.0.33@1", "10.2.0.33:40455", "JAVA"),
        ("10.2.0.32@1", "10.2.0.32:40201", "JAVA"),  # the same id, another connection
    ]
    # The first subscription follows "Below is subscription:" on the same line.
    assert [(s.topic, s.expression) for s in cc.subscriptions] == [("%RETRY%cg_dup", "*"), ("orders", "*")]
    assert (cc.consume_type, cc.message_model) == ("CONSUME_PASSIVELY", "CLUSTERING")


def test_consumer_connection_from_4_9_3_has_a_header() -> None:
    cc = _parse(consumer_connection, DATA / "v5" / "consumerConnection" / "cg_stock.txt")
    assert cc.format == "4.9.3 and later"
    assert [c.client_id for c in cc.connections] == ["10.5.0.22@1#5512093411002", "10.5.0.21@1#5512093311001"]
    assert cc.connections[0].ip == "10.5.0.22" and cc.connections[0].addr_ip == "10.5.0.22"
    assert [(s.topic, s.expression) for s in cc.subscriptions] == [
        (T_LONG5, "*"),  # wider than its 20-character column
        ("%RETRY%cg_stock", "*"),
        ("inventory", "sku || stock"),
    ]
    assert cc.consume_from_where == "CONSUME_FROM_LAST_OFFSET"


def test_consumer_connection_language_column_before_4_9_3() -> None:
    # languages/consumerConnection/cg_old.txt: "%03d  %-32s %-22s %-8s %s", the language fourth.
    cc = _parse(consumer_connection, DATA / "languages" / "consumerConnection" / "cg_old.txt")
    assert cc.format == "before 4.9.3"
    assert [(c.line, c.client_id, c.language, c.version) for c in cc.connections] == [
        (1, "10.3.0.12@4711", "GO", "V4_4_0"),
        (2, "10.3.0.11@27", "CPP", "V4_6_0"),
        (3, "10.3.0.13@30115", "JAVA", "V4_9_2"),
    ]


def test_consumer_connection_language_column_from_4_9_3() -> None:
    # languages/consumerConnection/cg_new.txt: under the #Language header, the third column.
    cc = _parse(consumer_connection, DATA / "languages" / "consumerConnection" / "cg_new.txt")
    assert cc.format == "4.9.3 and later"
    assert [(c.line, c.client_id, c.language) for c in cc.connections] == [
        (2, "10.3.0.22@88", "PYTHON"),
        (3, "10.3.0.21@1#3312000000021", "NODE_JS"),
        (4, "10.3.0.23@4242", "GO"),
    ]


def test_consumer_connection_errors_name_file_and_line() -> None:
    good = (DATA / "v4_9" / "consumerConnection" / "cg_orders.txt").read_text().splitlines()
    bad = "\n".join([*good[:3], "002  10.2.0.11@31245", *good[4:]])
    _fails(consumer_connection, bad, r"c\.txt:4: expected a client line", "c.txt")
    bad = "\n".join([*good[:7], "002  Topic orders", *good[8:]])
    _fails(consumer_connection, bad, r"c\.txt:8: expected a subscription", "c.txt")
    _fails(consumer_connection, "\n".join(good[:5]), r"no 'Below is subscription:' section")


# ------------------------------------------------------------------------------ consumerProgress


def test_consumer_progress_4_9_cuts_long_names_and_shows_no_holder_as_n_a() -> None:
    progress = _parse(consumer_progress, DATA / "v4_9" / "consumerProgress" / "cg_audit.txt")
    assert progress.format == "before 5.1" and progress.shows_holder
    assert (progress.topic_cut, progress.broker_cut) == (64, 32)
    q = progress.queues[3]
    assert (q.topic, q.broker_name, q.queue_id) == (T_LONG4[:64], B_LONG4[:32], 0)
    assert (q.broker_offset, q.consumer_offset, q.client_ip, q.inflight) == (2201, 2201, "10.2.0.23", None)
    dup = _parse(consumer_progress, DATA / "v4_9" / "consumerProgress" / "cg_dup.txt")
    assert [q.client_ip for q in dup.queues if q.topic == "orders"][4:6] == [None, None]


def test_consumer_progress_5_1_has_inflight() -> None:
    progress = _parse(consumer_progress, DATA / "v5" / "consumerProgress" / "cg_pay.txt")
    assert progress.format == "5.1 and later"
    q = progress.queues[2]
    assert (
        q.topic,
        q.broker_name,
        q.queue_id,
        q.broker_offset,
        q.consumer_offset,
        q.client_ip,
        q.inflight,
    ) == (
        "payments",
        "broker-x",
        0,
        99812,
        99810,
        "10.5.0.11",
        2,
    )


def test_consumer_progress_without_s_true_and_retyped_with_single_spaces() -> None:
    text = "#Topic  #Broker Name  #QID  #Broker Offset  #Consumer Offset  #Diff  #LastTime\n"
    text += "orders broker-a 0 10 8 2 2024-05-13 10:21:07\norders broker-a 1 5 5 0 N/A\n"
    text += "\nConsume TPS: 1.00\nDiff Total: 2\n"
    progress = consumer_progress.parse(text, source="p.txt")
    assert not progress.shows_holder
    assert [(q.broker_name, q.queue_id, q.consumer_offset, q.client_ip) for q in progress.queues] == [
        ("broker-a", 0, 8, None),
        ("broker-a", 1, 5, None),
    ]


def test_consumer_progress_errors_name_file_and_line() -> None:
    good = (DATA / "v5" / "consumerProgress" / "cg_circle.txt").read_text().splitlines()
    bad = "\n".join([*good[:3], good[3].replace("4398", "lots"), *good[4:]])
    error = _fails(
        consumer_progress,
        bad,
        r"p\.txt:4: expected 8 columns \(topic, broker name, .*client IP, diff, inflight\) and the last time",
        "p.txt",
    )
    assert "lots" in str(error)
    _fails(
        consumer_progress,
        "\n".join([*good, "surprise"]),
        r"p\.txt:11: unexpected line after the totals",
        "p.txt",
    )
    _fails(consumer_progress, "#Group   #Count  #Version\n", r"saved without -g")


# ------------------------------------------------------------------------------------- names


def test_a_cut_name_matches_the_one_full_name_that_starts_so() -> None:
    known = {T_LONG5, "inventory", T_LONG5[:64]}
    assert names.resolve("inventory", 64, known).name == "inventory"
    assert names.resolve("invent", 64, known).name is None  # shorter than the cut: whole, and unknown
    ambiguous = names.resolve(T_LONG5[:64], 64, known)  # the cut name is itself a topic
    assert ambiguous.name is None and ambiguous.candidates == tuple(sorted([T_LONG5, T_LONG5[:64]]))
    assert names.resolve(T_LONG5[:64], 64, {T_LONG5, "inventory"}).name == T_LONG5


# ------------------------------------------------------------------- output pasted indented


FIXTURES = [
    (cluster_list, DATA / "v4_9" / "clusterList.txt"),
    (cluster_list, DATA / "v5" / "clusterList.txt"),
    (topic_route, DATA / "v4_9" / "topicRoute" / "orders.txt"),
    (topic_route, DATA / "v5" / "topicRoute" / "payments.txt"),
    (consumer_connection, DATA / "v4_9" / "consumerConnection" / "cg_dup.txt"),
    (consumer_connection, DATA / "v5" / "consumerConnection" / "cg_stock.txt"),
    (consumer_progress, DATA / "v4_9" / "consumerProgress" / "cg_audit.txt"),
    (consumer_progress, DATA / "v5" / "consumerProgress" / "cg_pay.txt"),
]


def _indented(text: str, margin: str) -> str:
    """Every line, blank ones included, behind ``margin``: as a web page's code block pastes."""
    return "\n".join(margin + line for line in text.splitlines()) + "\n"


@pytest.mark.parametrize("margin", ["    ", "        ", "\t"], ids=["4 spaces", "8 spaces", "a tab"])
@pytest.mark.parametrize(("module", "path"), FIXTURES, ids=lambda f: getattr(f, "name", None))
def test_output_indented_alike_reads_as_the_saved_file(module, path: Path, margin: str) -> None:
    # The same file, each line behind the same margin: the same parse, line numbers included.
    text = path.read_text()
    assert module.parse(_indented(text, margin), source="f.txt") == module.parse(text, source="f.txt")


@pytest.mark.parametrize("margin", ["    ", "        "], ids=["4 spaces", "8 spaces"])
def test_a_damaged_indented_table_still_names_its_line(margin: str) -> None:
    good = (DATA / "v4_9" / "consumerProgress" / "cg_orders.txt").read_text().splitlines()
    # Line 6 (orders broker-a 0) cut short, as a bad copy leaves it, inside an indented paste.
    cut = [*good[:5], good[5][:110], *good[6:]]
    _fails(consumer_progress, _indented("\n".join(cut), margin), r"p\.txt:6: expected 7 columns", "p.txt")
    # A client line missing its address, language and version (line 4 of cg_orders.txt).
    good = (DATA / "v4_9" / "consumerConnection" / "cg_orders.txt").read_text().splitlines()
    short = [*good[:3], "002  10.2.0.11@31245", *good[4:]]
    _fails(
        consumer_connection, _indented("\n".join(short), margin), r"c\.txt:4: expected a client line", "c.txt"
    )


def test_a_line_indented_less_than_the_first_is_named() -> None:
    # The paste lost line 7's margin (of 4): the header (line 3) keeps 4 characters more than it.
    lines = (DATA / "v4_9" / "consumerProgress" / "cg_orders.txt").read_text().splitlines()
    text = _indented("\n".join(lines), "    ").splitlines()
    text[6] = text[6].lstrip()
    error = _fails(
        consumer_progress, "\n".join(text), r"p\.txt:7: indented 4 character\(s\) less than line 3", "p.txt"
    )
    assert "damaged" in str(error)
