"""mqadmin outputs as people save them: the table found inside what a page kept around it.

Real pastes (tests/data/mqadmin_pastes/; its README.md names each page and what surrounds the table)
are read into the rows their text shows, the values checked by hand against the paste, or refused
naming the line. Hand-made copies put the known tables of tests/data/mqadmin/ inside what pages
keep around an output (a comment's ` * `, a quote's `> `, fences and prose, a telnet or ssh
session, a diff) and read the same rows as the bare table, their lines moved by what was put before; the
mangled ones are refused naming the line. No Spark.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import ModuleType

import pytest

from rmqsim.cli import main
from rmqsim.errors import InputError
from rmqsim.mqadmin import (
    cluster_list,
    consumer_connection,
    consumer_progress,
    importer,
    producer_connection,
    stats_all,
    topic_route,
    topic_status,
)
from rmqsim.mqadmin.lines import is_noise

HERE = Path(__file__).resolve().parent
PASTES = HERE / "data" / "mqadmin_pastes"
MQADMIN = HERE / "data" / "mqadmin"


def _read(module: ModuleType, name: str):
    return module.parse((PASTES / name).read_text(encoding="utf-8"), source=name)


def _refusal(module: ModuleType, text: str, source: str = "f.txt") -> str:
    with pytest.raises(InputError) as e:
        module.parse(text, source=source)
    return str(e.value)


def _instances(parsed: cluster_list.ClusterList) -> list[tuple]:
    return [(b.line, b.cluster, b.broker_name, b.broker_id, b.address) for b in parsed.instances]


def _queues(parsed: topic_status.TopicStatus) -> list[tuple]:
    return [
        (q.line, q.broker_name, q.queue_id, q.min_offset, q.max_offset, q.last_updated) for q in parsed.queues
    ]


def _stats(parsed: stats_all.StatsAll) -> list[tuple]:
    return [
        (r.line, r.topic, r.topic_may_be_cut, r.group, r.accumulation, r.in_tps, r.out_tps, r.in_msg_24h)
        for r in parsed.rows
    ]


# ------------------------------------------------------------------------------- real: topicStatus


def test_a_telnet_session_to_the_name_server() -> None:
    # apache/rocketmq#71: a telnet banner and the typed command above the header (line 12).
    parsed = _read(topic_status, "apache_rocketmq_pr71_telnet.txt")
    assert _queues(parsed) == [
        (13, "broker-a", 0, 0, 20, datetime(2017, 3, 3, 16, 19, 36, 904000)),
        (14, "broker-a", 1, 0, 19, datetime(2017, 3, 3, 16, 19, 36, 916000)),
        (15, "broker-a", 2, 0, 18, datetime(2017, 3, 3, 16, 0, 37, 802000)),
        (16, "broker-a", 3, 0, 18, datetime(2017, 3, 3, 16, 0, 37, 813000)),
    ]


def test_a_java_comment_with_a_star_on_every_line() -> None:
    # qiuxianbao/rocketmq: the output inside a Javadoc block, each line behind "         * ".
    parsed = _read(topic_status, "qiuxianbao_TopicStatusSubCommand.java")
    got = _queues(parsed)
    assert len(got) == 24
    assert [(q[1], q[2]) for q in got] == [(f"broker-{b}", i) for b in "abc" for i in range(8)]
    assert got[0] == (23, "broker-a", 0, 56889, 68763, datetime(2025, 3, 12, 18, 3, 34, 74000))
    assert got[15] == (38, "broker-b", 7, 56918, 68717, datetime(2025, 3, 12, 18, 3, 12, 245000))
    assert got[-1] == (46, "broker-c", 7, 56884, 68727, datetime(2025, 3, 12, 18, 2, 48, 812000))


def test_a_markdown_session_of_prompts_and_commands() -> None:
    # b43646/RocketMQInAction: fenced, a topic list and prompts before, a shell comment after.
    got = _queues(_read(topic_status, "rocketmqinaction_topic.md"))
    assert got == [
        (38 + n, f"broker-{b}", i, 0, 0, None)
        for n, (b, i) in enumerate((b, i) for b in "ab" for i in range(8))
    ]


def test_a_readme_with_edited_broker_names_reads_by_white_space() -> None:
    # dyrnq/springcloud-rocketmq-example: the broker names were renamed "q1" and "q3" in the page,
    # the columns left where they were; the clusterList before the table is skipped.
    got = _queues(_read(topic_status, "springcloud_example_2m2s.md"))
    assert got == [
        (20 + n, b, i, 0, 0, None) for n, (b, i) in enumerate((b, i) for b in ("q1", "q3") for i in range(3))
    ]


def test_three_outputs_in_one_paste_are_refused() -> None:
    text = (PASTES / "springcloud_example_2m2s_whole.md").read_text(encoding="utf-8")
    assert _refusal(topic_status, text, "p.md") == (
        "p.md:33: a second topicStatus output starts here, after the one at line 19: which one is meant "
        "cannot be told; save one output per file"
    )


def test_an_html_page_s_source() -> None:
    # learn.lianglianglee.com, as served: <pre><code>, the command, RocketMQLog lines.
    assert _queues(_read(topic_status, "lianglianglee_15_topicStatus.html")) == [
        (11, "fat_mq_c", 0, 6, 10, datetime(2020, 7, 24, 14, 29, 57, 707000)),
        (12, "fat_mq_c", 1, 4, 8, datetime(2020, 7, 24, 14, 31, 32, 213000)),
        (13, "fat_mq_c", 2, 20, 22, datetime(2020, 7, 24, 14, 35, 52, 752000)),
        (14, "fat_mq_c", 3, 14, 20, datetime(2020, 7, 24, 14, 28, 34, 287000)),
    ]


# --------------------------------------------------------------------------------- real: statsAll


def test_stats_all_of_a_5_3_1_cluster_after_its_cluster_list() -> None:
    # b43646/RocketMQInAction: clusterList's table, a blank line and a prompt come first.
    parsed = _read(stats_all, "rocketmqinaction_cluster.md")
    assert (parsed.format, len(parsed.rows)) == ("4.9.3 and later", 18)
    assert all(r.group is None and r.accumulation == 0 for r in parsed.rows)  # NO_CONSUMER lines
    got = _stats(parsed)
    assert got[0] == (16, "rmq_sys_SYNC_BROKER_MEMBER_VM-0-3-centos", False, None, 0, 0.0, None, 0)
    assert got[3] == (19, "test", False, None, 0, 0.2, None, 45)
    assert got[-1] == (33, "broker-a", False, None, 0, 0.0, None, 0)


def test_stats_all_of_4_8_0_between_fences_with_a_topic_cut_at_32() -> None:
    # ittarvin/hermes: the broker's own topic is longer than 32 and printed cut.
    parsed = _read(stats_all, "hermes_statsAll.md")
    assert (parsed.format, len(parsed.rows)) == ("4.0 to 4.9.2", 10)
    got = _stats(parsed)
    assert got[5] == (13, "TopicTest", False, None, 0, 0.0, None, 100)
    assert got[7] == (15, "baoxiandaili-wangpengfei-1.noval", True, None, 0, 0.0, None, 0)


def test_stats_all_in_html() -> None:
    assert _stats(_read(stats_all, "lianglianglee_15_statsAll.html")) == [
        (11, "trade_eticket_created_topic", False, "trade_eticket_created_consumer", 0, 0.0, 0.0, 0)
    ]


# ------------------------------------------------------------------------------ real: clusterList


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (  # apache/rocketmq#3275: the shell's errors follow the table on the next lines
            "apache_rocketmq_issue3275.md",
            [
                (8, "DefaultCluster", "broker-a", 0, "192.168.2.184:10911"),
                (9, "DefaultCluster", "broker-a", 1, "192.168.2.217:10911"),
                (10, "DefaultCluster", "broker-b", 0, "192.168.2.15:10911"),
                (11, "DefaultCluster", "broker-b", 1, "192.168.2.222:10911"),
            ],
        ),
        (
            "rocketmqinaction_cluster.md",
            [
                (8, "DefaultCluster", "broker-a", 0, "172.19.0.3:10911"),
                (9, "DefaultCluster", "broker-a", 1, "172.19.0.7:10911"),
                (10, "DefaultCluster", "broker-b", 0, "172.19.0.12:10911"),
                (11, "DefaultCluster", "broker-b", 1, "172.19.0.10:10911"),
            ],
        ),
        (
            "springcloud_example_2m2s.md",
            [
                (6, "DefaultCluster", "q1", 0, "192.168.88.123:11911"),
                (7, "DefaultCluster", "q1", 1, "192.168.88.123:12911"),
                (8, "DefaultCluster", "q3", 0, "192.168.88.123:13911"),
                (9, "DefaultCluster", "q3", 1, "192.168.88.123:14911"),
            ],
        ),
        ("rocketmq_docker_compose.md", [(11, "DefaultCluster", "63950574b491", 0, "172.17.0.3:10911")]),
        (  # a broker name wider than its column
            "rocketmq_docker_kubernetes.md",
            [(7, "DefaultCluster", "rocketmq-7697d9d574-b5z7g", 0, "192.168.196.14:10911")],
        ),
        (
            "hermes_clusterList.md",
            [(10, "DefaultCluster", "baoxiandaili-wangpengfei-1.novalocal", 0, "172.17.47.163:10911")],
        ),
        ("lianglianglee_15_clusterList.html", [(11, "fat_mq", "fat_mq_c", 0, "x.x.x.x:10911")]),
        (  # the page collapsed the spacing: read by white space, the values being whole words
            "lianglianglee_18_clusterList.html",
            [
                (
                    7 + n,
                    "ClusterA",
                    f"broker-{b}",
                    i,
                    f"x.x.x.x:{10915 if (b, i) in (('b', 1), ('d', 1)) else 10911}",
                )
                for n, (b, i) in enumerate((b, i) for b in "abcd" for i in (0, 1))
            ],
        ),
    ],
)
def test_cluster_list_pastes(name: str, expected: list[tuple]) -> None:
    assert _instances(_read(cluster_list, name)) == expected


# -------------------------------------------------------------------------------- real: refused


@pytest.mark.parametrize(
    ("module", "name", "message"),
    [
        (
            cluster_list,
            "alibaba_rocketmq_issue152.txt",
            "alibaba_rocketmq_issue152.txt:2: mqadmin clusterList failed when this was saved "
            "(com.alibaba.rocketmq.remoting.exception.RemotingConnectException: connect to <null> failed); "
            "run it again, or remove the file",
        ),
        (  # the page elided rows with "...": reading the rest would lose queues
            consumer_progress,
            "lianglianglee_15_consumerProgress.html",
            "lianglianglee_15_consumerProgress.html:14: expected 7 columns (topic, broker name, queue id, "
            "broker offset, consumer offset, client IP, diff) and the last time, found '...'",
        ),
        (
            topic_route,
            "lianglianglee_15_topicRoute.html",
            "lianglianglee_15_topicRoute.html:11: '&quot;' is the page's HTML, not mqadmin's output: copy "
            "the output from the page as it shows it, or save it again from mqadmin",
        ),
    ],
)
def test_real_pastes_that_cannot_be_read_are_refused_naming_the_line(module, name: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        _read(module, name)
    assert str(e.value) == message


# ---------------------------------------------------------------- hand-made: one table, many wraps

BARE = [
    (cluster_list, "v4_9/clusterList.txt", "clusterList -n 10.1.0.1:9876"),
    (cluster_list, "v5/clusterList.txt", "clusterList -n 10.4.0.1:9876"),
    (topic_route, "v4_9/topicRoute/orders.txt", "topicRoute -n 10.1.0.1:9876 -t orders"),
    (
        consumer_connection,
        "v4_9/consumerConnection/cg_dup.txt",
        "consumerConnection -n 10.1.0.1:9876 -g cg_dup",
    ),
    (
        consumer_connection,
        "v5/consumerConnection/cg_stock.txt",
        "consumerConnection -n 10.4.0.1:9876 -g cg_stock",
    ),
    (
        consumer_progress,
        "v5/consumerProgress/cg_pay.txt",
        "consumerProgress -n 10.4.0.1:9876 -g cg_pay -s true",
    ),
    (
        producer_connection,
        "traffic/producerConnection/pg_orders__orders.txt",
        "producerConnection -n 10.6.0.1:9876 -g pg_orders -t orders",
    ),
    (  # no producer online: mqadmin's exception, read as such
        producer_connection,
        "traffic/producerConnection/pg_offline__orders.txt",
        "producerConnection -n 10.6.0.1:9876 -g pg_offline -t orders",
    ),
    (stats_all, "traffic/statsAll_5_1_4.txt", "statsAll -n 10.4.0.1:9876"),
    (stats_all, "traffic/statsAll_3_5_8.txt", "statsAll -n 10.1.0.1:9876"),
    (topic_status, "traffic/topicStatus/payments.txt", "topicStatus -n 10.4.0.1:9876 -t payments"),
]


def _behind(text: str, prefix: str) -> list[str]:
    """Every line behind ``prefix``; a blank one keeps the marker alone, as editors leave it."""
    return [prefix + line if line.strip() else prefix.rstrip() for line in text.splitlines()]


def _comment(text: str, command: str) -> tuple[str, int]:
    head = ["/**", " * What `mqadmin " + command + "` printed:", " *"]
    return "\n".join([*head, *_behind(text, " * "), " */", "class Capture {}"]) + "\n", len(head)


def _quote(text: str, command: str) -> tuple[str, int]:
    head = ["On Monday, ops wrote:", "> $ sh mqadmin " + command]
    return "\n".join([*head, *_behind(text, "> "), "", "Thanks, that helps."]) + "\n", len(head)


def _shell_comment(text: str, command: str) -> tuple[str, int]:
    head = ["#!/bin/sh", f"# mqadmin {command}, saved 2024-05-13:"]
    return "\n".join([*head, *_behind(text, "# "), "exit 0"]) + "\n", len(head)


def _tab(text: str, command: str) -> tuple[str, int]:
    head = [f"Output of mqadmin {command}:", ""]
    body = ["\t" + line for line in text.splitlines()]
    return "\n".join([*head, *body, "", "End of output."]) + "\n", len(head)


def _fenced(text: str, command: str) -> tuple[str, int]:
    head = ["Here is what I got, any idea?", "", "```text", f"$ bin/mqadmin {command}"]
    tail = ["```", "", "The broker log shows nothing."]
    return "\n".join([*head, *text.splitlines(), *tail]) + "\n", len(head)


def _tilde(text: str, command: str) -> tuple[str, int]:
    head = ["~~~", f"[root@mq-admin-01 bin]# sh mqadmin {command}"]
    return "\n".join([*head, *text.splitlines(), "[root@mq-admin-01 bin]# ", "~~~"]) + "\n", len(head)


def _telnet(text: str, command: str) -> tuple[str, int]:
    star = "*" * 52
    head = [
        "$ telnet 10.1.0.1 9875",
        "Trying 10.1.0.1...",
        "Connected to 10.1.0.1.",
        "Escape character is '^]'.",
        star,
        "Welcome . CMD for example ",
        star,
        command.split(" -n ")[0],
    ]
    return "\n".join([*head, *text.splitlines(), "Connection closed by foreign host."]) + "\n", len(head)


def _ssh(text: str, command: str) -> tuple[str, int]:
    head = [
        "Last login: Mon May 13 10:20:01 2024 from 10.9.0.7",
        "",
        "Welcome to Alibaba Cloud Elastic Compute Service !",
        "",
        f"[admin@mq-admin-01 ~]$ ./mqadmin {command}",
        "Java HotSpot(TM) 64-Bit Server VM warning: ignoring option PermSize=128m; support was removed in "
        "8.0",
    ]
    return "\n".join([*head, *text.splitlines(), "[admin@mq-admin-01 ~]$ logout"]) + "\n", len(head)


def _diff(text: str, command: str) -> tuple[str, int]:
    # A pull request that adds the output to a document: every line behind the diff's "+".
    head = ["```diff", "@@ -12,0 +13,40 @@", f"+$ mqadmin {command}"]
    return "\n".join([*head, *("+" + line for line in text.splitlines()), "```"]) + "\n", len(head)


WRAPS = [_comment, _quote, _shell_comment, _tab, _fenced, _tilde, _telnet, _ssh, _diff]


def _renumbered(value, number: Callable[[int], int]):
    """``value`` (a parse: dataclasses and tuples of them) with every ``line`` it holds renumbered."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _renumbered(getattr(value, f.name), number) for f in dataclasses.fields(value)}
        if "line" in fields:
            fields["line"] = number(value.line)
        return dataclasses.replace(value, **fields)
    if isinstance(value, tuple):
        return tuple(_renumbered(v, number) for v in value)
    return value


@pytest.mark.parametrize("wrap", WRAPS, ids=lambda w: w.__name__.strip("_"))
@pytest.mark.parametrize(("module", "name", "command"), BARE, ids=[name for _, name, _ in BARE])
def test_a_wrapped_table_reads_as_the_bare_one(module, name: str, command: str, wrap) -> None:
    bare = (MQADMIN / name).read_text()
    text, before = wrap(bare, command)
    wrapped = module.parse(text, source="f.txt")
    assert _renumbered(wrapped, lambda line: line - before) == module.parse(bare, source="f.txt")


DOUBLE = [(module, name) for module, name, _ in BARE if name != "v5/consumerConnection/cg_stock.txt"]


@pytest.mark.parametrize(("module", "name"), DOUBLE, ids=[name for _, name in DOUBLE])
def test_a_double_spaced_table_reads_the_same_values(module, name: str) -> None:
    # A blog engine that puts a blank line after every line: the lines move, the values do not.
    bare = (MQADMIN / name).read_text()
    spaced = "".join(line + "\n\n" for line in bare.splitlines())
    # Line n of the file moved to line 2n - 1.
    assert _renumbered(module.parse(spaced, source="f.txt"), lambda line: (line + 1) // 2) == module.parse(
        bare, source="f.txt"
    )


def test_double_spaced_subscriptions_past_4_9_3_are_refused() -> None:
    # "topic  expression" after a blank line cannot be told from prose: the table ends before the
    # subscriptions, and a consumerConnection without its settings is refused.
    bare = (MQADMIN / "v5" / "consumerConnection" / "cg_stock.txt").read_text()
    spaced = "".join(line + "\n\n" for line in bare.splitlines())
    assert _refusal(consumer_connection, spaced) == (
        "f.txt:11: the output ends here, without ConsumeType, MessageModel, ConsumeFromWhere: was it cut "
        "short when it was copied?"
    )


# --------------------------------------------------------------- hand-made: mangled, and refused


def _table_only(name: str) -> list[str]:
    return [line for line in (MQADMIN / name).read_text().splitlines() if line.strip() and not is_noise(line)]


JOINED = [  # (module, fixture, the refusal of its table joined on line 3)
    (
        cluster_list,
        "v4_9/clusterList.txt",
        "the clusterList header runs on into '0 10.1.0.11:10911 V4_9_2 120.4'",
    ),
    (
        topic_route,
        "v4_9/topicRoute/orders.txt",
        'the topicRoute output runs together on this line (from \'{ "brokerDatas":[ { "brokerAdd\')',
    ),
    (
        consumer_connection,
        "v5/consumerConnection/cg_stock.txt",
        "the consumerConnection header runs on into '10.5.0.22@1#5512093411002 10.5'",
    ),
    (
        consumer_connection,
        "v4_9/consumerConnection/cg_dup.txt",
        "the consumerConnection output runs together on this line (from 'Below is subscription:001 Topi')",
    ),
    (
        consumer_progress,
        "v5/consumerProgress/cg_pay.txt",
        "the consumerProgress header runs on into '0 3 3 10.5.0.11 0 0 2025-03-02'",
    ),
    (producer_connection, "traffic/producerConnection/pg_orders__orders.txt", "expected a producer line"),
    (
        stats_all,
        "traffic/statsAll_5_1_4.txt",
        "the statsAll header runs on into '0 0.00 0 NO_CONSUMER payments '",
    ),
    (
        topic_status,
        "traffic/topicStatus/payments.txt",
        "the topicStatus header runs on into '0 12000 99812 2025-03-02 14:01'",
    ),
]


@pytest.mark.parametrize(("module", "name", "message"), JOINED, ids=[name for _, name, _ in JOINED])
def test_a_table_joined_on_one_line_is_refused_naming_it(module, name: str, message: str) -> None:
    # What a page without <pre> shows: every row on one line, its spacing collapsed.
    joined = _collapsed(" ".join(_table_only(name)))
    if module is topic_route:  # a JSON alone on a line is still JSON: the command line joined too
        joined = (
            "$ bin/mqadmin topicRoute -t orders RocketMQLog:WARN Please initialize the logger system. "
            + joined
        )
    refusal = _refusal(module, f"The output:\n\n{joined}\n\nThat is all.\n")
    assert refusal.startswith(f"f.txt:3: {message}")


def test_the_messages_of_a_joined_table_in_full() -> None:
    joined = _collapsed(" ".join(_table_only("traffic/topicStatus/payments.txt")))
    assert _refusal(topic_status, f"<p>{joined}</p>\n") == (
        "f.txt:1: the topicStatus output runs together on this line (from '#Broker Name #QID #Min Offset '): "
        "the page lost its line breaks; paste it as mqadmin printed it, a row per line"
    )
    assert _refusal(topic_status, f"{joined}\n") == (
        "f.txt:1: the topicStatus header runs on into '0 12000 99812 2025-03-02 14:01': the rows were joined "
        "onto it when the page was copied; paste the output as mqadmin printed it, a row per line"
    )


def _collapsed(text: str) -> str:
    """What a page that collapses white space shows: each run of spaces and tabs one space."""
    return re.sub(r"[ \t]+", " ", text)


def test_collapsed_spacing_that_hides_the_columns_is_refused_naming_the_line() -> None:
    # statsAll: the name columns' width (32 or 64, which tells a cut name) is gone with the spacing.
    stats = _collapsed((MQADMIN / "traffic" / "statsAll_4_9_2.txt").read_text())
    assert _refusal(stats_all, stats) == (
        "f.txt:3: #Consumer Group starts at character 8: no mqadmin prints that (it starts at 35, names cut "
        "at 32, before 4.9.3; at 67, names cut at 64, from 4.9.3 on, with #Accumulation from 4.0 on); was "
        "the header retyped, or its spacing collapsed by a page? Without it, which names were cut cannot be "
        "told"
    )
    # A name with a space in it: single spaces no longer tell where it ends.
    cluster = "%-16s  %-22s  %-4s  %-22s %-16s\n"
    text = cluster % ("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version")
    text += cluster % ("Default Cluster", "broker-a", 0, "10.0.0.1:10911", "V4_9_4")
    assert _refusal(cluster_list, _collapsed(text)) == (
        "f.txt:2: expected a broker line: cluster, broker name, broker id (a number) and address (host:port)"
    )
    status = (
        (MQADMIN / "traffic" / "topicStatus" / "orders.txt").read_text().replace("broker-b ", "broker b ")
    )
    assert _refusal(topic_status, _collapsed(status)) == (
        "f.txt:8: expected a queue: broker name, queue id, min offset, max offset (whole numbers) and the "
        "last updated time (yyyy-MM-dd HH:mm:ss,SSS, or nothing); found 'broker b 0 4120 15177 2024-05-13 "
        "10:21:07,156'"
    )
    progress = (
        (MQADMIN / "v5" / "consumerProgress" / "cg_pay.txt").read_text().replace("broker-y ", "broker y ")
    )
    assert _refusal(consumer_progress, _collapsed(progress)) == (
        "f.txt:3: expected 8 columns (topic, broker name, queue id, broker offset, consumer offset, client "
        "IP, diff, inflight) and the last time, found '%RETRY%cg_pay broker y 0 0 0 10.5.0.12 0 0 N/A'"
    )
    # And the same tables, their names whole words, read as printed (the layout fixes no cut there).
    assert _queues(
        topic_status.parse(_collapsed(status.replace("broker b ", "broker-b ")), source="f.txt")
    ) == (
        _queues(
            topic_status.parse(
                (MQADMIN / "traffic" / "topicStatus" / "orders.txt").read_text(), source="f.txt"
            )
        )
    )


@pytest.mark.parametrize(
    ("module", "name"),
    [
        (cluster_list, "v4_9/clusterList.txt"),
        (topic_route, "v4_9/topicRoute/orders.txt"),
        (consumer_connection, "v4_9/consumerConnection/cg_dup.txt"),
        (consumer_connection, "v5/consumerConnection/cg_stock.txt"),
        (consumer_progress, "v5/consumerProgress/cg_pay.txt"),
        (producer_connection, "traffic/producerConnection/pg_orders__orders.txt"),
        (topic_status, "traffic/topicStatus/payments.txt"),
    ],
)
def test_collapsed_spacing_of_whole_word_values_reads_the_same(module, name: str) -> None:
    # Nothing of these is lost with the spacing: every value is a word, and each column comes in turn.
    bare = (MQADMIN / name).read_text()
    assert module.parse(_collapsed(bare), source="f.txt") == module.parse(bare, source="f.txt")


def test_a_row_that_lost_its_quote_marker_is_refused() -> None:
    text, _ = _quote(
        (MQADMIN / "traffic" / "topicStatus" / "orders.txt").read_text(), "topicStatus -t orders"
    )
    lines = text.splitlines()
    lines[6] = lines[6][2:]  # file line 7: broker-a's queue 2 without its "> "
    assert _refusal(topic_status, "\n".join(lines)) == (
        "f.txt:7: a row without the '> ' that the table's header (line 5) starts with: was it damaged when "
        "it was copied? Give every line of the table the same prefix, or none"
    )


def test_prose_stuck_to_the_last_row_is_refused_not_skipped() -> None:
    # A line right after the rows may be a row the copy damaged: it is not taken for prose.
    text = (MQADMIN / "traffic" / "topicStatus" / "orders.txt").read_text() + "broker-b  4\n"
    assert _refusal(topic_status, text).startswith("f.txt:12: expected a queue: ")
    # After a blank line, prose ends the table.
    text = (MQADMIN / "traffic" / "topicStatus" / "orders.txt").read_text() + "\nThe queues look fine.\n"
    assert len(topic_status.parse(text, source="f.txt").queues) == 8


def test_a_page_with_a_failed_run_and_a_listing_is_refused() -> None:
    offline = (MQADMIN / "traffic" / "producerConnection" / "pg_offline__orders.txt").read_text()
    online = (MQADMIN / "traffic" / "producerConnection" / "pg_orders__orders.txt").read_text()
    assert _refusal(producer_connection, offline + "\nAn hour later:\n\n" + online) == (
        "f.txt:18: a producer line, and mqadmin's 'Not found the producer group connection' too: which "
        "output is meant cannot be told; save one output per file"
    )
    failed = "> org.apache.rocketmq.tools.command.SubCommandException: TopicStatusSubCommand command failed\n"
    assert _refusal(topic_status, "On Monday, ops wrote:\n" + failed) == (
        "f.txt:2: mqadmin topicStatus failed when this was saved (org.apache.rocketmq.tools.command."
        "SubCommandException: TopicStatusSubCommand command failed); run it again, or remove the file"
    )


def test_a_consumer_connection_cut_before_its_settings_is_refused() -> None:
    lines = (MQADMIN / "v5" / "consumerConnection" / "cg_stock.txt").read_text().splitlines()
    assert _refusal(consumer_connection, "\n".join(lines[:9]) + "\n\nThat is all I have.\n") == (
        "f.txt:9: the output ends here, without ConsumeType, MessageModel, ConsumeFromWhere: was it cut "
        "short when it was copied?"
    )


def test_a_consumer_progress_with_a_retyped_header_takes_topics_as_cut_at_64() -> None:
    text = "#Topic #Broker Name #QID #Broker Offset #Consumer Offset #Diff #LastTime\n"
    text += "orders broker-a 0 10 8 2 N/A\n"
    parsed = consumer_progress.parse(text, source="f.txt")
    assert (parsed.topic_cut, parsed.broker_cut) == (64, 32)


def test_a_byte_order_mark_and_no_break_spaces_read_as_saved() -> None:
    # A Windows editor's BOM before the header; a browser's copy with no-break spaces for spaces.
    bare = (MQADMIN / "traffic" / "topicStatus" / "orders.txt").read_text()
    copied = "\ufeff" + bare.replace(" ", "\xa0")
    assert topic_status.parse(copied, source="f.txt") == topic_status.parse(bare, source="f.txt")


# ----------------------------------------------------------------------------------- the importer


def _pasted(path: Path) -> None:
    """The file as a Markdown page keeps it: prose, a fence, the prompt and command, prose after."""
    text = path.read_text()
    path.write_text(
        f"Saved from the wiki:\n\n```\n[root@mq bin]# sh mqadmin {path.stem}\n{text}```\n\nSee above.\n"
    )


def test_a_capture_pasted_from_pages_imports_as_the_saved_one(tmp_path) -> None:
    capture = Path(shutil.copytree(MQADMIN / "v4_9", tmp_path / "v4_9"))
    for path in capture.rglob("*.txt"):
        _pasted(path)
    pasted = importer.to_tables(importer.read_capture(str(capture)), strategies={"cg_audit": "AVG_BY_CIRCLE"})
    saved = importer.to_tables(
        importer.read_capture(str(MQADMIN / "v4_9")), strategies={"cg_audit": "AVG_BY_CIRCLE"}
    )
    assert {n: t.to_pylist() for n, t in pasted.tables.items()} == {
        n: t.to_pylist() for n, t in saved.tables.items()
    }


def test_a_mangled_paste_is_exit_code_2_naming_file_and_line(tmp_path, capsys) -> None:
    capture = Path(shutil.copytree(MQADMIN / "v4_9", tmp_path / "v4_9"))
    path = capture / "clusterList.txt"
    path.write_text("<p>" + " ".join(_table_only("v4_9/clusterList.txt")) + "</p>\n")
    assert main(["import-mqadmin", "--in", str(capture), "--out", str(tmp_path / "snap")]) == 2
    assert f"rmqsim: bad input: {path}:1: the clusterList output runs together on this line" in (
        capsys.readouterr().err
    )
