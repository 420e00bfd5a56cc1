"""Reading the conformance vectors (copied from the real RocketMQ client's output)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

CONFORMANCE = Path(__file__).parent / "data" / "conformance"


def records(name: str) -> list[dict]:
    with gzip.open(CONFORMANCE / f"{name}.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def unit_examples(strategy: str) -> list[dict]:
    return [r for r in records("unit_examples") if r["strategy"] == strategy]


def queues(pairs: list | None) -> list[tuple[str, int]]:
    return [(b, int(i)) for b, i in pairs or []]
