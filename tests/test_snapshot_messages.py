"""Damaged snapshots get messages that say what is wrong and what to do (docs/CONTRACT.md, section
1: exit code 2), a group rejected for its designated_ips takes its consumer rows with it, and
designated IPs are compared as addresses (section 2d)."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rmqsim import config
from rmqsim.errors import InputError
from rmqsim.snapshot import load
from rmqsim.snapshot.checks import check_snapshot
from rmqsim.snapshot.load import check_layout, load_snapshot
from rmqsim.snapshot.reconcile import reconciliation
from rmqsim.stage.designated import ip_keys
from tests.builders import broker_rows, consumer_rows, make_snapshot, queue_rows, route, staged
from tests.processes import run_cli

FOOTER = "a Parquet file whose footer is damaged or missing (truncated?): restore it or re-export the table"
SKIPPED = "only empty files or names Spark skips, such as _SUCCESS"


def _good(path) -> str:
    return make_snapshot(
        path,
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 2}),
        consumers=consumer_rows("g", "t", ["a"]),
        producers=[{"topic": "t", "msgs_per_s": 10.0}],
    )


def _problem(snapshot: str) -> str:
    """The message of the InputError loading ``snapshot`` without Spark raises."""
    with pytest.raises(InputError) as e:
        load_snapshot(None, snapshot)
    return str(e.value)


def _spark_problem(spark, snapshot: str, monkeypatch) -> str:
    """The same through Spark's reader, as for a snapshot on HDFS or S3."""
    monkeypatch.setattr(load, "is_local", lambda path: False)
    with pytest.raises(InputError) as e:
        load_snapshot(spark, snapshot)
    return str(e.value)


# ------------------------------------------------------------------ columns differing only in case


def test_two_spellings_of_a_column_are_ambiguous_not_one_picked(tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    table = pa.table({"topic": ["t", "t"], "msgs_per_s": [10.0, 8.0], "MSGS_PER_S": [5.0, 4.0]})
    pq.write_table(table, f"{snapshot}/producers/part-00000.parquet")
    assert _problem(snapshot) == (
        "producers.msgs_per_s: columns msgs_per_s and MSGS_PER_S differ only in case "
        "(names are matched ignoring case): keep one"
    )


def test_only_the_contracts_columns_can_be_ambiguous(tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    table = pa.Table.from_arrays(
        [pa.array(["t"]), pa.array(["b"]), pa.array(["x"])], ["Topic", "topic", "note"]
    )
    pq.write_table(table.append_column("NOTE", pa.array(["y"])), f"{snapshot}/producers/part-00000.parquet")
    # Only the contract's columns are ambiguous: note and NOTE are ignored either way.
    assert _problem(snapshot) == (
        "producers.topic: columns Topic and topic differ only in case "
        "(names are matched ignoring case): keep one"
    )


def test_spark_reading_two_spellings_of_a_column_stops_too(spark, tmp_path, monkeypatch) -> None:
    # Spark refuses such a table (COLUMN_ALREADY_EXISTS), naming one spelling: not read as absent.
    snapshot = _good(tmp_path / "s")
    table = pa.table({"topic": ["t"], "msgs_per_s": [10.0], "MSGS_PER_S": [5.0]})
    pq.write_table(table, f"{snapshot}/producers/part-00000.parquet")
    assert _spark_problem(spark, snapshot, monkeypatch) == (
        "producers.msgs_per_s: columns of this name differ only in case (names are matched ignoring case): "
        "keep one"
    )


def test_the_sample_with_a_second_spelling_of_msgs_per_s_exits_2(tmp_path) -> None:
    # The case: the sample's producers with MSGS_PER_S beside msgs_per_s.
    snapshot = tmp_path / "sample"
    shutil.copytree(config.sample_snapshot(), snapshot)
    [part] = (snapshot / "producers").glob("*.parquet")
    table = pq.read_table(part)
    pq.write_table(table.append_column("MSGS_PER_S", pa.repeat(pa.scalar(1.0), table.num_rows)), part)
    done = run_cli("simulate", "--snapshot", str(snapshot), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    # The JVM starts beside the snapshot's checks: its own lines may come before or after.
    assert (
        "rmqsim: bad input: producers.msgs_per_s: columns msgs_per_s and MSGS_PER_S differ only in case "
        "(names are matched ignoring case): keep one"
    ) in done.stderr.splitlines()
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ damaged Parquet files


def test_a_truncated_part_file_is_damaged_not_stray(tmp_path) -> None:
    # Parquet writes its footer last: a copy cut short starts with PAR1 and lacks the end.
    snapshot = _good(tmp_path / "s")
    part = tmp_path / "s" / "consumers" / "part-00000.parquet"
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    with pytest.raises(InputError) as e:
        check_layout(snapshot)  # before Spark starts
    assert str(e.value) == f"consumers: cannot read consumers/part-00000.parquet: {FOOTER}"


def test_a_file_of_the_magic_alone_is_damaged(tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    (tmp_path / "s" / "consumers" / "part-00001.parquet").write_bytes(b"PAR1")
    assert _problem(snapshot) == f"consumers: cannot read consumers/part-00001.parquet: {FOOTER}"


def test_a_footer_with_both_magics_but_broken_inside_names_its_file(tmp_path) -> None:
    # The magic at both ends passes the layout check; pyarrow then fails on the footer, and the
    # file that fails is found only then.
    snapshot = _good(tmp_path / "s")
    (tmp_path / "s" / "consumers" / "part-00001.parquet").write_bytes(b"PAR1" + b"\xff" * 64 + b"PAR1")
    check_layout(snapshot)
    assert _problem(snapshot) == f"consumers: cannot read consumers/part-00001.parquet: {FOOTER}"


def test_a_file_that_is_not_parquet_keeps_its_message(tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    (tmp_path / "s" / "consumers" / "part-00001.csv").write_text("group,topic,client_id\ng,t,b\n")
    assert _problem(snapshot) == (
        "consumers: consumers/part-00001.csv is not a Parquet file: remove it, "
        "or start its name with _ or . (Spark skips those)"
    )


@pytest.mark.parametrize("damaged", ["part-00000.parquet", "part-00001.parquet"])
def test_spark_names_the_file_whose_footer_it_cannot_read(spark, tmp_path, monkeypatch, damaged) -> None:
    # Spark reads the first file's footer for the schema, the others' only in the job: either way
    # the file is named. It does not tell a truncated Parquet file from a stray one: both are said.
    snapshot = _good(tmp_path / "s")
    good = (tmp_path / "s" / "consumers" / "part-00000.parquet").read_bytes()
    (tmp_path / "s" / "consumers" / damaged).write_bytes(good[:-10])
    assert _spark_problem(spark, snapshot, monkeypatch) == (
        f"consumers: cannot read file:{tmp_path}/s/consumers/{damaged}: a stray file, or a Parquet file "
        "whose footer is damaged or missing (truncated?): remove a stray file; restore a damaged one or "
        "re-export the table"
    )


# ------------------------------------------------------------------ table folders without data


def test_a_required_table_folder_with_only_success_holds_no_data(tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    shutil.rmtree(f"{snapshot}/consumers")
    (tmp_path / "s" / "consumers").mkdir()
    (tmp_path / "s" / "consumers" / "_SUCCESS").write_text("")
    with pytest.raises(InputError) as e:
        check_layout(snapshot)
    assert (
        str(e.value) == f"consumers: {snapshot}/consumers holds no data file ({SKIPPED}): re-export the table"
    )


def test_an_optional_table_folder_without_data_is_no_table_and_not_an_empty_one(tmp_path) -> None:
    # Not read as "no producers": an export that died would then silently drop the traffic model.
    snapshot = _good(tmp_path / "s")
    shutil.rmtree(f"{snapshot}/producers")
    (tmp_path / "s" / "producers").mkdir()
    (tmp_path / "s" / "producers" / "part-00000.parquet").write_bytes(b"")  # empty files count as none
    assert _problem(snapshot) == (
        f"producers: {snapshot}/producers holds no data file ({SKIPPED}): "
        "re-export the table, or remove the folder to run without it"
    )


def test_a_table_written_with_no_rows_is_an_empty_table(tmp_path) -> None:
    # Spark writes a DataFrame of no rows as a part file holding the schema: a valid empty table.
    snapshot = _good(tmp_path / "s")
    pq.write_table(
        pa.table({"topic": pa.array([], pa.string()), "msgs_per_s": pa.array([], pa.float64())}),
        f"{snapshot}/producers/part-00000.parquet",
    )
    producers = load_snapshot(None, snapshot).producers
    assert producers is not None and producers.num_rows == 0


def test_spark_reads_a_folder_without_data_as_no_table_too(spark, tmp_path, monkeypatch) -> None:
    snapshot = _good(tmp_path / "s")
    shutil.rmtree(f"{snapshot}/producers")
    (tmp_path / "s" / "producers").mkdir()
    (tmp_path / "s" / "producers" / "_SUCCESS").write_text("")
    assert _spark_problem(spark, snapshot, monkeypatch) == (
        f"producers: {snapshot}/producers holds no data file ({SKIPPED}): "
        "re-export the table, or remove the folder to run without it"
    )


# ------------------------------------------------------------------ designated_ips


def _designated(path) -> str:
    # Group d lists a null second entry: the group and its consumer rows are rejected, except
    # d's row on topic nowhere, which breaks an earlier consumers rule (no route). Group e has a
    # bad row and a good one: the good one is used (a row with a problem ranks after the good
    # ones), the bad one is a duplicate, and e's consumers stay.
    return make_snapshot(
        path,
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 4}) + queue_rows("u", {"b": 2}),
        consumers=[
            {"group": "d", "topic": "t", "client_id": "10.0.0.1@1"},
            {"group": "d", "topic": "u", "client_id": "10.0.0.1@1"},
            {"group": "d", "topic": "t", "client_id": "10.0.0.2@1"},
            {"group": "d", "topic": "nowhere", "client_id": "10.0.0.2@1"},
            {"group": "e", "topic": "t", "client_id": "10.0.0.1@2"},
            {"group": "f", "topic": "t", "client_id": "10.0.0.3@1"},
        ],
        groups=[
            {"group": "d", "designated_ips": ["10.0.0.1", None]},
            {"group": "e", "designated_ips": [None]},
            {"group": "e", "designated_ips": ["10.0.0.1"]},
            {"group": "f", "designated_ips": ["fe80::1", "10.0.0.300", None]},
        ],
    )


def test_a_null_designated_ip_is_named_by_its_place_and_takes_the_groups_consumers(tmp_path) -> None:
    read = load_snapshot(None, _designated(tmp_path / "s"))
    checked = check_snapshot(read, configured_strategies=True)
    rejects = sorted(
        zip(
            checked.rejects["source"].to_pylist(),
            checked.rejects["reason"].to_pylist(),
            checked.rejects["row"].to_pylist(),
            strict=True,
        )
    )
    null_d = "designated_ips entry 2 is null"
    bad_f = "designated_ips entry '10.0.0.300' is not an IP address"  # the first bad entry, not the null
    assert rejects == [
        (
            "consumers",
            "group 'd' is not simulated: " + null_d,
            '{"group":"d","topic":"t","client_id":"10.0.0.1@1"}',
        ),
        (
            "consumers",
            "group 'd' is not simulated: " + null_d,
            '{"group":"d","topic":"t","client_id":"10.0.0.2@1"}',
        ),
        (
            "consumers",
            "group 'd' is not simulated: " + null_d,
            '{"group":"d","topic":"u","client_id":"10.0.0.1@1"}',
        ),
        (
            "consumers",
            "group 'f' is not simulated: " + bad_f,
            '{"group":"f","topic":"t","client_id":"10.0.0.3@1"}',
        ),
        (
            "consumers",
            "topic 'nowhere' has no route (no topic_queues row)",
            '{"group":"d","topic":"nowhere","client_id":"10.0.0.2@1"}',
        ),
        ("groups", bad_f, '{"group":"f","designated_ips":["fe80::1","10.0.0.300",null]}'),
        ("groups", "designated_ips entry 2 is null", '{"group":"d","designated_ips":["10.0.0.1",null]}'),
        (
            "groups",
            "duplicate row for this group: the first good one (in JSON order) is used",
            '{"group":"e","designated_ips":[null]}',
        ),
    ]
    counted = {
        r["table"]: (r["rows_read"], r["rows_used"], r["rows_rejected"])
        for r in reconciliation(read, checked.snapshot, checked.rejects).to_pylist()
    }
    assert counted["groups"] == (4, 1, 3)
    assert counted["consumers"] == (6, 1, 5)  # e's row is the one used
    assert checked.snapshot.consumers["group"].to_pylist() == ["e"]


def test_designated_ips_are_compared_as_addresses() -> None:
    # 4 queues, AVG over the designated clients in cidAll order, the others (aware) hold nothing.
    # g1: FE80:0:0::1 is fe80::1 (a), ::ffff:10.0.0.2 is 10.0.0.2 (b); 10.0.0.3 (c) is not listed.
    #     cidAll (sorted): b, c, a; AVG over the designated b, a: b q0 q1, a q2 q3.
    # g2: RocketMQ's Java client writes an IPv6 address in brackets, in full: [fe80:0:0:0:0:0:0:1]
    #     is fe80::1 (a); fe80::1%eth0 (b) is another address, its zone being part of it: a q0-q3.
    g1 = ["10.0.0.2@b", "10.0.0.3@c", "fe80::1@a"]
    g2 = ["[fe80:0:0:0:0:0:0:1]@a", "fe80::1%eth0@b"]
    run = staged(
        [
            route(
                group="g1", brokers={"b": 4}, clients=g1, designated_ips=["FE80:0:0::1", "::ffff:10.0.0.2"]
            ),
            route(group="g2", brokers={"b": 4}, clients=g2, designated_ips=["fe80::1"]),
        ]
    )
    owned = run.assignments.groupby(["group", "client_id"]).queue_id.apply(sorted).to_dict()
    assert owned == {
        ("g1", g1[0]): [0, 1],
        ("g1", g1[2]): [2, 3],
        ("g2", g2[0]): [0, 1, 2, 3],
    }
    assert run.group_metrics.error.isna().all()


def test_ip_keys_spell_each_address_once() -> None:
    texts = np.array(
        [
            "FE80:0:0::1",
            "[fe80::1]",
            "::ffff:10.0.0.1",
            "10.0.0.1",
            "[10.0.0.1]",
            None,
            "host-a",
            "::10.0.0.1",
        ],
        dtype=object,
    )
    assert ip_keys(texts).tolist() == [
        "fe80::1",
        "fe80::1",
        "10.0.0.1",  # IPv4-mapped: the IPv4 address, as Java's InetAddress reads it
        "10.0.0.1",
        "[10.0.0.1]",  # brackets hold only IPv6 addresses
        None,
        "host-a",  # no address: compared as it is
        "::a00:1",  # IPv4-compatible (deprecated) is an IPv6 address of its own
    ]
