"""Reading the conformance vectors (copied from the real RocketMQ client's output)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

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
