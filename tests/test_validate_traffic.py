"""`rmqsim validate`'s traffic side: the modelled phase 0 inflow beside the measured one.

The comparison (rmqsim.validate.traffic) is tested without Spark on hand-built queue_traffic rows,
whose modelled rates are worked out by hand from docs/CONTRACT.md section 2c; the command is run
end to end on small snapshots written here.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rmqsim import schemas
from rmqsim.cli import main
from rmqsim.validate import run as validate
from rmqsim.validate import traffic
from tests.builders import broker_rows, consumer_rows, make_snapshot, queue_rows

A, B = "broker-a", "broker-b"
WRITTEN_AT = datetime(2026, 11, 20, 10, 0, 0)


# ------------------------------------------------------------------ inputs


def _queues(
    topic: str, broker: str, rates: list[float], *, written: bool = True, read: bool = True, first: int = 0
) -> list[dict]:
    """queue_traffic rows of one broker: queues first, first + 1, ... with these modelled rates."""
    return [
        {
            "topic": topic,
            "broker_name": broker,
            "queue_id": first + i,
            "in_msgs_per_s": float(rate),
            "written": written,
            "read": read,
        }
        for i, rate in enumerate(rates)
    ]


def _queue_traffic(*groups: list[dict]) -> pa.Table:
    rows = [{"scenario": "baseline", "phase": 0, **r, "backlog": None} for g in groups for r in g]
    return pa.Table.from_pylist(rows, schema=schemas.arrow(schemas.QUEUE_TRAFFIC))


def _offsets(topic: str, broker: str, rates: list[float | None], first: int = 0) -> list[dict]:
    """Two groups' offsets rows per queue, both with the queue's in_tps (the queue's, not the group's)."""
    return [
        {
            "group": g,
            "topic": topic,
            "broker_name": broker,
            "queue_id": first + i,
            "broker_offset": 10,
            "consumer_offset": 5,
            "in_tps": rate,
        }
        for i, rate in enumerate(rates)
        for g in ("g1", "g2")
    ]


def _table(spec: schemas.TableSpec, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schemas.arrow(spec.schema))


def _brokers(**latency: float | None) -> pa.Table:
    """broker-a and broker-b (masters, alive), with the send latencies given (broker_a=...)."""
    return _table(
        schemas.BROKERS,
        [
            {
                "broker_name": b,
                "broker_id": 0,
                "alive": True,
                "send_latency_ms": latency.get(b.replace("-", "_")),
            }
            for b in (A, B)
        ],
    )


def _producer(topic: str, rate: float, **columns: object) -> dict:
    return {"topic": topic, "msgs_per_s": rate, **columns}


def _compare(
    queue_traffic: pa.Table,
    *,
    producers: list[dict] | None = None,
    offsets: list[dict] | None = None,
    observed_traffic: list[dict] | None = None,
    queue_status: list[dict] | None = None,
    brokers: pa.Table | None = None,
    topics: list[str] | None = None,
) -> traffic.Comparison:
    return traffic.compare(
        queue_traffic,
        topics=pa.array(topics or sorted(set(queue_traffic["topic"].to_pylist()))),
        brokers=_brokers() if brokers is None else brokers,
        producers=None if producers is None else _table(schemas.PRODUCERS, producers),
        offsets=None if offsets is None else _table(schemas.OFFSETS, offsets),
        observed_traffic=None
        if observed_traffic is None
        else _table(schemas.OBSERVED_TRAFFIC, observed_traffic),
        queue_status=None if queue_status is None else _table(schemas.QUEUE_STATUS, queue_status),
    )


def _by_queue(compared: traffic.Comparison, *columns: str) -> dict[tuple[str, int], tuple]:
    """(broker, queue id) -> the columns' values."""
    return {
        (r["broker_name"], r["queue_id"]): tuple(r[c] for c in columns) for r in compared.queues.to_pylist()
    }


def _topic(compared: traffic.Comparison, topic: str = "t") -> dict:
    return next(r for r in compared.topics.to_pylist() if r["topic"] == topic)


def _status(topic: str, broker: str, written: list[bool]) -> list[dict]:
    return [
        {
            "topic": topic,
            "broker_name": broker,
            "queue_id": i,
            "min_offset": 0,
            "max_offset": 10 if w else 0,
            "last_updated": WRITTEN_AT if w else None,
        }
        for i, w in enumerate(written)
    ]


# ------------------------------------------------------------------ agreement and the tolerance


def test_round_robin_measured_as_modelled_agrees() -> None:
    # 4 queues on broker-a, one Java round-robin producer at 400 msgs/s: 400 / 4 = 100 each.
    # Measured 104, 97, 100, 99: the topic's mean queue rate is 400 / 4 = 100, so a queue agrees
    # within 1 + 5% x 100 = 6 msgs/s; every one does. The topic: 400 against 400 (the in_tps sum),
    # within 1 + 5% x 400 = 21.
    compared = _compare(
        _queue_traffic(_queues("t", A, [100, 100, 100, 100])),
        producers=[_producer("t", 400.0)],
        offsets=_offsets("t", A, [104, 97, 100, 99]),
    )
    assert _by_queue(compared, "observed_msgs_per_s", "difference", "tolerance", "agrees", "cause") == {
        (A, 0): (104.0, 4.0, 6.0, True, None),
        (A, 1): (97.0, -3.0, 6.0, True, None),
        (A, 2): (100.0, 0.0, 6.0, True, None),
        (A, 3): (99.0, -1.0, 6.0, True, None),
    }
    topic = _topic(compared)
    assert topic == {
        "topic": "t",
        "rate_source": "producers",
        "requested_msgs_per_s": 400.0,
        "modelled_msgs_per_s": 400.0,
        "observed_msgs_per_s": 400.0,  # 104 + 97 + 100 + 99
        "observed_from": "offsets.in_tps",
        "difference": 0.0,
        "tolerance": 21.0,
        "agrees": True,
        "cause": None,
        "queues": 4,
        "queues_observed": 4,
        "queues_differing": 0,
        "queue_causes": [],
    }


def test_a_queue_nothing_measured_is_not_compared() -> None:
    # Queue 3 has no in_tps and no topicStatus row: observed, difference and agrees are null.
    compared = _compare(
        _queue_traffic(_queues("t", A, [100, 100, 100, 100])),
        producers=[_producer("t", 400.0)],
        offsets=_offsets("t", A, [100, 100, 100, None]),
    )
    assert _by_queue(compared, "observed_msgs_per_s", "difference", "agrees", "cause")[(A, 3)] == (
        None,
        None,
        None,
        None,
    )
    topic = _topic(compared)
    # Without observed_traffic the topic's total would be the in_tps sum, but a written queue has
    # none: 300 is no total, and the topic is not compared.
    assert (topic["observed_msgs_per_s"], topic["agrees"], topic["cause"], topic["queues_observed"]) == (
        None,
        None,
        None,
        3,
    )


# ------------------------------------------------------------------ causes of a queue's difference


def test_a_hash_producer_names_the_queues_that_differ() -> None:
    # A HASH producer at 400 msgs/s without producer_keys: modelled evenly, 100 each. Measured
    # 250, 50, 100, 0 (the key mix): the same 400 in all (scale 1), so no share is "right" unless
    # it agrees; queue 2 agrees (within 6), the others differ by 150, 50 and 100: HASH_PRODUCER,
    # which ranks above NO_OBSERVED_TRAFFIC for queue 3's 0.
    compared = _compare(
        _queue_traffic(_queues("t", A, [100, 100, 100, 100])),
        producers=[_producer("t", 400.0, selector="HASH")],
        offsets=_offsets("t", A, [250, 50, 100, 0]),
    )
    assert _by_queue(compared, "agrees", "cause") == {
        (A, 0): (False, "HASH_PRODUCER"),
        (A, 1): (False, "HASH_PRODUCER"),
        (A, 2): (True, None),
        (A, 3): (False, "HASH_PRODUCER"),
    }
    topic = _topic(compared)
    assert (topic["agrees"], topic["cause"], topic["queues_differing"], topic["queue_causes"]) == (
        True,
        None,
        3,
        ["HASH_PRODUCER"],
    )


def test_round_robin_measured_uneven_is_uneven_sends_or_no_traffic() -> None:
    # The same measurements under a round-robin producer: nothing in the snapshot explains them.
    # Queue 3 shows 0 where 100 is modelled: NO_OBSERVED_TRAFFIC (0 is within 6 of nothing).
    compared = _compare(
        _queue_traffic(_queues("t", A, [100, 100, 100, 100])),
        producers=[_producer("t", 400.0)],
        offsets=_offsets("t", A, [250, 50, 100, 0]),
    )
    assert _by_queue(compared, "cause") == {
        (A, 0): ("UNEVEN_SENDS",),
        (A, 1): ("UNEVEN_SENDS",),
        (A, 2): (None,),
        (A, 3): ("NO_OBSERVED_TRAFFIC",),
    }
    assert _topic(compared)["queue_causes"] == ["NO_OBSERVED_TRAFFIC", "UNEVEN_SENDS"]  # CAUSES' order


def test_a_topic_writing_above_its_read_queues_measured_on_read_queues_only() -> None:
    # 8 write and 4 read queues on broker-a, no producers row. consumerProgress lists read queues
    # only, so in_tps is measured on 0..3 (100 each); topicStatus shows 4..7 written; statsAll
    # says the topic takes 800 msgs/s. The model's rate is the in_tps sum, 400, sent round robin
    # over 8 write queues: 50 each (modelled as such here).
    # Queues 0..3: 100 against 50; the tolerance is 1 + 5% x (800 / 8) = 6, so they differ. Their
    # share is right: scale = (4 x 100) / (4 x 50) = 2, and 50 x 2 = 100. The topic's rate cause:
    # its rate is the in_tps sum and 4..7 are written outside mqAll with no rate: WRITE_ABOVE_READ.
    # The topic: 400 against 800, outside 1 + 5% x 800 = 41: WRITE_ABOVE_READ.
    compared = _compare(
        _queue_traffic(_queues("t", A, [50] * 4), _queues("t", A, [50] * 4, read=False, first=4)),
        offsets=_offsets("t", A, [100, 100, 100, 100]),
        observed_traffic=[{"topic": "t", "group": g, "in_tps": 800.0} for g in ("g1", "g2")],
        queue_status=_status("t", A, [True] * 8),
    )
    queues = _by_queue(compared, "read", "observed_msgs_per_s", "ever_written", "tolerance", "cause")
    assert queues[(A, 0)] == (True, 100.0, True, 6.0, "WRITE_ABOVE_READ")
    assert queues[(A, 5)] == (False, None, True, 6.0, None)  # written, no rate: not compared
    topic = _topic(compared)
    assert (topic["rate_source"], topic["requested_msgs_per_s"], topic["modelled_msgs_per_s"]) == (
        "offsets.in_tps",
        400.0,
        400.0,
    )
    assert (topic["observed_msgs_per_s"], topic["observed_from"], topic["tolerance"], topic["cause"]) == (
        800.0,
        "observed_traffic",
        41.0,
        "WRITE_ABOVE_READ",
    )


def test_a_stranded_queue_measured_unlike_the_model_is_write_above_read() -> None:
    # 8 write / 4 read, a producer at 400: 50 each. A group's old offsets still list 4..7 with
    # their rates: 50 x 4 on the read queues, then 80, 20, 50, 0 (350 in all). The tolerance is
    # 1 + 5% x 400 / 8 = 3.5. The scale, 350 / 400 = 0.875, gives 43.75 a queue: no queue that
    # differs is within 3.5 of it. Queues 4 and 5 show inflow outside mqAll unlike the model:
    # WRITE_ABOVE_READ. Queue 7 shows none: NO_OBSERVED_TRAFFIC.
    compared = _compare(
        _queue_traffic(_queues("t", A, [50] * 4), _queues("t", A, [50] * 4, read=False, first=4)),
        producers=[_producer("t", 400.0)],
        offsets=_offsets("t", A, [50, 50, 50, 50, 80, 20, 50, 0]),
    )
    causes = {k: v[0] for k, v in _by_queue(compared, "cause").items() if v[0]}
    assert causes == {(A, 4): "WRITE_ABOVE_READ", (A, 5): "WRITE_ABOVE_READ", (A, 7): "NO_OBSERVED_TRAFFIC"}


def test_inflow_on_a_queue_outside_the_publish_list() -> None:
    # broker-b is in mqAll but not in the publish list (alive only through a slave, in the
    # snapshot): a producer at 200 msgs/s writes broker-a's 2 queues, 100 each. The cluster shows
    # 50 on each of the four: broker-b's two have inflow no modelled producer sends, by 50 >
    # 1 + 5% x 200 / 4 = 3.5: NOT_IN_PUBLISH_LIST. broker-a's are 50 against 100, and their share
    # is right (scale 100 / 200 = 0.5): the topic's rate cause, the 100 measured outside the list
    # (more than 1 + 5% x 200 = 11): NOT_IN_PUBLISH_LIST too. The totals agree (200 and 200).
    compared = _compare(
        _queue_traffic(_queues("t", A, [100, 100]), _queues("t", B, [0, 0], written=False)),
        producers=[_producer("t", 200.0)],
        offsets=_offsets("t", A, [50, 50]) + _offsets("t", B, [50, 50]),
    )
    assert {k: v[0] for k, v in _by_queue(compared, "cause").items()} == {
        (A, 0): "NOT_IN_PUBLISH_LIST",
        (A, 1): "NOT_IN_PUBLISH_LIST",
        (B, 0): "NOT_IN_PUBLISH_LIST",
        (B, 1): "NOT_IN_PUBLISH_LIST",
    }
    topic = _topic(compared)
    assert (topic["agrees"], topic["cause"], topic["queue_causes"]) == (True, None, ["NOT_IN_PUBLISH_LIST"])


def test_a_queue_measured_but_not_modelled_gets_a_row() -> None:
    # Queue 2 of broker-a is in neither list (the snapshot's route has 2 queues, the cluster's 3):
    # a row with modelled 0, written and read false.
    compared = _compare(
        _queue_traffic(_queues("t", A, [100, 100])),
        producers=[_producer("t", 200.0)],
        offsets=_offsets("t", A, [100, 100]) + _offsets("t", A, [60], first=2),
    )
    assert _by_queue(compared, "written", "read", "modelled_msgs_per_s", "cause")[(A, 2)] == (
        False,
        False,
        0.0,
        "NOT_IN_PUBLISH_LIST",
    )


def test_a_broker_the_4x_model_avoids_but_the_cluster_writes() -> None:
    # broker-a (40 ms) and broker-b (800 ms) with 4 queues each; a Java V4_9_8 producer with
    # send_latency_fault_enable at 800 msgs/s. 800 ms is at least 550: the 4.x table makes broker-b
    # unavailable for 30 s, and before 5.1.4 the avoided run b0..b3 folds onto the next available
    # entry, a0 (wrapping): a0 gets (1 + 4) / 8 x 800 = 500, a1..a3 100, broker-b 0.
    # The cluster shows 100 on each of the 8 (the latency was a spike): broker-b's queues differ
    # (100 > 1 + 5% x 800 / 8 = 6) on a broker the model avoids, and a0 (100 against 500) in the
    # topic where it does: AVOIDED_BROKER. a1..a3 agree.
    compared = _compare(
        _queue_traffic(_queues("t", A, [500, 100, 100, 100]), _queues("t", B, [0, 0, 0, 0])),
        producers=[_producer("t", 800.0, version="V4_9_8", send_latency_fault_enable=True)],
        offsets=_offsets("t", A, [100] * 4) + _offsets("t", B, [100] * 4),
        brokers=_brokers(broker_a=40.0, broker_b=800.0),
    )
    causes = {k: v[0] for k, v in _by_queue(compared, "cause").items()}
    assert causes == {
        (A, 0): "AVOIDED_BROKER",
        (A, 1): None,
        (A, 2): None,
        (A, 3): None,
        **{(B, i): "AVOIDED_BROKER" for i in range(4)},
    }


def test_a_broker_the_cluster_avoids_but_the_model_does_not() -> None:
    # The same topic with both brokers at 40 ms and a 5.x producer: the model sends 100 to each of
    # the 8 queues. The cluster shows 200 on broker-a's and 0 on broker-b's: broker-b's written
    # queues show 0 of their modelled 400, less than half, short by more than 6: the cluster
    # avoids it (a latency the snapshot missed). Every queue differs by 100: AVOIDED_BROKER.
    compared = _compare(
        _queue_traffic(_queues("t", A, [100] * 4), _queues("t", B, [100] * 4)),
        producers=[_producer("t", 800.0, send_latency_fault_enable=True)],
        offsets=_offsets("t", A, [200] * 4) + _offsets("t", B, [0] * 4),
        brokers=_brokers(broker_a=40.0, broker_b=40.0),
    )
    assert {v[0] for v in _by_queue(compared, "cause").values()} == {"AVOIDED_BROKER"}


def test_without_latency_avoidance_a_silent_broker_is_no_observed_traffic() -> None:
    # The same measurements without send_latency_fault_enable: broker-b's queues show none of
    # their 100 (NO_OBSERVED_TRAFFIC), broker-a's twice theirs (UNEVEN_SENDS).
    compared = _compare(
        _queue_traffic(_queues("t", A, [100] * 4), _queues("t", B, [100] * 4)),
        producers=[_producer("t", 800.0)],
        offsets=_offsets("t", A, [200] * 4) + _offsets("t", B, [0] * 4),
    )
    causes = {k: v[0] for k, v in _by_queue(compared, "cause").items()}
    assert causes == {
        **{(A, i): "UNEVEN_SENDS" for i in range(4)},
        **{(B, i): "NO_OBSERVED_TRAFFIC" for i in range(4)},
    }


def test_a_queue_topicstatus_shows_never_written() -> None:
    # A producer at 400 on 4 queues (100 each); no in_tps, but topicStatus shows queue 3 never
    # written: observed 0 there, 100 short of the model: NO_OBSERVED_TRAFFIC. The others were
    # written, at no known rate: not compared. The topic has no measured total.
    compared = _compare(
        _queue_traffic(_queues("t", A, [100] * 4)),
        producers=[_producer("t", 400.0)],
        queue_status=_status("t", A, [True, True, True, False]),
    )
    queues = _by_queue(compared, "observed_msgs_per_s", "ever_written", "agrees", "cause")
    assert queues[(A, 3)] == (0.0, False, False, "NO_OBSERVED_TRAFFIC")
    assert queues[(A, 0)] == (None, True, None, None)
    topic = _topic(compared)
    assert (topic["observed_msgs_per_s"], topic["agrees"], topic["cause"], topic["queues_differing"]) == (
        None,
        None,
        None,
        1,
    )


# ------------------------------------------------------------------ causes of a topic's difference


def test_a_stale_producer_rate_is_rate_source() -> None:
    # producers says 400, statsAll and the queues 800: 200 on each queue against 100. Each
    # queue's share is right (scale 800 / 400 = 2): RATE_SOURCE, as the topic (800 against 400,
    # outside 1 + 5% x 800 = 41).
    compared = _compare(
        _queue_traffic(_queues("t", A, [100] * 4)),
        producers=[_producer("t", 400.0)],
        offsets=_offsets("t", A, [200] * 4),
        observed_traffic=[{"topic": "t", "group": "g1", "in_tps": 800.0}],
    )
    assert {v[0] for v in _by_queue(compared, "cause").values()} == {"RATE_SOURCE"}
    topic = _topic(compared)
    assert (topic["difference"], topic["cause"]) == (400.0, "RATE_SOURCE")


def test_producers_the_model_cannot_route_are_unroutable() -> None:
    # Topic u is read-only in the snapshot (no write perm): its producer's 300 msgs/s goes
    # nowhere in the model, its two queues are read but not written (0 each). The cluster writes
    # them, 150 each, and statsAll says 300: the queues NOT_IN_PUBLISH_LIST, the topic (300
    # requested, 0 modelled, outside 1 + 5% x 300 = 16) UNROUTABLE.
    compared = _compare(
        _queue_traffic(_queues("u", A, [0, 0], written=False)),
        producers=[_producer("u", 300.0)],
        offsets=_offsets("u", A, [150, 150]),
        observed_traffic=[{"topic": "u", "group": None, "in_tps": 300.0}],
    )
    assert {v[0] for v in _by_queue(compared, "cause").values()} == {"NOT_IN_PUBLISH_LIST"}
    topic = _topic(compared, "u")
    assert (topic["requested_msgs_per_s"], topic["modelled_msgs_per_s"], topic["cause"]) == (
        300.0,
        0.0,
        "UNROUTABLE",
    )


def test_a_topic_that_shows_no_traffic() -> None:
    # statsAll shows 0 for a topic modelled at 400: NO_OBSERVED_TRAFFIC.
    compared = _compare(
        _queue_traffic(_queues("t", A, [100] * 4)),
        producers=[_producer("t", 400.0)],
        observed_traffic=[{"topic": "t", "group": "g1", "in_tps": 0.0}],
    )
    assert _topic(compared)["cause"] == "NO_OBSERVED_TRAFFIC"


def test_measurements_of_unknown_topics_and_bad_rows_are_left_out() -> None:
    compared = _compare(
        _queue_traffic(_queues("t", A, [100] * 4)),
        producers=[_producer("t", 400.0)],
        observed_traffic=[
            {"topic": "gone", "group": "g1", "in_tps": 5.0},  # no route in the snapshot
            {"topic": "t", "group": "g1", "in_tps": float("nan")},
            {"topic": "t", "group": "g2", "in_tps": 400.0},
        ],
        queue_status=_status("gone", A, [True]) + [{**_status("t", A, [False])[0], "broker_name": " "}],
    )
    assert compared.topics["topic"].to_pylist() == ["t"]
    assert compared.queues.num_rows == 4
    assert _topic(compared)["observed_msgs_per_s"] == 400.0


# ------------------------------------------------------------------ whether there is anything to compare


def test_has_observations() -> None:
    rated = _table(schemas.OFFSETS, _offsets("t", A, [None, 1.0]))
    unrated = _table(schemas.OFFSETS, _offsets("t", A, [None]))
    status = _table(schemas.QUEUE_STATUS, _status("t", A, [True]))
    assert traffic.has_observations(rated, None, None)
    assert not traffic.has_observations(unrated, None, None)
    assert not traffic.has_observations(None, _table(schemas.OBSERVED_TRAFFIC, []), None)
    assert traffic.has_observations(None, None, status)


def test_the_tables_have_their_declared_schemas() -> None:
    compared = _compare(_queue_traffic(_queues("t", A, [100])), producers=[_producer("t", 100.0)])
    assert compared.queues.schema == schemas.arrow(schemas.VALIDATION_TRAFFIC)
    assert compared.topics.schema == schemas.arrow(schemas.VALIDATION_TOPICS)


# ------------------------------------------------------------------ the command


def _write(snapshot: str, spec: schemas.TableSpec, rows: list[dict]) -> None:
    """One more table of a snapshot, as Spark would write it (make_snapshot writes no timestamps)."""
    (Path(snapshot) / spec.name).mkdir()
    pq.write_table(_table(spec, rows), Path(snapshot) / spec.name / "part-00000.parquet")


def _traffic_snapshot(path: Path, *, observed_assignments: list[dict] | None = None) -> str:
    """Topic orders: 8 write / 4 read queues on broker-a, no producers row, in_tps 100 on its read
    queues, statsAll 800. Topic pay: 4 queues, a HASH producer at 400, in_tps 250, 50, 100, 0."""
    orders = queue_rows("orders", {A: 4})
    orders[0]["write_queue_nums"] = 8
    return make_snapshot(
        path,
        brokers=broker_rows(A),
        topic_queues=orders + queue_rows("pay", {A: 4}),
        consumers=consumer_rows("g", "orders", ["10.0.0.1@1", "10.0.0.2@1"])
        + consumer_rows("p", "pay", ["10.0.0.3@1"]),
        offsets=[{**r, "group": "g"} for r in _offsets("orders", A, [100] * 4) if r["group"] == "g1"]
        + [{**r, "group": "p"} for r in _offsets("pay", A, [250, 50, 100, 0]) if r["group"] == "g1"],
        producers=[_producer("pay", 400.0, selector="HASH")],
        observed_traffic=[{"topic": "orders", "group": "g", "in_tps": 800.0, "out_tps": 400.0}],
        observed_assignments=observed_assignments,
    )


def test_command_without_observed_assignments_compares_the_traffic(spark, tmp_path, capsys) -> None:
    snap = _traffic_snapshot(tmp_path / "snap")
    out = tmp_path / "out"
    assert main(["validate", "--snapshot", snap, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    # The model: orders' in_tps sum, 400, over 8 write queues (50 each); pay's 400 evenly (100 each).
    queues = {
        (r["topic"], r["queue_id"]): (r["modelled_msgs_per_s"], r["observed_msgs_per_s"], r["cause"])
        for r in pq.read_table(out / "validation_traffic").to_pylist()
    }
    assert queues[("orders", 0)] == (50.0, 100.0, "WRITE_ABOVE_READ")
    assert queues[("orders", 7)] == (50.0, None, None)
    assert [queues[("pay", i)] for i in range(4)] == [
        (100.0, 250.0, "HASH_PRODUCER"),
        (100.0, 50.0, "HASH_PRODUCER"),
        (100.0, 100.0, None),
        (100.0, 0.0, "HASH_PRODUCER"),
    ]
    topics = {r["topic"]: r for r in pq.read_table(out / "validation_topics").to_pylist()}
    assert (topics["orders"]["observed_msgs_per_s"], topics["orders"]["cause"]) == (800.0, "WRITE_ABOVE_READ")
    assert (topics["pay"]["rate_source"], topics["pay"]["agrees"]) == ("producers", True)
    assert not (out / "validation").exists() and not (out / "validation_queues").exists()
    assert (
        "traffic, phase 0: queues 12, measured 8, differing 7; topics 2, measured 2, differing 1" in printed
    )
    assert "HASH_PRODUCER: the topic has a HASH producer" in printed
    assert (
        f"outputs in {out / 'validation_traffic'} (inflow per queue) and {out / 'validation_topics'}"
        in printed
    )


def test_command_with_both_prints_both(spark, tmp_path, capsys) -> None:
    # g's two clients under AVG: 10.0.0.1@1 holds orders' queues 0 and 1, 10.0.0.2@1 2 and 3.
    held = [
        {
            "group": "g",
            "topic": "orders",
            "broker_name": A,
            "queue_id": i,
            "client_id": c,
            "client_ip": c.split("@")[0],
        }
        for i, c in enumerate(["10.0.0.1@1", "10.0.0.1@1", "10.0.0.2@1", "10.0.0.2@1"])
    ]
    snap = _traffic_snapshot(tmp_path / "snap", observed_assignments=held)
    out = tmp_path / "out"
    assert main(["validate", "--snapshot", snap, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert pq.read_table(out / "validation").to_pylist()[0]["match_rate"] == 1.0
    assert "100.0%" in printed and "traffic, phase 0:" in printed
    assert {p.name for p in out.iterdir()} >= {
        "validation",
        "validation_queues",
        "validation_traffic",
        "validation_topics",
    }


def test_command_without_any_measurement_or_assignment_is_bad_input(spark, tmp_path, capsys) -> None:
    snap = make_snapshot(
        tmp_path / "s",
        brokers=broker_rows(A),
        topic_queues=queue_rows("t", {A: 1}),
        consumers=consumer_rows("g", "t", ["a"]),
        offsets=_offsets("t", A, [None]),
    )
    assert main(["validate", "--snapshot", snap, "--out", str(tmp_path / "out")]) == 2
    assert (
        "observed_assignments: the snapshot has none, nor any traffic measurement" in capsys.readouterr().err
    )


@pytest.mark.parametrize("kind", ["producers", "queue_status"])
def test_command_notes_measurements_without_a_modelled_rate(spark, tmp_path, capsys, kind) -> None:
    # topicStatus rows alone, and no producers or in_tps: the model sends nothing, so nothing is
    # compared, and validate says so (with a producers row there is a rate, and a comparison).
    snap = make_snapshot(
        tmp_path / "s",
        brokers=broker_rows(A),
        topic_queues=queue_rows("t", {A: 1}),
        consumers=consumer_rows("g", "t", ["a"]),
        producers=[_producer("t", 10.0)] if kind == "producers" else None,
    )
    _write(snap, schemas.QUEUE_STATUS, _status("t", A, [False]))
    assert main(["validate", "--snapshot", snap, "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    if kind == "producers":
        row = pq.read_table(tmp_path / "out" / "validation_traffic").to_pylist()[0]
        # 10 msgs/s modelled; never written: 0 measured, 10 short, tolerance 1 + 5% x 10 = 1.5.
        assert (row["observed_msgs_per_s"], row["cause"]) == (0.0, "NO_OBSERVED_TRAFFIC")
    else:
        assert "traffic: not compared" in printed
        assert not (tmp_path / "out" / "validation_traffic").exists()


def test_command_tables_are_the_same_through_either_sink(spark, tmp_path, sink) -> None:
    snap = _traffic_snapshot(tmp_path / "snap")
    result = validate.run(spark, validate.ValidateConfig(snapshot=snap, out=str(tmp_path / "out"), sink=sink))
    assert result.tables == ("validation_traffic", "validation_topics")
    for name, spec in (
        ("validation_traffic", schemas.VALIDATION_TRAFFIC),
        ("validation_topics", schemas.VALIDATION_TOPICS),
    ):
        written = pq.read_table(tmp_path / "out" / name)
        assert written.schema == schemas.arrow(spec), name
        held = result.traffic.queues if name == "validation_traffic" else result.traffic.topics
        assert written.to_pylist() == held.to_pylist(), name
