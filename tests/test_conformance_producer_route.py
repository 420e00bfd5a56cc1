"""PRODUCER_ROUTE: every Java publish list, built for all 300 routes in one vectorised call.

A record's ``result`` is the list topicRouteData2TopicPublishInfo returned (or null where it threw,
with error_class/error_message). The builder never sets haveTopicRouterInfo (its caller does) and
ok() means "the list is not empty". The Go lists of the same routes are in test_conformance_producer_go.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rmqsim.producers.order_conf import java_parse_int, java_split, parse_go, parse_java
from rmqsim.producers.publish_list import java_publish_lists
from tests.conformance import queues, records, route_rows

ROUTES = records("PRODUCER_ROUTE")


def _expected(r: dict) -> tuple[list, bool, str | None]:
    if r["result"] is None:
        return [], False, f"{r['error_class']}: {r['error_message']}"  # Throwable.toString()
    return queues(r["result"]["messageQueueList"]), r["result"]["orderTopic"], None


def interleaved(topic: np.ndarray, seed: int = 7) -> np.ndarray:
    """A row order that mixes the topics at random and keeps each topic's rows in order: a random
    sequence of topic labels, whose k-th slot of topic t takes t's k-th row."""
    slot_topic = topic[np.random.default_rng(seed).permutation(len(topic))]
    mixed = np.empty(len(topic), dtype=np.int64)
    mixed[np.argsort(slot_topic, kind="stable")] = np.argsort(topic, kind="stable")
    return mixed


def _assert_matches(lists, recs: list[dict]) -> None:
    errors = lists.error.to_pylist()
    for i, r in enumerate(recs):
        expected, order_topic, error = _expected(r)
        assert (lists.topic_list(i), bool(lists.order_topic[i]), errors[i]) == (
            expected,
            order_topic,
            error,
        ), r["case_id"]
        if r["result"] is not None:
            assert r["result"]["ok"] == (lists.lengths()[i] > 0), r["case_id"]
            assert r["result"]["haveTopicRouterInfo"] is False, r["case_id"]


def test_every_route_in_one_batch():
    kwargs, _ = route_rows(ROUTES)
    lists = java_publish_lists(**kwargs)
    _assert_matches(lists, ROUTES)
    assert lists.queue_id.dtype == np.int32 and lists.offsets.dtype == np.int64
    assert sum(r["result"] is None for r in ROUTES) == 6  # the README: 3 NumberFormatException, 3 AIOOBE


def test_rows_of_topics_interleaved_and_arrow_inputs():
    """QueueData rows of many topics mixed together (each topic's own rows still in route order),
    and every string column as Arrow: the same lists."""
    kwargs, _ = route_rows(ROUTES)
    mixed = interleaved(kwargs["topic"])
    assert (np.diff(kwargs["topic"][mixed]) != 0).mean() > 0.5  # truly mixed
    shuffled = {k: (v[mixed] if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    shuffled["broker_name"] = pa.array(list(shuffled["broker_name"]), type=pa.string())
    shuffled["order_topic_conf"] = pa.array(kwargs["order_topic_conf"], type=pa.string())
    _assert_matches(java_publish_lists(**shuffled), ROUTES)


def test_java_order_differs_from_byte_order():
    # The odd records hold names where UTF-16 and UTF-8 orders disagree: U+1F600 (a surrogate pair,
    # 0xD83D...) sorts before U+E000..U+FFFF in Java, after them by bytes.
    kwargs = {
        "n_topics": 1,
        "topic": np.zeros(2, dtype=np.int64),
        "broker_name": np.array(["b-\ufb01", "b-\U0001f600"], dtype=object),
        "write_queue_nums": np.array([1, 1]),
        "perm": np.array([6, 6]),
        "has_master": np.array([True, True]),
    }
    assert java_publish_lists(**kwargs).topic_list(0) == [("b-\U0001f600", 0), ("b-\ufb01", 0)]


@pytest.mark.parametrize(
    ("conf", "brokers", "failure"),
    [
        ("a:2;", (("a", 2),), None),  # split drops the trailing empty string
        (";", (), None),  # only separators: no items at all, an order topic with an empty list
        (":3", (("", 3),), None),  # an empty broker name is still a name
        ("a:2:9", (("a", 2),), None),
        ("a:-0;b:+1", (("b", 1),), None),
        ("a:\u0663", (("a", 3),), None),  # Character.digit takes any Unicode decimal digit (ARABIC-INDIC 3)
        ("a::3", (), 'java.lang.NumberFormatException: For input string: ""'),
        ("a:+", (), 'java.lang.NumberFormatException: For input string: "+"'),
        ("a:2147483648", (), 'java.lang.NumberFormatException: For input string: "2147483648"'),
        ("a:\U0001d7d1", (), 'java.lang.NumberFormatException: For input string: "\U0001d7d1"'),  # 2 units
        ("a:1;:", (), "java.lang.ArrayIndexOutOfBoundsException: Index 1 out of bounds for length 0"),
    ],
)
def test_java_order_conf_rules(conf, brokers, failure):
    parsed = parse_java(conf)
    assert (tuple(zip(parsed.brokers, parsed.queue_counts)), parsed.error) == (brokers, failure)


def test_go_reads_the_same_confs_differently():
    assert parse_go("a:2;").error == "panic: runtime error: index out of range [1] with length 1"
    assert parse_go("a:\u0663;b:x;c:;d:1").brokers == ("d",)  # Atoi: ASCII only, errors are 0
    assert parse_go("a:99999999999999999999").queue_counts == (2**63 - 1,)  # Atoi's range error value


def test_java_helpers():
    assert (
        java_split("", ";") == [""]
        and java_split(";;", ";") == []
        and java_split("a;;b;", ";") == ["a", "", "b"]
    )
    assert java_parse_int("-2147483648") == -(2**31)


def test_a_list_too_long_to_simulate_is_an_error_not_a_crash():
    kwargs = {
        "n_topics": 2,
        "topic": np.array([1], dtype=np.int64),
        "broker_name": np.array(["b"], dtype=object),
        "write_queue_nums": np.array([8]),
        "perm": np.array([6]),
        "has_master": np.array([True]),
        "order_topic_conf": ["a:2147483647;b:1", None],
    }
    lists = java_publish_lists(**kwargs, max_list_length=1000)
    assert (
        lists.error.to_pylist()[0] == "rmqsim: the publish list would hold 2147483648 queues, more than 1000"
    )
    assert lists.topic_list(0) == [] and lists.topic_list(1) == [("b", i) for i in range(8)]
