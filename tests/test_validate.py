"""`rmqsim validate`: the fixtures imported, simulated and compared with what the cluster showed.

The fixtures' holders were worked out by hand (tests/data/mqadmin/README.md): where they came
from the configured strategy every queue matches; the duplicate-client and missing-client
captures get their cause named. The diagnosis itself is also tested on hand-built routes.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rmqsim import config, simulate
from rmqsim.errors import InputError
from rmqsim.mqadmin import importer
from rmqsim.sink import KINDS as SINKS
from rmqsim.validate import diagnose
from rmqsim.validate import run as validate
from tests.builders import broker_rows, consumer_rows, make_snapshot, queue_rows, route

DATA = Path(__file__).resolve().parent / "data" / "mqadmin"


def _by_group(result: validate.ValidationResult) -> dict[str, dict]:
    return {r["group"]: r for r in result.groups}


@pytest.fixture(scope="module", params=SINKS)
def v4_9(spark, tmp_path_factory, request) -> validate.ValidationResult:
    """The 4.9 capture, validated with a simulation made here."""
    root = tmp_path_factory.mktemp("v4_9")
    importer.import_mqadmin(str(DATA / "v4_9"), str(root / "snap"), strategies={"cg_audit": "AVG_BY_CIRCLE"})
    return validate.run(
        spark, validate.ValidateConfig(snapshot=str(root / "snap"), out=str(root / "out"), sink=request.param)
    )


@pytest.fixture(scope="module", params=SINKS)
def v5(spark, tmp_path_factory, request) -> validate.ValidationResult:
    """The 5.x capture, validated against a `simulate --strategies configured` run."""
    root = tmp_path_factory.mktemp("v5")
    snap, run = str(root / "snap"), str(root / "run")
    importer.import_mqadmin(str(DATA / "v5"), snap, strategies={"cg_stock": "AVG_BY_CIRCLE"})
    simulate.run(spark, config.SimulateConfig(snapshot=snap, out=run, strategies=None, sink=request.param))
    return validate.run(spark, validate.ValidateConfig(snapshot=snap, out=run, run=run, sink=request.param))


def test_4_9_matches_where_the_strategy_is_the_configured_one(v4_9) -> None:
    groups = _by_group(v4_9)
    got = {g: (r["strategy"], r["queues_compared"], r["matched"], r["match_rate"]) for g, r in groups.items()}
    assert got == {
        "cg_orders": ("AVG", 10, 10, 1.0),  # retry topic included
        "cg_audit": ("AVG_BY_CIRCLE", 7, 7, 1.0),  # cut topic and broker names, a read-only broker
        "cg_dup": ("AVG", 8, 8, 1.0),  # the simulation leaves the duplicate's queues unowned too
    }
    assert groups["cg_orders"]["causes"] == [] and groups["cg_audit"]["causes"] == []


def test_4_9_names_the_duplicate_client_id(v4_9) -> None:
    dup = _by_group(v4_9)["cg_dup"]
    assert dup["causes"] == ["duplicate_client_id"]
    assert "10.2.0.32@1 is listed 2 times" in dup["details"][0]
    assert "2 queue(s) of that topic are read by nobody" in dup["details"][0]


def test_validation_tables_are_written(v4_9) -> None:
    written = pq.read_table(Path(v4_9.out) / "validation").to_pylist()
    assert sorted(r["group"] for r in written) == ["cg_audit", "cg_dup", "cg_orders"]
    queues = pq.read_table(Path(v4_9.out) / "validation_queues").to_pylist()
    assert len(queues) == 25 and all(q["matched"] and q["in_progress"] for q in queues)
    unowned = [
        q for q in queues if q["group"] == "cg_dup" and q["broker_name"] == "broker-b" and q["queue_id"] < 2
    ]
    assert [(q["observed_client_ip"], q["simulated_client_ids"]) for q in unowned] == [(None, []), (None, [])]


def test_5_x_matches_where_the_strategy_is_the_configured_one(v5) -> None:
    groups = _by_group(v5)
    pay, stock = groups["cg_pay"], groups["cg_stock"]
    assert (pay["queues_compared"], pay["matched"]) == (12, 12)
    assert pay["causes"] == ["ambiguous_ip"]  # two clients on 10.5.0.13: compared by IP
    assert "10.5.0.13 is 2 clients" in pay["details"][0]
    assert (stock["strategy"], stock["queues_compared"], stock["matched"], stock["causes"]) == (
        "AVG_BY_CIRCLE",
        11,
        11,
        [],
    )


def test_5_x_names_the_missing_client_and_the_view_it_belongs_to(v5) -> None:
    missing = _by_group(v5)["cg_missing"]
    # Hand-worked: AVG over the two listed clients matches 6 of payments' 10 queues and both retry queues.
    assert (missing["queues_compared"], missing["matched"]) == (12, 8)
    assert missing["causes"] == ["missing_client", "stale_view"]
    assert missing["details"][0].startswith(
        "10.5.0.33 holds 3 queue(s) but consumerConnection does not list it"
    )
    assert "one more client, 3rd in cidAll" in missing["details"][1]


def test_5_x_names_the_strategy_the_clients_really_run(v5) -> None:
    circle = _by_group(v5)["cg_circle"]
    assert (circle["strategy"], circle["queues_compared"], circle["matched"]) == ("AVG", 5, 3)
    assert circle["causes"] == ["unknown_strategy"]
    assert "the observed assignment is AVG_BY_CIRCLE's, not AVG's" in circle["details"][0]


def test_the_printed_table(v5) -> None:
    text = validate.format_result(v5.groups)
    assert "cg_missing" in text and "66.7%" in text and "missing_client, stale_view" in text
    assert "cg_circle: unknown_strategy: the observed assignment is AVG_BY_CIRCLE's" in text


def test_a_snapshot_without_observed_assignments_is_bad_input(spark, tmp_path) -> None:
    snap = make_snapshot(
        tmp_path / "s",
        brokers=broker_rows("b"),
        topic_queues=queue_rows("t", {"b": 1}),
        consumers=consumer_rows("g", "t", ["a"]),
    )
    with pytest.raises(InputError, match="observed_assignments: the snapshot has none"):
        validate.run(spark, validate.ValidateConfig(snapshot=snap, out=str(tmp_path / "out")))


# ------------------------------------------------------------------ the diagnosis, without Spark


def _route(topic: str, brokers: dict[str, int], clients: list[str]) -> dict:
    """A schemas.GROUP_ROUTES row of group g at phase 0, without queue_config."""
    return route(
        scenario="baseline",
        strategies=["AVG"],
        topic=topic,
        group="g",
        brokers=brokers,
        clients=clients,
        client_configs=None,
    )


def _observed(holders: list[str | None]) -> dict:
    return {("t", "b", i): diagnose.Holder(h, h.split("@")[0] if h else None) for i, h in enumerate(holders)}


CLIENTS = ["10.0.0.1@1", "10.0.0.2@1", "10.0.0.3@1"]


def test_clients_that_have_not_rebalanced_since_one_joined_are_a_stale_view() -> None:
    # Captured: AVG over three clients, six queues: .1: 0 1; .2: 2 3; .3: 4 5. But .1 and .2 still
    # hold their shares of the two-client view: .1: 0 1 2; .2: 3 4 5; .3 holds nothing yet.
    a, b, _ = CLIENTS
    case = diagnose.GroupCase("g", "AVG", [_route("t", {"b": 6}, CLIENTS)], _observed([a, a, a, b, b, b]))
    found = diagnose.diagnose(case)
    assert [c.code for c in found] == ["stale_view"]
    assert found[0].detail.startswith(
        "10.0.0.1@1, 10.0.0.2@1 hold their AVG share of a view without 10.0.0.3@1"
    )


def test_nearby_views_carry_each_client_s_library() -> None:
    # The stale view above, with consumers.language JAVA for every client (as import-mqadmin
    # writes it): a view without a client, or with one more, keeps one library per client.
    a, b, _ = CLIENTS
    row = {**_route("t", {"b": 6}, CLIENTS), "client_languages": ["JAVA"] * 3}
    found = diagnose.diagnose(diagnose.GroupCase("g", "AVG", [row], _observed([a, a, a, b, b, b])))
    assert [c.code for c in found] == ["stale_view"]
    assert "a view without 10.0.0.3@1" in found[0].detail


def test_a_client_that_does_not_answer_mqadmin() -> None:
    # AVG, six queues: .3's share (4 5) shows no holder; the others hold theirs.
    a, b, _ = CLIENTS
    case = diagnose.GroupCase(
        "g", "AVG", [_route("t", {"b": 6}, CLIENTS)], _observed([a, a, b, b, None, None])
    )
    found = diagnose.diagnose(case)
    assert [c.code for c in found] == ["client_not_reporting"]
    assert "gives 10.0.0.3@1 2 queue(s)" in found[0].detail


def test_holders_known_by_ip_match_any_client_of_that_ip() -> None:
    by_ip = diagnose.Holder(None, "10.0.0.5")
    assert diagnose.holds(by_ip, ["10.0.0.5@1#2"]) and not diagnose.holds(by_ip, ["10.0.0.6@1"])
    assert diagnose.holds(diagnose.Holder(None, None), []) and not diagnose.holds(
        diagnose.Holder(None, None), ["x@1"]
    )
    assert diagnose.holds(diagnose.Holder("x@1", "x"), ["y@1", "x@1"])


def test_only_the_worst_matching_groups_are_diagnosed_past_the_cap(spark, tmp_path, monkeypatch) -> None:
    # The diagnosis runs on the driver; past MAX_DIAGNOSED groups only the worst-matching get it.
    # v5: cg_circle matches 3/5 (the worst), cg_missing 8/12; cg_pay is flagged for its shared IP.
    monkeypatch.setattr(validate, "MAX_DIAGNOSED", 1)
    snap = str(tmp_path / "snap")
    importer.import_mqadmin(str(DATA / "v5"), snap, strategies={"cg_stock": "AVG_BY_CIRCLE"})
    groups = _by_group(validate.run(spark, validate.ValidateConfig(snapshot=snap, out=str(tmp_path / "out"))))
    assert groups["cg_circle"]["causes"] == ["unknown_strategy"]
    assert groups["cg_missing"]["causes"] == [] and groups["cg_pay"]["causes"] == []
    assert (groups["cg_missing"]["matched"], groups["cg_missing"]["queues_compared"]) == (8, 12)


# ------------------------------------------- who computes: another client library, or the broker

GO_PAIR = ["10.0.0.1@1", "10.0.0.2@1"]


def test_an_assignment_the_go_client_computes_names_the_library() -> None:
    # CONSISTENT_HASH, virtual_node_cnt 2, clients .1 and .2, queues b:0..5 of topic t. The Go
    # client's ring (stathat consistent): node i of a client is CRC-32 of str(i) + client id:
    #   "010.0.0.1@1" 4128686663, "110.0.0.1@1" 932715911,
    #   "010.0.0.2@1" 4098915358, "110.0.0.2@1" 903783390;
    # sorted: 903783390 (.2), 932715911 (.1), 4098915358 (.2), 4128686663 (.1).
    # A queue goes to the first node strictly above CRC-32 of "MessageQueue [topic=t,
    # brokerName=b, queueId=N]": 0: 3347288975 -> 4098915358 .2; 1: 3734545102 -> .2;
    # 2: 4122341645 -> 4128686663 .1; 3: 3970875468 -> .2; 4: 2750371467 -> .2; 5: 3136579530 -> .2.
    a, b = GO_PAIR
    assert _go_ring_holders(GO_PAIR, 6, 2) == [b, b, a, b, b, b]  # the comment, recomputed
    row = route(
        scenario="baseline",
        strategies=["CONSISTENT_HASH"],
        brokers={"b": 6},
        clients=GO_PAIR,
        client_configs=None,
        virtual_node_cnt=2,
    )
    case = diagnose.GroupCase("g", "CONSISTENT_HASH", [row], _observed([b, b, a, b, b, b]))
    found = diagnose.diagnose(case)
    # Not AVG (.1: 0 1 2) nor AVG_BY_CIRCLE (.1: 0 2 4), nor C++'s AVG, nor the broker (which has
    # no CONSISTENT_HASH: nobody would hold anything).
    assert [c.code for c in found] == ["other_library"]
    assert "the Go client (rocketmq-client-go) (GO)" in found[0].detail
    assert "set consumers.language to GO" in found[0].detail


def test_a_group_the_snapshot_already_says_is_go_matches_with_no_cause() -> None:
    # The same ring, with consumers.language GO for both clients: the simulated answer is the Go
    # client's already, so every queue matches and there is nothing to explain.
    a, b = GO_PAIR
    row = route(
        scenario="baseline",
        strategies=["CONSISTENT_HASH"],
        brokers={"b": 6},
        clients=GO_PAIR,
        client_configs=None,
        virtual_node_cnt=2,
        client_languages=["GO", "GO"],  # as the routes carry it: trimmed, upper case
    )
    case = diagnose.GroupCase("g", "CONSISTENT_HASH", [row], _observed([b, b, a, b, b, b]))
    assert diagnose.diagnose(case) == []


def _go_ring_holders(clients: list[str], queues: int, virtual_node_cnt: int) -> list[str]:
    """Each queue b:N of topic t on the Go client's CRC-32 ring (for the comment above)."""
    nodes = {zlib.crc32(f"{i}{c}".encode()): c for c in clients for i in range(virtual_node_cnt)}
    ring = sorted(nodes)
    out = []
    for n in range(queues):
        h = zlib.crc32(f"MessageQueue [topic=t, brokerName=b, queueId={n}]".encode())
        out.append(nodes[next((k for k in ring if k > h), ring[0])])
    return out


def test_an_assignment_dealt_in_java_order_to_cpp_clients_names_the_broker() -> None:
    # consumerConnection says both clients run rocketmq-client-cpp, which computes AVG whatever the
    # group names: .1: 0 1 2; .2: 3 4 5. The observed holders are AVG_BY_CIRCLE's, queue j to
    # position j % 2: .1: 0 2 4; .2: 1 3 5: what the broker answers (clientRebalance off), and
    # what every client would compute with the Java or the Go client.
    a, b = GO_PAIR
    row = route(
        scenario="baseline",
        strategies=["AVG_BY_CIRCLE"],
        brokers={"b": 6},
        clients=GO_PAIR,
        client_configs=None,
        client_languages=["CPP", "CPP"],
    )
    case = diagnose.GroupCase("g", "AVG_BY_CIRCLE", [row], _observed([a, b, a, b, a, b]))
    found = diagnose.diagnose(case)
    assert [c.code for c in found] == ["other_library", "broker_balanced"]
    assert "the Java client (JAVA) or the Go client (rocketmq-client-go) (GO)" in found[0].detail
    assert "the library the snapshot names (CPP)" in found[0].detail
    assert "AVG_BY_CIRCLE share, in Java order" in found[1].detail
    assert found[1].detail.endswith("import with --rebalance g=broker")


def test_a_strategy_the_broker_lacks_leaves_every_queue_unheld_and_names_the_broker() -> None:
    # CONSISTENT_HASH on the broker: it has only AVG and AVG_BY_CIRCLE, answers null, and in the
    # snapshot's phase the clients hold nothing: consumerProgress shows N/A for all six queues.
    # Any client-side answer (Java's, Go's or C++'s) gives every queue a holder.
    row = route(
        scenario="baseline",
        strategies=["CONSISTENT_HASH"],
        brokers={"b": 6},
        clients=GO_PAIR,
        client_configs=None,
    )
    case = diagnose.GroupCase("g", "CONSISTENT_HASH", [row], _observed([None] * 6))
    found = diagnose.diagnose(case)
    # First, per client the strategy gives queues, that it reports none.
    assert {c.code for c in found[:-1]} == {"client_not_reporting"} and found[-1].code == "broker_balanced"
    assert (
        "answers each client null (it has no CONSISTENT_HASH, only AVG and AVG_BY_CIRCLE)" in found[-1].detail
    )
