"""Snapshot loading: clear errors naming table and column, before any heavy work."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rmqsim.errors import InputError
from rmqsim.snapshot.load import check_layout, load_snapshot
from tests.builders import broker_rows, consumer_rows, make_snapshot, queue_rows


def _good(path):
    return make_snapshot(
        path,
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 2}),
        consumers=consumer_rows("g", "t", ["a"]),
    )


def _replace(snapshot: str, table: str, arrow: pa.Table) -> None:
    pq.write_table(arrow, f"{snapshot}/{table}/part-00000.parquet")


def test_missing_required_table_names_it(tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    shutil.rmtree(f"{snapshot}/consumers")
    with pytest.raises(InputError) as e:
        check_layout(snapshot)
    assert e.value.table == "consumers"
    assert "required table is missing" in str(e.value)


def test_missing_snapshot_directory(tmp_path) -> None:
    with pytest.raises(InputError, match="is not a directory"):
        check_layout(str(tmp_path / "nope"))


def test_missing_required_column_names_table_and_column(spark, tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    _replace(snapshot, "consumers", pa.table({"group": ["g"], "topic": ["t"]}))
    with pytest.raises(InputError) as e:
        load_snapshot(spark, snapshot)
    assert (e.value.table, e.value.column) == ("consumers", "client_id")
    assert "found: group, topic" in str(e.value)


def test_wrong_type_names_expected_and_found(spark, tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    _replace(
        snapshot,
        "topic_queues",
        pa.table(
            {
                "topic": ["t"],
                "broker_name": ["b"],
                "read_queue_nums": ["8"],
                "write_queue_nums": [8],
                "perm": [6],
            }
        ),
    )
    with pytest.raises(InputError) as e:
        load_snapshot(spark, snapshot)
    assert (e.value.table, e.value.column) == ("topic_queues", "read_queue_nums")
    assert "expected int, found string" in str(e.value)


def test_wider_integers_and_a_single_parquet_file_are_accepted(spark, tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    shutil.rmtree(f"{snapshot}/topic_queues")
    pq.write_table(
        pa.table(
            {
                "topic": ["t"],
                "broker_name": ["b"],
                "read_queue_nums": pa.array([3], pa.int64()),
                "write_queue_nums": pa.array([3], pa.int64()),
                "perm": pa.array([6], pa.int8()),
            }
        ),
        f"{snapshot}/topic_queues.parquet",
    )
    snap = load_snapshot(spark, snapshot)
    [row] = snap.topic_queues.to_pylist()
    assert (row["read_queue_nums"], row["perm"]) == (3, 6)
    assert snap.topic_queues.schema.field("read_queue_nums").type == pa.int32()


def test_integers_beyond_int_saturate_so_the_range_rules_reject_them(spark, tmp_path) -> None:
    # A plain cast would fail the whole run under ANSI, or wrap 2**32 + 4 around to 4 without it.
    snapshot = _good(tmp_path / "s")
    _replace(
        snapshot,
        "topic_queues",
        pa.table(
            {
                "topic": ["t", "u", "v"],
                "broker_name": ["b", "b", "b"],
                "read_queue_nums": pa.array([2**32 + 4, -(2**40), None], pa.int64()),
                "write_queue_nums": pa.array([4, 4, None], pa.int64()),
                "perm": pa.array([6, 6, 6], pa.int64()),
            }
        ),
    )
    rows = load_snapshot(spark, snapshot).topic_queues.sort_by("topic").to_pylist()
    # A null stays null: the null rules name it (write_queue_nums may be null).
    assert [(r["read_queue_nums"], r["write_queue_nums"]) for r in rows] == [
        (2**31 - 1, 4),
        (-(2**31), 4),
        (None, None),
    ]


def test_a_file_that_is_not_parquet_is_an_input_error_naming_the_table(spark, tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    for part in (tmp_path / "s" / "brokers").glob("*.parquet"):
        part.write_text("broker_name,broker_id\nb,0\n")
    with pytest.raises(InputError) as e:
        load_snapshot(spark, snapshot)
    assert e.value.table == "brokers" and "is not a Parquet file" in str(e.value)


def test_a_stray_file_beside_good_parts_is_an_input_error_naming_table_and_file(tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    (tmp_path / "s" / "topic_queues" / "part-00001.csv").write_text("topic,broker_name\nt,b\n")
    with pytest.raises(InputError) as e:
        check_layout(snapshot)
    assert e.value.table == "topic_queues"
    assert "topic_queues/part-00001.csv is not a Parquet file" in str(e.value)


def test_files_spark_skips_and_empty_files_are_not_stray(spark, tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    brokers = tmp_path / "s" / "brokers"
    (brokers / "_SUCCESS").write_text("")
    (brokers / ".part-00000.parquet.crc").write_text("crc")
    (brokers / "_notes.txt").write_text("written by the export job")
    (brokers / "part-00009.parquet").write_bytes(b"")
    check_layout(snapshot)
    assert load_snapshot(spark, snapshot).brokers.num_rows == 1


def test_absent_optional_tables_and_columns_take_defaults(spark, tmp_path) -> None:
    snap = load_snapshot(spark, _good(tmp_path / "s"))
    assert snap.groups.num_rows == 0 and snap.offsets is None and snap.queue_config is None
    [broker] = snap.brokers.to_pylist()
    assert (broker["alive"], broker["machine_room"]) == (True, None)
    assert snap.consumers.column_names == [
        "group",
        "topic",
        "client_id",
        "machine_room",
        "language",
        "capacity_msgs_per_s",
        "designated_aware",
    ]
    assert "consumers.language" not in snap.given and "brokers.alive" in snap.given  # as the files have them


def test_partition_directories_are_string_columns_and_a_column_of_nulls_fits_any_type(
    spark, tmp_path
) -> None:
    # As Spark reads them with partition type inference off: cluster=07 is the name "07", not 7.
    snapshot = _good(tmp_path / "s")
    shutil.rmtree(f"{snapshot}/brokers")
    for name in ("b", "c"):
        folder = tmp_path / "s" / "brokers" / "cluster=07" / f"broker_name={name}"
        folder.mkdir(parents=True)
        # pandas writes a column of None as Arrow's null type
        pq.write_table(pa.table({"broker_id": [0], "machine_room": pa.nulls(1)}), folder / "part-0.parquet")
    rows = load_snapshot(spark, snapshot).brokers.sort_by("broker_name").to_pylist()
    assert [(r["cluster"], r["broker_name"], r["machine_room"]) for r in rows] == [
        ("07", "b", None),
        ("07", "c", None),
    ]


def test_a_parquet_file_with_a_broken_footer_is_an_input_error_naming_the_table(spark, tmp_path) -> None:
    snapshot = _good(tmp_path / "s")
    for part in (tmp_path / "s" / "consumers").glob("*.parquet"):
        part.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    with pytest.raises(InputError) as e:
        load_snapshot(spark, snapshot)
    assert e.value.table == "consumers" and "cannot read" in str(e.value)
