"""Reading the conformance vectors (copied from the real RocketMQ client's output)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np

CONFORMANCE = Path(__file__).parent / "data" / "conformance"


def records(name: str) -> list[dict]:
    with gzip.open(CONFORMANCE / f"{name}.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def unit_examples(strategy: str) -> list[dict]:
    return [r for r in records("unit_examples") if r["strategy"] == strategy]


def queues(pairs: list | None) -> list[tuple[str, int]]:
    return [(b, int(i)) for b, i in pairs or []]


# MACHINE_ROOM_NEARBY vectors give a room resolver per record; the harness defined them so.


def java_split(text: str, regex: str) -> list[str]:
    """Java's ``text.split(regex)``: a regex separator, trailing empty strings removed, the whole
    string when nothing matches (so "" gives [""]), and nothing at all for separators only."""
    parts, pos = [], 0
    for match in re.finditer(regex, text):
        if match.end() == 0:
            continue  # Java 8+: a zero-width match at the start adds no leading empty string
        parts.append(text[pos : match.start()])
        pos = match.end()
    if not parts:
        return [text]
    parts.append(text[pos:])
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def resolve(spec: dict, name: str) -> str | None:
    if spec["type"] == "prefix":
        parts = java_split(name, spec["sep"])
        if not parts:
            raise IndexError(f"{name!r}.split({spec['sep']!r})[0]: ArrayIndexOutOfBoundsException in Java")
        return parts[0]
    if spec["type"] == "suffix":
        cut = name.rfind(spec["sep"])
        return None if cut < 0 else name[cut + len(spec["sep"]) :]
    if spec["type"] == "map":
        return spec["rooms"].get(name)
    raise ValueError(f"unknown resolver {spec['type']!r}")


def assert_single_call(r: dict, name: str, params: dict | None = None) -> None:
    """A single-call record (current_cid) through allocate_one: its result, or its exception."""
    import pytest

    from rmqsim import strategies

    call = (
        name,
        r["topic"],
        queues(r["queues"]) if r["queues"] is not None else None,
        r["consumers"],
        r["current_cid"],
        params,
    )
    if "error" in r:
        with pytest.raises(strategies.AllocationError) as raised:
            strategies.allocate_one(*call)
        assert str(raised.value) == r["error_message"], r["case_id"]
    else:
        assert strategies.allocate_one(*call) == queues(r["result"]), r["case_id"]


def route_rows(recs: list[dict]) -> tuple[dict, np.ndarray]:
    """The routes of producer ROUTE-style records as the publish-list builders take them, record i
    being topic i: (keyword arguments, master_empty per QueueData). A QueueData's master is key "0"
    in the brokerAddrs of the first BrokerData with its name."""
    names = ("topic", "broker_name", "write_queue_nums", "perm", "has_master")
    columns: dict[str, list] = {k: [] for k in names}
    master_empty = []
    for i, r in enumerate(recs):
        first: dict[str, dict] = {}
        for broker_data in r["route"]["brokerDatas"]:
            first.setdefault(broker_data["brokerName"], broker_data["brokerAddrs"] or {})
        for queue_data in r["route"]["queueDatas"]:
            addrs = first.get(queue_data["brokerName"], {})
            columns["topic"].append(i)
            columns["broker_name"].append(queue_data["brokerName"])
            columns["write_queue_nums"].append(queue_data["writeQueueNums"])
            columns["perm"].append(queue_data["perm"])
            columns["has_master"].append("0" in addrs)
            master_empty.append(addrs.get("0") == "")
    kwargs = {k: np.array(v, dtype=object if k == "broker_name" else None) for k, v in columns.items()}
    kwargs["n_topics"] = len(recs)
    kwargs["order_topic_conf"] = [r["route"]["orderTopicConf"] for r in recs]
    return kwargs, np.array(master_empty, dtype=bool)


def failing(check, recs: list[dict]) -> list[str]:
    """Runs ``check(record)`` on every record, one test for a whole file: the case ids whose
    assertions failed, with the failure (an empty list when every record passes)."""
    failed = []
    for r in recs:
        try:
            check(r)
        except AssertionError as error:
            failed.append(f"{r['case_id']}: {error}")
    return failed
