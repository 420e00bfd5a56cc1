"""`mqadmin topicRoute -t TOPIC`: the topic's TopicRouteData, as fastjson pretty-prints it.

``brokerDatas`` name each broker's instances (``brokerAddrs``: broker id to address, with bare
numeric keys); ``queueDatas`` give each broker's read and write queue counts and permission.
The queue data's flag is ``topicSynFlag`` before 4.9.0 and ``topicSysFlag`` after; neither is
needed here. The route does not name its topic: the file name does (topicRoute/<topic>.txt).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rmqsim.mqadmin import fastjson
from rmqsim.mqadmin.lines import error
from rmqsim.mqadmin.table import Layout, table_lines

KINDS = {int: "a whole number", str: "a string", dict: "an object"}
ROUTE_KEYS = {"brokerDatas", "queueDatas", "filterServerTable"}  # fastjson leaves out null ones, not all
LAYOUT = Layout(
    usage="topicRoute -t TOPIC",
    header=re.compile(r"\{\s*(?:$|\")"),  # "{" alone, as fastjson pretty-prints, or a key after it
    expected="the route's JSON (a line that starts with '{')",
    rows=re.compile(r"\s*(?:[\[\]{}\"]|\d+\s*:)"),  # JSON past a blank line a page put in
    inside=re.compile(r"\{\s*\"(?:brokerDatas|queueDatas)\""),
    others=((re.compile(r"#ClusterName\b"), "saved with `topicRoute -l`: save it without -l (the JSON)"),),
)


@dataclass(frozen=True)
class BrokerData:
    line: int
    broker_name: str
    cluster: str | None
    addresses: tuple[tuple[int, str], ...]  # (broker id, address); 0 is the master


@dataclass(frozen=True)
class QueueData:
    line: int
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int


@dataclass(frozen=True)
class TopicRoute:
    brokers: tuple[BrokerData, ...]
    queues: tuple[QueueData, ...]
    format: str  # "before 4.9.0" (topicSynFlag) or "4.9.0 and later" (topicSysFlag)


def parse(text: str, *, source: str) -> TopicRoute:
    lines = table_lines(text, source=source, layout=LAYOUT)
    first = lines[0]
    # The JSON's lines without their prefix, each on its line of the file, so errors name it.
    texts = {line.number: line.text for line in lines}
    body = "\n".join(texts.get(n, "") for n in range(first.number, lines[-1].number + 1))
    route = fastjson.loads(body, source=source, first_line=first.number)
    if not isinstance(route, fastjson.JsonObject) or not ROUTE_KEYS & route.keys():
        keys = ", ".join(sorted(ROUTE_KEYS))
        raise error(source, first.number, f"expected the route's JSON (TopicRouteData: {keys})")
    brokers = tuple(_broker(source, b, i) for i, b in enumerate(_list(source, route, "brokerDatas")))
    queue_datas = _list(source, route, "queueDatas")
    queues = tuple(_queue(source, q, i) for i, q in enumerate(queue_datas))
    old = any(isinstance(q, dict) and "topicSynFlag" in q for q in queue_datas)
    return TopicRoute(brokers, queues, "before 4.9.0" if old else "4.9.0 and later")


def _list(source: str, route: fastjson.JsonObject, key: str) -> list:
    value = route.get(key)
    if value is None:
        return []  # a topic with no route yet: fastjson leaves null fields out
    if not isinstance(value, list):
        raise error(source, route.line, f"{key} is not a list")
    return value


def _field(source: str, obj: object, where: str, key: str, kind: type) -> object:
    if not isinstance(obj, fastjson.JsonObject):
        raise error(source, getattr(obj, "line", None), f"{where} is not an object")
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        problem = "is missing" if value is None else f"is not {KINDS[kind]}: {value!r}"
        raise error(source, obj.line, f"{where}.{key} {problem}")
    return value


def _broker(source: str, obj: object, i: int) -> BrokerData:
    where = f"brokerDatas[{i}]"
    name = _field(source, obj, where, "brokerName", str)
    addrs = _field(source, obj, where, "brokerAddrs", dict)
    addresses = []
    for key, address in addrs.items():
        if not key.isdigit() or not isinstance(address, str):
            raise error(
                source,
                addrs.line,
                f"{where}.brokerAddrs: expected broker id: address, got {key}: {address!r}",
            )
        addresses.append((int(key), address))
    cluster = obj.get("cluster")
    return BrokerData(obj.line, name, cluster if isinstance(cluster, str) else None, tuple(sorted(addresses)))


def _queue(source: str, obj: object, i: int) -> QueueData:
    where = f"queueDatas[{i}]"
    return QueueData(
        getattr(obj, "line", 0),
        _field(source, obj, where, "brokerName", str),
        _field(source, obj, where, "readQueueNums", int),
        _field(source, obj, where, "writeQueueNums", int),
        _field(source, obj, where, "perm", int),
    )
