"""The Java producer's queue choice before 5.1.4: MQFaultStrategy at rocketmq-all-4.9.8 (:58-107)
and rocketmq-all-4.9.7, whose pick path differs in two places.

``select(info, last)``:

- sendLatencyFaultEnable false (the default): TopicPublishInfo.select_one_avoiding(last); path
  "fault_off".
- true: exactly one increment ``v``, then n probes of ``list[|v| % n]`` with v += 1 (int
  wraparound, |MIN_VALUE| gives 0), returning the first available queue; last is not read.
  Path "scan".
- No probe available: ``best = pickOneAtLeast()``, ``w = getQueueIdByBroker(best)``. If w > 0, a
  plain select (an increment) and then queue ``inc() % w`` of best: 4.9.8 returns a new queue
  (path "pick"); 4.9.7 writes best and the id into the list entry the plain select returned and
  returns that entry, so the list stays rewritten. 4.9.7's getQueueIdByBroker also ignores perm.
  If w <= 0 the item is removed and a plain select is returned (path "pick_removed").
"""

from __future__ import annotations

from dataclasses import dataclass

from rmqsim.producers.fault_items import FaultItems4x
from rmqsim.producers.latency import LATENCY_4X, not_available_duration
from rmqsim.producers.topic_publish_info import Queue, TopicPublishInfo, java_int

VERSIONS = ("4.9.8", "4.9.7")


@dataclass(frozen=True)
class Selection:
    queue: Queue
    path: str  # scan, pick, pick_removed or fault_off
    picked_broker: str | None  # what pickOneAtLeast returned


def probe_position(value: int, n: int) -> int:
    """``Math.abs(value) % n``, and 0 if that is negative (only for Integer.MIN_VALUE)."""
    return 0 if value == -(2**31) else abs(value) % n


@dataclass
class MQFaultStrategy4x:
    faults: FaultItems4x
    send_latency_fault_enable: bool = False
    version: str = "4.9.8"

    def __post_init__(self) -> None:
        if self.version not in VERSIONS:
            raise ValueError(f"version {self.version!r}: the 4.x pick path is modelled for {VERSIONS}")

    def update_fault_item(self, broker: str, latency: int, isolation: bool, now: int = 0) -> int:
        """The duration computed for this send (applied only with sendLatencyFaultEnable)."""
        duration = int(not_available_duration(latency, isolation, LATENCY_4X))
        if self.send_latency_fault_enable:
            self.faults.update(broker, latency, duration, now)
        return duration

    def select(self, info: TopicPublishInfo, last_broker_name: str | None, now: int = 0) -> Selection:
        if not self.send_latency_fault_enable:
            return Selection(info.select_one_avoiding(last_broker_name), "fault_off", None)
        n = len(info.queues)
        value = info.index.increment_and_get()
        for _ in range(n):
            queue = info.queues[probe_position(value, n)]
            value = java_int(value + 1)
            if self.faults.is_available(queue[0], now):
                return Selection(queue, "scan", None)
        best = self.faults.pick_one_at_least(now)
        if best is None:  # an empty table: Java's remove(null) throws, is caught, and falls through
            return Selection(info.select_one(), "pick_removed", None)
        write_queue_nums = info.queue_nums_of(best, write_perm_only=self.version == "4.9.8")
        if write_queue_nums <= 0:
            self.faults.remove(best)
            return Selection(info.select_one(), "pick_removed", best)
        position = info.next_position()  # 4.9.8 uses the queue there only for its topic
        queue = (best, info.index.increment_and_get() % write_queue_nums)
        if self.version == "4.9.7":
            info.queues[position] = queue
        return Selection(queue, "pick", best)
