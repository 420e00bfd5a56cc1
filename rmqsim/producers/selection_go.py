"""The Go client's default queue selector: round robin (rocketmq-client-go producer/selector.go:63-113).

One uint32 counter per topic per selector (so per producer), 0 the first time the topic is seen and
kept across route changes. ``select(topic, queues, last)``: if last is not "", up to n times
``counter++`` and return ``queues[counter % n]`` if its broker is not last; then (or at once when
last is "") ``counter++`` and return ``queues[counter % n]``. A fresh producer's first message goes
to index 1 % n. The Go client has no latency fault avoidance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

Queue = tuple[str, int]


@dataclass
class RoundRobinSelector:
    counters: dict[str, int] = field(default_factory=dict)  # topic -> uint32

    def _next(self, topic: str, n: int) -> int:
        counter = (self.counters.get(topic, 0) + 1) % 2**32
        self.counters[topic] = counter
        return counter % n

    def select(self, topic: str, queues: Sequence[Queue], last_broker_name: str = "") -> Queue:
        if not queues:
            raise ValueError("an empty publish list: Go's % panics with integer divide by zero")
        if last_broker_name != "":
            for _ in range(len(queues)):
                queue = queues[self._next(topic, len(queues))]
                if queue[0] != last_broker_name:
                    return queue
        return queues[self._next(topic, len(queues))]
