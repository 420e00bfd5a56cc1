"""A producer's fault table (LatencyFaultToleranceImpl): which brokers its sends avoid, and until when.

One table per producer, shared by all its topics. A broker is available when it has no item or
``now >= startTimestamp``. Times are ms on the caller's clock (default 0: no duration expires).

- FaultItems (5.1.4 and later, LatencyFaultToleranceImpl.java:103-142, 207-212): an item starts
  available (startTimestamp 0) and an update only extends it (``d > 0`` and ``now + d`` later);
  the reachable flag is overwritten every time.
- FaultItems4x (before 5.1.4; 4.9.8 LatencyFaultToleranceImpl.java:33-84, 104-130): an update
  overwrites latency and ``startTimestamp = now + d``, so a fast success re-enables a broker;
  pickOneAtLeast picks among the better half of all items, round robin on the table's own
  ThreadLocalIndex (whichItemWorst).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmqsim.producers.topic_publish_info import ThreadLocalIndex


@dataclass
class FaultItem:
    latency: int
    start_timestamp: int = 0
    reachable: bool = True


@dataclass
class FaultItems:
    items: dict[str, FaultItem] = field(default_factory=dict)

    def update(
        self, broker: str, latency: int, not_available_duration: int, reachable: bool, now: int = 0
    ) -> None:
        item = self.items.setdefault(broker, FaultItem(latency))
        item.latency = latency
        if not_available_duration > 0 and now + not_available_duration > item.start_timestamp:
            item.start_timestamp = now + not_available_duration
        item.reachable = reachable

    def is_available(self, broker: str, now: int = 0) -> bool:
        item = self.items.get(broker)
        return item is None or now >= item.start_timestamp

    def is_reachable(self, broker: str) -> bool:
        item = self.items.get(broker)
        return item is None or item.reachable


@dataclass
class FaultItems4x:
    which_item_worst: ThreadLocalIndex  # its start is Random.nextInt() in the real client
    items: dict[str, FaultItem] = field(default_factory=dict)  # reachable unused before 5.1.4

    def update(self, broker: str, latency: int, not_available_duration: int, now: int = 0) -> None:
        self.items[broker] = FaultItem(latency, now + not_available_duration)

    def is_available(self, broker: str, now: int = 0) -> bool:
        item = self.items.get(broker)
        return item is None or now >= item.start_timestamp

    def has_item(self, broker: str) -> bool:
        return broker in self.items

    def remove(self, broker: str) -> None:
        self.items.pop(broker, None)

    def pick_one_at_least(self, now: int = 0) -> str | None:
        """Available items first, then by latency, then by startTimestamp; item 0 when there are
        fewer than 2, else item ``whichItemWorst.incrementAndGet() % (size / 2)``. Equal keys keep
        insertion order here, where Java's depends on its hash table: the vectors have none."""
        ranked = sorted(
            self.items.items(),
            key=lambda kv: (not now >= kv[1].start_timestamp, kv[1].latency, kv[1].start_timestamp),
        )
        if not ranked:
            return None
        half = len(ranked) // 2
        return ranked[0 if half == 0 else self.which_item_worst.increment_and_get() % half][0]
